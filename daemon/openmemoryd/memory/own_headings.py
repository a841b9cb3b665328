"""The section headings the daemon writes into a day's file itself.

Appends only ever add to the end of a file, so a block belongs to the last
section heading before it: search cites it as ``2026-11-28 > <heading>``
and the reader takes it as part of that section. Two blocks the daemon
writes need a heading of their own for that reason:

* ``capture``'s bullets go under ``## Captured``, added unless the file's
  last section is already that one (or it has none yet, only its date
  title). After a meeting's "## Встреча с Иваном", a user's allergy and
  dentist would otherwise read (and be cited) as part of the meeting.
* a plain note (``append`` from the CLI, MCP, HTTP or an agent) after the
  daemon's own ``## Captured`` section goes under ``## Notes``, added once:
  filed under "Captured", a note nobody captured was cited as a capture,
  and every note of the rest of the day with it. A note that brings its own
  heading needs none, and after a person's heading the note stays in their
  section, as it always did.

The heading is chosen and written in the same writer-lane call as the
block (`append_under`), so two daemon writes cannot both decide from the
same file end; it is part of the block written, and so of what the append
journal records.
"""

from __future__ import annotations

import os
import re
from typing import Final

from openmemoryd.errors import NotFound
from openmemoryd.memory.append import Appended, append_block, normalize_block
from openmemoryd.memory.known import KnownFiles
from openmemoryd.workspace import MemoryPath, open_beneath

__all__ = [
    "CAPTURED_HEADING",
    "NOTES_HEADING",
    "append_under",
    "heading_for",
    "last_section",
]

CAPTURED_HEADING: Final = "## Captured"
NOTES_HEADING: Final = "## Notes"

_SECTION: Final = re.compile(rb"^#{2,6}[ \t]")  # below a file's ``# YYYY-MM-DD`` title
_ANY_HEADING: Final = re.compile(r"^ {0,3}#{1,6}[ \t]")
_CHUNK: Final = 64 * 1024


def last_section(mp: MemoryPath) -> str | None:
    """The file's last section heading (``## …``), stripped; None when it
    has none or does not exist.

    Read backwards from the end a chunk at a time: the heading a block is
    appended under is near the end, and a day's file can be long.
    """
    try:
        fd = open_beneath(mp, os.O_RDONLY)
    except NotFound:
        return None
    try:
        end = os.fstat(fd).st_size
        carry = b""  # the start of a line cut by the chunk before
        while end > 0:
            start = max(0, end - _CHUNK)
            lines = (os.pread(fd, end - start, start) + carry).split(b"\n")
            carry = lines.pop(0) if start > 0 else b""
            for line in reversed(lines):
                if _SECTION.match(line):
                    return line.decode("utf-8", errors="replace").strip()
            end = start
    finally:
        os.close(fd)
    return None


def heading_for(last: str | None, block: str, section: str | None) -> str:
    """The heading to write before *block* ("" for none) in a file whose
    last section heading is *last*.

    *section* is the heading the block belongs under (capture's
    `CAPTURED_HEADING`); None for a plain note, which gets `NOTES_HEADING`
    only after the daemon's ``## Captured`` and only when it does not start
    with a heading of its own.
    """
    if section is not None:
        return "" if last is None or last == section else section
    if last == CAPTURED_HEADING and not _ANY_HEADING.match(block):
        return NOTES_HEADING
    return ""


def append_under(
    mp: MemoryPath,
    text: str,
    max_file_bytes: int,
    known: KnownFiles | None,
    section: str | None,
) -> tuple[Appended, int]:
    """Append *text* to *mp* (`append_block`) with the heading `heading_for`
    picks before it; return the append and how many of its lines come
    before *text* (0, or 2: the heading and a blank line).

    Runs in the writer lane, so no other daemon write lands between the
    look at the file's end and the write.
    """
    block = normalize_block(text)
    heading = heading_for(last_section(mp), block, section)
    if not heading:
        return append_block(mp, block, max_file_bytes, known), 0
    return append_block(mp, f"{heading}\n\n{block}", max_file_bytes, known), 2
