"""Faults of the index file while the daemon runs: damage and a full disk.

`store.open_index` deals with an index that is unreadable when it opens.
Damage can also surface later, in a page that only a later query touches
(SQLITE_CORRUPT, SQLITE_NOTADB), and a write can fail because the disk is
full (SQLITE_FULL). Both reach the engine's lanes as apsw errors, sometimes
only as the context of another one (after SQLite rolled a failed
transaction back itself, apsw's ``with conn:`` fails to roll back again and
raises "no transaction is active"), so `index_fault` walks the chain.

* **Damage.** The request gets `IndexDamaged` (``unavailable``, saying what
  happens next) and `IndexHealth` rebuilds the index from the Markdown in
  the background with the rebuild machinery (`engine.rebuild`), swaps it in
  and keeps the damaged file beside it as ``*.corrupt-<time>``. The
  embedding cache is not carried over: a damaged page may hold a wrong
  vector that no check would notice. At most `MAX_RECOVERIES` rebuilds run
  per daemon run: a disk that keeps damaging what is written to it is
  reported in ``status``, not fed rebuilds forever; a restart tries again.
* **Full disk.** The request gets `IndexFull`. Nothing is lost: SQLite rolled
  the transaction back, so the index is as it was and reads go on, and the
  Markdown lives in its own files. ``status`` says so until a write succeeds
  again; the sync queue then retries its failed work at once.

Which index a fault belongs to is tracked by a *generation* that each swap
increments: a late report about the index that was just replaced must not
condemn the new one.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import Final, Literal, TypeVar

import apsw
import trio

from openmemoryd.errors import Unavailable

__all__ = [
    "MAX_RECOVERIES",
    "FaultSeen",
    "IndexDamaged",
    "IndexFull",
    "IndexHealth",
    "guarded",
    "index_fault",
]

logger = logging.getLogger("openmemoryd.recovery")

T = TypeVar("T")
FaultKind = Literal["damaged", "full"]

MAX_RECOVERIES: Final = 3
RETRY_S: Final = 1.0
FULL_RETRY_S: Final = 5.0


class IndexDamaged(Unavailable):
    """The index file is damaged; a rebuild from the Markdown is under way."""


class IndexFull(Unavailable):
    """The disk holding the index is full; the index is unchanged."""


class FaultSeen(Exception):
    """Carries an index fault out of a lane, with the generation it hit."""

    def __init__(self, kind: FaultKind, generation: int, error: BaseException) -> None:
        super().__init__(f"{kind}: {error}")
        self.kind = kind
        self.generation = generation
        self.error = error


def index_fault(exc: BaseException) -> FaultKind | None:
    """What *exc* (or an exception it was raised while handling) says about
    the index file, if anything."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, apsw.CorruptError | apsw.NotADBError):
            return "damaged"
        if isinstance(current, apsw.FullError):
            return "full"
        current = current.__cause__ or current.__context__
    return None


def guarded(generation: int, fn: Callable[..., T], *args: object) -> T:
    """Run *fn(*args)* (in a worker thread); an index fault leaves as
    `FaultSeen`, tagged with *generation*."""
    try:
        return fn(*args)
    except Exception as exc:
        kind = index_fault(exc)
        if kind is None:
            raise
        raise FaultSeen(kind, generation, exc) from exc


