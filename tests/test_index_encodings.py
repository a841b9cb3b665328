"""Notes saved in a legacy encoding (GBK, cp1251, Shift_JIS…) are indexed as
their text, and bytes that are no text in any one encoding are not indexed
as mojibake: it embedded near every query that meant nothing ("🚀") and
answered it. The file on disk is never changed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import apsw
import pytest

from openmemoryd.config import IndexSettings
from openmemoryd.index import index_file
from openmemoryd.index.resume import ChunkMemo
from openmemoryd.search.lexical import lexical_leg
from openmemoryd.store import FileState, file_notes, open_index, replace_file
from openmemoryd.text import query_terms
from openmemoryd.workspace import PathPolicy, init_workspace
from openmemoryd.workspace.decoding import (
    LEGACY_LOSSY_NOTE,
    LOSSY_NOTE,
    SAMPLE_BYTES,
    blank_unreadable,
    decode_note,
    describe_spans,
    encoding_of_note,
    legacy_encoding,
    read_as_note,
    unreadable,
)

SETTINGS = IndexSettings(max_file_bytes=1024 * 1024)
GBK_NOTE = "# 备份笔记\n\n老王说数据库备份脚本放在 /opt/backup，每天凌晨三点运行。\n"
RU_NOTE = "# 2026-10-15\n\n- Ключ от серверной у Ивана, стойка три.\n- Пароль сменили в пятницу.\n"


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


def index(conn: apsw.Connection, ws: Path, key: str, memo: ChunkMemo | None = None) -> str:
    return index_file(conn, key, PathPolicy(ws).resolve(key), SETTINGS, memo=memo).kind


def chunks(conn: apsw.Connection, key: str) -> list[tuple[int, int, str]]:
    rows = conn.execute(
        "SELECT start_line, end_line, text FROM chunks WHERE path = ? ORDER BY start_line", (key,)
    )
    return [(int(a), int(b), str(t)) for a, b, t in rows]


def found(conn: apsw.Connection, query: str) -> list[tuple[str, int, int]]:
    hits = lexical_leg(conn, query_terms(query), 10, None)
    return [(c.path, c.start_line, c.end_line) for c in hits]


# ---------------------------------------------------------------- decoding


@pytest.mark.parametrize(
    ("text", "encoding"),
    [
        (GBK_NOTE, "gb18030"),
        (RU_NOTE, "cp1251"),
        ("# メモ\n\nサーバーの設定は田中さんが担当します。\n", "shift_jis"),
        ("# Notes\n\nLa crème brûlée du café était délicieuse.\n", "latin1"),
    ],
)
def test_a_file_in_one_legacy_encoding_is_read_as_its_text(text: str, encoding: str) -> None:
    data = text.encode(encoding)
    decoded = decode_note(data)
    assert (decoded.text, decoded.encoding, decoded.lossy) == (text, encoding, False)
    assert decoded.note == f"not UTF-8: read as {encoding}"
    assert encoding_of_note(read_as_note(encoding)) == encoding
    # lines are the file's lines: "\n" is the same byte in every encoding tried
    assert decoded.text.count("\n") == data.count(b"\n")


def test_utf8_and_its_byte_order_mark_are_read_as_before() -> None:
    decoded = decode_note(b"\xef\xbb\xbf" + GBK_NOTE.encode())
    assert (decoded.text, decoded.encoding, decoded.lossy, decoded.note) == (
        GBK_NOTE,
        None,
        False,
        None,
    )


def test_koi8r_is_read_as_koi8r_and_ambiguous_bytes_lossily() -> None:
    """Russian prose in KOI8-R is told from cp1251 by case and letter
    frequencies; bytes that no encoding reads as text of one language keep
    the replacement characters."""
    koi8 = decode_note(RU_NOTE.encode("koi8-r"))
    assert (koi8.encoding, koi8.lossy, koi8.note) == ("koi8-r", False, "not UTF-8: read as koi8-r")
    assert koi8.text == RU_NOTE
    short = decode_note("# Ключ\n".encode("koi8-r"))  # also Chinese in GBK
    assert (short.encoding, short.lossy) == (None, True)
    # Chinese beside Russian: plausible as neither
    mixed = decode_note(GBK_NOTE.encode("gbk") + RU_NOTE.encode("cp1251"))
    assert (mixed.encoding, mixed.lossy) == (None, True)
    assert decode_note(b"\xe9").lossy  # too little to tell


def test_a_legacy_encoding_must_decode_the_whole_file_not_just_its_start() -> None:
    start = ("今天天气很好，我们去公园散步。\n" * 3000).encode("gbk")
    assert len(start) > SAMPLE_BYTES
    assert legacy_encoding(start) == "gb18030"
    # an invalid GB18030 sequence after the sample: not the whole file's encoding
    assert legacy_encoding(start + b"\x81\x20") is None
    assert decode_note(start + b"\x81\x20").lossy


def test_text_mostly_of_replacement_characters_is_unreadable() -> None:
    assert unreadable(GBK_NOTE.encode("gbk").decode("utf-8", errors="replace"))
    assert unreadable(RU_NOTE.encode("cp1251").decode("utf-8", errors="replace"))
    assert not unreadable("caf\ufffd latte and oolong")  # one stray byte in words
    assert not unreadable("plain text")
    assert not unreadable("")


def test_unreadable_lines_are_blanked_keeping_every_line_number() -> None:
    text = "ok line\n\ufffd\ufffd\ufffd\n\n\ufffd\ufffd x\nkept caf\ufffd\n\ufffd"
    blanked, spans = blank_unreadable(text)
    assert blanked == "ok line\n\n\n\nkept caf\ufffd\n"
    assert spans == [(2, 4), (6, 6)]
    assert describe_spans(spans) == "2-4, 6"
    assert blank_unreadable("all fine") == ("all fine", [])


# ---------------------------------------------------------------- indexing


def test_a_gbk_note_is_indexed_as_its_text_with_its_lines_and_never_changed(
    conn: apsw.Connection, ws: Path
) -> None:
    key = "memory/gbk笔记.md"
    original = ("# 笔记\n\n今天天气很好。\n\n" + GBK_NOTE).encode("gbk")
    (ws / key).write_bytes(original)
    assert index(conn, ws, key) == "added"
    (row,) = chunks(conn, key)
    assert row == (1, 7, "# 笔记\n\n今天天气很好。\n\n# 备份笔记\n\n" + GBK_NOTE.split("\n")[2])
    assert (key, 1, 7) in found(conn, "老王")
    assert dict(file_notes(conn))[key] == "not UTF-8: read as gb18030"
    assert (ws / key).read_bytes() == original
    assert index(conn, ws, key) == "unchanged"


def test_a_cp1251_note_is_found_by_its_russian_words(conn: apsw.Connection, ws: Path) -> None:
    key = "memory/2026-10-15.md"
    (ws / key).write_bytes(RU_NOTE.encode("cp1251"))
    assert index(conn, ws, key) == "added"
    assert [hit[0] for hit in found(conn, "серверной")] == [key]
    assert dict(file_notes(conn))[key] == "not UTF-8: read as cp1251"


def test_unreadable_chunks_are_left_out_and_named_in_the_note(
    conn: apsw.Connection, ws: Path
) -> None:
    """A section in two legacy encodings (cp1251 and GBK) beside an English
    one: no encoding reads the file, so the English is indexed, the lines
    that are mostly U+FFFD are not (blanked, so every other line keeps its
    number), and the note says which lines."""
    key = "memory/mixed.md"
    english = "# Heron\n\nThe kingfisher nests by the river.\n\n"
    russian = "## Сервер\n\nКлюч от серверной у Ивана, стойка три, пароль сменили.\n"
    (ws / key).write_bytes(english.encode() + russian.encode("cp1251") + GBK_NOTE.encode("gbk"))
    assert index(conn, ws, key) == "added"
    rows = chunks(conn, key)
    assert [(a, b) for a, b, _ in rows] == [(1, 3)]
    assert rows[0][2] == "# Heron\n\nThe kingfisher nests by the river."
    assert dict(file_notes(conn))[key] == (
        f"{LOSSY_NOTE}; lines 5-10 not indexed (undecodable bytes)"
    )


def test_a_file_indexed_as_mojibake_before_is_read_again(conn: apsw.Connection, ws: Path) -> None:
    """An index made before legacy encodings were tried holds the GBK note
    as U+FFFD, noted so: it is read again though its bytes did not change."""
    key = "memory/gbk.md"
    data = GBK_NOTE.encode("gbk")
    (ws / key).write_bytes(data)
    assert index(conn, ws, key) == "added"
    known = conn.execute("SELECT hash, mtime_ns, size FROM files WHERE path = ?", (key,))
    digest, mtime_ns, size = next(known)
    replace_file(conn, FileState(key, "memory", digest, mtime_ns, size, LEGACY_LOSSY_NOTE), ())
    assert index(conn, ws, key) == "updated"
    assert dict(file_notes(conn))[key] == "not UTF-8: read as gb18030"
    assert found(conn, "老王")


def test_a_legacy_file_is_never_resumed_from_a_byte_offset(conn: apsw.Connection, ws: Path) -> None:
    """Resuming chunking from a restart point reads the tail as UTF-8: a
    file read in another encoding is chunked whole each time it grows."""
    key = "memory/ru.md"
    memo = ChunkMemo()
    (ws / key).write_bytes(RU_NOTE.encode("cp1251"))
    assert index(conn, ws, key, memo) == "added"
    with (ws / key).open("ab") as f:
        f.write("- Сервер перезагрузили.\n".encode("cp1251"))
    assert index(conn, ws, key, memo) == "updated"
    assert "перезагрузили" in chunks(conn, key)[-1][2]
    assert dict(file_notes(conn))[key] == "not UTF-8: read as cp1251"


def test_a_file_no_encoding_read_before_is_read_again_once_one_does(
    conn: apsw.Connection, ws: Path
) -> None:
    """A KOI8-R note indexed lossily by a detector that never named KOI8-R
    is read again, though its bytes did not change; a file still read
    lossily is not."""
    key, lossy = "memory/koi8.md", "memory/mixed.md"
    (ws / key).write_bytes(RU_NOTE.encode("koi8-r"))
    (ws / lossy).write_bytes(GBK_NOTE.encode("gbk") + RU_NOTE.encode("cp1251"))
    assert index(conn, ws, key) == "added"
    assert index(conn, ws, lossy) == "added"
    conn.execute("UPDATE files SET note = ? WHERE path = ?", (LOSSY_NOTE, key))
    assert index(conn, ws, key) == "updated"
    assert dict(file_notes(conn))[key] == "not UTF-8: read as koi8-r"
    assert index(conn, ws, key) == "unchanged"
    assert index(conn, ws, lossy) == "unchanged"
