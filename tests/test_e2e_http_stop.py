"""End to end: stopping the daemon while HTTP requests are in flight.

A graceful stop, as HTTP servers do it: the port stops taking connections at
once, a request already running gets its normal answer, a request arriving
on a connection that is already open gets 503 ``unavailable`` with
``Connection: close``, and only then does the daemon exit. A request still
running when the grace period (``[server] drain_timeout_s``) ends gets a 503
too, rather than a cut connection.

The request held in flight is a search whose reranking service (a fake on
127.0.0.1) answers only when the test lets it, so the daemon's stop lands
while the request is really inside the daemon. Stops are sent each way a
user sends them: SIGTERM (what ``openmemoryd stop`` and systemd send),
SIGINT (Ctrl-C on ``openmemoryd serve``) and ``openmemoryd stop`` itself.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from typing import Any

import httpx
import pytest

from conftest import Daemon, Env
from fake_rerank_servers import GatedReranker
from test_e2e_http import free_port, wait_http
from test_reload import wait_for_log

KEY = "rerank-key-for-the-stop-tests"
NOTES = {
    "memory/a.md": "Wei drinks green tea every morning",
    "memory/b.md": "The tea shop on Main Street closed; tea prices went up",
    "memory/c.md": "Wei's favourite tea is oolong from Taiwan",
}


def prepare(env: Env, reranker: GatedReranker, extra_config: str = "") -> None:
    env.write_config(
        '[embedding]\nprovider = "none"\n'
        "[search.rerank]\n"
        'provider = "cohere"\n'
        'model = "rerank-test"\n'
        f'base_url = "{reranker.base_url()}"\n'
        'api_key_env = "OMEM_TEST_RERANK_KEY"\n'
        "timeout_s = 30\n" + extra_config
    )
    (env.workspace / "memory").mkdir(parents=True)
    for path, text in NOTES.items():
        (env.workspace / path).write_text(text + "\n")


def start(
    env: Env, reranker: GatedReranker, launched: list[Daemon], command: str = "run"
) -> tuple[Daemon, str]:
    """The daemon (`run --http` or `serve --port`) once its index holds the
    notes and a search has been reranked; the gate is then closed."""
    port = free_port()
    http = ["--http", f"127.0.0.1:{port}"] if command == "run" else ["--port", str(port)]
    daemon = Daemon(env)
    with daemon.log_path.open("ab") as log:
        daemon.proc = subprocess.Popen(
            [sys.executable, "-m", "openmemoryd", command, *http],
            env=env.vars,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    launched.append(daemon)
    daemon.wait_ready()
    url = wait_http(daemon)
    reranker.gate.set()
    with httpx.Client(base_url=url, timeout=30) as web:
        deadline = time.monotonic() + 10
        while len(web.post("/search", json={"query": "tea"}).json()["results"]) < 2:
            assert time.monotonic() < deadline, "the notes were never indexed"
            time.sleep(0.1)
    assert reranker.arrived.is_set()
    reranker.arrived.clear()
    reranker.gate.clear()
    return daemon, url


class InFlight:
    """One HTTP request sent from a thread; `reply` or `error` once it ends."""

    def __init__(self, url: str, path: str, body: dict[str, Any]) -> None:
        self.reply: httpx.Response | None = None
        self.error: Exception | None = None
        self._thread = threading.Thread(target=self._send, args=(url + path, body))
        self._thread.start()

    def _send(self, url: str, body: dict[str, Any]) -> None:
        try:
            self.reply = httpx.post(url, json=body, timeout=60)
        except Exception as exc:
            self.error = exc

    def result(self) -> httpx.Response:
        self._thread.join(60)
        assert not self._thread.is_alive()
        assert self.error is None, f"the request got no reply: {self.error!r}"
        assert self.reply is not None
        return self.reply


def wait_refused(url: str) -> None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            httpx.get(url + "/health", timeout=5)
        except httpx.ConnectError:
            return
        time.sleep(0.05)
    pytest.fail("the HTTP port still took connections 10 s after the stop")


def error_of(reply: httpx.Response) -> dict[str, str]:
    assert reply.headers["content-type"] == "application/json"
    body = reply.json()
    assert set(body) == {"error"}
    return dict(body["error"])


class Stop:
    """The stop delivered *how* a user would. `openmemoryd stop` runs in a
    thread: it returns only once the daemon has exited."""

    def __init__(self, daemon: Daemon, how: str) -> None:
        assert daemon.proc is not None
        self.cli: subprocess.CompletedProcess[str] | None = None
        self._thread: threading.Thread | None = None
        if how == "openmemoryd stop":
            self._thread = threading.Thread(target=self._run_cli, args=(daemon.env,))
            self._thread.start()
        else:
            daemon.proc.send_signal(signal.Signals[how])

    def _run_cli(self, env: Env) -> None:
        self.cli = subprocess.run(
            [sys.executable, "-m", "openmemoryd", "stop"],
            env=env.vars,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    def check(self) -> None:
        """`openmemoryd stop`, if that was the way, said the daemon stopped."""
        if self._thread is None:
            return
        self._thread.join(60)
        assert self.cli is not None
        assert self.cli.returncode == 0, self.cli.stderr
        assert "stopped" in self.cli.stdout


@pytest.mark.parametrize(
    ("how", "command"),
    [
        ("SIGTERM", "run"),
        ("SIGINT", "serve"),  # Ctrl-C on `openmemoryd serve --port`
        ("openmemoryd stop", "run"),
    ],
)
def test_a_request_in_flight_at_stop_gets_its_answer(
    env: Env,
    reranker: GatedReranker,
    launched: list[Daemon],
    monkeypatch: pytest.MonkeyPatch,
    how: str,
    command: str,
) -> None:
    monkeypatch.setenv("OMEM_TEST_RERANK_KEY", KEY)
    prepare(env, reranker)
    daemon, url = start(env, reranker, launched, command)
    assert daemon.proc is not None
    with httpx.Client(base_url=url, timeout=30) as kept_alive:
        assert kept_alive.get("/health").status_code == 200  # its connection stays open
        search = InFlight(url, "/search", {"query": "green tea"})
        assert reranker.arrived.wait(20), "the search never reached the reranker"

        stop = Stop(daemon, how)
        wait_for_log(daemon, "draining and stopping")
        wait_refused(url)  # the port takes no new connection once the stop is seen
        assert daemon.proc.poll() is None  # still running: the search holds it

        # a request on a connection opened before the stop is answered, not cut
        refused = kept_alive.get("/status")
        assert refused.status_code == 503
        assert refused.headers["connection"] == "close"
        assert error_of(refused)["code"] == "unavailable"
        assert "stopping" in error_of(refused)["message"]

        reranker.gate.set()
        reply = search.result()
    assert reply.status_code == 200, reply.text
    assert reply.headers["connection"] == "close"
    hits = reply.json()["results"]
    assert hits[0]["path"] == "memory/a.md"
    assert all(hit["rerank_score"] is not None for hit in hits)  # the full, reranked answer
    assert daemon.proc.wait(20) == 0
    stop.check()
    assert "openmemoryd stopped" in daemon.log()
    assert not env.socket.exists()


def test_a_request_still_running_when_the_grace_period_ends_gets_503(
    env: Env, reranker: GatedReranker, launched: list[Daemon], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OMEM_TEST_RERANK_KEY", KEY)
    prepare(env, reranker, "[server]\ndrain_timeout_s = 1\n")
    daemon, url = start(env, reranker, launched)
    assert daemon.proc is not None
    search = InFlight(url, "/search", {"query": "green tea"})
    assert reranker.arrived.wait(20), "the search never reached the reranker"
    stopped_at = time.monotonic()
    daemon.proc.send_signal(signal.SIGTERM)

    reply = search.result()  # the reranker never answers
    assert reply.status_code == 503
    assert reply.headers["connection"] == "close"
    error = error_of(reply)
    assert error["code"] == "unavailable"
    assert "stopped before this request finished" in error["message"]
    assert daemon.proc.wait(20) == 0
    assert time.monotonic() - stopped_at < 8  # bounded: 1 s of grace, not the reranker's 30
    assert "1 HTTP request(s) still running" in daemon.log()
