"""One workspace's index and the operations on it.

Concurrency model:

* **Writer lane.** The single writer connection is only used inside
  `Engine.write`, which runs a synchronous function in a worker thread under
  a capacity-1 limiter. Calls are therefore serialised, never interleave
  inside a transaction, and never ``await`` while one is open. A trio task
  cancelled while its call runs waits for the call to finish (trio does not
  abandon the thread), so a transaction is never left half done.
* **Readers.** Searches and status queries run on read-only connections from
  a small pool, in worker threads. WAL gives each a consistent snapshot, and a
  long sync never blocks them.
* **Files → index** (`FileSync`): passes and single keys, in writer-lane
  batches, so an append waits for at most one batch. The `Syncer` drives it
  from the file watcher, the interval reconcile and searches.
* **Vectors** are filled by a background `VectorIndexer`; a search embeds its
  query (bounded by ``query_timeout_s``) and falls back to keywords alone,
  marked degraded, when the embedder fails or its vectors are not ready.
* **Rebuilds** (the chunking changed) build a new index file beside the live
  one and swap it in with `replace_index`, holding the writer lane and every
  reader slot, so no request ever sees a half-built index.
* **Index faults** met in a lane (damaged pages, a full disk) are turned into
  clear errors and repaired by `IndexHealth` (see `engine.recovery`).
"""

from __future__ import annotations

import functools
import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TypeVar

import apsw
import trio

from omem_protocol import (
    AppendResult,
    GetResult,
    SearchResult,
    SyncResult,
)
from openmemoryd.config import Config, EmbeddingSettings
from openmemoryd.embed import Embedder, EmbeddingError, Vectors, is_zero, to_blob
from openmemoryd.embed.reference import Baseline
from openmemoryd.embed.registry import Choice, as_local
from openmemoryd.engine import search_ops
from openmemoryd.engine.access import AccessCounts
from openmemoryd.engine.cited import CitedLedger
from openmemoryd.engine.hosts import ProgressFn
from openmemoryd.engine.indexing import FileSync
from openmemoryd.engine.keyword_merge import KeywordMerger
from openmemoryd.engine.rebuild import rebuild_index, swap_files
from openmemoryd.engine.recovery import (
    FaultSeen,
    IndexDamaged,
    IndexHealth,
    guarded,
    index_fault,
)
from openmemoryd.engine.rerank_ops import RerankSlot
from openmemoryd.engine.syncing import Syncer
from openmemoryd.engine.vectors import VectorIndexer
from openmemoryd.errors import Unavailable
from openmemoryd.index import Grown
from openmemoryd.index.indexer import index_file
from openmemoryd.memory import read_lines, target_path
from openmemoryd.memory.append import Appended
from openmemoryd.memory.append_journal import AppendJournal
from openmemoryd.memory.flush_state import FlushTracker
from openmemoryd.memory.known import KnownFiles
from openmemoryd.memory.log_gate import mask_secrets
from openmemoryd.memory.own_headings import append_under
from openmemoryd.search import (
    SearchQuery,
    citation,
)
from openmemoryd.search.vector import VectorQuery
from openmemoryd.store import OpenedIndex, open_reader
from openmemoryd.store.db import close_index
from openmemoryd.store.vectors import active_table
from openmemoryd.workspace import (
    MemoryPath,
    PathPolicy,
    SessionLocator,
)

if TYPE_CHECKING:
    from openmemoryd.embed.remote.batch import BatchEmbedder

logger = logging.getLogger("openmemoryd.engine")

T = TypeVar("T")

READERS: Final = 4
QUERY_CACHE_SIZE: Final = 256
# An append longer than this has its secrets masked in a worker thread (`Engine.append`).
_MASK_INLINE_CHARS: Final = 16_384


