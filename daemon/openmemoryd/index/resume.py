"""Re-chunking only the end of a file that grew: what an append costs.

Memory files grow at the end (appends, logs, session blocks), and chunking a
20,000-line daily file again for every line added to it cost ~60 ms. The
chunker reports `Restart` points: headings it reached with nothing open,
where chunking the rest of the text alone gives exactly the whole text's
chunks from there on. `ChunkMemo` keeps, per file, the last few of them
from the file's last chunking, with the file's length and hash; when the
file is next indexed and still begins with exactly those bytes, only the
text from the last restart on is decoded, masked and chunked, and only the
chunks from there on are replaced.

A restart is usable only where nothing before it can change its meaning:
not inside an HTML comment (an appended ``-->`` would close it, and masking
works on the text before chunking), and not in a file that opens with a
``---`` line (a front matter whose end may be appended later). Everything
else falls back to chunking the whole file; the result is the same either
way, which `tests/test_indexer.py` checks against whole-file chunking.
"""

from __future__ import annotations

import hashlib
import re
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import accumulate
from typing import Final

from openmemoryd.index.chunker import Restart, Sections

__all__ = [
    "KEEP_RESTARTS",
    "ChunkMemo",
    "Grown",
    "Resumable",
    "tail_text",
    "usable_restarts",
]

_FRONT_MATTER: Final = re.compile(rb"---[ \t]*\r?(?:\n|$)")
_BOM: Final = b"\xef\xbb\xbf"
# Only the last few restarts are kept: an append resumes at the last one.
KEEP_RESTARTS: Final = 4


@dataclass(frozen=True, slots=True)
class Resumable:
    """A restart with where its line begins in the file's bytes."""

    line: int  # 1-based
    offset: int  # byte offset of that line
    sections: Sections


@dataclass(frozen=True, slots=True)
class Grown:
    """How a write of this process made a file grow, hashes included: an
    append knows them (`memory.known`), so the index need not read and hash
    the file again to see that it is the chunked version plus more."""

    before_len: int
    before_hash: str  # sha256 of the first before_len bytes
    after_len: int
    after_hash: str  # sha256 of all after_len bytes


@dataclass(frozen=True, slots=True)
class _Chunked:
    length: int  # bytes of the file when it was chunked
    digest: str  # their sha256
    settings: tuple[int, int]  # chunk_tokens, chunk_overlap
    restarts: tuple[Resumable, ...]


class ChunkMemo:
    """The last chunking's restarts, per file key; bounded (least recently
    used files leave first). Only the writer lane's thread uses it."""

    def __init__(self, max_files: int = 512) -> None:
        self._files: OrderedDict[str, _Chunked] = OrderedDict()
        self._max = max_files

    def remember(
        self,
        key: str,
        length: int,
        digest: str,
        settings: tuple[int, int],
        restarts: Sequence[Resumable],
    ) -> None:
        """Note that *key*, *length* bytes with sha256 *digest*, was chunked
        with *settings* and may be resumed at *restarts*."""
        if not restarts:
            self._files.pop(key, None)
            return
        self._files[key] = _Chunked(length, digest, settings, tuple(restarts[-KEEP_RESTARTS:]))
        self._files.move_to_end(key)
        while len(self._files) > self._max:
            self._files.popitem(last=False)

    def forget(self, key: str) -> None:
        self._files.pop(key, None)

    def lookup(
        self, key: str, indexed_digest: str | None, data: bytes, settings: tuple[int, int]
    ) -> tuple[Resumable, str] | None:
        """Where to resume chunking *data* (the file now), and *data*'s
        sha256; None unless the index holds exactly the chunked version
        (*indexed_digest*) and *data* is that version plus more."""
        entry = self._files.get(key)
        if (
            entry is None
            or entry.settings != settings
            or entry.digest != indexed_digest
            or len(data) <= entry.length
        ):
            return None
        hasher = hashlib.sha256(data[: entry.length])
        if hasher.hexdigest() != entry.digest:
            return None
        hasher.update(data[entry.length :])
        return entry.restarts[-1], hasher.hexdigest()

    def resume_point(
        self, key: str, indexed_digest: str | None, settings: tuple[int, int], grown: Grown
    ) -> Resumable | None:
        """Where to resume chunking *key* after the write *grown* describes,
        without reading the file: the write's own hashes say it is the
        chunked version plus more. The caller reads from the returned
        restart's offset on and checks the file's size is `grown.after_len`."""
        entry = self._files.get(key)
        if (
            entry is None
            or entry.settings != settings
            or entry.digest != indexed_digest
            or (grown.before_len, grown.before_hash) != (entry.length, entry.digest)
            or grown.after_len <= entry.length
        ):
            return None
        return entry.restarts[-1]

    def earlier(self, key: str, line: int) -> list[Resumable]:
        """The remembered restarts of *key* before *line*."""
        entry = self._files.get(key)
        return [r for r in entry.restarts if r.line < line] if entry else []


def usable_restarts(
    data: bytes,
    restarts: Sequence[Restart],
    *,
    base: Resumable | None = None,
    end: int | None = None,
    data_offset: int = 0,
) -> list[Resumable]:
    """The last of *restarts* (of a chunking of the file, from *base* on if
    given, up to byte *end* if given) that a later chunking may resume at,
    with their byte offsets in the file. *data* holds the file's bytes from
    *data_offset* on (at most *base*'s offset)."""
    kept = restarts[-KEEP_RESTARTS:]
    if not kept or (base is None and _FRONT_MATTER.match(data.removeprefix(_BOM))):
        return []
    first_line, first_offset = (base.line, base.offset) if base else (1, 0)
    local_end = None if end is None else end - data_offset
    pieces = data[first_offset - data_offset : local_end].split(b"\n", kept[-1].line - first_line)
    offsets = list(accumulate((len(piece) + 1 for piece in pieces[:-1]), initial=first_offset))
    found = []
    for restart in kept:
        offset = offsets[restart.line - first_line]
        if not _in_comment(data, offset - data_offset, first_offset - data_offset):
            found.append(Resumable(restart.line, offset, restart.sections))
    return found


def tail_text(data: bytes, offset: int, data_offset: int = 0) -> str | None:
    """The file from byte *offset* on as text (*data* holds it from
    *data_offset* on), or None if it is not valid UTF-8 (the whole file is
    then indexed the usual way, with its note)."""
    try:
        text = data[offset - data_offset :].decode("utf-8")
    except UnicodeDecodeError:
        return None
    return text.removeprefix("\ufeff") if offset == 0 else text


def _in_comment(data: bytes, offset: int, since: int) -> bool:
    """Whether an HTML comment is open at *offset* (none is at *since*)."""
    opened = data.rfind(b"<!--", since, offset)
    return opened != -1 and data.rfind(b"-->", opened + 4, offset) == -1
