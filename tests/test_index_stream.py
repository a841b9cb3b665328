"""A large file chunked a window at a time: exactly the chunks of chunking
it whole, and the same rows in the index."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import apsw
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from markdown_pieces import PIECES
from openmemoryd.config import IndexSettings
from openmemoryd.index import index_file
from openmemoryd.index import indexer as indexer_module
from openmemoryd.index.chunker import chunk_markdown_from
from openmemoryd.index.resume import ChunkMemo
from openmemoryd.index.stream import ChunkWindows
from openmemoryd.store import file_notes, open_index
from openmemoryd.workspace import PathPolicy, init_workspace
from openmemoryd.workspace.boilerplate import mask_boilerplate

KEY = "memory/2026-01-05.md"
SETTINGS = IndexSettings(max_file_bytes=1 << 20, chunk_tokens=64, chunk_overlap=16)
TEXT = st.lists(st.sampled_from(PIECES), min_size=1, max_size=120).map(
    lambda lines: "\n".join(lines) + "\n"
)


def whole(text: str) -> list[tuple[int, int, str, str]]:
    chunks, _ = chunk_markdown_from(
        mask_boilerplate(text.removeprefix("\ufeff")), max_tokens=64, overlap_tokens=16
    )
    return [(c.start_line, c.end_line, c.heading, c.text) for c in chunks]


@settings(max_examples=300, deadline=None)
@given(text=TEXT, window=st.integers(min_value=1, max_value=600), bom=st.booleans())
def test_windows_give_the_chunks_of_the_whole_file(text: str, window: int, bom: bool) -> None:
    text = ("\ufeff" if bom else "") + text
    windows = ChunkWindows(text.encode("utf-8"), max_tokens=64, overlap_tokens=16, window=window)
    streamed = [(c.start_line, c.end_line, c.heading, c.text) for part in windows for c in part]
    assert streamed == whole(text)


def test_a_long_file_is_cut_into_many_windows() -> None:
    """Not one window that grew to the whole file: the cuts happen."""
    text = "".join(f"## Day {n}\n- note {n} about the heron count\n\n" for n in range(2000))
    windows = ChunkWindows(text.encode("utf-8"), max_tokens=64, overlap_tokens=16, window=4096)
    parts = list(windows)
    assert len(parts) > 15
    assert [c for part in parts for c in part] == chunk_markdown_from(
        text, max_tokens=64, overlap_tokens=16
    )[0]
    assert windows.restarts  # an append to it can resume at its end


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    init_workspace(ws)
    return ws


@pytest.fixture
def conn(tmp_path: Path) -> Iterator[apsw.Connection]:
    connection = open_index(tmp_path / "i.sqlite", workspace=tmp_path).conn
    yield connection
    connection.close()


def stored(conn: apsw.Connection) -> list[tuple[object, ...]]:
    return sorted(
        conn.execute(
            "SELECT start_line, end_line, heading, text, hash FROM chunks WHERE path = ?", (KEY,)
        )
    )


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(first=TEXT, second=TEXT)
def test_indexing_in_windows_stores_the_rows_of_indexing_whole(
    monkeypatch: pytest.MonkeyPatch, workspace: Path, tmp_path: Path, first: str, second: str
) -> None:
    """Added, then changed (rows kept or replaced), then appended to with the
    memo the windows left: each time the rows of a whole-file index."""
    mp = PathPolicy(workspace).resolve(KEY)
    streamed_db = open_index(tmp_path / "s.sqlite", workspace=tmp_path).conn
    whole_db = open_index(tmp_path / "w.sqlite", workspace=tmp_path).conn
    memo = ChunkMemo()
    try:
        for content in (first, second, second + first):
            mp.absolute.write_text(content, "utf-8")
            with monkeypatch.context() as m:
                m.setattr(indexer_module, "WINDOW_BYTES", 64)
                index_file(streamed_db, KEY, mp, SETTINGS, memo=memo)
            index_file(whole_db, KEY, mp, SETTINGS)
            assert stored(streamed_db) == stored(whole_db)
    finally:
        streamed_db.close()
        whole_db.close()
        for name in ("s", "w"):
            for suffix in ("", "-wal", "-shm"):
                Path(f"{tmp_path / name}.sqlite{suffix}").unlink(missing_ok=True)


def test_invalid_utf8_late_in_a_large_file_is_indexed_whole_with_its_note(
    monkeypatch: pytest.MonkeyPatch, workspace: Path, conn: apsw.Connection
) -> None:
    """A byte that is not UTF-8 found in a later window leaves nothing
    half-written: the file is indexed whole, read as the one encoding its
    bytes are in (Latin-1 here), and the note says so."""
    body = "".join(f"## Day {n}\n- note {n}\n\n" for n in range(300)).encode()
    mp = PathPolicy(workspace).resolve(KEY)
    mp.absolute.write_bytes(body + b"## Last\n- caf\xe9 latte\n")
    monkeypatch.setattr(indexer_module, "WINDOW_BYTES", 256)
    outcome = index_file(conn, KEY, mp, SETTINGS, memo=ChunkMemo())
    assert outcome.kind == "added"
    assert dict(file_notes(conn))[KEY] == "not UTF-8: read as latin1"
    texts = [row[3] for row in stored(conn)]
    assert any("café latte" in t for t in texts)
    assert sum("- note 0\n" in t for t in texts) == 1  # no rows left from the windows
