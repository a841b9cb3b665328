"""The sync queue's timing and ordering, on trio's virtual clock."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import trio
import trio.testing

from openmemoryd.engine.sync_queue import RECONCILE, SyncQueue


class Recorder:
    def __init__(self) -> None:
        self.batches: list[tuple[float, frozenset[str], frozenset[str]]] = []
        self.fail_next = 0
        self.hold: trio.Event | None = None

    async def __call__(self, keys: frozenset[str], reasons: frozenset[str]) -> None:
        if self.hold is not None:
            await self.hold.wait()
        if self.fail_next:
            self.fail_next -= 1
            raise RuntimeError("disk on fire")
        self.batches.append((trio.current_time(), keys, reasons))


@pytest.fixture
async def queue(nursery: trio.Nursery) -> AsyncIterator[tuple[SyncQueue, Recorder]]:
    recorder = Recorder()
    q = SyncQueue(recorder, debounce_s=1.5)
    await nursery.start(q.serve)
    return q, recorder


async def test_a_burst_of_notices_coalesces_after_the_debounce(
    queue: tuple[SyncQueue, Recorder], autojump_clock: trio.testing.MockClock
) -> None:
    q, rec = queue
    start = trio.current_time()
    for _ in range(5):
        q.notice(["memory/a.md"], "watch")
        await trio.sleep(0.5)
    q.notice(["memory/b.md"], "watch")
    await trio.sleep(3)
    # five notices of a.md became one update, 1.5 s after the last (at 2.0 s);
    # b.md has its own debounce from its notice at 2.5 s
    assert [(when - start, keys) for when, keys, _ in rec.batches] == [
        (pytest.approx(3.5), {"memory/a.md"}),
        (pytest.approx(4.0), {"memory/b.md"}),
    ]


async def test_immediate_notices_apply_at_once(
    queue: tuple[SyncQueue, Recorder], autojump_clock: trio.testing.MockClock
) -> None:
    q, rec = queue
    start = trio.current_time()
    q.notice(["MEMORY.md"], "append", delay=0)
    await trio.sleep(0.01)
    assert rec.batches[0][0] == pytest.approx(start)


async def test_wait_applied_skips_the_debounce_and_waits_for_application(
    queue: tuple[SyncQueue, Recorder], autojump_clock: trio.testing.MockClock
) -> None:
    q, rec = queue
    q.notice(["memory/a.md"], "watch")
    start = trio.current_time()
    await q.wait_applied()
    assert trio.current_time() - start < 0.1
    assert rec.batches[0][1] == {"memory/a.md"}


async def test_wait_applied_waits_for_a_batch_already_running(
    queue: tuple[SyncQueue, Recorder], autojump_clock: trio.testing.MockClock
) -> None:
    q, rec = queue
    rec.hold = trio.Event()
    q.notice(["memory/a.md"], "watch", delay=0)
    await trio.sleep(0.1)  # the consumer has taken the batch and is blocked applying it
    assert q.statistics().running
    done = trio.Event()

    async def waiter() -> None:
        await q.wait_applied()
        done.set()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(waiter)
        await trio.sleep(5)
        assert not done.is_set()
        rec.hold.set()
        await done.wait()
    assert rec.batches


async def test_a_renotice_does_not_hide_the_older_unapplied_change(
    queue: tuple[SyncQueue, Recorder], autojump_clock: trio.testing.MockClock
) -> None:
    q, rec = queue
    q.notice(["memory/a.md"], "watch")
    q.notice(["memory/a.md"], "watch")
    await q.wait_applied()
    assert rec.batches  # applied, not just re-sequenced


async def test_notices_after_the_call_are_not_waited_for(
    queue: tuple[SyncQueue, Recorder], autojump_clock: trio.testing.MockClock
) -> None:
    q, rec = queue
    await q.wait_applied()  # nothing pending: returns at once
    q.notice(["memory/late.md"], "watch")
    assert rec.batches == []


async def test_a_failing_batch_is_retried_with_backoff_and_reported(
    queue: tuple[SyncQueue, Recorder], autojump_clock: trio.testing.MockClock
) -> None:
    q, rec = queue
    rec.fail_next = 2
    q.notice(["memory/a.md"], "watch", delay=0)
    await trio.sleep(0.01)
    assert "disk on fire" in (q.statistics().last_error or "")
    await trio.sleep(0.99)
    assert rec.batches == []  # first retry after 1 s failed too
    await trio.sleep(2.1)  # second retry after 2 more seconds succeeds
    assert rec.batches[0][1] == {"memory/a.md"}
    assert q.statistics().last_error is None


async def test_a_longer_delay_for_session_logs_and_reconcile_key(
    queue: tuple[SyncQueue, Recorder], autojump_clock: trio.testing.MockClock
) -> None:
    q, rec = queue
    q.notice(["sessions/main/a.jsonl"], "session-idle", delay=60)
    q.reconcile("interval")
    await trio.sleep(1)
    assert rec.batches[0][1] == {RECONCILE}
    await trio.sleep(30)
    q.notice(["sessions/main/a.jsonl"], "session-idle", delay=60)  # still being written
    await trio.sleep(59)
    assert len(rec.batches) == 1
    await trio.sleep(2)
    assert rec.batches[1][1] == {"sessions/main/a.jsonl"}


async def test_statistics_show_depth_and_last_reason(
    queue: tuple[SyncQueue, Recorder], autojump_clock: trio.testing.MockClock
) -> None:
    q, _rec = queue
    q.notice(["a", "b", "c"], "watch")
    assert q.statistics().depth == 3
    await trio.sleep(2)
    stats = q.statistics()
    assert stats.depth == 0
    assert stats.last_reason == "watch"
    assert stats.applied == 3


async def test_a_later_recheck_is_scheduled_not_pending(
    queue: tuple[SyncQueue, Recorder], autojump_clock: trio.testing.MockClock
) -> None:
    """A transcript waiting out its idle time is not a change on its way in:
    counting it as queue depth would mark every search stale for minutes."""
    q, _rec = queue
    q.notice(["sessions/main/a.jsonl"], "session-idle", delay=600)
    q.notice(["memory/a.md"], "watch")
    stats = q.statistics()
    assert (stats.depth, stats.scheduled) == (1, 1)
    await trio.sleep(2)
    assert (q.statistics().depth, q.statistics().scheduled) == (0, 1)
    await trio.sleep(597)  # within the debounce of coming due: on its way in
    assert (q.statistics().depth, q.statistics().scheduled) == (1, 0)
