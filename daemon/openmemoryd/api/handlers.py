"""One handler per RPC method: validate, call the engine, shape the reply.

Handlers raise `OmemdError` subclasses for every failure a user can cause;
the server turns them into `Error` replies. They never see frames, ids or
sockets, so they are tested by calling them directly.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, TypeVar

import trio

from omem_protocol import (
    FEATURES,
    METHODS,
    AppendParams,
    AppendResult,
    CaptureParams,
    CaptureResult,
    CompactCheckParams,
    CompactCheckResult,
    CompactParams,
    CompactResult,
    DoctorParams,
    DoctorResult,
    ExportParams,
    ExportResult,
    FlushCheckParams,
    FlushCheckResult,
    ForgetParams,
    ForgetResult,
    GetParams,
    GetResult,
    LogParams,
    LogResult,
    LogTurnsParams,
    LogTurnsResult,
    Method,
    Msg,
    PrimerParams,
    PrimerResult,
    RecallParams,
    RecallResult,
    ReplyBody,
    RequestBody,
    RestoreParams,
    RestoreResult,
    SearchParams,
    SearchResult,
    SessionEndParams,
    SessionEndResult,
    SessionStartParams,
    SessionStartResult,
    StatusParams,
    StatusResult,
    SyncParams,
    SyncResult,
    TasksParams,
    TasksResult,
)
from omem_protocol import methods as m
from openmemoryd.api.scope import scoped_engines, search_scoped
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
    workspace_status,
)
from openmemoryd.engine.cited import CitedLedger, note_reply
from openmemoryd.engine.compact_ops import compact, compact_check
from openmemoryd.engine.journal_keeper import restore
from openmemoryd.errors import NotFound
from openmemoryd.search import SearchQuery
from openmemoryd.search.budget import budget_limit, pack_answer

P = TypeVar("P", bound=Msg)
R = TypeVar("R", bound=Msg)

# What `Welcome` announces: every method of the table, then the extra features.
CAPABILITIES: Final = (*(method.name for method in METHODS), *FEATURES)


@dataclass(frozen=True, slots=True)
class Context:
    """What a handler works with: the API (daemon facts, other workspaces),
    the engine of the request's workspace, and where to report progress."""

    api: Api
    engine: Engine
    progress: ProgressFn


Handler = Callable[[Context, P], Awaitable[R]]
_HANDLERS: dict[type[Msg], Handler[Any, Any]] = {}


def handles(method: Method[P, R]) -> Callable[[Handler[P, R]], Handler[P, R]]:
    """Register the decorated coroutine as *method*'s handler; the type
    checker holds it to the method's params and result types."""

    def register(handler: Handler[P, R]) -> Handler[P, R]:
        assert method.params not in _HANDLERS, f"two handlers for {method.name}"
        _HANDLERS[method.params] = handler
        return handler

    return register


def unhandled_methods() -> list[str]:
    """Methods of the table with no handler (none, or the daemon refuses to start)."""
    return [method.name for method in METHODS if method.params not in _HANDLERS]


class Api:
    """The daemon's methods, over one engine per workspace."""

    def __init__(self, engines: Engine | Mapping[str, Engine], info: DaemonInfo) -> None:
        missing = unhandled_methods()
        if missing:
            raise RuntimeError(f"methods without a handler: {', '.join(missing)}")
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
        handler = _HANDLERS[type(body)]
        engine = self.engine_for(workspace)
        reply: ReplyBody = await handler(Context(self, engine, progress), body)
        # What each citation in the reply said, so `forget` can tell a stale one.
        note_reply(reply, lambda named: self._ledger(named, engine))
        return reply

    def _ledger(self, workspace: str | None, engine: Engine) -> CitedLedger | None:
        """The citation ledger of *workspace* (None: the request's *engine*)."""
        found = engine if workspace is None else self.engines.get(workspace)
        return None if found is None else found.cited


# ---------------------------------------------------------------- handlers


@handles(m.STATUS)
async def _status(ctx: Context, _: StatusParams) -> StatusResult:
    return await workspace_status(ctx.engine, ctx.api.info, ctx.api.workspaces)


