"""End to end: stopping the daemon while socket clients keep their connections.

Agents, the MCP bridge and the Python client keep one connection open for
many requests, so a stop meets connections, not only requests. Through the
real daemon and both real clients (`Client`, `AsyncClient`):

* a request running when the stop begins gets its normal answer within
  ``[server] drain_timeout_s``;
* a request sent meanwhile on a connection that was already open is
  answered at once with ``unavailable`` ("openmemoryd is stopping"), not
  left to a reset or a broken pipe;
* a new connection is refused at once (a client waits for the daemon to
  come back, up to its timeout, then says it is stopping);
* a request still running when the grace period ends is cancelled and
  answered ``unavailable`` too, rather than cut off;
* then the daemon exits 0 and removes its socket.

The request held in flight is a search whose reranking service (a fake on
127.0.0.1, as in test_e2e_http_stop.py) answers only when the test lets it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
import trio

from conftest import Daemon, Env
from fake_rerank_servers import GatedReranker
from omem_client import (
    AsyncClient,
    Client,
    ConnectError,
    OmemError,
    UnavailableError,
)
from test_e2e_http_stop import KEY, Stop, prepare
from test_reload import wait_for_log

STOPPING = "openmemoryd is stopping and takes no new requests; retry once it runs again"


def start(env: Env, reranker: GatedReranker, launched: list[Daemon]) -> Daemon:
    """The daemon once its index holds the notes and a search has been
    reranked; the reranker's gate is then closed."""
    daemon = Daemon(env)
    launched.append(daemon)
    daemon.start()
    reranker.gate.set()
    with daemon.client() as client:
        deadline = time.monotonic() + 10
        while len(client.search("tea").results) < 2:
            assert time.monotonic() < deadline, "the notes were never indexed"
            time.sleep(0.1)
    assert reranker.arrived.is_set()
    reranker.arrived.clear()
    reranker.gate.clear()
    return daemon


def wait_refused(env: Env) -> None:
    """Return once a new connection is refused (the client, having waited
    its 0.5 s for the daemon to come back, says it is stopping). The log
    line a test waits for comes just before the stop begins: a connection
    made in that instant is served, or, once the stop began, told that the
    daemon is stopping when it says Hello; never reset."""
    told: set[str] = set()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            with Client(env.socket, timeout=0.5) as client:
                client.status()
        except UnavailableError as exc:
            told.add(str(exc))
        except ConnectError as exc:
            if "nothing answers: it is stopping" in str(exc):
                break
        time.sleep(0.02)
    else:
        pytest.fail("the socket still took connections 10 s after the stop")
    assert told <= {STOPPING}


class InFlight:
    """One call on its own `Client`, made from a thread; `result()` once it ends."""

    def __init__(self, daemon: Daemon, call: Callable[[Client], Any]) -> None:
        self.value: Any = None
        self.error: OmemError | None = None
        self._client = daemon.client(timeout=60)
        self._client.connect()
        self._thread = threading.Thread(target=self._run, args=(call,))
        self._thread.start()

    def _run(self, call: Callable[[Client], Any]) -> None:
        try:
            self.value = call(self._client)
        except OmemError as exc:
            self.error = exc
        finally:
            self._client.close()

    def result(self) -> Any:
        self._thread.join(60)
        assert not self._thread.is_alive()
        if self.error is not None:
            raise self.error
        return self.value


class KeptAsync:
    """An `AsyncClient` (what the MCP bridge uses) connected before the stop,
    in its own thread and trio loop; `append` makes it send one now."""

    def __init__(self, daemon: Daemon) -> None:
        self._socket = daemon.env.socket
        self._connected = threading.Event()
        self._go = threading.Event()
        self.error: OmemError | None = None
        self._thread = threading.Thread(target=trio.run, args=(self._main,))
        self._thread.start()
        assert self._connected.wait(20), "the async client never connected"

    async def _main(self) -> None:
        async with AsyncClient(self._socket, timeout=30) as client:
            await client.status()
            self._connected.set()
            await trio.to_thread.run_sync(self._go.wait, 30)
            try:
                await client.append("written by the async client during the stop")
            except OmemError as exc:
                self.error = exc

    def append(self) -> OmemError | None:
        self._go.set()
        self._thread.join(30)
        assert not self._thread.is_alive()
        return self.error


