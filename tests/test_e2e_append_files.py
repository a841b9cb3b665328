"""End to end: an append follows the line ends of the file it goes to.

A Windows editor saves CRLF; an append to such a file mixed two kinds of
line end. (A file that is not UTF-8 keeps its bytes and takes the append
as UTF-8, as the daemon reads it: tests/test_reliability_bad_input.py.)
"""

from __future__ import annotations

import pytest

from conftest import Daemon

pytestmark = pytest.mark.e2e


def test_appends_keep_a_crlf_file_crlf(daemon: Daemon) -> None:
    memory = daemon.env.workspace / "memory"
    memory.mkdir(exist_ok=True)
    crlf = memory / "windows.md"
    crlf.write_bytes("# Заметки\r\n\r\n- первый пункт\r\n".encode())

    added = daemon.cli("append", "--path", "memory/windows.md", "второй пункт")
    assert added.returncode == 0, added.stderr
    data = crlf.read_bytes()
    assert data.endswith("\r\n\r\nвторой пункт\r\n".encode())
    assert b"\n" not in data.replace(b"\r\n", b"")
    found = daemon.cli("search", "второй пункт")
    assert "memory/windows.md:" in found.stdout
    assert "второй пункт" in found.stdout
