"""What `status` reports, gathered from the engine's parts.

Kept apart from `Engine` so the engine stays a composition of its parts:
this module only reads them (scans, index totals, the syncer's and the
embedder's state) and words the problems it finds. It builds the wire
`StatusResult` itself, so a field of `status` is written once, here.
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

import trio

from omem_protocol import (
    PROTOCOL_VERSION,
    EmbeddingStatus,
    PendingSession,
    StatusResult,
    SyncStatus,
)
from openmemoryd.daemon_info import DaemonInfo
from openmemoryd.engine.counts import count_sources
from openmemoryd.engine.journal_keeper import missing_report
from openmemoryd.engine.recovery import IndexDamaged
from openmemoryd.store import file_notes, source_totals
from openmemoryd.workspace import scan_memory_files

if TYPE_CHECKING:
    from openmemoryd.engine.engine import Engine


async def workspace_status(
    engine: Engine, info: DaemonInfo | None = None, workspaces: tuple[str, ...] = ()
) -> StatusResult:
    """`status` of *engine*'s workspace: files, chunks, sync and embedding
    state, and every problem worth telling the user, each said once, in
    words; with the facts of the daemon serving it (*info*; an engine run
    without one, as in tools and tests, is this process with its configured
    socket) and the *workspaces* that daemon serves.

    The sync state is read before the counts: a caller that sees no sync
    running and a finished pass (a script waiting for the startup sync) must
    get counts that include that pass. Read after them, a pass finishing
    while the counts were read would be reported beside counts from before it.
    """
    info = info or DaemonInfo(socket=str(engine.config.socket))
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
    missing = await trio.to_thread.run_sync(_workspace_gone, engine.config.workspace)
    issues = [
        *info.config_issues,
        *missing,
        *scan.issues,
        *(f"{path}: {note}" for path, note in notes),
    ]
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
    if sync.watcher != "off" and not sync.watcher_healthy and not missing:
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
    embedding = await embedding_status(engine)
    if embedding.state == "off":
        issues.append(f"vector search is off: {embedding.reason}")
    elif embedding.last_error:
        issues.append(f"embedding provider error: {embedding.last_error}")
    return StatusResult(
        daemon_version=info.version,
        protocol=PROTOCOL_VERSION,
        pid=info.pid,
        uptime_s=round(time.monotonic() - info.started, 3),
        socket=info.socket,
        workspace=engine.config.name,
        workspaces=workspaces,
        workspace_path=str(engine.config.workspace),
        index_path=str(engine.config.index_path),
        index_bytes=_index_bytes(str(engine.config.index_path)),
        files_on_disk=sum(s.files_on_disk for s in sources),
        files_indexed=sum(t.files for t in totals),
        files_skipped=sum(t.skipped for t in totals),
        chunks=sum(t.chunks for t in totals),
        sources=sources,
        fts=True,
        vector=embedding.state in ("idle", "embedding") and embedding.embedded > 0,
        provider=embedding.provider,
        model=embedding.model,
        syncing=syncing,
        last_sync=last_sync,
        issues=tuple(issues),
        embedding=embedding,
        rebuild=engine.rebuild_progress,
        sync=SyncStatus(
            queue_depth=sync.queue_depth,
            running=sync.running,
            last_reason=sync.last_reason,
            last_finished_at=sync.last_finished_at,
            last_error=sync.last_error,
            watcher=sync.watcher,
            watcher_healthy=sync.watcher_healthy,
            watcher_last_event_at=sync.watcher_last_event_at,
            watcher_restarts=sync.watcher_restarts,
            watcher_error=sync.watcher_error,
            pending_sessions=tuple(
                PendingSession(path=path, pending_bytes=pending)
                for path, pending in sorted(engine.files.waiting.items())
            ),
        ),
        http=info.http,
        keyword_index=engine.keyword_merger.status(),
        rerank=engine.rerank.status(engine.config.search.rerank),
    )


def _workspace_gone(workspace: Path) -> list[str]:
    """The issue of a workspace deleted or moved under the daemon, or none.

    Said first and on its own: the watcher is not healthy then, but for
    this reason, which "the file watcher is not working" would hide; the
    counts (0 on disk) only follow from it.
    """
    if workspace.is_dir():
        return []
    return [
        f"workspace missing: {workspace} (deleted or moved?); nothing can be written "
        "to memory until it is back. Restore it and the daemon watches and re-indexes "
        "it at once, or `openmemoryd init` creates an empty workspace there"
    ]


async def embedding_status(engine: Engine) -> EmbeddingStatus:
    """Where vector indexing stands (`EmbeddingStatus`)."""
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
