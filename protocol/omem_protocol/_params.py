"""What a client asks: one Params struct per method, tagged with the method's name."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from omem_protocol._base import (
    MAX_APPEND_CHARS,
    MAX_COMPACT_MESSAGES,
    MAX_LIMIT,
    MAX_LOG_CHARS,
    MAX_QUERY_CHARS,
    MAX_SESSION_ITEMS,
    MAX_TASK_REFS,
    MAX_TURNS,
    AgentName,
    IsoDate,
    LineNo,
    Msg,
    NonNegInt,
    Score,
    SessionId,
    SessionNote,
    SourceName,
    TaskText,
    WirePath,
)


class StatusParams(Msg, tag="status", frozen=True):
    """Ask for the daemon's and the workspace's state."""


# Which memories a search covers: the connection's own workspace (the
# default), the daemon's global one (`search.global_workspace`), or both.
SearchScope = Literal["project", "global", "all"]
SEARCH_SCOPES: tuple[SearchScope, ...] = ("project", "global", "all")


class SearchParams(Msg, tag="search", frozen=True):
    """Search the memory index.

    `limit` and `min_score` default to the daemon's configuration when None.
    `sources` (``memory``, ``sessions``) and `agent` narrow the search.
    `fresh` first waits until every change made to the files before the call
    is indexed (bounded by the daemon's ``sync.fresh_timeout_s``; past it the
    reply says ``stale``).
    A `min_score` given explicitly is honoured strictly; the configured default
    never leaves a search empty when something matches (see
    `SearchResult.threshold_relaxed`). `explain` adds how scores combined.
    `max_tokens` bounds the answer's size (a hit costs its snippet and its
    citation): the best hits are shown whole while they fill most of it, the
    later ones as their best line, each with its exact citation; the first is
    cut to fit when it alone does not. Without a `limit`, such a search
    considers as many hits as the budget could show.
    `scope` ``global`` searches the daemon's global workspace instead of the
    connection's, ``all`` both together (each hit then names its
    `workspace`); ``project`` or None, the connection's own.
    """

    query: Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_QUERY_CHARS)]
    limit: Annotated[int, msgspec.Meta(ge=1, le=MAX_LIMIT)] | None = None
    min_score: Score | None = None
    sources: tuple[SourceName, ...] | None = None
    explain: bool = False
    agent: AgentName | None = None
    fresh: bool = False
    max_tokens: Annotated[int, msgspec.Meta(ge=1, le=1_000_000)] | None = None
    scope: SearchScope | None = None


class GetParams(Msg, tag="get", frozen=True):
    """Read a memory file, or its lines from `from_line` (default 1) to
    `to_line`, or `lines` of them (one or the other); `path` may be a
    citation (``memory/x.md#L5-L7``, ``memory/x.md:5-7``) naming the lines."""

    path: WirePath
    from_line: LineNo | None = None
    lines: LineNo | None = None
    to_line: LineNo | None = None


class AppendParams(Msg, tag="append", frozen=True):
    """Append a block of text to a memory file (default: today's daily file)."""

    text: Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_APPEND_CHARS)]
    path: WirePath | None = None


class SyncParams(Msg, tag="sync", frozen=True):
    """Bring the index up to date with the files; `full` re-chunks every file."""

    full: bool = False


class Turn(Msg, tag="turn", frozen=True):
    """One message of a conversation; `timestamp` in epoch seconds (default: now)."""

    role: Literal["user", "assistant"]
    text: Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_APPEND_CHARS)]
    # epoch seconds, up to the end of year 9999 (what a file's timestamps can hold)
    timestamp: Annotated[float, msgspec.Meta(ge=0, le=253_402_300_799)] | None = None


class LogTurnsParams(Msg, tag="log_turns", frozen=True):
    """Append turns to the daemon-kept transcript of `agent`'s session.

    For agents that keep no JSONL of their own: the turns become searchable
    (``--source sessions``) when the call returns.
    """

    agent: AgentName
    session_id: SessionId
    turns: Annotated[tuple[Turn, ...], msgspec.Meta(min_length=1, max_length=MAX_TURNS)]


