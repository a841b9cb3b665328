"""Every client method, written once: friendly arguments in, a `Call` out.

`Client` and `AsyncClient` bind these functions (see `_binding`), so both
clients take the same arguments, document them in the same words and send
the same params. The result type of each comes from the method table. Only
argument conversion happens here (sequences to tuples, mappings to wire
structs, dates to ISO strings); the daemon validates everything else and
answers ``bad_request`` with the field's name.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from datetime import date
from typing import Literal

from omem_client._binding import Call, ProgressCallback
from omem_client._errors import BadRequestError
from omem_protocol import (
    AppendParams,
    AppendResult,
    CaptureMessage,
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
    PrimerParams,
    PrimerResult,
    RecallParams,
    RecallResult,
    RestoreParams,
    RestoreResult,
    SearchParams,
    SearchResult,
    SearchScope,
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
    Turn,
)
from omem_protocol import methods as m

TaskAction = Literal["list", "add", "done", "reopen", "remove"]
TaskStatus = Literal["open", "done", "all"]


def status() -> Call[StatusResult]:
    """The daemon's and the workspace's state."""
    return Call(m.STATUS, StatusParams())


def search(
    query: str,
    *,
    limit: int | None = None,
    min_score: float | None = None,
    sources: Sequence[str] | None = None,
    agent: str | None = None,
    fresh: bool = False,
    explain: bool = False,
    max_tokens: int | None = None,
    scope: SearchScope | None = None,
) -> Call[SearchResult]:
    """Search memory; `limit` and `min_score` default to the daemon's config.

    `sources` (``memory``, ``sessions``) and `agent` narrow the search.
    With `fresh`, every change made to the files before the call is
    indexed first (the reply says ``stale`` if that took too long). With
    `explain`, the result carries how scores were combined. `max_tokens`
    bounds the answer: the best hits whole while they fill most of it, later
    ones as their best line (``result.budget_omitted`` counts those left
    out). `scope` ``global`` searches
    the daemon's global workspace instead of this one, ``all`` both (each
    hit then names its ``workspace``).
    """
    params = SearchParams(
        query=query,
        limit=limit,
        min_score=min_score,
        sources=_optional_items(sources),
        agent=agent,
        fresh=fresh,
        explain=explain,
        max_tokens=max_tokens,
        scope=scope,
    )
    return Call(m.SEARCH, params)


def get(
    path: str,
    *,
    from_line: int | None = None,
    lines: int | None = None,
    to_line: int | None = None,
) -> Call[GetResult]:
    """Read a memory file, or its lines from `from_line` (1-based) to
    `to_line` or `lines` of them; *path* may be a citation (``x.md#L5-L7``)."""
    return Call(m.GET, GetParams(path=path, from_line=from_line, lines=lines, to_line=to_line))


def append(text: str, *, path: str | None = None) -> Call[AppendResult]:
    """Append *text* (default: to today's daily file); searchable on return."""
    return Call(m.APPEND, AppendParams(text=text, path=path))


def sync(*, full: bool = False, on_progress: ProgressCallback | None = None) -> Call[SyncResult]:
    """Bring the index up to date with the files; `full` re-chunks everything.

    `on_progress` is called (in the calling thread or task) with each
    `Progress` frame the daemon sends while it works.
    """
    return Call(m.SYNC, SyncParams(full=full), on_progress)


def log_turns(
    agent: str, session_id: str, turns: Sequence[Turn | Mapping[str, object]]
) -> Call[LogTurnsResult]:
    """Append conversation turns to the daemon-kept transcript of a session.

    Turns are `Turn`s or mappings with ``role`` (user/assistant) and
    ``content`` or ``text``, optionally ``timestamp`` (epoch seconds).
    They are searchable with ``sources=["sessions"]`` when this returns.
    """
    params = LogTurnsParams(
        agent=agent, session_id=session_id, turns=tuple(as_turn(t) for t in turns)
    )
    return Call(m.LOG_TURNS, params)


def session_start(agent: str, session_id: str | None = None) -> Call[SessionStartResult]:
    """Tell the daemon a session starts: the agent's transcripts are indexed now."""
    return Call(m.SESSION_START, SessionStartParams(agent=agent, session_id=session_id))


def recall(
    query: str,
    *,
    limit: int | None = None,
    min_score: float | None = None,
    sources: Sequence[str] | None = None,
    agent: str | None = None,
) -> Call[RecallResult]:
    """Memories relevant to *query* as a ``<relevant-memories>`` block to
    put before the prompt (``result.block``; "" when nothing qualifies)."""
    params = RecallParams(
        query=query,
        limit=limit,
        min_score=min_score,
        sources=_optional_items(sources),
        agent=agent,
    )
    return Call(m.RECALL, params)


def capture(
    messages: Sequence[CaptureMessage | Mapping[str, object]],
    *,
    max_captures: int | None = None,
) -> Call[CaptureResult]:
    """Write the durable facts in the user's *messages* to today's daily file.

    Messages are `CaptureMessage`s or chat-style mappings with ``role``
    and ``content`` (a string or a list of ``{"type": "text", ...}``
    blocks). The reply says what was captured and why the rest was not.
    """
    params = CaptureParams(
        messages=tuple(capture_message(msg) for msg in messages), max_captures=max_captures
    )
    return Call(m.CAPTURE, params)


def forget(
    *,
    citation: str | None = None,
    text: str | None = None,
    query: str | None = None,
    all: bool = False,
) -> Call[ForgetResult]:
    """Erase a memory from its file and the index: by `citation`
    (``path#L5-L7``), exact `text` (with `all`, every line saying it), or
    `query` (only a single clear match is removed; otherwise
    ``result.candidates`` lists the options)."""
    return Call(m.FORGET, ForgetParams(citation=citation, text=text, query=query, all=all))


def restore(path: str | None = None, *, dry_run: bool = False) -> Call[RestoreResult]:
    """Append again what an external rewrite removed from *path* (every
    file when None) and the daemon did not restore by itself; with
    *dry_run*, only list it."""
    return Call(m.RESTORE, RestoreParams(path=path, dry_run=dry_run))


def primer(
    *, budget: int | None = None, private: bool = False, today: date | None = None
) -> Call[PrimerResult]:
    """Context to start a session with, within *budget* tokens (default
    1000): USER.md, PROJECT.md, today's and yesterday's daily files, and
    MEMORY.md only when *private* (never in a group conversation)."""
    return Call(m.PRIMER, PrimerParams(budget=budget, private=private, date=iso_date(today)))


def flush_check(
    session: str,
    *,
    tokens: int,
    context_window: int,
    compaction_count: int | None = None,
    agent: str | None = None,
    read_only: bool = False,
    today: date | None = None,
) -> Call[FlushCheckResult]:
    """Whether to run the pre-compaction memory flush now (at most once per
    compaction cycle of *session*), with the system and user prompts to run."""
    params = FlushCheckParams(
        session=session,
        tokens=tokens,
        context_window=context_window,
        compaction_count=compaction_count,
        agent=agent,
        read_only=read_only,
        date=iso_date(today),
    )
    return Call(m.FLUSH_CHECK, params)


def doctor() -> Call[DoctorResult]:
    """The daemon's health checks, run inside it on its live index,
    embedder and watcher; ``result.ok`` is false when any check failed."""
    return Call(m.DOCTOR, DoctorParams())


def export(output: str | os.PathLike[str]) -> Call[ExportResult]:
    """Archive the memory's Markdown with a manifest (never the index) to
    *output*; the daemon writes it, so a relative path is made absolute here."""
    return Call(m.EXPORT, ExportParams(output=os.path.abspath(os.fspath(output))))


def session_end(
    *,
    request: str | None = None,
    learned: str | Sequence[str] = (),
    completed: str | Sequence[str] = (),
    next_steps: str | Sequence[str] = (),
    agent: str | None = None,
    session: str | None = None,
) -> Call[SessionEndResult]:
    """Close a session: a journal block (request, learned, completed, next
    steps) appended to today's daily file, and the next steps added to
    ``memory/TASKS.md`` as open tasks (one already open is not repeated; a
    completed item naming an open task exactly marks it done)."""
    params = SessionEndParams(
        request=request,
        learned=_items(learned),
        completed=_items(completed),
        next_steps=_items(next_steps),
        agent=agent,
        session=session,
    )
    return Call(m.SESSION_END, params)


def tasks(
    action: TaskAction = "list",
    tasks: str | Sequence[str] = (),
    *,
    status: TaskStatus = "open",
) -> Call[TasksResult]:
    """List the tasks in ``memory/TASKS.md`` (`status`: open, done or all), or
    ``add`` texts, or mark tasks ``done``, ``reopen`` or ``remove`` them, named
    by id or text (exact, else a unique part). All of a change is made, or none."""
    return Call(m.TASKS, TasksParams(action=action, tasks=_items(tasks), status=status))


def log(
    text: str,
    *,
    type: str | None = None,
    replace: bool = False,
    force: bool = False,
    dry_run: bool = False,
    agent: str | None = None,
) -> Call[LogResult]:
    """File one memory through the daemon's write pipeline.

    The daemon gates it (too short, filler, pure code, speculative),
    masks or rejects secrets, routes it by `type` (preference, decision,
    lesson, fact, project, note; classified when None) to its file and
    section, and dedupes it: the same memory again is counted on its line
    (``result.status == "reinforced"``); a close one with another detail
    is a ``"conflict"``, written only with `replace` (swap that line) or
    `force` (keep both; also skips the quality rules). `dry_run` decides
    without writing. ``result.reasons`` says why at every step.
    """
    params = LogParams(
        text=text, memory_type=type, replace=replace, force=force, dry_run=dry_run, agent=agent
    )
    return Call(m.LOG, params)


def compact(
    session: str,
    messages: Sequence[CaptureMessage | Mapping[str, object]],
    *,
    keep_last: int | None = None,
    agent: str | None = None,
    flush: bool | None = None,
    on_progress: ProgressCallback | None = None,
) -> Call[CompactResult]:
    """Compact a conversation with the daemon's chat model (``[chat]``):
    capture its durable memories, summarise all but the last *keep_last*
    messages (default 5) and append the summary to today's daily file.
    Replace the summarised messages with ``result.summary``. Messages are
    ``{role, content}`` mappings (string or text-block content); one whose
    content is null (an assistant turn that only called tools) is sent as
    empty text, counted but not summarised."""
    wire = tuple(
        CaptureMessage(role=str(msg.get("role") or ""), text="")
        if isinstance(msg, Mapping) and msg.get("content", msg.get("text")) is None
        else capture_message(msg)
        for msg in messages
    )
    params = CompactParams(
        session=session, messages=wire, keep_last=keep_last, agent=agent, flush=flush
    )
    return Call(m.COMPACT, params, on_progress)


def compact_check(tokens: int, *, context_window: int) -> Call[CompactCheckResult]:
    """Whether a conversation of *tokens* in a *context_window* should be
    compacted now (``result.action == "compact"``, from 60 % of the window by
    default) and how many tokens must go to bring it to the budget (40 %);
    below the threshold ``action`` is ``"within_budget"``."""
    return Call(m.COMPACT_CHECK, CompactCheckParams(tokens=tokens, context_window=context_window))


# ---------------------------------------------------------------- conversions


def iso_date(value: date | None) -> str | None:
    """The agent's today on the wire; `None` lets the daemon use its own."""
    return value.isoformat() if value is not None else None


def as_turn(turn: Turn | Mapping[str, object]) -> Turn:
    """A `Turn`, or a mapping with ``role``, ``content`` (or ``text``), ``timestamp``."""
    if isinstance(turn, Turn):
        return turn
    text = turn.get("content", turn.get("text"))
    timestamp = turn.get("timestamp")
    if not isinstance(text, str):
        raise BadRequestError("each turn needs a 'content' (or 'text') string")
    if timestamp is not None and not isinstance(timestamp, int | float):
        raise BadRequestError("a turn's 'timestamp' must be epoch seconds")
    role = turn.get("role")
    if role != "user" and role != "assistant":
        raise BadRequestError(f"a turn's role must be 'user' or 'assistant', not {role!r}")
    return Turn(role=role, text=text, timestamp=timestamp)


def capture_message(message: CaptureMessage | Mapping[str, object]) -> CaptureMessage:
    """A chat-style message (string or text-block content) as the wire wants it."""
    if isinstance(message, CaptureMessage):
        return message
    role = message.get("role")
    content = message.get("content", message.get("text"))
    if not isinstance(role, str) or not role:
        raise BadRequestError("each message needs a 'role' string")
    if isinstance(content, str):
        text = content
    elif isinstance(content, list):
        text = "\n".join(
            block["text"]
            for block in content
            if isinstance(block, dict)
            and block.get("type") in ("text", "input_text")
            and isinstance(block.get("text"), str)
        )
    else:
        raise BadRequestError("each message needs 'content': a string or a list of text blocks")
    return CaptureMessage(role=role, text=text)


def _items(value: str | Sequence[str]) -> tuple[str, ...]:
    """A list argument; a lone string is one item, not a list of characters."""
    return (value,) if isinstance(value, str) else tuple(value)


def _optional_items(value: str | Sequence[str] | None) -> tuple[str, ...] | None:
    return _items(value) if value is not None else None
