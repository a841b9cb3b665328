"""Optional reranking of a search's best candidates by a cross-encoder service.

Off unless ``[search.rerank] provider`` is set (`build_reranker`); the stage
itself (`rerank_candidates`) is in `stage`, the wire formats in `providers`.
"""

from __future__ import annotations

from openmemoryd.search.rerank.base import HttpReranker, Reranker, RerankError
from openmemoryd.search.rerank.build import build_reranker
from openmemoryd.search.rerank.providers import (
    PROVIDERS,
    CohereReranker,
    JinaReranker,
    LlamaCppReranker,
    TeiReranker,
    VoyageReranker,
)
from openmemoryd.search.rerank.stage import RerankNote, blend, normalise, rerank_candidates

__all__ = [
    "PROVIDERS",
    "CohereReranker",
    "HttpReranker",
    "JinaReranker",
    "LlamaCppReranker",
    "RerankError",
    "RerankNote",
    "Reranker",
    "TeiReranker",
    "VoyageReranker",
    "blend",
    "build_reranker",
    "normalise",
    "rerank_candidates",
]
