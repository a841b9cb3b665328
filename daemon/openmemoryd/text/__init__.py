"""Text handling shared by indexing and search: scripts, tokens, terms."""

from __future__ import annotations

from openmemoryd.text.boundaries import safe_boundary
from openmemoryd.text.redact import redact_secrets
from openmemoryd.text.scripts import count_cjk, is_cjk
from openmemoryd.text.terms import (
    CONTRACTION_TAILS,
    MAX_QUERY_TERMS,
    TERMS_VERSION,
    apostrophe_tails,
    fts_match_expression,
    index_terms,
    query_terms,
    terms_changed_since,
    token_set,
    words_by_script,
    words_of,
)
from openmemoryd.text.tokens import estimate_tokens, fitting_prefix, line_cost

__all__ = [
    "CONTRACTION_TAILS",
    "MAX_QUERY_TERMS",
    "TERMS_VERSION",
    "apostrophe_tails",
    "count_cjk",
    "estimate_tokens",
    "fitting_prefix",
    "fts_match_expression",
    "index_terms",
    "is_cjk",
    "line_cost",
    "query_terms",
    "redact_secrets",
    "safe_boundary",
    "terms_changed_since",
    "token_set",
    "words_by_script",
    "words_of",
]
