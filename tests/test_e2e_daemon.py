"""End to end: the daemon's life (start, refuse a twin, recover a crash, stop)."""

from __future__ import annotations

import json
import os
import signal
import socket
import stat
import threading
import time

import pytest

from conftest import Daemon, Env, run_openmemoryd
from omem_client import Client
from test_reload import wait_for_log

pytestmark = pytest.mark.e2e


def test_first_start_creates_the_workspace_and_a_private_socket(daemon: Daemon) -> None:
    ws = daemon.env.workspace
    for name in ("MEMORY.md", "USER.md", "PROJECT.md"):
        assert (ws / name).is_file()
    assert (ws / "memory").is_dir()
    mode = os.stat(daemon.env.socket).st_mode
    assert stat.S_ISSOCK(mode)
    assert stat.S_IMODE(mode) == 0o600


def test_a_second_daemon_refuses_to_start(daemon: Daemon) -> None:
    twin = run_openmemoryd(daemon.env, "run")
    assert twin.returncode == 1
    assert "already running" in twin.stderr
    assert daemon.cli("status").returncode == 0  # the first one is unharmed


def test_sigterm_stops_cleanly_and_removes_the_socket(daemon: Daemon) -> None:
    assert daemon.stop(signal.SIGTERM) == 0
    assert not daemon.env.socket.exists()
    assert "openmemoryd stopped" in daemon.log()


def test_a_crashed_daemons_socket_is_replaced(env: Env) -> None:
    first = Daemon(env).start()
    first.cli("append", "survives the crash")
    assert first.stop(signal.SIGKILL) == -signal.SIGKILL
    assert env.socket.exists()  # left behind by the crash
    second = Daemon(env).start()
    try:
        result = second.cli("search", "survives")
        assert "survives the crash" in result.stdout
    finally:
        second.stop()


def test_an_unsafe_socket_directory_is_refused(env: Env) -> None:
    os.chmod(env.socket_dir, 0o777)
    result = run_openmemoryd(env, "run")
    assert result.returncode == 1
    assert "writable by group or others" in result.stderr


def test_something_else_at_the_socket_path_is_not_deleted(env: Env) -> None:
    env.socket.write_text("not a socket")
    result = run_openmemoryd(env, "run")
    assert result.returncode == 1
    assert "not a socket" in result.stderr
    assert env.socket.read_text() == "not a socket"


def test_an_invalid_config_stops_start_up_with_its_location(env: Env) -> None:
    env.write_config("[search]\nmin_score = 7\n")
    result = run_openmemoryd(env, "run")
    assert result.returncode == 1
    assert "$.search.min_score" in result.stderr


def test_many_clients_at_once_lose_nothing(daemon: Daemon) -> None:
    errors: list[BaseException] = []

    def agent(n: int) -> None:
        try:
            with daemon.client() as client:
                for i in range(10):
                    client.append(f"agent{n} fact{i}")
                    assert client.search(f"agent{n}").results
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=agent, args=(n,)) for n in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    with daemon.client() as client:
        for n in range(12):
            result = client.search(f"agent{n}", limit=20)
            assert result.results
    daily = next((daemon.env.workspace / "memory").glob("*.md")).read_text()
    for n in range(12):
        for i in range(10):
            assert f"agent{n} fact{i}\n" in daily


def test_a_garbage_speaking_client_does_not_hurt_others(daemon: Daemon) -> None:
    rude = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    rude.connect(str(daemon.env.socket))
    rude.sendall(b"\xff\xff\xff\xffGARBAGE")
    polite = Client(daemon.env.socket)
    try:
        assert polite.status().files_on_disk == 3
    finally:
        polite.close()
        rude.close()
    assert daemon.cli("status").returncode == 0


def test_init_creates_the_workspace_and_prints_where_things_are(env: Env) -> None:
    result = run_openmemoryd(env, "init")
    assert result.returncode == 0
    assert "Created MEMORY.md" in result.stdout
    assert str(env.workspace) in result.stdout
    again = run_openmemoryd(env, "init")
    assert "nothing to create" in again.stdout


