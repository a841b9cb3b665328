"""`openmemoryd import`: the importer, run from the command line.

It writes the files itself (under the same locks the daemon uses), so it
works whether or not a daemon runs; when one answers on the socket it is
asked to sync, so the imported memory is searchable when the command ends.
"""

from __future__ import annotations

from datetime import date
from pathlib import Path

from omem_client import Client, OmemError
from openmemoryd.config import Config
from openmemoryd.memory.importer import Outcome, apply_import, read_source
from openmemoryd.workspace import PathPolicy


def import_memory(config: Config, source: Path, *, dry_run: bool) -> list[Outcome]:
    limit = config.index.max_file_bytes
    incoming = read_source(source, max_file_bytes=limit)
    policy = PathPolicy(config.workspace, config.extra_paths)
    return apply_import(policy, incoming, dry_run=dry_run, today=date.today(), max_file_bytes=limit)


def outcome_lines(outcomes: list[Outcome], *, dry_run: bool) -> list[str]:
    verbs = (
        {"create": "would create", "merge": "would merge into", "unchanged": "unchanged"}
        if dry_run
        else {"create": "created", "merge": "merged into", "unchanged": "unchanged"}
    )
    lines = []
    for o in outcomes:
        extra = f" ({o.lines_added} new lines)" if o.action == "merge" else ""
        lines.append(f"  {verbs[o.action]} {o.target}{extra}  <- {o.origin}")
    counts = {a: sum(o.action == a for o in outcomes) for a in ("create", "merge", "unchanged")}
    lines.append(
        f"{len(outcomes)} files: {counts['create']} new, {counts['merge']} merged, "
        f"{counts['unchanged']} unchanged" + (" (dry run: nothing written)" if dry_run else "")
    )
    return lines


def sync_running_daemon(config: Config) -> str:
    try:
        with Client(config.socket, timeout=600) as client:
            result = client.sync()
    except OmemError:
        return "No daemon is running: the files are indexed when it starts."
    return f"Indexed by the running daemon ({result.added} added, {result.updated} updated)."
