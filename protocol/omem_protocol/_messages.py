"""Every message that crosses the socket.

All wire types derive from `Msg`: frozen, keyword-only msgspec Structs tagged
by a ``type`` field, so a decoder reads the tag first and builds the right
class directly. Schema-evolution rules, which keep old clients and new
daemons talking (and the reverse):

* a field added after a release always has a default;
* a field is never renamed, retyped or removed, and a tag is never reused;
* unknown fields are ignored (no ``forbid_unknown_fields`` on wire types).

Conversation shape::

    client: Hello                    daemon: Welcome
    client: Request{id, body}        daemon: Progress{id, ...}*  Reply{id, body}

Several requests may be in flight on one connection; replies carry the
request's id and may come back in any order. A reply with id 0 reports a
problem with a frame that could not be tied to any request.

Constraints declared with `msgspec.Meta` are enforced when the daemon decodes
a request, so out-of-range values come back as ``bad_request`` errors that
name the offending field.
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

# Limits that protect the daemon; a client sending more gets `bad_request`.
MAX_QUERY_CHARS = 8192
MAX_PATH_CHARS = 4096
MAX_APPEND_CHARS = 1_000_000
MAX_LOG_CHARS = 2000  # one memory, one bullet line
MAX_LIMIT = 100

NonNegInt = Annotated[int, msgspec.Meta(ge=0)]
LineNo = Annotated[int, msgspec.Meta(ge=1)]
Score = Annotated[float, msgspec.Meta(ge=0.0, le=1.0)]
SourceName = Annotated[str, msgspec.Meta(pattern=r"^[a-z][a-z0-9_-]{0,31}$")]
# What `sources` may name: the Markdown memory files, and agents' session transcripts.
KNOWN_SOURCES = ("memory", "sessions")
AgentName = Annotated[str, msgspec.Meta(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")]
SessionId = Annotated[str, msgspec.Meta(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")]
MAX_TURNS = 1000
WirePath = Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_PATH_CHARS)]
WorkspaceName = Annotated[str, msgspec.Meta(pattern=r"^[a-z0-9][a-z0-9_-]{0,31}$")]
IsoDate = Annotated[str, msgspec.Meta(pattern=r"^\d{4}-\d{2}-\d{2}$")]


class Msg(msgspec.Struct, tag_field="type", kw_only=True, frozen=True):
    """Base of every wire type.

    Subclasses repeat ``frozen=True``: msgspec inherits it anyway, but type
    checkers only see what each class statement says.
    """


# ---------------------------------------------------------------- handshake


class Hello(Msg, tag="hello", frozen=True):
    """First frame a client sends: its protocol major and what it can handle."""

    protocol: int
    client: str = ""
    capabilities: tuple[str, ...] = ()


class Welcome(Msg, tag="welcome", frozen=True):
    """The daemon's answer to `Hello` when the protocol majors match."""

    protocol: int
    daemon_version: str
    pid: int
    workspaces: tuple[str, ...]
    capabilities: tuple[str, ...]


# ---------------------------------------------------------------- requests


class StatusParams(Msg, tag="status", frozen=True):
    """Ask for the daemon's and the workspace's state."""


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
    """

    query: Annotated[str, msgspec.Meta(max_length=MAX_QUERY_CHARS)]
    limit: Annotated[int, msgspec.Meta(ge=1, le=MAX_LIMIT)] | None = None
    min_score: Score | None = None
    sources: tuple[SourceName, ...] | None = None
    explain: bool = False
    agent: AgentName | None = None
    fresh: bool = False


class GetParams(Msg, tag="get", frozen=True):
    """Read a memory file, or `lines` lines of it starting at `from_line`."""

    path: WirePath
    from_line: LineNo | None = None
    lines: LineNo | None = None


class AppendParams(Msg, tag="append", frozen=True):
    """Append a block of text to a memory file (default: today's daily file)."""

    text: Annotated[str, msgspec.Meta(max_length=MAX_APPEND_CHARS)]
    path: WirePath | None = None


class SyncParams(Msg, tag="sync", frozen=True):
    """Bring the index up to date with the files; `full` re-chunks every file."""

    full: bool = False


class Turn(Msg, tag="turn", frozen=True):
    """One message of a conversation; `timestamp` in epoch seconds (default: now)."""

    role: Literal["user", "assistant"]
    text: Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_APPEND_CHARS)]
    timestamp: float | None = None


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


