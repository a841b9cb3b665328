"""Chunking a large file a window at a time, so indexing memory stays bounded.

Chunking a file whole holds its text several times over at once: the
decoded text, the text with its boilerplate masked, a list of its lines, and
every chunk's text and row (147 MB of Python objects for a 20 MB file).
`ChunkWindows` instead decodes, masks and chunks about `WINDOW_BYTES` at a
time. It cuts between windows only at a chunker `Restart` that a later
chunking may resume at (`index.resume.usable_restarts`: a heading reached
with nothing open, not inside an HTML comment, not in a file with front
matter), where the chunks before the cut are final and chunking the rest
alone gives the whole file's chunks from there on, so the chunks are exactly
those of chunking the file whole (`tests/test_index_stream.py`). A window
with no such place grows (doubling) until it has one or reaches the end.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final

from openmemoryd.index.chunker import Chunk, chunk_markdown_from
from openmemoryd.index.resume import KEEP_RESTARTS, Resumable, usable_restarts
from openmemoryd.workspace.boilerplate import mask_boilerplate

__all__ = ["WINDOW_BYTES", "ChunkWindows", "NotStreamable"]

# Files above this are chunked in windows of about this size.
WINDOW_BYTES: Final = 1 << 20


class NotStreamable(Exception):
    """The file is not valid UTF-8: it is indexed whole, with its note."""


class ChunkWindows:
    """Iterate over *data*'s chunks, a window's worth at a time; afterwards
    `restarts` holds where a later append may resume (`index.resume`)."""

    def __init__(
        self, data: bytes, *, max_tokens: int, overlap_tokens: int, window: int = WINDOW_BYTES
    ) -> None:
        self._data = data
        self._max_tokens = max_tokens
        self._overlap = overlap_tokens
        self._window = window
        self.restarts: list[Resumable] = []

    def __iter__(self) -> Iterator[list[Chunk]]:
        data = self._data
        start: Resumable | None = None  # None: the beginning of the file
        window = self._window
        cuts: list[Resumable] = []
        while True:
            offset = start.offset if start else 0
            end = _line_end(data, offset + window)
            chunks, restarts = chunk_markdown_from(
                mask_boilerplate(_decode(data, offset, end)),
                max_tokens=self._max_tokens,
                overlap_tokens=self._overlap,
                first_line=start.line if start else 1,
                sections=start.sections if start else (),
            )
            usable = usable_restarts(data, restarts, base=start, end=end)
            if end == len(data):
                self.restarts = [*cuts, *usable][-KEEP_RESTARTS:]
                yield chunks
                return
            line = start.line if start else 1
            cut = next((r for r in reversed(usable) if r.line > line), None)
            if cut is None:  # nowhere to cut yet: look further
                window *= 2
                continue
            yield [c for c in chunks if c.start_line < cut.line]
            cuts = [*cuts, cut][-KEEP_RESTARTS:]
            start, window = cut, self._window


def _line_end(data: bytes, at: int) -> int:
    """The end of the line that byte *at* is on (past its newline)."""
    if at >= len(data):
        return len(data)
    newline = data.find(b"\n", at)
    return len(data) if newline == -1 else newline + 1


def _decode(data: bytes, start: int, end: int) -> str:
    try:
        text = data[start:end].decode("utf-8")
    except UnicodeDecodeError as exc:
        raise NotStreamable(str(exc)) from None
    return text.removeprefix("\ufeff") if start == 0 else text