@pytest.mark.parametrize("how", ["SIGTERM", "openmemoryd stop"])
def test_a_request_on_an_open_connection_during_the_stop_is_answered_unavailable(
    env: Env,
    reranker: GatedReranker,
    launched: list[Daemon],
    monkeypatch: pytest.MonkeyPatch,
    how: str,
) -> None:
    monkeypatch.setenv("OMEM_TEST_RERANK_KEY", KEY)
    prepare(env, reranker)
    daemon = start(env, reranker, launched)
    assert daemon.proc is not None
    kept = daemon.client()
    kept.status()  # its connection stays open across the stop
    kept_async = KeptAsync(daemon)
    search = InFlight(daemon, lambda client: client.search("green tea"))
    assert reranker.arrived.wait(20), "the search never reached the reranker"

    stop = Stop(daemon, how)
    wait_for_log(daemon, "draining and stopping")
    wait_refused(env)  # no new connection once the stop is under way
    assert daemon.proc.poll() is None  # still running: the search holds it

    # requests on connections opened before the stop are answered at once
    for call in (kept.status, lambda: kept.append("written during the stop")):
        started = time.monotonic()
        with pytest.raises(UnavailableError) as refused:
            call()
        assert time.monotonic() - started < 5
        assert refused.value.code == "unavailable"
        assert str(refused.value) == STOPPING
    refused_async = kept_async.append()
    assert isinstance(refused_async, UnavailableError), refused_async
    assert str(refused_async) == STOPPING

    reranker.gate.set()
    hits = search.result().results  # the search in flight gets its full answer
    assert hits[0].path == "memory/a.md"
    assert all(hit.rerank_score is not None for hit in hits)
    assert daemon.proc.wait(20) == 0
    stop.check()
    assert "openmemoryd stopped" in daemon.log()
    assert not env.socket.exists()
    # nothing refused was written
    for path in env.workspace.rglob("*.md"):
        assert "during the stop" not in path.read_text()
    # the kept connection is gone with the daemon: the next call says so
    with pytest.raises(ConnectError):
        kept.status()
    kept.close()


def test_a_request_still_running_when_the_grace_period_ends_is_answered_unavailable(
    env: Env, reranker: GatedReranker, launched: list[Daemon], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OMEM_TEST_RERANK_KEY", KEY)
    prepare(env, reranker, "[server]\ndrain_timeout_s = 1\n")
    daemon = start(env, reranker, launched)
    assert daemon.proc is not None
    search = InFlight(daemon, lambda client: client.search("green tea"))
    assert reranker.arrived.wait(20), "the search never reached the reranker"
    stopped_at = time.monotonic()
    stop = Stop(daemon, "SIGTERM")

    with pytest.raises(UnavailableError) as abandoned:  # the reranker never answers
        search.result()
    assert str(abandoned.value) == (
        "search did not finish: openmemoryd stopped (it waited 1 s for it, "
        "[server] drain_timeout_s); retry once it runs again"
    )
    assert daemon.proc.wait(20) == 0
    stop.check()
    assert time.monotonic() - stopped_at < 8  # bounded: 1 s of grace, not the reranker's 30
    assert "1 request(s) still running after 1 s" in daemon.log()
    assert not env.socket.exists()


def test_omem_client_during_the_stop_says_the_daemon_is_stopping(
    env: Env, reranker: GatedReranker, launched: list[Daemon], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`omem-client` opens a connection per command, so during the drain it
    meets the closed socket: it waits for the daemon to come back, and once
    its timeout has passed says the daemon is stopping, with its unreachable
    exit code (test_e2e_restart_wait.py: the daemon that comes back)."""
    monkeypatch.setenv("OMEM_TEST_RERANK_KEY", KEY)
    prepare(env, reranker)
    daemon = start(env, reranker, launched)
    assert daemon.proc is not None
    search = InFlight(daemon, lambda client: client.search("green tea"))
    assert reranker.arrived.wait(20), "the search never reached the reranker"
    Stop(daemon, "SIGTERM")
    wait_for_log(daemon, "draining and stopping")
    wait_refused(env)

    result = daemon.cli("--timeout", "1", "status")
    assert result.returncode == 3, result.stderr
    assert (
        f"openmemoryd (pid {daemon.proc.pid}) did not answer on {env.socket} within 1 s; "
        "a socket is there but nothing answers: it is stopping; retry in a moment"
    ) in result.stderr

    reranker.gate.set()
    assert search.result().results
    assert daemon.proc.wait(20) == 0
