"""Human-readable output for the CLI; `--json` bypasses all of this."""

from __future__ import annotations

import re
import sys
import time
import unicodedata
from collections import Counter
from typing import Final

from omem_protocol import (
    AppendResult,
    CaptureResult,
    CompactCheckResult,
    CompactResult,
    DoctorResult,
    FlushCheckResult,
    ForgetResult,
    KeywordIndexStatus,
    LogResult,
    PrimerResult,
    Progress,
    RerankStatus,
    RestoreResult,
    SearchHit,
    SearchResult,
    SessionEndResult,
    StatusResult,
    SyncResult,
    TaskItem,
    TasksResult,
)

EMPTY_REASONS = {
    "index_empty": "the index is empty: add notes to the workspace or run `omem-client sync`",
    "no_terms": "the query has no searchable words",
    "no_match": "no note contains any of the query's words",
    "below_min_score": "no match reached the minimum score",
    "nothing_dated": "no notes of the days the query names",
}


def search_lines(result: SearchResult, *, explain: bool = False) -> list[str]:
    """``score path:start-end · section`` then the snippet indented, a blank
    line between hits. The section is the heading path of the snippet's first
    line as `SearchHit.section` gives it (none when that line is the heading
    itself, and without a title that only names the file).

    With *explain*, a header says how scores were combined and each hit gets
    a line with its parts.
    """
    lines: list[str] = []
    if explain and result.explain is not None:
        lines.extend(_explain_header(result))
    for hit in result.results:
        if lines:
            lines.append("")
        section = hit.section()
        where = f" · {section}" if section else ""
        if hit.workspace:  # a search of several
            where += f"  [{hit.workspace}]"
        lines.append(f"{hit.score:.3f} {hit.path}:{hit.start_line}-{hit.end_line}{where}")
        if explain:
            lines.append("  [" + _parts(hit) + "]")
        lines.extend(_indented(hit.snippet))
    return lines


def _indented(snippet: str) -> list[str]:
    """The snippet's lines indented, a run of blank lines shown as one: the
    lines a template's comments and hints leave blank in the index (the JSON
    keeps every line, so its line numbers stay exact)."""
    shown: list[str] = []
    for line in snippet.split("\n"):
        if not line.strip() and shown and not shown[-1].strip():
            continue
        shown.append("  " + line)
    return shown


def _explain_header(result: SearchResult) -> list[str]:
    ex = result.explain
    assert ex is not None
    if result.mode == "hybrid":
        if ex.fusion == "rrf":
            formula = "reciprocal rank fusion of the vector and keyword ranks"
        elif ex.fusion == "calibrated":
            signals = ["both ranks", "the vector gap to the best", "term coverage", "query dates"]
            if ex.neighbours:
                signals.append("neighbouring chunks")
            formula = "calibrated estimate from " + ", ".join(signals[:-1]) + " and " + signals[-1]
            if ex.head_estimate:
                formula += "; the first three re-estimated to put the answer first"
        else:
            formula = f"{ex.vector_weight:.2f}·vector + {ex.text_weight:.2f}·text"
    elif result.mode == "vector":
        formula = "vector score only (search.hybrid = false)"
    elif result.mode == "timeline":
        formula = "the notes of the days the query names, newest first"
    else:
        formula = "keyword score only (no vector leg)"
    decay = f"half-life {ex.half_life_days:g} d, floor {ex.decay_floor:g}" if ex.decay else "off"
    mmr = f"λ {ex.mmr_lambda:g}" if ex.mmr else "off"
    via = result.provider + (f" ({result.model})" if result.model else "")
    lines = [
        f"# {result.mode} search via {via}: score = {formula}; decay {decay}; MMR {mmr}",
        f"# terms: {' '.join(ex.query_terms) or '(none)'}; candidates: "
        f"{ex.lexical_candidates} keyword, {ex.vector_candidates} vector; "
        f"min score {result.min_score:.2f}; {result.took_ms:.1f} ms",
    ]
    if ex.dates:
        days = ", ".join(d.start if d.start == d.end else f"{d.start} to {d.end}" for d in ex.dates)
        if result.mode == "timeline":
            how = "their notes listed"
        elif ex.dates_as_words:
            how = "no note is of those days: searched as words"
        else:
            how = "notes of those days ranked higher"
        lines.append(f"# dates: {days} ({how})")
    rr = ex.rerank
    if rr is not None:
        who = f"{rr.provider} {rr.model}".strip()
        if rr.error is None:
            lines.append(
                f"# reranked by {who}: the best {rr.sent} scored {rr.weight:g}·rerank + "
                f"{1 - rr.weight:g}·fused; {rr.took_ms:.1f} ms"
            )
        elif rr.skipped:
            lines.append(f"# not reranked by {who} ({rr.error}); fused order kept")
        else:
            lines.append(f"# rerank by {who} failed ({rr.error}); fused order kept")
    return lines


