"""Read queries on the index. Safe on any connection, read-only included."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import apsw

from openmemoryd.store.rows import (
    InnerHeadings,
    SQLiteValue,
    as_float,
    as_headings,
    as_int,
    as_str,
)
from openmemoryd.store.schema import KEYWORD_RANK_FUNCTION


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
class ChunkRecord:
    """A chunk's location and text, for results found by vector search."""

    id: int
    path: str
    source: str
    start_line: int
    end_line: int
    heading: str
    text: str
    agent: str | None = None
    msg_time: float | None = None
    access_count: int = 0  # times among the hits a reader saw (`search.salience`)
    inner_headings: InnerHeadings = ()  # heading lines inside it, with their paths


# How the indexer's note on a file it keeps no text of begins (binary, too
# large); any other note is said of a file that is indexed (read with its
# invalid UTF-8 replaced). `status` and `doctor` count skipped files by it.
SKIPPED_NOTE: Final = "skipped:"


@dataclass(frozen=True, slots=True)
class SourceTotals:
    """A source's rows in ``files``: *files* counts every row, *skipped*
    those of them whose text the indexer left out (`SKIPPED_NOTE`)."""

    source: str
    files: int
    chunks: int
    skipped: int = 0


_FILE_COLUMNS = "path, source, hash, mtime_ns, size, chunks, note"


def _indexed_file(row: tuple[SQLiteValue, ...]) -> IndexedFile:
    path, source, digest, mtime_ns, size, chunks, note = row
    return IndexedFile(
        path=as_str(path),
        source=as_str(source),
        hash=as_str(digest),
        mtime_ns=as_int(mtime_ns),
        size=as_int(size),
        chunks=as_int(chunks),
        note=None if note is None else as_str(note),
    )


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
    """Files (of them skipped) and chunks per source."""
    rows = conn.execute(
        "SELECT source, count(*), coalesce(sum(chunks), 0), "
        "coalesce(sum(substr(note, 1, ?) = ?), 0) FROM files "
        "GROUP BY source ORDER BY source",
        (len(SKIPPED_NOTE), SKIPPED_NOTE),
    )
    return [
        SourceTotals(as_str(source), as_int(files), as_int(chunks), as_int(skipped))
        for source, files, chunks, skipped in rows
    ]


def file_notes(conn: apsw.Connection) -> list[tuple[str, str]]:
    """(path, note) for files indexed with a note (skipped, lossy decoding)."""
    rows = conn.execute("SELECT path, note FROM files WHERE note IS NOT NULL ORDER BY path")
    return [(as_str(path), as_str(note)) for path, note in rows]


def chunk_count(conn: apsw.Connection) -> int:
    return as_int(conn.execute("SELECT count(*) FROM chunks").fetchall()[0][0])


_CHUNK_COLUMNS = (
    "c.id, c.path, c.source, c.start_line, c.end_line, c.heading, c.text, c.agent, c.msg_time,"
    " c.access_count, c.inner_headings"
)


def _record(row: tuple[SQLiteValue, ...]) -> ChunkRecord:
    rowid, path, source, start_line, end_line, heading, text, agent, msg_time, accessed, inner = row
    return ChunkRecord(
        id=as_int(rowid),
        path=as_str(path),
        source=as_str(source),
        start_line=as_int(start_line),
        end_line=as_int(end_line),
        heading=as_str(heading),
        text=as_str(text),
        agent=None if agent is None else as_str(agent),
        msg_time=None if msg_time is None else as_float(msg_time),
        access_count=as_int(accessed),
        inner_headings=as_headings(inner),
    )


def lexical_candidates(
    conn: apsw.Connection,
    match: str,
    limit: int,
    sources: Sequence[str] | None = None,
    agent: str | None = None,
    part: RowidRange | None = None,
) -> list[tuple[ChunkRecord, float]]:
    """Best *limit* chunks for an FTS5 MATCH expression with their BM25 rank
    (negative: more negative is better), best first; with *part*, only
    chunks whose id is in that range (the ranks are those of the whole
    index: FTS5 counts a term's rows over all of it).

    ``ORDER BY rank`` makes FTS5 score and sort every matching row before
    the first comes out; ``ORDER BY bm25(...) LIMIT n`` lets SQLite keep
    only the best *n* while scoring, which is 40 % less work when a common
    term matches a third of a million-chunk index. The best rows are taken
    that way first (a few more than *limit* when a filter may drop some),
    then their chunks are read. Only if the filter left fewer than *limit*
    of them, while more rows matched, does it fall back to the full sort,
    which then reads chunks in rank order until *limit* pass. Either way
    the result is the filtered top *limit*: a row outside the best *n*
    ranks below every row inside it.
    """
    narrowed = bool(sources) or agent is not None
    window = limit * _FILTERED_WINDOW if narrowed else limit
    # One statement, so the rows and their chunks come from one snapshot
    # (a write between two statements could replace a matched chunk).
    # ``matched`` counts the rows of the window before the filters.
    within, bounds = _within(part, "rowid")
    args: list[object] = [match, *bounds, window]
    sql = (
        f"SELECT {_CHUNK_COLUMNS}, f.r, f.matched FROM ("
        " SELECT id, r, count(*) OVER () AS matched FROM ("
        f"  SELECT rowid AS id, {KEYWORD_RANK_FUNCTION} AS r FROM chunks_fts"
        f"   WHERE chunks_fts MATCH ?{within} ORDER BY r LIMIT ?)"
        ") AS f JOIN chunks AS c ON c.id = f.id"
    )
    sql += _narrowed(args, sources, agent)
    sql += " ORDER BY f.r"
    rows = list(conn.execute(sql, args))
    ranked = [(_record(row[:-2]), as_float(row[-2])) for row in rows][:limit]
    if len(ranked) == limit or (rows and as_int(rows[0][-1]) < window):
        return ranked
    return _lexical_sorted(conn, match, limit, sources, agent, part)


