"""Mistral AI embeddings.

Wire format: ``POST {base}/embeddings`` with ``{"model", "input": [...]}`` →
``{"data": [{"embedding", "index"}, ...]}``. There is no query mode and no
dimensions parameter, so a configured ``embedding.dimensions`` is not sent
(and not part of the identity).
Invariant: a request stays under Mistral's per-request limits (256 inputs,
about 16k tokens) whatever ``batch_max_bytes`` says, since going over is
answered with a 400 that retrying cannot fix.
"""

from __future__ import annotations

from openmemoryd.embed.remote.http import RemoteEmbedder
from openmemoryd.embed.remote.openai import indexed_embeddings


class MistralEmbedder(RemoteEmbedder):
    provider = "mistral"
    default_base_url = "https://api.mistral.ai/v1"
    default_model = "mistral-embed"
    key_env_vars = ("MISTRAL_API_KEY",)
    hosted_hosts = ("api.mistral.ai",)
    input_limit_bytes = 8000
    batch_count_limit = 128
    batch_bytes_cap = 32_000

    def _request(self, texts: list[str], *, query: bool) -> list[object]:
        body = {"model": self.model, "input": texts}
        return indexed_embeddings(self, self._session.post_json("embeddings", body))
