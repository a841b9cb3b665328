"""Search: keyword and vector legs, fusion, decay, MMR, thresholds, snippets."""

from __future__ import annotations

from openmemoryd.search.candidate import Candidate
from openmemoryd.search.decay import apply_decay, candidate_timestamp, decay_multiplier
from openmemoryd.search.fusion import fuse_rrf, fuse_weighted, normalize_weights
from openmemoryd.search.hits import citation
from openmemoryd.search.lexical import bm25_score, lexical_leg
from openmemoryd.search.mmr import jaccard, mmr_rerank
from openmemoryd.search.pipeline import (
    Ranked,
    SearchContext,
    SearchQuery,
    finish_search,
    rank_candidates,
    run_search,
)
from openmemoryd.search.snippet import Snippet, line_matches, make_snippet
from openmemoryd.search.vector import VectorQuery, rescale, vector_leg

__all__ = [
    "Candidate",
    "Ranked",
    "SearchContext",
    "SearchQuery",
    "Snippet",
    "VectorQuery",
    "apply_decay",
    "bm25_score",
    "candidate_timestamp",
    "citation",
    "decay_multiplier",
    "finish_search",
    "fuse_rrf",
    "fuse_weighted",
    "jaccard",
    "lexical_leg",
    "line_matches",
    "make_snippet",
    "mmr_rerank",
    "normalize_weights",
    "rank_candidates",
    "rescale",
    "run_search",
    "vector_leg",
]