class DoctorParams(Msg, tag="doctor", frozen=True):
    """Run the health checks inside the daemon, against what it really uses:
    its configuration, open index, embedder, watcher and socket."""


class ExportParams(Msg, tag="export", frozen=True):
    """Write the memory's Markdown and a manifest (never the index) to the
    gzipped tar `output`, an absolute path the daemon's user can write."""

    output: WirePath


# ---- session end and tasks (seed 003 memory_session_end / memory_update_tasks)

MAX_TASK_CHARS = 500
MAX_SESSION_ITEMS = 100
MAX_TASK_REFS = 100
SessionNote = Annotated[str, msgspec.Meta(max_length=MAX_QUERY_CHARS)]
TaskText = Annotated[str, msgspec.Meta(max_length=MAX_TASK_CHARS)]


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
    """Seed 003's write pipeline: gate, privacy, routing, dedupe, then write.

    `memory_type` is preference, decision, lesson, fact, project or note
    (None: classified from the text; the reply says why). A memory 0.85–0.92
    similar to an existing one is only reported as a possible conflict
    unless `replace` (swap that line) or `force` (write it alongside, and
    also skip the quality rules; never the privacy rules). `dry_run` decides
    and reports without writing. `agent` names the caller in the daemon log.
    """

    text: Annotated[str, msgspec.Meta(max_length=MAX_LOG_CHARS)]
    memory_type: Annotated[str, msgspec.Meta(max_length=32)] | None = None
    replace: bool = False
    force: bool = False
    dry_run: bool = False
    agent: AgentName | None = None


MAX_COMPACT_MESSAGES = 10_000


class CompactParams(Msg, tag="compact", frozen=True):
    """Compact a conversation (seed 000 §7) with the daemon's chat model.

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


RequestBody = (
    StatusParams
    | SearchParams
    | GetParams
    | AppendParams
    | SyncParams
    | LogTurnsParams
    | SessionStartParams
    | RecallParams
    | CaptureParams
    | ForgetParams
    | PrimerParams
    | FlushCheckParams
    | ExportParams
    | DoctorParams
    | SessionEndParams
    | TasksParams
    | LogParams
    | CompactParams
    | RestoreParams
)


class Request(Msg, tag="request", frozen=True):
    """A call: `id` is chosen by the client and echoed in the reply (>= 1).

    `workspace` names which of the daemon's workspaces the call is about
    (`Welcome.workspaces` lists them); None means ``default``.
    """

    id: Annotated[int, msgspec.Meta(ge=1)]
    body: RequestBody
    workspace: WorkspaceName | None = None


# ---------------------------------------------------------------- results


class SearchHit(Msg, tag="hit", frozen=True):
    """One search result: where it is, what it says, and why it ranked."""

    path: str
    start_line: int
    end_line: int
    snippet: str
    score: float
    text_score: float | None
    vector_score: float | None
    source: str
    citation: str
    heading: str = ""
    decay: float = 1.0
    mmr_rank: int | None = None
    agent: str | None = None


class SearchExplain(Msg, tag="search_explain", frozen=True):
    """How scores were combined, for ``search --explain``."""

    vector_weight: float
    text_weight: float
    fusion: str
    decay: bool
    half_life_days: float
    decay_floor: float
    mmr: bool
    mmr_lambda: float
    lexical_candidates: int
    vector_candidates: int
    query_terms: tuple[str, ...]


class SearchResult(Msg, tag="search_result", frozen=True):
    """Results plus everything a caller needs to trust or doubt them.

    `empty_reason` is set only when `results` is empty: ``index_empty``,
    ``no_terms`` (the query has nothing searchable), ``no_match`` or
    ``below_min_score`` (then `best_score` says how close the best hit came).
    `threshold_relaxed` is true when nothing cleared the default `min_score`
    and the closest matches were returned anyway. `min_score` applies to a
    hit's strongest evidence (``max(vector_score, text_score)``); `score`,
    which orders the results, is the fused score.
    """

    results: tuple[SearchHit, ...]
    mode: str
    provider: str
    model: str | None
    degraded: bool
    degraded_reason: str | None
    fallback: bool
    stale: bool
    empty_reason: str | None
    best_score: float | None
    min_score: float
    threshold_relaxed: bool
    took_ms: float
    explain: SearchExplain | None = None


class GetResult(Msg, tag="get_result", frozen=True):
    """Text of the requested lines; `to_line` is 0 when no line was returned."""

    path: str
    text: str
    from_line: int
    to_line: int
    total_lines: int


class AppendResult(Msg, tag="append_result", frozen=True):
    """Where the text landed; `indexed` means the next search will find it."""

    path: str
    start_line: int
    end_line: int
    created: bool
    indexed: bool
    citation: str


class SyncResult(Msg, tag="sync_result", frozen=True):
    """What one sync pass changed in the index."""

    scanned: int
    added: int
    updated: int
    removed: int
    unchanged: int
    skipped: int
    chunks: int
    took_ms: float
    issues: tuple[str, ...] = ()
    sessions_waiting: int = 0


class LogTurnsResult(Msg, tag="log_turns_result", frozen=True):
    """Where the turns were written (JSONL lines) and whether they are searchable."""

    path: str
    start_line: int
    end_line: int
    indexed: bool
    citation: str


class SessionStartResult(Msg, tag="session_start_result", frozen=True):
    """How many of the agent's transcripts were looked at, and chunks added."""

    agent: str
    transcripts: int
    chunks: int