def _parts(hit: SearchHit) -> str:
    def part(value: float | None) -> str:
        return "-" if value is None else f"{value:.3f}"

    mmr = f" · mmr #{hit.mmr_rank}" if hit.mmr_rank is not None else ""
    rerank = f" · rerank {hit.rerank_score:.3f}" if hit.rerank_score is not None else ""
    # what min_score judged: a cross-script or near-baseline vector match is
    # not its plain vector score
    judged = f" · evidence {hit.evidence:.3f}" if hit.evidence is not None else ""
    return (
        f"vector {part(hit.vector_score)} · text {part(hit.text_score)}{judged}{rerank} · "
        f"decay {hit.decay:.3f}{mmr}"
    )


def search_notes(result: SearchResult) -> list[str]:
    """Remarks about the result that belong on stderr, not in the data."""
    notes: list[str] = []
    if not result.results and result.empty_reason:
        reason = EMPTY_REASONS.get(result.empty_reason, result.empty_reason)
        if result.empty_reason == "below_min_score":
            closest = "" if result.best_score is None else f", the closest {result.best_score:.3f}"
            reason += (
                f" ({result.min_score:.2f}{closest}); a minimum score of 0"
                " shows the closest matches anyway"
            )
        notes.append(f"({reason})")
    if result.threshold_relaxed:
        notes.append(
            f"(no result reached min score {result.min_score:.2f}; showing the closest matches)"
        )
    if result.degraded:
        notes.append(f"(degraded: {result.degraded_reason or 'vector search unavailable'})")
    if result.stale:
        notes.append("(the index is being updated; results may lag the files)")
    if result.budget_omitted:
        notes.append(
            f"({result.budget_omitted} more result(s) left out to stay within the token budget)"
        )
    return notes


def append_lines(result: AppendResult) -> list[str]:
    """Where the text went, then each secret masked before it was written
    (as `log_lines` lists them): the caller must learn that the file does
    not say exactly what was sent."""
    state = "indexed" if result.indexed else "not indexed"
    created = ", new file" if result.created else ""
    masked = len(result.redactions)
    secrets = f", {masked} secret{'s' if masked > 1 else ''} masked" if masked else ""
    head = f"Appended to {result.citation} ({state}{created}{secrets})"
    return [head, *(f"  masked: {form}" for form in result.redactions)]


def sync_lines(result: SyncResult) -> list[str]:
    lines = [
        f"Synced {result.scanned} files: {result.added} added, {result.updated} updated, "
        f"{result.removed} removed, {result.unchanged} unchanged, {result.skipped} skipped "
        f"({result.took_ms:.0f} ms)"
    ]
    lines.extend(f"  ! {issue}" for issue in result.issues)
    return lines


