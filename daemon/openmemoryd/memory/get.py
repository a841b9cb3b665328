"""Reading memory files by line range (`memory_get`).

Lines are 1-based. No range returns the whole file verbatim; a range past
the end returns empty text (``to_line`` 0), not an error, so an agent paging
through a file can stop when the text runs out. A missing file is
``not_found``: silently answering "" (as OpenClaw does) hides typos.
"""

from __future__ import annotations

from omem_protocol import GetResult
from openmemoryd.errors import Forbidden
from openmemoryd.workspace import PathPolicy, read_memory_file


def read_lines(
    policy: PathPolicy, raw_path: str, from_line: int | None, lines: int | None, max_bytes: int
) -> GetResult:
    """Return lines ``from_line .. from_line + lines - 1`` of a memory file."""
    mp = policy.resolve(raw_path)
    data, _ = read_memory_file(mp, max_bytes)
    if b"\x00" in data:
        raise Forbidden(f"not a text file: {mp.key}")
    text = data.decode("utf-8", errors="replace")
    all_lines = text.split("\n") if text else []  # an empty file has no lines, not one
    if text.endswith("\n"):
        all_lines.pop()
    total = len(all_lines)
    if from_line is None and lines is None:
        return GetResult(path=mp.key, text=text, from_line=1, to_line=total, total_lines=total)
    start = from_line or 1
    selected = all_lines[start - 1 : start - 1 + lines] if lines else all_lines[start - 1 :]
    return GetResult(
        path=mp.key,
        text="\n".join(selected),
        from_line=start,
        to_line=start + len(selected) - 1 if selected else 0,
        total_lines=total,
    )
