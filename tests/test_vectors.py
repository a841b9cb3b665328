"""Background vector indexing, the cache, rebuilds and degraded search (in-process)."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import apsw
import trio

from conftest import Env
from fake_embedder import FakeEmbedder
from openmemoryd.embed import EmbeddingError
from openmemoryd.embed.registry import Choice
from openmemoryd.engine import Engine, open_engine, workspace_status
from openmemoryd.search import SearchQuery
from openmemoryd.store.vectors import active_table, building_table
from openmemoryd.workspace import init_workspace


@asynccontextmanager
async def engine_with(
    env: Env, embedder: FakeEmbedder, fallback: FakeEmbedder | None = None
) -> AsyncIterator[Engine]:
    config = env.config()
    init_workspace(config.workspace)
    async with open_engine(config, choice=Choice(embedder, "test"), fallback=fallback) as engine:
        yield engine


async def poll(condition: Callable[[], Awaitable[bool]], seconds: float = 15.0) -> None:
    """Wait until *condition* holds: the indexer works in the background."""
    with trio.fail_after(seconds):
        for _ in itertools.count():
            if await condition():
                return
            await trio.sleep(0.02)


async def wait_vectors(engine: Engine) -> None:
    """Until every chunk has a vector for the current identity and nothing is pending."""

    async def complete() -> bool:
        emb = (await workspace_status(engine)).embedding
        return bool(emb.total) and emb.embedded == emb.total and emb.state == "idle"

    await poll(complete)


def vec_rows(conn: apsw.Connection) -> int:
    table = active_table(conn)
    assert table is not None
    return int(conn.execute(f"SELECT count(*) FROM {table.table}").fetchall()[0][0])  # type: ignore[arg-type]


async def test_vectors_fill_in_the_background_and_search_turns_hybrid(env: Env) -> None:
    embedder = FakeEmbedder()
    async with engine_with(env, embedder) as engine:
        await engine.append("Wei prefers oolong tea in the afternoon", None)
        await engine.sync()
        await wait_vectors(engine)
        result = await engine.search(SearchQuery("oolong tea afternoon", explain=True))
        assert result.mode == "hybrid"
        assert not result.degraded
        top = result.results[0]
        assert "oolong" in top.snippet
        assert top.vector_score is not None
        assert top.vector_score > 0
        assert top.text_score is not None
        assert result.explain is not None
        assert result.explain.vector_candidates > 0
        status = await workspace_status(engine)
        assert status.vector
        assert status.embedding.provider == "fake"


async def test_a_full_reindex_with_a_warm_cache_embeds_nothing(env: Env) -> None:
    """OpenClaw case 34: a forced reindex with the cache makes zero new embedding calls."""
    embedder = FakeEmbedder()
    async with engine_with(env, embedder) as engine:
        for i in range(20):
            (env.workspace / "memory" / f"n{i}.md").write_text(f"# Note {i}\n\nfact number {i}\n")
        await engine.sync()
        await wait_vectors(engine)
        before = embedder.documents_embedded
        assert before > 0
        full = await engine.sync(full=True)
        assert full.updated == 23  # 20 notes + 3 templates
        await wait_vectors(engine)
        assert embedder.documents_embedded == before
        status = await workspace_status(engine)
        assert status.embedding.cache_entries == 20  # one per distinct chunk text


async def test_identical_texts_are_embedded_once(env: Env) -> None:
    embedder = FakeEmbedder()
    async with engine_with(env, embedder) as engine:
        for i in range(5):
            (env.workspace / "memory" / f"copy{i}.md").write_text("the very same note\n")
        await engine.sync()
        await wait_vectors(engine)
        assert embedder.documents_embedded == 1  # one distinct text; templates hold none


async def test_deleting_a_file_removes_its_vectors(env: Env) -> None:
    embedder = FakeEmbedder()
    async with engine_with(env, embedder) as engine:
        (env.workspace / "memory" / "gone.md").write_text("to be deleted\n")
        await engine.sync()
        await wait_vectors(engine)
        before = await engine.read(vec_rows)
        (env.workspace / "memory" / "gone.md").unlink()
        await engine.sync()
        assert await engine.read(vec_rows) == before - 1


async def test_a_new_model_builds_in_the_background_then_swaps_atomically(env: Env) -> None:
    first = FakeEmbedder(model="one")
    async with engine_with(env, first) as engine:
        await engine.append("the falcon migration ships in April", None)
        await wait_vectors(engine)

    second = FakeEmbedder(model="two")
    second.gate.clear()  # hold the rebuild until the test has looked
    async with engine_with(env, second) as engine:
        await trio.sleep(0.3)
        during = await engine.search(SearchQuery("falcon migration"))
        assert during.mode == "lexical"
        assert during.degraded
        assert "being built" in (during.degraded_reason or "")
        assert [h.path for h in during.results]  # keyword search keeps answering
        status = await workspace_status(engine)
        assert status.embedding.state == "rebuilding"
        old = await engine.read(active_table)
        assert old is not None
        assert old.identity == first.identity()

        second.gate.set()
        await wait_vectors(engine)
        after = await engine.search(SearchQuery("falcon migration"))
        assert after.mode == "hybrid"
        assert not after.degraded
        new = await engine.read(active_table)
        assert new is not None
        assert new.identity == second.identity()
        assert await engine.read(building_table) is None
        tables = await engine.read(
            lambda conn: [
                r[0]
                for r in conn.execute("SELECT name FROM sqlite_schema WHERE name = ?", (old.table,))
            ]
        )
        assert tables == []


async def test_failing_query_embedding_degrades_to_keywords(env: Env) -> None:
    embedder = FakeEmbedder()
    async with engine_with(env, embedder) as engine:
        await engine.append("Wei prefers oolong tea", None)
        await wait_vectors(engine)
        embedder.fail_queries = EmbeddingError("server unreachable", retryable=True)
        result = await engine.search(SearchQuery("oolong novel words"))
        assert result.mode == "lexical"
        assert result.degraded
        assert "server unreachable" in (result.degraded_reason or "")
        assert result.results
        assert "oolong" in result.results[0].snippet


async def test_document_failures_are_reported_and_retried(env: Env) -> None:
    embedder = FakeEmbedder()
    embedder.fail_documents = EmbeddingError("429 rate limited", retryable=True)
    embedder.failures_left = 1
    async with engine_with(env, embedder) as engine:
        await engine.append("retry me please", None)

        async def failed() -> bool:
            return (await workspace_status(engine)).embedding.last_error is not None

        await poll(failed)
        failing = await workspace_status(engine)
        assert failing.embedding.state == "failing"
        assert any("429" in issue for issue in failing.issues)
        await wait_vectors(engine)
        assert (await workspace_status(engine)).embedding.last_error is None


async def test_fallback_takes_over_when_the_primary_fails_for_good(env: Env) -> None:
    primary = FakeEmbedder(model="primary")
    primary.fail_documents = EmbeddingError("401 check the API key", retryable=False)
    primary.fail_queries = primary.fail_documents
    fallback = FakeEmbedder(model="fallback")
    async with engine_with(env, primary, fallback) as engine:
        await engine.append("kestrel deployment window", None)
        await wait_vectors(engine)
        status = await workspace_status(engine)
        assert status.embedding.fallback_active
        assert status.embedding.model == "fallback"
        result = await engine.search(SearchQuery("kestrel"))
        assert result.fallback
        assert result.mode == "hybrid"


async def test_a_zero_query_vector_skips_the_vector_leg_quietly(env: Env) -> None:
    embedder = FakeEmbedder()
    embedder.zero_queries.add("oolong")
    async with engine_with(env, embedder) as engine:
        await engine.append("Wei prefers oolong tea", None)
        await wait_vectors(engine)
        result = await engine.search(SearchQuery("oolong"))
        assert result.mode == "lexical"
        assert not result.degraded
        assert result.results
