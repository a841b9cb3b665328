"""The quantised vector path: its companion tables follow the vec0 table
through every write, delete, promotion and retirement, are rebuilt for an
index that lacks them, and its KNN with exact rescoring agrees with exact
search."""

from __future__ import annotations

import hashlib
import random
import struct
from collections.abc import Iterator
from pathlib import Path

import apsw
import pytest

from openmemoryd.search.candidate import Candidate
from openmemoryd.search.vector import VectorQuery, vector_leg
from openmemoryd.store import ChunkRow, FileState, delete_file, replace_file
from openmemoryd.store.db import open_index, open_reader
from openmemoryd.store.quantised import (
    CENTRE_MIN,
    bits_name,
    drop_companions,
    floats_name,
    quantised_knn,
)
from openmemoryd.store.rows import as_int
from openmemoryd.store.vectors import (
    VecTable,
    active_table,
    distances,
    knn,
    promote_building,
    retire_active,
    store_vectors,
    target_table,
)

DIMS = 384


def unit(values: list[float]) -> bytes:
    norm = sum(v * v for v in values) ** 0.5
    return struct.pack(f"<{len(values)}f", *(v / norm for v in values))


def cone_vectors(count: int, seed: int, topics: int = 40) -> list[bytes]:
    """Vectors in a narrow cone, as embedding models make them (the case
    that needs centring before binarising), around a few topics so that
    neighbours are nearer than the rest, as texts on one subject are."""
    common = random.Random(0)
    axis = [common.gauss(0, 1) for _ in range(DIMS)]
    centres = [[common.gauss(0, 1) for _ in range(DIMS)] for _ in range(topics)]
    rng = random.Random(seed)
    vectors = []
    for _ in range(count):
        centre = rng.choice(centres)
        vectors.append(
            unit([3 * a + c + 0.7 * rng.gauss(0, 1) for a, c in zip(axis, centre, strict=True)])
        )
    return vectors


@pytest.fixture
def conn(tmp_path: Path) -> Iterator[apsw.Connection]:
    opened = open_index(tmp_path / "index.sqlite", workspace=tmp_path)
    assert opened.vector_error is None
    yield opened.conn
    opened.conn.close()


def add_file(conn: apsw.Connection, path: str, count: int) -> list[tuple[int, str]]:
    """*count* one-line chunks of *path*; their (id, hash)."""
    rows = []
    for line in range(1, count + 1):
        text = f"{path} note {line}"
        rows.append(ChunkRow(line, line, "", text, hashlib.sha256(text.encode()).hexdigest()))
    replace_file(conn, FileState(path, "memory", path, 1, 1), rows)
    found = conn.execute("SELECT id, hash FROM chunks WHERE path = ? ORDER BY id", (path,))
    return [(as_int(i), str(h)) for i, h in found]


def fill(conn: apsw.Connection, table: VecTable, chunks: list[tuple[int, str]], seed: int) -> None:
    vectors = cone_vectors(len(chunks), seed)
    rows = [(i, h, v) for (i, h), v in zip(chunks, vectors, strict=True)]
    assert store_vectors(conn, table, rows) == len(rows)


def count(conn: apsw.Connection, table: str) -> int:
    return int(conn.execute(f"SELECT count(*) FROM {table}").fetchall()[0][0])  # type: ignore[arg-type]


def exists(conn: apsw.Connection, name: str) -> bool:
    return bool(conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (name,)).fetchall())


def test_companions_follow_writes_and_deletes(conn: apsw.Connection) -> None:
    table = target_table(conn, "test:a", DIMS)
    fill(conn, table, add_file(conn, "memory/a.md", 30), seed=1)
    fill(conn, table, add_file(conn, "memory/b.md", 20), seed=2)
    assert count(conn, floats_name(table.table)) == 50
    assert count(conn, bits_name(table.table)) == 50
    delete_file(conn, "memory/a.md")
    assert count(conn, floats_name(table.table)) == 20
    assert count(conn, bits_name(table.table)) == 20
    # Re-chunking drops the vectors of the chunks that went; unchanged ones stay.
    add_file(conn, "memory/b.md", 5)
    assert count(conn, floats_name(table.table)) == 5
    assert count(conn, bits_name(table.table)) == 5


def test_the_first_vectors_wait_for_a_centre(conn: apsw.Connection) -> None:
    table = target_table(conn, "test:a", DIMS)
    fill(conn, table, add_file(conn, "memory/a.md", CENTRE_MIN - 1), seed=1)
    assert count(conn, bits_name(table.table)) == 0
    assert quantised_knn(conn, table.table, cone_vectors(1, 9)[0], 3) is None
    fill(conn, table, add_file(conn, "memory/b.md", 1), seed=2)
    assert count(conn, bits_name(table.table)) == CENTRE_MIN


def test_promotion_and_retirement_take_the_companions_along(conn: apsw.Connection) -> None:
    old = target_table(conn, "test:a", DIMS)
    chunks = add_file(conn, "memory/a.md", 20)
    fill(conn, old, chunks, seed=1)
    new = target_table(conn, "test:b", DIMS)
    assert new.table != old.table
    fill(conn, new, chunks, seed=2)
    assert count(conn, floats_name(new.table)) == 20
    promote_building(conn)
    assert active_table(conn) == new
    assert not exists(conn, floats_name(old.table))
    assert not exists(conn, bits_name(old.table))
    assert count(conn, bits_name(new.table)) == 20
    retire_active(conn)
    assert not exists(conn, floats_name(new.table))
    assert not exists(conn, bits_name(new.table))
    assert not conn.execute("SELECT 1 FROM meta WHERE key LIKE 'vec_centre:%'").fetchall()


