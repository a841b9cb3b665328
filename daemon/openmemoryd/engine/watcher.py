"""Watching the memory files: change events, cookies, and health.

Events come from watchfiles (inotify on Linux, FSEvents on macOS) or, when
native watching is unavailable or asked against, from polling. Each changed
path goes to `on_change`; the engine decides what it means.

Cookies make freshness exact (watchman's method): to know that every change
made before some moment has been *seen*, write a uniquely named file into
each watched root and wait until the watcher reports it. Events from one
watcher arrive in order, so once a root's cookie is seen, so is everything
written there before it.

A cookie is removed once seen; one left by a daemon that was killed first
(its process gone) is removed when the next watcher starts, so crashes leave
nothing in the user's directories.

Health: the watcher is ready only after a cookie round trip proves events
flow. If native watching fails (the inotify watch limit, EMFILE) it falls
back to polling and says so; a periodic cookie probe restarts a watcher that
silently stopped delivering events.

Roots deleted, moved or replaced (watchman's "root removed"): an inotify
watch follows its directory's inode, not its path, so once a root is
deleted it reports nothing more, and once it is moved away it reports the
moved copy's changes under the old path. Nothing says so: the probe's cookie
written into a missing root just fails to write. So each run remembers the
identity (device, inode) of every root and a guard compares it with the
disk every `ROOT_CHECK_S`, and at once when an event names a root. A change
ends the run (not a failure: no back-off, no polling fallback) and the next
run watches the roots as they are now. A *required* root (the workspace)
that is missing makes the watcher unhealthy, with an error naming it, until
it is back. After every restart `on_restart` is called once the new watch
is ready, since what changed in between was never reported: the engine
re-scans everything.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import re
import stat
import time
from collections.abc import Callable, Sequence
from contextlib import aclosing
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

import trio
import watchfiles

logger = logging.getLogger("openmemoryd.watch")

COOKIE_PREFIX: Final = ".omem-cookie-"
_COOKIE_NAME: Final = re.compile(re.escape(COOKIE_PREFIX) + r"([0-9]{1,10})-[0-9]+")
READY_TIMEOUT_S: Final = 10.0
# A new readiness cookie this often until one comes back (`_ready_within`).
READY_RETRY_S: Final = 0.5
PROBE_TIMEOUT_S: Final = 10.0
FAILURES_BEFORE_POLLING: Final = 3
# How often the roots' identities are compared with the disk (a stat each).
ROOT_CHECK_S = 1.0
# How often a missing required root is looked for: a restored workspace is
# watched and re-indexed within this (a stat or two each time, only while
# it is missing).
MISSING_CHECK_S = 0.25
# How often watchfiles' Rust loop hands control back to check its stop event;
# `stop` sets that event so shutdown never waits this long.
RUST_TIMEOUT_MS = 500
# watchfiles reports a batch once no new event came for this long: the floor
# of a cookie round trip, hence of every fresh search (50 ms cost ~100 ms).
STEP_MS: Final = 20

WatchMode = Literal["native", "polling"]


@dataclass(frozen=True, slots=True)
class WatchRoot:
    """A directory to watch, with or without its subdirectories.

    A root with a *required* name (``"workspace"``) must exist: while it is
    missing the watcher is not healthy and its error is ``"<name> missing:
    <path>"``. Other roots are watched while they exist.
    """

    path: Path
    recursive: bool
    required: str = ""


# A root's identity: (st_dev, st_ino) of the directory at its path, or None.
RootId = tuple[int, int] | None


@dataclass(frozen=True, slots=True)
class WatcherStatistics:
    mode: str  # "native", "polling" or "off"
    healthy: bool
    last_event_at: float | None
    restarts: int
    error: str | None


_EDITOR_TEMP: Final = re.compile(r"(\.sw[a-p]|\.swx|~|\.tmp)$|^\.#|^4913$")


def _interesting(_change: watchfiles.Change, path: str) -> bool:
    """Everything but editors' scratch files (vim swap files and its 4913
    probe, backup~ files, emacs lock files).

    Only the basename is judged: the engine classifies each path relative to
    its root (the workspace itself may live under a hidden directory).
    Directories must pass, since a moved or deleted directory takes its
    notes with it.
    """
    name = os.path.basename(path)
    return name.startswith(COOKIE_PREFIX) or not _EDITOR_TEMP.search(name)


class _RootsChanged(Exception):
    """A root was deleted, created, moved or replaced: watch anew."""


class Watcher:
    """Watches roots and reports changed paths to *on_change*; calls
    *on_restart* when a restarted watch is ready (changes made meanwhile
    were not reported)."""

    def __init__(
        self,
        roots: Sequence[WatchRoot],
        on_change: Callable[[Path], None],
        *,
        mode: WatchMode = "native",
        probe_interval_s: float = 60.0,
        poll_delay_ms: int = 300,
        on_restart: Callable[[], None] | None = None,
    ) -> None:
        self._configured = list(roots)
        self._roots = [r for r in roots if r.path.is_dir()]
        self._ids: dict[Path, RootId] = {}  # of every configured root, when this run began
        self._nudge = trio.Event()  # an event named a root: check them now
        self._missing_said: set[Path] = set()
        self._on_change = on_change
        self._on_restart = on_restart
        self._polling = mode == "polling"
        self._probe_interval = probe_interval_s
        self._poll_delay_ms = poll_delay_ms
        self._cookies: dict[str, trio.Event] = {}
        self._cookie_ids = itertools.count()
        self._stop = trio.Event()
        self._watch_stop = trio.Event()
        self._healthy = False
        self._last_event: float | None = None
        self._restarts = 0
        self._error: str | None = None

    @property
    def roots(self) -> list[WatchRoot]:
        """The roots watched now (those that existed when the run began)."""
        return list(self._roots)

    def statistics(self) -> WatcherStatistics:
        return WatcherStatistics(
            mode="polling" if self._polling else "native",
            healthy=self._healthy,
            last_event_at=self._last_event,
            restarts=self._restarts,
            error=self._error,
        )

    def stop(self) -> None:
        """Ask the watch loops to end (before cancelling them, so watchfiles'
        Rust side stops at once instead of at its next timeout)."""
        self._stop.set()
        self._watch_stop.set()

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Watch until cancelled; ready once a cookie has made the round trip
        (or the first run failed, or a required root is missing: the
        daemon's start never waits on the watcher)."""
        started = False
        failures = 0
        missed = False  # changes went unreported: re-scan once watching again
        while not self._stop.is_set():
            ids = await trio.to_thread.run_sync(self._identities)
            if self._required_missing(ids):
                if not started:
                    task_status.started()
                    started = True
                missed = True
                await self._until_changed(ids)
                continue
            self._come_back(ids)
            self._ids = ids
            self._roots = [r for r in self._configured if ids[r.path] is not None]
            await trio.to_thread.run_sync(remove_stale_cookies, self._roots)
            # A fresh stop event per run: awatch sets the one it was given when
            # it is cancelled, which must end this run only, not the watcher.
            self._watch_stop = trio.Event()
            try:
                async with trio.open_nursery() as nursery:
                    try:
                        for recursive in (True, False):
                            paths = [r.path for r in self._roots if r.recursive == recursive]
                            if paths:
                                nursery.start_soon(self._watch, paths, recursive, self._watch_stop)
                        nursery.start_soon(self._guard_roots)
                        if not await self._ready_within(READY_TIMEOUT_S):
                            raise OSError("the watcher delivered no events")
                        self._healthy = True
                        self._error = None
                        failures = 0
                        if not started:
                            task_status.started()
                            started = True
                        if missed and self._on_restart is not None:
                            self._on_restart()
                        missed = False
                        await self._probe_forever()
                    finally:
                        # before the nursery waits for the watch threads: a
                        # restart need not wait out their Rust timeout
                        self._watch_stop.set()
            except Exception as exc:
                if not started:  # never hold up the daemon's start on the watcher
                    task_status.started()
                    started = True
                self._healthy = False
                self._restarts += 1
                missed = True
                # A watch that failed because its root vanished under it
                # (watchfiles raises for a missing path) is a root change too.
                if (
                    _has(exc, _RootsChanged)
                    or await trio.to_thread.run_sync(self._identities) != self._ids
                ):
                    self._error = "watching the directories anew"
                    continue
                failures += 1
                cause = _first_leaf(exc)  # the nursery wraps what went wrong in a group
                self._error = f"{type(cause).__name__}: {cause}"
                if not self._polling and failures >= (
                    1 if _is_limit(exc) else FAILURES_BEFORE_POLLING
                ):
                    logger.error("native file watching failed (%s); falling back to polling", cause)
                    self._polling = True
                    failures = 0
                else:
                    logger.warning("file watcher failed (%s); restarting", cause, exc_info=True)
                await trio.sleep(min(2**failures, 30))

    # ------------------------------------------------------------ roots

    def _identities(self) -> dict[Path, RootId]:
        """Every configured root's identity on disk now (a stat each)."""
        return {root.path: _identity(root.path) for root in self._configured}

    def _required_missing(self, ids: dict[Path, RootId]) -> bool:
        """Whether a required root is missing; if so the watcher is not
        healthy, its error names the root, and the log says so once."""
        missing = [r for r in self._configured if r.required and ids[r.path] is None]
        if not missing:
            return False
        root = missing[0]
        self._healthy = False
        self._error = f"{root.required} missing: {root.path}"
        if root.path not in self._missing_said:
            self._missing_said.add(root.path)
            logger.warning(
                "the %s %s is missing (deleted or moved?); nothing in it is watched "
                "until it is back",
                root.required,
                root.path,
            )
        return True

    def _come_back(self, ids: dict[Path, RootId]) -> None:
        """Log the required roots that were missing and are back."""
        for root in self._configured:
            if root.path in self._missing_said and ids[root.path] is not None:
                self._missing_said.discard(root.path)
                logger.info(
                    "the %s %s is back: watching it again and re-indexing it",
                    root.required,
                    root.path,
                )

    async def _until_changed(self, ids: dict[Path, RootId]) -> None:
        """Return once some root's identity differs from *ids*: looked at
        every `MISSING_CHECK_S` (a missing directory cannot be watched, and
        its parent may be anything, /home included), and at once when a
        fresh read asks (`wait_seen`)."""
        while True:
            with trio.move_on_after(MISSING_CHECK_S):
                await self._nudge.wait()
            self._nudge = trio.Event()
            if await trio.to_thread.run_sync(self._identities) != ids:
                return

    async def _guard_roots(self) -> None:
        """Raise `_RootsChanged` once a root differs from when the run began
        (checked every `ROOT_CHECK_S`, and at once when an event names one)."""
        while True:
            with trio.move_on_after(ROOT_CHECK_S):
                await self._nudge.wait()
            self._nudge = trio.Event()
            now = await trio.to_thread.run_sync(self._identities)
            if now != self._ids:
                changed = sorted(str(path) for path, was in self._ids.items() if now[path] != was)
                logger.info("watched directories removed, created or replaced: %s", changed)
                raise _RootsChanged(", ".join(changed))

    async def _probe_forever(self) -> None:
        """Return (to be restarted) when a probe cookie is not seen in time."""
        while True:
            await trio.sleep(self._probe_interval)
            if not await self.seen_cookies_within(PROBE_TIMEOUT_S):
                raise OSError("the watcher stopped delivering events")

    async def _watch(self, paths: list[Path], recursive: bool, stop: trio.Event) -> None:
        events = watchfiles.awatch(
            *paths,
            watch_filter=_interesting,
            debounce=1600,
            step=STEP_MS,
            stop_event=stop,
            rust_timeout=RUST_TIMEOUT_MS,
            recursive=recursive,
            force_polling=self._polling,
            poll_delay_ms=self._poll_delay_ms,
            ignore_permission_denied=True,
        )
        roots = {root.path for root in self._configured}
        async with aclosing(events) as changes:
            async for batch in changes:
                self._last_event = time.time()
                for _change, raw in batch:
                    path = Path(raw)
                    if path in roots:  # deleted, moved or replaced, perhaps
                        self._nudge.set()
                    if path.name.startswith(COOKIE_PREFIX):
                        seen = self._cookies.get(str(path))
                        if seen is not None:
                            seen.set()
                        continue
                    self._on_change(path)

    async def wait_cookies(self) -> None:
        """Write a cookie in every root and wait until the watcher has reported
        them all (callers bound the wait with a cancel scope)."""
        pending: dict[str, trio.Event] = {}
        try:
            for root in self._roots:
                cookie = root.path / f"{COOKIE_PREFIX}{os.getpid()}-{next(self._cookie_ids)}"
                event = pending[str(cookie)] = self._cookies[str(cookie)] = trio.Event()
                try:
                    await trio.to_thread.run_sync(cookie.write_bytes, b"")
                except OSError as exc:
                    logger.warning("cannot write a watch cookie in %s: %s", root.path, exc)
                    event.set()  # an unwritable root cannot be checked; do not wait on it
            for event in pending.values():
                await event.wait()
        finally:
            for name in pending:
                self._cookies.pop(name, None)
                with contextlib.suppress(OSError):
                    os.unlink(name)

    async def _ready_within(self, seconds: float) -> bool:
        """True once a cookie round trip completes within *seconds*, the
        watch threads just started.

        A cookie written before a watch thread has set up its watches is
        never reported, and on a loaded machine setting them up can take
        longer than writing the first cookie (which then cost the whole
        timeout and a restart). So a fresh cookie is written every
        `READY_RETRY_S` until one comes back, the earlier ones still
        awaited: a slow round trip counts as well as a missed one retried.
        """
        done = trio.Event()

        async def attempt() -> None:
            await self.wait_cookies()
            done.set()

        with trio.move_on_after(seconds):
            async with trio.open_nursery() as nursery:
                while not done.is_set():
                    nursery.start_soon(attempt)
                    with trio.move_on_after(READY_RETRY_S):
                        await done.wait()
                nursery.cancel_scope.cancel()  # the other attempts remove their cookies
            return True
        return False

    async def wait_seen(self) -> bool:
        """Wait until every change made before the call has been reported
        (`wait_cookies`), and return True; return False at once when the
        watcher cannot tell: it is not healthy, or a root was removed or
        replaced since it attached (its cookie would never be reported)."""
        if not self._healthy or await trio.to_thread.run_sync(self._identities) != self._ids:
            self._nudge.set()  # look at the roots now, not at the next check
            return False
        await self.wait_cookies()
        return True

    async def seen_cookies_within(self, seconds: float) -> bool:
        """True if a cookie round trip completes within *seconds*."""
        with trio.move_on_after(seconds):
            await self.wait_cookies()
            return True
        return False