class IndexHealth:
    """What is wrong with the live index file, and the repair of damage.

    Args:
        rebuild: builds a new index from the Markdown, swaps it in (keeping
            the damaged file) and returns where the damaged file went.
        retry_queued: asks the sync queue and the vector indexer to retry
            their failed work now.
    """

    def __init__(
        self, rebuild: Callable[[], Awaitable[object]], retry_queued: Callable[[], None]
    ) -> None:
        self._rebuild = rebuild
        self._retry_queued = retry_queued
        self.generation = 0
        self.damage: str | None = None
        self.disk_full: str | None = None
        self.recoveries = 0
        self.gave_up = False
        self.rebuild_error: str | None = None
        self._wake = trio.Event()
        self._repaired = trio.Event()

    # ------------------------------------------------------------ reports from the lanes

    def fault(self, seen: FaultSeen) -> Unavailable:
        """Record what a lane hit; return the error for the request."""
        if seen.kind == "full":
            if self.disk_full is None:
                logger.error("writing the index failed, the disk is full: %s", seen.error)
            self.disk_full = f"{seen.error} (at {time.strftime('%H:%M:%S')})"
            return IndexFull(
                f"the disk holding the index is full ({seen.error}); searches use the index "
                "as it was, and changes are indexed once space is freed"
            )
        if seen.generation == self.generation and self.damage is None:
            logger.error("the index is damaged (%s); rebuilding it from the Markdown", seen.error)
            self.damage = str(seen.error)
            self._repaired = trio.Event()
            if self.recoveries >= MAX_RECOVERIES:
                self._give_up()
            else:
                self._wake.set()
        if self.gave_up:
            return IndexDamaged(
                f"the index is damaged ({seen.error}) and was rebuilt {self.recoveries} times "
                "already; check the disk, then restart openmemoryd to rebuild it"
            )
        return IndexDamaged(
            f"the index is damaged ({seen.error}); it is being rebuilt from the Markdown, "
            "try again in a moment"
        )

    def write_succeeded(self) -> None:
        """A write committed: the disk has room again. (Calls that changed
        nothing prove nothing and are not reported.)"""
        if self.disk_full is not None:
            logger.info("the index can be written again")
            self.disk_full = None
            self._retry_queued()

    def swapped(self) -> None:
        """A new index file, built from the Markdown, replaced the live one."""
        self.generation += 1
        if self.damage is not None:
            self.damage = None
            self.rebuild_error = None
            self._repaired.set()
            self._retry_queued()

    async def wait_repaired(self) -> bool:
        """True once no damage is known (at once if none is); False if the
        damage stays until a restart."""
        while self.damage is not None and not self.gave_up:
            await self._repaired.wait()
        return self.damage is None

    def issues(self) -> list[str]:
        """What ``status`` should say."""
        found = []
        if self.damage is not None:
            if self.gave_up:
                found.append(
                    f"the index is damaged ({self.damage}); it was rebuilt {self.recoveries} "
                    "times since start and is not rebuilt again: check the disk, then restart"
                )
            else:
                found.append(
                    f"the index is damaged ({self.damage}); rebuilding it from the Markdown"
                )
        if self.rebuild_error is not None:
            found.append(f"rebuilding the damaged index failed (retrying): {self.rebuild_error}")
        if self.disk_full is not None:
            found.append(
                f"writing the index failed, the disk is full: {self.disk_full}; searches use "
                "the index as it was, changes are indexed once space is freed"
            )
        return found

    # ------------------------------------------------------------ repair

    def _give_up(self) -> None:
        logger.error(
            "the index is damaged again after %d rebuilds; not rebuilding it until a restart",
            self.recoveries,
        )
        self.gave_up = True
        self._repaired.set()

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Repair reported damage, one rebuild at a time, forever."""
        task_status.started()
        while True:
            await self._wake.wait()
            self._wake = trio.Event()
            if self.damage is None or self.gave_up:
                continue
            if self.recoveries >= MAX_RECOVERIES:
                self._give_up()
                continue
            self.recoveries += 1
            try:
                await self._rebuild()
            except Exception as exc:
                self.rebuild_error = f"{type(exc).__name__}: {exc}"
                if index_fault(exc) == "full":
                    # No room for the new file: not the damage recurring, so
                    # it does not count; retried slowly until space returns.
                    logger.error("no room to rebuild the damaged index: %s", exc)
                    self.disk_full = f"{exc} (at {time.strftime('%H:%M:%S')})"
                    self.recoveries -= 1
                    await trio.sleep(FULL_RETRY_S)
                else:
                    logger.exception("rebuilding the damaged index failed")
                    await trio.sleep(RETRY_S * self.recoveries)
                self._wake.set()
                continue
            logger.info("the damaged index was rebuilt from the Markdown")
