"""How a client judges a refused connect: wait for a daemon on its way, or fail at once.

The decision (`RestartWait`) runs on a fake clock and a fake probe; the probe
itself (`daemon_pid`) on real lock files and processes; and the clients'
connect loops, and `AsyncClient`'s look at an idle connection, on a scripted
daemon.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import anyio
import pytest

from conftest import Env
from omem_client import AsyncClient, Client, ConnectError, DaemonNotRunning
from omem_client._restart_wait import (
    POLL_S,
    RESTART_GAP_S,
    UNLIMITED_WAIT_S,
    RestartWait,
    daemon_pid,
)
from omem_protocol import RawRequest, Reply, encode_message, socket_lock_path
from test_async_client import SYNCED, Run, fake_daemon

REFUSED = ConnectionRefusedError(111, "Connection refused")
ABSENT = FileNotFoundError(2, "No such file or directory")


@pytest.fixture(params=["trio", "asyncio"])
def run(request: pytest.FixtureRequest) -> Run:
    """Runs a scenario to completion under one anyio backend."""

    def runner(scenario: Callable[[], Awaitable[None]]) -> None:
        anyio.run(scenario, backend=request.param)

    return runner


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def leftover_socket(path: Path) -> None:
    """A socket file nobody listens on, as a crash leaves it."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(path))
    sock.close()


def test_no_daemon_and_no_socket_fails_at_once(tmp_path: Path) -> None:
    wait = RestartWait(tmp_path / "d.sock", 60.0, clock=Clock(), probe=lambda path: None)
    error = wait.after(ABSENT)
    assert isinstance(error, DaemonNotRunning)
    assert str(error).startswith(f"openmemoryd is not running (no socket at {tmp_path}/d.sock); ")
    assert "openmemoryd start" in str(error)


def test_a_leftover_socket_without_a_daemon_fails_at_once_saying_so(tmp_path: Path) -> None:
    path = tmp_path / "d.sock"
    leftover_socket(path)
    error = RestartWait(path, 60.0, clock=Clock(), probe=lambda path: None).after(REFUSED)
    assert isinstance(error, DaemonNotRunning)
    assert str(error).startswith(
        f"openmemoryd is not running: a socket is at {path} but nothing answers "
        "(the daemon crashed or was killed; starting it replaces the socket); "
    )


def test_a_live_daemon_is_waited_for_up_to_the_timeout(tmp_path: Path) -> None:
    path = tmp_path / "d.sock"
    leftover_socket(path)  # a stopping daemon's socket: there, but refusing
    clock = Clock()
    wait = RestartWait(path, 1.0, clock=clock, probe=lambda path: 4242)
    for _ in range(19):
        assert wait.after(REFUSED) == POLL_S
        clock.now += POLL_S
    clock.now += 0.5
    error = wait.after(REFUSED)
    assert type(error) is ConnectError  # the daemon runs: not DaemonNotRunning
    assert str(error) == (
        f"openmemoryd (pid 4242) did not answer on {path} within 1 s; "
        "a socket is there but nothing answers: it is stopping; retry in a moment"
    )
    path.unlink()
    assert "its socket is not there yet: it is starting" in str(wait.after(ABSENT))


def test_the_last_pause_ends_at_the_deadline(tmp_path: Path) -> None:
    clock = Clock()
    wait = RestartWait(tmp_path / "d.sock", 0.12, clock=clock, probe=lambda path: 7)
    clock.now += 0.1
    assert wait.after(ABSENT) == pytest.approx(0.02)


def test_after_the_daemon_exits_the_next_one_of_a_restart_is_awaited(tmp_path: Path) -> None:
    clock = Clock()
    pids: list[int | None] = [10, None]
    wait = RestartWait(tmp_path / "d.sock", 60.0, clock=clock, probe=lambda path: pids[0])
    assert wait.after(REFUSED) == POLL_S  # stopping
    pids[0] = None  # exited; the new process has not taken the lock yet
    clock.now += RESTART_GAP_S - 0.1
    assert wait.after(ABSENT) == POLL_S
    pids[0] = 11  # the new daemon, starting
    clock.now += 1.0
    assert wait.after(ABSENT) == POLL_S
    pids[0] = None  # it died at its start: no second grace beyond the gap
    clock.now += RESTART_GAP_S
    error = wait.after(ABSENT)
    assert isinstance(error, DaemonNotRunning)
    assert "(no socket at" in str(error)


def test_no_timeout_still_bounds_the_wait(tmp_path: Path) -> None:
    clock = Clock()
    wait = RestartWait(tmp_path / "d.sock", None, clock=clock, probe=lambda path: 7)
    clock.now += UNLIMITED_WAIT_S
    assert isinstance(wait.after(ABSENT), ConnectError)


