"""``omem-client --json COMMAND``: ``--json`` written before the command.

A user test wrote ``omem-client --json append …`` and got "No such option:
--json (Possible options: --version)", which does not say that ``--json``
belongs to the command. No global option takes ``--json``, so before the
command it can only mean the command's: it is moved there
(`json_after_command`), and the real CLI is run against the real daemon.
"""

from __future__ import annotations

import json

import pytest

from conftest import Daemon
from omem_client.cli import json_after_command


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--json", "append", "x"], ["append", "--json", "x"]),
        (["--json", "tasks"], ["tasks", "--json"]),
        (["--json", "tasks", "done", "a1"], ["tasks", "done", "--json", "a1"]),
        (
            ["--socket", "/s", "--json", "-w", "work", "search", "q"],
            ["--socket", "/s", "-w", "work", "search", "--json", "q"],
        ),
        # where the command takes it already, or nothing is before the command
        (["append", "--json", "x"], ["append", "--json", "x"]),
        (["append", "--", "--json"], ["append", "--", "--json"]),
        # an option's value, not the flag
        (["-w", "--json", "status"], ["-w", "--json", "status"]),
        # no command to move it to: click says what is wrong
        (["--json"], ["--json"]),
        (["--json", "--", "append"], ["--json", "--", "append"]),
    ],
)
def test_json_before_the_command_goes_after_it(argv: list[str], expected: list[str]) -> None:
    assert json_after_command(argv) == expected


@pytest.mark.e2e
def test_json_before_the_command_through_the_real_cli(daemon: Daemon) -> None:
    appended = daemon.cli("--json", "append", "The heron nests by the lake")
    assert appended.returncode == 0, appended.stdout + appended.stderr
    reply = json.loads(appended.stdout)
    assert reply["type"] == "append_result"
    assert reply["indexed"] is True

    added = daemon.cli("--timeout", "30", "--json", "tasks", "add", "Count the herons")
    assert added.returncode == 0, added.stdout + added.stderr
    assert json.loads(added.stdout)["changed"][0]["text"] == "Count the herons"

    # a daemon error is JSON too, as with --json after the command
    missing = daemon.cli("--json", "tasks", "done", "no such task")
    assert missing.returncode == 4
    assert json.loads(missing.stdout)["error"]["code"] == "not_found"

    # mcp has no --json: it is refused by the command that does not take it
    refused = daemon.cli("--json", "mcp")
    assert refused.returncode == 2
    assert "No such option: --json" in refused.stdout + refused.stderr
    assert "Possible options: --version" not in refused.stdout + refused.stderr
