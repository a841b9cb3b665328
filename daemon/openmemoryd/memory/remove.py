"""Removing lines from a memory file without ever leaving it half-written.

`forget` is the one operation that takes text *out* of a Markdown file, so
it must be the safest write we have:

* the file is locked (``flock``, as appends are) while it is read, checked
  and replaced, so a concurrent append waits and is never lost;
* the expected lines are compared before anything is written: if the file
  changed since the caller looked (an editor, another agent), nothing is
  removed and the caller is told;
* the new content goes to a temporary file beside it, is fsynced, and is
  renamed over the original (then the directory is fsynced), so a crash
  leaves either the old file or the new one, never a truncated one. An
  appender that was waiting on the old file's lock notices the rename and
  retries on the new file (see `memory.append`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from openmemoryd.errors import Conflict
from openmemoryd.memory.append import LOCK_TIMEOUT_S
from openmemoryd.memory.durable import lock_exclusive, read_all, replace_file
from openmemoryd.workspace import MemoryPath, open_beneath


@dataclass(frozen=True, slots=True)
class LineRange:
    """1-based, inclusive."""

    start: int
    end: int


def remove_lines(mp: MemoryPath, ranges: list[LineRange], expected: list[str]) -> list[str]:
    """Remove *ranges* from *mp* and return the removed text of each.

    *expected* holds the text each range must still have (lines joined by
    ``\\n``); a mismatch raises `Conflict` and leaves the file untouched.
    A blank line left doubled by the removal is collapsed, so a removed
    bullet does not leave a hole in its list.
    """
    fd = open_beneath(mp, os.O_RDONLY)
    try:
        lock_exclusive(fd, mp.key, LOCK_TIMEOUT_S)
        original = read_all(fd).decode("utf-8", errors="surrogateescape")
        lines = original.splitlines(keepends=True)
        removed: list[str] = []
        drop: set[int] = set()
        for span, want in zip(ranges, expected, strict=True):
            if span.start < 1 or span.end > len(lines) or span.start > span.end:
                raise Conflict(
                    f"{mp.key} has {len(lines)} lines; lines {span.start}-{span.end} "
                    "are not there (the file changed?)"
                )
            got = "".join(lines[span.start - 1 : span.end]).rstrip("\n")
            if got != want:
                raise Conflict(f"{mp.key} changed since it was read; nothing was removed")
            removed.append(got)
            drop.update(range(span.start - 1, span.end))
        kept = _collapse_blank_runs([line for i, line in enumerate(lines) if i not in drop])
        _replace(mp, "".join(kept).encode("utf-8", errors="surrogateescape"))
    finally:
        os.close(fd)
    return removed


def _collapse_blank_runs(lines: list[str]) -> list[str]:
    out: list[str] = []
    for line in lines:
        if not line.strip() and out and not out[-1].strip():
            continue
        out.append(line)
    while out and not out[-1].strip():
        out.pop()
    return out


def _replace(mp: MemoryPath, data: bytes) -> None:
    """Atomically give *mp* the content *data* (mode kept)."""
    target = mp.absolute
    mode = os.stat(target, follow_symlinks=False).st_mode & 0o777
    replace_file(target, data, mode=mode, tag="forget")
