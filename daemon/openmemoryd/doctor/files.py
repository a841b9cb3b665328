"""The ``files`` check: the files on disk against the index, and every file
the index could not take as it is.

`status` lists a file the indexer skipped (binary, too large), one it read
lossily (not UTF-8) and a directory it could not list among its issues; the
doctor used to count only files, so it passed every check while `status`
listed problems, and a skipped file counted as indexed. Here those problems are gathered as
`status` gathers them (the disk scan's issues, then each noted file as
``path: note``) and each kind gets its fix; skipped files are counted apart.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Final

import apsw

from omem_protocol import DoctorCheck, SourceCounts
from openmemoryd.doctor.report import ok, warn
from openmemoryd.store import IndexedFile, indexed_files
from openmemoryd.workspace import PathPolicy, scan_memory_files

__all__ = ["files_check", "noted_files", "unreadable_paths"]

_MAX_SHOWN: Final = 3
# The indexer's notes (index/indexer.py) start so; every other note is a
# file read with invalid UTF-8 replaced.
_SKIPPED: Final = "skipped:"


def noted_files(conn: apsw.Connection) -> list[IndexedFile]:
    """The index's files that carry a note (skipped, or read lossily), by path."""
    files = indexed_files(conn)
    return [files[path] for path in sorted(files) if files[path].note is not None]


def unreadable_paths(policy: PathPolicy) -> list[str]:
    """What the disk scan could not list or stat (``status`` lists them too)."""
    return scan_memory_files(policy).issues


def files_check(
    sources: Sequence[SourceCounts],
    *,
    syncing: bool,
    running: bool,
    noted: Sequence[IndexedFile] = (),
    unreadable: Sequence[str] = (),
) -> DoctorCheck:
    """Files on disk against files indexed, per source, and the files the
    index holds only as a note (*noted*) or could not see (*unreadable*)."""
    name = "files"
    skipped = Counter(f.source for f in noted if _is_skipped(f))
    counts = ", ".join(_source_counts(s, skipped[s.source]) for s in sources)
    summary = f"indexed/on disk: {counts or 'no files'}"
    # A skipped file has its row (so it is not read again until it changes):
    # it is neither missing from the index nor gone from the disk.
    missing = sum(max(0, s.files_on_disk - s.files_indexed) for s in sources)
    gone = sum(max(0, s.files_indexed - s.files_on_disk) for s in sources)
    problems = [*unreadable, *(f"{f.path}: {f.note}" for f in noted)]
    if not missing and not gone and not problems:
        return ok(name, summary)
    parts = []
    fixes = _problem_fixes(noted, unreadable)
    if problems:
        parts.append(_listed(problems))
    if missing or gone:
        parts.append(_not_in_step(missing, gone, syncing=syncing))
        fixes.append(_sync_fix(syncing=syncing, running=running))
    return warn(name, f"{'; '.join(parts)}; {summary}", "; ".join(fixes))


def _is_skipped(f: IndexedFile) -> bool:
    return f.note is not None and f.note.startswith(_SKIPPED)


def _source_counts(counts: SourceCounts, skipped: int) -> str:
    indexed = counts.files_indexed - skipped
    apart = f", {skipped} skipped" if skipped else ""
    return f"{counts.source} {indexed}/{counts.files_on_disk} ({counts.chunks} chunks{apart})"


def _listed(problems: Sequence[str]) -> str:
    shown = "; ".join(problems[:_MAX_SHOWN])
    more = len(problems) - _MAX_SHOWN
    if more > 0:
        shown += f"; and {more} more (`omem-client status` lists them all)"
    return shown


def _not_in_step(missing: int, gone: int, *, syncing: bool) -> str:
    parts = []
    if missing:
        parts.append(f"{missing} file(s) on disk not yet indexed")
    if gone:
        parts.append(f"{gone} indexed file(s) no longer on disk")
    return " and ".join(parts) + (" while a sync runs" if syncing else "")


def _sync_fix(*, syncing: bool, running: bool) -> str:
    if not running:
        return "start openmemoryd: it reconciles the index with the files on start"
    if syncing:
        return "wait for the sync to finish (`omem-client status` shows it)"
    return (
        "run `omem-client sync`; files it skips (too large, unreadable) and "
        "transcripts waiting for more lines are listed by `omem-client status`"
    )


def _problem_fixes(noted: Iterable[IndexedFile], unreadable: Sequence[str]) -> list[str]:
    """One fix per kind of problem, naming the first file of that kind."""
    first: dict[str, str] = {}
    for f in noted:
        first.setdefault(_kind(f.note or ""), f.path)
    fixes = []
    if (path := first.get("binary")) is not None:
        fixes.append(
            f"move {path} out of the memory folders: a binary file (an archive, an image) "
            "is never indexed"
        )
    if (path := first.get("large")) is not None:
        fixes.append(f"split {path} into smaller files, or raise [index] max_file_bytes")
    if (path := first.get("other")) is not None:
        fixes.append(f"see why {path} was skipped in `omem-client status`")
    if (path := first.get("encoding")) is not None:
        new = f"{path}.utf8"
        fixes.append(
            f"convert {path} to UTF-8 in the workspace, e.g. from Latin-1: "
            f"iconv -f latin1 -t utf-8 {path} > {new} && mv {new} {path}"
        )
    if unreadable:
        fixes.append("make what cannot be listed readable by the user openmemoryd runs as")
    return fixes


def _kind(note: str) -> str:
    """Which fix a note calls for."""
    if not note.startswith(_SKIPPED):
        return "encoding"
    if "binary file" in note:
        return "binary"
    if "-byte limit" in note:
        return "large"
    return "other"
