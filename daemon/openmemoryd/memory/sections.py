"""Edits of one Markdown file's text that touch nothing but their own line.

`log` writes a bullet under a ``## Section`` of MEMORY.md, USER.md or
PROJECT.md, counts a repeated memory on its existing line, or swaps one
line for its replacement. People edit these files by hand, so every edit
here is an insertion or a one-line substitution: every other byte of the
file (line endings, trailing spaces, a missing final newline, comments,
code blocks) is kept exactly.

Invariants:

* headings inside fenced code blocks are not headings;
* a section runs from its heading to the next heading of the same or a
  higher level, or to a thematic break (``---``), whichever comes first, so
  the templates' closing ``---`` footer stays last;
* a bullet goes right after the section's last non-blank line (its last
  bullet, or the heading's comment); a missing section is created before a
  closing footer, or at the end of the file;
* the reinforcement count is a trailing `` (×N)`` on the line, N ≥ 2 the
  times the memory was logged; `split_count` reads it back, and text
  compared for duplicates never includes it;
* new lines use the file's own line ending (CRLF if its first line has one).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from openmemoryd.text.counts import COUNT_SUFFIX

__all__ = [
    "BULLET",
    "Inserted",
    "insert_bullet",
    "memory_content",
    "replace_line",
    "section_body",
    "sections_headed",
    "split_count",
    "with_count",
]

# A list item's marker, and the ``[category]`` capture and log put after it.
BULLET: Final = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(?:\[(?P<cat>[a-z]+)\]\s+)?")


def memory_content(line: str) -> str:
    """The memory a line states ("" for a heading, comment or blank line)."""
    stripped = line.strip()
    if not stripped or stripped.startswith(("#", "<!--")):
        return ""
    match = BULLET.match(stripped)
    return stripped[match.end() :] if match else stripped


_HEADING: Final = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)[ \t]*#*[ \t]*$")
_FENCE: Final = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_BREAK: Final = re.compile(r"^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$")
_COUNT: Final = re.compile(COUNT_SUFFIX)


@dataclass(frozen=True, slots=True)
class Inserted:
    """The new text, the 1-based line of the bullet, and whether the
    section heading had to be created."""

    text: str
    line: int
    created_section: bool


def split_count(line: str) -> tuple[str, int]:
    """(line without its count, times logged): ``"- tea (×3)"`` → ``("- tea", 3)``."""
    match = _COUNT.search(line)
    if match is None:
        return line, 1
    return line[: match.start()], max(1, int(match.group(1)))


def with_count(line: str, count: int) -> str:
    """*line* (without a line end) carrying *count*; 1 shows no count."""
    bare, _ = split_count(line)
    return bare if count <= 1 else f"{bare} (×{count})"


def _body(line: str) -> str:
    return line.rstrip("\r\n")


def _line_end(lines: list[str]) -> str:
    return "\r\n" if lines and lines[0].endswith("\r\n") else "\n"


def _outside_fences(lines: list[str]) -> list[bool]:
    """For each line: True if it is Markdown, False if inside a code fence."""
    flags: list[bool] = []
    fence: str | None = None
    for line in lines:
        match = _FENCE.match(line)
        if fence is None:
            flags.append(True)
            if match:
                fence = match.group(1)
                flags[-1] = False
        else:
            flags.append(False)
            if match and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence):
                fence = None
    return flags


def _section_span(lines: list[str], titles: tuple[str, ...]) -> tuple[int, int] | None:
    """(heading index, end index exclusive) of the first heading named in
    *titles* (any case), or None."""
    wanted = {t.casefold() for t in titles}
    markdown = _outside_fences(lines)
    for i, line in enumerate(lines):
        match = _HEADING.match(_body(line)) if markdown[i] else None
        if match is None or match.group(2).casefold() not in wanted:
            continue
        return i, _section_end(lines, markdown, i, len(match.group(1)))
    return None


def _section_end(lines: list[str], markdown: list[bool], heading: int, level: int) -> int:
    """Where the section of the heading at index *heading* (of *level*) ends
    (exclusive): at the next heading of the same or a higher level, or a
    thematic break, outside code fences; else at the end of the file."""
    for j in range(heading + 1, len(lines)):
        if not markdown[j]:
            continue
        other = _HEADING.match(_body(lines[j]))
        if (other and len(other.group(1)) <= level) or _BREAK.match(_body(lines[j])):
            return j
    return len(lines)


def sections_headed(lines: list[str], heading: str) -> list[tuple[int, int]]:
    """(heading index, end index exclusive) of every section whose heading
    line is exactly *heading* (``## Captured``; its level and words, spaces
    around it aside), outside code fences. Exact, not any case as for `log`'s
    sections: this finds the headings the daemon writes itself, and a person's
    ``## captured`` is theirs."""
    markdown = _outside_fences(lines)
    spans = []
    for i, line in enumerate(lines):
        if not markdown[i] or line.strip() != heading:
            continue
        match = _HEADING.match(_body(line))
        if match is not None:
            spans.append((i, _section_end(lines, markdown, i, len(match.group(1)))))
    return spans


