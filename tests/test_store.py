"""Opening, migrating and recovering the index database."""

from __future__ import annotations

from pathlib import Path

import apsw
import pytest

from openmemoryd.errors import StartupError
from openmemoryd.store import (
    APPLICATION_ID,
    SCHEMA_VERSION,
    ChunkRow,
    FileState,
    chunk_count,
    delete_file,
    get_meta,
    indexed_files,
    lexical_candidates,
    open_index,
    open_reader,
    replace_file,
)
from openmemoryd.text import TERMS_VERSION


def chunk(text: str, line: int = 1) -> ChunkRow:
    return ChunkRow(line, line, "", text, "h" + text)


def test_new_index_is_marked_and_migrated(tmp_path: Path) -> None:
    opened = open_index(tmp_path / "i.sqlite", workspace=tmp_path)
    conn = opened.conn
    assert conn.pragma("application_id") == APPLICATION_ID
    assert conn.pragma("user_version") == SCHEMA_VERSION
    assert conn.pragma("journal_mode") == "wal"
    assert get_meta(conn, "terms_version") == TERMS_VERSION
    assert get_meta(conn, "workspace") == str(tmp_path)
    assert opened.vector_error is None  # sqlite-vec loads here
    assert conn.execute("SELECT vec_version()").fetchall()[0][0].startswith("v")
    conn.close()


def test_reopening_keeps_data(tmp_path: Path) -> None:
    path = tmp_path / "i.sqlite"
    conn = open_index(path, workspace=tmp_path).conn
    replace_file(conn, FileState("MEMORY.md", "memory", "h", 1, 2), [chunk("oolong tea")])
    conn.close()
    conn = open_index(path, workspace=tmp_path).conn
    assert chunk_count(conn) == 1
    conn.close()


def test_a_newer_schema_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "i.sqlite"
    open_index(path, workspace=tmp_path).conn.close()
    raw = apsw.Connection(str(path))
    raw.pragma("user_version", SCHEMA_VERSION + 1)
    raw.close()
    before = path.read_bytes()
    with pytest.raises(StartupError, match="newer openmemoryd"):
        open_index(path, workspace=tmp_path)
    assert path.read_bytes() == before


def test_someone_elses_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "other.sqlite"
    raw = apsw.Connection(str(path))
    raw.execute("CREATE TABLE precious(x)")
    raw.close()
    with pytest.raises(StartupError, match="did not create"):
        open_index(path, workspace=tmp_path)
    raw = apsw.Connection(str(path))
    raw.pragma("application_id", 12345)
    raw.close()
    with pytest.raises(StartupError, match="not an openmemory index"):
        open_index(path, workspace=tmp_path)


def test_garbage_file_is_moved_aside_and_rebuilt(tmp_path: Path) -> None:
    path = tmp_path / "i.sqlite"
    path.write_bytes(b"this is not a database, it is garbage" * 200)
    opened = open_index(path, workspace=tmp_path)
    assert opened.recovered_to is not None
    assert opened.recovered_to.read_bytes().startswith(b"this is not a database")
    assert chunk_count(opened.conn) == 0
    opened.conn.close()


