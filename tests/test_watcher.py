"""The file watcher against the real filesystem, under trio.

The watcher is the only thing that tells the daemon a note changed behind its
back, and it fails quietly: a dead inotify watch or a filtered-out path just
means search goes stale. So these tests use real directories and the real
watchfiles backends, and check what the engine would notice: which paths reach
`on_change`, that readiness means events really flow, and that a watcher that
cannot watch natively or stops delivering recovers by itself.

Waits poll for an outcome under `trio.fail_after` rather than sleeping a fixed
time, so a broken watcher fails a test instead of hanging it. To show that
something was *not* reported, a cookie round trip serves as a barrier: once
`wait_cookies` returns, every change made before it has been delivered.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
import trio
import watchfiles

from openmemoryd.engine import watcher as watcher_module
from openmemoryd.engine.watcher import COOKIE_PREFIX, Watcher, WatchRoot

WAIT_S = 10.0

real_awatch = watchfiles.awatch


class Changes:
    """What the watcher reported to `on_change`, in order."""

    def __init__(self) -> None:
        self.paths: list[Path] = []
        self._arrived = trio.Event()

    def __call__(self, path: Path) -> None:
        self.paths.append(path)
        self._arrived.set()
        self._arrived = trio.Event()

    async def wait_for(self, path: Path) -> None:
        with trio.fail_after(WAIT_S):
            while path not in self.paths:
                await self._arrived.wait()


StartWatcher = Callable[..., Awaitable[tuple[Watcher, Changes]]]


@pytest.fixture
async def start_watcher(nursery: trio.Nursery) -> AsyncIterator[StartWatcher]:
    """Start a watcher's `serve` in the test's nursery; stop it afterwards."""
    started: list[Watcher] = []

    async def start(roots: list[WatchRoot], **options: Any) -> tuple[Watcher, Changes]:
        changes = Changes()
        watcher = Watcher(roots, changes, **options)
        started.append(watcher)
        with trio.fail_after(WAIT_S * 2):
            await nursery.start(watcher.serve)
        return watcher, changes

    yield start
    for watcher in started:
        watcher.stop()  # so the nursery's cancellation does not wait for rust_timeout


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    root = tmp_path / "memory"
    (root / "sub").mkdir(parents=True)
    return root


async def barrier(watcher: Watcher) -> None:
    """Return once everything written before the call has been reported."""
    with trio.fail_after(WAIT_S):
        await watcher.wait_cookies()


async def wait_until(predicate: Callable[[], bool]) -> None:
    with trio.fail_after(WAIT_S):
        # statistics have no event to wait on, so poll them
        while not predicate():  # noqa: ASYNC110
            await trio.sleep(0.02)


def cookies_in(root: Path) -> list[Path]:
    return list(root.glob(f"{COOKIE_PREFIX}*"))


# ------------------------------------------------------------ health


async def test_serve_is_ready_only_after_a_cookie_round_trip(
    start_watcher: StartWatcher, notes: Path
) -> None:
    before = time.time()
    watcher, changes = await start_watcher([WatchRoot(notes, recursive=True)])
    stats = watcher.statistics()
    assert (stats.mode, stats.healthy, stats.restarts, stats.error) == ("native", True, 0, None)
    assert stats.last_event_at is not None
    assert stats.last_event_at >= before
    assert changes.paths == []  # the readiness cookie is not a change


async def test_cookies_are_never_reported_and_are_removed_afterwards(
    start_watcher: StartWatcher, notes: Path, tmp_path: Path
) -> None:
    flat = tmp_path / "flat"
    flat.mkdir()
    watcher, changes = await start_watcher(
        [WatchRoot(notes, recursive=True), WatchRoot(flat, recursive=False)]
    )
    for _ in range(3):
        await barrier(watcher)
    with trio.fail_after(WAIT_S):
        assert await watcher.seen_cookies_within(WAIT_S)
    assert cookies_in(notes) == []
    assert cookies_in(flat) == []
    (notes / "after.md").write_text("x\n")
    await changes.wait_for(notes / "after.md")
    await barrier(watcher)  # the cookies' deletions have been seen too
    assert not [p for p in changes.paths if p.name.startswith(COOKIE_PREFIX)]


async def test_a_root_that_does_not_exist_is_dropped(
    start_watcher: StartWatcher, notes: Path, tmp_path: Path
) -> None:
    missing = tmp_path / "missing"
    watcher, changes = await start_watcher(
        [WatchRoot(missing, recursive=True), WatchRoot(notes, recursive=True)]
    )
    assert watcher.roots == [WatchRoot(notes, recursive=True)]
    assert watcher.statistics().healthy
    (notes / "a.md").write_text("alpha\n")
    await changes.wait_for(notes / "a.md")
    assert not missing.exists()  # no cookie was written into a directory it created


# ------------------------------------------------------------ which paths are reported


async def test_creating_modifying_and_deleting_a_note_are_each_reported(
    start_watcher: StartWatcher, notes: Path
) -> None:
    watcher, changes = await start_watcher([WatchRoot(notes, recursive=True)])
    note = notes / "sub" / "a.md"
    for change in (
        lambda: note.write_text("alpha\n"),
        lambda: note.write_text("alpha, changed\n"),
        note.unlink,
    ):
        await barrier(watcher)  # so a late event of the previous step cannot count
        changes.paths.clear()
        change()
        await changes.wait_for(note)


async def test_a_non_recursive_root_reports_only_its_own_files(
    start_watcher: StartWatcher, notes: Path
) -> None:
    watcher, changes = await start_watcher([WatchRoot(notes, recursive=False)])
    (notes / "sub" / "deep.md").write_text("deep\n")
    (notes / "top.md").write_text("top\n")
    await changes.wait_for(notes / "top.md")
    await barrier(watcher)
    assert notes / "sub" / "deep.md" not in changes.paths


SCRATCH = [".a.md.swp", ".a.md.swx", "4913", "a.md~", ".#a.md", "a.md.tmp"]


async def test_editor_scratch_files_are_not_reported(
    start_watcher: StartWatcher, notes: Path
) -> None:
    watcher, changes = await start_watcher([WatchRoot(notes, recursive=True)])
    for name in SCRATCH:
        (notes / name).write_text("scratch\n")
    for name in SCRATCH:
        (notes / name).unlink()
    await barrier(watcher)
    assert changes.paths == []


async def test_a_save_by_renaming_a_temporary_file_reports_the_note(
    start_watcher: StartWatcher, notes: Path
) -> None:
    note = notes / "x.md"
    note.write_text("old\n")
    watcher, changes = await start_watcher([WatchRoot(notes, recursive=True)])
    probe = notes / "4913"  # vim checks it may create files in the directory
    probe.write_text("")
    probe.unlink()
    temp = notes / "x.md~"
    temp.write_text("new\n")
    os.replace(temp, note)
    await changes.wait_for(note)
    await barrier(watcher)
    assert set(changes.paths) == {note}
    assert note.read_text() == "new\n"


# ------------------------------------------------------------ modes and recovery


async def test_polling_mode_delivers_events(
    start_watcher: StartWatcher, notes: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[dict[str, Any]] = []

    def awatch(*paths: Path, **options: Any) -> AsyncIterator[set[watchfiles.main.FileChange]]:
        calls.append(options)
        return real_awatch(*paths, **options)

    monkeypatch.setattr("openmemoryd.engine.watcher.watchfiles.awatch", awatch)
    watcher, changes = await start_watcher(
        [WatchRoot(notes, recursive=True)], mode="polling", poll_delay_ms=50
    )
    stats = watcher.statistics()
    assert (stats.mode, stats.healthy) == ("polling", True)
    assert [(c["force_polling"], c["poll_delay_ms"]) for c in calls] == [(True, 50)]
    (notes / "sub" / "a.md").write_text("alpha\n")
    await changes.wait_for(notes / "sub" / "a.md")


@pytest.fixture
def awatch_calls(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """Native watching hits the OS watch limit; polling works."""
    calls: list[dict[str, Any]] = []

    async def awatch(
        *paths: Path, **options: Any
    ) -> AsyncIterator[set[watchfiles.main.FileChange]]:
        calls.append(options)
        if not options["force_polling"]:
            raise OSError("OS file watch limit reached")
        async for batch in real_awatch(*paths, **options):
            yield batch

    monkeypatch.setattr("openmemoryd.engine.watcher.watchfiles.awatch", awatch)
    return calls


async def test_the_watch_limit_makes_the_watcher_fall_back_to_polling(
    start_watcher: StartWatcher, notes: Path, tmp_path: Path, awatch_calls: list[dict[str, Any]]
) -> None:
    flat = tmp_path / "flat"
    flat.mkdir()
    watcher, changes = await start_watcher(
        [WatchRoot(notes, recursive=True), WatchRoot(flat, recursive=False)], poll_delay_ms=50
    )
    # serve reports ready at once on failure rather than holding up the daemon
    await wait_until(lambda: watcher.statistics().healthy)
    stats = watcher.statistics()
    assert (stats.mode, stats.healthy, stats.error) == ("polling", True, None)
    # the limit is not worth retrying natively: one failure is enough
    assert stats.restarts == 1
    polling = [c["force_polling"] for c in awatch_calls]
    assert False in polling
    assert polling == sorted(polling)  # no native retry after the switch
    (notes / "sub" / "a.md").write_text("alpha\n")
    (flat / "b.md").write_text("bravo\n")
    await changes.wait_for(notes / "sub" / "a.md")
    await changes.wait_for(flat / "b.md")


@pytest.mark.slow
async def test_a_watcher_that_stops_delivering_is_restarted(
    start_watcher: StartWatcher,
    notes: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setattr(watcher_module, "PROBE_TIMEOUT_S", 2.0)
    deaf = trio.Event()
    generations = 0

    async def awatch(
        *paths: Path, **options: Any
    ) -> AsyncIterator[set[watchfiles.main.FileChange]]:
        # the first watch goes deaf on request, like an inotify watch whose
        # queue overflowed; later ones (after a restart) work
        nonlocal generations
        generations += 1
        first = generations == 1
        async for batch in real_awatch(*paths, **options):
            if not (first and deaf.is_set()):
                yield batch

    monkeypatch.setattr("openmemoryd.engine.watcher.watchfiles.awatch", awatch)
    watcher, changes = await start_watcher([WatchRoot(notes, recursive=True)], probe_interval_s=1)
    assert watcher.statistics().healthy
    deaf.set()
    await wait_until(lambda: watcher.statistics().restarts >= 1)
    # why, as logged: under load the new watch can be healthy again (its
    # error cleared) before a poll of the statistics sees the old one
    said = [r.getMessage() for r in caplog.records]
    assert any("stopped delivering events" in message for message in said), said
    await wait_until(lambda: watcher.statistics().healthy)
    stats = watcher.statistics()
    assert (stats.mode, stats.restarts, stats.error, generations) == ("native", 1, None, 2)
    (notes / "found.md").write_text("found\n")
    await changes.wait_for(notes / "found.md")


async def test_stop_then_cancel_ends_serve_promptly(
    notes: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A long Rust timeout: without `stop` reaching Rust, shutdown would take
    # seconds, so the bound below needs no tight timing to tell the two apart.
    monkeypatch.setattr(watcher_module, "RUST_TIMEOUT_MS", 5000)
    flat = tmp_path / "flat"
    flat.mkdir()
    watcher = Watcher(
        [WatchRoot(notes, recursive=True), WatchRoot(flat, recursive=False)], lambda _: None
    )
    with trio.fail_after(WAIT_S):
        async with trio.open_nursery() as nursery:
            await nursery.start(watcher.serve)
            assert watcher.statistics().healthy
            # past the readiness cookie's own events: both watch threads are
            # now blocked in Rust, which trio cannot interrupt
            await trio.sleep(0.3)
            start = trio.current_time()
            watcher.stop()
            nursery.cancel_scope.cancel()
    # not the rest of watchfiles' rust_timeout
    assert trio.current_time() - start < 1.5


async def test_ready_even_when_the_watches_are_set_up_after_the_first_cookie(
    start_watcher: StartWatcher, notes: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a loaded machine the watch thread may set up its watches after the
    first readiness cookie was written; that cookie is never reported. The
    watcher must still be ready soon after, not after its whole timeout and
    a restart. Here the watch starts 1.5 s late."""
    real_watch = Watcher._watch

    async def late_watch(self: Watcher, *args: Any) -> None:
        await trio.sleep(1.5)
        await real_watch(self, *args)

    monkeypatch.setattr(Watcher, "_watch", late_watch)
    started = trio.current_time()
    watcher, _ = await start_watcher([WatchRoot(notes, recursive=True)])
    stats = watcher.statistics()
    assert (stats.healthy, stats.restarts, stats.error) == (True, 0, None)
    assert trio.current_time() - started < watcher_module.READY_TIMEOUT_S / 2
    await barrier(watcher)
    assert cookies_in(notes) == []


