"""The rerank APIs' wire formats, one small class each.

Every request asks for a score for *every* document it sends (``top_n`` or
``top_k`` equal to their number), because the search blends the rerank
score with the fused one rather than cutting the list at the reranker's
top few.

- Cohere: ``POST {base}/rerank`` (base ``…/v2``) with ``{model, query,
  documents, top_n}`` → ``{results: [{index, relevance_score}]}``.
- Jina: ``POST {base}/rerank`` (base ``…/v1``), the same shape.
- Voyage: ``POST {base}/rerank`` (base ``…/v1``) with ``{query, documents,
  model, top_k}`` → ``{data: [{index, relevance_score}]}``.
- TEI (Hugging Face text-embeddings-inference): ``POST {base}/rerank`` with
  ``{query, texts, truncate}`` → ``[{index, score}]``; the server has one
  model, so none is named. ``truncate`` because a chunk longer than the
  model's window is otherwise an HTTP 413 for the whole search.
- llama.cpp server (``--reranking``), and vLLM or other servers of the same
  Jina-style API: ``POST {base}/rerank`` (base ``…/v1``) with ``{query,
  documents, top_n}`` (plus ``model`` when one is set) → ``{results: [{index,
  relevance_score}]}``. llama.cpp answers raw logits, which `stage` squashes.
"""

from __future__ import annotations

from openmemoryd.search.rerank.base import HttpReranker


class CohereReranker(HttpReranker):
    provider = "cohere"
    default_base_url = "https://api.cohere.com/v2"
    default_model = "rerank-v3.5"
    key_env_vars = ("COHERE_API_KEY", "CO_API_KEY")
    hosted_hosts = ("api.cohere.com", "api.cohere.ai")

    def _body(self, query: str, documents: list[str]) -> dict[str, object]:
        return {
            "model": self.model,
            "query": query,
            "documents": documents,
            "top_n": len(documents),
        }

    def _results(self, payload: object) -> list[object]:
        return self._list_field(payload, "results")


class JinaReranker(HttpReranker):
    provider = "jina"
    default_base_url = "https://api.jina.ai/v1"
    default_model = "jina-reranker-v2-base-multilingual"
    key_env_vars = ("JINA_API_KEY",)
    hosted_hosts = ("api.jina.ai",)

    def _body(self, query: str, documents: list[str]) -> dict[str, object]:
        return {
            "model": self.model,
            "query": query,
            "documents": documents,
            "top_n": len(documents),
            "return_documents": False,
        }

    def _results(self, payload: object) -> list[object]:
        return self._list_field(payload, "results")


class VoyageReranker(HttpReranker):
    provider = "voyage"
    default_base_url = "https://api.voyageai.com/v1"
    default_model = "rerank-2.5"
    key_env_vars = ("VOYAGE_API_KEY",)
    hosted_hosts = ("api.voyageai.com",)

    def _body(self, query: str, documents: list[str]) -> dict[str, object]:
        return {
            "query": query,
            "documents": documents,
            "model": self.model,
            "top_k": len(documents),
        }

    def _results(self, payload: object) -> list[object]:
        return self._list_field(payload, "data")


class TeiReranker(HttpReranker):
    provider = "tei"
    default_base_url = "http://localhost:8080"
    score_key = "score"

    def _body(self, query: str, documents: list[str]) -> dict[str, object]:
        return {"query": query, "texts": documents, "truncate": True, "raw_scores": False}

    def _results(self, payload: object) -> list[object]:
        if not isinstance(payload, list):
            raise self._malformed("not a list of results")
        return payload


class LlamaCppReranker(HttpReranker):
    provider = "llamacpp"
    default_base_url = "http://localhost:8080/v1"

    def _body(self, query: str, documents: list[str]) -> dict[str, object]:
        body: dict[str, object] = {"query": query, "documents": documents, "top_n": len(documents)}
        if self.model:
            body["model"] = self.model
        return body

    def _results(self, payload: object) -> list[object]:
        return self._list_field(payload, "results")


PROVIDERS: dict[str, type[HttpReranker]] = {
    cls.provider: cls
    for cls in (CohereReranker, JinaReranker, VoyageReranker, TeiReranker, LlamaCppReranker)
}
"""Every remote reranker by its ``search.rerank.provider`` name."""
