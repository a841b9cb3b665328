"""Background vector indexing: every chunk gets a vector, eventually.

Keyword search answers the moment a file is indexed; vectors follow here, in
batches, without ever holding the writer lane while a model runs:

1. read a batch of chunks missing a vector for the current identity (by id,
   resuming after the last batch, with one extra pass from the start to
   catch chunks that appeared behind the cursor);
2. take what the embedding cache has; embed only the rest (in a thread, or
   the local model's worker process);
3. store vectors and cache entries in one short write.

Provider failures are recorded for ``status`` and retried with exponential
backoff (1 s doubling to 5 min); a configured fallback provider takes over
after a non-retryable error or three failures in a row. A search whose query
the provider embedded again proves it is back: the wait ends at once
(`provider_answered`), so the backlog drains without waiting out minutes of
backoff. A backlog of at least ``[embedding.batch] min_chunks`` chunks for
an openai or gemini embedder goes first through the provider's batch API
(`embed.remote.batch`: about half the price); whatever a batch could not
embed (a failed, expired or timed-out job) then takes the synchronous path,
with a warning, so indexing never stalls. With ``wait = false`` the jobs
run on (`engine.batch_jobs`): the chunks they hold are skipped here until
their vectors arrive in the cache, and everything else embeds as usual.
While files are still being indexed (a first index, a large import), the
backlog seen so far is only the start of what is coming: an embedder with
a batch API waits for indexing to settle, `SETTLE_S` at most, before it
decides, so a first index goes up as one batch job instead of a few
synchronous batches and a job for the rest. When the provider or
model changes, vectors go to a new table that replaces the old one only when
complete (`store.vectors.promote_building`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Final, Protocol, TypeVar

import apsw
import trio

from omem_protocol import EmbeddingStatus
from openmemoryd.embed import Embedder, EmbeddingError, to_blob
from openmemoryd.embed.registry import as_local
from openmemoryd.store.vectors import (
    PendingChunk,
    active_table,
    building_table,
    cache_get,
    cache_prune,
    cache_put,
    cache_size,
    cache_touch,
    pending_chunks,
    promote_building,
    retire_active,
    store_vectors,
    target_table,
    vector_progress,
)

if TYPE_CHECKING:
    from openmemoryd.embed.remote.batch import BatchEmbedder
    from openmemoryd.engine.batch_jobs import BatchJobs

logger = logging.getLogger("openmemoryd.vectors")

T = TypeVar("T")

MAX_BACKOFF_S: Final = 300.0
FAILURES_BEFORE_FALLBACK: Final = 3
PRUNE_EVERY: Final = 50
BATCH_PASS_MAX: Final = 20_000
"""Chunks one batch pass reads (and holds in memory) at most."""
BATCH_STORE_ROWS: Final = 1000
"""Vectors stored per write after a batch: the writer lane stays short."""
SETTLE_S: Final = 5.0
"""How long a batch-capable embedder waits for busy indexing before it embeds anyway."""
RECHECK_S: Final = 0.25
"""How often a waiting backlog looks at indexing again."""


class Lanes(Protocol):
    """The engine's serialised writer and pooled readers."""

    async def write(self, fn: Callable[..., T], *args: Any) -> T: ...

    async def read(self, fn: Callable[..., T], *args: Any) -> T: ...


