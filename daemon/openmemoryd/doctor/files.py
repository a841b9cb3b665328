"""The ``files`` check: the files on disk against the index, and every file
the index could not take as it is.

`status` lists a file the indexer skipped (binary, too large), one it read
lossily (not UTF-8) and a directory it could not list among its issues; the
doctor used to count only files, so it passed every check while `status`
listed problems, and a skipped file counted as indexed. Here those problems are gathered as
`status` gathers them (the disk scan's issues, then each noted file as
``path: note``) and each kind gets its fix; skipped files are counted apart,
by the count `status` shows (`SourceCounts.files_skipped`), so the two agree.

Every file not in UTF-8 gets its own conversion command (one per kind of
problem named only the first, and left the user to guess that the next
one, in another encoding, needed another command): with the encoding the
indexer read it as (its note says so), else the one its first bytes look
like (`encodings_of_noted`), or with a placeholder when none is clear:
``iconv -f latin1`` for every file made a Russian (cp1251) or Chinese (GBK)
note mojibake without an error. The command writes the converted text to a
new file and keeps the original beside it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Final

import apsw

from omem_client._encodings import convert_file_hint, guess_encoding
from omem_protocol import DoctorCheck, SourceCounts
from openmemoryd.doctor.report import ok, warn
from openmemoryd.errors import OmemdError
from openmemoryd.store import SKIPPED_NOTE, IndexedFile, indexed_files
from openmemoryd.workspace import PathPolicy, open_beneath, scan_memory_files
from openmemoryd.workspace.decoding import SAMPLE_BYTES, encoding_of_note

__all__ = ["encodings_of_noted", "files_check", "noted_files", "unreadable_paths"]

_MAX_SHOWN: Final = 3
# Conversion commands shown; `status` lists the other files with their notes.
_MAX_CONVERSIONS: Final = 10


def noted_files(conn: apsw.Connection) -> list[IndexedFile]:
    """The index's files that carry a note (skipped, or read lossily), by path."""
    files = indexed_files(conn)
    return [files[path] for path in sorted(files) if files[path].note is not None]


def unreadable_paths(policy: PathPolicy) -> list[str]:
    """What the disk scan could not list or stat (``status`` lists them too)."""
    return scan_memory_files(policy).issues


def encodings_of_noted(policy: PathPolicy, noted: Iterable[IndexedFile]) -> dict[str, str]:
    """``{path: encoding}`` for the files not in UTF-8 whose conversion is
    shown: the encoding the indexer read each as, or for one read lossily
    the one its first bytes look like; a file with no encoding clear (or
    unreadable now) is left out.

    Only reads, and at most `SAMPLE_BYTES` of a lossy file, through the same
    no-symlink opening as every other read of a memory file.
    """
    found: dict[str, str] = {}
    converted = [f for f in noted if _kind(f.note or "") == "encoding"]
    for f in converted[:_MAX_CONVERSIONS]:
        encoding = encoding_of_note(f.note or "") or _sampled_encoding(policy, f.path)
        if encoding is not None:
            found[f.path] = encoding
    return found


def _sampled_encoding(policy: PathPolicy, path: str) -> str | None:
    try:
        fd = open_beneath(policy.resolve(path), os.O_RDONLY)
    except (OmemdError, OSError):  # gone, or not a workspace file (a transcript)
        return None
    try:
        sample = os.pread(fd, SAMPLE_BYTES + 1, 0)
    except OSError:
        return None
    finally:
        os.close(fd)
    return guess_encoding(sample[:SAMPLE_BYTES], cut=len(sample) > SAMPLE_BYTES)


def files_check(
    sources: Sequence[SourceCounts],
    *,
    syncing: bool,
    running: bool,
    noted: Sequence[IndexedFile] = (),
    unreadable: Sequence[str] = (),
    encodings: Mapping[str, str] | None = None,
) -> DoctorCheck:
    """Files on disk against files indexed, per source, and the files the
    index holds only as a note (*noted*) or could not see (*unreadable*);
    *encodings* names the encoding a noted file is in
    (`encodings_of_noted`)."""
    name = "files"
    counts = ", ".join(_source_counts(s) for s in sources)
    summary = f"indexed/on disk: {counts or 'no files'}"
    # A skipped file has its row (so it is not read again until it changes):
    # it is neither missing from the index nor gone from the disk.
    missing = sum(max(0, s.files_on_disk - s.files_indexed) for s in sources)
    gone = sum(max(0, s.files_indexed - s.files_on_disk) for s in sources)
    problems = [*unreadable, *(f"{f.path}: {f.note}" for f in noted)]
    if not missing and not gone and not problems:
        return ok(name, summary)
    parts = []
    fixes = _problem_fixes(noted, unreadable, encodings or {})
    if problems:
        parts.append(_listed(problems))
    if missing or gone:
        parts.append(_not_in_step(missing, gone, syncing=syncing))
        fixes.append(_sync_fix(syncing=syncing, running=running))
    return warn(name, f"{'; '.join(parts)}; {summary}", "; ".join(fixes))


def _source_counts(counts: SourceCounts) -> str:
    skipped = counts.files_skipped
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


def _problem_fixes(
    noted: Iterable[IndexedFile], unreadable: Sequence[str], encodings: Mapping[str, str]
) -> list[str]:
    """One fix per kind of problem, naming the first file of that kind, but
    a conversion for each file not in UTF-8 (each has its own encoding)."""
    first: dict[str, str] = {}
    converted: list[str] = []
    for f in noted:
        kind = _kind(f.note or "")
        first.setdefault(kind, f.path)
        if kind == "encoding":
            converted.append(f.path)
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
    for path in converted[:_MAX_CONVERSIONS]:
        fixes.append(convert_file_hint(path, encodings.get(path), where="in the workspace"))
    if (more := len(converted) - _MAX_CONVERSIONS) > 0:
        # `status` lists each with the encoding it was read as
        fixes.append(f"and {more} more file(s) not in UTF-8 (`omem-client status` lists them all)")
    if unreadable:
        fixes.append("make what cannot be listed readable by the user openmemoryd runs as")
    return fixes


def _kind(note: str) -> str:
    """Which fix a note calls for."""
    if not note.startswith(SKIPPED_NOTE):
        return "encoding"
    if "binary file" in note:
        return "binary"
    if "-byte limit" in note:
        return "large"
    return "other"
