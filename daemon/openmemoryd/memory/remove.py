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
  retries on the new file (see `memory.append`);
* nothing but the removed lines changes, with two exceptions, both at the
  places lines were removed: the blank lines on either side of a removal
  close up into one run (a removed bullet leaves no hole in its list, and a
  removal at the start or the end of the file leaves no blank lines
  there), and a heading
  the daemon writes itself (`own_headings`: capture's ``## Captured``) goes
  with its blank lines once the removal leaves nothing else in its section,
  so forgetting the last captured memory leaves no empty heading behind.
  Blank runs elsewhere, a person's headings and anything with text stay
  byte for byte.
"""

from __future__ import annotations

import os
from collections.abc import Collection
from dataclasses import dataclass

from openmemoryd.errors import Conflict
from openmemoryd.memory.append import LOCK_TIMEOUT_S
from openmemoryd.memory.durable import lock_exclusive, read_all, replace_file
from openmemoryd.memory.sections import sections_headed
from openmemoryd.workspace import MemoryPath, open_beneath
from openmemoryd.workspace.decoding import editable_text, encode_edited


@dataclass(frozen=True, slots=True)
class LineRange:
    """1-based, inclusive."""

    start: int
    end: int


def remove_lines(
    mp: MemoryPath,
    ranges: list[LineRange],
    expected: list[str],
    *,
    own_headings: Collection[str] = (),
) -> list[str]:
    """Remove *ranges* from *mp* and return the removed text of each.

    *expected* holds the text each range must still have (lines joined by
    ``\\n``); a mismatch raises `Conflict` and leaves the file untouched.
    A blank line left doubled by the removal is collapsed, so a removed
    bullet does not leave a hole in its list. A heading line reading one of
    *own_headings* (``## Captured``) whose section the removal emptied (only
    blank lines left before the next heading of its level or the end of
    the file) is removed as well; it is not among the returned texts.
    """
    fd = open_beneath(mp, os.O_RDONLY)
    try:
        lock_exclusive(fd, mp.key, LOCK_TIMEOUT_S)
        # a note in cp1251 or GBK is edited as its text and written back so
        original, encoding = editable_text(read_all(fd))
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
        drop |= _emptied_headings(lines, drop, own_headings)
        _replace(mp, encode_edited("".join(_closed_up(lines, drop)), encoding))
    finally:
        os.close(fd)
    return removed


def _emptied_headings(lines: list[str], drop: set[int], headings: Collection[str]) -> set[int]:
    """The lines (indexes into *lines*) of each of *headings* whose section
    lost a line to *drop* and holds nothing but blank lines without it: the
    heading and those blank lines.

    Sections are read from the lines that stay, so a section ends where it
    will end in the new file; one that lost nothing is left alone, even if
    empty (a person may keep an empty heading, and this removal did not
    empty it)."""
    if not headings:
        return set()
    kept = [i for i in range(len(lines)) if i not in drop]
    text = [lines[i] for i in kept]
    emptied: set[int] = set()
    for heading in headings:
        for start, end in sections_headed(text, heading):
            # the original lines from the heading to where its section ends
            stop = kept[end] if end < len(kept) else len(lines)
            if not any(kept[start] < i < stop for i in drop):
                continue
            body = kept[start + 1 : end]
            if all(not lines[i].strip() for i in body):
                emptied.add(kept[start])
                emptied.update(body)
    return emptied


def _closed_up(lines: list[str], drop: set[int]) -> list[str]:
    """*lines* without *drop*, blank lines closed up where lines went.

    Where a removal brings a blank run before it next to one after it, the
    two become one as long as the longer was (a single blank line between
    list items stays single); a removal that leaves only blank lines after
    it takes those at the end of the file too, and one that leaves only
    blank lines before it those at the start (forgetting a file's first
    line left it starting with a blank line). Blank runs anywhere else
    stay as the person wrote them; a line with text is never dropped here.
    """
    out: list[str] = []
    allowance = 0  # blank lines after the last removal that merge into those before it
    leading = False  # a removal left nothing but blank lines before it
    for i, line in enumerate(lines):
        if i in drop:
            leading = not any(kept.strip() for kept in out)
            if leading:
                out.clear()
            allowance = _trailing_blanks(out)
            continue
        if line.strip():
            allowance = 0
            leading = False
        elif leading:
            continue
        elif allowance > 0:
            allowance -= 1
            continue
        out.append(line)
    if drop and all(not lines[i].strip() for i in range(max(drop) + 1, len(lines))):
        del out[len(out) - _trailing_blanks(out) :]
    return out


def _trailing_blanks(lines: list[str]) -> int:
    n = 0
    while n < len(lines) and not lines[-1 - n].strip():
        n += 1
    return n


def _replace(mp: MemoryPath, data: bytes) -> None:
    """Atomically give *mp* the content *data* (mode kept)."""
    target = mp.absolute
    mode = os.stat(target, follow_symlinks=False).st_mode & 0o777
    replace_file(target, data, mode=mode, tag="forget")
