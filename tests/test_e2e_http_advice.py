"""End to end: the advice in the HTTP API's replies names its requests.

Through the real daemon with ``--http``: `/status` listed lines an external
rewrite removed with "(omem-client restore re-adds them)", and `/doctor`'s
fixes said "omem-client restore --dry-run shows them" and "changes are only
indexed by `omem-client sync`", commands an HTTP caller (a remote agent, a
web UI) cannot run. Here each names the request that does it, the requests
named do what they say, and the socket (the CLI's surface) keeps the
commands.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from conftest import KEYWORD_ONLY, Daemon, Env
from test_e2e_http import free_port, wait_http

pytestmark = pytest.mark.e2e

# Changes are indexed only when asked: the doctor says how, and the test asks.
ON_REQUEST = KEYWORD_ONLY + '[sync]\nwatch = "off"\ninterval_minutes = 0\n'
NOTE = "after editing the notes by hand, run `omem-client sync`"
COMMAND = re.compile(r"omem-client [a-z]|`openmemoryd [a-z]")


@pytest.fixture
def http_daemon(env: Env) -> Iterator[tuple[Daemon, str]]:
    env.write_config(ON_REQUEST)
    handle = Daemon(env).start("--http", f"127.0.0.1:{free_port()}")
    try:
        yield handle, wait_http(handle)
    finally:
        if handle.proc is not None and handle.proc.poll() is None:
            handle.stop()


def check(doctor: dict[str, Any], name: str) -> dict[str, Any]:
    (found,) = [c for c in doctor["checks"] if c["name"] == name]
    return found


def test_status_and_doctor_name_requests_that_do_what_they_say(
    http_daemon: tuple[Daemon, str],
) -> None:
    daemon, url = http_daemon
    with httpx.Client(base_url=url, timeout=30) as web, daemon.client() as sock:
        first = web.post("/append", json={"text": "first note"}).json()
        web.post("/append", json={"text": "second note\nwith two lines"})
        web.post("/append", json={"text": NOTE})
        # an editor saves a version that also changed what came before the
        # appends: not a stale rewrite (which the daemon repairs), so the user decides
        (daemon.env.workspace / first["path"]).write_text("# renamed day\n\nfirst note\n", "utf-8")

        doctor = web.get("/doctor").json()
        watcher = check(doctor, "watcher")
        assert watcher["status"] == "warn"
        assert watcher["detail"].endswith(
            "changes are only indexed by POST /sync (sync.interval_minutes = 0)"
        )
        # following it: the sync finds the rewrite
        assert web.post("/sync", json={}).status_code == 200

        issues = web.get("/status").json()["issues"]
        (missing,) = [i for i in issues if "missing from" in i]
        assert missing == (
            f"3 appended lines missing from {first['path']} after an external rewrite "
            "(POST /restore re-adds them)"
        )
        doctor = web.get("/doctor").json()
        appends = check(doctor, "appends")
        assert appends["status"] == "warn"
        assert appends["detail"] == missing
        assert appends["fix"] == (
            'POST /restore with {"dry_run": true} shows them; POST /restore re-adds them'
        )
        for said in (*issues, *(c["detail"] for c in doctor["checks"])):
            assert not COMMAND.search(said), said
        for said in (c["fix"] for c in doctor["checks"] if c["fix"]):
            assert not COMMAND.search(said), said

        # the socket is the CLI's surface: its advice stays a command
        (socket_missing,) = [i for i in sock.status().issues if "missing from" in i]
        assert socket_missing.endswith("(omem-client restore re-adds them)")
        fixes = {c.name: c.fix for c in sock.doctor().checks}
        assert fixes["appends"] == (
            "omem-client restore --dry-run shows them; omem-client restore re-adds them"
        )

        # the requests named do what they say
        shown = web.post("/restore", json={"dry_run": True}).json()
        assert shown["dry_run"] is True
        assert any("second note" in block["text"] for block in shown["blocks"])
        assert web.post("/restore", json={}).status_code == 200
        deadline = time.monotonic() + 10
        while any("missing from" in i for i in web.get("/status").json()["issues"]):
            assert time.monotonic() < deadline, "the restore left the issue"
            time.sleep(0.1)
        text = web.get("/get", params={"path": first["path"]}).json()["text"]
        assert "with two lines" in text
        # and what the memory holds is as the user wrote it, command and all
        assert NOTE in text
