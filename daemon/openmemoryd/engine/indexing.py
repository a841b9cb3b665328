"""Bringing the index in line with the files: whole passes and single keys.

Two sources are indexed: Markdown memory (re-chunked whole when its content
hash changes) and session transcripts (indexed incrementally, see
`index.sessions`). A *pass* compares everything on disk with the index
(startup, interval, explicit ``sync``); *keys* are the files the watcher or a
quick check named. Work happens in the writer lane in small batches, so
appends and searches never wait long behind a big pass.

A transcript whose new lines are not worth indexing yet is *waiting*: the
sync queue is asked to look at it again when its idle time has passed.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import apsw
import trio

from omem_protocol import LastSync, SyncResult
from openmemoryd.engine.hosts import IndexHost, ProgressFn
from openmemoryd.engine.recovery import index_fault
from openmemoryd.errors import OmemdError
from openmemoryd.index.indexer import FileOutcome, index_file
from openmemoryd.index.resume import ChunkMemo
from openmemoryd.index.sessions import SessionOutcome, index_session
from openmemoryd.store import delete_file, indexed_file, indexed_files
from openmemoryd.workspace import (
    SESSION_SUFFIX,
    MemoryPath,
    Scan,
    SessionFile,
    scan_memory_files,
)

logger = logging.getLogger("openmemoryd.engine")

BATCH: Final = 32


class FileSync:
    """Memory files and transcripts → index, for one engine."""

    def __init__(self, engine: IndexHost) -> None:
        self._engine = engine
        self._lock = trio.Lock()
        self._next: _SyncJob | None = None  # the pass that new sync requests join
        self.syncing = False
        self.last_sync: LastSync | None = None
        self.waiting: dict[str, int] = {}  # transcripts with unindexed lines: bytes pending
        # Where each file's last chunking on the live index can resume, so a
        # file that only grew is re-chunked from its end (`index.resume`).
        # Writer lane only; an index being built never uses it.
        self.memo = ChunkMemo()
        # (mtime_ns, size) each file had when the daemon's own write to it
        # was indexed in the same writer-lane call (`note_written`).
        self._written: dict[str, tuple[int, int]] = {}

    # ------------------------------------------------------------ own writes

    def note_written(self, conn: apsw.Connection, keys: Iterable[str]) -> None:
        """In the writer lane, right after the daemon wrote and indexed *keys*:
        remember the file state the index recorded for each."""
        for key in keys:
            known = indexed_file(conn, key)
            if known is None:
                self._written.pop(key, None)
            else:
                self._written[key] = (known.mtime_ns, known.size)

    def already_indexed(self, key: str, path: Path) -> bool:
        """Whether the watcher's event for *key* is about the daemon's own
        write, indexed before its reply: the file is as that write left it.

        An append is searchable when it returns, yet the event its write
        raises would sit in the sync queue for the debounce and make every
        search in that time say the index is being updated, which agents
        that append and then search always met. A change by anyone else
        moves the file's mtime or size, and is queued as before.
        """
        written = self._written.get(key)
        if written is None:
            return False
        try:
            st = path.stat()
        except OSError:
            st = None
        if st is not None and (st.st_mtime_ns, st.st_size) == written:
            return True
        self._written.pop(key, None)
        return False

    # ------------------------------------------------------------ passes

    async def sync(
        self, *, full: bool = False, reason: str = "explicit", progress: ProgressFn | None = None
    ) -> SyncResult:
        """Reconcile the index with everything on disk; `full` re-chunks
        every Markdown file. An explicit sync also indexes every transcript's
        pending lines, whatever the thresholds say.

        Requests coalesce: every request made before a pass starts scanning
        shares that pass (and its result), so many clients asking at once
        cost one pass after the running one, not one each. A request made
        while a pass runs waits for the next, since the running one may
        have scanned before the request's own changes.
        """
        job = self._next
        if job is None:
            job = self._next = _SyncJob()
        job.join(full=full, reason=reason, progress=progress)
        try:
            while not job.done:
                if job.claimed:
                    await job.changed.wait()
                    continue
                job.claimed = True
                try:
                    async with self._lock:
                        if self._next is job:
                            self._next = None  # later requests form the next pass
                        await self._run(job)
                finally:
                    if not job.done:
                        job.claimed = False  # cancelled: a request still waiting takes over
                    job.notify()
        finally:
            if progress is not None:
                job.progress.remove(progress)
        if job.error is not None:
            raise job.error
        assert job.result is not None
        return job.result

    async def _run(self, job: _SyncJob) -> None:
        """One pass for *job*; its outcome is stored in it, never raised."""
        reason = ", ".join(sorted(job.reasons))
        self.syncing = True
        started = time.perf_counter()
        try:
            result = await self._pass(job.full, job.force_sessions, job.report)
        except Exception as exc:
            took = (time.perf_counter() - started) * 1000
            self.last_sync = LastSync(
                finished_at=time.time(), reason=reason, took_ms=took, error=str(exc)
            )
            job.error, job.done = exc, True
            return
        finally:
            self.syncing = False
        self.last_sync = LastSync(finished_at=time.time(), reason=reason, took_ms=result.took_ms)
        if result.added or result.updated:
            self._engine.wake_vectors()
        logger.info(
            "sync (%s): %d scanned, %d added, %d updated, %d removed in %.0f ms for %d request(s)",
            reason,
            result.scanned,
            result.added,
            result.updated,
            result.removed,
            result.took_ms,
            job.requests,
        )
        job.result, job.done = result, True

    async def _pass(
        self, full: bool, force_sessions: bool, progress: ProgressFn | None
    ) -> SyncResult:
        engine = self._engine
        started = time.perf_counter()
        scan = await trio.to_thread.run_sync(scan_memory_files, engine.policy)
        known = await engine.read(indexed_files, "memory")
        keys = sorted(scan.files) + sorted(set(known) - set(scan.files))
        sessions = await self._session_work()
        total = len(keys) + len(sessions)
        counts: Counter[str] = Counter()
        issues = list(scan.issues)
        chunks = 0
        done = 0
        if progress is not None:
            await progress(0, total, "index")
        for offset in range(0, len(keys), BATCH):
            batch = keys[offset : offset + BATCH]
            for outcome in await engine.write(self._index_live, batch, scan, full):
                counts[outcome.kind] += 1
                chunks += outcome.chunks
                if outcome.issue and outcome.kind == "skipped":
                    issues.append(f"{outcome.key}: {outcome.issue}")
            done += len(batch)
            if progress is not None:
                await progress(done, total, "index")
        recheck: dict[str, float] = {}
        for offset in range(0, len(sessions), BATCH):
            batch_sessions = sessions[offset : offset + BATCH]
            outcomes = await engine.write(self.index_sessions, batch_sessions, force_sessions)
            for session_outcome in outcomes:
                counts[_session_count(session_outcome)] += 1
                chunks += session_outcome.chunks
                if session_outcome.recheck_in is not None:
                    recheck[session_outcome.key] = session_outcome.recheck_in
            self._note_waiting(outcomes)
            done += len(batch_sessions)
            if progress is not None:
                await progress(done, total, "index")
        engine.recheck_later(recheck)
        return SyncResult(
            scanned=len(scan.files) + len(sessions),
            added=counts["added"],
            updated=counts["updated"],
            removed=counts["removed"],
            unchanged=counts["unchanged"] + counts["waiting"],
            skipped=counts["skipped"],
            chunks=chunks,
            took_ms=round((time.perf_counter() - started) * 1000, 3),
            issues=tuple(issues),
            sessions_waiting=counts["waiting"],
        )

    async def _session_work(self) -> list[SessionFile | str]:
        """Transcripts on disk, plus indexed ones that are gone (by key)."""
        locator = self._engine.sessions
        if locator is None:
            return []
        on_disk = await trio.to_thread.run_sync(locator.scan)
        known = await self._engine.read(indexed_files, "sessions")
        return _sessions_to_index(on_disk, known)

    # ------------------------------------------------------------ batches (writer lane)

    def index_batch(
        self,
        conn: apsw.Connection,
        keys: list[str],
        scan: Scan,
        full: bool,
        memo: ChunkMemo | None = None,
    ) -> list[FileOutcome]:
        """Index the Markdown files *keys* into *conn* (live or being built;
        *memo* only for the live index)."""
        outcomes = []
        settings = self._engine.config.index
        for key in keys:
            disk = scan.files.get(key)
            mp = disk.path if disk is not None else self._resolve_or_none(key)
            try:
                outcomes.append(index_file(conn, key, mp, settings, force=full, memo=memo))
            except apsw.Error as exc:
                if index_fault(exc):  # the index itself failed, not this file
                    raise
                logger.error("indexing %s failed: %s", key, exc)
                outcomes.append(FileOutcome(key, "skipped", issue=f"index error: {exc}"))
        return outcomes

    def _index_live(
        self, conn: apsw.Connection, keys: list[str], scan: Scan, full: bool
    ) -> list[FileOutcome]:
        return self.index_batch(conn, keys, scan, full, self.memo)

    def index_sessions(
        self, conn: apsw.Connection, sessions: Sequence[SessionFile | str], force: bool
    ) -> list[SessionOutcome]:
        """Index transcripts (a bare key: one that no root holds any more)."""
        config = self._engine.config
        now = time.time()
        outcomes = []
        for session in sessions:
            if isinstance(session, str):
                removed = delete_file(conn, session)
                outcomes.append(SessionOutcome(session, "removed" if removed else "unchanged"))
                continue
            try:
                outcomes.append(
                    index_session(
                        conn, session, config.index, config.sessions, force=force, now=now
                    )
                )
            except (apsw.Error, OSError) as exc:
                if index_fault(exc):
                    raise
                logger.error("indexing transcript %s failed: %s", session.key, exc)
                outcomes.append(SessionOutcome(session.key, "unchanged"))
        return outcomes

    def catch_up(self, conn: apsw.Connection) -> None:
        """Bring *conn* (an index being built) up to date with every file now,
        transcripts included (no thresholds: nothing may be missing)."""
        engine = self._engine
        scan = scan_memory_files(engine.policy)
        known = indexed_files(conn, "memory")
        self.index_batch(
            conn, sorted(scan.files) + sorted(set(known) - set(scan.files)), scan, False
        )
        if engine.sessions is not None:
            known_sessions = indexed_files(conn, "sessions")
            work = _sessions_to_index(engine.sessions.scan(), known_sessions)
            self.index_sessions(conn, work, True)

    # ------------------------------------------------------------ single keys

    async def apply_keys(self, keys: Iterable[str], *, force: bool = False) -> dict[str, float]:
        """Index the named files now; return transcripts to look at again
        (key → seconds until they have been idle long enough)."""
        engine = self._engine
        memory = sorted(k for k in keys if not k.endswith(SESSION_SUFFIX))
        sessions = [self._session_or_key(k) for k in sorted(keys) if k.endswith(SESSION_SUFFIX)]
        changed = False
        for offset in range(0, len(memory), BATCH):
            outcomes = await engine.write(
                self._index_live, memory[offset : offset + BATCH], Scan(), False
            )
            changed |= any(o.kind in ("added", "updated") for o in outcomes)
        recheck: dict[str, float] = {}
        for offset in range(0, len(sessions), BATCH):
            session_outcomes = await engine.write(
                self.index_sessions, sessions[offset : offset + BATCH], force
            )
            self._note_waiting(session_outcomes)
            for outcome in session_outcomes:
                changed |= outcome.chunks > 0
                if outcome.recheck_in is not None:
                    recheck[outcome.key] = outcome.recheck_in
        if changed:
            engine.wake_vectors()
        return recheck

    async def changed_keys(self) -> frozenset[str]:
        """Files whose size or mtime differ from what the index recorded,
        new ones, and indexed ones that are gone: a cheap check (no reading)."""
        stats = await trio.to_thread.run_sync(self._disk_stats)
        known = await self._engine.read(indexed_files, None)
        changed = {
            key
            for key, stat in stats.items()
            if key not in known or stat != (known[key].mtime_ns, known[key].size)
        }
        return frozenset(changed | (set(known) - set(stats)))

    def _disk_stats(self) -> dict[str, tuple[int, int]]:
        """(mtime_ns, size) of every file we index, by key."""
        engine = self._engine
        scan = scan_memory_files(engine.policy)
        stats = {key: (disk.mtime_ns, disk.size) for key, disk in scan.files.items()}
        if engine.sessions is not None:
            for key, session in engine.sessions.scan().items():
                stat = _stat(session.path)
                if stat is not None:
                    stats[key] = stat
        return stats

    def key_for_path(self, path: Path) -> str | None:
        """The index key of a file the watcher reported, if it is one we index."""
        engine = self._engine
        if path.suffix == SESSION_SUFFIX and engine.sessions is not None:
            session = engine.sessions.classify(path)
            return session.key if session is not None else None
        if path.suffix == ".md":
            mp = self._resolve_or_none(str(path))
            return mp.key if mp is not None else None
        return None

    def _session_or_key(self, key: str) -> SessionFile | str:
        locator = self._engine.sessions
        found = locator.resolve_key(key) if locator is not None else None
        return found if found is not None else key

    def _resolve_or_none(self, key: str) -> MemoryPath | None:
        try:
            return self._engine.policy.resolve(key)
        except OmemdError:
            return None

    def _note_waiting(self, outcomes: Iterable[SessionOutcome]) -> None:
        for outcome in outcomes:
            if outcome.pending_bytes and outcome.kind != "removed":
                self.waiting[outcome.key] = outcome.pending_bytes
            else:
                self.waiting.pop(outcome.key, None)


@dataclass(eq=False)
class _SyncJob:
    """One sync pass, shared by every request that joined before it started."""

    full: bool = False
    force_sessions: bool = False
    reasons: set[str] = field(default_factory=set)
    progress: list[ProgressFn] = field(default_factory=list)
    requests: int = 0
    claimed: bool = False  # a request is running it (or waiting for the lock to)
    done: bool = False
    result: SyncResult | None = None
    error: Exception | None = None
    changed: trio.Event = field(default_factory=trio.Event)

    def join(self, *, full: bool, reason: str, progress: ProgressFn | None) -> None:
        self.full |= full  # a full pass does everything a quick one does
        self.force_sessions |= reason == "explicit"
        self.reasons.add(reason)
        self.requests += 1
        if progress is not None:
            self.progress.append(progress)

    def notify(self) -> None:
        self.changed.set()
        self.changed = trio.Event()

    async def report(self, done: int, total: int, phase: str) -> None:
        for progress in list(self.progress):
            await progress(done, total, phase)


def _sessions_to_index(
    on_disk: Mapping[str, SessionFile], indexed: Iterable[str]
) -> list[SessionFile | str]:
    """Transcripts on disk, then (as bare keys) indexed ones that are gone."""
    work: list[SessionFile | str] = [on_disk[key] for key in sorted(on_disk)]
    work.extend(sorted(set(indexed) - set(on_disk)))
    return work


def _session_count(outcome: SessionOutcome) -> str:
    """How a transcript's outcome counts in a `SyncResult`."""
    if outcome.kind in ("indexed", "restarted"):
        return "updated"
    return outcome.kind


def _stat(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat(follow_symlinks=False)
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size
