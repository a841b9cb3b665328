"""One handler per RPC method: validate, call the engine, shape the reply.

Handlers raise `OmemdError` subclasses for every failure a user can cause;
the server turns them into `Error` replies. They never see frames, ids or
sockets, so they are tested by calling them directly.
"""

from __future__ import annotations

import time
from collections.abc import Mapping

from omem_protocol import (
    PROTOCOL_VERSION,
    AppendParams,
    AppendResult,
    CaptureParams,
    CompactParams,
    DoctorParams,
    ExportParams,
    FlushCheckParams,
    ForgetParams,
    GetParams,
    GetResult,
    LogParams,
    LogTurnsParams,
    PendingSession,
    PrimerParams,
    RecallParams,
    ReplyBody,
    RequestBody,
    RestoreParams,
    SearchParams,
    SearchResult,
    SessionEndParams,
    SessionStartParams,
    StatusParams,
    StatusResult,
    SyncParams,
    SyncResult,
    SyncStatus,
    TasksParams,
)
from openmemoryd.daemon_info import DaemonInfo
from openmemoryd.doctor import diagnose_engine
from openmemoryd.engine import (
    Engine,
    ProgressFn,
    agent_ops,
    archive_ops,
    log_ops,
    session_ops,
    task_ops,
)
from openmemoryd.engine.compact_ops import compact
from openmemoryd.engine.journal_keeper import restore
from openmemoryd.errors import NotFound
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
    "session_end",
    "tasks",
    "log",
    "compact",
)


class Api:
    """The daemon's methods, over one engine per workspace."""

    def __init__(self, engines: Engine | Mapping[str, Engine], info: DaemonInfo) -> None:
        self.engines = dict(engines) if isinstance(engines, Mapping) else {"default": engines}
        self.info = info
        self.workspaces = tuple(self.engines)

    @property
    def engine(self) -> Engine:
        """The default workspace's engine."""
        return self.engines["default"]

    def engine_for(self, workspace: str | None) -> Engine:
        """The engine of *workspace* (None: ``default``), or why there is none."""
        try:
            return self.engines[workspace or "default"]
        except KeyError:
            served = ", ".join(self.workspaces)
            raise NotFound(
                f"no workspace named {workspace!r}; this daemon serves: {served}"
            ) from None

    async def dispatch(
        self, body: RequestBody, progress: ProgressFn, workspace: str | None = None
    ) -> ReplyBody:
        """Run the method *body* names in *workspace*; *progress* reports interim progress."""
        engine = self.engine_for(workspace)
        match body:
            case StatusParams():
                return await self.status(engine, body)
            case SearchParams():
                return await self.search(engine, body)
            case GetParams():
                return await self.get(engine, body)
            case AppendParams():
                return await self.append(engine, body)
            case SyncParams():
                return await self.sync(engine, body, progress)
            case LogTurnsParams():
                return await engine.log_turns(body.agent, body.session_id, body.turns)
            case SessionStartParams():
                return await engine.session_start(body.agent, body.session_id)
            case RecallParams():
                return await agent_ops.recall(
                    engine,
                    body.query,
                    limit=body.limit,
                    min_score=body.min_score,
                    sources=body.sources,
                    agent=body.agent,
                )
            case CaptureParams():
                return await agent_ops.capture(engine, body.messages, body.max_captures)
            case ForgetParams():
                return await agent_ops.forget(
                    engine,
                    citation_=body.citation,
                    text=body.text,
                    query=body.query,
                    all_=body.all,
                )
            case PrimerParams():
                return await session_ops.primer(
                    engine, budget=body.budget, private=body.private, today=body.date
                )
            case FlushCheckParams():
                return session_ops.flush_check(engine, body)
            case DoctorParams():
                return await diagnose_engine(engine, self.info)
            case ExportParams():
                return await archive_ops.export(engine, body.output)
            case SessionEndParams():
                return await task_ops.session_end(engine, body)
            case TasksParams():
                return await task_ops.tasks(engine, body)
            case LogParams():
                return await log_ops.log(engine, body)
            case CompactParams():
                return await compact(engine, body, progress)
            case RestoreParams():
                return await restore(engine, body)

    async def status(self, engine: Engine, _: StatusParams) -> StatusResult:
        ws = await engine.status()
        return StatusResult(
            daemon_version=self.info.version,
            protocol=PROTOCOL_VERSION,
            pid=self.info.pid,
            uptime_s=round(time.monotonic() - self.info.started, 3),
            socket=self.info.socket,
            workspace=engine.config.name,
            workspaces=self.workspaces,
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
            http=self.info.http,
        )

    async def search(self, engine: Engine, params: SearchParams) -> SearchResult:
        query = SearchQuery(
            text=params.query,
            limit=params.limit,
            min_score=params.min_score,
            sources=params.sources,
            explain=params.explain,
            agent=params.agent,
        )
        return await engine.search(query, fresh=params.fresh)

    async def get(self, engine: Engine, params: GetParams) -> GetResult:
        return await engine.get(params.path, params.from_line, params.lines)

    async def append(self, engine: Engine, params: AppendParams) -> AppendResult:
        return await engine.append(params.text, params.path)

    async def sync(self, engine: Engine, params: SyncParams, progress: ProgressFn) -> SyncResult:
        return await engine.sync(full=params.full, reason="explicit", progress=progress)
