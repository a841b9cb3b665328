"""Read queries on the index. Safe on any connection, read-only included."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import apsw

SQLiteValue = int | float | bytes | str | None


@dataclass(frozen=True, slots=True)
class IndexedFile:
    """A ``files`` row."""

    path: str
    source: str
    hash: str
    mtime_ns: int
    size: int
    chunks: int
    note: str | None


@dataclass(frozen=True, slots=True)
class LexicalRow:
    """A chunk matched by the keyword leg, with FTS5's BM25 rank (negative:
    more negative is better)."""

    id: int
    path: str
    source: str
    start_line: int
    end_line: int
    heading: str
    text: str
    rank: float


@dataclass(frozen=True, slots=True)
class SourceTotals:
    source: str
    files: int
    chunks: int


_FILE_COLUMNS = "path, source, hash, mtime_ns, size, chunks, note"


def _indexed_file(row: tuple[SQLiteValue, ...]) -> IndexedFile:
    path, source, digest, mtime_ns, size, chunks, note = row
    return IndexedFile(
        path=str(path),
        source=str(source),
        hash=str(digest),
        mtime_ns=_int(mtime_ns),
        size=_int(size),
        chunks=_int(chunks),
        note=None if note is None else str(note),
    )


def _int(value: SQLiteValue) -> int:
    assert isinstance(value, int), value
    return value


def indexed_files(conn: apsw.Connection, source: str | None = None) -> dict[str, IndexedFile]:
    sql = f"SELECT {_FILE_COLUMNS} FROM files"
    args: tuple[str, ...] = ()
    if source is not None:
        sql += " WHERE source = ?"
        args = (source,)
    files = (_indexed_file(row) for row in conn.execute(sql, args))
    return {f.path: f for f in files}


def indexed_file(conn: apsw.Connection, path: str) -> IndexedFile | None:
    rows = conn.execute(f"SELECT {_FILE_COLUMNS} FROM files WHERE path = ?", (path,)).fetchall()
    return _indexed_file(rows[0]) if rows else None


def source_totals(conn: apsw.Connection) -> list[SourceTotals]:
    """Indexed files and chunks per source."""
    rows = conn.execute(
        "SELECT source, count(*), coalesce(sum(chunks), 0) FROM files "
        "GROUP BY source ORDER BY source"
    )
    return [SourceTotals(str(source), _int(files), _int(chunks)) for source, files, chunks in rows]


def file_notes(conn: apsw.Connection) -> list[tuple[str, str]]:
    """(path, note) for files indexed with a note (skipped, lossy decoding)."""
    rows = conn.execute("SELECT path, note FROM files WHERE note IS NOT NULL ORDER BY path")
    return [(str(path), str(note)) for path, note in rows]


def chunk_count(conn: apsw.Connection) -> int:
    return _int(conn.execute("SELECT count(*) FROM chunks").fetchall()[0][0])


def lexical_candidates(
    conn: apsw.Connection, match: str, limit: int, sources: Sequence[str] | None = None
) -> list[LexicalRow]:
    """Best *limit* chunks for an FTS5 MATCH expression, best first."""
    sql = (
        "SELECT c.id, c.path, c.source, c.start_line, c.end_line, c.heading, c.text, f.rank "
        "FROM chunks_fts AS f JOIN chunks AS c ON c.id = f.rowid "
        "WHERE chunks_fts MATCH ?"
    )
    args: list[object] = [match]
    if sources:
        sql += f" AND c.source IN ({', '.join('?' * len(sources))})"
        args.extend(sources)
    sql += " ORDER BY f.rank LIMIT ?"
    args.append(limit)
    return [
        LexicalRow(
            id=_int(rowid),
            path=str(path),
            source=str(source),
            start_line=_int(start),
            end_line=_int(end),
            heading=str(heading),
            text=str(text),
            rank=float(rank),  # bm25() is always a float
        )
        for rowid, path, source, start, end, heading, text, rank in conn.execute(sql, args)
    ]
