"""The daemon's log keeps routine chatter out at INFO: watchfiles' "1 change
detected" for every batch of file events, and SQLite's notice of each
automatic index its planner builds. Both come back at debug."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from conftest import Daemon, Env

# Runs in a fresh interpreter: SQLite's log can only be forwarded before the
# library is first used, which in the test process has long happened.
SCRIPT = """
import logging
import sys

import apsw

from openmemoryd.logs import setup_logging

setup_logging(sys.argv[1])
conn = apsw.Connection(":memory:")
conn.execute("CREATE TABLE a(x); CREATE TABLE b(y)")
conn.execute(
    "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100) "
    "INSERT INTO a SELECT i FROM n"
)
conn.execute("INSERT INTO b SELECT x FROM a")
conn.execute("SELECT count(*) FROM a, b WHERE a.x = b.y").fetchall()  # an automatic index
logging.getLogger("watchfiles.main").info("1 change detected")
logging.getLogger("watchfiles.main").warning("watchfiles warns")
logging.getLogger("openmemoryd.engine").info("an openmemoryd line")
if len(sys.argv) > 2:  # a SIGHUP that turns log_level to debug sets the root level so
    logging.getLogger().setLevel(logging.DEBUG)
    logging.getLogger("watchfiles.main").info("2 changes detected")
"""


def logged(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stderr


def test_at_info_neither_watchfiles_nor_automatic_indexes_are_logged() -> None:
    log = logged("info")
    assert "change detected" not in log
    assert "automatic index" not in log
    assert "(284)" not in log
    # what matters still is
    assert "WARNING watchfiles.main: watchfiles warns" in log
    assert "INFO openmemoryd.engine: an openmemoryd line" in log


def test_at_debug_both_are_logged() -> None:
    log = logged("debug")
    assert "INFO watchfiles.main: 1 change detected" in log
    assert "DEBUG openmemoryd.sqlite: sqlite (284): automatic index on " in log


def test_a_reload_to_debug_brings_watchfiles_back() -> None:
    log = logged("info", "reload")
    assert "1 change detected" not in log
    assert "INFO watchfiles.main: 2 changes detected" in log


def _edit_until_indexed(daemon: Daemon, word: str) -> None:
    """Write a file behind the daemon's back and wait until its watcher has
    reported it and the file is searchable."""
    memory = daemon.env.workspace / "memory"
    memory.mkdir(exist_ok=True)
    (memory / f"{word}.md").write_text(f"# Note\n\nthe {word} was edited by hand\n")
    deadline = time.monotonic() + 20
    while word not in daemon.cli("search", word, "--fresh").stdout:
        assert time.monotonic() < deadline, "the watcher never reported the edit"
        time.sleep(0.1)


@pytest.mark.e2e
def test_a_daemon_at_info_does_not_log_each_file_event(daemon: Daemon) -> None:
    _edit_until_indexed(daemon, "quokka")
    daemon.stop()
    log = daemon.log()
    assert "watchfiles" not in log, log
    assert "ready on" in log  # the daemon did log, at INFO


@pytest.mark.e2e
def test_a_daemon_at_debug_logs_its_file_events(env: Env) -> None:
    daemon = Daemon(env).start("--log-level", "debug")
    try:
        _edit_until_indexed(daemon, "wombat")
    finally:
        daemon.stop()
    assert "watchfiles.main: " in daemon.log()