def status_lines(status: StatusResult) -> list[str]:
    lines = [
        f"openmemoryd {status.daemon_version} (protocol {status.protocol}, pid {status.pid}, "
        f"up {_duration(status.uptime_s)})",
        f"Socket:     {status.socket}",
        f"HTTP:       {status.http or 'off'}",
        f"Workspace:  {status.workspace} -> {status.workspace_path}"
        + (f" (serving: {', '.join(status.workspaces)})" if len(status.workspaces) > 1 else ""),
        f"Index:      {status.index_path} ({_size(status.index_bytes)})",
        f"Files:      {_files(status.files_indexed, status.files_skipped)} / "
        f"{status.files_on_disk} on disk",
        f"Chunks:     {status.chunks}",
    ]
    for counts in status.sources:
        skipped = f", {counts.files_skipped} skipped" if counts.files_skipped else ""
        lines.append(
            f"  {counts.source}: {counts.files_indexed - counts.files_skipped}/"
            f"{counts.files_on_disk} files, {counts.chunks} chunks{skipped}"
        )
    lines.append(f"Vectors:    {_embedding_line(status)}")
    vector = f"{status.provider} {status.model or ''}".strip() if status.vector else "off"
    lines.append(
        f"Search:     keyword {'ready' if status.fts else 'unavailable'} · vector {vector}"
    )
    if status.keyword_index is not None:
        lines.append(f"Keywords:   {_keyword_line(status.keyword_index)}")
    if status.rerank is not None:
        lines.append(f"Rerank:     {_rerank_line(status.rerank)}")
    lines.append(f"Sync:       {'running' if status.syncing else 'idle'}{_last_sync(status)}")
    if status.rebuild:
        lines.append(f"Rebuild:    {status.rebuild} (searches use the previous index meanwhile)")
    lines.extend(_sync_lines(status))
    if status.issues:
        lines.append("Issues:")
        lines.extend(f"  ! {issue}" for issue in status.issues)
    else:
        lines.append("Issues:     none")
    return lines


def _files(recorded: int, skipped: int) -> str:
    """Indexed files and, apart, the skipped ones: the index records a file
    it skipped (binary, too large) so as not to read it again, but its text
    cannot be found, so counting it as indexed would overstate what search
    sees. `doctor` counts them so too (``memory 4/5 (…, 1 skipped)``)."""
    if not skipped:
        return f"{recorded} indexed"
    return f"{recorded - skipped} indexed, {skipped} skipped (see Issues)"


def _keyword_line(keywords: KeywordIndexStatus) -> str:
    """How many b-trees the keyword index has and what the merger is doing."""
    if keywords.segments is None:
        return keywords.state
    noun = "segment" if keywords.segments == 1 else "segments"
    doing = {
        "merging": "merging into one, between writes",
        "waiting": "will merge once indexing settles",
        # several segments too small to be worth a merge are not "merged"
        "merged": "merged" if keywords.segments == 1 else "none worth merging",
    }.get(keywords.state, keywords.state)
    return f"{keywords.segments} {noun} ({doing})"


def _rerank_line(rerank: RerankStatus) -> str:
    """Which reranker runs and what became of the searches that reached it."""
    if rerank.model is None:
        return f"off ({rerank.off})" if rerank.off else "off"
    who = f"{rerank.provider} {rerank.model}" if rerank.provider != "auto" else rerank.model
    counts = [
        (rerank.reranked, "reranked"),
        (rerank.confident, "the fusion was sure of"),
        (rerank.held_back, "held back while others searched"),
        (rerank.not_applicable, "it does not apply to"),
        (rerank.failed, "failed"),
    ]
    said = [f"{n} {what}" for n, what in counts if n]
    if not said:
        return f"{who} · no search has reached it yet"
    total = sum(n for n, _ in counts)
    return f"{who} · {total} search{'es' if total != 1 else ''}: {', '.join(said)}"