# ------------------------------------------------------------ roots deleted, moved, replaced


class Restarts:
    """How often the watcher said a restarted watch is ready."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self) -> None:
        self.count += 1


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "memory").mkdir(parents=True)
    return root


def workspace_roots(workspace: Path) -> list[WatchRoot]:
    return [
        WatchRoot(workspace, recursive=False, required="workspace"),
        WatchRoot(workspace / "memory", recursive=True),
    ]


async def test_a_deleted_workspace_is_reported_and_watched_again_once_back(
    start_watcher: StartWatcher, workspace: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """An inotify watch dies with its directory: deleted and restored, the
    workspace was never watched again, and nothing said so."""
    caplog.set_level(logging.INFO, logger="openmemoryd.watch")
    restarted = Restarts()
    watcher, changes = await start_watcher(workspace_roots(workspace), on_restart=restarted)
    backup = tmp_path / "backup"
    os.rename(workspace, backup)  # as `rm -rf` does, for the watcher: the path is empty
    await wait_until(lambda: not watcher.statistics().healthy)
    stats = watcher.statistics()
    assert stats.error == f"workspace missing: {workspace}"
    assert f"the workspace {workspace} is missing" in caplog.text
    with trio.fail_after(1):  # a fresh read cannot wait for cookies here: it is told so
        assert not await watcher.wait_seen()
    # nothing was created in its place (no cookie either)
    assert not await trio.Path(workspace).exists()
    assert restarted.count == 0

    (backup / "memory" / "old.md").write_text("written while away\n")
    os.rename(backup, workspace)
    await wait_until(lambda: watcher.statistics().healthy)
    assert watcher.statistics().error is None
    assert restarted.count == 1  # what changed meanwhile must be re-scanned
    assert f"the workspace {workspace} is back" in caplog.text
    with trio.fail_after(WAIT_S):
        assert await watcher.wait_seen()
    (workspace / "memory" / "new.md").write_text("written after\n")
    (workspace / "MEMORY.md").write_text("top\n")
    await changes.wait_for(workspace / "memory" / "new.md")
    await changes.wait_for(workspace / "MEMORY.md")


async def test_a_replaced_root_is_watched_anew(
    start_watcher: StartWatcher, workspace: Path, tmp_path: Path
) -> None:
    """Moved away and a new directory put in its place: the old watch
    followed the moved copy and reported its changes under the old path."""
    restarted = Restarts()
    watcher, changes = await start_watcher(workspace_roots(workspace), on_restart=restarted)
    aside, new = tmp_path / "aside", tmp_path / "new"
    (new / "memory").mkdir(parents=True)
    os.rename(workspace, aside)
    os.rename(new, workspace)
    await wait_until(lambda: restarted.count == 1)
    assert watcher.statistics().healthy
    (aside / "memory" / "moved.md").write_text("in the moved copy\n")
    (workspace / "memory" / "here.md").write_text("in the workspace\n")
    await changes.wait_for(workspace / "memory" / "here.md")
    await barrier(watcher)
    assert workspace / "memory" / "moved.md" not in changes.paths
    assert watcher.statistics().restarts == 1


async def test_a_root_created_later_is_watched(
    start_watcher: StartWatcher, workspace: Path
) -> None:
    """memory/ deleted and created again (a daily append does): watched again."""
    memory = workspace / "memory"
    memory.rmdir()
    restarted = Restarts()
    watcher, changes = await start_watcher(workspace_roots(workspace), on_restart=restarted)
    assert watcher.roots == [workspace_roots(workspace)[0]]
    memory.mkdir()
    await wait_until(lambda: restarted.count == 1 and watcher.statistics().healthy)
    assert len(watcher.roots) == 2
    (memory / "a.md").write_text("alpha\n")
    await changes.wait_for(memory / "a.md")


async def test_a_workspace_missing_from_the_start_does_not_hold_up_serve(
    start_watcher: StartWatcher, tmp_path: Path
) -> None:
    missing = tmp_path / "never"
    watcher, _ = await start_watcher(workspace_roots(missing))
    stats = watcher.statistics()
    assert (stats.healthy, stats.error) == (False, f"workspace missing: {missing}")
    with trio.fail_after(1):
        assert not await watcher.wait_seen()
    assert not await trio.Path(missing).exists()