class RecalledMemory(Msg, tag="recalled", frozen=True):
    """One memory in a recall block: the unescaped text and where it is."""

    text: str
    score: float
    category: str
    citation: str
    path: str
    start_line: int
    end_line: int


class RecallResult(Msg, tag="recall_result", frozen=True):
    """`block` is the ``<relevant-memories>`` text to inject ("" when nothing
    was recalled; `skipped_reason` then says why if it was not for lack of
    matches)."""

    block: str
    memories: tuple[RecalledMemory, ...]
    took_ms: float
    skipped_reason: str | None = None
    degraded: bool = False


class CapturedMemory(Msg, tag="captured", frozen=True):
    """A message that became a memory bullet."""

    index: int
    text: str
    category: str
    trigger: str
    citation: str


class RejectedMessage(Msg, tag="rejected", frozen=True):
    """A message that was not captured, and why (`reason` is a stable code)."""

    index: int
    reason: str
    detail: str


class CaptureResult(Msg, tag="capture_result", frozen=True):
    """What was captured (searchable on return) and what was not."""

    captured: tuple[CapturedMemory, ...]
    rejected: tuple[RejectedMessage, ...]
    path: str | None
    took_ms: float


class ForgetCandidate(Msg, tag="forget_candidate", frozen=True):
    """A memory that might be the one meant, listed when the match is not clear."""

    citation: str
    text: str
    score: float


class ForgetResult(Msg, tag="forget_result", frozen=True):
    """`removed` lists the citations erased (file and index); when nothing
    was removed, `candidates` lists what the request could have meant."""

    removed: tuple[str, ...]
    removed_text: tuple[str, ...]
    candidates: tuple[ForgetCandidate, ...]
    reason: str


class RestoredBlock(Msg, tag="restored_block", frozen=True):
    """One journalled append: where it went, when (Unix time), what it said;
    `citation` is where it now is (None on a dry run)."""

    path: str
    appended_at: float
    text: str
    citation: str | None = None


class RestoreResult(Msg, tag="restore_result", frozen=True):
    """The appends put back (or, on a dry run, that would be)."""

    blocks: tuple[RestoredBlock, ...]
    dry_run: bool


class PrimerSection(Msg, tag="primer_section", frozen=True):
    """One file's share of the primer: which lines made it in."""

    path: str
    label: str
    tokens: int
    start_line: int
    end_line: int
    truncated: bool


class PrimerResult(Msg, tag="primer_result", frozen=True):
    """`text` is the Markdown to put in the system prompt ("" when every file
    is empty); `omitted` names files left out and why (``path: reason``)."""

    text: str
    sections: tuple[PrimerSection, ...]
    tokens: int
    budget: int
    omitted: tuple[str, ...]
    took_ms: float


