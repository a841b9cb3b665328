"""Index state of session transcripts, which are indexed incrementally.

A transcript only grows while its session runs, so its new lines are read
from the stored byte offset and their chunks are *added* to the ones already
indexed. The inode is kept too: a file replaced (rotation) or shrunk
(truncation) is re-read from the start, its old chunks dropped in the same
transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import apsw

from openmemoryd.store.rows import as_int, as_str
from openmemoryd.store.writes import ChunkRow, FileState, delete_chunks, insert_chunks, upsert_file


@dataclass(frozen=True, slots=True)
class SessionState:
    """How far a transcript has been indexed."""

    path: str
    agent: str
    inode: int
    offset: int
    lines: int


def session_state(conn: apsw.Connection, path: str) -> SessionState | None:
    rows = conn.execute(
        "SELECT path, agent, inode, offset, lines FROM session_files WHERE path = ?", (path,)
    ).fetchall()
    if not rows:
        return None
    p, agent, inode, offset, lines = rows[0]
    return SessionState(as_str(p), as_str(agent), as_int(inode), as_int(offset), as_int(lines))


def session_states(conn: apsw.Connection) -> list[SessionState]:
    rows = conn.execute("SELECT path, agent, inode, offset, lines FROM session_files ORDER BY path")
    return [
        SessionState(as_str(p), as_str(a), as_int(i), as_int(o), as_int(n))
        for p, a, i, o, n in rows
    ]


def advance_session(
    conn: apsw.Connection,
    state: SessionState,
    file: FileState,
    chunks: Sequence[ChunkRow],
    *,
    restart: bool,
) -> None:
    """Add the chunks of newly read lines and move the offset, atomically.

    With *restart*, the file's earlier chunks are dropped first (it was
    rotated or truncated and has been read from the start).
    """
    with conn:
        if restart:
            delete_chunks(conn, state.path)
        insert_chunks(conn, state.path, file.source, chunks)
        total = conn.execute("SELECT count(*) FROM chunks WHERE path = ?", (state.path,)).fetchall()
        upsert_file(conn, file, as_int(total[0][0]))
        conn.execute(
            "INSERT INTO session_files(path, agent, inode, offset, lines) VALUES (?, ?, ?, ?, ?) "
            "ON CONFLICT(path) DO UPDATE SET agent = excluded.agent, inode = excluded.inode, "
            "offset = excluded.offset, lines = excluded.lines",
            (state.path, state.agent, state.inode, state.offset, state.lines),
        )
