"""The pieces of run-time fault handling, alone (the reliability suite drives
them through the real daemon): telling index faults apart, the bounded
repair of damage, retrying the sync queue's failed work once the cause is
gone, and ending the embedding backoff when the provider answers again."""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable
from pathlib import Path

import apsw
import pytest
import trio
import trio.testing

import fault_vfs
from conftest import Env
from fake_embedder import FakeEmbedder
from omem_protocol import SyncResult
from openmemoryd.embed import EmbeddingError
from openmemoryd.embed.registry import Choice
from openmemoryd.engine import Engine, ProgressFn, open_engine, workspace_status
from openmemoryd.engine.recovery import (
    MAX_RECOVERIES,
    FaultSeen,
    IndexDamaged,
    IndexFull,
    IndexHealth,
    guarded,
    index_fault,
)
from openmemoryd.engine.sync_queue import SyncQueue
from openmemoryd.search import SearchQuery
from openmemoryd.workspace import init_workspace

# ---------------------------------------------------------------- index_fault


def test_a_full_disk_is_found_behind_the_failed_rollback(tmp_path: Path) -> None:
    """SQLite rolls a transaction that hit SQLITE_FULL back itself, so
    ``with conn:`` then fails to roll back and raises "no transaction is
    active"; the full disk is only the context of that error."""
    conn = apsw.Connection(str(tmp_path / "x.sqlite"), vfs=fault_vfs.register(tmp_path))
    conn.pragma("journal_mode", "wal")
    conn.execute("CREATE TABLE t(x)")
    (tmp_path / "enospc").touch()
    with pytest.raises(apsw.Error) as caught, conn:
        conn.executemany("INSERT INTO t VALUES (?)", [("y" * 1000,)] * 3000)
    assert index_fault(caught.value) == "full"
    (tmp_path / "enospc").unlink()
    with conn:
        conn.execute("INSERT INTO t VALUES ('room again')")
    assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    conn.close()


def test_damage_and_other_errors_are_told_apart() -> None:
    assert index_fault(apsw.CorruptError("malformed")) == "damaged"
    assert index_fault(apsw.NotADBError("not a database")) == "damaged"
    assert index_fault(apsw.ConstraintError("UNIQUE")) is None
    assert index_fault(ValueError("nothing to do with the file")) is None


def test_guarded_tags_a_fault_with_the_generation() -> None:
    def broken(conn: object) -> None:
        raise apsw.CorruptError("malformed")

    with pytest.raises(FaultSeen) as caught:
        guarded(7, broken, object())
    assert (caught.value.kind, caught.value.generation) == ("damaged", 7)
    with pytest.raises(KeyError):  # other errors pass through untouched
        guarded(7, lambda conn: {}["x"], object())


# ---------------------------------------------------------------- IndexHealth


async def test_damage_is_repaired_a_bounded_number_of_times(nursery: trio.Nursery) -> None:
    rebuilds = 0
    retried = 0

    async def rebuild() -> None:
        nonlocal rebuilds
        rebuilds += 1
        health.swapped()

    def retry() -> None:
        nonlocal retried
        retried += 1

    health = IndexHealth(rebuild, retry)
    await nursery.start(health.serve)
    for round_ in range(MAX_RECOVERIES):
        error = health.fault(FaultSeen("damaged", health.generation, apsw.CorruptError("bad")))
        assert isinstance(error, IndexDamaged)
        assert "being rebuilt" in str(error)
        assert await health.wait_repaired()
        assert rebuilds == round_ + 1
        assert health.issues() == []
    # a late report about an index already replaced condemns nothing
    health.fault(FaultSeen("damaged", health.generation - 1, apsw.CorruptError("old")))
    assert health.damage is None
    error = health.fault(FaultSeen("damaged", health.generation, apsw.CorruptError("again")))
    assert "restart openmemoryd" in str(error)
    assert not await health.wait_repaired()
    await trio.testing.wait_all_tasks_blocked()
    assert rebuilds == MAX_RECOVERIES
    assert retried == MAX_RECOVERIES
    (issue,) = health.issues()
    assert "not rebuilt again" in issue


async def test_a_full_disk_is_reported_until_a_write_succeeds() -> None:
    retried = []

    async def rebuild() -> None:
        raise AssertionError("a full disk is no reason to rebuild")

    health = IndexHealth(rebuild, lambda: retried.append(True))
    health.write_succeeded()
    assert retried == []  # nothing was wrong
    error = health.fault(FaultSeen("full", 0, apsw.FullError("database or disk is full")))
    assert isinstance(error, IndexFull)
    (issue,) = health.issues()
    assert "disk is full" in issue
    health.write_succeeded()
    assert health.issues() == []
    assert retried == [True]


# ---------------------------------------------------------------- the sync queue


