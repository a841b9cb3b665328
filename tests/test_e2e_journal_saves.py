"""End to end: saves that empty the file first, and stale saves of TASKS.md.

A real daemon, the real client and CLI. Two holes the append journal had,
both found by a user's tests, both silent (`status`: no issues; `restore
--dry-run`: nothing missing):

* a save that truncates the file, then writes its copy: an append landing
  while the file was empty dropped the journal's earlier entries, among them
  the appends the copy lacked;
* a save of ``memory/TASKS.md`` based on a copy read before `tasks add`,
  `session-end` or `tasks done`: task changes were not journalled at all.

Where the order matters the test drives it: it is the editor, and each
client call returns only once its write is on disk and journalled, so the
append lands where the test says. `restore` runs the keeper's judgement in
the daemon on demand (a stale save found on the way is repaired as the
keeper would), so the test need not guess when the keeper's pass comes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from datetime import date
from pathlib import Path

import pytest

from conftest import Daemon, Env
from test_e2e_journal import start as journal_daemon
from test_e2e_journal import wait_for as wait_until_true

pytestmark = pytest.mark.e2e

TODAY = date.today().isoformat()
WITHIN_S = 20.0


def start(env: Env, settle_s: float = 300.0) -> Daemon:
    # Nothing here may settle while it runs (a settled line is the person's).
    return journal_daemon(env, settle_s)


def wait_for(predicate: object, timeout: float = WITHIN_S) -> bool:
    return wait_until_true(predicate, timeout)


def issues(daemon: Daemon) -> list[str]:
    with daemon.client() as client:
        return [i for i in client.status().issues if "after an external rewrite" in i]


# ---------------------------------------------------------------- saves that truncate


def test_appends_a_slow_truncating_save_overwrote_come_back(env: Env) -> None:
    daemon = start(env)
    try:
        with daemon.client() as client:
            first = client.append("agent line 1")
            path = env.workspace / first.path
            copy = path.read_bytes()  # the editor reads the file...
            client.append("agent line 2")  # ...an agent appends...
            fd = os.open(path, os.O_WRONLY | os.O_TRUNC)  # ...the save truncates...
            try:
                client.append("agent line 3")  # ...agents append to the empty file...
                client.append("agent line 4")
                # Judged now, inside the save: nothing is missing, nothing dropped.
                assert client.restore(dry_run=True).blocks == ()
                journal = (env.state_dir / "journal" / "default.json").read_bytes()
                assert b"agent line 2" in journal
            finally:
                os.write(fd, copy + b"a line of my own\n")  # ...and writes its copy
                os.close(fd)
            assert b"agent line 2" not in path.read_bytes()
            client.restore()  # what the keeper does on its next pass
        text = path.read_text("utf-8")
        lines = [f"agent line {n}\n" for n in (1, 2, 3, 4)] + ["a line of my own\n"]
        assert [text.count(line) for line in lines] == [1] * 5, text
        assert issues(daemon) == []
    finally:
        daemon.stop()


# The other process: five saves that truncate, hold the file empty 250 ms,
# then write the copy they read 100 ms before truncating, plus a line.
TRUNCATING_SAVER = """
import sys, time
path = sys.argv[1]
for k in range(5):
    time.sleep(0.6)
    with open(path, encoding="utf-8") as f:
        copy = f.read()
    time.sleep(0.1)
    with open(path, "w", encoding="utf-8") as f:
        time.sleep(0.25)
        f.write(copy + f"person line {k}\\n")
