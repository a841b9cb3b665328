"""Human-readable output for the CLI; `--json` bypasses all of this."""

from __future__ import annotations

import time

from omem_protocol import AppendResult, SearchResult, StatusResult, SyncResult

EMPTY_REASONS = {
    "index_empty": "the index is empty: add notes to the workspace or run `omem-client sync`",
    "no_terms": "the query has no searchable words",
    "no_match": "no note contains any of the query's words",
    "below_min_score": "matches exist but none reached --min-score",
}


def search_lines(result: SearchResult) -> list[str]:
    """``score path:start-end`` then the snippet indented, a blank line between hits."""
    lines: list[str] = []
    for hit in result.results:
        if lines:
            lines.append("")
        lines.append(f"{hit.score:.3f} {hit.path}:{hit.start_line}-{hit.end_line}")
        lines.extend("  " + line for line in hit.snippet.split("\n"))
    return lines


def search_notes(result: SearchResult) -> list[str]:
    """Remarks about the result that belong on stderr, not in the data."""
    notes: list[str] = []
    if not result.results and result.empty_reason:
        reason = EMPTY_REASONS.get(result.empty_reason, result.empty_reason)
        if result.best_score is not None:
            reason += f" (best score {result.best_score:.3f} < {result.min_score:.2f})"
        notes.append(f"({reason})")
    if result.threshold_relaxed:
        notes.append(
            f"(no result reached min score {result.min_score:.2f}; showing keyword matches)"
        )
    if result.degraded:
        notes.append(f"(degraded: {result.degraded_reason or 'vector search unavailable'})")
    if result.stale:
        notes.append("(the index is being updated; results may lag the files)")
    return notes


def append_line(result: AppendResult) -> str:
    state = "indexed" if result.indexed else "not indexed"
    created = ", new file" if result.created else ""
    return f"Appended to {result.citation} ({state}{created})"


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
        f"Workspace:  {status.workspace} -> {status.workspace_path}",
        f"Index:      {status.index_path} ({_size(status.index_bytes)})",
        f"Files:      {status.files_indexed} indexed / {status.files_on_disk} on disk",
        f"Chunks:     {status.chunks}",
    ]
    for counts in status.sources:
        lines.append(
            f"  {counts.source}: {counts.files_indexed}/{counts.files_on_disk} files, "
            f"{counts.chunks} chunks"
        )
    vector = (
        f"{status.provider} {status.model or ''}".strip()
        if status.vector
        else "off (no embedding provider)"
    )
    lines.append(
        f"Search:     keyword {'ready' if status.fts else 'unavailable'} · vector {vector}"
    )
    lines.append(f"Sync:       {'running' if status.syncing else 'idle'}{_last_sync(status)}")
    if status.issues:
        lines.append("Issues:")
        lines.extend(f"  ! {issue}" for issue in status.issues)
    else:
        lines.append("Issues:     none")
    return lines


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
