"""Bringing one file's index entry in line with the disk."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import apsw
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from markdown_pieces import PIECES
from openmemoryd.config import IndexSettings
from openmemoryd.errors import BadRequest
from openmemoryd.index import index_file
from openmemoryd.index import indexer as indexer_module
from openmemoryd.index.resume import ChunkMemo, Grown
from openmemoryd.memory import append_block
from openmemoryd.memory.known import KnownFiles
from openmemoryd.store import chunk_count, file_notes, indexed_files, lexical_candidates, open_index
from openmemoryd.store.vectors import store_vectors, target_table
from openmemoryd.workspace import MemoryPath, PathPolicy, init_workspace

SETTINGS = IndexSettings(max_file_bytes=64 * 1024)


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


def run(conn: apsw.Connection, ws: Path, key: str, *, force: bool = False) -> str:
    policy = PathPolicy(ws)
    return index_file(conn, key, policy.resolve(key), SETTINGS, force=force).kind


def test_add_unchanged_update_remove(conn: apsw.Connection, ws: Path) -> None:
    note = ws / "memory" / "n.md"
    note.write_text("# Notes\n\nalpha bravo\n")
    assert run(conn, ws, "memory/n.md") == "added"
    assert run(conn, ws, "memory/n.md") == "unchanged"
    note.write_text("# Notes\n\ncharlie\n")
    assert run(conn, ws, "memory/n.md") == "updated"
    assert lexical_candidates(conn, '"alpha"', 5) == []
    assert [chunk.start_line for chunk, _ in lexical_candidates(conn, '"charlie"', 5)] == [1]
    note.unlink()
    assert run(conn, ws, "memory/n.md") == "removed"
    assert "memory/n.md" not in indexed_files(conn)
    assert run(conn, ws, "memory/n.md") == "absent"


def test_touch_without_change_is_skipped_by_hash(conn: apsw.Connection, ws: Path) -> None:
    note = ws / "memory" / "n.md"
    note.write_text("alpha\n")
    run(conn, ws, "memory/n.md")
    note.write_text("alpha\n")  # same bytes, new mtime
    assert run(conn, ws, "memory/n.md") == "unchanged"
    assert indexed_files(conn)["memory/n.md"].mtime_ns == note.stat().st_mtime_ns


def test_force_rechunks_unchanged_files(conn: apsw.Connection, ws: Path) -> None:
    (ws / "memory" / "n.md").write_text("alpha\n")
    run(conn, ws, "memory/n.md")
    assert run(conn, ws, "memory/n.md", force=True) == "updated"


def test_binary_file_is_recorded_with_a_note_and_no_chunks(conn: apsw.Connection, ws: Path) -> None:
    (ws / "memory" / "b.md").write_bytes(b"PNG\x00\x01\x02binary")
    assert run(conn, ws, "memory/b.md") == "skipped"
    assert indexed_files(conn)["memory/b.md"].chunks == 0
    assert file_notes(conn) == [("memory/b.md", "skipped: binary file (contains NUL bytes)")]


def test_too_large_file_is_skipped_and_reported(conn: apsw.Connection, ws: Path) -> None:
    (ws / "memory" / "big.md").write_bytes(b"word " * 20_000)
    assert run(conn, ws, "memory/big.md") == "skipped"
    notes = dict(file_notes(conn))
    assert "limit" in notes["memory/big.md"]


def test_invalid_utf8_is_indexed_with_replacement_and_noted(
    conn: apsw.Connection, ws: Path
) -> None:
    """Bytes no one encoding reads as text are
    replaced; the note says so (`test_index_encodings`: a Latin-1 or GBK
    file is read in its encoding)."""
    # 0x81: no character in cp1252, a C1 control in Latin-1
    (ws / "memory" / "u.md").write_bytes(b"caf\xe9 latte and oolong \x81\n")
    assert run(conn, ws, "memory/u.md") == "added"
    text = lexical_candidates(conn, '"oolong"', 5)[0][0].text
    assert text == "caf\ufffd latte and oolong \ufffd"
    assert dict(file_notes(conn))["memory/u.md"] == (
        "not UTF-8, nor clearly one other encoding: invalid bytes replaced with U+FFFD"
    )


def test_bom_and_empty_files(conn: apsw.Connection, ws: Path) -> None:
    (ws / "memory" / "bom.md").write_bytes("\ufeffhello bom\n".encode())
    (ws / "memory" / "empty.md").write_bytes(b"\n\n\n")
    assert run(conn, ws, "memory/bom.md") == "added"
    assert run(conn, ws, "memory/empty.md") == "added"
    assert lexical_candidates(conn, '"hello"', 5)[0][0].text == "hello bom"
    assert indexed_files(conn)["memory/empty.md"].chunks == 0


def test_file_turned_into_a_symlink_leaves_the_index(
    conn: apsw.Connection, ws: Path, tmp_path: Path
) -> None:
    note = ws / "memory" / "n.md"
    note.write_text("alpha\n")
    run(conn, ws, "memory/n.md")
    note.unlink()
    (tmp_path / "elsewhere.md").write_text("alpha\n")
    note.symlink_to(tmp_path / "elsewhere.md")
    assert run(conn, ws, "memory/n.md") == "removed"
    assert chunk_count(conn) == 0


def test_chunk_lines_follow_the_file(conn: apsw.Connection, ws: Path) -> None:
    # each line fits a default chunk (a longer one is cut into pieces)
    body = "\n\n".join(f"## Section {i}\n\n" + ("word " * 120).strip() for i in range(6))
    (ws / "memory" / "long.md").write_text("# Long\n\n" + body + "\n")
    run(conn, ws, "memory/long.md")
    rows = conn.execute(
        "SELECT start_line, end_line, text FROM chunks ORDER BY start_line"
    ).fetchall()
    lines = (ws / "memory" / "long.md").read_text().split("\n")
    assert len(rows) > 1
    for start, end, text in rows:
        assert text == "\n".join(lines[start - 1 : end])


# ---------------------------------------------------------------- re-indexing keeps unchanged rows
# An append to a long file used to delete and re-insert every chunk of it
# (terms recomputed, vectors looked up again); now only the chunks that differ
# are written. What the index holds must still be exactly what indexing the
# file from scratch gives, whatever the edit.

KEEP_SETTINGS = IndexSettings(max_file_bytes=1 << 20, chunk_tokens=64, chunk_overlap=16)
KEY = "memory/2026-01-05.md"


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
    index_file(conn, KEY, PathPolicy(ws).resolve(KEY), KEEP_SETTINGS)


def from_scratch(tmp_path: Path, ws: Path) -> list[tuple[object, ...]]:
    fresh = open_index(tmp_path / "fresh.sqlite", workspace=tmp_path).conn
    try:
        index_file(fresh, KEY, PathPolicy(ws).resolve(KEY), KEEP_SETTINGS)
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


# ---------------------------------------------------------------- a grown file chunked from its end

TEXT = st.lists(st.sampled_from(PIECES), min_size=1, max_size=40).map(
    lambda lines: "\n".join(lines) + "\n"
)


def indexed_with_memo(conn: apsw.Connection, ws: Path, text: str) -> tuple[ChunkMemo, MemoryPath]:
    """*text* written as the file and indexed once with a fresh `ChunkMemo`."""
    memo = ChunkMemo()
    (ws / KEY).write_text(text, "utf-8")
    mp = PathPolicy(ws).resolve(KEY)
    index_file(conn, KEY, mp, KEEP_SETTINGS, memo=memo)
    return memo, mp


def append_text(mp: MemoryPath, text: str) -> None:
    with mp.absolute.open("a", encoding="utf-8") as f:
        f.write(text)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(start=TEXT, appends=st.lists(TEXT, min_size=1, max_size=4))
def test_appends_chunked_from_the_last_restart_equal_a_fresh_index(
    conn: apsw.Connection, ws: Path, tmp_path: Path, start: str, appends: list[str]
) -> None:
    memo, mp = indexed_with_memo(conn, ws, start)
    for block in appends:
        append_text(mp, block)
        outcome = index_file(conn, KEY, mp, KEEP_SETTINGS, memo=memo)
        assert rows(conn) == from_scratch(tmp_path, ws), mp.absolute.read_text("utf-8")
        assert outcome.chunks == len(rows(conn))
        (count,) = conn.execute("SELECT chunks FROM files WHERE path = ?", (KEY,)).fetchall()
        assert count[0] == outcome.chunks


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(start=TEXT, appends=st.lists(TEXT, min_size=1, max_size=4))
def test_appends_indexed_with_what_the_append_knows_equal_a_fresh_index(
    conn: apsw.Connection, ws: Path, tmp_path: Path, start: str, appends: list[str]
) -> None:
    """As the daemon appends: `append_block` continuing from `KnownFiles`,
    then the index told the hashes it computed (`Grown`) instead of hashing
    the file. Same rows as a fresh index, and the file's true hash stored."""
    memo, mp = indexed_with_memo(conn, ws, start)
    known = KnownFiles()
    for block in appends:
        try:
            done = append_block(mp, block, 1 << 20, known)
        except BadRequest:  # nothing but blank lines: nothing appended
            continue
        grown = Grown(done.before_len, done.before_hash, done.after_len, done.after_hash)
        index_file(conn, KEY, mp, KEEP_SETTINGS, memo=memo, grown=grown)
        assert rows(conn) == from_scratch(tmp_path, ws), mp.absolute.read_text("utf-8")
        stored = indexed_files(conn)[KEY].hash
        assert stored == hashlib.sha256(mp.absolute.read_bytes()).hexdigest()


