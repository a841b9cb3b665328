"""`openmemoryd index` (one-shot, daemon running or not) and `openmemoryd serve
--port N` (the daemon with the HTTP API on 127.0.0.1:N), as a user runs them."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from conftest import Daemon, Env, run_openmemoryd
from omem_client import Client, ConnectError
from test_e2e_http import free_port

pytestmark = pytest.mark.e2e


def write_note(env: Env, text: str) -> None:
    note = env.workspace / "memory" / "harbour.md"
    note.parent.mkdir(parents=True, exist_ok=True)
    note.write_text(f"# Harbour\n\n{text}\n", encoding="utf-8")


def test_index_without_a_daemon_builds_the_index_and_keeps_it(env: Env) -> None:
    write_note(env, "The ferry to the lighthouse leaves at seven.")
    first = run_openmemoryd(env, "index")
    assert first.returncode == 0, first.stderr
    assert "Indexed with no daemon running" in first.stdout
    assert "1 file scanned, 1 added, 0 updated" in first.stdout
    assert "Vectors: off (keyword search only)" in first.stdout
    again = run_openmemoryd(env, "index")
    assert again.returncode == 0, again.stderr
    assert " 0 added, 0 updated, 0 removed" in again.stdout  # the first run's index was kept
    full = run_openmemoryd(env, "index", "--full")
    assert full.returncode == 0, full.stderr
    daemon = Daemon(env).start()
    try:
        with daemon.client() as client:
            hits = client.search("ferry lighthouse").results
        assert hits
        assert hits[0].path == "memory/harbour.md"
    finally:
        daemon.stop()


def test_index_without_a_daemon_embeds_every_chunk(env: Env) -> None:
    env.write_config('[embedding]\nprovider = "local"\n')
    write_note(env, "Die Fähre zum Leuchtturm fährt um sieben. 渡轮七点出发。")
    done = run_openmemoryd(env, "index")
    assert done.returncode == 0, done.stderr
    assert "chunks embedded" in done.stdout, done.stdout
    embedded = int(done.stdout.split("Vectors: ")[1].split(" chunks")[0])
    assert embedded >= 1
    daemon = Daemon(env).start()
    try:
        with daemon.client() as client:
            status = client.status()
        assert status.embedding is not None
        assert status.embedding.embedded == status.embedding.total >= embedded
    finally:
        daemon.stop()


def test_index_without_a_workspace_says_how_to_make_one(env: Env) -> None:
    done = run_openmemoryd(env, "index")
    assert done.returncode == 1
    assert f"there is no workspace at {env.workspace}; openmemoryd init creates one" in (
        done.stderr
    )
    assert not env.workspace.exists()


def test_index_with_a_daemon_running_asks_the_daemon(daemon: Daemon) -> None:
    write_note(daemon.env, "The crane is serviced every March.")
    done = run_openmemoryd(daemon.env, "index")
    assert done.returncode == 0, done.stderr
    assert "Indexed by the running daemon" in done.stdout
    with daemon.client() as client:
        assert client.search("crane serviced").results


@pytest.fixture
def served(env: Env) -> Iterator[tuple[Env, int]]:
    port = free_port()
    log = (env.root / "serve.log").open("ab")
    proc = subprocess.Popen(
        [sys.executable, "-m", "openmemoryd", "serve", "--port", str(port)],
        env=env.vars,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                with Client(env.socket, timeout=5) as client:
                    if client.status().http is not None:
                        break
            except ConnectError:  # not up yet (or still starting past the wait)
                pass
            assert proc.poll() is None, (env.root / "serve.log").read_text()
            assert time.monotonic() < deadline, "serve did not come up"
            time.sleep(0.05)
        yield env, port
    finally:
        proc.terminate()
        proc.wait(timeout=20)
        log.close()


@pytest.mark.skipif(shutil.which("curl") is None, reason="needs curl")
def test_the_seed_curl_examples_work_as_written_against_serve(served: tuple[Env, int]) -> None:
    env, port = served
    base = f"http://localhost:{port}"

    def curl(*args: str) -> dict[str, object]:
        done = subprocess.run(
            ["curl", "-s", "--fail-with-body", *args], capture_output=True, text=True, timeout=30
        )
        assert done.returncode == 0, done.stdout + done.stderr
        reply: dict[str, object] = json.loads(done.stdout)
        return reply

    appended = curl(
        "-X", "POST", f"{base}/append",
        "-H", "Content-Type: application/json",
        "-d", '{"path": "memory/2026-02-03.md", "content": "新的记忆内容：用户偏好深色主题"}',
    )  # fmt: skip
    assert appended["path"] == "memory/2026-02-03.md"
    found = curl(
        "-X", "POST", f"{base}/search",
        "-H", "Content-Type: application/json",
        "-d", '{"query": "用户偏好", "limit": 5}',
    )  # fmt: skip
    results = found["results"]
    assert isinstance(results, list)
    assert any("深色主题" in hit["snippet"] for hit in results)
    got = curl(f"{base}/get?path=MEMORY.md")
    assert str(got["text"]).startswith("# MEMORY.md")
    assert (env.workspace / "memory" / "2026-02-03.md").is_file()


def test_sync_wait_returns_once_every_chunk_is_embedded(env: Env) -> None:
    env.write_config('[embedding]\nprovider = "local"\n')
    daemon = Daemon(env).start()
    try:
        write_note(env, "The ferry timetable changes in spring. 渡轮时刻表春天会变。")
        done = daemon.cli("sync", "--wait")
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip().endswith("Vectors: every chunk embedded.")
        with daemon.client() as client:
            emb = client.status().embedding
        assert emb is not None
        assert emb.embedded == emb.total > 0
    finally:
        daemon.stop()


def test_sync_wait_without_vectors_says_so(daemon: Daemon) -> None:
    done = daemon.cli("sync", "--wait")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith("Vectors: off (keyword search only).")
