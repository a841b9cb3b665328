"""Split a Markdown memory file into chunks sized for the embedding model.

A chunk is a run of whole source lines, so search results can point at line
numbers the user sees in their editor. Invariants of `chunk_markdown`:

* every non-blank line is covered by at least one chunk, and chunks come in
  source order (start lines never decrease);
* a chunk's text is exactly its source lines joined by ``"\\n"`` (CRs of CRLF
  files removed), with no leading or trailing blank line; the one exception
  is a line too long for any chunk, which becomes several one-line chunks
  holding consecutive pieces of it;
* a chunk's cost, the sum over its lines of ``estimate_tokens(line) + 1``,
  never exceeds ``max_tokens``;
* every chunk holds at least one line its predecessor lacks, so overlap can
  neither duplicate a chunk nor stall the packer;
* the work is linear in the input: every line is costed once, ranges are
  costed through prefix sums, the overlap walk is bounded by
  ``overlap_tokens``, and an over-long line is cut by binary search inside
  a window of at most ``4 * max_tokens`` characters per piece.

The packer prefers cutting at block boundaries (headings, fenced code,
paragraphs) and between sections, because a chunk that holds one whole
thought embeds better than one that starts mid-list.
"""

from __future__ import annotations

import enum
import re
from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from itertools import accumulate
from typing import Final

from openmemoryd.text.boundaries import safe_boundary
from openmemoryd.text.tokens import fitting_prefix, line_cost

__all__ = ["CHUNKER_VERSION", "Chunk", "Restart", "chunk_markdown", "chunk_markdown_from"]

# Bump when the packing rules change: indexes built with another version are
# rebuilt in the background (see `engine.rebuild`).
CHUNKER_VERSION: Final = "chunker-3"  # 3: a chunk names the sections it enters

# Below this a heading plus one line of prose no longer fits in a chunk.
MIN_MAX_TOKENS: Final = 16

_HEADING_RE: Final = re.compile(r" {0,3}(#{1,6})(?:[ \t]|$)")
# CommonMark: closing #s count only after whitespace, so "C#" keeps its "#".
_CLOSING_HASHES_RE: Final = re.compile(r"(?:^|[ \t]+)#+$")
_FENCE_RE: Final = re.compile(r" {0,3}(`{3,}|~{3,})(.*)")
# A setext underline: "Title" over "=====" is a level-1 heading, over "-----"
# level 2 (CommonMark); after a blank line "---" is a thematic break instead.
_SETEXT_RE: Final = re.compile(r" {0,3}(=+|-+)[ \t]*$")
# Paragraphs that cannot become setext headings: list items, quotes, tables.
_NOT_SETEXT_RE: Final = re.compile(r" {0,3}(?:[-*+][ \t]|\d{1,9}[.)][ \t]|>|\|)")
_FRONT_MATTER_RE: Final = re.compile(r"---[ \t]*$")
_FRONT_MATTER_END_RE: Final = re.compile(r"(?:---|\.\.\.)[ \t]*$")
_PATH_SEPARATOR: Final = " > "


@dataclass(frozen=True, slots=True)
class Chunk:
    """A span of a Markdown file, ready to embed and to cite by line."""

    start_line: int  # 1-based, inclusive
    end_line: int  # 1-based, inclusive
    text: str
    heading: str  # heading path in effect at start_line, e.g. "Project X > Decisions"; "" if none
    # Each heading line after start_line, with the heading path in effect
    # from it on: a hit showing only the chunk's later lines names their
    # section, not the chunk's first (`search.hits`).
    inner_headings: tuple[tuple[int, str], ...] = ()


class _Kind(enum.Enum):
    HEADING = enum.auto()
    FENCE = enum.auto()
    PARAGRAPH = enum.auto()


@dataclass(frozen=True, slots=True)
class _Block:
    kind: _Kind
    first: int  # 0-based line index, inclusive
    last: int  # 0-based line index, inclusive


Sections = tuple[tuple[int, str], ...]  # the open sections: (level, title), outermost first


@dataclass(frozen=True, slots=True)
class _Outline:
    """Heading paths by line, so any chunk start can look up its context."""

    lines: list[int]  # 0-based index of each heading line, ascending
    paths: list[str]  # heading path in effect from that line on
    before: list[Sections]  # the sections open just before that heading

    def path_at(self, line: int) -> str:
        i = bisect_right(self.lines, line)
        return self.paths[i - 1] if i else ""

    def inside(self, first: int, last: int) -> tuple[tuple[int, str], ...]:
        """The headings of lines *first* + 1 .. *last* (0-based) as (1-based
        line, path from it on)."""
        start, end = bisect_right(self.lines, first), bisect_right(self.lines, last)
        return tuple((self.lines[i] + 1, self.paths[i]) for i in range(start, end))


