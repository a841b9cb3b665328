"""The lean path of ``omem-client``: search, get, append and status without typer.

It may only skip the framework, never decide differently: a command line it
takes must print and exit as the full CLI does, and every other command
line (help, another command, anything malformed) must go to the full CLI.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from conftest import Daemon, Env
from omem_client import _lean, _lean_args
from omem_client._lean_args import parse
from omem_protocol import KNOWN_SOURCES, MAX_LIMIT, SEARCH_SCOPES


def steady(stdout: str) -> object:
    reply = json.loads(stdout)
    if isinstance(reply, dict):
        reply.pop("took_ms", None)
        reply.pop("stale", None)
    return reply


# Whether a search finds a sync under way depends on when it runs (each
# search queues a quick check of its own), not on which CLI asked.
STALE_NOTE = "(the index is being updated; results may lag the files)\n"


def timeless(stderr: str) -> str:
    return stderr.replace(STALE_NOTE, "")


FULL_CLI = "import sys; from omem_client.cli import main; sys.argv[0] = 'omem-client'; main()"


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, tuple[Any, ...], dict[str, Any]]]:
    seen: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []
    for name in ("search_command", "get_command", "append_command", "status_command"):

        def record(*args: Any, _name: str = name, **kwargs: Any) -> None:
            seen.append((_name, args, kwargs))

        monkeypatch.setattr(_lean, name, record)
    return seen


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["--help"],
        ["search", "-h"],
        ["search"],  # the query is missing: the full CLI says so
        ["search", "x", "--limit", "0"],
        ["search", "x", "--limit", "101"],
        ["search", "x", "-n", "three"],
        ["search", "x", "--limit=3"],
        ["search", "x", "--min-score", "1.5"],
        ["search", "x", "--min-score", "nan"],
        ["search", "x", "--source", "bogus"],
        ["search", "x", "--max-tokens", "0"],
        ["search", "x", "--limit", "3", "--limit", "4"],
        ["search", "x", "--frseh"],
        ["search", "--agent"],
        ["get"],
        ["get", "a.md", "b.md"],
        ["get", "a.md", "--from", "0"],
        ["append", "one", "two"],
        ["append", "- a bullet"],
        ["status", "extra"],
        ["--timeout", "0.01", "status"],
        ["--timeout", "nan", "status"],
        ["--version"],
        ["sync"],
        ["tasks", "add", "x"],
        ["--install-completion"],
    ],
)
def test_anything_unusual_goes_to_the_full_cli(argv: list[str]) -> None:
    assert parse(argv) is None


def test_well_formed_command_lines_run_lean(
    calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]],
) -> None:
    for argv in (
        ["-w", "work", "--timeout", "5", "search", "tide", "-n", "3", "tables", "--source",
         "memory", "--source", "sessions", "--fresh", "--max-tokens", "200", "--json"],
        ["get", "MEMORY.md", "--from", "2", "--lines", "5"],
        ["append", "--path", "PROJECT.md", "a note"],
        ["append"],  # stdin, as the full CLI reads it
        ["status", "--json"],
    ):  # fmt: skip
        plan = parse(argv)
        assert plan is not None, argv
        _lean.run(plan)
    (name, args, kwargs), *rest = calls
    assert name == "search_command"
    options, text = args
    assert (options.workspace, options.timeout, options.socket) == ("work", 5.0, None)
    assert text == "tide tables"
    assert kwargs == {
        "limit": 3,
        "sources": ["memory", "sessions"],
        "fresh": True,
        "max_tokens": 200,
        "as_json": True,
    }
    assert [(n, a[1:], k) for n, a, k in rest] == [
        ("get_command", ("MEMORY.md",), {"from_line": 2, "lines": 5}),
        ("append_command", ("a note",), {"path": "PROJECT.md"}),
        ("append_command", (None,), {}),
        ("status_command", (), {"as_json": True}),
    ]


def test_the_lean_path_does_not_import_typer(env: Env) -> None:
    probe = (
        "import atexit, sys\n"
        "atexit.register(lambda: print('typer' in sys.modules, 'typing_extensions' in sys.modules"
        " and sys.modules['typing_extensions'] is not None, file=sys.stderr))\n"
        "sys.argv = ['omem-client', 'status']\n"
        "from omem_client._entry import main\n"
        "main()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], env=env.vars, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 3, done.stderr  # no daemon: unreachable, as the full CLI says
    assert "openmemoryd is not running" in done.stderr
    assert "start it with `openmemoryd start`" in done.stderr  # it returns once it answers
    assert done.stderr.strip().splitlines()[-1] == "False False"


def test_the_lean_parser_knows_the_protocols_limits() -> None:
    assert _lean_args.MAX_LIMIT == MAX_LIMIT
    assert _lean_args.KNOWN_SOURCES == KNOWN_SOURCES
    assert _lean_args.SEARCH_SCOPES == SEARCH_SCOPES


def test_the_full_cli_still_has_typing_extensions() -> None:
    done = subprocess.run(
        [sys.executable, "-c", FULL_CLI, "--help"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert "search" in done.stdout


@pytest.mark.e2e
def test_lean_and_full_cli_print_and_exit_alike(daemon: Daemon) -> None:
    daemon.cli("append", "The otter holt is below the weir")

    def both(*args: str) -> tuple[subprocess.CompletedProcess[str], ...]:
        lean = daemon.cli(*args)
        full = subprocess.run(
            [sys.executable, "-c", FULL_CLI, *args],
            env=daemon.env.vars,
            capture_output=True,
            text=True,
            timeout=60,
        )
        return lean, full

    for args in (
        ("search", "otter", "holt"),
        ("search", "otter", "--json", "--limit", "1"),
        ("search", "nothing-matches-this-zzq"),
        ("get", "MEMORY.md", "--from", "1", "--lines", "2"),
        ("get", "../../etc/passwd.md"),  # a daemon error: exit 4, same message
        ("get", "../../etc/passwd.md", "--json"),
        ("-w", "nosuchworkspace", "status"),
        ("--timeout", "inf", "search", "otter"),  # no limit, as a socket cannot take inf
        ("--timeout", "1e300", "search", "otter"),
    ):
        lean, full = both(*args)
        assert (lean.returncode, timeless(lean.stderr)) == (
            full.returncode,
            timeless(full.stderr),
        ), args
        if "--json" in args:  # the same reply, but for how long it took
            assert steady(lean.stdout) == steady(full.stdout), args
        else:
            assert lean.stdout == full.stdout, args
    lean, full = both("status", "--json")
    assert lean.returncode == full.returncode == 0
    assert lean.stdout.startswith('{"type":"status_result"')