def test_changing_the_chunking_rebuilds_the_index_by_itself(env: Env) -> None:
    env.write_config('[embedding]\nprovider = "none"\n[index]\nchunk_tokens = 400\n')
    first = Daemon(env).start()
    lines = "\n".join(f"- sandpiper release note {i}: the build passed" for i in range(60))
    (env.workspace / "memory" / "release.md").write_text("# Release\n\n" + lines + "\n")
    first.cli("sync")
    before = json.loads(first.cli("status", "--json").stdout)["chunks"]
    first.stop()

    env.write_config(
        '[embedding]\nprovider = "none"\n[index]\nchunk_tokens = 64\nchunk_overlap = 8\n'
    )
    second = Daemon(env).start()
    try:
        deadline = time.monotonic() + 30
        while True:
            status = json.loads(second.cli("status", "--json").stdout)
            assert "sandpiper" in second.cli("search", "sandpiper").stdout  # answers throughout
            if status["rebuild"] is None and status["chunks"] != before:
                break
            assert time.monotonic() < deadline, second.log()
            time.sleep(0.1)
        assert status["chunks"] > before
        assert "rebuilt" in second.log()
    finally:
        second.stop()


def test_search_shows_no_line_twice_across_overlapping_chunks(env: Env) -> None:
    """Through the daemon: small overlapping chunks of one file, each matching;
    every shown line is shown once, each snippet is the file's lines at its
    citation, and ``trim_overlap = false`` (by SIGHUP) brings the repeats back."""
    env.write_config(
        '[embedding]\nprovider = "none"\n[index]\nchunk_tokens = 40\nchunk_overlap = 20\n'
    )
    lines = [f"- heron sighting {i}: grey heron by the canal lock" for i in range(24)]
    daemon = Daemon(env).start()
    try:
        (env.workspace / "memory" / "birds.md").write_text("\n".join(lines) + "\n")
        daemon.cli("sync")

        def hits() -> list[dict[str, object]]:
            out = daemon.cli("search", "heron canal", "--limit", "20", "--json").stdout
            return [h for h in json.loads(out)["results"] if h["path"] == "memory/birds.md"]

        trimmed = hits()
        assert len(trimmed) >= 3
        shown = [n for h in trimmed for n in range(int(h["start_line"]), int(h["end_line"]) + 1)]
        assert len(shown) == len(set(shown))
        for hit in trimmed:
            first, last = int(hit["start_line"]), int(hit["end_line"])
            assert hit["snippet"] == "\n".join(lines[first - 1 : last])
            span = f"L{first}" if first == last else f"L{first}-L{last}"
            assert hit["citation"] == f"memory/birds.md#{span}"
        env.write_config(
            '[embedding]\nprovider = "none"\n[index]\nchunk_tokens = 40\nchunk_overlap = 20\n'
            "[search]\ntrim_overlap = false\n"
        )
        assert daemon.proc is not None
        daemon.proc.send_signal(signal.SIGHUP)
        wait_for_log(daemon, "SIGHUP: applied search.trim_overlap")
        repeated = hits()
        again = [n for h in repeated for n in range(int(h["start_line"]), int(h["end_line"]) + 1)]
        assert len(again) > len(set(again))
    finally:
        daemon.stop()


def test_a_client_kept_open_across_a_restart_carries_on(env: Env) -> None:
    """An agent's process keeps its `Client`; the daemon is restarted under it
    (an upgrade, `systemctl --user restart`). The next call connects afresh
    instead of failing with "lost the connection: Broken pipe"."""
    first = Daemon(env).start()
    client = Client(socket_path=env.socket)
    try:
        client.append("before the restart")
        assert first.stop(signal.SIGTERM) == 0
        second = Daemon(env).start()
        try:
            assert client.status().files_on_disk > 0
            client.append("after the restart")
            found = client.search("after the restart", min_score=0.0)
            assert any("after the restart" in hit.snippet for hit in found.results)
        finally:
            second.stop()
    finally:
        client.close()
