"""A search through the engine: freshness, the section shortcut, the
keyword leg run while the query embeds, fusion, the reranker, and
the token budget.

The index work runs on the engine's readers; a rerank service is awaited
with no reader held, and what follows it (snippets tokenise) in a thread.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

import msgspec
import trio

from omem_protocol import RerankExplain, SearchResult
from openmemoryd.config import Config, SearchSettings
from openmemoryd.embed.provider import Embedder
from openmemoryd.engine.access import AccessCounts
from openmemoryd.engine.indexing import FileSync
from openmemoryd.engine.keyword_parts import keyword_leg
from openmemoryd.engine.rerank_ops import RerankSlot
from openmemoryd.engine.section_ops import section_answer
from openmemoryd.engine.syncing import Syncer
from openmemoryd.engine.vectors import VectorIndexer
from openmemoryd.search import (
    SearchContext,
    SearchQuery,
    finish_search,
    rank_candidates,
    run_search,
)
from openmemoryd.search.budget import budget_limit, pack_answer
from openmemoryd.search.pipeline import EarlyKeywords, EarlyNearest, early_nearest
from openmemoryd.search.vector import VectorQuery
from openmemoryd.workspace import PathPolicy

T = TypeVar("T")

__all__ = ["SearchHost", "search"]


class SearchHost(Protocol):
    """What a search uses of `Engine` (so this module need not import it):
    the configuration, the readers, the sync state a reply reports, the
    embedder and its cached query vectors, the reranker, the access counts."""

    @property
    def config(self) -> Config: ...

    @property
    def policy(self) -> PathPolicy: ...

    @property
    def syncer(self) -> Syncer: ...

    @property
    def files(self) -> FileSync: ...

    @property
    def vectors(self) -> VectorIndexer | None: ...

    @property
    def rerank(self) -> RerankSlot: ...

    @property
    def access(self) -> AccessCounts: ...

    async def read(self, fn: Callable[..., T], *args: Any) -> T: ...

    async def query_vector(self, text: str) -> tuple[VectorQuery | None, str | None]: ...


async def search(engine: SearchHost, query: SearchQuery, *, fresh: bool) -> SearchResult:
    """Answer *query*; with `max_tokens`, only what fits in that many tokens
    (`openmemoryd.search.budget`). Only what is shown counts as read for
    salience."""
    settings = engine.config.search
    if query.max_tokens is not None and query.limit is None:
        limit = budget_limit(query.max_tokens, settings.limit)
        query = dataclasses.replace(query, limit=limit)
    started = time.perf_counter()
    result = await _answer(engine, query, fresh=fresh)
    if query.max_tokens is not None:  # a few ms of tokenising: off the event loop
        share = settings.budget_whole_share
        result = await trio.to_thread.run_sync(
            pack_answer, result, query.max_tokens, query.text, share
        )
    if settings.salience.enabled and query.for_reader and result.mode != "section":
        engine.access.note(result.results)
    took = round((time.perf_counter() - started) * 1000, 3)
    return msgspec.structs.replace(result, took_ms=took)


async def _answer(engine: SearchHost, query: SearchQuery, *, fresh: bool) -> SearchResult:
    """The search itself: the section shortcut, or both legs, fusion and the
    reranker."""
    stale = False
    if fresh:
        stale = not await engine.syncer.wait_fresh()
    else:
        # judged before this search queues its own quick check, which
        # would otherwise mark every periodic check's search stale
        stats = engine.syncer.statistics()
        stale = engine.files.syncing or stats.running or stats.queue_depth > 0
        engine.syncer.search_happened()
    embedder = engine.vectors.embedder if engine.vectors is not None else None
    answered = await section_answer(
        query,
        engine.config.search,
        engine.policy,
        engine.config.index.max_file_bytes,
        provider=embedder.name if embedder is not None else "none",
        model=embedder.model if embedder is not None else None,
        stale=stale,
    )
    if answered is not None:  # "my preferences": read from the section itself
        return answered
    with engine.rerank.searching():  # from the query's embedding on: it is queued too
        return await _ranked_answer(engine, query, stale, embedder)


async def _ranked_answer(
    engine: SearchHost, query: SearchQuery, stale: bool, embedder: Embedder | None
) -> SearchResult:
    """Both legs, fusion and the reranker (`_answer` past its shortcut)."""
    settings, now = engine.config.search, time.time()
    vector, degraded_reason, early, nearest = await _vector_and_keywords(
        engine, query, settings, now
    )
    context = SearchContext(
        provider=embedder.name if embedder is not None else "none",
        model=embedder.model if embedder is not None else None,
        stale=stale,
        degraded=degraded_reason is not None,
        degraded_reason=degraded_reason,
        fallback=engine.vectors is not None and engine.vectors.fallback_active,
    )
    if not (query.for_reader and engine.rerank.enabled(settings.rerank)):
        result = await engine.read(
            run_search, query, settings, context, vector, now, early, nearest
        )
    else:
        # The index part on a reader, the service awaited with no reader
        # held, the rest in a thread (snippets tokenise).
        ranked = await engine.read(rank_candidates, query, settings, vector, now, early, nearest)
        chosen = note = None
        if ranked.chosen and ranked.mode != "timeline":  # days in order, not by relevance
            chosen, note = await engine.rerank.rerank(
                settings.rerank, query.text, ranked.chosen, calibrated=ranked.calibrated
            )
        result = await trio.to_thread.run_sync(
            finish_search, ranked, query, settings, context, now, chosen
        )
        if note is not None and result.explain is not None:
            explained = RerankExplain(
                provider=note.provider,
                model=note.model,
                sent=note.sent,
                weight=note.weight,
                took_ms=round(note.took_ms, 3),
                error=note.error,
                skipped=note.skipped,
            )
            explain = msgspec.structs.replace(result.explain, rerank=explained)
            result = msgspec.structs.replace(result, explain=explain)
    return result


async def _vector_and_keywords(
    engine: SearchHost, query: SearchQuery, settings: SearchSettings, now: float
) -> tuple[VectorQuery | None, str | None, EarlyKeywords | None, EarlyNearest | None]:
    """The embedded query (`Engine.query_vector`) and its vector leg and,
    meanwhile on another reader, the keyword leg: neither needs the
    other, and at 1M chunks the keyword leg outlasts the other two
    (docs/benchmarks.md, "Search at 10k, 100k and 1M chunks")."""
    if engine.vectors is None or not query.text.strip():
        vector, reason = await engine.query_vector(query.text)
        return vector, reason, None, None
    early: list[EarlyKeywords | None] = []
    nearest: EarlyNearest | None = None

    async def keywords() -> None:
        try:
            early.append(await keyword_leg(engine.read, query, settings, now))
        except Exception:  # the search itself runs the leg, and reports its error
            early.append(None)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(keywords)
        vector, reason = await engine.query_vector(query.text)
        with contextlib.suppress(Exception):  # likewise
            if vector is not None:
                nearest = await engine.read(early_nearest, query, settings, vector)
    return vector, reason, early[0] if early else None, nearest
