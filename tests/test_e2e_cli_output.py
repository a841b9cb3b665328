"""What `omem-client` prints, end to end: to a reader that stops early, to a
terminal, and for lines past the end of a file.

The real daemon and the real CLI (the lean path and the full one), with
stdout a pipe nobody reads, a pseudo-terminal, or an ordinary pipe.
"""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from collections.abc import Iterator
from datetime import date

import pytest

from conftest import Daemon, Env

pytestmark = pytest.mark.e2e

TODAY = date.today()
DAILY = f"memory/{TODAY.isoformat()}.md"
# Every kind of control a note may hold: BEL, an SGR colour, an OSC title, a
# C1 CSI (U+009B), DEL, a CRLF line end (harmless) and a bare CR (hides text)
CONTROLS = "tinct bell \a red \x1b[31m title \x1b]0;owned\a csi \x9b8m del \x7f end"
CONTROLS_SHOWN = "tinct bell \\x07 red \\x1b[31m title \\x1b]0;owned\\x07 csi \\x9b8m del \\x7f end"
RAW = frozenset("\a\x1b\x7f\x9b")  # none of them may reach the terminal
FULL_CLI = "import sys; from omem_client.cli import main; sys.argv[0] = 'omem-client'; main()"


@pytest.fixture(scope="module")
def notes(module_env: Env) -> Iterator[Daemon]:
    """One daemon for the module, its memory holding control characters."""
    memory = module_env.workspace / "memory"
    memory.mkdir(parents=True)
    (memory / "controls.md").write_bytes(
        f"# Controls\n\n{CONTROLS}\r\nsafe text\rHIDDEN tinct\n".encode()
    )
    (memory / "empty.md").write_bytes(b"")
    (memory / "long.md").write_text(
        "# Long\n\n" + "".join(f"- tinct line {i} of a long note\n" for i in range(3000))
    )
    (memory / f"{TODAY.isoformat()}.md").write_text(f"# {TODAY.isoformat()}\n\n{CONTROLS}\n")
    handle = Daemon(module_env).start()
    try:
        assert handle.cli("sync").returncode == 0
        yield handle
    finally:
        handle.stop()


def closed_pipe(env: Env, *args: str, full: bool = False) -> subprocess.CompletedProcess[str]:
    """The CLI with stdout (and, unless told, nothing else) a pipe whose reader
    has gone: every write to it fails with EPIPE, as after ``| head -1``."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    argv = [sys.executable, "-c", FULL_CLI] if full else [sys.executable, "-m", "omem_client"]
    try:
        return subprocess.run(
            [*argv, *args],
            env=env.vars,
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
            check=False,
        )
    finally:
        os.close(write_end)


def on_a_terminal(env: Env, *args: str) -> tuple[int, str]:
    """The CLI's exit code and stdout, its stdout a pseudo-terminal."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "omem_client", *args],
        env=env.vars,
        stdin=subprocess.DEVNULL,
        stdout=follower,
        stderr=subprocess.DEVNULL,
    )
    os.close(follower)
    out = b""
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:  # EIO: the child closed its end
            break
        if not data:
            break
        out += data
    os.close(leader)
    code = proc.wait(timeout=60)
    # the terminal's line discipline writes each newline as CR LF
    return code, out.decode("utf-8").replace("\r\n", "\n")


# ---------------------------------------------------------------- a reader that stops early


@pytest.mark.parametrize(
    ("args", "full"),
    [
        (("search", "tinct", "-n", "20"), False),
        (("search", "tinct", "-n", "20"), True),
        (("search", "tinct", "-n", "20", "--json"), False),
        (("get", "memory/long.md"), False),
        (("get", "memory/long.md", "--from", "3", "--lines", "2000"), True),
        (("status",), False),
        (("primer",), True),
        (("tasks", "--all"), True),
        (("sync",), True),
    ],
)
def test_a_reader_that_stops_early_ends_the_output_quietly(
    notes: Daemon, args: tuple[str, ...], full: bool
) -> None:
    result = closed_pipe(notes.env, *args, full=full)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert "BrokenPipe" not in result.stderr
    assert "Exception ignored" not in result.stderr


def test_a_closed_pipe_keeps_the_commands_own_exit_code(notes: Daemon) -> None:
    """The error still says so (exit 4), in words or as JSON, whoever reads."""
    missing = closed_pipe(notes.env, "get", "memory/nothing.md")
    assert missing.returncode == 4
    assert "not_found" in missing.stderr
    as_json = closed_pipe(notes.env, "get", "memory/nothing.md", "--json")
    assert as_json.returncode == 4
    assert "Traceback" not in as_json.stderr


