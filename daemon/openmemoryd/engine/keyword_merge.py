"""Keeping the keyword index merged while the writer has nothing else to do.

Bulk indexing leaves FTS5 with a dozen b-trees (`store.keyword_merge`);
searching one is faster. Every `CHECK_INTERVAL_S`, when no files are being
indexed, the merger reads the index's shape (one small row, on a reader) and,
if a merge is worth it, merges in steps of `STEP_PAGES` leaf pages, each its
own short write transaction through the writer lane:

* a write waiting for the lane goes before the next step (trio's capacity
  limiter is first come, first served), so a merge delays an append or a
  search's access counts by one step, 10-70 ms (measured at 100k and 1M
  chunks on the project's 2-core machine), never by the whole merge;
* when indexing starts (a sync, queued changes, a rebuild) the merger stops
  between steps and carries on after it settles: FTS5 keeps the merge's
  progress in the index, so nothing is redone;
* a crash loses at most the step it interrupted (each is a transaction).

`status` shows the state (`state`) and the number of segments.
"""

from __future__ import annotations

import logging
import time
from typing import Final

import trio

from omem_protocol import KeywordIndexStatus
from openmemoryd.engine.hosts import MergeHost
from openmemoryd.store.keyword_merge import (
    KeywordSegments,
    keyword_segments,
    merge_step,
    worth_merging,
)

__all__ = ["KeywordMerger"]

logger = logging.getLogger("openmemoryd.engine")

CHECK_INTERVAL_S: Final = 2.0
STEP_PAGES: Final = 256  # ~1 MB written per step
FAILURE_BACKOFF_S: Final = 60.0


class KeywordMerger:
    """The idle-time merger of one engine's keyword index, and what it last saw."""

    def __init__(
        self, *, step_pages: int = STEP_PAGES, interval_s: float = CHECK_INTERVAL_S
    ) -> None:
        self._step_pages = step_pages
        self._interval_s = interval_s
        self._state = "unknown"
        self._segments: int | None = None
        # a shape FTS5 found nothing to merge in, though `worth_merging`
        # said so: not tried again until the index changes
        self._nothing_in: KeywordSegments | None = None

    def status(self) -> KeywordIndexStatus:
        return KeywordIndexStatus(state=self._state, segments=self._segments)

    async def serve(self, host: MergeHost) -> None:
        """Check (and merge) every interval until cancelled; a failure is
        logged and retried after `FAILURE_BACKOFF_S`, never raised."""
        while True:
            await trio.sleep(self._interval_s)
            try:
                await self.check(host)
            except Exception as exc:  # a damaged or full index: searching still works
                logger.warning("merging the keyword index failed (will retry): %s", exc)
                self._state = "waiting" if self._state == "merging" else self._state
                await trio.sleep(FAILURE_BACKOFF_S)

    async def check(self, host: MergeHost) -> str:
        """Look at the index and merge it if that is worth it and the writer
        is idle; return the state after (see `KeywordIndexStatus`)."""
        if host.indexing_busy():
            return self._state
        shape = await host.read(keyword_segments)
        self._see(shape)
        if shape is None:
            self._state = "unknown"
        elif not worth_merging(shape) or shape == self._nothing_in:
            self._state = "merged"
        else:
            await self._merge(host, shape)
        return self._state

    async def _merge(self, host: MergeHost, before: KeywordSegments) -> None:
        self._state = "merging"
        started = time.monotonic()
        steps = 0
        while True:
            if host.indexing_busy():
                self._state = "waiting"
                return
            if not await host.write(merge_step, self._step_pages):
                break
            steps += 1
        after = await host.read(keyword_segments)
        self._see(after)
        self._state = "merged"
        if not steps:
            self._nothing_in = after
            return
        logger.info(
            "keyword index merged: %d segments into %s in %.1f s (%d steps)",
            before.segments,
            "?" if after is None else after.segments,
            time.monotonic() - started,
            steps,
        )

    def _see(self, shape: KeywordSegments | None) -> None:
        self._segments = None if shape is None else shape.segments