def _sync_lines(status: StatusResult) -> list[str]:
    sync = status.sync
    if sync is None:
        return []
    if sync.watcher == "off":
        watcher = "off (changes are found by the periodic check and `omem-client sync`)"
    else:
        health = "healthy" if sync.watcher_healthy else f"NOT healthy ({sync.watcher_error})"
        last = (
            f" · last event {_ago(sync.watcher_last_event_at)}"
            if sync.watcher_last_event_at
            else ""
        )
        restarts = f" · {sync.watcher_restarts} restart(s)" if sync.watcher_restarts else ""
        watcher = f"{sync.watcher}, {health}{last}{restarts}"
    queue = f"queue {sync.queue_depth}" + (" · indexing now" if sync.running else "")
    if sync.last_reason:
        queue += f" · last {sync.last_reason} {_ago(sync.last_finished_at)}"
    lines = [f"Watcher:    {watcher}", f"Changes:    {queue}"]
    if sync.pending_sessions:
        waiting = sum(p.pending_bytes for p in sync.pending_sessions)
        lines.append(
            f"Sessions:   {len(sync.pending_sessions)} transcript(s) with {_size(waiting)} "
            "not indexed yet (below the delta thresholds)"
        )
    return lines


def _ago(when: float | None) -> str:
    if when is None:
        return "never"
    return f"{_duration(max(0.0, time.time() - when))} ago"


class ProgressBar:
    """``sync`` progress on stderr: a bar, done/total, elapsed and ETA."""

    WIDTH = 30

    def __init__(self, *, enabled: bool) -> None:
        self._enabled = enabled
        self._started = time.monotonic()
        self._drawn = False
        # (phase, when, done) at the first report of the current phase
        self._since: tuple[str, float, int] | None = None

    def update(self, progress: Progress) -> None:
        if not self._enabled or not progress.total:
            return
        now = time.monotonic()
        elapsed = now - self._started
        fraction = min(1.0, progress.done / progress.total)
        filled = int(self.WIDTH * fraction)
        bar = "#" * filled + "-" * (self.WIDTH - filled)
        sys.stderr.write(
            f"\r[{bar}] {progress.done}/{progress.total} {progress.phase} · "
            f"elapsed {_clock(elapsed)} · eta {self._eta(progress, now)}\033[K"
        )
        sys.stderr.flush()
        self._drawn = True

    def _eta(self, progress: Progress, now: float) -> str:
        """The time left at the rate of this phase since this command saw it
        begin: the vectors built before `sync --wait` started, and the time
        the indexing took, counted as built at this rate made the ETA grow
        as it ran ("eta 0:11", then 1:04, 1:53, for some 25 minutes)."""
        if self._since is None or self._since[0] != progress.phase:
            self._since = (progress.phase, now, progress.done)
            return "?"
        _, when, done = self._since
        if progress.done <= done or now <= when:
            return "?"
        rate = (progress.done - done) / (now - when)
        return _clock(max(0, progress.total - progress.done) / rate)

    def finish(self) -> None:
        if self._drawn:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()


def _clock(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes}:{secs:02d}"


def _embedding_line(status: StatusResult) -> str:
    emb = status.embedding
    if emb is None or emb.state == "off":
        reason = emb.reason if emb is not None and emb.reason else "no embedding provider"
        return f"off ({reason})"
    model = f"{emb.provider} {emb.model or ''}".strip()
    dims = f", {emb.dims} dims" if emb.dims else ""
    fallback = " · FALLBACK in use" if emb.fallback_active else ""
    if emb.batch_jobs:
        fallback += f" · {emb.batch_jobs} batch jobs running"
    line = (
        f"{emb.state} · {model}{dims} · {emb.embedded}/{emb.total} chunks"
        f" · cache {emb.cache_entries}{fallback}"
    )
    if emb.state == "rebuilding":
        line += " (searches use keywords until the new vectors are complete)"
    return line


def _last_sync(status: StatusResult) -> str:
    last = status.last_sync
    if last is None:
        return " · never synced"
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(last.finished_at))
    outcome = f"failed: {last.error}" if last.error else f"{last.took_ms:.0f} ms"
    return f" · last {when} ({last.reason}, {outcome})"


