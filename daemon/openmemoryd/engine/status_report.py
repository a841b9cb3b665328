"""What `status` reports about a workspace, gathered from the engine's parts.

Kept apart from `Engine` so the engine stays a composition of its parts:
this module only reads them (scans, index totals, the syncer's and the
embedder's state) and words the problems it finds.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

import trio

from omem_protocol import (
    EmbeddingStatus,
    KeywordIndexStatus,
    LastSync,
    RerankStatus,
    SourceCounts,
)
from openmemoryd.engine.counts import count_sources
from openmemoryd.engine.journal_keeper import missing_report
from openmemoryd.engine.recovery import IndexDamaged
from openmemoryd.engine.syncing import SyncerStatistics
from openmemoryd.store import file_notes, source_totals
from openmemoryd.workspace import scan_memory_files

if TYPE_CHECKING:
    from openmemoryd.engine.engine import Engine


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
    sync: SyncerStatistics
    sessions_waiting: dict[str, int]
    keyword_index: KeywordIndexStatus
    rerank: RerankStatus


async def workspace_status(engine: Engine) -> EngineStatus:
    """The workspace part of `status`: files, chunks, sync and embedding state, and
    every problem worth telling the user, each said once, in words.

    The sync state is read before the counts: a caller that sees no sync
    running and a finished pass (a script waiting for the startup sync) must
    get counts that include that pass. Read after them, a pass finishing
    while the counts were read would be reported beside counts from before it.
    """
    last_sync = engine.files.last_sync
    syncing = engine.files.syncing or engine.syncer.statistics().running
    scan = await trio.to_thread.run_sync(scan_memory_files, engine.policy)
    sessions_on_disk = (
        await trio.to_thread.run_sync(engine.sessions.scan) if engine.sessions is not None else {}
    )
    try:
        totals = await engine.read(source_totals)
        notes = await engine.read(file_notes)
    except IndexDamaged:  # said below, in the issues
        totals, notes = [], []
    sources = count_sources(scan, sessions_on_disk, totals)
    sync = engine.syncer.statistics()
    issues = [*scan.issues, *(f"{path}: {note}" for path, note in notes)]
    if engine.vector_error:
        issues.append(engine.vector_error)
    if engine.recovered_to:
        issues.append(
            f"the index was unreadable and was rebuilt; the old file is {engine.recovered_to}"
        )
    if last_sync is not None and last_sync.error:
        issues.append(f"last sync failed: {last_sync.error}")
    if sync.last_error:
        issues.append(f"indexing changes failed (retrying): {sync.last_error}")
    if sync.watcher != "off" and not sync.watcher_healthy:
        issues.append(
            f"the file watcher is not working ({sync.watcher_error or 'starting'}); "
            "changes are found by the periodic check"
        )
    if engine.rebuild_error:
        issues.append(f"index rebuild failed (will retry on restart): {engine.rebuild_error}")
    issues.extend(engine.health.issues())
    issues.extend(missing_report(engine))
    rerank_issue = engine.rerank.issue(engine.config.search.rerank)
    if rerank_issue:
        issues.append(rerank_issue)
    embedding = await _embedding_status(engine)
    if embedding.state == "off":
        issues.append(f"vector search is off: {embedding.reason}")
    elif embedding.last_error:
        issues.append(f"embedding provider error: {embedding.last_error}")
    return EngineStatus(
        workspace_path=str(engine.config.workspace),
        index_path=str(engine.config.index_path),
        index_bytes=_index_bytes(str(engine.config.index_path)),
        files_on_disk=sum(s.files_on_disk for s in sources),
        files_indexed=sum(t.files for t in totals),
        chunks=sum(t.chunks for t in totals),
        sources=sources,
        vector=embedding.state in ("idle", "embedding") and embedding.embedded > 0,
        provider=embedding.provider,
        model=embedding.model,
        syncing=syncing,
        last_sync=last_sync,
        issues=tuple(issues),
        embedding=embedding,
        rebuild=engine.rebuild_progress,
        sync=sync,
        sessions_waiting=dict(engine.files.waiting),
        keyword_index=engine.keyword_merger.status(),
        rerank=engine.rerank.status(engine.config.search.rerank),
    )


async def _embedding_status(engine: Engine) -> EmbeddingStatus:
    if engine.vectors is None:
        return EmbeddingStatus(
            state="off",
            provider="none",
            model=None,
            dims=None,
            embedded=0,
            total=0,
            reason=engine.embedding_reason,
        )
    try:
        return await engine.vectors.status()
    except IndexDamaged:
        embedder = engine.vectors.embedder
        return EmbeddingStatus(
            state="rebuilding",
            provider=embedder.name,
            model=embedder.model,
            dims=embedder.dims,
            embedded=0,
            total=0,
        )


def _index_bytes(path: str) -> int:
    total = 0
    for suffix in ("", "-wal"):
        with contextlib.suppress(OSError):
            total += os.stat(path + suffix).st_size
    return total
