"""A small backlog waits for busy indexing before it is embedded synchronously.

With a batch-capable provider, the first chunks of a large first index are a
small backlog for a moment; embedding them synchronously at once would split
what should be one batch job. While indexing is busy such a backlog waits
(`SETTLE_S` at most) and goes up with the rest; a backlog that stays small
is still embedded, synchronously, once indexing settles or the wait ends.
In-process engine, openai provider at the fake Files + Batches service;
`Engine.indexing_busy` is held busy or idle by the test.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager

import pytest
import trio

from conftest import Env
from fake_batch_servers import FakeBatchServer
from openmemoryd.engine import Engine, open_engine, vectors, workspace_status
from openmemoryd.workspace import init_workspace
from test_vectors import poll, wait_vectors

MIN_CHUNKS = 20


class Busy:
    """What `Engine.indexing_busy` answers while the test runs."""

    def __init__(self) -> None:
        self.value = True

    def __call__(self, _engine: Engine) -> bool:
        return self.value


@pytest.fixture
def busy(monkeypatch: pytest.MonkeyPatch) -> Busy:
    state = Busy()
    monkeypatch.setattr(Engine, "indexing_busy", lambda engine: state(engine))
    return state


@asynccontextmanager
async def engine_at(env: Env, server: FakeBatchServer) -> AsyncIterator[Engine]:
    env.write_config(
        '[embedding]\nprovider = "openai"\n[embedding.openai]\n'
        f'base_url = "{server.url}/v1"\napi_key = "sk-test-Settle-Key-123"\n'
        f"[embedding.batch]\npoll_interval_ms = 50\nmin_chunks = {MIN_CHUNKS}\n"
    )
    config = env.config()
    init_workspace(config.workspace)
    async with open_engine(config) as engine:
        yield engine


def synced_notes(server: FakeBatchServer) -> list[str]:
    """Note texts embedded synchronously (the start-up warm-up query aside)."""
    return [text for text in server.sync_texts() if "Entry" in text]


async def write_notes(engine: Engine, first: int, count: int) -> None:
    for number in range(first, first + count):
        text = f"Entry {number}: topic{number} detail{number}."
        await engine.append(text, f"memory/n{number}.md")
    await engine.sync()


@pytest.fixture
def server() -> Iterator[FakeBatchServer]:
    with FakeBatchServer(polls_before_done=1) as running:
        yield running


async def test_a_small_backlog_waits_while_indexing_is_busy_and_joins_the_batch(
    env: Env, server: FakeBatchServer, busy: Busy
) -> None:
    async with engine_at(env, server) as engine:
        await write_notes(engine, 0, 5)
        await trio.sleep(1.0)  # the indexer looked, more than once
        assert synced_notes(server) == []  # nothing embedded synchronously yet
        await write_notes(engine, 5, 30)
        busy.value = False
        await wait_vectors(engine)
    assert server.batches_created == ["batch_1"]
    assert synced_notes(server) == []


async def test_a_backlog_that_stays_small_is_embedded_once_indexing_settles(
    env: Env, server: FakeBatchServer, busy: Busy
) -> None:
    async with engine_at(env, server) as engine:
        await write_notes(engine, 0, 3)
        busy.value = False
        await wait_vectors(engine)
    assert server.batches_created == []
    assert len(synced_notes(server)) == 3


async def test_busy_indexing_delays_a_small_backlog_only_so_long(
    env: Env, server: FakeBatchServer, busy: Busy, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(vectors, "SETTLE_S", 0.5)
    async with engine_at(env, server) as engine:
        start = trio.current_time()
        await write_notes(engine, 0, 3)

        async def embedded() -> bool:
            emb = (await workspace_status(engine)).embedding
            return bool(emb.total) and emb.embedded == emb.total

        await poll(embedded, seconds=10.0)  # indexing never stops being busy
        assert trio.current_time() - start >= 0.5
    assert server.batches_created == []
