"""Bringing one file's index entry in line with the file on disk.

`index_file` runs on the writer connection (in the writer lane's thread).
Reading, hashing, chunking and the write all happen in that one call, so two
updates of the same file can never interleave and store an older version
over a newer one.

Outcomes: unchanged content (by sha256 of the bytes) is skipped, however its
mtime moved; a file gone from disk, or no longer a memory path, leaves the
index; binary files (NUL bytes) and files over ``max_file_bytes`` are
recorded with a note and no chunks, so `status` can say why they are not
searchable. A file that is not UTF-8 is read in the one legacy encoding its
bytes clearly are (GBK, cp1251…: `workspace.decoding`) and noted with it;
failing that, with U+FFFD in place of the bad bytes, noted, and its lines
that are mostly U+FFFD left out (undecodable bytes are no memory, and their
mojibake embeds near every query that means nothing), the note naming
them. The file itself is never changed. A bootstrap file still identical to
its template holds no memory, only instructions, and would match every vague
query; it is recorded with no chunks until someone writes in it. Nothing
here raises for a bad file: a sync pass must finish.
"""

from __future__ import annotations

import hashlib
import logging
import os
from dataclasses import dataclass
from typing import Literal

import apsw

from openmemoryd.config import IndexSettings
from openmemoryd.errors import Forbidden, NotFound, OmemdError, TooLarge
from openmemoryd.index.chunker import Chunk, chunk_markdown_from
from openmemoryd.index.resume import ChunkMemo, Grown, Resumable, tail_text, usable_restarts
from openmemoryd.index.stream import WINDOW_BYTES, ChunkWindows, NotStreamable
from openmemoryd.store import (
    SKIPPED_NOTE,
    ChunkRow,
    FileState,
    delete_file,
    indexed_file,
    replace_file,
    replace_file_in_parts,
    touch_file,
)
from openmemoryd.workspace import MemoryPath, RootMissing, is_pristine_template, read_memory_file
from openmemoryd.workspace.boilerplate import has_memory, mask_boilerplate
from openmemoryd.workspace.decoding import (
    LEGACY_LOSSY_NOTE,
    LOSSY_NOTE,
    blank_unreadable,
    decode_note,
    describe_spans,
    legacy_encoding,
)

logger = logging.getLogger("openmemoryd.index")

OutcomeKind = Literal["added", "updated", "unchanged", "removed", "skipped", "absent"]


@dataclass(frozen=True, slots=True)
class FileOutcome:
    key: str
    kind: OutcomeKind
    chunks: int = 0
    issue: str | None = None


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def index_file(
    conn: apsw.Connection,
    key: str,
    mp: MemoryPath | None,
    settings: IndexSettings,
    *,
    force: bool = False,
    source: str = "memory",
    memo: ChunkMemo | None = None,
    grown: Grown | None = None,
) -> FileOutcome:
    """Update the index for the file *key*; *mp* None means "not memory any more".

    With *memo*, a file that only grew since it was last chunked is chunked
    again from its last restart point only (`index.resume`); the rows are
    the same as from chunking it whole. *grown* is what the write that just
    made the file grow knows of its hashes: then only the end of the file is
    read (`ChunkMemo.resume_point`).
    """
    known = indexed_file(conn, key)
    if mp is None:
        if memo is not None:
            memo.forget(key)
        return _remove(conn, key, known is not None)
    if memo is not None and grown is not None and known is not None and not force:
        appended = _index_appended(conn, key, mp, source, settings, memo, known.hash, grown)
        if appended is not None:
            return appended
    try:
        data, st = read_memory_file(mp, settings.max_file_bytes)
    except (NotFound, Forbidden, RootMissing):  # gone with its workspace, too
        return _remove(conn, key, known is not None)
    except TooLarge as exc:
        reason = f"{SKIPPED_NOTE} {exc}"
        if known is None or known.note != reason:
            replace_file(conn, FileState(key, source, "", 0, 0, reason), ())
        return FileOutcome(key, "skipped", issue=reason)
    except OmemdError as exc:
        logger.warning("cannot read %s: %s", key, exc)
        return FileOutcome(key, "skipped", issue=f"{SKIPPED_NOTE} {exc}")

    shape = (settings.chunk_tokens, settings.chunk_overlap)
    if memo is not None and known is not None and not force:
        resume = memo.lookup(key, known.hash, data, shape)
        resumed = resume and _index_tail(conn, key, source, data, 0, st, settings, memo, resume)
        if resumed:
            return resumed
    digest = sha256_hex(data)
    # LEGACY_LOSSY_NOTE: read before legacy encodings were tried, and
    # its mojibake indexed; read again. So is a file no encoding read
    # before that one now does (KOI8-R and Big5 were added later): only
    # files read lossily pay for the detection.
    stale = known is not None and (
        known.note == LEGACY_LOSSY_NOTE
        or (
            (known.note or "").startswith(LOSSY_NOTE)
            and known.hash == digest
            and legacy_encoding(data) is not None
        )
    )
    if known is not None and known.hash == digest and not force and not stale:
        if (known.mtime_ns, known.size) != (st.st_mtime_ns, st.st_size):
            touch_file(conn, key, st.st_mtime_ns, st.st_size)
        return FileOutcome(key, "unchanged", known.chunks, known.note)

    kind: OutcomeKind = "added" if known is None else "updated"
    if is_pristine_template(key, data):
        replace_file(conn, FileState(key, source, digest, st.st_mtime_ns, st.st_size), ())
        return FileOutcome(key, kind)
    if b"\x00" in data:
        binary = f"{SKIPPED_NOTE} binary file (contains NUL bytes)"
        replace_file(conn, FileState(key, source, digest, st.st_mtime_ns, st.st_size, binary), ())
        return FileOutcome(key, "skipped", issue=binary)

    if len(data) > WINDOW_BYTES:
        streamed = _index_in_windows(
            conn, FileState(key, source, digest, st.st_mtime_ns, st.st_size), data, settings, memo
        )
        if streamed is not None:
            return FileOutcome(key, kind, streamed)
    decoded = decode_note(data)
    text, note = decoded.text, decoded.note
    if decoded.lossy:
        # Lines of undecodable bytes hold no memory: blanked (lines kept),
        # and the note names them.
        text, blanked = blank_unreadable(text)
        if blanked:
            note = f"{note}; lines {describe_spans(blanked)} not indexed (undecodable bytes)"
    # Template comments, empty fields and hints are blanked (lines kept), and
    # a chunk left with only headings is not memory (workspace.boilerplate).
    chunks, restarts = chunk_markdown_from(
        mask_boilerplate(text),
        max_tokens=settings.chunk_tokens,
        overlap_tokens=settings.chunk_overlap,
    )
    rows = _rows(chunks)
    replace_file(conn, FileState(key, source, digest, st.st_mtime_ns, st.st_size, note), rows)
    if memo is not None:
        usable = usable_restarts(data, restarts) if note is None else []
        memo.remember(key, len(data), digest, shape, usable)
    return FileOutcome(key, kind, len(rows), note)