async def test_failed_work_is_retried_at_once_when_asked(
    nursery: trio.Nursery, autojump_clock: trio.testing.MockClock
) -> None:
    applied: list[tuple[float, frozenset[str]]] = []
    failures = 1

    async def apply(keys: frozenset[str], reasons: frozenset[str]) -> None:
        nonlocal failures
        if failures:
            failures -= 1
            raise RuntimeError("disk full")
        applied.append((trio.current_time(), keys))

    queue = SyncQueue(apply, debounce_s=1.5)
    await nursery.start(queue.serve)
    queue.notice(["memory/a.md"], "append", delay=0)
    await trio.testing.wait_all_tasks_blocked()
    assert queue.statistics().last_error is not None
    queue.notice(["memory/b.md"], "watch", delay=10)  # debounced: not a retry
    start = trio.current_time()
    queue.retry_failed_now()
    await trio.testing.wait_all_tasks_blocked()
    assert applied == [(start, frozenset({"memory/a.md"}))]
    assert queue.statistics().last_error is None


# ---------------------------------------------------------------- the embedding backoff


async def poll(condition: Callable[[], Awaitable[bool]], seconds: float) -> None:
    with trio.fail_after(seconds):
        for _ in itertools.count():
            if await condition():
                return
            await trio.sleep(0.01)


async def test_a_query_the_provider_answers_ends_the_embedding_backoff(env: Env) -> None:
    embedder = FakeEmbedder()
    config = env.config()
    init_workspace(config.workspace)
    async with open_engine(config, choice=Choice(embedder, "test")) as engine:

        async def idle() -> bool:
            embedding = (await workspace_status(engine)).embedding
            return embedding.state == "idle" and embedding.embedded == embedding.total > 0

        await engine.append("osprey survey notes", None)
        await poll(idle, 10)
        embedder.fail_documents = EmbeddingError("503 overloaded", retryable=True)
        await engine.append("kestrel migration notes", None)
        seen: set[float] = set()

        async def failed_twice() -> bool:  # then the next retry is 2 s away
            at = (await workspace_status(engine)).embedding.last_error_at
            if at is not None:
                seen.add(at)
            return len(seen) >= 2

        await poll(failed_twice, 10)
        embedder.fail_documents = None
        result = await engine.search(SearchQuery("kestrel"))  # the provider answers
        assert result.results
        await poll(idle, 1.0)


# ---------------------------------------------------------------- coalesced syncs


async def test_concurrent_syncs_share_one_pass_after_the_running_one(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    passes: list[tuple[bool, bool]] = []
    gate = trio.Event()
    scanned = trio.Event()
    real_pass = engine.files._pass

    async def counted(full: bool, force_sessions: bool, progress: ProgressFn | None) -> SyncResult:
        passes.append((full, force_sessions))
        result = await real_pass(full, force_sessions, progress)
        scanned.set()
        await gate.wait()  # scanned, not finished
        return result

    monkeypatch.setattr(engine.files, "_pass", counted)
    results: dict[int, SyncResult] = {}
    reports: dict[int, list[int]] = {}

    async def request(number: int, full: bool) -> None:
        async def progress(done: int, total: int, phase: str) -> None:
            reports.setdefault(number, []).append(done)

        results[number] = await engine.sync(full=full, progress=progress)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(request, 0, False)
        await scanned.wait()  # the first pass is running and has scanned
        (engine.config.workspace / "memory" / "late.md").write_text("written meanwhile\n")
        for number in range(1, 6):
            nursery.start_soon(request, number, number == 3)
        await trio.testing.wait_all_tasks_blocked()
        assert passes == [(False, True)]  # the five wait for the next pass, together
        gate.set()
    assert passes == [(False, True), (True, True)]  # one of the five asked for full
    assert len(results) == 6
    assert results[0].added == 0
    assert all(results[n] is results[1] for n in range(1, 6))  # one shared result
    assert results[1].updated + results[1].added >= 1  # it saw the file written meanwhile
    assert sorted(reports) == list(range(6))  # every request heard the progress


async def test_a_cancelled_request_hands_its_pass_to_one_still_waiting(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    passes = 0
    real_pass = engine.files._pass

    async def counted(full: bool, force_sessions: bool, progress: ProgressFn | None) -> SyncResult:
        nonlocal passes
        passes += 1
        return await real_pass(full, force_sessions, progress)

    monkeypatch.setattr(engine.files, "_pass", counted)
    results: list[SyncResult] = []
    first = trio.CancelScope()
    await engine.files._lock.acquire()  # a pass is running: requests queue behind it
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_sync_in, first, engine)
        await trio.testing.wait_all_tasks_blocked()
        nursery.start_soon(_collect, results, engine)
        await trio.testing.wait_all_tasks_blocked()
        first.cancel()  # the request that claimed the pass goes away
        await trio.testing.wait_all_tasks_blocked()
        engine.files._lock.release()
    assert passes == 1
    assert len(results) == 1


async def _sync_in(scope: trio.CancelScope, engine: Engine) -> None:
    with scope:
        await engine.sync()


async def _collect(results: list[SyncResult], engine: Engine) -> None:
    results.append(await engine.sync())
