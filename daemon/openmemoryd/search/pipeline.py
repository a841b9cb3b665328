"""One search, from query text to the reply, on a read-only connection.

Thresholding rules (OpenClaw PR #20994 is the bug they avoid):

* hits scoring at least ``min_score`` are returned, best first;
* when none does and the caller did not set ``min_score`` explicitly, the
  keyword hits are returned anyway and the reply says ``threshold_relaxed``:
  the default threshold must never hide an exact keyword match (BM25 scores
  of terms that occur in most notes of a small workspace are near zero);
* an explicit ``min_score`` is honoured strictly, and an empty reply then
  says ``below_min_score`` with the best score seen.

Hits whose snippets show the same lines of the same file (chunk overlap) are
reported once.
"""

from __future__ import annotations

from dataclasses import dataclass

import apsw

from omem_protocol import SearchHit, SearchResult
from openmemoryd.config import SearchSettings
from openmemoryd.errors import BadRequest
from openmemoryd.search.lexical import Candidate, lexical_leg
from openmemoryd.search.snippet import make_snippet
from openmemoryd.store import chunk_count
from openmemoryd.text import query_terms

MAX_CANDIDATES = 200


@dataclass(frozen=True, slots=True)
class SearchQuery:
    """A validated search request; None means "use the configured default"."""

    text: str
    limit: int | None = None
    min_score: float | None = None
    sources: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True)
class SearchContext:
    """What the engine knows that the reply must report."""

    provider: str
    model: str | None
    stale: bool


def run_search(
    conn: apsw.Connection, query: SearchQuery, settings: SearchSettings, context: SearchContext
) -> SearchResult:
    """Run *query* on *conn*; `took_ms` is left 0 for the caller to fill."""
    if not query.text.strip():
        raise BadRequest("query is empty")
    limit = query.limit or settings.limit
    min_score = settings.min_score if query.min_score is None else query.min_score
    terms = query_terms(query.text)
    pool = min(MAX_CANDIDATES, max(1, limit * settings.candidate_multiplier))
    candidates = lexical_leg(conn, terms, pool, query.sources)

    chosen = [c for c in candidates if c.score >= min_score]
    relaxed = not chosen and bool(candidates) and query.min_score is None
    if relaxed:
        chosen = [c for c in candidates if c.text_score is not None]
    hits = _to_hits(chosen, terms, limit, settings.snippet_chars)

    empty_reason: str | None = None
    best: float | None = None
    if not hits:
        if not terms:
            empty_reason = "no_terms"
        elif candidates:
            empty_reason = "below_min_score"
            best = round(max(c.score for c in candidates), 6)
        elif chunk_count(conn) == 0:
            empty_reason = "index_empty"
        else:
            empty_reason = "no_match"
    return SearchResult(
        results=tuple(hits),
        mode="lexical",
        provider=context.provider,
        model=context.model,
        degraded=False,
        degraded_reason=None,
        fallback=False,
        stale=context.stale,
        empty_reason=empty_reason,
        best_score=best,
        min_score=min_score,
        threshold_relaxed=relaxed and bool(hits),
        took_ms=0.0,
    )


def _to_hits(
    candidates: list[Candidate], terms: list[str], limit: int, snippet_chars: int
) -> list[SearchHit]:
    hits: list[SearchHit] = []
    shown: set[tuple[str, int, int]] = set()
    for candidate in candidates:
        snippet = make_snippet(candidate.text, candidate.start_line, terms, snippet_chars)
        key = (candidate.path, snippet.start_line, snippet.end_line)
        if key in shown:
            continue
        shown.add(key)
        hits.append(
            SearchHit(
                path=candidate.path,
                start_line=snippet.start_line,
                end_line=snippet.end_line,
                snippet=snippet.text,
                score=round(candidate.score, 6),
                text_score=None if candidate.text_score is None else round(candidate.text_score, 6),
                vector_score=None
                if candidate.vector_score is None
                else round(candidate.vector_score, 6),
                source=candidate.source,
                citation=citation(candidate.path, snippet.start_line, snippet.end_line),
                heading=candidate.heading,
            )
        )
        if len(hits) == limit:
            break
    return hits


def citation(path: str, start_line: int, end_line: int) -> str:
    """``path#L5`` for one line, ``path#L5-L7`` for a range (OpenClaw's form)."""
    if start_line == end_line:
        return f"{path}#L{start_line}"
    return f"{path}#L{start_line}-L{end_line}"
