"""Ollama embeddings, with the legacy endpoint for servers older than 0.3.

Wire format: ``POST {base}/api/embed`` with ``{"model", "input": [...]}`` →
``{"embeddings": [[...], ...]}``. When ``/api/embed`` answers 404 the legacy
``POST {base}/api/embeddings`` with ``{"model", "prompt": text}`` →
``{"embedding": [...]}`` is tried, one text per request; once it works it is
used from then on. (Ollama also answers 404 for a model that is not pulled;
then the legacy call fails the same way and its error is reported.)
No key is needed; a configured one is sent as a bearer token (for proxies).
"""

from __future__ import annotations

from openmemoryd.embed.provider import EmbeddingError
from openmemoryd.embed.remote.http import RemoteConfig, RemoteEmbedder, logger


class OllamaEmbedder(RemoteEmbedder):
    provider = "ollama"
    default_base_url = "http://localhost:11434"
    default_model = "nomic-embed-text"
    # Ollama's default context is 2048 tokens and it truncates silently, so
    # stay under it even for scripts with few bytes per token.
    input_limit_bytes = 6000
    batch_count_limit = 128

    def __init__(self, config: RemoteConfig) -> None:
        super().__init__(config)
        self._legacy = False

    def _request(self, texts: list[str], *, query: bool) -> list[object]:
        if self._legacy:
            return self._legacy_request(texts)
        body = {"model": self.model, "input": texts}
        try:
            payload = self._session.post_json("api/embed", body)
        except EmbeddingError as error:
            if error.status != 404:
                raise
            vectors = self._legacy_request(texts)
            logger.info("%s: /api/embed not found, using the legacy /api/embeddings", self.name)
            self._legacy = True
            return vectors
        return self._list_field(payload, "embeddings")

    def _legacy_request(self, texts: list[str]) -> list[object]:
        return [
            self._field(
                self._session.post_json("api/embeddings", {"model": self.model, "prompt": text}),
                "embedding",
            )
            for text in texts
        ]
