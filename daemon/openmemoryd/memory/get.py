"""Reading memory files by line range (`memory_get`).

Lines are 1-based. No range returns the whole file verbatim (but for a
leading byte-order mark, which is no text of the file; a file that is not
UTF-8 is decoded as the indexer decodes it, and the reply's ``note`` says
how); a range past
the end returns empty text (``to_line`` 0), not an error, so an agent paging
through a file can stop when the text runs out. A missing file is
``not_found``: silently answering "" (as OpenClaw does) hides typos.

The path may be a hit's citation as `search` gives it (``memory/x.md#L5-L7``,
or ``memory/x.md:5-7``): those lines, so an agent reads back exactly what it
was cited without working out a count.
"""

from __future__ import annotations

import re
from typing import Final

from omem_protocol import GetResult
from openmemoryd.errors import BadRequest, Forbidden
from openmemoryd.workspace import PathPolicy, read_memory_file
from openmemoryd.workspace.decoding import decode_note

__all__ = ["MAX_LINE", "read_lines", "split_citation"]

MAX_LINE: Final = 2**63 - 1  # as the wire's line numbers

# ``path#L5``, ``path#L5-L7`` (OpenClaw's form, and ours) or ``path:5-7``;
# a memory file's own name ends in ``.md``, so no real path looks like one
_CITATION: Final = re.compile(
    r"^(?P<path>.+?)(?:#L(?P<a>\d+)(?:-L?(?P<b>\d+))?|:(?P<c>\d+)(?:-(?P<d>\d+))?)$"
)


def split_citation(raw: str) -> tuple[str, int, int] | None:
    """A citation's path and its first and last line; None for anything
    else (a plain path). A citation that cannot name lines is `BadRequest`."""
    match = _CITATION.match(raw.strip())
    if match is None:
        return None
    start = int(match.group("a") or match.group("c"))
    end = int(match.group("b") or match.group("d") or start)
    if start < 1:
        raise BadRequest(f"citation {raw!r}: lines are numbered from 1")
    if end > MAX_LINE:  # no file has so many, and no reply could carry the number
        raise BadRequest(f"citation {raw!r}: no line past {MAX_LINE}")
    if end < start:
        raise BadRequest(f"citation {raw!r} ends before it starts")
    return match.group("path"), start, end


def read_lines(
    policy: PathPolicy,
    raw_path: str,
    from_line: int | None,
    lines: int | None,
    max_bytes: int,
    *,
    to_line: int | None = None,
) -> GetResult:
    """Return lines ``from_line .. from_line + lines - 1`` (or ``.. to_line``)
    of a memory file, or the lines *raw_path* cites."""
    cited = split_citation(raw_path)
    if cited is not None:
        range_args = (("from_line", from_line), ("lines", lines), ("to_line", to_line))
        given = [name for name, value in range_args if value is not None]
        if given:
            raise BadRequest(
                f"{raw_path!r} names its lines: give {' and '.join(given)} with a plain path only"
            )
        raw_path, from_line, to_line = cited
    if to_line is not None:
        if lines is not None:
            raise BadRequest("give lines or to_line, not both")
        first = from_line or 1
        if to_line < first:
            raise BadRequest(f"to_line {to_line} is before from_line {first}")
        from_line, lines = first, to_line - first + 1
    mp = policy.resolve(raw_path)
    data, _ = read_memory_file(mp, max_bytes)
    if b"\x00" in data:
        raise Forbidden(f"not a text file: {mp.key}")
    # A byte-order mark is the encoding's signature, not text of line 1: the
    # indexer leaves it out of chunks, and `get` printed it to people and
    # scripts (and into whatever they paste it). The file keeps it. A file
    # in a legacy encoding (GBK, cp1251) is read as the indexer reads it, so
    # a search hit's citation gets the lines it cited, not mojibake.
    decoded = decode_note(data)
    text, note = decoded.text, decoded.note
    all_lines = text.split("\n") if text else []  # an empty file has no lines, not one
    if text.endswith("\n"):
        all_lines.pop()
    total = len(all_lines)
    if from_line is None and lines is None:
        return GetResult(
            path=mp.key, text=text, from_line=1, to_line=total, total_lines=total, note=note
        )
    start = from_line or 1
    selected = all_lines[start - 1 : start - 1 + lines] if lines else all_lines[start - 1 :]
    return GetResult(
        path=mp.key,
        text="\n".join(selected),
        from_line=start,
        to_line=start + len(selected) - 1 if selected else 0,
        total_lines=total,
        note=note,
    )