"""


def test_appends_survive_slow_truncating_saves_as_the_user_ran_them(env: Env) -> None:
    """The user's report: an append every 30 ms; 4 of 205 lost, silently."""
    daemon = start(env)
    try:
        with daemon.client() as client:
            first = client.append("agent line 000")
        path = env.workspace / first.path
        acknowledged = ["agent line 000"]
        errors: list[BaseException] = []
        done = threading.Event()

        def appender() -> None:
            try:
                with daemon.client() as client:
                    n = 1
                    while not done.is_set():
                        client.append(f"agent line {n:03d}")
                        acknowledged.append(f"agent line {n:03d}")
                        n += 1
                        time.sleep(0.03)
            except BaseException as exc:  # reported below, in the test's thread
                errors.append(exc)

        thread = threading.Thread(target=appender)
        thread.start()
        try:
            saver = subprocess.run(
                [sys.executable, "-c", TRUNCATING_SAVER, str(path)],
                capture_output=True,
                timeout=120,
            )
        finally:
            done.set()
            thread.join(timeout=60)
        assert saver.returncode == 0, saver.stderr
        assert not errors

        def all_once() -> bool:
            lines = path.read_text("utf-8").splitlines()
            return all(lines.count(line) == 1 for line in acknowledged)

        if not wait_for(all_once):
            lines = path.read_text("utf-8").splitlines()
            wrong = {line: lines.count(line) for line in acknowledged if lines.count(line) != 1}
            pytest.fail(f"times in the file, if not once: {wrong}\n{daemon.log()[-3000:]}")
        text = path.read_text("utf-8")
        assert all(text.count(f"person line {k}\n") == 1 for k in range(5))
        assert "restored" in daemon.log()  # the saves did overwrite appends
        assert issues(daemon) == []
    finally:
        daemon.stop()


def test_a_file_emptied_on_purpose_stays_so_when_an_agent_writes_it_again(env: Env) -> None:
    daemon = start(env)
    try:
        with daemon.client() as client:
            client.append("old line 1", path="memory/scratch.md")
            client.append("old line 2", path="memory/scratch.md")
            path = env.workspace / "memory" / "scratch.md"
            path.write_bytes(b"")  # `: > scratch.md`
            client.append("fresh line", path="memory/scratch.md")
            journal = env.state_dir / "journal" / "default.json"
            assert wait_for(lambda: b"old line" not in journal.read_bytes()), daemon.log()
            assert client.restore(dry_run=True).blocks == ()
        assert path.read_text("utf-8") == "fresh line\n"
        assert issues(daemon) == []
        assert "restored" not in daemon.log()
    finally:
        daemon.stop()


# ---------------------------------------------------------------- TASKS.md


def tasks_path(env: Env) -> Path:
    return env.workspace / "memory" / "TASKS.md"


def stale_save(path: Path, copy: bytes, own: str = "- [ ] a task typed by hand\n") -> None:
    """An editor's save: the copy it read plus the person's line, renamed over."""
    temp = path.with_name(path.name + ".swp")
    temp.write_bytes(copy + own.encode())
    temp.replace(path)


def listed(daemon: Daemon, *flags: str) -> list[dict[str, object]]:
    tasks: list[dict[str, object]] = daemon.cli_json("tasks", *flags)["tasks"]
    return tasks


def test_tasks_an_agent_added_survive_a_stale_save_of_the_task_list(env: Env) -> None:
    """The user's report, command for command."""
    daemon = start(env)
    try:
        assert daemon.cli("tasks", "add", "water the plants").returncode == 0
        path = tasks_path(env)
        copy = path.read_bytes()  # cp TASKS.md /tmp/stale
        added = daemon.cli("tasks", "add", "zqtaskA renew the TLS certificate")
        assert added.returncode == 0, added.stderr
        ended = daemon.cli("session-end", "--next", "zqtaskB rotate the API keys")
        assert ended.returncode == 0, ended.stderr
        stale_save(path, copy)
        assert b"zqtask" not in path.read_bytes()

        def both_back() -> bool:
            text = path.read_text("utf-8")
            return "zqtaskA" in text and "zqtaskB" in text

        assert wait_for(both_back), daemon.log()[-3000:]  # the keeper, on its own
        text = path.read_text("utf-8")
        assert text.count("zqtaskA renew the TLS certificate") == 1, text
        assert text.count("zqtaskB rotate the API keys") == 1, text
        assert "a task typed by hand" in text
        assert [t["text"] for t in listed(daemon)] == [
            "water the plants",
            "zqtaskA renew the TLS certificate",
            "zqtaskB rotate the API keys",
            "a task typed by hand",
        ]
        assert wait_for(lambda: "restored 2 task change(s) to memory/TASKS.md" in daemon.log())
        assert issues(daemon) == []
        dry = daemon.cli("restore", "--dry-run")
        assert "Nothing is missing" in dry.stdout, dry.stdout
    finally:
        daemon.stop()


