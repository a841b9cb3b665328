"""End to end: clients ride through a restart of the real daemon.

* An `AsyncClient` kept open across a restart (what the MCP bridge holds)
  makes its next call on a fresh connection instead of failing with a lost
  connection, under trio and asyncio alike.
* `omem-client` run while the daemon drains its stop waits, and answers as
  soon as the restarted daemon is up (the stop is held open by a search
  whose gated reranker answers only when the test lets it, as in
  test_e2e_rpc_stop.py).
* With no daemon at all it says so at once, telling an absent socket from
  one a killed daemon left behind.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import anyio
import pytest

from conftest import Daemon, Env
from fake_rerank_servers import GatedReranker
from omem_client import AsyncClient
from test_e2e_http_stop import KEY, prepare
from test_e2e_rpc_stop import InFlight, start, wait_refused
from test_reload import wait_for_log

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize("backend", ["trio", "asyncio"])
def test_an_async_client_kept_open_across_a_restart_carries_on(
    env: Env, launched: list[Daemon], backend: str
) -> None:
    first = Daemon(env)
    launched.append(first)
    first.start()

    async def scenario() -> None:
        async with AsyncClient(env.socket, timeout=30) as client:
            await client.append("before the restart")
            before = client.welcome
            assert before is not None
            assert first.stop(signal.SIGTERM) == 0
            second = Daemon(env)
            launched.append(second)
            second.start()
            assert second.proc is not None
            assert (await client.status()).pid == second.proc.pid
            assert client.welcome is not None
            assert client.welcome.pid == second.proc.pid
            await client.append("after the restart")
            found = await client.search("after the restart", min_score=0.0)
            assert any("after the restart" in hit.snippet for hit in found.results)
        second.stop()

    anyio.run(scenario, backend=backend)


def test_omem_client_during_a_restart_answers_once_the_daemon_is_back(
    env: Env, reranker: GatedReranker, launched: list[Daemon], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OMEM_TEST_RERANK_KEY", KEY)
    prepare(env, reranker)
    first = start(env, reranker, launched)
    assert first.proc is not None
    search = InFlight(first, lambda client: client.search("green tea"))
    assert reranker.arrived.wait(20), "the search never reached the reranker"
    first.proc.send_signal(signal.SIGTERM)
    wait_for_log(first, "draining and stopping")
    wait_refused(env)  # the socket is there, refusing: the drain is under way

    cli = subprocess.Popen(
        [sys.executable, "-m", "omem_client", "status", "--json"],
        env=env.vars,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        time.sleep(1.0)
        assert cli.poll() is None, cli.communicate()  # waiting, not "not running"
        reranker.gate.set()
        assert search.result().results  # the drain finished the search
        assert first.proc.wait(20) == 0
        second = Daemon(env)
        launched.append(second)
        second.start()
        assert second.proc is not None
        out, err = cli.communicate(timeout=60)
    finally:
        if cli.poll() is None:
            cli.kill()
            cli.wait()
    assert cli.returncode == 0, err
    assert f'"pid":{second.proc.pid},' in out
    second.stop()


def timed_status(env: Env) -> tuple[subprocess.CompletedProcess[str], float]:
    began = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "omem_client", "status"],
        env=env.vars,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return result, time.monotonic() - began


def test_no_daemon_is_said_at_once_with_or_without_a_leftover_socket(
    env: Env, launched: list[Daemon]
) -> None:
    daemon = Daemon(env)
    launched.append(daemon)
    daemon.start()
    assert daemon.stop(signal.SIGTERM) == 0  # a clean stop removes the socket
    result, took = timed_status(env)
    assert result.returncode == 3, result.stderr
    assert f"openmemoryd is not running (no socket at {env.socket}); " in result.stderr
    assert took < 3.0  # the interpreter's start; no wait (a restart's grace is 5 s)

    daemon = Daemon(env)
    launched.append(daemon)
    daemon.start()
    assert daemon.stop(signal.SIGKILL) == -signal.SIGKILL  # reaped: no process left
    assert env.socket.exists()
    result, took = timed_status(env)
    assert result.returncode == 3, result.stderr
    assert (
        f"openmemoryd is not running: a socket is at {env.socket} but nothing answers "
        "(the daemon crashed or was killed; starting it replaces the socket); "
    ) in result.stderr
    assert took < 3.0