class SessionStartParams(Msg, tag="session_start", frozen=True):
    """An agent's session starts: index its transcripts' pending lines now."""

    agent: AgentName
    session_id: SessionId | None = None


class RecallParams(Msg, tag="recall", frozen=True):
    """Memories relevant to a prompt, as a block ready to put before it.

    `limit` (default 3) and `min_score` (default 0.3) follow OpenClaw's
    auto-recall; a prompt under 5 characters recalls nothing.
    """

    query: Annotated[str, msgspec.Meta(max_length=MAX_QUERY_CHARS)]
    limit: Annotated[int, msgspec.Meta(ge=1, le=MAX_LIMIT)] | None = None
    min_score: Score | None = None
    sources: tuple[SourceName, ...] | None = None
    agent: AgentName | None = None


class CaptureMessage(Msg, tag="capture_message", frozen=True):
    """A conversation message offered for capture; only ``user`` ones qualify."""

    role: Annotated[str, msgspec.Meta(min_length=1, max_length=32)]
    text: Annotated[str, msgspec.Meta(max_length=MAX_APPEND_CHARS)]


class CaptureParams(Msg, tag="capture", frozen=True):
    """Extract durable facts from `messages` into today's daily file.

    At most `max_captures` (default 3) are written; near-duplicates of
    existing memories are skipped.
    """

    messages: Annotated[
        tuple[CaptureMessage, ...], msgspec.Meta(min_length=1, max_length=MAX_TURNS)
    ]
    max_captures: Annotated[int, msgspec.Meta(ge=1, le=20)] | None = None


class ForgetParams(Msg, tag="forget", frozen=True):
    """Remove a memory from its file and from every part of the index.

    Exactly one of: `citation` (``path#L5`` or ``path#L5-L7``), `text`
    (removed where it occurs exactly once; several occurrences are listed,
    or all removed with `all`), `query` (a single clear match is removed;
    otherwise the candidates are listed and nothing is removed).
    """

    citation: WirePath | None = None
    text: Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_APPEND_CHARS)] | None = None
    query: Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_QUERY_CHARS)] | None = None
    all: bool = False


class RestoreParams(Msg, tag="restore", frozen=True):
    """Append again the journalled appends an external rewrite removed from
    `path` (every file when None); with `dry_run`, only list them."""

    path: WirePath | None = None
    dry_run: bool = False


class PrimerParams(Msg, tag="primer", frozen=True):
    """Context to start a session with, within `budget` tokens (default 1000).

    USER.md, PROJECT.md, today's and yesterday's daily files; MEMORY.md only
    when `private` (a one-to-one session, never a group). `date` is the
    agent's today (ISO), when its clock or time zone differs from the daemon's.
    """

    budget: Annotated[int, msgspec.Meta(ge=50, le=200_000)] | None = None
    private: bool = False
    date: IsoDate | None = None


class FlushCheckParams(Msg, tag="flush_check", frozen=True):
    """Should the agent run the pre-compaction memory flush now?

    Yes once `tokens` reaches ``context_window - reserve_tokens_floor -
    soft_threshold_tokens``, at most once per compaction cycle of `session`.
    A new cycle starts when `compaction_count` grows or, without it, when the
    reported tokens fall back below the threshold (the context was compacted).
    `read_only` says the agent's sandbox cannot write the workspace.
    """

    session: SessionId
    tokens: NonNegInt
    context_window: Annotated[int, msgspec.Meta(ge=1)]
    compaction_count: NonNegInt | None = None
    agent: AgentName | None = None
    read_only: bool = False
    date: IsoDate | None = None