def test_other_connect_errors_are_not_waited_on(tmp_path: Path) -> None:
    wait = RestartWait(tmp_path / "d.sock", 60.0, clock=Clock(), probe=lambda path: 7)
    error = wait.after(PermissionError(13, "Permission denied"))
    assert str(error) == f"permission denied connecting to {tmp_path}/d.sock"


# ---------------------------------------------------------------- the probe


@pytest.fixture
def pretend_daemon() -> Iterator[subprocess.Popen[bytes]]:
    """A process whose command line says openmemoryd, as the daemon's does."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "openmemoryd"])
    yield proc
    proc.kill()
    proc.wait()


def test_the_probe_finds_a_live_daemon_in_the_lock_file(
    tmp_path: Path, pretend_daemon: subprocess.Popen[bytes]
) -> None:
    path = tmp_path / "d.sock"
    assert daemon_pid(path) is None  # no lock file
    lock = socket_lock_path(path)
    lock.write_text(f"{pretend_daemon.pid}\n")
    assert daemon_pid(path) == pretend_daemon.pid
    pretend_daemon.kill()
    time.sleep(0.2)  # dead, not reaped yet: a zombie is no daemon
    assert daemon_pid(path) is None
    pretend_daemon.wait()
    assert daemon_pid(path) is None  # gone


@pytest.mark.parametrize("text", ["", "0", "-1", "garbage", "99999999"])
def test_the_probe_ignores_what_names_no_process(tmp_path: Path, text: str) -> None:
    path = tmp_path / "d.sock"
    socket_lock_path(path).write_text(text)
    assert daemon_pid(path) is None


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_the_probe_ignores_a_reused_pid_of_another_program(tmp_path: Path) -> None:
    path = tmp_path / "d.sock"
    socket_lock_path(path).write_text(f"{os.getpid()}\n")  # pytest, not openmemoryd
    assert daemon_pid(path) is None


# ---------------------------------------------------------------- the clients


def sync_answer(conn: socket.socket, request: RawRequest) -> None:
    conn.sendall(encode_message(Reply(id=request.id, body=SYNCED)))


def test_both_clients_wait_for_a_daemon_that_is_starting(
    env: Env, run: Run, pretend_daemon: subprocess.Popen[bytes]
) -> None:
    path = env.socket_dir / "late.sock"
    socket_lock_path(path).write_text(f"{pretend_daemon.pid}\n")

    def serve_later(delay: float, done: threading.Event) -> None:
        time.sleep(delay)
        with fake_daemon(path, sync_answer):
            done.wait(30)
        path.unlink()

    for connect in ("blocking", "async"):
        done = threading.Event()
        server = threading.Thread(target=serve_later, args=(0.5, done))
        started = time.monotonic()
        server.start()
        try:
            if connect == "blocking":
                with Client(path, timeout=10) as client:
                    assert client.sync() == SYNCED
            else:

                async def scenario() -> None:
                    async with AsyncClient(path, timeout=10) as client:
                        assert await client.sync() == SYNCED

                run(scenario)
            assert time.monotonic() - started >= 0.45
        finally:
            done.set()
            server.join()


def test_the_async_client_replaces_a_connection_closed_while_idle(env: Env, run: Run) -> None:
    """The daemon hangs up after answering (as a restarted one did): the next
    call goes on a fresh connection instead of failing."""
    requests: list[RawRequest] = []

    def answer_then_hang_up(conn: socket.socket, request: RawRequest) -> None:
        requests.append(request)
        sync_answer(conn, request)
        conn.shutdown(socket.SHUT_RDWR)

    path = env.socket_dir / "restarting.sock"
    with fake_daemon(path, answer_then_hang_up):

        async def scenario() -> None:
            requests.clear()
            async with AsyncClient(path, timeout=5) as client:
                first = client.welcome
                await client.sync()
                await anyio.sleep(0.2)  # the hang-up arrives while nothing waits
                await client.sync()
                assert client.welcome is not None
                assert client.welcome is not first
                await anyio.sleep(0.2)
                await client.sync()
            assert len(requests) == 3  # each sent once: nothing was sent twice

        run(scenario)


def test_a_request_lost_after_it_was_sent_is_not_sent_again(env: Env, run: Run) -> None:
    requests: list[RawRequest] = []

    def hang_up(conn: socket.socket, request: RawRequest) -> None:
        requests.append(request)
        conn.shutdown(socket.SHUT_RDWR)

    path = env.socket_dir / "lossy.sock"
    with fake_daemon(path, hang_up):

        async def scenario() -> None:
            requests.clear()
            async with AsyncClient(path, timeout=5) as client:
                with pytest.raises(ConnectError, match="openmemoryd closed the connection"):
                    await client.append("a note")
            assert len(requests) == 1

        run(scenario)
