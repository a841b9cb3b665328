"""Voyage AI embeddings.

Wire format: ``POST {base}/embeddings`` with ``{"input": [...], "model",
"input_type": "document" | "query"}`` (plus ``"output_dimension"`` only when
dimensions are set) → ``{"data": [{"embedding", "index"}, ...]}``.
Invariant: documents and queries are embedded with their own ``input_type``,
because Voyage prepends a different instruction to each.
"""

from __future__ import annotations

from openmemoryd.embed.remote.http import RemoteEmbedder
from openmemoryd.embed.remote.openai import indexed_embeddings


class VoyageEmbedder(RemoteEmbedder):
    provider = "voyage"
    default_base_url = "https://api.voyageai.com/v1"
    default_model = "voyage-3.5"
    key_env_vars = ("VOYAGE_API_KEY",)
    hosted_hosts = ("api.voyageai.com",)
    input_limit_bytes = 8000
    batch_count_limit = 1000
    supports_dimensions = True

    def _request(self, texts: list[str], *, query: bool) -> list[object]:
        body: dict[str, object] = {
            "input": texts,
            "model": self.model,
            "input_type": "query" if query else "document",
        }
        if self._dimensions:
            body["output_dimension"] = self._dimensions
        return indexed_embeddings(self, self._session.post_json("embeddings", body))