def section_body(lines: list[str], titles: tuple[str, ...]) -> tuple[str, int, int] | None:
    """The first section named in *titles* (any case): its title as the file
    writes it (``Lessons learned`` for ``Lessons Learned``) and the 1-based
    line range (inclusive) of its body, without its heading; None if there
    is no such section or it is empty."""
    span = _section_span(lines, titles)
    if span is None or span[1] <= span[0] + 1:
        return None
    match = _HEADING.match(_body(lines[span[0]]))
    assert match is not None  # _section_span found a heading there
    return match.group(2), span[0] + 2, span[1]


def insert_bullet(text: str, titles: tuple[str, ...], bullet: str) -> Inserted:
    """*text* with *bullet* (one line) added to the section ``titles[0]``
    (or one of the other *titles*), creating the section when none exists."""
    lines = text.splitlines(keepends=True)
    end = _line_end(lines)
    span = _section_span(lines, titles)
    if span is not None:
        heading, stop = span
        at = heading + 1
        for k in range(stop - 1, heading, -1):
            if lines[k].strip():
                at = k + 1
                break
        return Inserted(_insert(lines, at, [bullet], end), at + 1, False)
    footer = _footer_index(lines)
    if footer is None:
        block = [f"## {titles[0]}", bullet]
        if lines and lines[-1].strip():
            block.insert(0, "")
        return Inserted(_insert(lines, len(lines), block, end), len(lines) + len(block), True)
    block = [f"## {titles[0]}", bullet, ""]
    if footer > 0 and lines[footer - 1].strip():
        block.insert(0, "")
    return Inserted(_insert(lines, footer, block, end), footer + len(block) - 1, True)


def _footer_index(lines: list[str]) -> int | None:
    """The thematic break after the file's last heading (the templates'
    closing ``---``), where a new section belongs; None if there is none."""
    markdown = _outside_fences(lines)
    found: int | None = None
    for i, line in enumerate(lines):
        if not markdown[i]:
            continue
        if _HEADING.match(_body(line)):
            found = None
        elif found is None and _BREAK.match(_body(line)):
            found = i
    return found


def _insert(lines: list[str], at: int, new: list[str], end: str) -> str:
    """Insert *new* lines before index *at*; a preceding line without a line
    end gets one first (that is the only byte added outside *new*)."""
    before = lines[:at]
    if before and not before[-1].endswith(("\n", "\r")):
        before[-1] += end
        tail = "".join(line + end for line in new[:-1]) + new[-1]
        if at == len(lines):
            return "".join(before) + tail
        return "".join(before) + tail + end + "".join(lines[at:])
    return "".join(before) + "".join(line + end for line in new) + "".join(lines[at:])


def replace_line(text: str, number: int, expected: str, new: str) -> str:
    """*text* with line *number* (1-based), which must read *expected*
    (without its line end), replaced by *new*; its line end is kept.

    Raises:
        LookupError: the line is not there or reads otherwise (the file changed).
    """
    lines = text.splitlines(keepends=True)
    if not 1 <= number <= len(lines) or _body(lines[number - 1]) != expected:
        raise LookupError(f"line {number} no longer reads {expected!r}")
    old = lines[number - 1]
    lines[number - 1] = new + old[len(_body(old)) :]
    return "".join(lines)