def _duration(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    if hours:
        return f"{hours}h{minutes:02d}m"
    if minutes:
        return f"{minutes}m{secs:02d}s"
    return f"{secs}s"


def _size(count: int) -> str:
    value = float(count)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{count} B"


def capture_lines(result: CaptureResult) -> list[str]:
    """What was captured and why each other message was not, the messages
    counted from 1 as a person counts them (the reply's ``index`` counts
    from 0, as a program does: "message 1" was the second one)."""
    lines = [f"Captured {c.citation} [{c.category}] {c.text}" for c in result.captured]
    if not result.captured:
        lines.append("Nothing captured.")
    lines += [f"  skipped message {r.index + 1}: {r.reason} ({r.detail})" for r in result.rejected]
    return lines


# How the daemon says a primer file got no room: it names the budget given and
# the smallest one that shows some of the file. The second form is an older
# daemon's, still running after the client was upgraded.
_SHOWN_FROM = re.compile(
    r"no room in (?:a \d+-token budget; a budget of|the budget \(shown from a budget of) "
    r"(\d+) tokens"
)


def budget_showing(reason: str) -> int | None:
    """The smallest budget that shows the file a primer's *reason* is about,
    or None when it was left out for another reason (empty, missing)."""
    found = _SHOWN_FROM.search(reason)
    return int(found[1]) if found else None


def primer_notes(result: PrimerResult) -> list[str]:
    """Why the primer leaves files out, for stderr.

    A budget that held nothing printed nothing at all, which reads as empty
    memory files; the reasons (`omitted`) were only in ``--json``. An empty
    primer now says which it is, and with what budget the files show.
    """
    notes: list[str] = []
    if not result.text:
        needed = [n for n in map(budget_showing, result.omitted) if n is not None]
        if needed:
            notes.append(
                f"(nothing fitted in a {result.budget}-token budget, but the memory files are "
                f"not empty: --budget {min(needed)} shows the first of them)"
            )
        else:
            notes.append("(nothing to start with: the memory files hold no memories yet)")
    for reason in result.omitted:
        path, colon, why = reason.partition(": ")
        notes.append(f"({path} left out: {why})" if colon else f"(left out: {reason})")
    return notes


# How much of a memory's text a confirmation quotes (`shortened`).
QUOTED_CHARS: Final = 200


def shortened(text: str, limit: int = QUOTED_CHARS) -> str:
    """*text*, or its first *limit* characters and how many more there are.

    A line may hold up to a million characters (`append` takes them), and a
    confirmation that echoes one whole buries the terminal or an agent's
    context in text the reader has just removed; its start says which memory
    it was, the citation where. The cut never splits a visible character (a
    letter and its accents, an emoji sequence), as the daemon's snippets do
    not. Only the text output is shortened: ``--json`` and an MCP tool's
    structured result keep the whole text.
    """
    if len(text) <= limit:
        return text
    cut = limit
    while cut > 0 and (_continues(text[cut]) or text[cut - 1] == "\u200d"):
        cut -= 1
    cut = cut or limit  # one "character" of hundreds of combining marks
    more = len(text) - cut
    return f"{text[:cut]}… ({more:,} more character{'' if more == 1 else 's'})"


def _continues(ch: str) -> bool:
    """Whether *ch* belongs to the character before it (as the daemon's
    `text.boundaries` reads it; the client does not import the daemon)."""
    return (
        ch == "\u200d"
        or "\ufe00" <= ch <= "\ufe0f"
        or "\U000e0100" <= ch <= "\U000e01ef"
        or "\U0001f3fb" <= ch <= "\U0001f3ff"
        or unicodedata.combining(ch) != 0
    )


def forget_lines(result: ForgetResult) -> list[str]:
    """What was removed, or why nothing was and what could be meant; each
    memory's text `shortened`, as `--json` never is."""
    if result.removed:
        moved = _cited_as(result)
        return [
            f"Forgot {cited}{moved}: {shortened(text)}"
            for cited, text in zip(result.removed, result.removed_text, strict=True)
        ]
    if not result.candidates:
        return ["Nothing matched; nothing was removed."]
    lone = len(result.candidates) == 1
    why = {
        "several_matches": "several places match",
        "several_memories": "the citation holds several memories",
    }.get(
        result.reason, "the closest match is not a clear one" if lone else "no single clear match"
    )
    lines = [f"Nothing removed: {why}. {'Candidate' if lone else 'Candidates'}:"]
    lines += [f"  {c.score:.2f} {c.citation} {shortened(c.text)}" for c in result.candidates]
    lines.append("Forget one by its citation: omem-client forget PATH#Ln")
    return lines


def _cited_as(result: ForgetResult) -> str:
    """`` (cited as #L13; the file changed since)`` when the memory was found
    where it moved to, not at the lines its citation named; else ""."""
    if result.cited_as is None:
        return ""
    path, _, lines = result.cited_as.partition("#")
    same_file = all(cited.partition("#")[0] == path for cited in result.removed)
    shown = f"#{lines}" if same_file and lines else result.cited_as
    return f" (cited as {shown}; the file changed since)"


def restore_lines(result: RestoreResult) -> list[str]:
    if not result.blocks:
        return ["Nothing is missing: every journalled append is in its file."]
    verb = "Would restore" if result.dry_run else "Restored"
    lines = []
    for block in result.blocks:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(block.appended_at))
        where = block.citation or block.path
        first = block.text.split("\n", 1)[0]
        lines.append(f"{verb} {where} (appended {when}): {first}")
    return lines


