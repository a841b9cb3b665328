"""Re-indexing a changed file keeps the rows of the chunks that did not change.

An append to a long file used to delete and re-insert every chunk of it
(terms recomputed, vectors looked up again); now only the chunks that differ
are written. What the index holds must still be exactly what indexing the
file from scratch gives, whatever the edit.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import apsw
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from openmemoryd.config import IndexSettings
from openmemoryd.index import index_file
from openmemoryd.store import lexical_candidates, open_index
from openmemoryd.store.vectors import store_vectors, target_table
from openmemoryd.workspace import PathPolicy, init_workspace

SETTINGS = IndexSettings(max_file_bytes=1 << 20, chunk_tokens=64, chunk_overlap=16)
KEY = "memory/2026-01-05.md"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    init_workspace(root)
    return root


@pytest.fixture
def conn(tmp_path: Path) -> Iterator[apsw.Connection]:
    connection = open_index(tmp_path / "i.sqlite", workspace=tmp_path).conn
    yield connection
    connection.close()


def rows(conn: apsw.Connection) -> list[tuple[object, ...]]:
    """The file's chunks as the index holds them, ids aside, in line order."""
    return sorted(
        conn.execute(
            "SELECT start_line, end_line, heading, text, hash, source FROM chunks WHERE path = ?",
            (KEY,),
        )
    )


def ids(conn: apsw.Connection) -> dict[str, int]:
    return {h: i for i, h in conn.execute("SELECT id, hash FROM chunks WHERE path = ?", (KEY,))}


def index(conn: apsw.Connection, ws: Path, text: str) -> None:
    path = ws / KEY
    path.write_text(text, "utf-8")
    index_file(conn, KEY, PathPolicy(ws).resolve(KEY), SETTINGS)


def from_scratch(tmp_path: Path, ws: Path) -> list[tuple[object, ...]]:
    fresh = open_index(tmp_path / "fresh.sqlite", workspace=tmp_path).conn
    try:
        index_file(fresh, KEY, PathPolicy(ws).resolve(KEY), SETTINGS)
        return rows(fresh)
    finally:
        fresh.close()
        for suffix in ("", "-wal", "-shm"):
            Path(f"{tmp_path / 'fresh.sqlite'}{suffix}").unlink(missing_ok=True)


def notes(count: int, start: int = 0) -> str:
    return "".join(
        (f"## Meeting {i}\n" if i % 7 == 0 else f"- note {i}: the heron count was {i * 3}\n")
        for i in range(start, start + count)
    )


def test_an_append_keeps_every_chunk_before_the_last(
    conn: apsw.Connection, ws: Path, tmp_path: Path
) -> None:
    text = "# 2026-01-05\n" + notes(120)
    index(conn, ws, text)
    before = ids(conn)
    assert len(before) > 5
    index(conn, ws, text + "\n- appended: the kestrel nests on the mill\n")
    after = ids(conn)
    kept = {h for h in before if after.get(h) == before[h]}
    assert len(kept) >= len(before) - 1  # at most the last chunk is rewritten
    assert rows(conn) == from_scratch(tmp_path, ws)
    # the terms follow: the new words are found, the kept ones still are
    assert lexical_candidates(conn, "kestrel", 5)
    assert lexical_candidates(conn, "heron", 5)


def test_a_kept_chunk_keeps_its_vector_and_a_removed_one_loses_it(
    conn: apsw.Connection, ws: Path
) -> None:
    index(conn, ws, "# 2026-01-05\n" + notes(60))
    table = target_table(conn, "fake-model", 4)
    stored = list(conn.execute("SELECT id, hash FROM chunks WHERE path = ?", (KEY,)))
    vector = np.ones(4, dtype=np.float32).tobytes()
    store_vectors(conn, table, [(int(i), str(h), vector) for i, h in stored])
    index(conn, ws, "# 2026-01-05\n" + notes(30))  # the second half deleted
    before = {(int(i), str(h)) for i, h in stored}
    now = conn.execute("SELECT id, hash FROM chunks WHERE path = ?", (KEY,))
    kept = {int(i) for i, h in now if (int(i), str(h)) in before}
    with_vectors = {int(i) for (i,) in conn.execute(f"SELECT rowid FROM {table.table}")}
    assert kept  # the first half did not change
    assert with_vectors == kept  # kept chunks keep theirs; new ones (ids reused) wait for one


EDITS = st.lists(
    st.tuples(
        st.sampled_from(["append", "insert", "delete", "replace"]),
        st.integers(min_value=0, max_value=10_000),
        st.sampled_from(["- a fresh note", "## A new heading", "", "<!-- hidden -->", "```"]),
    ),
    min_size=1,
    max_size=6,
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(edits=EDITS)
def test_after_any_edits_the_rows_equal_a_fresh_index(
    conn: apsw.Connection, ws: Path, tmp_path: Path, edits: list[tuple[str, int, str]]
) -> None:
    lines = ("# 2026-01-05\n" + notes(50)).splitlines()
    index(conn, ws, "\n".join(lines) + "\n")
    for kind, at, line in edits:
        k = at % (len(lines) + 1)
        if kind == "append":
            lines.append(line)
        elif kind == "insert":
            lines.insert(k, line)
        elif kind == "delete" and lines:
            del lines[min(k, len(lines) - 1)]
        elif lines:
            lines[min(k, len(lines) - 1)] = line
        index(conn, ws, "\n".join(lines) + "\n")
        assert rows(conn) == from_scratch(tmp_path, ws)
    terms = conn.execute(
        "SELECT count(*) FROM chunks_fts WHERE rowid IN (SELECT id FROM chunks WHERE path = ?)",
        (KEY,),
    ).fetchall()[0][0]
    assert terms == len(rows(conn))  # one FTS row per chunk, none left behind
