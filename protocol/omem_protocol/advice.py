"""The fields of a successful reply in which the daemon gives advice.

The daemon words its advice for a shell, because the CLI prints it as is:
a status issue ends "(omem-client restore re-adds them)", a doctor check's
fix says "run `omem-client sync`", a primer cut short points at
``omem-client get``. A caller of the HTTP API (a remote agent, a web UI) or
an MCP agent has no such shell, so each of those surfaces says the advice
in its own terms: the request, or the tool, that does the same. Which
fields hold advice is a property of the replies, said once here; the words
each surface uses are its own (the gateway's `wording`, the MCP profiles).

Only advice is reworded, never what the memory holds: a note reading "run
`omem-client sync` after editing" must reach every caller as written. So a
search hit, a read's text, a recalled memory are never touched, and of a
primer's text only the marker lines the daemon adds for what it left out
(`PRIMER_MARKER`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Final, TypeVar

import msgspec

from omem_protocol._base import Msg
from omem_protocol._results import DoctorCheck, DoctorResult, PrimerResult, SyncResult
from omem_protocol._status import LastSync, StatusResult, SyncStatus

__all__ = ["PRIMER_MARKER", "reword_advice"]

R = TypeVar("R", bound=Msg)

# The line a primer puts where it left lines of a file out:
# "(… 12 more lines: omem-client get memory/2026-11-23.md)".
PRIMER_MARKER: Final = re.compile(r"^\(… \d+ \w+ lines: .+\)$")


def reword_advice(result: R, reword: Callable[[str], str]) -> R:
    """*result* with each field that holds the daemon's advice passed through
    *reword*; every other field, and a result of any other kind, unchanged."""
    replace = msgspec.structs.replace
    if isinstance(result, StatusResult):
        return replace(
            result,
            issues=tuple(map(reword, result.issues)),
            last_sync=_last_sync(result.last_sync, reword),
            sync=_sync(result.sync, reword),
        )
    if isinstance(result, SyncResult):
        return replace(result, issues=tuple(map(reword, result.issues)))
    if isinstance(result, DoctorResult):
        checks = tuple(_check(check, reword) for check in result.checks)
        return replace(result, checks=checks)
    if isinstance(result, PrimerResult):
        lines = result.text.split("\n")
        text = "\n".join(reword(line) if PRIMER_MARKER.match(line) else line for line in lines)
        return replace(result, text=text, omitted=tuple(map(reword, result.omitted)))
    return result


def _check(check: DoctorCheck, reword: Callable[[str], str]) -> DoctorCheck:
    fix = None if check.fix is None else reword(check.fix)
    return msgspec.structs.replace(check, detail=reword(check.detail), fix=fix)


def _last_sync(last: LastSync | None, reword: Callable[[str], str]) -> LastSync | None:
    if last is None or last.error is None:
        return last
    return msgspec.structs.replace(last, error=reword(last.error))


def _sync(sync: SyncStatus | None, reword: Callable[[str], str]) -> SyncStatus | None:
    """The syncer's errors: a failed pass or a waiting watcher says why, and
    why may be advice (a workspace gone under the daemon says how to get it back)."""
    if sync is None:
        return None
    return msgspec.structs.replace(
        sync,
        last_error=None if sync.last_error is None else reword(sync.last_error),
        watcher_error=None if sync.watcher_error is None else reword(sync.watcher_error),
    )
