"""One workspace's index and the operations on it.

Concurrency model:

* **Writer lane.** The single writer connection is only used inside
  `Engine._write`, which runs a synchronous function in a worker thread under
  a capacity-1 limiter. Calls are therefore serialised, never interleave
  inside a transaction, and never ``await`` while one is open. A trio task
  cancelled while its call runs waits for the call to finish (trio does not
  abandon the thread), so a transaction is never left half done.
* **Readers.** Searches and status queries run on read-only connections from
  a small pool, in worker threads. WAL gives each a consistent snapshot, and a
  long sync never blocks them.
* **Sync passes** are serialised by a lock; a pass takes the writer lane per
  batch of files, so an append waits for at most one batch, not a whole pass.
* **Vectors** are filled by a background `VectorIndexer`; a search embeds its
  query (bounded by ``query_timeout_s``) and falls back to keywords alone,
  marked degraded, when the embedder fails or its vectors are not ready.
* **Rebuilds** (the chunking changed) build a new index file beside the live
  one and swap it in with `replace_index`, holding the writer lane and every
  reader slot, so no request ever sees a half-built index.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections import Counter, OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any, Final, TypeVar

import apsw
import msgspec
import trio

from omem_protocol import (
    AppendResult,
    EmbeddingStatus,
    GetResult,
    LastSync,
    SearchResult,
    SourceCounts,
    SyncResult,
)
from openmemoryd.config import Config
from openmemoryd.embed import Embedder, EmbeddingError, Vectors, is_zero, to_blob
from openmemoryd.embed.registry import Choice, choose_embedder, choose_fallback
from openmemoryd.engine.rebuild import needs_rebuild, rebuild_index
from openmemoryd.engine.vectors import VectorIndexer
from openmemoryd.errors import OmemdError, Unavailable
from openmemoryd.index.indexer import FileOutcome, index_file
from openmemoryd.memory import append_block, read_lines, target_path
from openmemoryd.search import SearchContext, SearchQuery, citation, run_search
from openmemoryd.search.vector import VectorQuery
from openmemoryd.store import (
    OpenedIndex,
    file_notes,
    indexed_files,
    open_index,
    open_reader,
    source_totals,
)
from openmemoryd.store.vectors import active_table
from openmemoryd.workspace import MemoryPath, PathPolicy, Scan, scan_memory_files

logger = logging.getLogger("openmemoryd.engine")

T = TypeVar("T")
ProgressFn = Callable[[int, int, str], Awaitable[None]]

READERS: Final = 4
QUERY_CACHE_SIZE: Final = 256
SYNC_BATCH: Final = 32


@dataclass(frozen=True, slots=True)
class EngineStatus:
    """The workspace part of `status`."""

    workspace_path: str
    index_path: str
    index_bytes: int
    files_on_disk: int
    files_indexed: int
    chunks: int
    sources: tuple[SourceCounts, ...]
    vector: bool
    provider: str
    model: str | None
    syncing: bool
    last_sync: LastSync | None
    issues: tuple[str, ...]
    embedding: EmbeddingStatus
    rebuild: str | None


class Engine:
    """Search, read, append and sync for one workspace."""

    def __init__(
        self, config: Config, opened: OpenedIndex, choice: Choice, fallback: Embedder | None = None
    ) -> None:
        self.config = config
        self.policy = PathPolicy(config.workspace, config.extra_paths)
        self.vector_error = opened.vector_error
        self.recovered_to = opened.recovered_to
        self._writer = opened.conn
        self._closed = False
        self._write_limiter = trio.CapacityLimiter(1)
        self._read_limiter = trio.CapacityLimiter(READERS)
        self._readers: list[apsw.Connection] = []
        self._sync_lock = trio.Lock()
        self._syncing = False
        self._last_sync: LastSync | None = None
        self._embedding_reason = choice.reason
        self.rebuild_progress: str | None = None
        self._rebuild_error: str | None = None
        self._query_vectors: OrderedDict[tuple[str, str], Vectors] = OrderedDict()
        self.vectors: VectorIndexer | None = None
        if choice.embedder is not None:
            embedding = config.embedding
            self.vectors = VectorIndexer(
                self,
                choice.embedder,
                fallback,
                batch_size=embedding.local.batch_size if choice.embedder.name == "local" else 64,
                cache_max_entries=embedding.cache_max_entries,
            )

    # ------------------------------------------------------------ lanes

    async def write(self, fn: Callable[..., T], *args: Any) -> T:
        """Run *fn(writer_connection, *args)* in the writer lane."""
        if self._closed:
            raise Unavailable("the index is closed")
        return await trio.to_thread.run_sync(self._on_writer, fn, args, limiter=self._write_limiter)

    def _on_writer(self, fn: Callable[..., T], args: tuple[Any, ...]) -> T:
        # Resolved here, inside the lane: a call queued before `replace_index`
        # swapped the connection must run on the new one, not the closed one.
        if self._closed:
            raise Unavailable("the index is closed")
        return fn(self._writer, *args)

    async def read(self, fn: Callable[..., T], *args: Any) -> T:
        """Run *fn(read_only_connection, *args)* on a pooled reader."""
        async with self._read_limiter:
            if self._closed:
                raise Unavailable("the index is closed")
            conn = self._readers.pop() if self._readers else None
            try:
                if conn is None:
                    conn = await trio.to_thread.run_sync(open_reader, self.config.index_path)
                return await trio.to_thread.run_sync(fn, conn, *args)
            finally:
                if conn is not None:
                    self._return_reader(conn)

    def _return_reader(self, conn: apsw.Connection) -> None:
        if self._closed:  # the engine closed while this read ran
            conn.close()
        else:
            self._readers.append(conn)

    # ------------------------------------------------------------ operations

    async def search(self, query: SearchQuery) -> SearchResult:
        started = time.perf_counter()
        vector, degraded_reason = await self._query_vector(query.text)
        embedder = self.vectors.embedder if self.vectors is not None else None
        context = SearchContext(
            provider=embedder.name if embedder is not None else "none",
            model=embedder.model if embedder is not None else None,
            stale=self._syncing,
            degraded=degraded_reason is not None,
            degraded_reason=degraded_reason,
            fallback=self.vectors is not None and self.vectors.fallback_active,
        )
        result = await self.read(
            run_search, query, self.config.search, context, vector, time.time()
        )
        took = round((time.perf_counter() - started) * 1000, 3)
        return msgspec.structs.replace(result, took_ms=took)

    async def _query_vector(self, text: str) -> tuple[VectorQuery | None, str | None]:
        """The embedded query and its table, or None and why not (None: not degraded)."""
        if self.vectors is None or not text.strip():
            return None, None
        embedder = self.vectors.embedder
        identity = embedder.identity()
        active = await self.read(active_table)
        if active is None or active.identity != identity:
            return None, f"vectors for {embedder.model} are still being built; keyword results only"
        key = (identity, text)
        vector = self._query_vectors.get(key)
        if vector is None:
            timeout = self.config.search.query_timeout_s
            try:
                with trio.move_on_after(timeout) as scope:
                    vector = await trio.to_thread.run_sync(
                        embedder.embed_query, text, abandon_on_cancel=True
                    )
            except EmbeddingError as exc:
                return None, f"query embedding failed: {exc}"
            if scope.cancelled_caught or vector is None:
                return None, f"query embedding took longer than {timeout:g} s"
            self._query_vectors[key] = vector
            if len(self._query_vectors) > QUERY_CACHE_SIZE:
                self._query_vectors.popitem(last=False)
        else:
            self._query_vectors.move_to_end(key)
        if is_zero(vector):
            return None, None
        floor, ceiling = embedder.score_floor, embedder.score_ceiling
        return VectorQuery(active, to_blob(vector), floor, ceiling), None

    async def get(self, path: str, from_line: int | None, lines: int | None) -> GetResult:
        return await trio.to_thread.run_sync(
            read_lines, self.policy, path, from_line, lines, self.config.index.max_file_bytes
        )

    async def append(self, text: str, path: str | None) -> AppendResult:
        """Append and index in one writer-lane call: searchable when this returns."""
        mp = target_path(self.policy, path, date.today())
        result = await self.write(self._append_and_index, mp, text)
        if self.vectors is not None:
            self.vectors.wake()
        return result

    def _append_and_index(self, conn: apsw.Connection, mp: MemoryPath, text: str) -> AppendResult:
        appended = append_block(mp, text, self.config.index.max_file_bytes)
        outcome = index_file(conn, mp.key, mp, self.config.index)
        return AppendResult(
            path=mp.key,
            start_line=appended.start_line,
            end_line=appended.end_line,
            created=appended.created,
            indexed=outcome.kind in ("added", "updated", "unchanged"),
            citation=citation(mp.key, appended.start_line, appended.end_line),
        )

    async def sync(
        self, *, full: bool = False, reason: str = "explicit", progress: ProgressFn | None = None
    ) -> SyncResult:
        """Reconcile the index with the files on disk; `full` re-chunks everything."""
        async with self._sync_lock:
            self._syncing = True
            started = time.perf_counter()
            try:
                result = await self._sync_pass(full, progress)
            except Exception as exc:
                took = (time.perf_counter() - started) * 1000
                self._last_sync = LastSync(
                    finished_at=time.time(), reason=reason, took_ms=took, error=str(exc)
                )
                raise
            finally:
                self._syncing = False
            self._last_sync = LastSync(
                finished_at=time.time(), reason=reason, took_ms=result.took_ms
            )
            if self.vectors is not None and (result.added or result.updated):
                self.vectors.wake()
            logger.info(
                "sync (%s): %d scanned, %d added, %d updated, %d removed in %.0f ms",
                reason,
                result.scanned,
                result.added,
                result.updated,
                result.removed,
                result.took_ms,
            )
            return result

    async def sync_in_background(self, reason: str) -> None:
        """A sync whose failure is logged and shown in status, never raised."""
        try:
            await self.sync(reason=reason)
        except Exception:
            logger.exception("sync (%s) failed", reason)

    async def _sync_pass(self, full: bool, progress: ProgressFn | None) -> SyncResult:
        started = time.perf_counter()
        scan = await trio.to_thread.run_sync(scan_memory_files, self.policy)
        known = await self.read(indexed_files, "memory")
        keys = sorted(scan.files) + sorted(set(known) - set(scan.files))
        counts: Counter[str] = Counter()
        issues = list(scan.issues)
        chunks = 0
        if progress is not None:
            await progress(0, len(keys), "index")
        for offset in range(0, len(keys), SYNC_BATCH):
            batch = keys[offset : offset + SYNC_BATCH]
            for outcome in await self.write(self.index_batch, batch, scan, full):
                counts[outcome.kind] += 1
                chunks += outcome.chunks
                if outcome.issue and outcome.kind == "skipped":
                    issues.append(f"{outcome.key}: {outcome.issue}")
            if progress is not None:
                await progress(offset + len(batch), len(keys), "index")
        return SyncResult(
            scanned=len(scan.files),
            added=counts["added"],
            updated=counts["updated"],
            removed=counts["removed"],
            unchanged=counts["unchanged"],
            skipped=counts["skipped"],
            chunks=chunks,
            took_ms=round((time.perf_counter() - started) * 1000, 3),
            issues=tuple(issues),
        )

    def index_batch(
        self, conn: apsw.Connection, keys: list[str], scan: Scan, full: bool
    ) -> list[FileOutcome]:
        """Index the files *keys* into *conn* (the live index or one being built)."""
        outcomes = []
        for key in keys:
            disk = scan.files.get(key)
            mp = disk.path if disk is not None else self._resolve_or_none(key)
            try:
                outcomes.append(index_file(conn, key, mp, self.config.index, force=full))
            except apsw.Error as exc:
                logger.error("indexing %s failed: %s", key, exc)
                outcomes.append(FileOutcome(key, "skipped", issue=f"index error: {exc}"))
        return outcomes

    def _resolve_or_none(self, key: str) -> MemoryPath | None:
        try:
            return self.policy.resolve(key)
        except OmemdError:
            return None

    async def status(self) -> EngineStatus:
        scan = await trio.to_thread.run_sync(scan_memory_files, self.policy)
        totals = await self.read(source_totals)
        notes = await self.read(file_notes)
        on_disk = Counter(f.source for f in scan.files.values())
        by_source = {t.source: t for t in totals}
        sources = tuple(
            SourceCounts(
                source=name,
                files_on_disk=on_disk.get(name, 0),
                files_indexed=by_source[name].files if name in by_source else 0,
                chunks=by_source[name].chunks if name in by_source else 0,
            )
            for name in sorted(set(on_disk) | set(by_source))
        )
        issues = [*scan.issues, *(f"{path}: {note}" for path, note in notes)]
        if self.vector_error:
            issues.append(self.vector_error)
        if self.recovered_to:
            issues.append(
                f"the index was unreadable and was rebuilt; the old file is {self.recovered_to}"
            )
        if self._last_sync is not None and self._last_sync.error:
            issues.append(f"last sync failed: {self._last_sync.error}")
        if self._rebuild_error:
            issues.append(f"index rebuild failed (will retry on restart): {self._rebuild_error}")
        embedding = await self._embedding_status()
        if embedding.state == "off":
            issues.append(f"vector search is off: {embedding.reason}")
        elif embedding.last_error:
            issues.append(f"embedding provider error: {embedding.last_error}")
        return EngineStatus(
            workspace_path=str(self.config.workspace),
            index_path=str(self.config.index_path),
            index_bytes=_index_bytes(str(self.config.index_path)),
            files_on_disk=len(scan.files),
            files_indexed=sum(t.files for t in totals),
            chunks=sum(t.chunks for t in totals),
            sources=sources,
            vector=embedding.state in ("idle", "embedding") and embedding.embedded > 0,
            provider=embedding.provider,
            model=embedding.model,
            syncing=self._syncing,
            last_sync=self._last_sync,
            issues=tuple(issues),
            embedding=embedding,
            rebuild=self.rebuild_progress,
        )

    async def _embedding_status(self) -> EmbeddingStatus:
        if self.vectors is None:
            return EmbeddingStatus(
                state="off",
                provider="none",
                model=None,
                dims=None,
                embedded=0,
                total=0,
                reason=self._embedding_reason,
            )
        return await self.vectors.status()

    async def rebuild_in_background(self) -> None:
        """Rebuild for new chunking; a failure is logged and shown, never raised."""
        try:
            await rebuild_index(self)
        except Exception as exc:
            logger.exception("index rebuild failed")
            self._rebuild_error = str(exc)

    async def replace_index(self, build: Path, build_conn: apsw.Connection) -> None:
        """Swap the live index for the complete one at *build* (writer *build_conn*).

        Holds the writer lane and every reader slot: requests wait a moment
        and then see the new index whole. Files changed while it was built
        are indexed into it first.
        """
        borrowers = [object() for _ in range(READERS)]
        async with self._write_limiter:
            for borrower in borrowers:
                await self._read_limiter.acquire_on_behalf_of(borrower)
            try:
                scan = await trio.to_thread.run_sync(scan_memory_files, self.policy)
                known = await trio.to_thread.run_sync(indexed_files, build_conn, "memory")
                keys = sorted(scan.files) + sorted(set(known) - set(scan.files))
                await trio.to_thread.run_sync(self.index_batch, build_conn, keys, scan, False)
                readers, self._readers = self._readers, []
                self._writer = await trio.to_thread.run_sync(
                    _swap_files, self._writer, readers, build_conn, build, self.config
                )
            finally:
                for borrower in borrowers:
                    self._read_limiter.release_on_behalf_of(borrower)
        if self.vectors is not None:
            self.vectors.restart()

    async def aclose(self) -> None:
        """Close every connection; waits for a running write to commit first."""
        async with self._write_limiter:
            if self._closed:
                return
            self._closed = True
            readers, self._readers = self._readers, []
            await trio.to_thread.run_sync(_close_all, self._writer, readers)


def _swap_files(
    writer: apsw.Connection,
    readers: list[apsw.Connection],
    build_conn: apsw.Connection,
    build: Path,
    config: Config,
) -> apsw.Connection:
    """Close both indexes, move the new file over the old, open it."""
    for reader in readers:
        reader.close()
    writer.close()  # the last connection: SQLite checkpoints and removes its WAL
    build_conn.pragma("wal_checkpoint(TRUNCATE)")
    build_conn.close()
    live = config.index_path
    # Any WAL or shared-memory file left belongs to the old content and must
    # never be applied to the new file.
    for path in (f"{live}-wal", f"{live}-shm", f"{build}-wal", f"{build}-shm"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
    os.replace(build, live)
    return open_index(live, workspace=config.workspace).conn


def _close_all(writer: apsw.Connection, readers: list[apsw.Connection]) -> None:
    for reader in readers:
        reader.close()
    try:
        writer.pragma("optimize")
    except apsw.Error as exc:
        logger.debug("optimize on close failed: %s", exc)
    writer.close()


def _index_bytes(path: str) -> int:
    total = 0
    for suffix in ("", "-wal"):
        with contextlib.suppress(OSError):
            total += os.stat(path + suffix).st_size
    return total


@asynccontextmanager
async def open_engine(
    config: Config,
    environ: Mapping[str, str] | None = None,
    *,
    choice: Choice | None = None,
    fallback: Embedder | None = None,
) -> AsyncIterator[Engine]:
    """Open the workspace's index and its embedder; vector indexing runs in
    the background while the engine is open. Everything is closed (shielded)
    on exit.

    The embedder comes from the configuration unless *choice* (and
    *fallback*) are given, e.g. by a program embedding the engine with a
    provider of its own.
    """
    opened = await trio.to_thread.run_sync(
        lambda: open_index(config.index_path, workspace=config.workspace)
    )
    env = os.environ if environ is None else environ
    if choice is None:
        choice = choose_embedder(config.embedding, env)
        if choice.embedder is not None:
            fallback = choose_fallback(config.embedding, env)
    engine = Engine(config, opened, choice, fallback)
    try:
        async with trio.open_nursery() as background:
            if engine.vectors is not None:
                await background.start(engine.vectors.serve)
            if await engine.write(needs_rebuild, config.index):
                logger.info("the chunking changed: rebuilding the index in the background")
                background.start_soon(engine.rebuild_in_background)
            yield engine
            background.cancel_scope.cancel()
    finally:
        with trio.CancelScope(shield=True), trio.move_on_after(30):
            await engine.aclose()
        for embedder in (choice.embedder, fallback):
            if embedder is not None:
                await trio.to_thread.run_sync(embedder.close)
