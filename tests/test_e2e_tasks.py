"""End to end: session-end and tasks through the real daemon and the real CLI.

What an agent (and the person reading along) relies on: the journal lands in
today's daily file and is searchable at once, next steps show up in
`omem-client tasks`, tasks can be closed and reopened by id or text, a
hand-edited TASKS.md keeps every line, and bad input is refused with a clear
message while the files stay exactly as they were.
"""

from __future__ import annotations

import fcntl
import json
import re
import threading
import time
from datetime import date
from pathlib import Path

import pytest

from conftest import Daemon
from omem_client import BadRequestError, ForbiddenError, NotFoundError

pytestmark = pytest.mark.e2e

TODAY = date.today().isoformat()


def today_file(daemon: Daemon) -> Path:
    return daemon.env.workspace / "memory" / f"{TODAY}.md"


def tasks_file(daemon: Daemon) -> Path:
    return daemon.env.workspace / "memory" / "TASKS.md"


def test_session_end_journals_and_next_steps_become_open_tasks(daemon: Daemon) -> None:
    ended = daemon.cli(
        "session-end",
        "--request",
        "Wire the heron telemetry exporter",
        "--learned",
        "The exporter batches spans every 5 seconds",
        "--learned",
        "Staging uses port 4318",
        "--completed",
        "Exporter skeleton",
        "--next",
        "Add retries to the heron exporter",
        "--next",
        "Document the staging port",
        "--agent",
        "claude",
        "--session",
        "s-42",
    )
    assert ended.returncode == 0, ended.stderr
    assert ended.stdout.startswith(f"Journal written to memory/{TODAY}.md#L")
    assert "New task: " in ended.stdout
    assert "Add retries to the heron exporter" in ended.stdout

    daily = today_file(daemon).read_text("utf-8")
    assert daily.startswith(f"# {TODAY}\n\n## Session end ")
    assert re.search(r"## Session end \d\d:\d\d \(agent claude, session s-42\)\n", daily)
    assert "### Request\nWire the heron telemetry exporter\n" in daily
    learned = "- The exporter batches spans every 5 seconds\n- Staging uses port 4318\n"
    assert f"### Learned\n{learned}" in daily
    assert "### Completed\n- Exporter skeleton\n" in daily
    assert daily.endswith(
        "### Next steps\n- Add retries to the heron exporter\n- Document the staging port\n"
    )

    listed = daemon.cli("tasks")
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert re.fullmatch(
        rf"  [0-9a-f]{{6}}  \[ \] Add retries to the heron exporter  \(added {TODAY}\)", lines[0]
    )
    assert "Document the staging port" in lines[1]
    assert lines[-1] == "2 open, 0 done"

    # the journal and the tasks are searchable as soon as the commands return
    with daemon.client() as client:
        hits = client.search("heron telemetry exporter spans").results
        assert any(h.path == f"memory/{TODAY}.md" for h in hits)
        assert any(h.path == "memory/TASKS.md" for h in client.search("staging port").results)

    # the next session's primer shows the open tasks, with the ids that close them
    task_id = lines[0].split()[0]
    primer = daemon.cli("primer")
    assert f"- [ ] Add retries to the heron exporter (id {task_id})" in primer.stdout


def test_session_end_journals_a_next_step_given_twice_once(daemon: Daemon) -> None:
    """The task list kept one task of a step given twice, and the journal
    listed it twice (spelt as given); now both list it once, the first
    spelling, and a step already open is journalled once too."""
    with daemon.client() as client:
        client.tasks("add", ["Renew the TLS certificate"])
    ended = daemon.cli(
        "session-end",
        "--request",
        "Rotate the keys",
        *("--next", "Rotate the staging keys"),
        *("--next", "rotate  the Staging keys"),
        *("--next", "- [ ] Rotate the staging keys"),
        *("--next", "Renew the TLS certificate"),
        *("--next", "renew the tls certificate"),
        "--json",
    )
    assert ended.returncode == 0, ended.stderr
    reply = json.loads(ended.stdout)
    assert [t["text"] for t in reply["tasks_added"]] == ["Rotate the staging keys"]
    assert [t["text"] for t in reply["tasks_existing"]] == ["Renew the TLS certificate"]

    daily = today_file(daemon).read_text("utf-8")
    assert daily.endswith(
        "### Next steps\n- Rotate the staging keys\n- Renew the TLS certificate\n"
    )
    assert daily.lower().count("rotate the staging keys") == 1
    listed = daemon.cli("tasks").stdout
    assert listed.count("Rotate the staging keys") == 1
    assert listed.splitlines()[-1] == "2 open, 0 done"