class FlushCheckResult(Msg, tag="flush_check_result", frozen=True):
    """`should_flush` with `reason` (a stable code: ``threshold_reached``,
    ``below_threshold``, ``already_flushed``, ``read_only``, ``disabled``).
    The prompts are the turn to run when it is true; the agent's reply is
    ``NO_REPLY`` when there is nothing to store, so the user never sees it."""

    should_flush: bool
    reason: str
    tokens: int
    threshold: int
    cycle: int
    system_prompt: str
    prompt: str


class DoctorCheck(Msg, tag="doctor_check", frozen=True):
    """One health check. `status` is ``ok``, ``warn`` (worth a look; does not
    fail the doctor) or ``fail``; a plain string, not a Literal, so a newer
    daemon may add a level without breaking older clients. `detail` says what
    was found; `fix` is a command or config change, set when not ok."""

    name: str
    status: str
    detail: str
    fix: str | None = None


class DoctorResult(Msg, tag="doctor_result", frozen=True):
    """Every check in order; `ok` is false when any of them failed."""

    checks: tuple[DoctorCheck, ...]
    ok: bool
    took_ms: float


class ExportResult(Msg, tag="export_result", frozen=True):
    """The archive written; `skipped` names files left out and why."""

    path: str
    files: int
    bytes: int
    skipped: tuple[str, ...]
    took_ms: float


class SourceCounts(Msg, tag="source_counts", frozen=True):
    """Files on disk and in the index for one source (memory, sessions, ...)."""

    source: str
    files_on_disk: int
    files_indexed: int
    chunks: int


class LastSync(Msg, tag="last_sync", frozen=True):
    """The most recent completed (or failed) sync pass."""

    finished_at: float
    reason: str
    took_ms: float
    error: str | None = None


class EmbeddingStatus(Msg, tag="embedding_status", frozen=True):
    """Where vector indexing stands.

    `state` is ``off`` (no provider; `reason` says why), ``idle``,
    ``embedding`` (vectors being added), ``rebuilding`` (vectors for a new
    provider or model are being built; searches use keywords until done) or
    ``failing`` (the provider errs; `last_error` says how; retried).
    """

    state: str
    provider: str
    model: str | None
    dims: int | None
    embedded: int
    total: int
    fallback_active: bool = False
    reason: str | None = None
    last_error: str | None = None
    last_error_at: float | None = None
    cache_entries: int = 0


class PendingSession(Msg, tag="pending_session", frozen=True):
    """A transcript with lines not indexed yet (below the delta thresholds)."""

    path: str
    pending_bytes: int


class SyncStatus(Msg, tag="sync_status", frozen=True):
    """How the index follows the files: queue, watcher, pending transcripts.

    `watcher` is ``native``, ``polling`` or ``off``; an unhealthy watcher is
    restarted (and falls back to polling), and the periodic check catches
    what it missed meanwhile.
    """

    queue_depth: int
    running: bool
    last_reason: str | None
    last_finished_at: float | None
    last_error: str | None
    watcher: str
    watcher_healthy: bool
    watcher_last_event_at: float | None = None
    watcher_restarts: int = 0
    watcher_error: str | None = None
    pending_sessions: tuple[PendingSession, ...] = ()


class StatusResult(Msg, tag="status_result", frozen=True):
    """The daemon and its workspace, as `omem-client status` shows them."""

    daemon_version: str
    protocol: int
    pid: int
    uptime_s: float
    socket: str
    workspace: str
    workspace_path: str
    index_path: str
    index_bytes: int
    files_on_disk: int
    files_indexed: int
    chunks: int
    sources: tuple[SourceCounts, ...]
    fts: bool
    vector: bool
    provider: str
    model: str | None
    syncing: bool
    last_sync: LastSync | None
    issues: tuple[str, ...] = ()
    embedding: EmbeddingStatus | None = None
    rebuild: str | None = None
    sync: SyncStatus | None = None
    workspaces: tuple[str, ...] = ()  # every workspace this daemon serves
    http: str | None = None  # the HTTP API's base URL when it is on (`[http]`)


