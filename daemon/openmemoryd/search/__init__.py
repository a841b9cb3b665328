"""Search: the keyword leg, thresholds, snippets and citations."""

from __future__ import annotations

from openmemoryd.search.lexical import Candidate, bm25_score, lexical_leg
from openmemoryd.search.pipeline import SearchContext, SearchQuery, citation, run_search
from openmemoryd.search.snippet import Snippet, line_matches, make_snippet

__all__ = [
    "Candidate",
    "SearchContext",
    "SearchQuery",
    "Snippet",
    "bm25_score",
    "citation",
    "lexical_leg",
    "line_matches",
    "make_snippet",
    "run_search",
]