class VectorIndexer:
    """Keeps the vector table of the current embedder complete."""

    def __init__(
        self,
        lanes: Lanes,
        primary: Embedder,
        fallback: Embedder | None,
        *,
        batch_size: int,
        cache_max_entries: int,
        batcher: BatchEmbedder | None = None,
        indexing_busy: Callable[[], bool] | None = None,
    ) -> None:
        self._lanes = lanes
        self._batcher = batcher
        self._indexing_busy = indexing_busy
        self._settling_since: float | None = None  # the backlog waits for indexing
        self._jobs: BatchJobs | None = None
        if batcher is not None and not batcher.wait:
            from openmemoryd.engine.batch_jobs import BatchJobs

            self._jobs = BatchJobs(lanes, batcher)
        self._idle_sweep = False
        self.embedder = primary
        self._fallback = fallback
        self.fallback_active = False
        self._batch_size = batch_size
        self._cache_max = cache_max_entries
        self._wakeup = trio.Event()
        self._retry_now = trio.Event()
        self._cursor = 0
        self._busy = False
        self._failures = 0
        self._batches = 0
        self.last_error: str | None = None
        self.last_error_at: float | None = None
        self.documents_embedded = 0

    @property
    def batch_size(self) -> int:
        return self._batch_size

    def wake(self) -> None:
        """There may be new chunks: look for work."""
        self._wakeup.set()

    def provider_answered(self) -> None:
        """The embedder just worked (for a query): stop backing off."""
        self.retry_now()

    def retry_now(self) -> None:
        """What made the last batches fail is gone: stop backing off."""
        if self._failures:
            self._retry_now.set()
        self.wake()

    def restart(self) -> None:
        """The index was replaced: rescan from the first chunk, now (a
        failure of the old index is no reason to keep backing off)."""
        self._cursor = 0
        self.retry_now()

    async def fill(self) -> None:
        """Embed until every chunk has a vector, for a one-off build.

        Retryable provider errors are retried with backoff; others raise.
        """
        delay = 1.0
        while True:
            try:
                await self._drain()
            except EmbeddingError as exc:
                self._record_failure(exc)
                if not exc.retryable:
                    raise
                await trio.sleep(delay)
                delay = min(delay * 2, MAX_BACKOFF_S)
            else:
                return

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Run forever; ready at once (the work happens in the background)."""
        task_status.started()
        await self._warm_up()
        self.wake()
        delay = 1.0
        while True:
            if self._jobs is not None and self._jobs.jobs:
                # jobs are running: look again at the poll interval
                with trio.move_on_after(self._jobs.poll_interval_s):
                    await self._wakeup.wait()
            elif self._settling_since is not None:
                with trio.move_on_after(RECHECK_S):
                    await self._wakeup.wait()
            else:
                await self._wakeup.wait()
            self._wakeup = trio.Event()
            try:
                await self._drain()
            except EmbeddingError as exc:
                self._record_failure(exc)
                if self._should_fall_back(exc):
                    self._activate_fallback()
                    self.wake()
                    continue
                logger.warning("embedding failed (%s); retrying in %.0f s", exc, delay)
            except Exception as exc:
                # Vectors are a background nicety: an unexpected failure is
                # reported and retried, never allowed to take the daemon down.
                logger.exception("vector indexing failed; retrying in %.0f s", delay)
                self._failures += 1
                self.last_error = f"{type(exc).__name__}: {exc}"
                self.last_error_at = time.time()
            else:
                delay = 1.0
                continue
            with trio.move_on_after(delay):
                await self._retry_now.wait()
            if self._retry_now.is_set():
                self._retry_now = trio.Event()
                delay = 1.0
            else:
                delay = min(delay * 2, MAX_BACKOFF_S)
            self.wake()

    async def _warm_up(self) -> None:
        """Load the query model now, and the local model's reference vectors
        (shipped, or the passages embedded when none match: embed.reference),
        so the first search pays for neither."""
        local = as_local(self.embedder)

        def warm() -> None:
            vector = self.embedder.embed_query("warm up")
            if local is not None:
                local.null_cosine(vector)

        try:
            await trio.to_thread.run_sync(warm, abandon_on_cancel=True)
        except EmbeddingError as exc:
            self._record_failure(exc)
        except Exception:
            logger.exception("warming up %s failed", self.embedder.identity())

    async def _drain(self) -> None:
        self._busy = True
        self._idle_sweep = False
        try:
            if self._wait_for_indexing():
                return
            while await self._batch_pass():
                pass
            while await self._step():
                pass
            promoted = await self._lanes.write(
                _promote_if_complete, self.embedder.identity(), self.embedder.dims
            )
            if promoted:
                logger.info("vectors for %s complete; now used for search", promoted)
            self._failures = 0
            self.last_error = None
        finally:
            self._busy = False

    async def _step(self) -> bool:
        identity = self.embedder.identity()
        found = await self._lanes.read(pending_chunks, identity, self._cursor, self._batch_size)
        if not found:
            if self._cursor == 0 or self._idle_sweep:
                self._cursor = 0
                return False
            self._cursor = 0  # one more pass from the start catches stragglers
            self._idle_sweep = True  # (and ends the drain if it finds nothing to do)
            return True
        held = self._jobs.held_for(identity) if self._jobs is not None else frozenset()
        pending = [p for p in found if p.hash not in held]  # a running batch job has those
        if not pending:
            self._cursor = found[-1].id
            return True
        cached = await self._lanes.read(cache_get, identity, [p.hash for p in pending])
        missing = _distinct([p for p in pending if p.hash not in cached])
        fresh: dict[str, bytes] = {}
        if missing:
            vectors = await trio.to_thread.run_sync(
                self.embedder.embed_documents, [p.text for p in missing], abandon_on_cancel=True
            )
            fresh = {p.hash: to_blob(v) for p, v in zip(missing, vectors, strict=True)}
            self.documents_embedded += len(missing)
        known = {**cached, **fresh}
        rows = [(p.id, p.hash, known[p.hash]) for p in pending]
        dims = len(rows[0][2]) // 4
        self._batches += 1
        prune = self._batches % PRUNE_EVERY == 0
        await self._lanes.write(
            _store_batch,
            identity,
            dims,
            rows,
            fresh,
            list(cached),
            self._cache_max if prune else None,
        )
        self._cursor = found[-1].id
        self._idle_sweep = False
        return True

    def _batcher_in_use(self) -> BatchEmbedder | None:
        """The batch embedder, when there is one for the embedder in use (not
        after a fallback took over) and it has not been turned off."""
        batcher = self._batcher
        if batcher is None or not batcher.available or batcher.embedder is not self.embedder:
            return None
        return batcher

    def _wait_for_indexing(self) -> bool:
        """True when the backlog should wait: the embedder has a batch API and
        files are still being indexed (more chunks may be on their way to join
        one job), for at most `SETTLE_S`; the serve loop looks again every
        `RECHECK_S`."""
        busy = self._indexing_busy
        if busy is None or self._batcher_in_use() is None or not busy():
            self._settling_since = None
            return False
        now = time.monotonic()
        if self._settling_since is None:
            self._settling_since = now
        if now - self._settling_since < SETTLE_S:
            return True
        self._settling_since = None
        return False

    async def _batch_pass(self) -> bool:
        """Embed a large backlog through batch jobs.

        True when it stored vectors and found nothing wrong (there may be
        more for another pass); False hands the rest to the synchronous
        path: the backlog is small, the batcher is not for this embedder (a
        fallback took over), or a batch failed in part or whole.
        """
        batcher = self._batcher_in_use()
        if batcher is None:
            return False
        identity = self.embedder.identity()
        if self._jobs is not None:
            # wait = false: finished jobs leave their vectors in the cache,
            # where the synchronous pass takes them
            await self._jobs.collect_due(identity)
            if not self._jobs.slots:
                return False
        pending = await self._lanes.read(pending_chunks, identity, 0, BATCH_PASS_MAX)
        if len(pending) < batcher.min_chunks:
            return False
        cached = await self._lanes.read(cache_get, identity, [p.hash for p in pending])
        missing = _distinct([p for p in pending if p.hash not in cached])
        if self._jobs is not None:
            await self._jobs.submit(identity, missing)
            return False
        if len(missing) < batcher.min_chunks:
            return False
        try:
            result = await trio.to_thread.run_sync(
                batcher.embed_documents, [p.text for p in missing], abandon_on_cancel=True
            )
        except EmbeddingError as exc:
            logger.warning("batch embedding failed (%s); embedding synchronously instead", exc)
            return False
        fresh = {
            p.hash: to_blob(v)
            for p, v in zip(missing, result.vectors, strict=True)
            if v is not None
        }
        self.documents_embedded += len(fresh)
        if result.failures:
            logger.warning(
                "batch embedding: %d of %d texts not embedded (%s); embedding them synchronously",
                len(missing) - len(fresh),
                len(missing),
                "; ".join(result.failures[:3]),
            )
        known = {**cached, **fresh}
        for start in range(0, len(pending), BATCH_STORE_ROWS):
            part = pending[start : start + BATCH_STORE_ROWS]
            await self._store_known(identity, part, known, fresh)
        return bool(fresh) and not result.failures

    async def _store_known(
        self,
        identity: str,
        chunks: Sequence[PendingChunk],
        known: dict[str, bytes],
        fresh: dict[str, bytes],
    ) -> None:
        """Store the vectors known for *chunks* (the others stay pending)."""
        rows = [(p.id, p.hash, known[p.hash]) for p in chunks if p.hash in known]
        if not rows:
            return
        new = {p.hash: fresh[p.hash] for p in chunks if p.hash in fresh}
        reused = list({p.hash for p in chunks if p.hash in known and p.hash not in fresh})
        await self._lanes.write(
            _store_batch, identity, len(rows[0][2]) // 4, rows, new, reused, None
        )

    def _record_failure(self, exc: EmbeddingError) -> None:
        self._failures += 1
        self.last_error = str(exc)
        self.last_error_at = time.time()

    def _should_fall_back(self, exc: EmbeddingError) -> bool:
        if self._fallback is None or self.fallback_active:
            return False
        return not exc.retryable or self._failures >= FAILURES_BEFORE_FALLBACK

    def _activate_fallback(self) -> None:
        assert self._fallback is not None
        logger.error(
            "embedding provider %s keeps failing (%s); switching to fallback %s",
            self.embedder.identity(),
            self.last_error,
            self._fallback.identity(),
        )
        self.embedder = self._fallback
        self.fallback_active = True
        self._cursor = 0
        self._failures = 0

    def _batch_jobs(self) -> int:
        """Batch jobs running now (waited for, or kept in the index)."""
        if self._jobs is not None:
            return len(self._jobs.jobs)
        return self._batcher.jobs_running if self._batcher is not None else 0

    async def status(self) -> EmbeddingStatus:
        identity = self.embedder.identity()
        embedded, total = await self._lanes.read(vector_progress, identity)
        rebuilding = await self._lanes.read(_is_rebuilding, identity)
        entries = await self._lanes.read(cache_size)
        if self._failures and self.last_error:
            state = "failing"
        elif rebuilding:
            state = "rebuilding"
        elif self._busy or embedded < total:
            state = "embedding"
        else:
            state = "idle"
        return EmbeddingStatus(
            state=state,
            provider=self.embedder.name,
            model=self.embedder.model,
            dims=self.embedder.dims,
            embedded=embedded,
            total=total,
            fallback_active=self.fallback_active,
            last_error=self.last_error,
            last_error_at=self.last_error_at,
            cache_entries=entries,
            batch_jobs=self._batch_jobs(),
        )


def _distinct(chunks: Sequence[PendingChunk]) -> list[PendingChunk]:
    """One chunk per text hash: identical texts need one embedding."""
    return list({p.hash: p for p in chunks}.values())


def _store_batch(
    conn: apsw.Connection,
    identity: str,
    dims: int,
    rows: list[tuple[int, str, bytes]],
    fresh: dict[str, bytes],
    reused: list[str],
    prune_to: int | None,
) -> None:
    with conn:
        table = target_table(conn, identity, dims)
        if fresh:
            cache_put(conn, identity, dims, fresh.items())
        if reused:
            cache_touch(conn, identity, reused)
        store_vectors(conn, table, rows)
    if prune_to is not None:
        cache_prune(conn, prune_to)


def _is_rebuilding(conn: apsw.Connection, identity: str) -> bool:
    """Vectors of another model are active: ours are being built to replace them."""
    active = active_table(conn)
    return active is not None and active.identity != identity


def _promote_if_complete(conn: apsw.Connection, identity: str, dims: int | None) -> str | None:
    """Once no chunk lacks a vector for *identity*, make its table the active one."""
    if pending_chunks(conn, identity, 0, 1):
        return None
    building = building_table(conn)
    if building is not None and building.identity == identity:
        promote_building(conn)
        return identity
    active = active_table(conn)
    if active is not None and active.identity != identity:
        # Nothing to embed (no chunks): the old model's table is just stale.
        retire_active(conn)
        if dims:
            target_table(conn, identity, dims)
        return identity
    return None
