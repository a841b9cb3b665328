"""End to end: `openmemoryd run --http` serves the JSON API beside the socket.

The real daemon, the real hypercorn server on a free 127.0.0.1 port, driven
with httpx (and with Node's fetch when node is installed), while the Unix
socket client keeps working against the same engine.
"""

from __future__ import annotations

import json
import shutil
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from conftest import KEYWORD_ONLY, Daemon, Env, run_openmemoryd

pytestmark = pytest.mark.e2e

TOKEN = "e2e-token-Zq81"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_http(daemon: Daemon) -> str:
    """The daemon's HTTP base URL once `status` reports it (it listens by then)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        with daemon.client() as client:
            url = client.status().http
        if url is not None:
            return url
        time.sleep(0.05)
    pytest.fail(f"status never reported the HTTP API:\n{daemon.log()}")


@pytest.fixture
def http_daemon(env: Env) -> Iterator[tuple[Daemon, str]]:
    handle = Daemon(env).start("--http", f"127.0.0.1:{free_port()}")
    try:
        yield handle, wait_http(handle)
    finally:
        if handle.proc is not None and handle.proc.poll() is None:
            handle.stop()


def test_every_route_through_the_real_daemon(http_daemon: tuple[Daemon, str]) -> None:
    daemon, url = http_daemon
    with httpx.Client(base_url=url, timeout=30) as web, daemon.client() as sock:
        assert web.get("/health").json()["status"] == "ok"
        status = web.get("/status").json()
        assert status["http"] == url
        assert sock.status().http == url  # the socket reports it too

        appended = web.post("/append", json={"text": "The tide tables are in the blue binder"})
        assert appended.status_code == 200, appended.text
        citation = appended.json()["citation"]
        hits = web.post("/search", json={"query": "tide tables binder"}).json()["results"]
        assert hits
        assert "blue binder" in hits[0]["snippet"]
        # one engine: the socket client sees what HTTP wrote, and the reverse
        assert "blue binder" in sock.search("tide tables").results[0].snippet
        sock.append("The spare bicycle pump hangs in the garage")
        found = web.post("/search", json={"query": "bicycle pump garage"}).json()
        assert "bicycle pump" in found["results"][0]["snippet"]

        path = appended.json()["path"]
        got = web.get("/get", params={"path": path, "from": appended.json()["start_line"]})
        assert "blue binder" in got.json()["text"]
        line = appended.json()["start_line"]
        got = web.get("/get", params={"path": path, "from": line, "to": line}).json()
        assert (got["from_line"], got["to_line"]) == (line, line)
        assert "blue binder" in got["text"]
        cited = web.get("/get", params={"path": appended.json()["citation"]}).json()
        assert cited["text"] == got["text"]
        refused = web.get("/get", params={"path": path, "from": line, "to": line - 1})
        assert refused.status_code == 400
        assert "is before from_line" in refused.json()["error"]["message"]
        assert (
            "blue binder"
            in web.post("/recall", json={"query": "where are the tide tables"}).json()["block"]
        )
        captured = web.post(
            "/capture",
            json={"messages": [{"role": "user", "text": "I always prefer window seats on trains"}]},
        ).json()
        assert len(captured["captured"]) == 1
        logged = web.post(
            "/log",
            json={
                "text": "We chose PostgreSQL 16 for the billing service",
                "memory_type": "decision",
            },
        ).json()
        assert (logged["status"], logged["path"]) == ("written", "MEMORY.md")
        ended = web.post(
            "/session-end", json={"request": "Plan the trip", "next_steps": ["Book the train"]}
        ).json()
        assert [task["text"] for task in ended["tasks_added"]] == ["Book the train"]
        assert web.post("/tasks", json={}).json()["open"] == 1
        chat = [{"role": "user", "text": f"message {i}"} for i in range(8)]
        no_chat = web.post("/compact", json={"session": "s1", "messages": chat})
        assert no_chat.status_code == 503
        assert "[chat] provider" in no_chat.json()["error"]["message"]
        assert web.get("/openapi.json").json()["info"]["title"] == "openmemory HTTP API"

        # bad input answers with errors and hurts nothing
        assert web.post("/search", content=b"{oops").status_code == 400
        assert web.post("/search", json={"query": "x", "bogus": 1}).status_code == 400
        assert web.get("/get", params={"path": "../../etc/passwd.md"}).status_code == 403
        assert web.get("/search").status_code == 405
        assert web.get("/nowhere").status_code == 404
        big = web.post("/append", content=b'{"text": "' + b"a" * (17 << 20) + b'"}')
        assert big.status_code == 413
        assert web.get("/health", headers={"host": "attacker.example"}).status_code == 403
        assert (
            web.post(
                "/append", json={"text": "x"}, headers={"origin": "http://attacker.example"}
            ).status_code
            == 403
        )
        # not even HTTP: hypercorn answers 400 and closes; the daemon serves on
        host, port = url.removeprefix("http://").rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=10) as raw:
            raw.sendall(b"\x00\xffGARBAGE / NOPE\r\n\r\n")
            assert raw.recv(100).startswith(b"HTTP/1.1 400")
        assert web.get("/health").status_code == 200
        assert sock.status().files_indexed >= 1  # still alive on the socket
    assert citation.startswith("memory/")


def test_http_and_socket_clients_at_once(http_daemon: tuple[Daemon, str]) -> None:
    daemon, url = http_daemon
    errors: list[BaseException] = []

    def writer(n: int, over_http: bool) -> None:
        try:
            if over_http:
                with httpx.Client(base_url=url, timeout=30) as web:
                    for i in range(5):
                        web.post(
                            "/append", json={"text": f"note {n}-{i} kumquat"}
                        ).raise_for_status()
            else:
                with daemon.client() as client:
                    for i in range(5):
                        client.append(f"note {n}-{i} kumquat")
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n, n % 2 == 0)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors
    daily = next((daemon.env.workspace / "memory").glob("*.md")).read_text()
    assert daily.count("kumquat") == 20  # one writer: no append lost or torn


def test_token_from_the_environment(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OM_E2E_TOKEN", TOKEN)  # Env.vars passes it on to the daemon
    listen = f"127.0.0.1:{free_port()}"
    env.write_config(
        KEYWORD_ONLY + f'[http]\nenabled = true\ntoken_env = "OM_E2E_TOKEN"\nlisten = "{listen}"\n'
    )
    daemon = Daemon(env).start()
    url = wait_http(daemon)
    try:
        with httpx.Client(base_url=url, timeout=30) as web:
            refused = web.get("/status")
            assert refused.status_code == 401
            assert refused.headers["www-authenticate"].startswith("Bearer")
            wrong = web.get("/status", headers={"authorization": "Bearer wrong"})
            assert wrong.status_code == 401
            ok = web.get("/status", headers={"authorization": f"Bearer {TOKEN}"})
            assert ok.status_code == 200
        assert TOKEN not in daemon.log()
        assert TOKEN not in json.dumps(ok.json())
    finally:
        assert daemon.stop() == 0


def test_a_non_loopback_address_needs_allow_remote(env: Env) -> None:
    result = run_openmemoryd(env, "run", "--http", "0.0.0.0:8787")
    assert result.returncode == 1
    assert "allow_remote = true" in result.stderr
    assert not env.socket.exists()


def test_a_busy_port_is_a_clear_start_up_error(env: Env) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run_openmemoryd(env, "run", "--http", f"127.0.0.1:{port}")
    assert result.returncode == 1
    assert f"cannot listen for HTTP on http://127.0.0.1:{port}" in result.stderr
    assert not env.socket.exists()  # the socket bound before it was cleaned up


def test_sigterm_stops_http_with_an_idle_keep_alive_connection(
    http_daemon: tuple[Daemon, str],
) -> None:
    daemon, url = http_daemon
    with httpx.Client(base_url=url, timeout=30) as web:
        assert web.get("/health").status_code == 200  # the connection stays open
        started = time.monotonic()
        assert daemon.stop(signal.SIGTERM) == 0
        assert time.monotonic() - started < 10
        with pytest.raises(httpx.TransportError):
            web.get("/health")
    assert not daemon.env.socket.exists()


NODE_SCRIPT = """
const base = process.argv[2];
const post = (path, body) => fetch(base + path, {
  method: "POST", headers: {"content-type": "application/json"}, body: JSON.stringify(body),
}).then(r => r.json());
const appended = await post("/append", {text: "Node remembers the walrus password hint"});
const found = await post("/search", {query: "walrus password"});
console.log(JSON.stringify({citation: appended.citation, snippet: found.results[0].snippet}));
"""


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_node_fetch(http_daemon: tuple[Daemon, str], tmp_path: Path) -> None:
    _, url = http_daemon
    script = tmp_path / "client.mjs"
    script.write_text(NODE_SCRIPT)
    done = subprocess.run(
        ["node", str(script), url], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    reply = json.loads(done.stdout)
    assert "walrus password hint" in reply["snippet"]
    assert reply["citation"].startswith("memory/")


def test_the_seed_curl_examples_work_as_written(http_daemon: tuple[Daemon, str]) -> None:
    """The three calls other memory tools document, with their field names."""
    _, url = http_daemon
    with httpx.Client(base_url=url, timeout=30) as web:
        appended = web.post(
            "/append",
            json={"path": "memory/2026-02-03.md", "content": "新的记忆内容：用户偏好深色主题"},
        )
        assert appended.status_code == 200, appended.text
        found = web.post("/search", json={"query": "用户偏好", "limit": 5})
        assert found.status_code == 200
        assert any("深色主题" in hit["snippet"] for hit in found.json()["results"])
        got = web.get("/get", params={"path": "memory/2026-02-03.md"})
        assert "新的记忆内容" in got.json()["text"]
        assert web.post("/memory/search", json={"query": "用户偏好"}).json()["results"]
        assert web.get("/memory/status").json()["files_indexed"] >= 1


def test_slow_uploads_do_not_keep_other_callers_out(env: Env) -> None:
    """64 clients sending their bodies a byte at a time held every
    `max_inflight` slot, and every other caller got 429 for the server's
    read timeout (found by dogfooding). A body is now read before its
    request takes a slot."""
    env.write_config(KEYWORD_ONLY + "[http]\nmax_inflight = 2\n")
    port = free_port()
    handle = Daemon(env).start("--http", f"127.0.0.1:{port}")
    stalled: list[socket.socket] = []
    try:
        url = wait_http(handle)
        for _ in range(4):
            slow = socket.create_connection(("127.0.0.1", port))
            slow.sendall(
                b"POST /search HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                b"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"
            )
            stalled.append(slow)
        time.sleep(0.5)  # the server has taken them all
        with httpx.Client(base_url=url, timeout=5) as web:
            reply = web.post("/search", json={"query": "anything"})
        assert reply.status_code == 200, reply.text
    finally:
        for slow in stalled:
            slow.close()
        handle.stop()