def chunk_markdown(text: str, *, max_tokens: int = 400, overlap_tokens: int = 80) -> list[Chunk]:
    """Cut *text* into chunks of at most *max_tokens*, in source order.

    Consecutive chunks inside one section share up to *overlap_tokens* of
    trailing lines, so a fact that straddles a cut is still found whole in
    one of them; chunks that start a new section share nothing, since the
    previous section's tail is noise there.
    """
    return chunk_markdown_from(text, max_tokens=max_tokens, overlap_tokens=overlap_tokens)[0]


@dataclass(frozen=True, slots=True)
class Restart:
    """A heading where chunking can start again from nothing.

    The packer had nothing open when it reached this heading (a file's first
    block, or a section after one big enough to be closed), so every chunk
    before it was already final and no chunk reaches back over it: the chunks
    of the text from here on, chunked alone with the sections open above it,
    are exactly the whole text's chunks from here on, whatever follows.
    (What comes before must not change, nor may the text before it leave an
    HTML comment or a front matter open: the caller checks that.)
    """

    line: int  # 1-based
    sections: Sections


def chunk_markdown_from(
    text: str,
    *,
    max_tokens: int = 400,
    overlap_tokens: int = 80,
    first_line: int = 1,
    sections: Sections = (),
) -> tuple[list[Chunk], list[Restart]]:
    """`chunk_markdown` of a file's text from line *first_line* on, given
    the *sections* open above it (a `Restart` of an earlier run), with the
    places where a later run may start again; chunk lines count from
    *first_line*. With the defaults, the whole file."""
    if max_tokens < MIN_MAX_TOKENS:
        raise ValueError(f"max_tokens must be at least {MIN_MAX_TOKENS}, got {max_tokens}")
    overlap_tokens = min(max(overlap_tokens, 0), max_tokens // 2)
    lines = _split_lines(text)
    blocks, outline = _parse(lines, sections, front_matter=first_line == 1)
    packer = _Packer(lines, outline, max_tokens, overlap_tokens)
    for block in blocks:
        packer.add(block)
    packer.flush()
    offset = first_line - 1
    if offset:
        packer.chunks = [
            Chunk(
                c.start_line + offset,
                c.end_line + offset,
                c.text,
                c.heading,
                tuple((line + offset, path) for line, path in c.inner_headings),
            )
            for c in packer.chunks
        ]
    restarts = [
        Restart(line + 1 + offset, outline.before[bisect_left(outline.lines, line)])
        for line in packer.restarts
    ]
    return packer.chunks, restarts


def _split_lines(text: str) -> list[str]:
    """Source lines as an editor numbers them, CRs of CRLF endings removed."""
    lines = text.split("\n")
    if len(lines) > 1 and lines[-1] == "":
        lines.pop()
    return [line.removesuffix("\r") for line in lines]


def _parse(
    lines: list[str], sections: Sections = (), *, front_matter: bool = True
) -> tuple[list[_Block], _Outline]:
    """Blocks in source order (blank lines between them belong to none).

    Headings are ATX (``# Title``) or setext (``Title`` over ``===`` or
    ``---``). Nothing inside fenced code, an HTML comment or YAML front
    matter is a heading: a ``# note`` line commented out, or a shell
    comment in a code block, does not start a section.
    """
    blocks: list[_Block] = []
    outline = _Outline([], [], [])
    stack: list[tuple[int, str]] = list(sections)

    def open_section(level: int, title: str, at: int) -> None:
        outline.before.append(tuple(stack))
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, title))
        outline.lines.append(at)
        outline.paths.append(_PATH_SEPARATOR.join(t for _, t in stack if t))

    commented = _inside_comments(lines)
    i, n = 0, len(lines)
    if front_matter and n and _FRONT_MATTER_RE.match(lines[0]):
        end = next((k for k in range(1, n) if _FRONT_MATTER_END_RE.match(lines[k])), None)
        if end is not None:
            blocks.append(_Block(_Kind.PARAGRAPH, 0, end))
            i = end + 1
    while i < n:
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        heading = None if commented[i] else _HEADING_RE.match(line)
        fence = None if commented[i] else _opening_fence(line)
        if heading is not None:
            open_section(len(heading.group(1)), _heading_title(line[heading.end() :]), i)
            blocks.append(_Block(_Kind.HEADING, i, i))
            i += 1
        elif fence is not None:
            last = i + 1
            while last < n and not _closes_fence(lines[last], fence):
                last += 1
            last = min(last, n - 1)
            blocks.append(_Block(_Kind.FENCE, i, last))
            i = last + 1
        else:
            last = i
            while last + 1 < n and _continues_paragraph(lines[last + 1], commented[last + 1]):
                last += 1
            underline = _setext_underline(lines, commented, i, last)
            if underline is not None:
                level = 1 if lines[underline].strip()[0] == "=" else 2
                title = " ".join(line.strip() for line in lines[i:underline])
                open_section(level, _heading_title(title), i)
                blocks.append(_Block(_Kind.HEADING, i, underline))
                i = underline + 1
                continue
            blocks.append(_Block(_Kind.PARAGRAPH, i, last))
            i = last + 1
    return blocks, outline


