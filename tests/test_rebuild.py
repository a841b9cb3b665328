"""Changing the chunking rebuilds the index beside the live one, then swaps."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import trio

from conftest import Env
from fake_embedder import FakeEmbedder
from openmemoryd.config import IndexSettings
from openmemoryd.embed import EmbeddingError
from openmemoryd.embed.registry import Choice
from openmemoryd.engine import Engine, open_engine, workspace_status
from openmemoryd.engine.rebuild import CHUNKING_KEY, chunking_signature
from openmemoryd.search import SearchQuery
from openmemoryd.store import chunk_count, get_meta
from openmemoryd.workspace import init_workspace

BIG = IndexSettings(chunk_tokens=400, chunk_overlap=80)
SMALL = IndexSettings(chunk_tokens=48, chunk_overlap=8)


@asynccontextmanager
async def engine_with(
    env: Env, embedder: FakeEmbedder, index: IndexSettings
) -> AsyncIterator[Engine]:
    config = env.config(index=index)
    init_workspace(config.workspace)
    async with open_engine(config, choice=Choice(embedder, "test")) as engine:
        yield engine


async def poll(condition: Callable[[], Awaitable[bool]], seconds: float = 20.0) -> None:
    with trio.fail_after(seconds):
        for _ in itertools.count():
            if await condition():
                return
            await trio.sleep(0.02)


def write_notes(env: Env) -> None:
    for i in range(6):
        lines = [f"- fact {i}.{j}: the heron project milestone {j} is on track" for j in range(12)]
        (env.workspace / "memory" / f"topic{i}.md").write_text(
            f"# Topic {i}\n\n" + "\n".join(lines) + "\n"
        )


async def vectors_complete(engine: Engine) -> bool:
    emb = (await workspace_status(engine)).embedding
    return bool(emb.total) and emb.embedded == emb.total and emb.state == "idle"


async def index_with_big_chunks(env: Env) -> int:
    """Index the notes with the first chunking; return the chunk count."""
    init_workspace(env.workspace)
    write_notes(env)
    async with engine_with(env, FakeEmbedder(), BIG) as engine:
        await engine.sync()
        await poll(lambda: vectors_complete(engine))
        return await engine.read(chunk_count)


async def test_new_chunking_is_built_aside_and_swapped_in_whole(env: Env) -> None:
    big_chunks = await index_with_big_chunks(env)

    embedder = FakeEmbedder()
    embedder.gate.clear()  # hold the new index's embedding so the test can look mid-rebuild
    async with engine_with(env, embedder, SMALL) as engine:
        await poll(lambda: _has_rebuild(engine))
        during = await engine.search(SearchQuery("heron milestone"))
        assert during.results  # the old index keeps answering
        assert await engine.read(chunk_count) == big_chunks
        status = await workspace_status(engine)
        assert status.rebuild is not None
        assert env.config().index_path.with_name("default.sqlite.rebuild").exists()

        await engine.append("a note written during the rebuild: osprey", None)
        embedder.gate.set()
        await poll(lambda: _rebuild_done(engine))
        small_chunks = await engine.read(chunk_count)
        assert small_chunks > big_chunks
        assert await engine.read(get_meta, CHUNKING_KEY) == chunking_signature(SMALL)
        assert not env.config().index_path.with_name("default.sqlite.rebuild").exists()
        found = await engine.search(SearchQuery("osprey"))
        assert found.results, "an append made during the rebuild must survive the swap"
        await poll(lambda: vectors_complete(engine))
        after = await engine.search(SearchQuery("heron milestone"))
        assert after.mode == "hybrid"


async def test_a_failed_rebuild_leaves_the_live_index_alone(env: Env) -> None:
    before = await index_with_big_chunks(env)

    broken = FakeEmbedder()
    broken.fail_documents = EmbeddingError("401 check the API key", retryable=False)
    async with engine_with(env, broken, SMALL) as engine:

        async def failed() -> bool:
            return any(
                "rebuild failed" in issue for issue in (await workspace_status(engine)).issues
            )

        await poll(failed)
        assert await engine.read(chunk_count) == before
        assert await engine.read(get_meta, CHUNKING_KEY) == chunking_signature(BIG)
        assert not env.config().index_path.with_name("default.sqlite.rebuild").exists()
        assert (await engine.search(SearchQuery("heron"))).results


async def test_an_empty_index_just_records_the_chunking(env: Env) -> None:
    async with engine_with(env, FakeEmbedder(), SMALL) as engine:
        assert await engine.read(get_meta, CHUNKING_KEY) == chunking_signature(SMALL)
        assert (await workspace_status(engine)).rebuild is None


async def _has_rebuild(engine: Engine) -> bool:
    return (await workspace_status(engine)).rebuild is not None


async def _rebuild_done(engine: Engine) -> bool:
    return (await workspace_status(engine)).rebuild is None
