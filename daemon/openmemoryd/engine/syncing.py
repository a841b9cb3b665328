"""Keeping the index true to the files, continuously.

The `Syncer` owns the sync queue and the file watcher and decides what each
event means:

* a changed Markdown file → its key is noticed (debounced);
* a changed transcript → its key is noticed; whether its new lines are
  indexed now or later is the session thresholds' call (`index.sessions`);
* a directory moved or deleted, or any event it cannot place → a *quick
  check*: compare every file's size and mtime with the index and re-index
  what differs;
* every ``interval_minutes`` → a full reconcile (hash every file), which also
  catches anything a watcher missed; searches trigger at most one quick check
  per ``search_check_s``;
* a fresh read (`wait_fresh`) → write cookies, wait for the watcher to see
  them (so every earlier change has been noticed), then wait for the queue
  to apply everything up to that point. Without a working watcher (or with
  one whose directories were just removed or replaced), a quick check
  replaces the cookies;
* the watcher restarted (it failed, or the workspace or another watched
  directory was deleted, moved or replaced and is watched anew) → a full
  reconcile, since nothing reported what changed meanwhile.

Failures are reported (``status``) and retried by the queue; none stops the
daemon.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import trio

from openmemoryd.engine.hosts import SyncHost
from openmemoryd.engine.sync_queue import RECONCILE, SyncQueue
from openmemoryd.engine.watcher import Watcher, WatchRoot
from openmemoryd.workspace import MEMORY_DIR, SESSION_SUFFIX

logger = logging.getLogger("openmemoryd.sync")

QUICK_CHECK: Final = "~"  # the key of "compare sizes and mtimes with the index"


@dataclass(frozen=True, slots=True)
class SyncerStatistics:
    queue_depth: int
    running: bool
    last_reason: str | None
    last_finished_at: float | None
    last_error: str | None
    watcher: str  # "native", "polling", "off"
    watcher_healthy: bool
    watcher_last_event_at: float | None
    watcher_restarts: int
    watcher_error: str | None


class Syncer:
    """The sync queue, its producers and its consumer for one engine."""

    def __init__(self, engine: SyncHost) -> None:
        self._engine = engine
        config = engine.config
        self._settings = config.sync
        self.queue = SyncQueue(self._apply, debounce_s=config.sync.debounce_ms / 1000)
        self.watcher: Watcher | None = None
        if config.sync.watch != "off":
            self.watcher = Watcher(
                self._watch_roots(),
                self._on_path_changed,
                mode="polling" if config.sync.watch == "polling" else "native",
                probe_interval_s=config.sync.probe_interval_s,
                poll_delay_ms=config.sync.poll_interval_ms,
                on_restart=self._watch_restarted,
            )
        self._last_search_check = -math.inf

    def _watch_roots(self) -> list[WatchRoot]:
        config = self._engine.config
        roots = [
            WatchRoot(config.workspace, recursive=False, required="workspace"),
            WatchRoot(config.workspace / MEMORY_DIR, recursive=True),
        ]
        for extra in config.extra_paths:
            if extra.is_dir() and not extra.is_symlink():
                roots.append(WatchRoot(extra, recursive=True))
            elif extra.is_file():
                roots.append(WatchRoot(extra.parent, recursive=False))
        if self._engine.sessions is not None:
            roots.extend(WatchRoot(root, recursive=True) for root in self._engine.sessions.roots)
        unique: dict[tuple[Path, bool], WatchRoot] = {(r.path, r.recursive): r for r in roots}
        return list(unique.values())

    # ------------------------------------------------------------ running

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Run the queue, the watcher and the interval reconcile."""
        async with trio.open_nursery() as nursery:
            await nursery.start(self.queue.serve)
            if self.watcher is not None:
                await nursery.start(self.watcher.serve)
            self.queue.reconcile("startup")
            if self._settings.interval_minutes > 0:
                nursery.start_soon(self._reconcile_periodically)
            task_status.started()

    def stop(self) -> None:
        if self.watcher is not None:
            self.watcher.stop()

    async def _reconcile_periodically(self) -> None:
        while True:
            await trio.sleep(self._settings.interval_minutes * 60)
            self.queue.reconcile("interval")

    # ------------------------------------------------------------ producers

    def _on_path_changed(self, path: Path) -> None:
        key = self._engine.key_for_path(path)
        if key is not None:
            if not self._engine.already_indexed(key, path):
                self.queue.notice([key], "watch")
        elif path.suffix not in (".md", SESSION_SUFFIX) and not path.is_file():
            # a directory (or something gone): what was under it cannot be
            # listed from here, so compare everything with the index
            self.queue.notice([QUICK_CHECK], "watch")

    def _watch_restarted(self) -> None:
        """The watcher watches anew: re-scan what it may have missed (a
        restored workspace is indexed whole, a replaced one afresh)."""
        self.queue.reconcile("watch restarted")

    def search_happened(self) -> None:
        """Searches may trigger a cheap check for changes the watcher missed."""
        interval = self._settings.search_check_s
        now = trio.current_time()
        if interval > 0 and now - self._last_search_check >= interval:
            self._last_search_check = now
            self.queue.notice([QUICK_CHECK], "search", delay=0)

    async def wait_fresh(self) -> bool:
        """True once every change made before the call is indexed; False if
        that took longer than ``fresh_timeout_s`` (the reply is then stale)."""
        with trio.move_on_after(self._settings.fresh_timeout_s):
            watcher = self.watcher
            if watcher is None or not await watcher.wait_seen():
                self.queue.notice([QUICK_CHECK], "fresh", delay=0)
            await self.queue.wait_applied()
            return True
        return False

    # ------------------------------------------------------------ consumer

    async def _apply(self, keys: frozenset[str], reasons: frozenset[str]) -> None:
        engine = self._engine
        reason = ", ".join(sorted(reasons))
        if RECONCILE in keys:
            await engine.sync(reason=reason)
        elif QUICK_CHECK in keys:
            changed = await engine.changed_keys()
            if changed:
                # a transcript the check found still being written is looked
                # at again once idle, as if the watcher had named it
                self._recheck(await engine.apply_keys(changed, reason=reason))
        files = keys - {RECONCILE, QUICK_CHECK}
        if files:
            self._recheck(await engine.apply_keys(files, reason=reason))

    def _recheck(self, waiting: Mapping[str, float]) -> None:
        """Look at these transcripts again after their delays (still being written)."""
        for key, delay in waiting.items():
            self.queue.notice([key], "session-idle", delay=delay)

    def statistics(self) -> SyncerStatistics:
        queue = self.queue.statistics()
        watch = self.watcher.statistics() if self.watcher is not None else None
        return SyncerStatistics(
            queue_depth=queue.depth,
            running=queue.running,
            last_reason=queue.last_reason,
            last_finished_at=queue.last_finished_at,
            last_error=queue.last_error,
            watcher=watch.mode if watch is not None else "off",
            watcher_healthy=watch.healthy if watch is not None else False,
            watcher_last_event_at=watch.last_event_at if watch is not None else None,
            watcher_restarts=watch.restarts if watch is not None else 0,
            watcher_error=watch.error if watch is not None else None,
        )