class Engine:
    """Search, read, append and sync for one workspace."""

    def __init__(
        self, config: Config, opened: OpenedIndex, choice: Choice, fallback: Embedder | None = None
    ) -> None:
        self.config = config
        self.policy = PathPolicy(config.workspace, config.extra_paths)
        self.sessions = (
            SessionLocator(config.sessions_dir, config.session_paths)
            if config.sessions.enabled
            else None
        )
        self.vector_error = opened.vector_error
        self.recovered_to = opened.recovered_to
        self._writer = opened.conn
        self._closed = False
        self._write_limiter = trio.CapacityLimiter(1)
        self._read_limiter = trio.CapacityLimiter(READERS)
        self._readers: list[apsw.Connection] = []
        self.embedding_reason = choice.reason
        self.rebuild_progress: str | None = None
        self.rebuild_error: str | None = None
        # (identity, query) -> (vector, evidence baseline or None)
        self._query_vectors: OrderedDict[tuple[str, str], tuple[Vectors, Baseline | None]] = (
            OrderedDict()
        )
        self.vectors: VectorIndexer | None = None
        # Without sqlite-vec there is nowhere to keep vectors: searches use
        # keywords and say why, and nothing is embedded (it could not be kept).
        self.vectors_off: str | None = None
        if choice.embedder is not None and opened.vector_error is not None:
            self.vectors_off = f"{opened.vector_error}; keyword search only"
            logger.warning("%s", self.vectors_off)
        elif choice.embedder is not None:
            embedding = config.embedding
            self.vectors = VectorIndexer(
                self,
                choice.embedder,
                fallback,
                batch_size=embedding.local.batch_size if choice.embedder.name == "local" else 64,
                cache_max_entries=embedding.cache_max_entries,
                batcher=_batcher(choice.embedder, embedding),
                indexing_busy=self.indexing_busy,
            )
        self.files = FileSync(self)
        self.syncer = Syncer(self)
        self.health = IndexHealth(self.recover_index, self._retry_failed_work)
        self.rebuild_lock = trio.Lock()
        self.flush = FlushTracker(config.flush_state_path)
        self.journal = AppendJournal(config.state_dir / "journal" / f"{config.name}.json")
        # Appends continue from what the last one left (`memory.known`).
        self.known = KnownFiles()
        # What each citation given out said, so a stale one is caught (`engine.cited`).
        self.cited = CitedLedger()
        self.rerank = RerankSlot()
        self.access = AccessCounts()
        self.keyword_merger = KeywordMerger()

    # ------------------------------------------------------------ lanes

    async def write(self, fn: Callable[..., T], *args: Any) -> T:
        """Run *fn(writer_connection, *args)* in the writer lane.

        Raises:
            IndexDamaged, IndexFull: the index file failed (`engine.recovery`).
        """
        result, wrote = await self._write_unchecked(fn, *args)
        if wrote:
            self.health.write_succeeded()
        return result

    async def _write_unchecked(self, fn: Callable[..., T], *args: Any) -> tuple[T, bool]:
        """The result, and whether the call changed (and so committed) rows."""
        if self._closed:
            raise Unavailable("the index is closed")
        try:
            return await trio.to_thread.run_sync(
                self._on_writer, fn, args, limiter=self._write_limiter
            )
        except FaultSeen as seen:
            raise self.health.fault(seen) from seen.error

    def _on_writer(self, fn: Callable[..., T], args: tuple[Any, ...]) -> tuple[T, bool]:
        # Resolved here, inside the lane: a call queued before `replace_index`
        # swapped the connection must run on the new one, not the closed one.
        if self._closed:
            raise Unavailable("the index is closed")
        before = self._writer.total_changes()
        result = guarded(self.health.generation, fn, self._writer, *args)
        return result, self._writer.total_changes() > before

    async def read(self, fn: Callable[..., T], *args: Any) -> T:
        """Run *fn(read_only_connection, *args)* on a pooled reader."""
        async with self._read_limiter:
            if self._closed:
                raise Unavailable("the index is closed")
            conn = self._readers.pop() if self._readers else None
            generation = self.health.generation
            try:
                if conn is None:
                    conn = await trio.to_thread.run_sync(
                        guarded, generation, open_reader, self.config.index_path
                    )
                return await trio.to_thread.run_sync(guarded, generation, fn, conn, *args)
            except FaultSeen as seen:
                raise self.health.fault(seen) from seen.error
            finally:
                if conn is not None:
                    self._return_reader(conn)

    async def read_fresh(self, fn: Callable[..., T], *args: Any) -> T:
        """Run *fn(read_only_connection, *args)* on a reader opened for this
        call alone and closed after it.

        For ``doctor``'s ``PRAGMA quick_check``: FTS5's integrity check
        reuses the segment map its connection cached at its last keyword
        query, so on a pooled reader, after any write by the writer, it
        reports damage that is not there (SQLite 3.54: "fts5: corruption
        found reading blob ...", "checksum mismatch"); a new connection
        reads the map as it is. The call holds a reader slot like `read`, so
        `replace_index` never swaps the file under it.
        """
        async with self._read_limiter:
            if self._closed:
                raise Unavailable("the index is closed")
            generation = self.health.generation
            try:
                return await trio.to_thread.run_sync(
                    guarded, generation, _on_fresh_reader, self.config.index_path, fn, args
                )
            except FaultSeen as seen:
                raise self.health.fault(seen) from seen.error

    def _return_reader(self, conn: apsw.Connection) -> None:
        if self._closed:  # the engine closed while this read ran
            conn.close()
        else:
            self._readers.append(conn)

    # ------------------------------------------------------------ hooks for the parts

    def _retry_failed_work(self) -> None:
        """The index can be written again: retry what failed, not after back-off."""
        self.syncer.queue.retry_failed_now()
        if self.vectors is not None:
            self.vectors.retry_now()

    def wake_vectors(self) -> None:
        if self.vectors is not None:
            self.vectors.wake()

    def recheck_later(self, recheck: Mapping[str, float]) -> None:
        """Look at these transcripts again after their delays."""
        for key, delay in recheck.items():
            self.syncer.queue.notice([key], "session-idle", delay=delay)

    def indexing_busy(self) -> bool:
        """Files are being indexed, changes are due, or a rebuild runs: the
        keyword merger leaves the writer to them."""
        queue = self.syncer.queue.statistics()
        return bool(self.files.syncing or queue.running or queue.depth or self.rebuild_progress)

    def key_for_path(self, path: Path) -> str | None:
        return self.files.key_for_path(path)

    def already_indexed(self, key: str, path: Path) -> bool:
        return self.files.already_indexed(key, path)

    async def apply_keys(self, keys: Iterable[str], *, reason: str) -> dict[str, float]:
        logger.debug("indexing %s (%s)", sorted(keys), reason)
        return await self.files.apply_keys(keys)

    async def changed_keys(self) -> frozenset[str]:
        return await self.files.changed_keys()

    # ------------------------------------------------------------ operations

    async def search(self, query: SearchQuery, *, fresh: bool = False) -> SearchResult:
        """Answer *query* (`engine.search_ops`): with *fresh*, once every change
        already made to the files is indexed; with `max_tokens`, only what fits."""
        return await search_ops.search(self, query, fresh=fresh)

    async def query_vector(self, text: str) -> tuple[VectorQuery | None, str | None]:
        """The embedded query and its table, or None and why not (None: not degraded)."""
        if self.vectors is None or not text.strip():
            return None, self.vectors_off if text.strip() else None
        embedder = self.vectors.embedder
        identity, local = embedder.identity(), as_local(embedder)
        active = await self.read(active_table)
        if active is None or active.identity != identity:
            return None, f"vectors for {embedder.model} are still being built; keyword results only"
        key = (identity, text)
        cached = self._query_vectors.get(key)
        if cached is None:
            try:
                vector = await self.embed_query(text)
            except EmbeddingError as exc:
                return None, f"query embedding failed: {exc}"
            self.vectors.provider_answered()
            # The query's evidence baseline (embed.reference) is computed
            # once per distinct query, with its vector, not on every search.
            null = None
            if local is not None and not is_zero(vector):
                null = await trio.to_thread.run_sync(local.null_cosine, vector, text)
            cached = self._query_vectors[key] = (vector, null)
            if len(self._query_vectors) > QUERY_CACHE_SIZE:
                self._query_vectors.popitem(last=False)
        else:
            self._query_vectors.move_to_end(key)
        vector, null = cached
        if is_zero(vector):
            return None, None
        floor, ceiling = embedder.score_floor, embedder.score_ceiling
        width = local.evidence_width if local is not None else None
        return VectorQuery(active, to_blob(vector), floor, ceiling, null, width), None

    async def embed_query(self, text: str) -> Vectors:
        """*text* embedded as a search query, uncached, by the embedder in use
        (the fallback once the primary has failed for good).

        Bounded by ``search.query_timeout_s``: the thread is abandoned, not
        waited for, so a hung provider cannot hold up a search (or a doctor).

        Raises:
            EmbeddingError: the provider failed, took too long, or there is none.
        """
        if self.vectors is None:
            raise EmbeddingError(f"no embedder: {self.embedding_reason}", retryable=False)
        timeout = self.config.search.query_timeout_s
        with trio.move_on_after(timeout):
            return await trio.to_thread.run_sync(
                self.vectors.embedder.embed_query, text, abandon_on_cancel=True
            )
        raise EmbeddingError(
            f"no answer within {timeout:g} s (search.query_timeout_s)", retryable=True
        )

    async def get(
        self, path: str, from_line: int | None, lines: int | None, to_line: int | None = None
    ) -> GetResult:
        max_bytes = self.config.index.max_file_bytes
        return await trio.to_thread.run_sync(
            functools.partial(
                read_lines, self.policy, path, from_line, lines, max_bytes, to_line=to_line
            )
        )

    async def append(
        self, text: str, path: str | None, *, section: str | None = None
    ) -> AppendResult:
        """Append and index in one writer-lane call: searchable when this returns.

        Secrets are masked first, as `log` masks them (`log_gate.mask_secrets`),
        so neither the Markdown, the append journal nor the index ever holds
        one; the reply lists the masked forms. Unlike `log`, a password said
        in words does not refuse the text: `log` files one fact, which a
        masked password leaves worthless and which the agent can say again,
        while an append is the caller's own note, often many lines, that
        must not be lost for one secret in it; and `redact_secrets` masks
        every character of what it recognises, so what is kept reveals
        nothing. The stricter `contains_secret` judges no append: it also
        flags prose ("password: see the vault") it cannot mask, and would
        refuse a whole note for it.

        The block goes under the heading `memory.own_headings` picks
        (*section* for capture's ``## Captured``; ``## Notes`` for a plain
        note after that section). The lines and citation returned are the
        text's own: a heading added before it is written and journalled
        with it, but is not what the caller appended.
        """
        mp = target_path(self.policy, path, date.today())
        # Masking reads every character (about 1 s a megabyte): a long note
        # is a thread's work, a short one is quicker done here.
        if len(text) > _MASK_INLINE_CHARS:
            safe = await trio.to_thread.run_sync(mask_secrets, text)
        else:
            safe = mask_secrets(text)
        if safe.redactions:
            logger.info("append to %s: masked %d secret(s)", mp.key, len(safe.redactions))
        (appended, lead), indexed = await self.edit_markdown(
            append_under,
            mp,
            safe.text,
            self.config.index.max_file_bytes,
            self.known,
            section,
            paths=[mp],
            reason="append",
        )
        await self.journal_append(appended)
        start = appended.start_line + lead
        self.cited.note(mp.key, start, appended.end_line, appended.block.split("\n", lead)[-1])
        return AppendResult(
            path=mp.key,
            start_line=start,
            end_line=appended.end_line,
            created=appended.created,
            indexed=indexed,
            citation=citation(mp.key, start, appended.end_line),
            redactions=safe.redactions,
        )

    async def journal_append(self, appended: Appended) -> None:
        """Journal an acknowledged append (before the reply), so a whole-file
        rewrite based on an older copy cannot lose it (`engine.journal_keeper`).

        Every write that adds a block or a line to a memory file calls this:
        append, capture (through append), session_end's journal block, and
        log (appended to the daily file or inserted under a heading).
        """
        try:
            await trio.to_thread.run_sync(self.journal.record, appended, time.time())
        except OSError as exc:
            # The append itself is on disk; a full or failing state dir only
            # costs the protection against a later stale rewrite, so say so
            # rather than fail a write that happened (a retry would double it).
            logger.warning("append to %s not journalled: %s", appended.path.key, exc)

    async def edit_markdown(
        self,
        edit: Callable[..., T],
        *args: Any,
        paths: Sequence[MemoryPath],
        reason: str,
    ) -> tuple[T, bool]:
        """Run *edit(*args)*, a change to the Markdown, then index *paths*, in
        one writer-lane call; return its result and whether the files are
        indexed (searchable now).

        The Markdown is the truth: when only the indexing fails (a full disk, a
        damaged index) the edit stands, status reports the fault, the sync
        queue indexes the files once it can, and ``False`` tells the caller
        to say ``indexed=false`` rather than raise an error that would invite
        a retry, and so a second copy of the text.
        """
        (result, indexed, fault), wrote = await self._write_unchecked(
            self._edit_and_index, edit, args, paths
        )
        if fault is None:
            if wrote:
                self.health.write_succeeded()
            self.wake_vectors()
        else:
            self.health.fault(fault)
            self.syncer.queue.notice([mp.key for mp in paths], reason, delay=0)
        return result, indexed

    def _edit_and_index(
        self,
        conn: apsw.Connection,
        edit: Callable[..., T],
        args: tuple[Any, ...],
        paths: Sequence[MemoryPath],
    ) -> tuple[T, bool, FaultSeen | None]:
        result = edit(*args)
        grown = _growth(result)
        for mp in paths:
            if mp.key not in grown:  # rewritten or edited in place: summarise it anew
                self.known.forget(mp.key)
        try:
            outcomes = [
                index_file(
                    conn,
                    mp.key,
                    mp,
                    self.config.index,
                    memo=self.files.memo,
                    grown=grown.get(mp.key),
                )
                for mp in paths
            ]
        except Exception as exc:
            kind = index_fault(exc)
            if kind is None:
                raise
            return result, False, FaultSeen(kind, self.health.generation, exc)
        # "absent"/"removed": the edit left no such file, and the index agrees
        # (session_end names TASKS.md even when it had no tasks to write).
        indexed = all(o.kind != "skipped" for o in outcomes)
        if indexed:
            self.files.note_written(conn, [mp.key for mp in paths])
        return result, indexed, None

    async def sync(
        self, *, full: bool = False, reason: str = "explicit", progress: ProgressFn | None = None
    ) -> SyncResult:
        """Reconcile the index with the files on disk; `full` re-chunks everything.

        Damage found on the way is repaired first (a rebuild from the
        Markdown), then the pass runs again on the new index.
        """
        try:
            return await self.files.sync(full=full, reason=reason, progress=progress)
        except IndexDamaged:
            if not await self.health.wait_repaired():
                raise
        return await self.files.sync(full=full, reason=reason, progress=progress)

    async def rebuild_in_background(self) -> None:
        """Rebuild for new chunking; a failure is logged and shown, never raised."""
        try:
            await rebuild_index(self)
        except Exception as exc:
            logger.exception("index rebuild failed")
            self.rebuild_error = str(exc)

    async def recover_index(self) -> None:
        """Replace a damaged index with one rebuilt from the Markdown."""
        await rebuild_index(self, recovering=True)

    async def replace_index(
        self, build: Path, build_conn: apsw.Connection, *, keep_old: bool = False
    ) -> None:
        """Swap the live index for the complete one at *build* (writer *build_conn*).

        Holds the writer lane and every reader slot: requests wait a moment
        and then see the new index whole. Files changed while it was built
        are indexed into it first. With *keep_old* (a damaged index) the old
        file is moved aside, not overwritten, and `status` names it.
        """
        borrowers = [object() for _ in range(READERS)]
        async with self._write_limiter:
            for borrower in borrowers:
                await self._read_limiter.acquire_on_behalf_of(borrower)
            try:
                await trio.to_thread.run_sync(self.files.catch_up, build_conn)
                readers, self._readers = self._readers, []
                self._writer, moved = await trio.to_thread.run_sync(
                    swap_files, self._writer, readers, build_conn, build, self.config, keep_old
                )
                self.health.swapped()
                if moved is not None:
                    self.recovered_to = moved
            finally:
                for borrower in borrowers:
                    self._read_limiter.release_on_behalf_of(borrower)
        if self.vectors is not None:
            self.vectors.restart()

    async def aclose(self) -> None:
        """Close every connection; waits for a running write to commit first."""
        if not self._closed:
            await self.access.flush(self.write)
        async with self._write_limiter:
            if self._closed:
                return
            self._closed = True
            readers, self._readers = self._readers, []
            await trio.to_thread.run_sync(close_index, self._writer, readers)
        await self.rerank.aclose()


def _batcher(embedder: Embedder, settings: EmbeddingSettings) -> BatchEmbedder | None:
    """Batch-API indexing for an openai or gemini embedder (``[embedding.batch]``).

    Imported only then: a daemon on the local model never loads the remote code.
    """
    if embedder.name not in ("openai", "gemini"):
        return None
    from openmemoryd.embed.remote.batch_wire import make_batcher

    return make_batcher(embedder, settings.batch)


def _growth(result: object) -> dict[str, Grown]:
    """What an edit that appended knows of how its file grew, by file key,
    so indexing it need not hash the file again (`index.resume.Grown`)."""
    if not isinstance(result, Appended) or result.tail_len or not result.after_len:
        return {}
    return {
        result.path.key: Grown(
            result.before_len, result.before_hash, result.after_len, result.after_hash
        )
    }


def _on_fresh_reader(path: Path, fn: Callable[..., T], args: tuple[Any, ...]) -> T:
    """*fn(conn, *args)* on a read-only connection that lives for this call
    only (in one worker thread, so it is closed even if the caller is cancelled)."""
    conn = open_reader(path)
    try:
        return fn(conn, *args)
    finally:
        conn.close()
