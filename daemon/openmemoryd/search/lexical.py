"""The keyword leg: FTS5 BM25 over CJK-aware terms.

BM25 ranks from FTS5 are negative (more negative is better). The score is
``r / (1 + r)`` with ``r = -rank``: monotonic, in [0, 1), and it keeps the
BM25 order. OpenClaw once clamped negative ranks to 0 so every hit scored 1.0
and the order was lost (#5767); a test pins the order here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import apsw

from openmemoryd.search.candidate import Candidate
from openmemoryd.store import RowidRange, lexical_candidates
from openmemoryd.text import fts_match_expression


def bm25_score(rank: float) -> float:
    """Map an FTS5 BM25 rank onto [0, 1), better matches higher."""
    if not math.isfinite(rank):
        return 0.0
    relevance = max(0.0, -rank)
    return relevance / (1.0 + relevance)


def lexical_leg(
    conn: apsw.Connection,
    terms: Sequence[str],
    limit: int,
    sources: Sequence[str] | None,
    agent: str | None = None,
    part: RowidRange | None = None,
) -> list[Candidate]:
    """The *limit* best keyword matches for *terms* (an OR query), best
    first; with *part*, among the chunks of that id range only."""
    match = fts_match_expression(list(terms))
    if match is None:
        return []
    return [
        Candidate.found_by_keyword(chunk, bm25_score(rank))
        for chunk, rank in lexical_candidates(conn, match, limit, sources, agent, part)
    ]