def _setext_underline(lines: list[str], commented: list[bool], first: int, last: int) -> int | None:
    """The line under a setext heading in the paragraph *first*..*last*, if any.

    The heading's text is every paragraph line above its underline, so the
    first underline ends it; a list item, quote or table row above it keeps
    its own meaning (CommonMark), and so does a comment.
    """
    if commented[first] or _NOT_SETEXT_RE.match(lines[first]):
        return None
    for k in range(first + 1, last + 1):
        if commented[k]:
            return None
        if _SETEXT_RE.match(lines[k]):
            return k
    return None


def _inside_comments(lines: list[str]) -> list[bool]:
    """For each line, whether it starts inside an HTML comment opened above it.

    Fenced code is skipped (``<!--`` in a code sample opens nothing); a
    comment never closed runs to the end of the file, as a renderer shows it.
    """
    inside: list[bool] = []
    in_comment = False
    fence: str | None = None
    for line in lines:
        inside.append(in_comment)
        if not in_comment and fence is None:
            fence = _opening_fence(line)
            if fence is not None:
                continue
        elif fence is not None:
            if _closes_fence(line, fence):
                fence = None
            continue
        position = 0
        while True:
            if in_comment:
                close = line.find("-->", position)
                if close < 0:
                    break
                in_comment, position = False, close + 3
            else:
                opening = line.find("<!--", position)
                if opening < 0:
                    break
                in_comment, position = True, opening + 4
    return inside


def _heading_title(rest: str) -> str:
    return _CLOSING_HASHES_RE.sub("", rest.strip()).strip()


def _opening_fence(line: str) -> str | None:
    """The fence marker if *line* opens a fenced block.

    A backtick fence whose info string holds a backtick is inline code
    (CommonMark); taking it for a fence would swallow the rest of the file.
    """
    match = _FENCE_RE.match(line)
    if match is None:
        return None
    marker, info = match.groups()
    if marker[0] == "`" and "`" in info:
        return None
    return marker


def _closes_fence(line: str, marker: str) -> bool:
    body = line.strip()
    return len(body) >= len(marker) and body == marker[0] * len(body)


def _continues_paragraph(line: str, commented: bool = False) -> bool:
    """Headings and fences interrupt a paragraph without a blank line; inside
    an HTML comment nothing does but a blank line."""
    if not line.strip():
        return False
    if commented:
        return True
    return _HEADING_RE.match(line) is None and _opening_fence(line) is None


def _split_long_line(line: str, max_tokens: int) -> list[str]:
    """Pieces of a line that fits in no chunk, each within *max_tokens*.

    A piece ends after its last whitespace when that lies in its second half,
    so words stay whole, and never inside a visible character. Only a single
    character sequence longer than a whole piece is cut inside, because the
    token budget is a hard limit. Whitespace-only pieces are dropped: a chunk
    must hold something to find.
    """
    window = 4 * (max_tokens - 1)  # the most characters a piece can cost in
    pieces: list[str] = []
    start = 0
    while start < len(line):
        end = start + fitting_prefix(line[start : start + window], max_tokens)
        if end < len(line):
            end = _piece_end(line, start, end)
        pieces.append(line[start:end])
        start = end
    return [piece for piece in pieces if piece.strip()]


def _piece_end(line: str, start: int, end: int) -> int:
    """Pull a cut at *end* back to a word boundary and a character boundary."""
    half = start + (end - start) // 2
    for i in range(end - 1, half, -1):
        if line[i].isspace():
            end = i + 1
            break
    safe = safe_boundary(line[start : end + 1], end - start)
    return start + safe if safe else end