def flush_lines(result: FlushCheckResult) -> list[str]:
    """Yes/no with the arithmetic behind it, then the prompts to run."""
    why = {
        "threshold_reached": f"{result.tokens} tokens >= threshold {result.threshold}",
        "below_threshold": f"{result.tokens} tokens < threshold {result.threshold}",
        "already_flushed": f"already flushed in compaction cycle {result.cycle}",
        "read_only": "the workspace is read-only",
        "disabled": "the memory flush is disabled in the config",
    }.get(result.reason, result.reason)
    if not result.should_flush:
        return [f"flush: no ({why})"]
    return [
        f"flush: yes ({why})",
        "",
        "system:",
        result.system_prompt,
        "",
        "user:",
        result.prompt,
    ]


DOCTOR_MARKS = {"ok": "✓", "warn": "!", "fail": "✗"}


def doctor_lines(result: DoctorResult) -> list[str]:
    """``✓ name: detail`` per check, ``fix:`` indented under any that is not
    ok, then a one-line summary. `openmemoryd doctor` prints the same, so
    the two commands read alike."""
    lines: list[str] = []
    for check in result.checks:
        lines.append(f"{DOCTOR_MARKS.get(check.status, '?')} {check.name}: {check.detail}")
        if check.fix:
            lines.append(f"    fix: {check.fix}")
    total = len(result.checks)
    counts = Counter(check.status for check in result.checks)
    if counts["ok"] == total:
        lines.append(f"All {total} checks passed.")
    else:
        lines.append(
            f"{total} check{'' if total == 1 else 's'}: {counts['ok']} ok, "
            f"{counts['warn']} warning(s), {counts['fail']} failed."
        )
    return lines


# ---------------------------------------------------------------- session end and tasks

TASK_VERBS = {"add": "Added", "done": "Done", "reopen": "Reopened", "remove": "Removed"}
TASK_ALREADY = {"add": "Already open", "done": "Already done", "reopen": "Already open"}


def task_line(task: TaskItem) -> str:
    """``id  [x] text  (added …, done …)``: the id is what `tasks done ID` takes."""
    dates = [f"added {task.added}"] if task.added else []
    if task.completed:
        dates.append(f"done {task.completed}")
    when = f"  ({', '.join(dates)})" if dates else ""
    return f"{task.id}  [{'x' if task.done else ' '}] {task.text}{when}"


