"""The in-memory hamming scan picks exactly the candidates the SQL scan
picks, for every count and source filter, and stays exact through writes,
deletes, a pruned log, a new centre and a re-created table: each checked
against `sql_candidates` on the same data."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import apsw
import pytest

from openmemoryd.store import ChunkRow, FileState, delete_file, replace_file, signbits
from openmemoryd.store.db import open_index, open_reader
from openmemoryd.store.quantised import (
    _centre,
    drop_companions,
    ensure_companions,
    quantised_knn,
)
from openmemoryd.store.rows import as_bytes, as_int
from openmemoryd.store.signbits import cached_candidates, log_name, sql_candidates
from openmemoryd.store.vectors import VecTable, store_vectors, target_table
from openmemoryd.store.vectors import warm_active_sign_bits as signbits_warm
from test_quantised import DIMS, cone_vectors

SOURCE_FILTERS: list[list[str] | None] = [None, ["memory"], ["sessions"], ["memory", "sessions"]]


@pytest.fixture
def conn(tmp_path: Path) -> Iterator[apsw.Connection]:
    signbits.forget()
    opened = open_index(tmp_path / "index.sqlite", workspace=tmp_path)
    yield opened.conn
    opened.conn.close()
    signbits.forget()


def add(
    conn: apsw.Connection, table: VecTable, path: str, count: int, seed: int, source: str = "memory"
) -> None:
    """*count* chunks of *path* with vectors."""
    rows = []
    for line in range(1, count + 1):
        text = f"{path} note {line} {seed}"
        rows.append(ChunkRow(line, line, "", text, hashlib.sha256(text.encode()).hexdigest()))
    replace_file(conn, FileState(path, source, path, 1, 1), rows)
    found = conn.execute("SELECT id, hash FROM chunks WHERE path = ? ORDER BY id", (path,))
    chunks = [(as_int(i), str(h)) for i, h in found]
    vectors = cone_vectors(len(chunks), seed)
    store_vectors(conn, table, [(i, h, v) for (i, h), v in zip(chunks, vectors, strict=True)])


def probe(conn: apsw.Connection, table: str, query: bytes) -> tuple[bytes, bytes]:
    centre = _centre(conn, table)
    assert centre is not None
    (row,) = conn.execute("SELECT vec_quantize_binary(vec_sub(?, ?))", (query, centre)).fetchall()
    return centre, as_bytes(row[0])


def agree(conn: apsw.Connection, table: str, counts: tuple[int, ...] = (1, 7, 48, 192)) -> None:
    """The in-memory and the SQL scan give the same candidates, in the same order."""
    for query in cone_vectors(8, 99):
        centre, bits = probe(conn, table, query)
        for wanted in (*counts, 100_000):
            for sources in SOURCE_FILTERS:
                memory = cached_candidates(conn, table, centre, bits, wanted, sources)
                assert memory == sql_candidates(conn, table, bits, wanted, sources)


def loads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record each full reload of a cached copy."""
    seen: list[str] = []
    real = signbits._load

    def counted(
        conn: apsw.Connection, table: str, epoch: str, centre: bytes, seq: int
    ) -> signbits._Bits:
        seen.append(table)
        return real(conn, table, epoch, centre, seq)

    monkeypatch.setattr(signbits, "_load", counted)
    return seen


def test_the_same_candidates_as_the_sql_scan(conn: apsw.Connection) -> None:
    table = target_table(conn, "test:a", DIMS)
    add(conn, table, "memory/a.md", 500, seed=1)
    add(conn, table, "sessions/b.jsonl", 300, seed=2, source="sessions")
    # Ties at the cut-off are common (integer distances): the order by id decides.
    agree(conn, table.table)


