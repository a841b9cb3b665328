"""End to end: a config file broken under a running daemon never traps the user.

Through the real daemon, `omem-client`, `openmemoryd` and the HTTP API: a
typo saved into the file and a SIGHUP leave the daemon serving with its
previous config, and `status` (socket and HTTP alike) and both doctors say
so with the fix; a fixed file and another SIGHUP clear it; `openmemoryd
stop` stops the daemon although the file does not load, saying it is
broken, whether the socket comes from the environment or from the broken
file's own ``socket`` key. Changes that load but need a restart are an
issue too, until a restart or a revert.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable

import httpx
import pytest

from conftest import KEYWORD_ONLY, Daemon, Env, run_openmemoryd
from openmemoryd.config.reload import RELOAD_FAILED, WAITS_FOR_RESTART
from test_e2e_http import free_port, wait_http

pytestmark = pytest.mark.e2e

TYPO = KEYWORD_ONLY + "[recall]\nmin_score = 0.35”\n"  # a smart quote: not TOML


def issues(daemon: Daemon) -> list[str]:
    with daemon.client() as client:
        return list(client.status().issues)


def wait_until(daemon: Daemon, what: str, done: Callable[[list[str]], bool]) -> list[str]:
    """The daemon's status issues once *done* holds for them (a SIGHUP is async)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        now = issues(daemon)
        if done(now):
            return now
        time.sleep(0.05)
    pytest.fail(f"status never showed {what}: {issues(daemon)}\n{daemon.log()}")


def reload_failure(now: list[str]) -> str | None:
    return next((issue for issue in now if issue.startswith(RELOAD_FAILED)), None)


def hup(daemon: Daemon) -> None:
    assert daemon.proc is not None
    daemon.proc.send_signal(signal.SIGHUP)


def checks(result: subprocess.CompletedProcess[str]) -> dict[str, dict[str, str]]:
    return {check["name"]: check for check in json.loads(result.stdout)["checks"]}


def test_a_typo_and_a_sighup_show_in_status_and_stop_still_stops(
    env: Env, launched: list[Daemon]
) -> None:
    daemon = Daemon(env).start("--http", f"127.0.0.1:{free_port()}")
    launched.append(daemon)
    url = wait_http(daemon)
    assert daemon.proc is not None
    pid = daemon.proc.pid

    env.write_config(TYPO)
    hup(daemon)
    failure = reload_failure(wait_until(daemon, "the failed reload", reload_failure))
    assert failure is not None
    assert f"invalid config file {env.config_file}" in failure
    assert "line 4, column 17" in failure
    assert "the daemon still runs with the previous config" in failure
    assert f"kill -HUP {pid} / systemctl --user reload openmemoryd" in failure

    shown = daemon.cli("status")
    assert shown.returncode == 0
    assert "Issues:\n  ! the config file did not load at " in shown.stdout
    with httpx.Client(base_url=url, timeout=30) as web:  # one RPC: the same issue
        assert failure in web.get("/status").json()["issues"]

    outside = run_openmemoryd(env, "doctor", "--json")
    assert outside.returncode == 1
    found = checks(outside)
    assert found["config"]["status"] == "fail"
    assert f"kill -HUP {pid}" in found["config"]["fix"]
    assert found["daemon"]["status"] == "ok"
    assert "with the config it loaded before the file broke" in found["daemon"]["detail"]
    assert found["reload"]["status"] == "warn"
    indexed = run_openmemoryd(env, "index")  # the daemon's work: it has a config
    assert indexed.returncode == 0, indexed.stderr
    assert indexed.stdout.startswith("Indexed by the running daemon")
    assert "invalid config file" in indexed.stderr
    inside = daemon.cli("doctor", "--json")
    assert inside.returncode == 1
    assert checks(inside)["config"]["status"] == "fail"
    assert checks(inside)["reload"]["status"] == "warn"

    env.write_config(KEYWORD_ONLY)
    hup(daemon)
    wait_until(daemon, "the issue gone", lambda now: reload_failure(now) is None)
    assert "reload" not in checks(daemon.cli("doctor", "--json"))
    with daemon.client() as client:
        client.append("the kettle descales with citric acid", path="memory/kettle.md")
        assert client.search("kettle citric").results  # still serving

    env.write_config(TYPO)
    hup(daemon)
    wait_until(daemon, "the failed reload again", lambda now: reload_failure(now) is not None)
    stopped = run_openmemoryd(env, "stop")
    assert stopped.returncode == 0, stopped.stderr
    assert "the config file is broken: invalid config file" in stopped.stderr
    assert f"stopping the daemon on {env.socket} anyway" in stopped.stderr
    assert stopped.stdout.strip() == f"openmemoryd (pid {pid}) stopped"
    assert daemon.proc.wait(10) == 0
    assert not env.socket.exists()


def test_changes_for_a_restart_are_an_issue_and_stop_reads_the_broken_files_socket(
    env: Env, launched: list[Daemon]
) -> None:
    socket_line = f'socket = "{env.socket}"\n'  # top level: before any table
    env.write_config(socket_line + KEYWORD_ONLY)
    daemon = Daemon(env).start()
    launched.append(daemon)
    assert daemon.proc is not None

    env.write_config(socket_line + KEYWORD_ONLY + "[sync]\ndebounce_ms = 99\n")
    hup(daemon)
    now = wait_until(
        daemon, "the waiting change", lambda now: any(WAITS_FOR_RESTART in i for i in now)
    )
    waiting = next(issue for issue in now if issue.startswith(WAITS_FOR_RESTART))
    assert waiting.startswith(f"{WAITS_FOR_RESTART}: sync.debounce_ms 1500 -> 99; restart")
    assert checks(daemon.cli("doctor", "--json"))["reload"]["status"] == "warn"

    # Valid TOML, a value out of range: the reload fails, the waiting change stays.
    env.write_config(
        socket_line + KEYWORD_ONLY + "[sync]\ndebounce_ms = 99\n[search]\nlimit = -5\n"
    )
    hup(daemon)
    now = wait_until(daemon, "the failed reload", reload_failure)
    assert "$.search.limit" in (reload_failure(now) or "")
    assert waiting in now

    # No OPENMEMORY_SOCKET: only the broken file's socket key says where it is.
    without = {k: v for k, v in env.vars.items() if k != "OPENMEMORY_SOCKET"}
    stopped = subprocess.run(
        [sys.executable, "-m", "openmemoryd", "stop"],
        env=without,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert stopped.returncode == 0, stopped.stderr
    assert "$.search.limit" in stopped.stderr
    assert f"stopping the daemon on {env.socket} anyway" in stopped.stderr
    assert daemon.proc.wait(10) == 0