class CompactCheckParams(Msg, tag="compact_check", frozen=True):
    """Is it time to compact? `tokens` is what the conversation holds now,
    `context_window` the model's; the answer says whether it passed the
    threshold (``chat.compact_threshold``, 60 %) and how much must go to fit
    the budget (``chat.compact_budget``, 40 %)."""

    tokens: NonNegInt
    context_window: Annotated[int, msgspec.Meta(ge=1)]


class DoctorParams(Msg, tag="doctor", frozen=True):
    """Run the health checks inside the daemon, against what it really uses:
    its configuration, open index, embedder, watcher and socket."""


class ExportParams(Msg, tag="export", frozen=True):
    """Write the memory's Markdown and a manifest (never the index) to the
    gzipped tar `output`, an absolute path the daemon's user can write."""

    output: WirePath


class SessionEndParams(Msg, tag="session_end", frozen=True):
    """Close a session: a journal block in today's daily file, and its next
    steps as open tasks in ``memory/TASKS.md``.

    At least one of `request`, `learned`, `completed`, `next_steps` must say
    something. A next step already open is not added twice; a `completed`
    item whose text is an open task's marks that task done.
    """

    request: SessionNote | None = None
    learned: Annotated[tuple[SessionNote, ...], msgspec.Meta(max_length=MAX_SESSION_ITEMS)] = ()
    completed: Annotated[tuple[SessionNote, ...], msgspec.Meta(max_length=MAX_SESSION_ITEMS)] = ()
    next_steps: Annotated[tuple[TaskText, ...], msgspec.Meta(max_length=MAX_SESSION_ITEMS)] = ()
    agent: AgentName | None = None
    session: SessionId | None = None


class TasksParams(Msg, tag="tasks", frozen=True):
    """List or change the tasks in ``memory/TASKS.md``.

    `action` is ``list``, ``add`` (`tasks` are new texts; one already open is
    not added twice), ``done``, ``reopen`` or ``remove`` (`tasks` are task ids
    or text: the exact text, else a unique part of it). A change is all or
    nothing. The reply lists the tasks `status` selects (``open``, ``done``,
    ``all``) after the change.
    """

    action: Literal["list", "add", "done", "reopen", "remove"] = "list"
    tasks: Annotated[tuple[TaskText, ...], msgspec.Meta(max_length=MAX_TASK_REFS)] = ()
    status: Literal["open", "done", "all"] = "open"


class LogParams(Msg, tag="log", frozen=True):
    """The Python MCP memory server's write pipeline: gate, privacy, routing, dedupe, then write.

    `memory_type` is preference, decision, lesson, fact, project or note
    (None: classified from the text; the reply says why). A memory 0.85–0.92
    similar to an existing one is only reported as a possible conflict
    unless `replace` (swap that line) or `force` (write it alongside, and
    also skip the quality rules; never the privacy rules). `dry_run` decides
    and reports without writing. `agent` names the caller in the daemon log.
    """

    text: Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_LOG_CHARS)]
    memory_type: Annotated[str, msgspec.Meta(max_length=32)] | None = None
    replace: bool = False
    force: bool = False
    dry_run: bool = False
    agent: AgentName | None = None


class CompactParams(Msg, tag="compact", frozen=True):
    """Compact a conversation (the openmemory design's compaction) with the daemon's chat model.

    All but the last `keep_last` messages (default ``chat.keep_last``, 5)
    are summarised in stages; the summary is appended to today's daily file
    under ``## Session Summary``, after the durable memories `capture` finds
    in the messages (the memory flush; `flush` overrides ``chat.flush_before``).
    Nothing is written unless the summary was made. Roles other than user and
    assistant (system, tool) are counted but not summarised.
    """

    session: SessionId
    messages: Annotated[
        tuple[CaptureMessage, ...], msgspec.Meta(min_length=1, max_length=MAX_COMPACT_MESSAGES)
    ]
    keep_last: Annotated[int, msgspec.Meta(ge=0, le=MAX_COMPACT_MESSAGES)] | None = None
    agent: AgentName | None = None
    flush: bool | None = None
