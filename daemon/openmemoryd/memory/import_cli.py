"""`openmemoryd import`: the importer, run from the command line.

It writes the files itself (under the same locks the daemon uses), so it
works whether or not a daemon runs; when one answers on the socket it is
asked to sync, so the imported memory is searchable when the command ends.
For the same reason it reads what was forgotten (`memory.forgotten`) from
the state dir itself, the record the daemon writes at every forget, and
drops the tombstones of lines it brings back on request.
"""

from __future__ import annotations

import re
from collections import defaultdict
from datetime import date
from pathlib import Path
from typing import Final

from omem_client import Client, OmemError
from openmemoryd.config import Config
from openmemoryd.memory import forgotten
from openmemoryd.memory.importer import Outcome, apply_import, read_source
from openmemoryd.workspace import PathPolicy

# What a terminal would obey in a line of someone else's Markdown (ESC, BEL,
# the C1 controls…), and the lone surrogates that stand for bytes that are
# not UTF-8 (printing one raises). The report shows them escaped.
_UNPRINTABLE: Final = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")


def import_memory(
    config: Config,
    source: Path,
    *,
    dry_run: bool,
    all_lines: bool = False,
    include_forgotten: bool = False,
) -> list[Outcome]:
    """Import *source*; lines forgotten since are held back unless
    *include_forgotten*, which brings them back and drops their tombstones.
    Raises `forgotten.DamagedRecord` rather than import past a record it
    cannot read."""
    limit = config.index.max_file_bytes
    incoming = read_source(source, max_file_bytes=limit)
    policy = PathPolicy(config.workspace, config.extra_paths)
    gone: defaultdict[str, set[str]] = defaultdict(set)
    for path, digest in forgotten.load(config.forgotten_path):
        gone[path].add(digest)
    outcomes = apply_import(
        policy,
        incoming,
        dry_run=dry_run,
        today=date.today(),
        max_file_bytes=limit,
        all_lines=all_lines,
        forgotten=gone,
        include_forgotten=include_forgotten,
    )
    if include_forgotten and not dry_run:
        for o in outcomes:
            forgotten.clear(config.forgotten_path, o.target, o.forgotten)
    return outcomes


def outcome_lines(
    outcomes: list[Outcome], *, dry_run: bool, include_forgotten: bool = False
) -> list[str]:
    """The report: a line per file, a total, then every line held back or left
    out, with the workspace line it was measured against, so the user can
    judge it (and add it with ``--all-lines`` or by hand). Lines forgotten
    since are counted per file, never shown: they were forgotten so as not
    to be seen again (``--include-forgotten`` brings them back)."""
    verbs = (
        {"create": "would create", "merge": "would merge into", "unchanged": "unchanged"}
        if dry_run
        else {"create": "created", "merge": "merged into", "unchanged": "unchanged"}
    )
    lines = []
    for o in outcomes:
        notes = []
        if o.action == "merge":
            notes.append(_count(o.lines_added, "new line"))
        if o.held_back:
            notes.append(f"{len(o.held_back)} held back")
        if o.not_text:
            notes.append(f"{len(o.not_text)} not UTF-8")
        if o.forgotten:
            notes.append(f"{len(o.forgotten)} forgotten since")
        extra = f" ({', '.join(notes)})" if notes else ""
        lines.append(f"  {verbs[o.action]} {_shown(o.target)}{extra}  <- {_shown(o.origin)}")
    counts = {a: sum(o.action == a for o in outcomes) for a in ("create", "merge", "unchanged")}
    lines.append(
        f"{_count(len(outcomes), 'file')}: {counts['create']} new, {counts['merge']} merged, "
        f"{counts['unchanged']} unchanged" + (" (dry run: nothing written)" if dry_run else "")
    )
    held = [(o.target, h) for o in outcomes for h in o.held_back]
    if held:
        verb = "Would hold back" if dry_run else "Held back"
        lines.append(
            f"{verb} 1 line that looks like an older version of a line you have now"
            " (`--all-lines` adds it too):"
            if len(held) == 1
            else f"{verb} {len(held)} lines that look like older versions of lines you have"
            " now (`--all-lines` adds them too):"
        )
        for target, h in held:
            lines.append(f"  {_shown(target)}:{h.current_line} now: {_shown(h.current.strip())}")
            lines.append(f"    the import has: {_shown(h.line.strip())}")
    lines += _forgotten_lines(outcomes, dry_run=dry_run, include=include_forgotten)
    not_text = [(o.target, line) for o in outcomes for line in o.not_text]
    if not_text:
        lines.append(
            f"Left out {_count(len(not_text), 'line')} that {'is' if len(not_text) == 1 else 'are'}"
            " not UTF-8 text (the source still has them):"
        )
        lines += [f"  {_shown(target)}: {_shown(line.strip())}" for target, line in not_text]
    return lines


def _forgotten_lines(outcomes: list[Outcome], *, dry_run: bool, include: bool) -> list[str]:
    per_file = [(o.target, len(o.forgotten)) for o in outcomes if o.forgotten]
    total = sum(n for _, n in per_file)
    if not total:
        return []
    lines = _count(total, "line")
    if include:
        verb = "Would bring back" if dry_run else "Brought back"
        head = f"{verb} {lines} forgotten since the export:"
    else:
        verb = "Would hold back" if dry_run else "Held back"
        them = "it" if total == 1 else "them"
        flag = "`--include-forgotten`"
        head = f"{verb} {lines} forgotten since the export ({flag} brings {them} back):"
    return [head, *(f"  {_shown(target)}: {_count(n, 'line')}" for target, n in per_file)]


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _shown(text: str) -> str:
    """*text* safe to print: see `_UNPRINTABLE` (a surrogate shows the byte it stands for)."""

    def escape(found: re.Match[str]) -> str:
        code = ord(found.group())
        if 0xDC80 <= code <= 0xDCFF:
            return f"\\x{code - 0xDC00:02x}"
        return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"

    return _UNPRINTABLE.sub(escape, text)


def sync_running_daemon(config: Config) -> str:
    try:
        with Client(config.socket, timeout=600) as client:
            result = client.sync()
    except OmemError:
        return "No daemon is running: the files are indexed when it starts."
    return f"Indexed by the running daemon ({result.added} added, {result.updated} updated)."
