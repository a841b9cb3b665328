"""One handler per RPC method: validate, call the engine, shape the reply.

Handlers raise `OmemdError` subclasses for every failure a user can cause;
the server turns them into `Error` replies. They never see frames, ids or
sockets, so they are tested by calling them directly.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field

from omem_protocol import (
    PROTOCOL_VERSION,
    AppendParams,
    AppendResult,
    CaptureParams,
    DoctorParams,
    ExportParams,
    FlushCheckParams,
    ForgetParams,
    GetParams,
    GetResult,
    LogTurnsParams,
    PendingSession,
    PrimerParams,
    RecallParams,
    ReplyBody,
    RequestBody,
    SearchParams,
    SearchResult,
    SessionStartParams,
    StatusParams,
    StatusResult,
    SyncParams,
    SyncResult,
    SyncStatus,
    __version__,
)
from openmemoryd.doctor import diagnose_engine
from openmemoryd.engine import Engine, ProgressFn, agent_ops, archive_ops, session_ops
from openmemoryd.search import SearchQuery

CAPABILITIES = (
    "status",
    "search",
    "get",
    "append",
    "sync",
    "progress",
    "log_turns",
    "session_start",
    "recall",
    "capture",
    "forget",
    "primer",
    "flush_check",
    "doctor",
    "export",
    "search.fresh",
    "search.explain",
)


@dataclass(frozen=True, slots=True)
class DaemonInfo:
    """Facts about this daemon process that `status` reports."""

    socket: str
    pid: int = field(default_factory=os.getpid)
    started: float = field(default_factory=time.monotonic)
    version: str = __version__


class Api:
    """The daemon's methods, bound to one engine."""

    def __init__(self, engine: Engine, info: DaemonInfo) -> None:
        self.engine = engine
        self.info = info
        self.workspaces = ("default",)

    async def dispatch(self, body: RequestBody, progress: ProgressFn) -> ReplyBody:
        """Run the method *body* names; *progress* reports interim progress."""
        match body:
            case StatusParams():
                return await self.status(body)
            case SearchParams():
                return await self.search(body)
            case GetParams():
                return await self.get(body)
            case AppendParams():
                return await self.append(body)
            case SyncParams():
                return await self.sync(body, progress)
            case LogTurnsParams():
                return await self.engine.log_turns(body.agent, body.session_id, body.turns)
            case SessionStartParams():
                return await self.engine.session_start(body.agent, body.session_id)
            case RecallParams():
                return await agent_ops.recall(
                    self.engine,
                    body.query,
                    limit=body.limit,
                    min_score=body.min_score,
                    sources=body.sources,
                    agent=body.agent,
                )
            case CaptureParams():
                return await agent_ops.capture(self.engine, body.messages, body.max_captures)
            case ForgetParams():
                return await agent_ops.forget(
                    self.engine,
                    citation_=body.citation,
                    text=body.text,
                    query=body.query,
                    all_=body.all,
                )
            case PrimerParams():
                return await session_ops.primer(
                    self.engine, budget=body.budget, private=body.private, today=body.date
                )
            case FlushCheckParams():
                return session_ops.flush_check(self.engine, body)
            case DoctorParams():
                return await diagnose_engine(self.engine, self.info)
            case ExportParams():
                return await archive_ops.export(self.engine, body.output)

    async def status(self, _: StatusParams) -> StatusResult:
        ws = await self.engine.status()
        return StatusResult(
            daemon_version=self.info.version,
            protocol=PROTOCOL_VERSION,
            pid=self.info.pid,
            uptime_s=round(time.monotonic() - self.info.started, 3),
            socket=self.info.socket,
            workspace=self.workspaces[0],
            workspace_path=ws.workspace_path,
            index_path=ws.index_path,
            index_bytes=ws.index_bytes,
            files_on_disk=ws.files_on_disk,
            files_indexed=ws.files_indexed,
            chunks=ws.chunks,
            sources=ws.sources,
            fts=True,
            vector=ws.vector,
            provider=ws.provider,
            model=ws.model,
            syncing=ws.syncing,
            last_sync=ws.last_sync,
            issues=ws.issues,
            embedding=ws.embedding,
            rebuild=ws.rebuild,
            sync=SyncStatus(
                queue_depth=ws.sync.queue_depth,
                running=ws.sync.running,
                last_reason=ws.sync.last_reason,
                last_finished_at=ws.sync.last_finished_at,
                last_error=ws.sync.last_error,
                watcher=ws.sync.watcher,
                watcher_healthy=ws.sync.watcher_healthy,
                watcher_last_event_at=ws.sync.watcher_last_event_at,
                watcher_restarts=ws.sync.watcher_restarts,
                watcher_error=ws.sync.watcher_error,
                pending_sessions=tuple(
                    PendingSession(path=path, pending_bytes=pending)
                    for path, pending in sorted(ws.sessions_waiting.items())
                ),
            ),
        )

    async def search(self, params: SearchParams) -> SearchResult:
        query = SearchQuery(
            text=params.query,
            limit=params.limit,
            min_score=params.min_score,
            sources=params.sources,
            explain=params.explain,
            agent=params.agent,
        )
        return await self.engine.search(query, fresh=params.fresh)

    async def get(self, params: GetParams) -> GetResult:
        return await self.engine.get(params.path, params.from_line, params.lines)

    async def append(self, params: AppendParams) -> AppendResult:
        return await self.engine.append(params.text, params.path)

    async def sync(self, params: SyncParams, progress: ProgressFn) -> SyncResult:
        return await self.engine.sync(full=params.full, reason="explicit", progress=progress)
