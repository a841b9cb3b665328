"""The keyword leg of a large index in two halves, on two readers at once.

FTS5 scores every chunk that matches any term of the query; at a million
chunks that is ~105 ms on the project's 2-core machine, longer than the
query embedding and the vector leg together, which run beside it. The
leg splits exactly: BM25 is the same for a chunk whichever range of ids
it is searched in (FTS5 counts a term's rows over the whole index), so
the best *pool* of each half together hold the best *pool* of the whole
(`search.pipeline.merge_early`). Two halves, because two cores is what
the daemon is measured on and the vector leg needs a reader as well.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import trio

from openmemoryd.config import SearchSettings
from openmemoryd.search.pipeline import EarlyKeywords, SearchQuery, early_keywords, merge_early
from openmemoryd.store import RowidRange, highest_chunk_id

__all__ = ["keyword_leg"]

Read = Callable[..., Awaitable[Any]]


async def keyword_leg(
    read: Read, query: SearchQuery, settings: SearchSettings, now: float
) -> EarlyKeywords | None:
    """`search.pipeline.early_keywords` through *read* (the engine's reader
    lane), in two halves at once from `keyword_split_above` chunks on."""
    highest: int = await read(highest_chunk_id)
    if highest < settings.keyword_split_above or highest < 2:
        found: EarlyKeywords | None = await read(early_keywords, query, settings, now)
        return found
    middle = highest // 2 + 1
    parts = (RowidRange(None, middle), RowidRange(middle, None))
    halves: list[EarlyKeywords | None] = [None, None]

    async def half(i: int) -> None:
        halves[i] = await read(early_keywords, query, settings, now, parts[i])

    async with trio.open_nursery() as nursery:
        for i in range(len(parts)):
            nursery.start_soon(half, i)
    return merge_early(halves)