def test_tasks_done_reopen_remove_by_id_and_text_keep_hand_edits(daemon: Daemon) -> None:
    with daemon.client() as client:
        added = client.tasks("add", ["Call the plumber", "Renew the passport"])
    assert [t.text for t in added.changed] == ["Call the plumber", "Renew the passport"]
    plumber = added.changed[0]

    # a person edits the file between two calls: prose, a nested note, CRLF
    path = tasks_file(daemon)
    edited = (
        path.read_bytes().replace(
            b"- [ ] Call the plumber",
            b"Some notes of mine.\r\n\r\n- [ ] Call the plumber",
        )
        + b"<!-- my own footer -->"
    )
    path.write_bytes(edited)

    done = daemon.cli("tasks", "done", plumber.id, "--json")
    assert done.returncode == 0, done.stderr
    reply = json.loads(done.stdout)
    assert reply["changed"][0]["id"] == plumber.id
    assert reply["changed"][0]["completed"] == TODAY
    after = path.read_bytes()
    assert b"Some notes of mine.\r\n\r\n" in after
    assert b"## Done\n<!-- my own footer -->\n- [x] Call the plumber" in after
    assert f"- [x] Call the plumber ➕ {TODAY} ✅ {TODAY}".encode() in after.split(b"## Done")[1]

    again = daemon.cli("tasks", "done", "plumber")
    assert again.returncode == 0
    assert again.stdout.startswith("Already done: ")

    shown = daemon.cli("tasks", "--all")
    assert f"[x] Call the plumber  (added {TODAY}, done {TODAY})" in shown.stdout
    assert daemon.cli("tasks", "--done").stdout.count("[x]") == 1

    reopened = daemon.cli("tasks", "reopen", "PLUMBER")
    assert reopened.returncode == 0, reopened.stderr
    assert reopened.stdout.startswith(f"Reopened: {plumber.id}  [ ] Call the plumber")
    assert "✅".encode() not in path.read_bytes()

    removed = daemon.cli("tasks", "remove", "passport")
    assert removed.returncode == 0, removed.stderr
    assert b"passport" not in path.read_bytes()
    assert daemon.cli("tasks").stdout.splitlines()[-1] == "1 open, 0 done"

    missing = daemon.cli("tasks", "done", "dentist")
    assert missing.returncode == 4
    assert "not_found" in missing.stderr
    assert "dentist" in missing.stderr


def test_a_change_is_all_or_nothing_and_duplicates_are_skipped(daemon: Daemon) -> None:
    with daemon.client() as client:
        client.tasks("add", ["Water the plants", "Wash the car"])
        before = tasks_file(daemon).read_bytes()
        with pytest.raises(NotFoundError):
            client.tasks("done", ["plants", "feed the cat"])
        with pytest.raises(BadRequestError, match="matches 2 tasks"):
            client.tasks("done", ["Wa"])
        assert tasks_file(daemon).read_bytes() == before

        ended = client.session_end(
            completed=["water the  PLANTS", "something unrelated"],
            next_steps=["Wash the car", "- [ ] Buy stamps"],
        )
    assert [t.text for t in ended.tasks_done] == ["Water the plants"]
    assert ended.tasks_done[0].completed == TODAY
    assert [t.text for t in ended.tasks_existing] == ["Wash the car"]
    assert [t.text for t in ended.tasks_added] == ["Buy stamps"]
    text = tasks_file(daemon).read_text("utf-8")
    assert text.count("Wash the car") == 1
    assert "- [x] Water the plants" in text


def test_listing_without_a_file_is_empty_and_creates_nothing(daemon: Daemon) -> None:
    listed = daemon.cli("tasks")
    assert listed.returncode == 0
    assert listed.stdout == "No open tasks in memory/TASKS.md.\n0 open, 0 done\n"
    assert not tasks_file(daemon).exists()
    with daemon.client() as client:
        with pytest.raises(NotFoundError, match=r"there are no tasks to mark done$"):
            client.tasks("done", ["anything"])
        with pytest.raises(NotFoundError, match=r"there are no tasks to reopen$"):
            client.tasks("reopen", ["anything"])
    # a session end with only a journal leaves the tasks alone
    ended = daemon.cli("session-end", "--learned", "Nothing to follow up", "--json")
    assert ended.returncode == 0, ended.stderr
    assert json.loads(ended.stdout)["indexed"] is True
    assert not tasks_file(daemon).exists()


