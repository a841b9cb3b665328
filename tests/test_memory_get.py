"""Reading a memory file by line range (`memory_get`, `omem-client get`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from openmemoryd.memory.get import read_lines
from openmemoryd.workspace import PathPolicy, init_workspace

BOM = b"\xef\xbb\xbf"


@pytest.fixture
def policy(tmp_path: Path) -> PathPolicy:
    ws = tmp_path / "ws"
    init_workspace(ws)
    return PathPolicy(ws)


def test_a_leading_byte_order_mark_is_not_text_and_stays_in_the_file(policy: PathPolicy) -> None:
    """Notepad saves UTF-8 with a BOM; `get` printed it to people and
    scripts (and into whatever they pasted it). It is the encoding's mark,
    not text of line 1: the indexer leaves it out, and so does `get`, every
    range of it; the file keeps its bytes."""
    raw = BOM + "# Заметки\r\n\r\n- чай без сахара\r\n".encode()
    path = policy.workspace / "memory" / "bom.md"
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(raw)
    whole = read_lines(policy, "memory/bom.md", None, None, 1 << 20)
    assert whole.text == "# Заметки\r\n\r\n- чай без сахара\r\n"
    assert (whole.from_line, whole.to_line, whole.total_lines) == (1, 3, 3)
    first = read_lines(policy, "memory/bom.md#L1", None, None, 1 << 20)
    assert first.text == "# Заметки\r"
    assert read_lines(policy, "memory/bom.md", 3, 1, 1 << 20).text == "- чай без сахара\r"
    assert path.read_bytes() == raw


def test_only_a_leading_mark_goes(policy: PathPolicy) -> None:
    """U+FEFF inside the text (a zero-width no-break space someone pasted)
    is text, and a file that is nothing but the mark has no lines."""
    (policy.workspace / "MEMORY.md").write_bytes(BOM + BOM + "a\ufeffb\n".encode())
    assert read_lines(policy, "MEMORY.md", None, None, 1 << 20).text == "\ufeffa\ufeffb\n"
    (policy.workspace / "USER.md").write_bytes(BOM)
    empty = read_lines(policy, "USER.md", None, None, 1 << 20)
    assert (empty.text, empty.total_lines) == ("", 0)
