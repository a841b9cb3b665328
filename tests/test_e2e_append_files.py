"""End to end: an append follows the file it goes to (line ends, encoding).

Files people keep are not all LF and UTF-8: a Windows editor saves CRLF, an
old note is Latin-1. An append to the first mixed two kinds of line end;
to the second, two encodings, and the file then read right in neither.
"""

from __future__ import annotations

import pytest

from conftest import Daemon

pytestmark = pytest.mark.e2e


def test_appends_keep_a_crlf_file_crlf_and_refuse_a_latin1_one(daemon: Daemon) -> None:
    memory = daemon.env.workspace / "memory"
    memory.mkdir(exist_ok=True)
    crlf = memory / "windows.md"
    crlf.write_bytes("# Заметки\r\n\r\n- первый пункт\r\n".encode())
    latin1 = memory / "old.md"
    old = "# Café\n\n- crème brûlée\n".encode("latin-1")
    latin1.write_bytes(old)

    added = daemon.cli("append", "--path", "memory/windows.md", "второй пункт")
    assert added.returncode == 0, added.stderr
    data = crlf.read_bytes()
    assert data.endswith("\r\n\r\nвторой пункт\r\n".encode())
    assert b"\n" not in data.replace(b"\r\n", b"")
    found = daemon.cli("search", "второй пункт")
    assert "memory/windows.md:" in found.stdout
    assert "второй пункт" in found.stdout

    refused = daemon.cli("append", "--path", "memory/old.md", "new line")
    assert refused.returncode == 4
    assert "memory/old.md is not UTF-8 text" in refused.stderr
    assert "iconv" in refused.stderr
    assert latin1.read_bytes() == old