def test_an_index_without_companions_gets_them_on_open(tmp_path: Path) -> None:
    path = tmp_path / "index.sqlite"
    opened = open_index(path, workspace=tmp_path)
    table = target_table(opened.conn, "test:a", DIMS)
    fill(opened.conn, table, add_file(opened.conn, "memory/a.md", 40), seed=1)
    with opened.conn:
        drop_companions(opened.conn, table.table)  # as an index from before them
    opened.conn.close()

    reopened = open_index(path, workspace=tmp_path)
    try:
        assert count(reopened.conn, floats_name(table.table)) == 40
        assert count(reopened.conn, bits_name(table.table)) == 40
        query = cone_vectors(1, 7)[0]
        found = quantised_knn(reopened.conn, table.table, query, 5, oversample=8)
        assert found is not None
        assert [i for i, _ in found] == [i for i, _ in knn(reopened.conn, table, query, 5)]
    finally:
        reopened.conn.close()


def test_quantised_knn_with_rescoring_returns_the_exact_top_k(conn: apsw.Connection) -> None:
    table = target_table(conn, "test:a", DIMS)
    fill(conn, table, add_file(conn, "memory/a.md", 400), seed=3)
    hits = 0
    for query in cone_vectors(20, 11):
        exact = knn(conn, table, query, 10)
        everything = quantised_knn(conn, table.table, query, 10, oversample=40)
        assert everything is not None  # 10 x 40 candidates: all 400, so exactly the same
        assert [i for i, _ in everything] == [i for i, _ in exact]
        assert [d for _, d in everything] == pytest.approx([d for _, d in exact], abs=1e-6)
        default = quantised_knn(conn, table.table, query, 10)
        assert default is not None
        hits += len({i for i, _ in default} & {i for i, _ in exact})
    assert hits / 200 >= 0.9


def test_the_vector_leg_switches_at_the_threshold(conn: apsw.Connection) -> None:
    table = target_table(conn, "test:a", DIMS)
    fill(conn, table, add_file(conn, "memory/a.md", 30), seed=4)  # 5 x 8 candidates: all
    query = VectorQuery(table, cone_vectors(1, 5)[0])

    def ids(found: list[Candidate]) -> list[int]:
        return [c.id for c in found]

    exact = vector_leg(conn, query, 5, None)
    assert ids(vector_leg(conn, query, 5, None, quantised_above=0)) == ids(exact)
    assert ids(vector_leg(conn, query, 5, None, quantised_above=10**9)) == ids(exact)
    assert ids(vector_leg(conn, query, 5, ["sessions"], quantised_above=0)) == []


def test_a_centre_from_a_young_index_is_taken_again_on_open(tmp_path: Path) -> None:
    path = tmp_path / "index.sqlite"
    opened = open_index(path, workspace=tmp_path)
    table = target_table(opened.conn, "test:a", DIMS)
    fill(opened.conn, table, add_file(opened.conn, "memory/a.md", CENTRE_MIN), seed=1)
    fill(opened.conn, table, add_file(opened.conn, "memory/b.md", 4 * CENTRE_MIN), seed=2)
    key = f"vec_centre:{table.table}"
    first = opened.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchall()
    assert str(first[0][0]).startswith(f"{CENTRE_MIN}:")
    opened.conn.close()

    reopened = open_index(path, workspace=tmp_path)
    try:
        again = reopened.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchall()
        assert str(again[0][0]).startswith(f"{5 * CENTRE_MIN}:")
        assert count(reopened.conn, bits_name(table.table)) == 5 * CENTRE_MIN
    finally:
        reopened.conn.close()


def test_a_reader_of_an_index_without_companions_searches_exactly(tmp_path: Path) -> None:
    path = tmp_path / "index.sqlite"
    opened = open_index(path, workspace=tmp_path)
    table = target_table(opened.conn, "test:a", DIMS)
    fill(opened.conn, table, add_file(opened.conn, "memory/a.md", 20), seed=1)
    with opened.conn:
        drop_companions(opened.conn, table.table)  # as an index from before them
    opened.conn.close()
    reader = open_reader(path)
    try:
        query = VectorQuery(table, cone_vectors(1, 5)[0])
        exact = [c.id for c in vector_leg(reader, query, 5, None)]
        assert [c.id for c in vector_leg(reader, query, 5, None, quantised_above=0)] == exact
        assert set(distances(reader, table, query.vector, exact)) == set(exact)
    finally:
        reader.close()


def test_dimensions_not_a_multiple_of_8_are_searched_exactly(conn: apsw.Connection) -> None:
    table = target_table(conn, "test:odd", 12)
    chunks = add_file(conn, "memory/a.md", 2 * CENTRE_MIN)
    vectors = [unit([float(i + j) for j in range(12)]) for i in range(len(chunks))]
    store_vectors(conn, table, [(i, h, v) for (i, h), v in zip(chunks, vectors, strict=True)])
    assert count(conn, floats_name(table.table)) == 2 * CENTRE_MIN
    assert count(conn, bits_name(table.table)) == 0
    assert quantised_knn(conn, table.table, vectors[0], 3) is None
    query = VectorQuery(table, vectors[0])
    assert [c.id for c in vector_leg(conn, query, 3, None, quantised_above=0)] == [
        c.id for c in vector_leg(conn, query, 3, None)
    ]
