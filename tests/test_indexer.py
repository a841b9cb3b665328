"""Bringing one file's index entry in line with the disk."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import apsw
import pytest

from openmemoryd.config import IndexSettings
from openmemoryd.index import index_file
from openmemoryd.store import chunk_count, file_notes, indexed_files, lexical_candidates, open_index
from openmemoryd.workspace import PathPolicy, init_workspace

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
    (ws / "memory" / "u.md").write_bytes(b"caf\xe9 latte and oolong\n")
    assert run(conn, ws, "memory/u.md") == "added"
    assert lexical_candidates(conn, '"oolong"', 5)[0][0].text == "caf\ufffd latte and oolong"
    assert dict(file_notes(conn))["memory/u.md"] == "invalid UTF-8 replaced with U+FFFD"


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
    body = "\n\n".join(f"## Section {i}\n\n" + ("word " * 150).strip() for i in range(6))
    (ws / "memory" / "long.md").write_text("# Long\n\n" + body + "\n")
    run(conn, ws, "memory/long.md")
    rows = conn.execute(
        "SELECT start_line, end_line, text FROM chunks ORDER BY start_line"
    ).fetchall()
    lines = (ws / "memory" / "long.md").read_text().split("\n")
    assert len(rows) > 1
    for start, end, text in rows:
        assert text == "\n".join(lines[start - 1 : end])
