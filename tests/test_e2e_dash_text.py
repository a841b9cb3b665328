"""End to end: free text that starts with "-", through the real client and daemon.

A Markdown list item is the most natural note to append or log, and queries
start with a dash too ("-ss 00:01:00", an ffmpeg option someone noted down);
click took each for an unknown option and exited 2 with ``No such option: -``.
Every command of free text (append, log, search, recall, tasks) now takes
such a word as text, and an option-shaped word it does not know is still an
error, which says how to pass it as text.
"""

from __future__ import annotations

import json
from datetime import date

import pytest

from conftest import Daemon

pytestmark = pytest.mark.e2e


def test_a_list_item_is_appended_and_logged_as_written(daemon: Daemon) -> None:
    appended = daemon.cli("append", "- пункт списка", "--json")
    assert appended.returncode == 0, appended.stderr
    path = daemon.env.workspace / json.loads(appended.stdout)["path"]
    assert path.read_text("utf-8").endswith("- пункт списка\n")
    assert path.name == f"{date.today().isoformat()}.md"
    ruled = daemon.cli("append", "---", "--path", "memory/rules.md")
    assert ruled.returncode == 0, ruled.stderr
    assert (daemon.env.workspace / "memory" / "rules.md").read_text("utf-8") == "---\n"

    logged = daemon.cli("log", "- Мы решили использовать Redis для кэша сессий", "--json")
    assert logged.returncode == 0, logged.stderr
    reply = json.loads(logged.stdout)
    assert (reply["status"], reply["memory_type"]) == ("written", "decision")
    memory = (daemon.env.workspace / reply["path"]).read_text("utf-8")
    assert memory.splitlines()[reply["line"] - 1].endswith("Redis для кэша сессий")


def test_a_query_or_a_task_that_starts_with_a_dash_is_searched_and_added(daemon: Daemon) -> None:
    daemon.cli("append", "Trim a clip: ffmpeg -ss 00:01:00 -i in.mp4 -t 30 out.mp4")
    found = daemon.cli("search", "-ss 00:01:00", "-n", "1")
    assert found.returncode == 0, found.stderr
    assert "ffmpeg -ss 00:01:00" in found.stdout
    recalled = daemon.cli("recall", "-ss 00:01:00 ffmpeg trim clip", "--json")
    assert recalled.returncode == 0, recalled.stderr

    added = daemon.cli("tasks", "add", "- renew the TLS certificate", "--json")
    assert added.returncode == 0, added.stderr
    assert "renew the TLS certificate" in (daemon.env.workspace / "memory/TASKS.md").read_text()


def test_an_unknown_option_is_refused_saying_how_to_pass_it_as_text(daemon: Daemon) -> None:
    before = sorted(p.name for p in (daemon.env.workspace / "memory").glob("*"))
    refused = daemon.cli("append", "-x")
    assert refused.returncode == 2
    assert "No such option: -x" in refused.stderr
    # the box around the message wraps it; the words are all there
    shown = " ".join(line.strip("│ ") for line in refused.stderr.splitlines())
    assert "Put -- before it:" in shown
    assert "append -- -x" in shown
    as_json = daemon.cli("append", "-x", "--json")
    assert as_json.returncode == 2
    error = json.loads(as_json.stdout)["error"]
    assert error["code"] == "usage"
    assert error["message"].startswith("No such option: -x. Text starting with '-'? Put -- ")
    assert error["message"].endswith(" append -- -x")  # the command as it was run
    assert sorted(p.name for p in (daemon.env.workspace / "memory").glob("*")) == before

    passed = daemon.cli("append", "--", "-x")  # as the error says
    assert passed.returncode == 0, passed.stderr