def tasks_lines(result: TasksResult, status: str) -> list[str]:
    """What the action changed, then the listing it asked for, then the counts."""
    lines = [f"{TASK_VERBS[result.action]}: {task_line(t)}" for t in result.changed]
    already = TASK_ALREADY.get(result.action, "Unchanged")
    lines += [f"{already}: {task_line(t)}" for t in result.unchanged]
    if result.action != "list":
        counts = f"{result.open} open, {result.done} done in {result.path}"
        masked = [f"  masked: {form}" for form in result.redactions]
        return [*lines, *masked, counts, *_not_indexed(result.indexed)]
    lines += ["  " + task_line(t) for t in result.tasks]
    if not result.tasks:
        lines.append(f"No {'' if status == 'all' else status + ' '}tasks in {result.path}.")
    summary = f"{result.open} open, {result.done} done"
    if status == "open" and result.done:
        summary += " (--all shows the done ones too)"
    return [*lines, summary]


def session_end_lines(result: SessionEndResult) -> list[str]:
    lines = [f"Journal written to {result.citation}"]
    # what was masked before the journal and the tasks were written, as
    # `append_lines` lists it
    lines += [f"  masked: {form}" for form in result.redactions]
    lines += [f"New task: {task_line(t)}" for t in result.tasks_added]
    lines += [f"Already open: {task_line(t)}" for t in result.tasks_existing]
    lines += [f"Marked done: {task_line(t)}" for t in result.tasks_done]
    return [*lines, *_not_indexed(result.indexed)]


def _not_indexed(indexed: bool) -> list[str]:
    """The line that says a write is in the Markdown but not searchable yet."""
    if indexed:
        return []
    return ["Written, but not indexed yet: the index failed (see `omem-client status`)."]


def log_lines(result: LogResult) -> list[str]:
    """Where the memory went (or why not), then every reason, one a line."""
    similar = result.similar
    if result.status == "rejected":
        head = f"Rejected ({result.rule}): nothing written"
    elif result.status == "conflict" and similar is not None:
        head = (
            f"Not written: a possible conflict with {similar.citation} (similarity "
            f"{similar.similarity:.2f}, words {similar.lexical:.2f}): {similar.text}"
        )
    elif result.status == "reinforced" and similar is not None:
        done, now = ("Would reinforce", "to") if result.dry_run else ("Reinforced", "now")
        head = f"{done} {similar.citation} ({now} ×{similar.count + 1}): {similar.text}"
    elif result.status == "replaced" and similar is not None:
        done = "Would replace" if result.dry_run else "Replaced"
        head = f"{done} {similar.citation}: {similar.text} → {result.text}"
    else:
        where = result.citation or result.path or "?"
        section = f" (§ {result.section})" if result.section else ""
        done = "Would be written to" if result.dry_run else "Written to"
        head = f"{done} {where}{section}: {result.text}"
    if result.dry_run and result.status not in ("rejected", "conflict"):
        # What a dry run says it did must not read as done ("Written to").
        head = "Dry run, nothing changed. " + head
    lines = [head]
    lines += [f"  masked: {masked}" for masked in result.redactions]
    lines += [f"  - {reason}" for reason in result.reasons]
    if result.status == "conflict":
        lines.append("Swap it with --replace, or keep both with --force.")
    return lines


def compact_lines(result: CompactResult) -> list[str]:
    """What was done and what it saved, then the summary itself."""
    lines = [
        f"Compacted {result.messages_summarised} message(s) in {result.stages} stage(s) "
        f"({result.calls} request(s) to {result.provider} {result.model}); "
        f"kept the last {result.messages_kept}.",
        f"Tokens: {result.tokens_before} -> {result.tokens_after}",
        f"Summary appended to {result.citation}",
    ]
    lines += [f"Captured {c.citation} [{c.category}] {c.text}" for c in result.captured]
    return [*lines, "", result.summary]


def compact_check_lines(result: CompactCheckResult) -> list[str]:
    share = f"{result.tokens:,} of {result.context_window:,} tokens"
    if result.action == "compact":
        return [
            f"Compact now: {share} (the threshold is {result.threshold_tokens:,}); bring it "
            f"to {result.budget_tokens:,} ({result.excess_tokens:,} tokens to go)."
        ]
    return [f"Within budget: {share} (compaction starts at {result.threshold_tokens:,})."]