def test_a_done_marking_lost_to_a_stale_save_is_made_again(env: Env) -> None:
    daemon = start(env)
    try:
        added = daemon.cli_json("tasks", "add", "ship the release")
        task_id = added["changed"][0]["id"]
        path = tasks_path(env)
        copy = path.read_bytes()
        done = daemon.cli_json("tasks", "done", task_id)
        stale_save(path, copy)
        with daemon.client() as client:
            client.restore()  # the keeper's judgement, now
        (again,) = [t for t in listed(daemon, "--all") if t["text"] == "ship the release"]
        assert again["id"] == task_id
        assert again["done"] is True
        assert again["completed"] == done["changed"][0]["completed"]
    finally:
        daemon.stop()


def test_a_task_change_lost_to_an_edited_save_is_reported_and_restored(env: Env) -> None:
    daemon = start(env)
    try:
        added = daemon.cli_json("tasks", "add", "ship the release")
        path = tasks_path(env)
        copy = path.read_bytes()
        daemon.cli_json("tasks", "done", added["changed"][0]["id"])
        # not merely stale: the person also renamed the heading
        stale_save(path, copy.replace(b"# Tasks\n", b"# Tasks of the week\n"), own="")
        expected = (
            "1 task change missing from memory/TASKS.md after an external rewrite "
            "(omem-client restore makes them again)"
        )
        assert wait_for(lambda: expected in issues(daemon)), daemon.log()[-3000:]
        assert expected in daemon.cli("doctor").stdout
        dry = daemon.cli("restore", "--dry-run")
        assert "task marked done: ship the release" in dry.stdout, dry.stdout
        assert [t["done"] for t in listed(daemon, "--all")] == [False]
        done = daemon.cli("restore")
        assert done.returncode == 0, done.stderr
        assert "Restored memory/TASKS.md#L" in done.stdout
        assert [t["done"] for t in listed(daemon, "--all")] == [True]
        assert "# Tasks of the week" in path.read_text("utf-8")
        assert issues(daemon) == []
    finally:
        daemon.stop()


def test_the_daemons_own_task_changes_and_a_persons_edits_are_not_undone(env: Env) -> None:
    daemon = start(env)
    try:
        first = daemon.cli_json("tasks", "add", "water the plants", "feed the cat", "do the dishes")
        plants, _, dishes = (t["id"] for t in first["changed"])
        daemon.cli_json("tasks", "done", plants)
        daemon.cli_json("tasks", "reopen", plants)
        daemon.cli_json("tasks", "remove", dishes)
        path = tasks_path(env)
        # a person ticks a task off by hand: the task an agent added is still there
        path.write_text(path.read_text("utf-8").replace("- [ ] feed", "- [x] feed"), "utf-8")
        time.sleep(1.5)  # three passes of the keeper
        with daemon.client() as client:
            assert client.restore(dry_run=True).blocks == ()
        text = path.read_text("utf-8")
        assert "- [ ] water the plants" in text
        assert "- [x] feed the cat" in text
        assert "do the dishes" not in text
        assert issues(daemon) == []
        assert "restored" not in daemon.log()
        entries = json.loads((env.state_dir / "journal" / "default.json").read_bytes())
        kept = [(e["task"], e["block"].split(" ➕")[0]) for e in entries]
        assert kept == [  # each superseded change left the journal
            ("add", "- [ ] water the plants"),
            ("add", "- [ ] feed the cat"),
            ("reopen", "- [ ] water the plants"),
            ("remove", "- [ ] do the dishes"),
        ]
    finally:
        daemon.stop()