def test_stdout_and_stderr_both_into_a_closed_pipe(notes: Daemon) -> None:
    """``2>&1 | head -1``: the remarks on stderr meet the closed pipe too."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        result = subprocess.run(
            [sys.executable, "-m", "omem_client", "search", "tinct", "--min-score", "0.99"],
            env=notes.env.vars,
            stdout=write_end,
            stderr=write_end,
            timeout=60,
            check=False,
        )
    finally:
        os.close(write_end)
    assert result.returncode == 0


# ---------------------------------------------------------------- a terminal


def test_control_characters_are_shown_escaped_on_a_terminal(notes: Daemon) -> None:
    code, got = on_a_terminal(notes.env, "get", "memory/controls.md")
    assert code == 0
    # the CRLF line end is kept; the bare CR that would hide "safe text" is shown
    assert got == f"# Controls\n\n{CONTROLS_SHOWN}\r\nsafe text\\x0dHIDDEN tinct\n"
    assert not RAW & set(got)

    code, found = on_a_terminal(notes.env, "search", "tinct", "bell", "-n", "3")
    assert code == 0
    assert CONTROLS_SHOWN in found
    assert not RAW & set(found)

    code, primer = on_a_terminal(notes.env, "primer")  # the full CLI, typer.echo
    assert code == 0
    assert CONTROLS_SHOWN in primer
    assert not RAW & set(primer)

    code, as_json = on_a_terminal(notes.env, "get", "memory/controls.md", "--json")
    assert code == 0
    assert not RAW & set(as_json)
    assert json.loads(as_json)["text"].startswith(f"# Controls\n\n{CONTROLS}\r\n")


def test_piped_output_keeps_every_byte(notes: Daemon) -> None:
    got = subprocess.run(
        [sys.executable, "-m", "omem_client", "get", "memory/controls.md"],
        env=notes.env.vars,
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert got.returncode == 0
    assert got.stdout == (notes.env.workspace / "memory" / "controls.md").read_bytes()
    primer = notes.cli("primer")
    assert "\\x" not in primer.stdout  # nothing escaped (click drops the SGR colour itself)
    assert "title \x1b]0;owned\a csi \x9b8m del \x7f end" in primer.stdout


def test_a_byte_order_mark_is_not_printed_and_stays_in_the_file(notes: Daemon) -> None:
    """`get` printed a file's UTF-8 BOM, which then went into whatever the
    output was pasted or piped to. It is no text of the file: the lean and
    the full CLI, --json and the socket reply all leave it out; every other
    byte is printed as it is, and the file keeps the mark."""
    raw = b"\xef\xbb\xbf# Notepad\r\n\r\n- saved with a BOM\r\n"
    path = notes.env.workspace / "memory" / "notepad.md"
    path.write_bytes(raw)
    for argv in (
        [sys.executable, "-m", "omem_client", "get", "memory/notepad.md"],
        [sys.executable, "-c", FULL_CLI, "get", "memory/notepad.md"],
    ):
        got = subprocess.run(argv, env=notes.env.vars, capture_output=True, timeout=60, check=False)
        assert got.returncode == 0, got.stderr
        assert got.stdout == raw[3:]
    first = subprocess.run(
        [sys.executable, "-m", "omem_client", "get", "memory/notepad.md#L1"],
        env=notes.env.vars,
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert first.stdout == b"# Notepad\r\n"
    as_json = json.loads(notes.cli("get", "memory/notepad.md", "--json").stdout)
    assert as_json["text"] == "# Notepad\r\n\r\n- saved with a BOM\r\n"
    assert as_json["total_lines"] == 3
    assert path.read_bytes() == raw


# ---------------------------------------------------------------- past the end of a file


def test_lines_past_the_end_are_not_found_saying_how_many_there_are(notes: Daemon) -> None:
    past = notes.cli("get", "memory/controls.md", "--from", "100000")
    assert past.returncode == 4
    assert past.stdout == ""
    assert past.stderr == (
        "omem-client: error (not_found): memory/controls.md has 4 lines; nothing from line 100000\n"
    )
    cited = notes.cli("get", "memory/controls.md#L999")
    assert cited.returncode == 4
    assert "memory/controls.md has 4 lines; nothing from line 999" in cited.stderr
    as_json = notes.cli("get", "memory/controls.md", "--from", "5", "--json")
    assert as_json.returncode == 4
    assert json.loads(as_json.stdout) == {
        "error": {
            "code": "not_found",
            "message": "memory/controls.md has 4 lines; nothing from line 5",
            "hint": None,
        }
    }
    # as `forget` answers the same citation
    forget = notes.cli("forget", "memory/controls.md#L999")
    assert forget.returncode == 4
    assert "not_found" in forget.stderr


def test_a_range_that_reaches_past_the_end_shows_what_there_is(notes: Daemon) -> None:
    tail = subprocess.run(
        [sys.executable, "-m", "omem_client", "get", "memory/controls.md", "--from", "4"],
        env=notes.env.vars,
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert tail.returncode == 0, tail.stderr
    assert tail.stdout == b"safe text\rHIDDEN tinct\n"


def test_an_empty_file_reads_as_nothing_and_has_no_second_line(notes: Daemon) -> None:
    for args in (("get", "memory/empty.md"), ("get", "memory/empty.md", "--from", "1")):
        empty = notes.cli(*args)
        assert (empty.returncode, empty.stdout, empty.stderr) == (0, "", "")
    past = notes.cli("get", "memory/empty.md", "--from", "2")
    assert past.returncode == 4
    assert "memory/empty.md is empty; nothing from line 2" in past.stderr


def test_the_socket_reply_past_the_end_is_unchanged(notes: Daemon) -> None:
    """Agents paging through a file (the MCP tool included) stop at empty
    text and ``to_line`` 0; only the CLI turns it into an error."""
    with notes.client() as client:
        got = client.get("memory/controls.md", from_line=100000)
    assert (got.text, got.from_line, got.to_line, got.total_lines) == ("", 100000, 0, 4)
