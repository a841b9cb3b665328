"""Counting which chunks readers were shown, for salience (`search.salience`).

A search must not wait on the writer for a counter, so the hits a reader
saw are noted in memory and written every `FLUSH_INTERVAL_S` (and when the
engine closes) in one transaction. A count lost to a crash costs a little
salience, nothing else.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Final

import trio

from omem_protocol import SearchHit
from openmemoryd.store import count_access

__all__ = ["AccessCounts"]

logger = logging.getLogger("openmemoryd.engine")

FLUSH_INTERVAL_S: Final = 2.0

Write = Callable[..., Awaitable[Any]]


class AccessCounts:
    """Hits shown to readers, not yet counted in the index."""

    def __init__(self) -> None:
        self._pending: list[tuple[str, int, int]] = []

    def note(self, hits: Sequence[SearchHit]) -> None:
        self._pending.extend((h.path, h.start_line, h.end_line) for h in hits)

    async def flush(self, write: Write) -> None:
        shown, self._pending = self._pending, []
        if not shown:
            return
        try:
            await write(count_access, shown)
        except Exception as exc:  # a damaged or full index: the counts are not worth a fault
            logger.warning("could not count %d shown hits: %s", len(shown), exc)

    async def serve(self, write: Write) -> None:
        """Flush every `FLUSH_INTERVAL_S` until cancelled."""
        while True:
            await trio.sleep(FLUSH_INTERVAL_S)
            await self.flush(write)