@handles(m.SEARCH)
async def _search(ctx: Context, params: SearchParams) -> SearchResult:
    query = SearchQuery(
        text=params.query,
        limit=params.limit,
        min_score=params.min_score,
        sources=params.sources,
        explain=params.explain,
        agent=params.agent,
        max_tokens=params.max_tokens,
    )
    if params.scope in (None, "project"):
        return await ctx.engine.search(query, fresh=params.fresh)
    global_engine = ctx.api.engine_for(ctx.engine.config.search.global_workspace)
    engines = scoped_engines(ctx.engine, params.scope, global_engine)
    settings = ctx.engine.config.search
    limit = params.limit or settings.limit
    if params.max_tokens is not None and params.limit is None:
        limit = budget_limit(params.max_tokens, settings.limit)
    # Each workspace answers in full; the budget is spent once, on the merge.
    whole = dataclasses.replace(query, limit=limit, max_tokens=None)
    result = await search_scoped(engines, whole, fresh=params.fresh, limit=limit)
    if params.max_tokens is not None:  # a few ms of tokenising: off the event loop
        share = settings.budget_whole_share
        result = await trio.to_thread.run_sync(
            pack_answer, result, params.max_tokens, params.query, share
        )
    return result


@handles(m.GET)
async def _get(ctx: Context, params: GetParams) -> GetResult:
    return await ctx.engine.get(params.path, params.from_line, params.lines, params.to_line)


@handles(m.APPEND)
async def _append(ctx: Context, params: AppendParams) -> AppendResult:
    return await ctx.engine.append(params.text, params.path)


@handles(m.SYNC)
async def _sync(ctx: Context, params: SyncParams) -> SyncResult:
    return await ctx.engine.sync(full=params.full, reason="explicit", progress=ctx.progress)


@handles(m.LOG_TURNS)
async def _log_turns(ctx: Context, params: LogTurnsParams) -> LogTurnsResult:
    return await session_ops.log_turns(ctx.engine, params.agent, params.session_id, params.turns)


@handles(m.SESSION_START)
async def _session_start(ctx: Context, params: SessionStartParams) -> SessionStartResult:
    return await session_ops.session_start(ctx.engine, params.agent, params.session_id)


@handles(m.RECALL)
async def _recall(ctx: Context, params: RecallParams) -> RecallResult:
    return await agent_ops.recall(
        ctx.engine,
        params.query,
        limit=params.limit,
        min_score=params.min_score,
        sources=params.sources,
        agent=params.agent,
    )


@handles(m.CAPTURE)
async def _capture(ctx: Context, params: CaptureParams) -> CaptureResult:
    return await agent_ops.capture(ctx.engine, params.messages, params.max_captures)


@handles(m.FORGET)
async def _forget(ctx: Context, params: ForgetParams) -> ForgetResult:
    return await agent_ops.forget(
        ctx.engine, citation_=params.citation, text=params.text, query=params.query, all_=params.all
    )


@handles(m.RESTORE)
async def _restore(ctx: Context, params: RestoreParams) -> RestoreResult:
    return await restore(ctx.engine, params)


@handles(m.PRIMER)
async def _primer(ctx: Context, params: PrimerParams) -> PrimerResult:
    return await session_ops.primer(
        ctx.engine, budget=params.budget, private=params.private, today=params.date
    )


@handles(m.FLUSH_CHECK)
async def _flush_check(ctx: Context, params: FlushCheckParams) -> FlushCheckResult:
    return session_ops.flush_check(ctx.engine, params)


@handles(m.DOCTOR)
async def _doctor(ctx: Context, _: DoctorParams) -> DoctorResult:
    return await diagnose_engine(ctx.engine, ctx.api.info)


@handles(m.EXPORT)
async def _export(ctx: Context, params: ExportParams) -> ExportResult:
    return await archive_ops.export(ctx.engine, params.output)


@handles(m.SESSION_END)
async def _session_end(ctx: Context, params: SessionEndParams) -> SessionEndResult:
    return await task_ops.session_end(ctx.engine, params)


@handles(m.TASKS)
async def _tasks(ctx: Context, params: TasksParams) -> TasksResult:
    return await task_ops.tasks(ctx.engine, params)


@handles(m.LOG)
async def _log(ctx: Context, params: LogParams) -> LogResult:
    return await log_ops.log(ctx.engine, params)


@handles(m.COMPACT_CHECK)
async def _compact_check(ctx: Context, params: CompactCheckParams) -> CompactCheckResult:
    chat = ctx.engine.config.chat
    return compact_check(
        params.tokens, params.context_window, chat.compact_threshold, chat.compact_budget
    )


@handles(m.COMPACT)
async def _compact(ctx: Context, params: CompactParams) -> CompactResult:
    return await compact(ctx.engine, params, ctx.progress)
