"""A token budget for search answers: what an agent can afford to read.

Agents pay for context, so a caller may bound a search's answer in tokens
instead of (or as well as) hits. What a hit costs is what a reader is shown:
its snippet and the line saying where it comes from (its citation, and the
heading path of its section unless the snippet opens with it). Tokens
are counted as the chunker counts a chunk's cost: each line's CJK-aware
estimate plus one for its line break.

Filling the budget with whole hits in rank order and stopping at the first
that does not fit spends it all on the first few chunks. An agent is better
served by breadth once the best hits are shown: the evidence it needs is
often a single line of a lower-ranked chunk. So hits are shown whole, in
rank order, while they fit in the first *whole_share* of the budget
(``search.budget_whole_share``, 0.7); each later hit is shown as its best
line (the one holding the most query terms, with its exact line number as
its citation), and one that does not fit is passed over for the next,
until the hits run out (when all that is left fits whole, it is shown
whole). On LoCoMo this finds evidence for more questions in the same
tokens than whole hits alone (docs/recall.md, "Token budgets"). The best
hit is always shown: when it alone exceeds the budget, as the lines around
its best line that fit (only a line too long for the whole budget is cut
inside the line, ending in an ellipsis).

A timeline or a section (`mode` ``timeline`` or ``section``) is read in
order, not ranked: it keeps its lines in order while they fit, and the
first hit that does not fit is cut at a line boundary.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import date
from typing import Final

import msgspec

from omem_protocol import MAX_LIMIT, SearchHit, SearchResult
from openmemoryd.search.dates import parse_query_dates
from openmemoryd.search.hits import citation, heading_at, headings_within
from openmemoryd.search.snippet import best_line, window_around
from openmemoryd.text import fitting_prefix, line_cost, query_terms, safe_boundary
from openmemoryd.workspace.boilerplate import has_memory

ELLIPSIS: Final = "…"
# Without a `limit`, a search with a budget considers as many hits as the
# budget could show at about this many tokens a hit (a line and its citation).
TOKENS_A_LINE_HIT: Final = 40
MAX_BUDGET_HITS: Final = 50
_IN_ORDER: Final = frozenset({"timeline", "section"})


def cost(text: str) -> int:
    """Tokens of *text* as the chunker counts them (each line, plus its break)."""
    return sum(line_cost(line) for line in text.split("\n"))


def hit_cost(hit: SearchHit) -> int:
    """What showing *hit* costs a reader: its snippet and where it is from."""
    return cost(hit.snippet) + line_cost(where(hit))


def where(hit: SearchHit) -> str:
    """The line saying where *hit* is from, as a reader is shown it: its
    citation and its section (the text output prints both on one line)."""
    section = hit.section()
    return f"{hit.citation} · {section}" if section else hit.citation


def budget_limit(max_tokens: int, default_limit: int) -> int:
    """Hits a search with a budget of *max_tokens* and no `limit` considers:
    what the budget could show as single lines, at least *default_limit*."""
    wanted = math.ceil(max_tokens / TOKENS_A_LINE_HIT)
    return max(default_limit, min(MAX_BUDGET_HITS, MAX_LIMIT, wanted))


def budget_terms(query: str, today: date | None = None) -> list[str]:
    """The terms a hit's best line is chosen by: the query's search terms
    without the dates it names (a date word such as "May" is no evidence)."""
    return query_terms(parse_query_dates(query, today or date.today()).rest)


def pack_answer(
    result: SearchResult, max_tokens: int, query: str, whole_share: float
) -> SearchResult:
    """`within_budget` for the answer to *query*, its lines chosen by `budget_terms`."""
    return within_budget(result, max_tokens, budget_terms(query), whole_share)


def within_budget(
    result: SearchResult, max_tokens: int, terms: Sequence[str], whole_share: float = 0.7
) -> SearchResult:
    """*result* with only as much of its hits as fits in *max_tokens*.

    *terms* choose the line a hit shown in part keeps, *whole_share* how much
    of the budget whole hits may fill (see the module's docstring);
    `budget_omitted` counts the hits not shown at all.
    """
    if result.mode in _IN_ORDER:
        kept = _in_order(result.results, max_tokens)
    else:
        kept = _ranked(result.results, max_tokens, terms, whole_share)
    if len(kept) == len(result.results) and all(
        a is b for a, b in zip(kept, result.results, strict=True)
    ):
        return result
    return msgspec.structs.replace(
        result, results=tuple(kept), budget_omitted=len(result.results) - len(kept)
    )


def _ranked(
    hits: Sequence[SearchHit], max_tokens: int, terms: Sequence[str], whole_share: float
) -> list[SearchHit]:
    kept: list[SearchHit] = []
    used = 0
    lines_shown: set[tuple[str | None, str, int]] = set()
    costs = [hit_cost(hit) for hit in hits]
    rest = sum(costs)  # of the hits from this one on, shown whole
    for hit, whole in zip(hits, costs, strict=True):
        shown: SearchHit | None = hit
        if not kept:  # the best hit, always shown
            shown = hit if whole <= max_tokens else _around_best(hit, max_tokens, terms)
        elif used + rest > max_tokens and used + whole > max_tokens * whole_share:
            # a line costs at least its citation and two tokens: when not even
            # that fits, the hit is passed over without tokenising its lines
            least = line_cost(citation(hit.path, hit.start_line, hit.start_line)) + 2
            shown = _best_line(hit, terms) if used + least <= max_tokens else None
            if shown is not None and (hit.workspace, hit.path, shown.start_line) in lines_shown:
                shown = None  # hits that repeat lines (search.trim_overlap off)
        rest -= whole
        if shown is not None and (not kept or used + hit_cost(shown) <= max_tokens):
            kept.append(shown)
            used += hit_cost(shown)
            lines_shown.update(
                (shown.workspace, shown.path, n)
                for n in range(shown.start_line, shown.end_line + 1)
            )
    return kept


def _in_order(hits: Sequence[SearchHit], max_tokens: int) -> list[SearchHit]:
    kept: list[SearchHit] = []
    left = max_tokens
    for hit in hits:
        if hit_cost(hit) <= left:
            kept.append(hit)
            left -= hit_cost(hit)
            continue
        trimmed = _leading_lines(hit, left, first=not kept)
        if trimmed is not None:
            kept.append(trimmed)
        break
    return kept


def _shown(hit: SearchHit, lines: Sequence[str], first: int, last: int) -> SearchHit:
    """*hit* showing its snippet's lines *first*..*last* (0-based), cited
    exactly, under the heading in effect at the first."""
    start, end = hit.start_line + first, hit.start_line + last
    return msgspec.structs.replace(
        hit,
        snippet="\n".join(lines[first : last + 1]),
        start_line=start,
        end_line=end,
        citation=citation(hit.path, start, end),
        heading=heading_at(hit.heading, hit.inner_headings, start),
        inner_headings=headings_within(hit.inner_headings, start, end),
    )


def _best_line(hit: SearchHit, terms: Sequence[str]) -> SearchHit | None:
    """*hit* as its best line alone (itself when that is all it has).

    Never a heading: the line shown is cited with the heading path it is
    under, so a heading alone (``## Deploy``) would spend the line on what
    its label already says. A heading that holds the query's words gives way
    to the first line of memory under it.
    """
    lines = hit.snippet.split("\n")
    memory = [line if has_memory(line) else "" for line in lines]
    best, hits = best_line(memory, terms)
    if best is None:
        return None
    if not hits:
        named, named_hits = best_line(lines, terms)
        if named_hits and named is not None:
            under = next((i for i in range(named + 1, len(lines)) if memory[i].strip()), None)
            best = best if under is None else under
    return _shown(hit, lines, best, best)


def _around_best(hit: SearchHit, max_tokens: int, terms: Sequence[str]) -> SearchHit:
    """The lines around *hit*'s best line that fit in *max_tokens*, or its
    best line cut to fit when that line alone does not."""
    lines = hit.snippet.split("\n")
    best = best_line(lines, terms)[0] or 0

    def fits(first: int, last: int) -> bool:
        return hit_cost(_shown(hit, lines, first, last)) <= max_tokens

    if not fits(best, best):
        alone = _shown(hit, lines, best, best)
        room = max(1, max_tokens - line_cost(where(alone)))
        return msgspec.structs.replace(alone, snippet=cut(lines[best], room))
    return _shown(hit, lines, *window_around(lines, best, fits))


def _leading_lines(hit: SearchHit, budget: int, *, first: bool) -> SearchHit | None:
    """The leading whole lines of *hit* that fit in *budget* (None if not one
    does), or for the *first* hit at least the start of its first line."""
    lines = hit.snippet.split("\n")
    room = budget - line_cost(where(hit))
    count = 0
    used = 0
    while count < len(lines) and used + line_cost(lines[count]) <= room:
        used += line_cost(lines[count])
        count += 1
    while count and not lines[count - 1].strip():
        count -= 1  # no trailing blank line, as a chunk has none
    if count:
        return _shown(hit, lines, 0, count - 1)
    if not first:
        return None
    return msgspec.structs.replace(
        hit,
        snippet=cut(lines[0], max(room, 1)),
        end_line=hit.start_line,
        citation=citation(hit.path, hit.start_line, hit.start_line),
        inner_headings=(),
    )


def cut(line: str, max_tokens: int) -> str:
    """The longest start of *line*, ending in an ellipsis, that costs at most
    *max_tokens* as a line; never inside a visible character."""
    if line_cost(line) <= max_tokens:
        return line
    end = safe_boundary(line, fitting_prefix(line, max_tokens, suffix=ELLIPSIS))
    return line[:end].rstrip() + ELLIPSIS