def test_tasks_given_as_separate_words_are_refused_but_a_chinese_phrase_is_a_task(
    daemon: Daemon,
) -> None:
    before = tasks_file(daemon).read_bytes() if tasks_file(daemon).exists() else None
    for words in (("Fix", "the", "login", "bug"), ("写", "周报")):
        refused = daemon.cli("tasks", "add", *words)
        assert refused.returncode == 2, refused
        assert "ambiguous" in refused.stderr
    assert (tasks_file(daemon).read_bytes() if tasks_file(daemon).exists() else None) == before
    added = daemon.cli("tasks", "add", "修复打印机", "Починить отопление", "Ship it", "--json")
    assert added.returncode == 0, added.stderr
    assert [t["text"] for t in json.loads(added.stdout)["changed"]] == [
        "修复打印机",
        "Починить отопление",
        "Ship it",
    ]
    # Chinese has no spaces: short tasks, each quoted, are tasks (写周报, 买菜)
    short = daemon.cli("tasks", "add", "写周报", "买菜", "--json")
    assert short.returncode == 0, short.stderr
    assert [t["text"] for t in json.loads(short.stdout)["changed"]] == ["写周报", "买菜"]


def test_bad_input_is_refused_and_nothing_is_written(daemon: Daemon) -> None:
    nothing = daemon.cli("session-end")
    assert nothing.returncode == 2
    assert "nothing to record" in nothing.stderr
    with daemon.client() as client:
        with pytest.raises(BadRequestError, match="nothing to record"):
            client.session_end(request="   ")
        with pytest.raises(BadRequestError, match="empty"):
            client.session_end(learned=["ok", ""])
        with pytest.raises(BadRequestError, match="length"):
            client.session_end(next_steps=["x" * 501])
        with pytest.raises(BadRequestError, match="length"):
            client.session_end(request="y" * 9000)
        with pytest.raises(BadRequestError, match="needs at least one task"):
            client.tasks("done")
        assert not today_file(daemon).exists()

        # a TASKS.md that is not UTF-8 text is refused and left byte for byte
        broken = b"# Tasks\n- [ ] caf\xe9 au lait\n"
        tasks_file(daemon).parent.mkdir(exist_ok=True)
        tasks_file(daemon).write_bytes(broken)
        with pytest.raises(ForbiddenError, match="not valid UTF-8"):
            client.tasks("add", ["anything"])
        with pytest.raises(ForbiddenError, match="not valid UTF-8"):
            client.tasks()
        with pytest.raises(ForbiddenError, match="not valid UTF-8"):
            client.session_end(request="wrap up", next_steps=["later"])
    assert tasks_file(daemon).read_bytes() == broken
    assert not today_file(daemon).exists()  # no journal without its tasks
    cli = daemon.cli("tasks")
    assert cli.returncode == 4
    assert "memory/TASKS.md is not valid UTF-8" in cli.stderr
    with daemon.client() as client:  # the daemon is fine and still serving
        assert client.status().pid == daemon.proc.pid  # type: ignore[union-attr]


def test_the_daemon_waits_for_the_file_lock_and_loses_nothing(daemon: Daemon) -> None:
    """A cooperating tool holding TASKS.md's lock makes the daemon wait; what
    the tool wrote while holding it is in the file after the daemon's edit."""
    with daemon.client() as client:
        client.tasks("add", ["First task"])
    path = tasks_file(daemon)
    results: list[object] = []
    with path.open("ab") as held:
        fcntl.flock(held.fileno(), fcntl.LOCK_EX)

        def add_second() -> None:
            with daemon.client() as client:
                results.append(client.tasks("add", ["Second task"]))

        worker = threading.Thread(target=add_second)
        worker.start()
        time.sleep(0.5)
        assert worker.is_alive(), "the daemon wrote without the lock"
        held.write(b"- [ ] Written by another tool\n")
        held.flush()
        fcntl.flock(held.fileno(), fcntl.LOCK_UN)
    worker.join(15)
    assert results, "the daemon did not finish after the lock was released"
    text = path.read_text("utf-8")
    for task in ("First task", "Written by another tool", "Second task"):
        assert text.count(task) == 1, text
