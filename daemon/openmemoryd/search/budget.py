"""A token budget for search answers: what an agent can afford to read.

Agents pay for context, so a caller may bound a search's answer in tokens
instead of (or as well as) hits. Hits are kept in rank order while their
snippets fit the budget; the first that does not fit is trimmed at a line
boundary to the budget left (its line range shrinks with it, so its
citation still points at what is shown), and the rest are left out. Tokens
are counted as the chunker counts a chunk's cost: each line's CJK-aware
estimate plus one for its line break. Only a first line too long for the
whole budget is cut inside the line (ending in an ellipsis), since the best
hit is what the caller asked for.
"""

from __future__ import annotations

import msgspec

from omem_protocol import SearchHit, SearchResult
from openmemoryd.search.pipeline import citation
from openmemoryd.text import fitting_prefix, line_cost, safe_boundary

ELLIPSIS = "…"


def cost(text: str) -> int:
    """Tokens of *text* as the chunker counts them (each line, plus its break)."""
    return sum(line_cost(line) for line in text.split("\n"))


def within_budget(result: SearchResult, max_tokens: int) -> SearchResult:
    """*result* with only as much of its hits, in rank order, as fits in *max_tokens*."""
    kept: list[SearchHit] = []
    left = max_tokens
    for hit in result.results:
        tokens = cost(hit.snippet)
        if tokens <= left:
            kept.append(hit)
            left -= tokens
            continue
        trimmed = _trim(hit, left, first=not kept)
        if trimmed is not None:
            kept.append(trimmed)
        break
    if len(kept) == len(result.results) and kept[-1:] == list(result.results[-1:]):
        return result
    return msgspec.structs.replace(
        result, results=tuple(kept), budget_omitted=len(result.results) - len(kept)
    )


def _trim(hit: SearchHit, budget: int, *, first: bool) -> SearchHit | None:
    """The leading whole lines of *hit* that fit in *budget* (None if not one
    does), or for the *first* hit at least the start of its first line."""
    lines = hit.snippet.split("\n")
    shown: list[str] = []
    used = 0
    for line in lines:
        tokens = line_cost(line)
        if used + tokens > budget:
            break
        shown.append(line)
        used += tokens
    while shown and not shown[-1].strip():
        shown.pop()  # no trailing blank line, as a chunk has none
    if shown:
        end_line = hit.start_line + len(shown) - 1
        return msgspec.structs.replace(
            hit,
            snippet="\n".join(shown),
            end_line=end_line,
            citation=citation(hit.path, hit.start_line, end_line),
        )
    if not first:
        return None
    return msgspec.structs.replace(
        hit,
        snippet=cut(lines[0], budget),
        end_line=hit.start_line,
        citation=citation(hit.path, hit.start_line, hit.start_line),
    )


def cut(line: str, max_tokens: int) -> str:
    """The longest start of *line*, ending in an ellipsis, that costs at most
    *max_tokens* as a line; never inside a visible character."""
    if line_cost(line) <= max_tokens:
        return line
    end = safe_boundary(line, fitting_prefix(line, max_tokens, suffix=ELLIPSIS))
    return line[:end].rstrip() + ELLIPSIS
