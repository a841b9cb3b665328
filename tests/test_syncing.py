"""The syncer's timers: the periodic full reconcile, the quick check a
search may trigger, and the flush decision switched off."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path

import msgspec
import trio
import trio.testing

from conftest import Env
from omem_protocol import FlushCheckParams, FlushCheckResult
from openmemoryd.config import Config, SyncSettings
from openmemoryd.engine import Engine
from openmemoryd.engine.session_ops import flush_check
from openmemoryd.engine.syncing import Syncer


class Host:
    """The engine as the syncer sees it, recording what it is asked."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.sessions = None
        self.calls: list[str] = []

    def key_for_path(self, path: Path) -> str | None:
        return None

    def already_indexed(self, key: str, path: Path) -> bool:
        return False

    async def sync(
        self, *, full: bool = False, reason: str = "explicit", progress: object = None
    ) -> None:
        self.calls.append(f"reconcile: {reason}")

    async def changed_keys(self) -> frozenset[str]:
        self.calls.append("quick check")
        return frozenset()

    async def apply_keys(self, keys: Iterable[str], *, reason: str) -> dict[str, float]:
        return {}


def host(env: Env, **sync: object) -> Host:
    return Host(env.config(sync=SyncSettings(watch="off", **sync)))  # type: ignore[arg-type]


async def test_a_full_reconcile_runs_every_interval(
    env: Env, nursery: trio.Nursery, autojump_clock: trio.testing.MockClock
) -> None:
    engine = host(env, interval_minutes=5)
    await nursery.start(Syncer(engine).serve)  # type: ignore[arg-type]
    await trio.sleep(1)
    assert engine.calls == ["reconcile: startup"]
    await trio.sleep(5 * 60 - 2)
    assert engine.calls == ["reconcile: startup"]
    await trio.sleep(2)
    assert engine.calls == ["reconcile: startup", "reconcile: interval"]
    await trio.sleep(10 * 60)
    assert engine.calls.count("reconcile: interval") == 3


async def test_no_interval_no_periodic_reconcile(
    env: Env, nursery: trio.Nursery, autojump_clock: trio.testing.MockClock
) -> None:
    engine = host(env, interval_minutes=0)
    await nursery.start(Syncer(engine).serve)  # type: ignore[arg-type]
    await trio.sleep(24 * 3600)
    assert engine.calls == ["reconcile: startup"]


async def test_searches_trigger_at_most_one_quick_check_per_interval(
    env: Env, nursery: trio.Nursery, autojump_clock: trio.testing.MockClock
) -> None:
    engine = host(env, interval_minutes=0, search_check_s=30.0)
    syncer = Syncer(engine)  # type: ignore[arg-type]
    await nursery.start(syncer.serve)
    await trio.sleep(1)
    for _ in range(5):
        syncer.search_happened()
        await trio.sleep(1)
    assert engine.calls.count("quick check") == 1
    await trio.sleep(30)
    syncer.search_happened()
    await trio.sleep(1)
    assert engine.calls.count("quick check") == 2


async def test_flush_check_switched_off_never_flushes(engine: Engine) -> None:
    def check(session: str) -> FlushCheckResult:
        params = FlushCheckParams(session=session, tokens=190_000, context_window=200_000)
        return flush_check(engine, params)

    assert check("s1").should_flush
    off_settings = msgspec.structs.replace(engine.config.flush, enabled=False)
    engine.config = replace(engine.config, flush=off_settings)
    off = check("s2")
    assert (off.should_flush, off.reason, off.prompt) == (False, "disabled", "")


class UnsureWatcher:
    """A watcher that cannot vouch for what it saw (its workspace was just
    deleted or replaced): `wait_seen` says so at once."""

    async def wait_seen(self) -> bool:
        return False


async def test_a_fresh_read_checks_the_disk_when_the_watcher_cannot_vouch(
    env: Env, nursery: trio.Nursery
) -> None:
    """A cookie written into a workspace that was replaced under the watch
    never came back: `search --fresh` waited its whole timeout and said
    stale, with the restored files unindexed."""
    engine = host(env, interval_minutes=0, fresh_timeout_s=5.0)
    syncer = Syncer(engine)  # type: ignore[arg-type]
    await nursery.start(syncer.serve)
    # the startup reconcile reads the disk too: were it still queued, the
    # fresh read would join it and no quick check of its own would show
    await syncer.queue.wait_applied()
    syncer.watcher = UnsureWatcher()  # type: ignore[assignment]
    with trio.fail_after(1):
        assert await syncer.wait_fresh()
    assert engine.calls == ["reconcile: startup", "quick check"]


async def test_a_restarted_watch_asks_for_a_full_reconcile(env: Env, nursery: trio.Nursery) -> None:
    """Whatever changed while no watch was on the directories (a workspace
    deleted and restored) was never reported: everything is compared."""
    engine = host(env, interval_minutes=0)
    syncer = Syncer(engine)  # type: ignore[arg-type]
    await nursery.start(syncer.serve)
    await syncer.queue.wait_applied()
    syncer._watch_restarted()
    await syncer.queue.wait_applied()
    assert engine.calls == ["reconcile: startup", "reconcile: watch restarted"]
