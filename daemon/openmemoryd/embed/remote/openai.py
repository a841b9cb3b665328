"""OpenAI-compatible embeddings: OpenAI, vLLM, LM Studio, llama.cpp, OpenRouter.

Wire format: ``POST {base}/embeddings`` with ``{"model", "input": [...],
"encoding_format": "float"}`` (plus ``"dimensions"`` only when configured),
answered by ``{"data": [{"embedding": [...], "index": i}, ...]}``.
Invariant: vectors are returned in input order whatever order ``data`` comes
in, because ``index`` (when every item has one) decides, not list position.
The key is optional so local servers work; the hosted APIs require one.
"""

from __future__ import annotations

from openmemoryd.embed.remote.http import RemoteEmbedder


class OpenAIEmbedder(RemoteEmbedder):
    provider = "openai"
    default_base_url = "https://api.openai.com/v1"
    default_model = "text-embedding-3-small"
    key_env_vars = ("OPENAI_API_KEY",)
    hosted_hosts = ("api.openai.com", "openrouter.ai")
    input_limit_bytes = 8000
    batch_count_limit = 2048
    supports_dimensions = True

    def _request(self, texts: list[str], *, query: bool) -> list[object]:
        body: dict[str, object] = {"model": self.model, "input": texts, "encoding_format": "float"}
        if self._dimensions:
            body["dimensions"] = self._dimensions
        return indexed_embeddings(self, self._session.post_json("embeddings", body))


def indexed_embeddings(embedder: RemoteEmbedder, payload: object) -> list[object]:
    """The vectors of an OpenAI-style ``data`` list, ordered by ``index``.

    Shared by voyage and mistral, which answer in the same shape. Servers
    that omit ``index`` everywhere are taken in list order; a partial or
    duplicated set of indexes is a malformed response.
    """
    data = embedder._list_field(payload, "data")
    items = [(embedder._field(item, "embedding"), _index_of(item)) for item in data]
    indexes = [index for _, index in items]
    if all(index is None for index in indexes):
        return [vector for vector, _ in items]
    if sorted(index if index is not None else -1 for index in indexes) != list(range(len(items))):
        raise embedder._malformed("'index' values are not 0..n-1")
    return [vector for vector, _ in sorted(items, key=lambda item: item[1] or 0)]


def _index_of(item: object) -> int | None:
    value = item.get("index") if isinstance(item, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None
