"""The memories inside a range of lines: what `forget` may erase at once.

Search hits and recall blocks cite whole chunks (``USER.md#L1-L16``), and
an agent told to forget one fact passes such a citation on: erasing every
line of it took the user's whole profile with its headings and template,
and ``MEMORY.md#L5``, a section's heading, left that section's memories
under the one before it. So a citation is taken apart into memories first:

* a list item (with the lines indented under it) is one memory;
* a paragraph (lines with no blank line or heading between them, none of
  them a list item) is one memory;
* headings, thematic breaks, blank lines and template boilerplate (HTML
  comments, unfilled ``- **Name:**`` fields, the templates' italic hints)
  are no memory.

`forget` erases the one memory a citation holds (not a heading cited with
it), and lists the memories of a citation holding several as candidates,
each with its own citation.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from openmemoryd.workspace.boilerplate import has_memory, mask_boilerplate

__all__ = ["Memory", "memories_in"]

_LIST_ITEM: Final = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+\S")


@dataclass(frozen=True, slots=True)
class Memory:
    """One memory's lines: numbers *start*..*end* (1-based) and their text."""

    start: int
    end: int
    text: str


def memories_in(text: str, first_line: int) -> list[Memory]:
    """The memories of *text*, whose first line is line *first_line* of its
    file, in order (see the module docstring)."""
    lines = text.split("\n")
    masked = mask_boilerplate(text).split("\n")
    found: list[Memory] = []
    open_start: int | None = None  # index of the current memory's first line
    last = -1
    for index, line in enumerate(masked):
        bare = line.rstrip("\r")
        if not has_memory(bare):  # blank, a heading or a rule
            if open_start is not None:
                found.append(_memory(lines, open_start, last, first_line))
                open_start = None
            continue
        continues = open_start is not None and (
            not _LIST_ITEM.match(bare) or _indented_under(bare, lines[open_start])
        )
        if not continues:
            if open_start is not None:
                found.append(_memory(lines, open_start, last, first_line))
            open_start = index
        last = index
    if open_start is not None:
        found.append(_memory(lines, open_start, last, first_line))
    return found


def _indented_under(line: str, first: str) -> bool:
    """Whether list item *line* is nested under the memory opened by *first*."""
    return len(line) - len(line.lstrip()) > len(first) - len(first.lstrip())


def _memory(lines: list[str], start: int, end: int, first_line: int) -> Memory:
    return Memory(first_line + start, first_line + end, "\n".join(lines[start : end + 1]))
