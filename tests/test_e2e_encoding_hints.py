"""Text that is not UTF-8, as a Russian or Chinese user meets it: the real
client and daemon name the encoding it looks like, and the doctor's fix,
run as given, converts the note and keeps the original.

The hints used to say ``iconv -f latin1 -t utf-8`` whatever the bytes (a
cp1251 or GBK note comes out as mojibake, without an error), and the
doctor's fix replaced the file in place.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import Daemon
from test_doctor import checks_of, doctor, settle

pytestmark = pytest.mark.e2e

RUSSIAN = "- Купить молоко и хлеб, позвонить маме."
CHINESE = "- 今天我们去公园散步，天气很好。"


def client_with_bytes(
    daemon: Daemon, *args: str | bytes, stdin: bytes | None = None, errors: str = "strict"
) -> subprocess.CompletedProcess[bytes]:
    """`omem-client ARGS` with raw bytes as arguments or on stdin, as a
    terminal or a pipe in another encoding gives them."""
    return subprocess.run(
        [sys.executable, "-m", "omem_client", *args],
        env={**daemon.env.vars, "PYTHONIOENCODING": f"utf-8:{errors}"},
        input=stdin,
        capture_output=True,
        timeout=60,
        check=False,
    )


def test_the_client_names_the_encoding_of_an_argument_or_stdin(daemon: Daemon) -> None:
    memory = daemon.env.workspace / "MEMORY.md"
    before = memory.read_bytes()
    argument = client_with_bytes(daemon, "append", "--path", "MEMORY.md", RUSSIAN.encode("cp1251"))
    stderr = argument.stderr.decode()
    assert argument.returncode == 4, stderr
    assert "(not UTF-8)" in stderr
    assert "it looks like cp1251; convert it to UTF-8 first (e.g. iconv -f cp1251 -t utf-8)" in (
        stderr
    )
    assert "latin1" not in stderr

    for errors in ("strict", "surrogateescape"):
        piped = client_with_bytes(
            daemon, "append", "--path", "MEMORY.md", "-", stdin=CHINESE.encode("gbk"), errors=errors
        )
        stderr = piped.stderr.decode()
        assert piped.returncode == 2, stderr
        assert stderr.startswith("omem-client: stdin is not utf-8 text (the byte 0xBD)"), stderr
        assert "it looks like gb18030; convert it to UTF-8 first (e.g. iconv -f gb18030" in stderr

    unclear = client_with_bytes(daemon, "search", b"\xe9")
    stderr = unclear.stderr.decode()
    assert unclear.returncode == 4, stderr
    assert "iconv -f ENCODING -t utf-8, with its encoding in place of ENCODING" in stderr
    assert memory.read_bytes() == before  # nothing was written


def test_the_doctors_fix_for_a_cp1251_note_converts_it_and_keeps_the_original(
    daemon: Daemon,
) -> None:
    note = daemon.env.workspace / "memory" / "покупки.md"
    note.parent.mkdir(exist_ok=True)
    original = f"# Покупки\n\n{RUSSIAN}\n".encode("cp1251")
    note.write_bytes(original)
    settle(daemon)

    inside = daemon.cli("doctor", "--json")
    beside = doctor(daemon.env, "--json")
    for result in (inside, beside):
        files = checks_of(result)["files"]
        assert files["status"] == "warn", files
        fix = str(files["fix"])
        assert fix.startswith(
            "convert memory/покупки.md to UTF-8 in the workspace (it looks like cp1251), "
            "keeping the original: iconv -f cp1251 -t utf-8 memory/покупки.md > "
            "memory/покупки.md.utf8 && mv memory/покупки.md memory/покупки.md.orig && "
            "mv memory/покупки.md.utf8 memory/покупки.md"
        ), fix

    # the user runs the command, in the workspace, as the doctor gives it
    command = fix[fix.index("iconv ") :]
    subprocess.run(["sh", "-c", command], cwd=daemon.env.workspace, check=True)
    assert note.read_text("utf-8") == f"# Покупки\n\n{RUSSIAN}\n"
    assert note.with_name("покупки.md.orig").read_bytes() == original
    settle(daemon)
    assert checks_of(daemon.cli("doctor", "--json"))["files"]["status"] == "ok"
    hits = json.loads(daemon.cli("search", "молоко", "--json").stdout)["results"]
    assert hits[0]["path"] == "memory/покупки.md"
