"""Write operations on the index; each call is one transaction.

Only the engine's writer lane calls these (one thread at a time on the one
writer connection). A file's chunks, their FTS rows and its ``files`` row
change together or not at all, so a search never sees half a file.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import apsw

from openmemoryd.store.rows import InnerHeadings, as_int, headings_column
from openmemoryd.store.vectors import delete_chunk_vectors, delete_vectors
from openmemoryd.text import index_terms


@dataclass(frozen=True, slots=True)
class ChunkRow:
    """A chunk ready to store; `hash` is the sha256 of `text`.

    Transcript chunks also name their agent and when their messages were
    written (`msg_time`, epoch seconds).
    """

    start_line: int
    end_line: int
    heading: str
    text: str
    hash: str
    agent: str | None = None
    msg_time: float | None = None
    inner_headings: InnerHeadings = ()


@dataclass(frozen=True, slots=True)
class FileState:
    """What the ``files`` row records about one file."""

    path: str
    source: str
    hash: str
    mtime_ns: int
    size: int
    note: str | None = None


def replace_file(
    conn: apsw.Connection, state: FileState, chunks: Sequence[ChunkRow], *, from_line: int = 1
) -> int:
    """Make the index hold exactly *chunks* for the file, atomically; with
    *from_line*, *chunks* are the file's chunks from that line on and those
    that start before it stay as they are. Returns the file's chunk count.

    A chunk already stored unchanged (same lines, headings, text, source,
    agent and time) keeps its row, its terms and its vector; only the others
    are deleted and inserted. An append to a long file thus writes its last
    chunks, not all of them, and nothing unchanged waits to be embedded
    again. The rows that result are the same as from deleting everything and
    inserting *chunks*, but for their ids.
    """
    return replace_file_in_parts(conn, state, [chunks], from_line=from_line)


def replace_file_in_parts(
    conn: apsw.Connection,
    state: FileState,
    parts: Iterable[Sequence[ChunkRow]],
    *,
    from_line: int = 1,
) -> int:
    """`replace_file` with the chunks arriving in *parts*, in file order, so
    a large file's chunks need not all be in memory at once. One transaction:
    an exception from *parts* leaves the index as it was."""
    with conn:
        stored: dict[tuple[object, ...], list[int]] = {}
        for chunk_id, *key in conn.execute(
            "SELECT id, start_line, end_line, heading, inner_headings, hash, source, agent, "
            "msg_time FROM chunks WHERE path = ? AND start_line >= ?",
            (state.path, from_line),
        ):
            stored.setdefault(tuple(key), []).append(as_int(chunk_id))
        count = 0
        for chunks in parts:
            fresh = []
            for chunk in chunks:
                kept = stored.get(_identity(chunk, state.source))
                if kept:
                    kept.pop()
                else:
                    fresh.append(chunk)
            insert_chunks(conn, state.path, state.source, fresh)
            count += len(chunks)
        _delete_ids(conn, [chunk_id for ids in stored.values() for chunk_id in ids])
        before = 0
        if from_line > 1:
            (row,) = conn.execute(
                "SELECT count(*) FROM chunks WHERE path = ? AND start_line < ?",
                (state.path, from_line),
            )
            before = as_int(row[0])
        upsert_file(conn, state, before + count)
    return before + count


def _identity(chunk: ChunkRow, source: str) -> tuple[object, ...]:
    """What makes a stored row the same chunk (the order of `replace_file`'s query)."""
    return (
        chunk.start_line,
        chunk.end_line,
        chunk.heading,
        headings_column(chunk.inner_headings),
        chunk.hash,
        source,
        chunk.agent,
        chunk.msg_time,
    )


def upsert_file(conn: apsw.Connection, state: FileState, chunks: int) -> None:
    """Record *state* and the file's chunk count (inside the caller's transaction)."""
    conn.execute(
        "INSERT INTO files(path, source, hash, mtime_ns, size, chunks, indexed_at, note) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
        "ON CONFLICT(path) DO UPDATE SET source = excluded.source, hash = excluded.hash, "
        "mtime_ns = excluded.mtime_ns, size = excluded.size, chunks = excluded.chunks, "
        "indexed_at = excluded.indexed_at, note = excluded.note",
        (
            state.path,
            state.source,
            state.hash,
            state.mtime_ns,
            state.size,
            chunks,
            time.time(),
            state.note,
        ),
    )


def insert_chunks(
    conn: apsw.Connection, path: str, source: str, chunks: Sequence[ChunkRow]
) -> None:
    """Add chunks of *path* (call inside the caller's transaction)."""
    now = time.time()
    for chunk in chunks:
        conn.execute(
            "INSERT INTO chunks(path, source, agent, start_line, end_line, heading, "
            "inner_headings, text, hash, msg_time, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                path,
                source,
                chunk.agent,
                chunk.start_line,
                chunk.end_line,
                chunk.heading,
                headings_column(chunk.inner_headings),
                chunk.text,
                chunk.hash,
                chunk.msg_time,
                now,
            ),
        )
        conn.execute(
            "INSERT INTO chunks_fts(rowid, body, heading) VALUES (?, ?, ?)",
            (conn.last_insert_rowid(), index_terms(chunk.text), index_terms(chunk.heading)),
        )


def count_access(conn: apsw.Connection, shown: Sequence[tuple[str, int, int]]) -> None:
    """Count one access for the chunks holding each shown (path, first line,
    last line): the hits a reader saw (`search.salience`)."""
    with conn:
        conn.executemany(
            "UPDATE chunks SET access_count = access_count + 1 "
            "WHERE path = ? AND start_line <= ? AND end_line >= ?",
            [(path, first, last) for path, first, last in shown],
        )


def touch_file(conn: apsw.Connection, path: str, mtime_ns: int, size: int) -> None:
    """Record a new stat for a file whose content hash did not change."""
    with conn:
        conn.execute(
            "UPDATE files SET mtime_ns = ?, size = ? WHERE path = ?", (mtime_ns, size, path)
        )


def delete_file(conn: apsw.Connection, path: str) -> bool:
    """Remove a file and every chunk of it; return whether it was indexed."""
    with conn:
        _delete_chunks(conn, path)
        conn.execute("DELETE FROM session_files WHERE path = ?", (path,))
        conn.execute("DELETE FROM files WHERE path = ?", (path,))
        removed = conn.changes() > 0
    return removed


def delete_chunks(conn: apsw.Connection, path: str) -> None:
    """Remove every chunk of *path* (inside the caller's transaction)."""
    _delete_chunks(conn, path)


def _delete_ids(conn: apsw.Connection, ids: Sequence[int]) -> None:
    """Remove the chunks *ids*, their terms and their vectors."""
    if not ids:
        return
    delete_vectors(conn, ids)
    for chunk_id in ids:
        conn.execute("DELETE FROM chunks_fts WHERE rowid = ?", (chunk_id,))
        conn.execute("DELETE FROM chunks WHERE id = ?", (chunk_id,))


def _delete_chunks(conn: apsw.Connection, path: str) -> None:
    delete_chunk_vectors(conn, path)
    conn.execute(
        "DELETE FROM chunks_fts WHERE rowid IN (SELECT id FROM chunks WHERE path = ?)", (path,)
    )
    conn.execute("DELETE FROM chunks WHERE path = ?", (path,))
