"""Reranking of a search's best candidates by a cross-encoder.

``[search.rerank] provider`` says which (`build_reranker`): by default the
local English model where it is installed, for searches calibrated fusion
is unsure of; the stage
itself (`rerank_candidates`) is in `stage`, the services' wire formats in
`providers`, the in-daemon model in `local`.
"""

from __future__ import annotations

from openmemoryd.search.rerank.base import (
    HttpReranker,
    RerankBusy,
    Reranker,
    RerankError,
    RerankSkipped,
)
from openmemoryd.search.rerank.build import build_reranker, reranker_model
from openmemoryd.search.rerank.local import LocalReranker, local_model_installed
from openmemoryd.search.rerank.providers import (
    PROVIDERS,
    CohereReranker,
    JinaReranker,
    LlamaCppReranker,
    TeiReranker,
    VoyageReranker,
)
from openmemoryd.search.rerank.stage import (
    RerankNote,
    RerankOutcome,
    blend,
    normalise,
    rerank_candidates,
)

__all__ = [
    "PROVIDERS",
    "CohereReranker",
    "HttpReranker",
    "JinaReranker",
    "LlamaCppReranker",
    "LocalReranker",
    "RerankBusy",
    "RerankError",
    "RerankNote",
    "RerankOutcome",
    "RerankSkipped",
    "Reranker",
    "TeiReranker",
    "VoyageReranker",
    "blend",
    "build_reranker",
    "local_model_installed",
    "normalise",
    "rerank_candidates",
    "reranker_model",
]
