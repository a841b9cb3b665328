"""A token budget for search answers: what an agent can afford to read.

Agents pay for context, so a caller may bound a search's answer in tokens
instead of (or as well as) hits. Hits are kept in rank order while their
snippets fit the budget, counted with the same CJK-aware estimate the
chunker uses; a first hit that alone exceeds it is cut to fit rather than
leaving the answer empty, since the best hit is what the caller asked for.
"""

from __future__ import annotations

import msgspec

from omem_protocol import SearchHit, SearchResult
from openmemoryd.text import estimate_tokens

ELLIPSIS = "…"


def within_budget(result: SearchResult, max_tokens: int) -> SearchResult:
    """*result* with only the hits whose snippets fit in *max_tokens*."""
    kept: list[SearchHit] = []
    used = 0
    for hit in result.results:
        tokens = estimate_tokens(hit.snippet)
        if used + tokens > max_tokens:
            if not kept:
                kept.append(msgspec.structs.replace(hit, snippet=cut(hit.snippet, max_tokens)))
            break
        kept.append(hit)
        used += tokens
    omitted = len(result.results) - len(kept)
    if omitted == 0 and kept == list(result.results):
        return result
    return msgspec.structs.replace(result, results=tuple(kept), budget_omitted=omitted)


def cut(text: str, max_tokens: int) -> str:
    """The longest prefix of *text* (ending in an ellipsis) within *max_tokens*."""
    if estimate_tokens(text) <= max_tokens:
        return text
    low, high = 0, len(text)
    while low < high:  # the longest prefix that fits, ellipsis included
        middle = (low + high + 1) // 2
        if estimate_tokens(text[:middle].rstrip() + ELLIPSIS) <= max_tokens:
            low = middle
        else:
            high = middle - 1
    return text[:low].rstrip() + ELLIPSIS if low else ELLIPSIS