# Rows taken per wanted row when a source or agent filter may drop some.
_FILTERED_WINDOW: Final = 4


@dataclass(frozen=True, slots=True)
class RowidRange:
    """Chunk ids from `low` (inclusive) to `high` (exclusive); None: unbounded."""

    low: int | None
    high: int | None


def _within(part: RowidRange | None, column: str) -> tuple[str, list[object]]:
    """The ``AND`` clauses keeping *column* within *part*, and their values."""
    if part is None:
        return "", []
    clauses = ""
    values: list[object] = []
    if part.low is not None:
        clauses += f" AND {column} >= ?"
        values.append(part.low)
    if part.high is not None:
        clauses += f" AND {column} < ?"
        values.append(part.high)
    return clauses, values


def highest_chunk_id(conn: apsw.Connection) -> int:
    """The highest chunk id (0 for none): an upper bound of the chunk count,
    read from the primary key in O(log n) where ``count(*)`` walks every row."""
    rows = conn.execute("SELECT max(id) FROM chunks").fetchall()
    return 0 if not rows or rows[0][0] is None else as_int(rows[0][0])


def _lexical_sorted(
    conn: apsw.Connection,
    match: str,
    limit: int,
    sources: Sequence[str] | None,
    agent: str | None,
    part: RowidRange | None = None,
) -> list[tuple[ChunkRecord, float]]:
    """`lexical_candidates` by FTS5's own full sort: chunks are joined in
    rank order until *limit* pass the filters (a selective filter)."""
    within, bounds = _within(part, "f.rowid")
    sql = (
        f"SELECT {_CHUNK_COLUMNS}, f.rank "
        "FROM chunks_fts AS f JOIN chunks AS c ON c.id = f.rowid "
        f"WHERE chunks_fts MATCH ?{within}"
    )
    args: list[object] = [match, *bounds]
    sql += _narrowed(args, sources, agent)
    sql += " ORDER BY f.rank LIMIT ?"
    args.append(limit)
    return [(_record(row[:-1]), as_float(row[-1])) for row in conn.execute(sql, args)]


def dated_chunks(
    conn: apsw.Connection,
    sources: Sequence[str] | None = None,
    agent: str | None = None,
    msg_time_range: tuple[float, float] | None = None,
) -> list[ChunkRecord]:
    """Chunks that may be about a known day: a ``YYYY-MM-DD`` in their
    file's name, a digit in their heading, a heading inside them that may
    hold a year, or (with *msg_time_range*) a transcript message written
    within it. The caller reads the day itself
    (`search.dates.memory_date`); this only narrows what it reads."""
    dated = [
        "c.path GLOB '*[12][0-9][0-9][0-9]-[01][0-9]-[0-3][0-9]*'",
        "c.heading GLOB '*[0-9]*'",
        "c.inner_headings GLOB '*[0-9][0-9][0-9][0-9]*'",
    ]
    args: list[object] = []
    if msg_time_range is not None:
        dated.append("c.msg_time BETWEEN ? AND ?")
        args.extend(msg_time_range)
    sql = f"SELECT {_CHUNK_COLUMNS} FROM chunks AS c WHERE ({' OR '.join(dated)})"
    sql += _narrowed(args, sources, agent)
    return [_record(row) for row in conn.execute(sql, args)]


def _narrowed(args: list[object], sources: Sequence[str] | None, agent: str | None) -> str:
    """The ``AND`` clauses that keep chunks of *sources* and *agent* (of
    table alias ``c``); their values are appended to *args*."""
    clauses = ""
    if sources:
        clauses += f" AND c.source IN ({', '.join('?' * len(sources))})"
        args.extend(sources)
    if agent is not None:
        clauses += " AND c.agent = ?"
        args.append(agent)
    return clauses


def chunk_records(conn: apsw.Connection, ids: Sequence[int]) -> dict[int, ChunkRecord]:
    """The chunks with these ids (missing ids are simply absent)."""
    found: dict[int, ChunkRecord] = {}
    for start in range(0, len(ids), 400):
        part = ids[start : start + 400]
        rows = conn.execute(
            f"SELECT {_CHUNK_COLUMNS} FROM chunks AS c "
            f"WHERE c.id IN ({', '.join('?' * len(part))})",
            tuple(part),
        )
        for row in rows:
            record = _record(row)
            found[record.id] = record
    return found


def file_mtimes(conn: apsw.Connection, paths: Sequence[str]) -> dict[str, float]:
    """Modification times (seconds) of indexed files, for decaying sessions."""
    unique = list(dict.fromkeys(paths))
    found: dict[str, float] = {}
    for start in range(0, len(unique), 400):
        part = unique[start : start + 400]
        rows = conn.execute(
            f"SELECT path, mtime_ns FROM files WHERE path IN ({', '.join('?' * len(part))})",
            tuple(part),
        )
        found.update((as_str(path), as_int(mtime) / 1e9) for path, mtime in rows)
    return found