def remove_stale_cookies(roots: Sequence[WatchRoot]) -> None:
    """Delete the cookies of watchers whose process is gone (killed before
    they could remove them); a live process's cookies are left alone."""
    for root in roots:
        try:
            names = [entry.name for entry in os.scandir(root.path)]
        except OSError:
            continue
        for name in names:
            match = _COOKIE_NAME.fullmatch(name)
            if match is not None and not _process_alive(int(match[1])):
                with contextlib.suppress(OSError):
                    os.unlink(root.path / name)
                logger.info("removed %s, left by a daemon that did not stop", root.path / name)


def _process_alive(pid: int) -> bool:
    if pid == os.getpid() or not 0 < pid < 2**31:  # ours, or no pid at all: leave it
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: alive, someone else's
        return True
    return True


def _identity(path: Path) -> RootId:
    """(device, inode) of the directory at *path* (symlinks followed: a
    workspace may be one), or None if there is none."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino) if stat.S_ISDIR(st.st_mode) else None


def _has(exc: BaseException, kind: type[Exception]) -> bool:
    if isinstance(exc, BaseExceptionGroup):
        return any(_has(e, kind) for e in exc.exceptions)
    return isinstance(exc, kind)


def _first_leaf(exc: Exception) -> Exception:
    while isinstance(exc, ExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _is_limit(exc: Exception) -> bool:
    """Errors meaning native watching cannot work here at all."""
    if isinstance(exc, ExceptionGroup):
        return any(_is_limit(e) for e in exc.exceptions)
    text = str(exc).lower()
    return "limit" in text or "too many open files" in text or "no space left" in text
