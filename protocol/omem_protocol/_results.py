"""What the daemon answers: one Result struct per method, and the parts they share."""

from __future__ import annotations

from omem_protocol._base import (
    Msg,
)


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
    rerank_score: float | None = None  # the reranker's own score, when one ran
    # The workspace the hit is from, in a search with scope global or all.
    workspace: str | None = None
    # `heading` is the heading path at the snippet's first line; these are the
    # heading lines further down the snippet, each with the path from it on.
    inner_headings: tuple[tuple[int, str], ...] = ()
    # What `min_score` judged the hit by: its keyword score, or its vector
    # score as evidence (the margin over the query's no-match baseline, a
    # note in another script than the query's read as if in the query's),
    # whichever is stronger. Not `vector_score`, which is the plain cosine
    # rescaled; None from a daemon that predates it.
    evidence: float | None = None

    def section(self) -> str:
        """The heading path a reader is shown beside the snippet: `heading`,
        less a first title that only names the file (a daily note's
        ``# 2026-11-25`` in ``memory/2026-11-25.md``, the templates'
        ``# MEMORY.md - Long-term Memory``), and nothing when the snippet
        opens with a heading line, which names its section itself. What the
        text output prints and a token budget counts."""
        first = self.snippet.split("\n", 1)[0].lstrip(" ")
        marks = len(first) - len(first.lstrip("#"))
        if 1 <= marks <= 6 and first[marks : marks + 1] in ("", " ", "\t"):
            return ""
        title, _, rest = self.heading.partition(" > ")
        name = self.path.rsplit("/", 1)[-1]
        return (
            rest
            if title in (name, name.removesuffix(".md")) or title.startswith(name + " ")
            else self.heading
        )


class RerankExplain(Msg, tag="rerank_explain", frozen=True):
    """What the rerank stage did: the first `sent` candidates went to the
    provider, and each hit's score became ``weight·rerank + (1−weight)·fused``;
    with `error`, it failed and the fused order stands, or (`skipped`) the
    reranker does not apply to the query (the local model reads English
    only), which is no failure."""

    provider: str
    model: str
    sent: int
    weight: float
    took_ms: float
    error: str | None = None
    skipped: bool = False


class QueryDays(Msg, tag="query_days", frozen=True):
    """A span of days the query names ("since 3 March", "last summer"), from
    `start` to `end` inclusive: ISO dates, or ``--MM-DD`` when any year's
    ("in June", "on 3 March" without a year)."""

    start: str
    end: str


class SearchExplain(Msg, tag="search_explain", frozen=True):
    """How scores were combined, for ``search --explain``.

    `dates` are the days read from the query, which rank the notes of those
    days higher and are not searched as words; `dates_as_words` says no
    candidate was of those days, so they went back to the keyword query.
    """

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
    rerank: RerankExplain | None = None
    # Calibrated fusion's optional signals (`search.neighbours`,
    # `search.head_estimate`); a daemon that predates them sends neither.
    neighbours: bool = False
    head_estimate: bool = False
    dates: tuple[QueryDays, ...] = ()
    dates_as_words: bool = False


class SearchResult(Msg, tag="search_result", frozen=True):
    """Results plus everything a caller needs to trust or doubt them.

    `mode` says how the hits were found: ``hybrid`` (both legs), ``lexical``
    (keywords; no vectors), ``vector`` (``search.hybrid = false``),
    ``timeline`` (a query for days alone), ``section`` (a query naming a kind
    of memory alone), ``mixed`` (a search of several workspaces that went
    different ways).
    `empty_reason` is set only when `results` is empty: ``index_empty``,
    ``no_terms`` (the query has nothing searchable), ``no_match``,
    ``below_min_score`` (then `best_score` says how close the best hit came)
    or ``nothing_dated`` (a query for days, `mode` ``timeline``, found no
    notes of those days).
    `threshold_relaxed` is true when nothing cleared the default `min_score`
    and the closest matches were returned anyway. `min_score` applies to a
    hit's `evidence`, the stronger of its keyword score and its vector score
    read against the query's no-match baseline; `score`, which orders the
    results, is the fused score. `budget_omitted` counts the
    hits left out to stay within the request's `max_tokens`.
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
    budget_omitted: int = 0


class GetResult(Msg, tag="get_result", frozen=True):
    """Text of the requested lines; `to_line` is 0 when no line was returned.

    `note`: how a file that is not UTF-8 was read, as `status` says it
    (``not UTF-8: read as gb18030``: the text is decoded from that
    encoding; or its invalid bytes replaced with U+FFFD); None for UTF-8.
    The file itself is as it was.
    """

    path: str
    text: str
    from_line: int
    to_line: int
    total_lines: int
    note: str | None = None


class AppendResult(Msg, tag="append_result", frozen=True):
    """Where the text landed; `indexed` means the next search will find it.

    `redactions`: the masked forms of the secrets masked before the text was
    written (``sk_live_…``, ``postgres://u:***@db/app``), as `LogResult`
    lists them; empty when nothing was masked (and from a daemon that
    predates masking on append).
    """

    path: str
    start_line: int
    end_line: int
    created: bool
    indexed: bool
    citation: str
    redactions: tuple[str, ...] = ()


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
    """One memory in a recall block: the unescaped text and where it is.

    `score` is its hit's fused score, which orders the block; `evidence` is
    what the recall's `min_score` judged (`SearchHit.evidence`), None from a
    daemon that predates it.
    """

    text: str
    score: float
    category: str
    citation: str
    path: str
    start_line: int
    end_line: int
    evidence: float | None = None


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
    was removed, `candidates` lists what the request could have meant.

    `cited_as`: the citation the request gave, when what it was given for
    had since moved (reason ``citation_moved``) and was forgotten where it
    now is, `removed`; None otherwise (and from a daemon that predates it).
    """

    removed: tuple[str, ...]
    removed_text: tuple[str, ...]
    candidates: tuple[ForgetCandidate, ...]
    reason: str
    cited_as: str | None = None


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


class CompactCheckResult(Msg, tag="compact_check_result", frozen=True):
    """`action` is ``compact`` once `tokens` reached `threshold_tokens`, else
    ``within_budget``; compacting should bring the context down to
    `budget_tokens`, so `excess_tokens` (never negative) must go."""

    action: str
    tokens: int
    context_window: int
    threshold_tokens: int
    budget_tokens: int
    excess_tokens: int


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
    already open, `tasks_done` open tasks the completed items closed.

    `redactions`: the masked forms of the secrets masked before the journal
    and the tasks were written, as `AppendResult` lists them; empty when
    nothing was masked (and from a daemon that predates masking here)."""

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
    redactions: tuple[str, ...] = ()


class TasksResult(Msg, tag="tasks_result", frozen=True):
    """`changed` are the tasks the action changed, `unchanged` those already
    as asked (an open duplicate, a task already done); `tasks` is the listing
    `status` selected, after the change; `open` and `done` count them all.

    `redactions`: the masked forms of the secrets masked in the tasks added
    before they were written (`AppendResult` lists them alike); empty for
    any other action, when nothing was masked, and from an older daemon."""

    path: str
    action: str
    changed: tuple[TaskItem, ...]
    unchanged: tuple[TaskItem, ...]
    tasks: tuple[TaskItem, ...]
    open: int
    done: int
    took_ms: float
    indexed: bool = True  # False: written, but the index failed (see status); queued
    redactions: tuple[str, ...] = ()