class _Packer:
    """Greedy packing of blocks into chunks, fed in source order.

    The open chunk is the line range ``[_first, _last]``; ``_first`` is None
    when nothing is open. ``_headings_from`` marks where a trailing run of
    heading lines starts in the open chunk, so a section title that would end
    one chunk moves to the next with its body instead.
    """

    def __init__(self, lines: list[str], outline: _Outline, max_tokens: int, overlap: int) -> None:
        self._lines = lines
        self._blank = [not line.strip() for line in lines]
        self._prefix = [0, *accumulate(line_cost(line) for line in lines)]
        self._outline = outline
        self._max = max_tokens
        self._overlap = overlap
        self._first: int | None = None
        self._last = -1
        self._headings_from: int | None = None
        self.chunks: list[Chunk] = []
        self.restarts: list[int] = []  # headings reached with nothing open (see `Restart`)

    def add(self, block: _Block) -> None:
        is_heading = block.kind is _Kind.HEADING
        if is_heading and self._first is not None and self._open_cost() >= self._max // 4:
            self.flush()
        if self._first is None:
            if is_heading:
                self.restarts.append(block.first)
            self._place_alone(block)
        elif self._cost(self._first, block.last) <= self._max:
            self._last = block.last
        elif (
            self._headings_from is not None
            and self._cost(self._headings_from, block.last) <= self._max
        ):
            self._emit(self._first, self._headings_from - 1)
            self._first, self._last = self._headings_from, block.last
        elif is_heading:
            self.flush()
            self._place_alone(block)
        elif self._cost(block.first, block.last) <= self._max:
            self._carry_into(block.first, block.last)
        else:
            self._fill(block)
        self._track_headings(block)

    def flush(self) -> None:
        if self._first is not None:
            self._emit(self._first, self._last)
            self._first = None

    def _track_headings(self, block: _Block) -> None:
        if block.kind is not _Kind.HEADING or self._first is None:
            self._headings_from = None
        elif self._headings_from is None or self._headings_from < self._first:
            self._headings_from = block.first

    def _place_alone(self, block: _Block) -> None:
        if self._cost(block.first, block.last) <= self._max:
            self._first, self._last = block.first, block.last
        else:
            self._fill(block)

    def _fill(self, block: _Block) -> None:
        """Add a block too big for any chunk line by line, cutting where full.

        Blank lines are skipped here: the next non-blank line's range cost
        includes them, and a chunk never starts or ends on one anyway.
        """
        for i in range(block.first, block.last + 1):
            if self._blank[i]:
                continue
            fits_alone = self._cost(i, i) <= self._max
            if self._first is not None and self._cost(self._first, i) <= self._max:
                self._last = i
            elif not fits_alone:
                self.flush()
                self._emit_pieces(i)
            elif self._first is None:
                self._first, self._last = i, i
            else:
                self._carry_into(i, i)

    def _carry_into(self, first: int, last: int) -> None:
        """Close the open chunk and open one for ``[first, last]`` with overlap."""
        assert self._first is not None
        closed = self._emit(self._first, self._last)
        self._first = first if closed is None else self._overlap_start(*closed, first, last)
        self._last = last

    def _overlap_start(self, closed_first: int, closed_last: int, first: int, last: int) -> int:
        """Where the next chunk starts so it repeats the closed chunk's tail.

        The whole closed chunk can never be repeated: it plus the content
        that did not fit exceeds the budget, so progress is guaranteed.
        """
        start = closed_last + 1
        while start > closed_first and self._cost(start - 1, closed_last) <= self._overlap:
            start -= 1
        while start <= closed_last and (self._blank[start] or self._cost(start, last) > self._max):
            start += 1
        return start if start <= closed_last else first

    def _emit(self, first: int, last: int) -> tuple[int, int] | None:
        """Append the chunk for ``[first, last]`` minus trailing blanks; its range.

        Chunks always open on a non-blank line, but may close on blank lines
        before a heading that moved on or at the end of an unclosed fence.
        """
        while last >= first and self._blank[last]:
            last -= 1
        if first > last:
            return None
        text = "\n".join(self._lines[first : last + 1])
        outline = self._outline
        self.chunks.append(
            Chunk(first + 1, last + 1, text, outline.path_at(first), outline.inside(first, last))
        )
        return first, last

    def _emit_pieces(self, i: int) -> None:
        heading = self._outline.path_at(i)
        for piece in _split_long_line(self._lines[i], self._max):
            self.chunks.append(Chunk(i + 1, i + 1, piece, heading))

    def _open_cost(self) -> int:
        assert self._first is not None
        return self._cost(self._first, self._last)

    def _cost(self, first: int, last: int) -> int:
        return self._prefix[last + 1] - self._prefix[first]
