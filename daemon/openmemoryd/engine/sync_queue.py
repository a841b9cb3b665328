"""The sync queue: change notices in, index updates out, one at a time.

Producers (the file watcher, the interval reconcile, searches, session
thresholds, explicit requests) call `SyncQueue.notice` with index keys; one
consumer task applies them. Notices for the same key coalesce: a burst of
editor writes becomes one update. Each key waits until it is *due*: the
debounce after its last notice (1.5 s for edits), longer for session logs
still being written, or at once for appends and fresh reads.

Every notice gets a sequence number. `wait_applied` returns once everything
noticed before it was called has been applied (not merely dequeued), which
is what a read-your-writes search needs; it also makes everything pending due
at once, so a fresh read never waits out a debounce.

A failed batch is logged, reported in `statistics`, and retried after a
growing delay; the consumer never dies of it.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Final

import trio

from openmemoryd.errors import OmemdError

logger = logging.getLogger("openmemoryd.sync")

RECONCILE: Final = "*"  # the key of "compare everything with the disk"
MAX_RETRY_S: Final = 60.0


@dataclass(frozen=True, slots=True)
class QueueStatistics:
    """A snapshot for ``status``.

    ``depth`` counts keys due within the debounce: changes on their way into
    the index. ``scheduled`` counts later re-checks (a transcript waiting out
    its idle time), which are not pending work and must not make every
    search look stale.
    """

    depth: int
    scheduled: int
    running: bool
    last_reason: str | None
    last_finished_at: float | None
    last_error: str | None
    applied: int


@dataclass(slots=True)
class _Pending:
    due: float
    seq: int
    reasons: set[str]
    retry: bool = False  # requeued after a failed batch


Apply = Callable[[frozenset[str], frozenset[str]], Awaitable[None]]


class SyncQueue:
    """Coalescing, debounced, ordered application of index changes.

    Args:
        apply: called with (keys, reasons) for each batch; the key
            `RECONCILE` asks for a full comparison with the disk.
        debounce_s: default wait after a key's last notice.
    """

    def __init__(self, apply: Apply, *, debounce_s: float = 1.5) -> None:
        self._apply = apply
        self._debounce = debounce_s
        self._pending: dict[str, _Pending] = {}
        self._inflight_seq: int | None = None
        self._seq = 0
        self._applied_upto = 0
        self._changed = trio.Event()
        self._progress = trio.Event()
        self._running = False
        self._last_reason: str | None = None
        self._last_finished: float | None = None
        self._last_error: str | None = None
        self._applied = 0

    # ------------------------------------------------------------ producers

    def notice(self, keys: Iterable[str], reason: str, *, delay: float | None = None) -> int:
        """Queue *keys*; each becomes due *delay* s from now (default: the
        debounce), a later notice of the same key pushing it back. Returns
        the sequence number of this notice."""
        self._seq += 1
        due = trio.current_time() + (self._debounce if delay is None else max(0.0, delay))
        for key in keys:
            entry = self._pending.get(key)
            if entry is None:
                self._pending[key] = _Pending(due, self._seq, {reason})
            else:
                # A re-notice pushes the key back (debounce); an immediate one
                # pulls it forward. The entry keeps its *oldest* sequence
                # number: that notice is still unapplied.
                entry.due = due if delay != 0 else min(entry.due, due)
                entry.reasons.add(reason)
        self._changed.set()
        return self._seq

    def reconcile(self, reason: str, *, delay: float = 0.0) -> int:
        """Ask for a full comparison of the index with the disk."""
        return self.notice([RECONCILE], reason, delay=delay)

    async def wait_applied(self) -> None:
        """Return once every notice made before this call has been applied.

        Everything pending becomes due now: a fresh read must not wait out
        a debounce.
        """
        target = self._seq
        now = trio.current_time()
        for entry in self._pending.values():
            entry.due = min(entry.due, now)
        self._changed.set()
        while self._applied_upto < target:
            await self._progress.wait()

    def retry_failed_now(self) -> None:
        """What failed is due now, not after its back-off: the cause (a full
        disk, a damaged index) went away."""
        now = trio.current_time()
        for entry in self._pending.values():
            if entry.retry:
                entry.due = min(entry.due, now)
        self._changed.set()

    def statistics(self) -> QueueStatistics:
        horizon = trio.current_time() + self._debounce
        soon = sum(1 for entry in self._pending.values() if entry.due <= horizon)
        return QueueStatistics(
            depth=soon,
            scheduled=len(self._pending) - soon,
            running=self._running,
            last_reason=self._last_reason,
            last_finished_at=self._last_finished,
            last_error=self._last_error,
            applied=self._applied,
        )

    # ------------------------------------------------------------ consumer

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Apply due batches forever (the queue's one consumer)."""
        task_status.started()
        retry = 1.0
        while True:
            batch = await self._next_batch()
            keys = frozenset(batch)
            reasons = frozenset(r for entry in batch.values() for r in entry.reasons)
            self._inflight_seq = min(entry.seq for entry in batch.values())
            self._running = True
            try:
                await self._apply(keys, reasons)
            except Exception as exc:
                if isinstance(exc, OmemdError):  # explained (a full disk, ...): no traceback
                    logger.error(
                        "sync of %d path(s) failed (%s); retrying in %.0f s", len(keys), exc, retry
                    )
                else:
                    logger.exception(
                        "sync of %d path(s) failed; retrying in %.0f s", len(keys), retry
                    )
                self._last_error = f"{type(exc).__name__}: {exc}"
                self._requeue(batch, retry)
                retry = min(retry * 2, MAX_RETRY_S)
            else:
                retry = 1.0
                self._last_error = None
                self._applied += len(keys)
                self._last_reason = ", ".join(sorted(reasons))
                self._last_finished = time.time()
            finally:
                self._running = False
                self._inflight_seq = None
                self._advance()

    async def _next_batch(self) -> dict[str, _Pending]:
        while True:
            now = trio.current_time()
            due = {k: e for k, e in self._pending.items() if e.due <= now}
            if due:
                for key in due:
                    del self._pending[key]
                return due
            earliest = min((e.due for e in self._pending.values()), default=math.inf)
            self._changed = trio.Event()
            with trio.move_on_at(earliest):
                await self._changed.wait()

    def _requeue(self, batch: dict[str, _Pending], delay: float) -> None:
        due = trio.current_time() + delay
        for key, entry in batch.items():
            current = self._pending.get(key)
            if current is None:
                self._pending[key] = _Pending(due, entry.seq, entry.reasons, retry=True)
            else:
                current.seq = min(current.seq, entry.seq)
                current.reasons |= entry.reasons
                current.retry = True

    def _advance(self) -> None:
        """Recompute how far notices are applied and wake waiters."""
        outstanding = [e.seq for e in self._pending.values()]
        if self._inflight_seq is not None:
            outstanding.append(self._inflight_seq)
        self._applied_upto = (min(outstanding) - 1) if outstanding else self._seq
        self._progress.set()
        self._progress = trio.Event()