def test_an_append_is_indexed_reading_only_the_end_of_the_file(
    conn: apsw.Connection, ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    memo, mp = indexed_with_memo(conn, ws, "# 2026-01-05\n" + notes(400))
    known = KnownFiles()
    done = append_block(mp, "- the kestrel nests on the mill", 1 << 20, known)
    reads: list[int] = []
    real = indexer_module.read_memory_file

    def reading(path: MemoryPath, max_bytes: int, offset: int = 0) -> Any:
        reads.append(offset)
        return real(path, max_bytes, offset)

    monkeypatch.setattr(indexer_module, "read_memory_file", reading)
    grown = Grown(done.before_len, done.before_hash, done.after_len, done.after_hash)
    index_file(conn, KEY, mp, KEEP_SETTINGS, memo=memo, grown=grown)
    assert len(reads) == 1
    assert reads[0] > done.before_len // 2  # from the last restart point, not from 0
    assert rows(conn) == from_scratch(tmp_path, ws)
    # Another writer got in after the append: the file is read and hashed whole.
    done = append_block(mp, "- the heron left", 1 << 20, known)
    append_text(mp, "- added by another program\n")
    grown = Grown(done.before_len, done.before_hash, done.after_len, done.after_hash)
    reads.clear()
    index_file(conn, KEY, mp, KEEP_SETTINGS, memo=memo, grown=grown)
    assert reads[-1] == 0
    assert rows(conn) == from_scratch(tmp_path, ws)
    digest = hashlib.sha256(mp.absolute.read_bytes()).hexdigest()
    assert indexed_files(conn)[KEY].hash == digest


def test_a_growth_that_does_not_match_the_file_is_not_trusted(
    conn: apsw.Connection, ws: Path, tmp_path: Path
) -> None:
    """Hashes from a write that is not what the index chunked (another
    change came between) are ignored: the file is hashed and read as it is."""
    memo, mp = indexed_with_memo(conn, ws, "# Day\n\n- first note\n")
    append_text(mp, "- second note\n")
    wrong = Grown(3, "0" * 64, mp.absolute.stat().st_size, "f" * 64)
    index_file(conn, KEY, mp, KEEP_SETTINGS, memo=memo, grown=wrong)
    assert rows(conn) == from_scratch(tmp_path, ws)
    assert indexed_files(conn)[KEY].hash == hashlib.sha256(mp.absolute.read_bytes()).hexdigest()


def test_an_append_to_a_long_file_rechunks_only_its_end(conn: apsw.Connection, ws: Path) -> None:
    memo, mp = indexed_with_memo(conn, ws, "# 2026-01-05\n" + notes(400))
    append_text(mp, "- appended: the kestrel nests on the mill\n")
    calls: list[int] = []
    real = indexer_module.chunk_markdown_from

    def counting(text: str, **kw: Any) -> Any:
        calls.append(text.count("\n"))
        return real(text, **kw)

    indexer_module.chunk_markdown_from = counting  # type: ignore[assignment]
    try:
        index_file(conn, KEY, mp, KEEP_SETTINGS, memo=memo)
    finally:
        indexer_module.chunk_markdown_from = real  # type: ignore[assignment]
    (chunked,) = calls
    assert chunked < 20  # the last section, not the file's 400 lines
    assert lexical_candidates(conn, "kestrel", 5)


@pytest.mark.parametrize(
    "start",
    [
        "---\ntitle: x\n# A\n" + "- a note\n" * 30,  # a front matter that may close later
        "# A\n<!--\n## B\n" + "- a note\n" * 30,  # a comment still open
    ],
)
def test_files_whose_start_may_change_meaning_are_chunked_whole(
    conn: apsw.Connection, ws: Path, tmp_path: Path, start: str
) -> None:
    memo, mp = indexed_with_memo(conn, ws, start)
    append_text(mp, "---\n-->\n## C\n- after\n")
    index_file(conn, KEY, mp, KEEP_SETTINGS, memo=memo)
    assert rows(conn) == from_scratch(tmp_path, ws)