class LogSimilar(Msg, tag="log_similar", frozen=True):
    """The existing memory a log matched: where, what it says, how close.

    `similarity` is the embedding cosine rescaled to 0..1 for the model
    (see docs/cli.md, "log"), or the lexical score when vectors were not used;
    `lexical` is the word overlap (Dice); `cosine` the raw model cosine.
    `count` is how many times it has been logged (its ``(×N)``).
    """

    citation: str
    path: str
    line: int
    text: str
    similarity: float
    lexical: float
    cosine: float | None = None
    count: int = 1


class LogResult(Msg, tag="log_result", frozen=True):
    """Where a logged memory went and why.

    `status`: written, reinforced (an existing line's count went up),
    replaced (a conflicting line was swapped), conflict (nothing written;
    `similar` is the possible conflict) or rejected (nothing written; `rule`
    names the gate rule). With `dry_run` nothing was written either way.
    """

    status: str
    memory_type: str
    text: str
    reasons: tuple[str, ...]
    path: str | None = None
    line: int | None = None
    citation: str | None = None
    section: str | None = None
    rule: str | None = None
    redactions: tuple[str, ...] = ()
    similar: LogSimilar | None = None
    similarity_method: str = "lexical"
    dry_run: bool = False
    took_ms: float = 0.0


class CompactResult(Msg, tag="compact_result", frozen=True):
    """The summary that replaces the first `messages_summarised` messages,
    where it was appended (searchable on return), what the memory flush
    captured, and the conversation's estimated tokens before and after
    (summary + kept messages; a CJK character counts as one token)."""

    summary: str
    path: str
    start_line: int
    end_line: int
    citation: str
    captured: tuple[CapturedMemory, ...]
    tokens_before: int
    tokens_after: int
    messages_summarised: int
    messages_kept: int
    messages_skipped: int
    stages: int
    calls: int
    provider: str
    model: str
    took_ms: float


class Error(Msg, tag="error", frozen=True):
    """A failed request. `code` is one of `ErrorCode`; `message` is for humans."""

    code: str
    message: str
    detail: str | None = None


# ---- session end and tasks


class TaskItem(Msg, tag="task", frozen=True):
    """One task of ``memory/TASKS.md``. `id` is derived from the text, so it
    is stable while the text is (a hand-written task has one too); `added`
    and `completed` are ISO dates when the file records them."""

    id: str
    text: str
    done: bool
    added: str | None
    completed: str | None
    line: int
    citation: str


class SessionEndResult(Msg, tag="session_end_result", frozen=True):
    """Where the journal block landed (searchable on return) and what it did
    to the tasks: `tasks_added` new, `tasks_existing` next steps that were
    already open, `tasks_done` open tasks the completed items closed."""

    path: str
    start_line: int
    end_line: int
    citation: str
    tasks_path: str
    tasks_added: tuple[TaskItem, ...]
    tasks_existing: tuple[TaskItem, ...]
    tasks_done: tuple[TaskItem, ...]
    took_ms: float
    indexed: bool = True  # False: written, but the index failed (see status); queued


class TasksResult(Msg, tag="tasks_result", frozen=True):
    """`changed` are the tasks the action changed, `unchanged` those already
    as asked (an open duplicate, a task already done); `tasks` is the listing
    `status` selected, after the change; `open` and `done` count them all."""

    path: str
    action: str
    changed: tuple[TaskItem, ...]
    unchanged: tuple[TaskItem, ...]
    tasks: tuple[TaskItem, ...]
    open: int
    done: int
    took_ms: float
    indexed: bool = True  # False: written, but the index failed (see status); queued


ReplyBody = (
    StatusResult
    | SearchResult
    | GetResult
    | AppendResult
    | SyncResult
    | LogTurnsResult
    | SessionStartResult
    | RecallResult
    | CaptureResult
    | ForgetResult
    | PrimerResult
    | FlushCheckResult
    | ExportResult
    | DoctorResult
    | SessionEndResult
    | TasksResult
    | LogResult
    | CompactResult
    | RestoreResult
    | Error
)


class Reply(Msg, tag="reply", frozen=True):
    """The answer to request `id` (0: a frame that matched no request)."""

    id: NonNegInt
    body: ReplyBody


class Progress(Msg, tag="progress", frozen=True):
    """Interim progress of request `id`; zero or more precede its `Reply`."""

    id: int
    done: int
    total: int
    phase: str = ""


ClientFrame = Hello | Request
DaemonFrame = Welcome | Reply | Progress