def test_the_copy_follows_writes_and_deletes_without_reloading(
    conn: apsw.Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = target_table(conn, "test:a", DIMS)
    add(conn, table, "memory/a.md", 200, seed=1)
    agree(conn, table.table)
    reloaded = loads(monkeypatch)
    add(conn, table, "sessions/b.jsonl", 150, seed=2, source="sessions")  # a new source
    agree(conn, table.table)
    delete_file(conn, "memory/a.md")
    agree(conn, table.table)
    add(conn, table, "sessions/b.jsonl", 40, seed=3, source="sessions")  # re-chunked
    agree(conn, table.table)
    assert reloaded == []


def test_a_reader_sees_what_the_writer_committed(tmp_path: Path) -> None:
    signbits.forget()
    path = tmp_path / "index.sqlite"
    opened = open_index(path, workspace=tmp_path)
    reader = open_reader(path)
    try:
        table = target_table(opened.conn, "test:a", DIMS)
        add(opened.conn, table, "memory/a.md", 100, seed=1)
        agree(reader, table.table)
        add(opened.conn, table, "memory/b.md", 100, seed=2)
        agree(reader, table.table)
        query = cone_vectors(1, 5)[0]
        found = quantised_knn(reader, table.table, query, 10)
        assert found == quantised_knn(opened.conn, table.table, query, 10)
    finally:
        reader.close()
        opened.conn.close()
        signbits.forget()


def test_a_copy_older_than_the_log_reloads(
    conn: apsw.Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(signbits, "LOG_KEEP", 10)
    table = target_table(conn, "test:a", DIMS)
    add(conn, table, "memory/a.md", 100, seed=1)
    agree(conn, table.table)
    reloaded = loads(monkeypatch)
    add(conn, table, "memory/b.md", 50, seed=2)
    (low,) = conn.execute(f"SELECT min(seq) FROM {log_name(table.table)}").fetchall()[0]
    assert as_int(low) > 1  # the copy is at entry 0; the entries after it are gone
    agree(conn, table.table)
    assert reloaded == [table.table]


def test_a_new_centre_or_a_recreated_table_reloads(
    conn: apsw.Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = target_table(conn, "test:a", DIMS)
    add(conn, table, "memory/a.md", 8, seed=1)  # the centre of a young index
    agree(conn, table.table)
    add(conn, table, "memory/b.md", 300, seed=2)
    reloaded = loads(monkeypatch)
    assert ensure_companions(conn, table.table)  # taken again, every vector re-binarised
    agree(conn, table.table)
    assert reloaded == [table.table]
    with conn:
        conn.execute(f"DROP TABLE {table.table}")
        drop_companions(conn, table.table)
        conn.execute("DELETE FROM meta WHERE key = 'vec_active'")
    again = target_table(conn, "test:a", DIMS)
    assert again.table == table.table
    add(conn, again, "memory/c.md", 120, seed=3)
    agree(conn, table.table)
    assert reloaded == [table.table, table.table]


def test_a_table_without_a_log_is_scanned_in_sql(conn: apsw.Connection) -> None:
    table = target_table(conn, "test:a", DIMS)
    add(conn, table, "memory/a.md", 60, seed=1)
    with conn:
        conn.execute(f"DROP TABLE {log_name(table.table)}")  # as an index from before it
    centre, bits = probe(conn, table.table, cone_vectors(1, 4)[0])
    assert cached_candidates(conn, table.table, centre, bits, 10, None) is None
    assert quantised_knn(conn, table.table, cone_vectors(1, 4)[0], 5) is not None
    assert ensure_companions(conn, table.table) is False  # the log comes back, nothing else
    agree(conn, table.table)


def test_warming_loads_the_copy_only_for_a_quantised_table(
    conn: apsw.Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert not signbits_warm(conn, 0)  # no vector table yet
    table = target_table(conn, "test:a", DIMS)
    add(conn, table, "memory/a.md", 50, seed=1)
    reloaded = loads(monkeypatch)
    assert not signbits_warm(conn, 10_000)  # searched exactly at this size
    assert reloaded == []
    assert signbits_warm(conn, 0)
    assert reloaded == [table.table]
    agree(conn, table.table)
    assert reloaded == [table.table]  # the searches found it loaded