def test_truncated_database_is_moved_aside_and_rebuilt(tmp_path: Path) -> None:
    path = tmp_path / "i.sqlite"
    conn = open_index(path, workspace=tmp_path).conn
    replace_file(conn, FileState("a.md", "memory", "h", 1, 2), [chunk("x " * 2000)] * 50)
    conn.pragma("wal_checkpoint(TRUNCATE)")
    conn.close()
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 3])
    for suffix in ("-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    opened = open_index(path, workspace=tmp_path)
    opened.conn.execute("SELECT count(*) FROM chunks").fetchall()
    opened.conn.close()


def test_changed_term_segmentation_rebuilds_the_keyword_index(tmp_path: Path) -> None:
    path = tmp_path / "i.sqlite"
    conn = open_index(path, workspace=tmp_path).conn
    replace_file(conn, FileState("a.md", "memory", "h", 1, 2), [chunk("缓存方案")])
    with conn:
        conn.execute("INSERT INTO chunks_fts(chunks_fts) VALUES('delete-all')")
        conn.execute("UPDATE meta SET value = 'old' WHERE key = 'terms_version'")
    assert lexical_candidates(conn, '"缓存"', 5) == []
    conn.close()
    conn = open_index(path, workspace=tmp_path).conn
    assert [chunk.path for chunk, _ in lexical_candidates(conn, '"缓存"', 5)] == ["a.md"]
    conn.close()


def test_from_the_terms_before_russian_stems_only_cyrillic_chunks_are_rederived(
    tmp_path: Path,
) -> None:
    """An index of the previous terms version re-derives the chunks with
    Russian letters, and leaves the others' keywords as they are."""
    path = tmp_path / "i.sqlite"
    conn = open_index(path, workspace=tmp_path).conn
    replace_file(
        conn,
        FileState("a.md", "memory", "h", 1, 2),
        [chunk("Встреча с Олегом", 1), chunk("Wei prefers oolong", 2)],
    )
    (ru, en) = [row[0] for row in conn.execute("SELECT id FROM chunks ORDER BY start_line")]
    with conn:  # the keywords as the previous version wrote them; a marker for the other
        for rowid, terms in ((ru, "встреча с олегом"), (en, "marker")):
            conn.execute("DELETE FROM chunks_fts WHERE rowid = ?", (rowid,))
            conn.execute(
                "INSERT INTO chunks_fts(rowid, body, heading) VALUES (?, ?, '')", (rowid, terms)
            )
        conn.execute("UPDATE meta SET value = 'cjk-bigram-1' WHERE key = 'terms_version'")
    assert lexical_candidates(conn, '"встреч"', 5) == []
    conn.close()
    conn = open_index(path, workspace=tmp_path).conn
    assert get_meta(conn, "terms_version") == TERMS_VERSION
    assert [c.text for c, _ in lexical_candidates(conn, '"встреч"', 5)] == ["Встреча с Олегом"]
    assert [c.text for c, _ in lexical_candidates(conn, '"marker"', 5)] == ["Wei prefers oolong"]
    conn.close()


def test_replace_and_delete_keep_chunks_and_fts_in_step(tmp_path: Path) -> None:
    conn = open_index(tmp_path / "i.sqlite", workspace=tmp_path).conn
    state = FileState("a.md", "memory", "h1", 1, 2)
    replace_file(conn, state, [chunk("alpha one", 1), chunk("alpha two", 2)])
    assert len(lexical_candidates(conn, '"alpha"', 10)) == 2
    replace_file(conn, FileState("a.md", "memory", "h2", 1, 2), [chunk("bravo", 1)])
    assert lexical_candidates(conn, '"alpha"', 10) == []
    assert indexed_files(conn)["a.md"].chunks == 1
    assert delete_file(conn, "a.md") is True
    assert delete_file(conn, "a.md") is False
    assert lexical_candidates(conn, '"bravo"', 10) == []
    assert chunk_count(conn) == 0
    conn.close()


def test_the_headings_inside_a_chunk_are_stored_and_read_back(tmp_path: Path) -> None:
    conn = open_index(tmp_path / "i.sqlite", workspace=tmp_path).conn
    state = FileState("a.md", "memory", "h1", 1, 2)
    inner = ((3, "Notes > Lessons"), (7, "Notes > Пожелания"))
    text = "# Notes\nx\n## Lessons\nalpha"
    replace_file(conn, state, [ChunkRow(1, 4, "Notes", text, "h", inner_headings=inner)])
    ((found, _),) = lexical_candidates(conn, '"alpha"', 5)
    assert (found.heading, found.inner_headings) == ("Notes", inner)
    (row_id,) = conn.execute("SELECT id FROM chunks").fetchall()[0]
    # the same lines and text under other headings: the row is written again
    replace_file(conn, state, [ChunkRow(1, 4, "Notes", text, "h", inner_headings=inner[:1])])
    ((found, _),) = lexical_candidates(conn, '"alpha"', 5)
    assert found.inner_headings == inner[:1]
    assert conn.execute("SELECT id FROM chunks").fetchall()[0][0] != row_id
    conn.close()


def test_chunks_of_an_index_from_before_inner_headings_read_back_without_them(
    tmp_path: Path,
) -> None:
    path = tmp_path / "i.sqlite"
    conn = open_index(path, workspace=tmp_path).conn
    replace_file(conn, FileState("a.md", "memory", "h", 1, 2), [chunk("alpha")])
    conn.execute("ALTER TABLE chunks DROP COLUMN inner_headings")
    conn.pragma("user_version", SCHEMA_VERSION - 1)
    conn.close()
    conn = open_index(path, workspace=tmp_path).conn
    assert conn.pragma("user_version") == SCHEMA_VERSION
    ((found, _),) = lexical_candidates(conn, '"alpha"', 5)
    assert (found.text, found.inner_headings) == ("alpha", ())
    conn.close()


def test_a_failed_write_leaves_the_previous_chunks(tmp_path: Path) -> None:
    conn = open_index(tmp_path / "i.sqlite", workspace=tmp_path).conn
    replace_file(conn, FileState("a.md", "memory", "h1", 1, 2), [chunk("alpha")])

    class Boom(Exception):
        pass

    class Exploding:
        """A chunk whose text cannot be read: fails mid-transaction."""

        start_line = end_line = 1
        heading = hash = ""
        agent = msg_time = None
        inner_headings = ()

        @property
        def text(self) -> str:
            raise Boom

    with pytest.raises(Boom):
        replace_file(
            conn,
            FileState("a.md", "memory", "h2", 1, 2),
            [chunk("bravo"), Exploding()],  # type: ignore[list-item]
        )
    assert [chunk.text for chunk, _ in lexical_candidates(conn, '"alpha"', 5)] == ["alpha"]
    assert lexical_candidates(conn, '"bravo"', 5) == []
    assert indexed_files(conn)["a.md"].hash == "h1"
    conn.close()


def test_readers_see_committed_data_and_cannot_write(tmp_path: Path) -> None:
    path = tmp_path / "i.sqlite"
    conn = open_index(path, workspace=tmp_path).conn
    replace_file(conn, FileState("a.md", "memory", "h", 1, 2), [chunk("alpha")])
    reader = open_reader(path)
    assert chunk_count(reader) == 1
    with pytest.raises(apsw.ReadOnlyError):
        reader.execute("DELETE FROM chunks")
    reader.close()
    conn.close()
