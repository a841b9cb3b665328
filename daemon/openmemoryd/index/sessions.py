"""Indexing session transcripts incrementally.

Runs on the writer connection (in the writer lane's thread). A transcript is
read from its stored byte offset; complete new lines become messages,
rendered as ``User: …`` / ``Assistant: …``, chunked like Markdown, and their
line ranges mapped back to JSONL line numbers. The new chunks are *added*;
the offset moves past the last complete line, so a half-written line waits
for the next pass.

Thresholds keep a transcript that is still being written from being
re-indexed at every line: unless forced, new lines are indexed once they
reach ``delta_bytes`` or ``delta_messages``, or the file has been quiet for
``idle_s``; otherwise the outcome says when to look again. A file that was
replaced (new inode) or shrank is re-read from the start, its old chunks
dropped in the same transaction.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from typing import Literal

import apsw

from openmemoryd.config import IndexSettings, SessionSettings
from openmemoryd.index.chunker import chunk_markdown
from openmemoryd.index.indexer import sha256_hex
from openmemoryd.index.transcripts import map_lines, message_time, parse_transcript, render
from openmemoryd.store import (
    ChunkRow,
    FileState,
    SessionState,
    advance_session,
    delete_file,
    indexed_file,
    touch_file,
)
from openmemoryd.store import session_state as stored_state
from openmemoryd.workspace import SessionFile

SOURCE = "sessions"

SessionOutcomeKind = Literal["added", "indexed", "restarted", "waiting", "unchanged", "removed"]


@dataclass(frozen=True, slots=True)
class SessionOutcome:
    key: str
    kind: SessionOutcomeKind
    chunks: int = 0
    pending_bytes: int = 0
    recheck_in: float | None = None


def index_session(
    conn: apsw.Connection,
    session: SessionFile,
    index: IndexSettings,
    sessions: SessionSettings,
    *,
    force: bool,
    now: float,
) -> SessionOutcome:
    """Bring the index up to date with one transcript (see the module doc)."""
    state = stored_state(conn, session.key)
    try:
        st = os.stat(session.path, follow_symlinks=False)
    except FileNotFoundError:
        st = None
    if st is None or not stat.S_ISREG(st.st_mode):
        removed = delete_file(conn, session.key)
        return SessionOutcome(session.key, "removed" if removed else "unchanged")

    restart = state is None or state.inode != st.st_ino or st.st_size < state.offset
    offset = 0 if restart or state is None else state.offset
    lines = 0 if restart or state is None else state.lines
    pending = st.st_size - offset
    if pending == 0 and not restart:
        _record_stat(conn, session.key, st)
        return SessionOutcome(session.key, "unchanged")

    data = _read_from(session, offset, st.st_size)
    quiet_for = now - st.st_mtime
    if not force:
        big_enough = pending >= sessions.delta_bytes or data.count(b"\n") >= sessions.delta_messages
        if not big_enough and quiet_for < sessions.idle_s:
            return SessionOutcome(
                session.key,
                "waiting",
                pending_bytes=pending,
                recheck_in=sessions.idle_s - quiet_for,
            )

    parsed = parse_transcript(data, first_line=lines + 1)
    if parsed.lines == 0 and not restart:
        if quiet_for >= max(sessions.idle_s, 1.0):
            # a writer that stopped mid-line (crashed): nothing to index and
            # nothing to wait for; the watcher notices if the line is finished
            _record_stat(conn, session.key, st)
            return SessionOutcome(session.key, "unchanged")
        # only a half-written line so far: look again once the writer is quiet
        return SessionOutcome(
            session.key, "waiting", pending_bytes=pending, recheck_in=sessions.idle_s or 1.0
        )
    rendered = render(parsed.messages)
    rows = []
    for chunk in chunk_markdown(
        rendered.text, max_tokens=index.chunk_tokens, overlap_tokens=index.chunk_overlap
    ):
        first, last = map_lines(rendered, chunk.start_line, chunk.end_line)
        rows.append(
            ChunkRow(
                start_line=first,
                end_line=last,
                heading="",
                text=chunk.text,
                hash=sha256_hex(chunk.text.encode("utf-8")),
                agent=session.agent,
                msg_time=message_time(rendered, chunk.start_line, chunk.end_line),
            )
        )
    new_offset = offset + parsed.consumed
    advance_session(
        conn,
        SessionState(session.key, session.agent, st.st_ino, new_offset, lines + parsed.lines),
        FileState(
            session.key, SOURCE, f"jsonl:{st.st_ino}:{new_offset}", st.st_mtime_ns, st.st_size
        ),
        rows,
        restart=restart,
    )
    kind: SessionOutcomeKind = "added" if state is None else "restarted" if restart else "indexed"
    return SessionOutcome(
        session.key,
        kind,
        chunks=len(rows),
        pending_bytes=st.st_size - new_offset,
    )


def _record_stat(conn: apsw.Connection, key: str, st: os.stat_result) -> None:
    """Keep the files row's (mtime, size) true for a file with nothing new
    (touched), or the cheap change check would flag it at every look."""
    row = indexed_file(conn, key)
    if row is not None and (row.mtime_ns, row.size) != (st.st_mtime_ns, st.st_size):
        touch_file(conn, key, st.st_mtime_ns, st.st_size)


def _read_from(session: SessionFile, offset: int, end: int) -> bytes:
    """Bytes *offset*..*end* of the transcript. Never past *end*, the size
    just stat'ed: lines appended since are read next pass, so the offset
    stored never runs ahead of the size recorded with it."""
    fd = os.open(session.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        parts = []
        position = offset
        while position < end and (block := os.pread(fd, min(1 << 20, end - position), position)):
            parts.append(block)
            position += len(block)
        return b"".join(parts)
    finally:
        os.close(fd)
