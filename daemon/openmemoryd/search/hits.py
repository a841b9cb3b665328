"""Hits from ranked candidates: a snippet each, no line shown twice, and the
citation and section of the exact lines shown.

A snippet may show only part of its chunk (a list item, the lines a better
hit does not show already), and a chunk may hold several small sections: the
hit's heading is the path in effect at the first line shown, from the
heading lines the chunker recorded inside the chunk, not the chunk's own.
"""

from __future__ import annotations

from omem_protocol import SearchHit
from openmemoryd.search.candidate import Candidate
from openmemoryd.search.snippet import make_snippet, without_lines
from openmemoryd.store import InnerHeadings

__all__ = ["citation", "heading_at", "headings_within", "to_hits"]


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 6)


def to_hits(
    candidates: list[Candidate],
    terms: list[str],
    limit: int,
    snippet_chars: int,
    trim_overlap: bool = True,
    item_snippets: bool = True,
) -> list[SearchHit]:
    """The first *limit* hits of *candidates*, in order. A hit leaves out the
    lines a better hit of its file already shows (chunks overlap), and one
    whose lines are all shown is left out (`search.trim_overlap`); a hit
    whose query words all fall in one list item shows that item and its
    neighbours (`search.item_snippets`)."""
    hits: list[SearchHit] = []
    ranges: set[tuple[str, int, int]] = set()
    lines_shown: dict[str, set[int]] = {}
    for candidate in candidates:
        made = make_snippet(
            candidate.text, candidate.start_line, terms, snippet_chars, item_snippets
        )
        shown = lines_shown.setdefault(candidate.path, set())
        snippet = without_lines(made, shown) if trim_overlap else made
        if snippet is None:
            continue  # every line of it is in a better hit already
        key = (candidate.path, snippet.start_line, snippet.end_line)
        if key in ranges:
            continue
        ranges.add(key)
        if not snippet.cut:
            shown.update(range(snippet.start_line, snippet.end_line + 1))
        hits.append(
            SearchHit(
                path=candidate.path,
                start_line=snippet.start_line,
                end_line=snippet.end_line,
                snippet=snippet.text,
                score=round(candidate.score, 6),
                text_score=_round(candidate.text_score),
                vector_score=_round(candidate.vector_score),
                source=candidate.source,
                citation=citation(candidate.path, snippet.start_line, snippet.end_line),
                heading=heading_at(candidate.heading, candidate.inner_headings, snippet.start_line),
                decay=round(candidate.decay, 6),
                mmr_rank=candidate.mmr_rank,
                agent=candidate.agent,
                rerank_score=_round(candidate.rerank_score),
                evidence=candidate.evidence,
                inner_headings=headings_within(
                    candidate.inner_headings, snippet.start_line, snippet.end_line
                ),
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


def heading_at(heading: str, inner: InnerHeadings, line: int) -> str:
    """The heading path at *line* of a span whose first line is under
    *heading* and whose later heading lines are *inner* (in line order)."""
    for at, path in inner:
        if at > line:
            break
        heading = path
    return heading


def headings_within(inner: InnerHeadings, first: int, last: int) -> InnerHeadings:
    """The heading lines of *inner* after *first* up to *last*."""
    return tuple((at, path) for at, path in inner if first < at <= last)
