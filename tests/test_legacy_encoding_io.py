"""`get` and `append` on a note that is not UTF-8 (GBK, cp1251): `get`
gives the text as the indexer read it, so a hit's citation shows the lines
it cited, and says how it was read (CLI, socket, HTTP, MCP alike); `append`
never writes UTF-8 text beyond ASCII into such a file, which would leave it
in two encodings at once."""

from __future__ import annotations

from pathlib import Path

import pytest

from omem_client._mcp_tools import get_answer
from omem_protocol import GetResult
from openmemoryd.errors import Conflict, Forbidden
from openmemoryd.memory import append_block
from openmemoryd.memory.edit import edit_file, insert_line
from openmemoryd.memory.get import read_lines
from openmemoryd.memory.known import KnownFiles
from openmemoryd.memory.remove import LineRange, remove_lines
from openmemoryd.workspace import PathPolicy, init_workspace

GBK_TEXT = "# 备份笔记\n\n老王说数据库备份脚本放在 /opt/backup。\n"
RU_TEXT = "# Сервер\n\n- Ключ от серверной у Ивана.\n"
MAX = 1024 * 1024


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    init_workspace(root)
    return root


def test_get_decodes_a_legacy_file_and_says_how(ws: Path) -> None:
    (ws / "memory" / "gbk.md").write_bytes(GBK_TEXT.encode("gbk"))
    policy = PathPolicy(ws)
    whole = read_lines(policy, "memory/gbk.md", None, None, MAX)
    assert (whole.text, whole.total_lines, whole.note) == (
        GBK_TEXT,
        3,
        "not UTF-8: read as gb18030",
    )
    cited = read_lines(policy, "memory/gbk.md:3", None, None, MAX)
    assert (cited.text, cited.from_line, cited.to_line) == (GBK_TEXT.split("\n")[2], 3, 3)
    (ws / "memory" / "utf8.md").write_text(GBK_TEXT)
    assert read_lines(policy, "memory/utf8.md", None, None, MAX).note is None


def test_get_of_bytes_no_encoding_reads_replaces_them_and_says_so(ws: Path) -> None:
    (ws / "memory" / "odd.md").write_bytes(b"caf\xe9 \x81 latte\n")
    got = read_lines(PathPolicy(ws), "memory/odd.md", None, None, MAX)
    assert got.text == "caf\ufffd \ufffd latte\n"
    assert got.note is not None
    assert got.note.endswith("invalid bytes replaced with U+FFFD")


def test_the_mcp_answer_says_how_the_file_was_read() -> None:
    result = GetResult(
        path="memory/gbk.md",
        text=GBK_TEXT.rstrip("\n"),
        from_line=1,
        to_line=3,
        total_lines=3,
        note="not UTF-8: read as gb18030",
    )
    text, _ = get_answer(result)
    assert text.startswith("memory/gbk.md lines 1-3 of 3 (not UTF-8: read as gb18030):\n# 备份")
    plain, _ = get_answer(GetResult(path="a.md", text="x", from_line=1, to_line=1, total_lines=1))
    assert plain == "a.md lines 1-1 of 1:\nx"


def test_append_refuses_text_beyond_ascii_to_a_legacy_file(ws: Path) -> None:
    note = ws / "memory" / "ru.md"
    original = RU_TEXT.encode("cp1251")
    note.write_bytes(original)
    mp = PathPolicy(ws).resolve("memory/ru.md")
    with pytest.raises(Forbidden, match=r"memory/ru\.md is not UTF-8 \(it is in cp1251\)"):
        append_block(mp, "- Пароль сменили.", MAX)
    assert note.read_bytes() == original
    (ws / "memory" / "odd.md").write_bytes(b"\x81\x8d \xc3\x28\n")
    odd = PathPolicy(ws).resolve("memory/odd.md")
    with pytest.raises(Forbidden, match="its encoding is unclear"):
        append_block(odd, "老王", MAX)


def test_ascii_is_appended_to_a_legacy_file_which_is_then_read_each_time(ws: Path) -> None:
    """ASCII is the same bytes in cp1251: appended, the file stays cp1251. It
    is not remembered as appended-to (that skips reading it), so the next
    append checks it again."""
    note = ws / "memory" / "ru.md"
    note.write_bytes(RU_TEXT.encode("cp1251"))
    mp = PathPolicy(ws).resolve("memory/ru.md")
    known = KnownFiles()
    appended = append_block(mp, "- router: 10.0.0.1", MAX, known)
    assert appended.start_line == 5
    assert note.read_bytes().decode("cp1251") == RU_TEXT + "\n- router: 10.0.0.1\n"
    with pytest.raises(Forbidden):
        append_block(mp, "- Пароль сменили.", MAX, known)
    # a UTF-8 file takes any text, as before
    utf8 = PathPolicy(ws).resolve("memory/utf8.md")
    append_block(utf8, "- Пароль сменили.", MAX, known)
    append_block(utf8, "- 老王", MAX, known)
    assert (ws / "memory" / "utf8.md").read_text().endswith("- Пароль сменили.\n\n- 老王\n")


def test_log_refuses_to_write_text_beyond_ascii_into_a_legacy_file(ws: Path) -> None:
    """`log` rewrites MEMORY.md whole, keeping bytes that are not UTF-8 as
    they were: a Russian bullet inserted into a cp1251 file went in as
    UTF-8, and the file was in two encodings at once (unreadable as
    either). So was a count ``(×2)`` on one of its lines."""
    memory = ws / "MEMORY.md"
    original = "# Память\n\n## Notes\n\n- Ключ от серверной у Ивана.\n".encode("cp1251")
    memory.write_bytes(original)
    mp = PathPolicy(ws).resolve("MEMORY.md")
    with pytest.raises(Forbidden, match=r"MEMORY\.md is not UTF-8 \(it is in cp1251\)"):
        insert_line(mp, ("Notes",), "- Пароль сменили.", max_file_bytes=MAX)
    assert memory.read_bytes() == original

    def counted(current: str) -> tuple[str, None]:
        lines = current.split("\n")
        return "\n".join(line + " (×2)" if line.startswith("- ") else line for line in lines), None

    with pytest.raises(Forbidden, match="nothing was changed"):
        edit_file(mp, counted, max_file_bytes=MAX)
    assert memory.read_bytes() == original
    # ASCII is the same bytes in cp1251: the file stays in one encoding
    insert_line(mp, ("Notes",), "- router: 10.0.0.1", max_file_bytes=MAX)
    assert memory.read_bytes().decode("cp1251").endswith("- router: 10.0.0.1\n")
    # a section named in another script than the file's is no match: the new
    # heading would go in as UTF-8
    with pytest.raises(Forbidden):
        insert_line(mp, ("Предпочтения",), "- router: 10.0.0.2", max_file_bytes=MAX)


def test_remove_lines_edits_a_legacy_file_as_its_text(ws: Path) -> None:
    note = ws / "memory" / "gbk.md"
    original = GBK_TEXT.encode("gb18030")
    note.write_bytes(original)
    mp = PathPolicy(ws).resolve("memory/gbk.md")
    removed = remove_lines(mp, [LineRange(3, 3)], ["老王说数据库备份脚本放在 /opt/backup。"])
    assert removed == ["老王说数据库备份脚本放在 /opt/backup。"]
    assert note.read_bytes() == "# 备份笔记\n".encode("gb18030")
    # what the file does not say is refused, the file untouched
    note.write_bytes(original)
    with pytest.raises(Conflict):
        remove_lines(mp, [LineRange(3, 3)], ["老王说别的"])
    assert note.read_bytes() == original