def _index_appended(
    conn: apsw.Connection,
    key: str,
    mp: MemoryPath,
    source: str,
    settings: IndexSettings,
    memo: ChunkMemo,
    indexed_digest: str,
    grown: Grown,
) -> FileOutcome | None:
    """Index a file this process just appended to, reading it only from its
    last restart point on (`ChunkMemo.resume_point`); None when that cannot
    be done (the caller reads the file whole)."""
    shape = (settings.chunk_tokens, settings.chunk_overlap)
    start = memo.resume_point(key, indexed_digest, shape, grown)
    if start is None:
        return None
    try:
        tail, st = read_memory_file(mp, settings.max_file_bytes, offset=start.offset)
    except OmemdError:
        return None
    if st.st_size != grown.after_len or start.offset + len(tail) != grown.after_len:
        return None  # changed again since the write: read and hash it whole
    resume = (start, grown.after_hash)
    return _index_tail(conn, key, source, tail, start.offset, st, settings, memo, resume)


def _index_tail(
    conn: apsw.Connection,
    key: str,
    source: str,
    data: bytes,
    data_offset: int,
    st: os.stat_result,
    settings: IndexSettings,
    memo: ChunkMemo,
    grown: tuple[Resumable, str],
) -> FileOutcome | None:
    """Chunk the file from its last restart point on and replace only the
    chunks from there (*data*: the file's bytes from *data_offset* on); None
    if the tail is not valid UTF-8 or holds NUL bytes (the whole file then
    goes the usual way, to be skipped or noted)."""
    start, digest = grown
    text = tail_text(data, start.offset, data_offset)
    if text is None or "\x00" in text:
        return None
    chunks, restarts = chunk_markdown_from(
        mask_boilerplate(text),
        max_tokens=settings.chunk_tokens,
        overlap_tokens=settings.chunk_overlap,
        first_line=start.line,
        sections=start.sections,
    )
    rows = _rows(chunks)
    state = FileState(key, source, digest, st.st_mtime_ns, st.st_size)
    total = replace_file(conn, state, rows, from_line=start.line)
    usable = memo.earlier(key, start.line) + usable_restarts(
        data, restarts, base=start, data_offset=data_offset
    )
    shape = (settings.chunk_tokens, settings.chunk_overlap)
    memo.remember(key, data_offset + len(data), digest, shape, usable)
    logger.debug("indexed %s from line %d on (the file grew)", key, start.line)
    return FileOutcome(key, "updated", total)


def _index_in_windows(
    conn: apsw.Connection,
    state: FileState,
    data: bytes,
    settings: IndexSettings,
    memo: ChunkMemo | None,
) -> int | None:
    """Index a large file a window at a time (`index.stream`); its chunk
    count, or None if it is not valid UTF-8 (nothing was written; it is
    indexed whole, with its note)."""
    windows = ChunkWindows(
        data,
        max_tokens=settings.chunk_tokens,
        overlap_tokens=settings.chunk_overlap,
        window=WINDOW_BYTES,
    )
    try:
        total = replace_file_in_parts(conn, state, (_rows(chunks) for chunks in windows))
    except NotStreamable:
        return None
    if memo is not None:
        shape = (settings.chunk_tokens, settings.chunk_overlap)
        memo.remember(state.path, len(data), state.hash, shape, windows.restarts)
    return total


def _rows(chunks: list[Chunk]) -> list[ChunkRow]:
    return [
        ChunkRow(
            c.start_line,
            c.end_line,
            c.heading,
            c.text,
            sha256_hex(c.text.encode("utf-8")),
            inner_headings=c.inner_headings,
        )
        for c in chunks
        if has_memory(c.text)
    ]


def _remove(conn: apsw.Connection, key: str, was_indexed: bool) -> FileOutcome:
    if was_indexed and delete_file(conn, key):
        return FileOutcome(key, "removed")
    return FileOutcome(key, "absent")
