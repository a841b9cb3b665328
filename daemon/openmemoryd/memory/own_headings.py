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
    "last_sections",
]

CAPTURED_HEADING: Final = "## Captured"
NOTES_HEADING: Final = "## Notes"

_SECTION: Final = re.compile(rb"^#{2,6}[ \t]")  # below a file's ``# YYYY-MM-DD`` title
_LEVEL_TWO: Final = re.compile(rb"^##[ \t]")
# The heading `session_end` gives its block (`memory.journal.render_journal`).
_SESSION_END: Final = re.compile(r"^## Session end \d\d:\d\d\b")
_ANY_HEADING: Final = re.compile(r"^ {0,3}#{1,6}[ \t]")
_CHUNK: Final = 64 * 1024


def last_section(mp: MemoryPath) -> str | None:
    """The file's last section heading (``## …``), stripped; None when it
    has none or does not exist."""
    return last_sections(mp)[0]


def last_sections(mp: MemoryPath) -> tuple[str | None, str | None]:
    """The file's last section heading (``##`` to ``######``) and the last
    ``##`` heading, the section it is part of, stripped; None where there
    is none.

    Read backwards from the end a chunk at a time: the heading a block is
    appended under is near the end, and a day's file can be long.
    """
    try:
        fd = open_beneath(mp, os.O_RDONLY)
    except NotFound:
        return None, None
    last: str | None = None
    try:
        end = os.fstat(fd).st_size
        carry = b""  # the start of a line cut by the chunk before
        while end > 0:
            start = max(0, end - _CHUNK)
            lines = (os.pread(fd, end - start, start) + carry).split(b"\n")
            carry = lines.pop(0) if start > 0 else b""
            for line in reversed(lines):
                if _SECTION.match(line):
                    heading = line.decode("utf-8", errors="replace").strip()
                    last = heading if last is None else last
                    if _LEVEL_TWO.match(line):
                        return last, heading
            end = start
    finally:
        os.close(fd)
    return last, None


def heading_for(
    last: str | None, block: str, section: str | None, part_of: str | None = None
) -> str:
    """The heading to write before *block* ("" for none) in a file whose
    last section heading is *last*, in the ``##`` section *part_of*.

    *section* is the heading the block belongs under (capture's
    `CAPTURED_HEADING`); None for a plain note, which gets `NOTES_HEADING`
    only after a section the daemon wrote itself (``## Captured``, or a
    ``## Session end HH:MM`` block, whose last part, "### Next steps",
    would otherwise take the note) and only when it does not start with a
    heading of its own.
    """
    if section is not None:
        return "" if last is None or last == section else section
    own = last == CAPTURED_HEADING or _SESSION_END.match(part_of or "") is not None
    if own and not _ANY_HEADING.match(block):
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
    last, part_of = last_sections(mp)
    heading = heading_for(last, block, section, part_of)
    if not heading:
        return append_block(mp, block, max_file_bytes, known), 0
    return append_block(mp, f"{heading}\n\n{block}", max_file_bytes, known), 2
