"""systemd socket activation: the daemon serves on a socket it inherits as fd 3.

The end-to-end tests play systemd's part: they bind and listen on the socket
themselves, then start the real daemon through a tiny wrapper that puts the
socket at fd 3 and sets LISTEN_PID to its own pid before exec'ing
`python -m openmemoryd run` (the pid survives exec, as with systemd's fork).
"""

from __future__ import annotations

import os
import shutil
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import Daemon, Env
from openmemoryd.errors import StartupError
from openmemoryd.server import adopt_unix_listener
from openmemoryd.service import take_activation_socket

_WRAPPER = """
import os, sys
fd = int(sys.argv[1])
if fd != 3:
    os.dup2(fd, 3)
os.environ["LISTEN_PID"] = str(os.getpid())
os.environ["LISTEN_FDS"] = "1"
os.execv(sys.executable, [sys.executable, "-m", "openmemoryd", "run"])
"""


def start_activated(env: Env, inherited: int) -> Daemon:
    """Start the real daemon as systemd would for a socket unit (not waiting)."""
    daemon = Daemon(env)
    with daemon.log_path.open("ab") as log:
        daemon.proc = subprocess.Popen(
            [sys.executable, "-c", _WRAPPER, str(inherited)],
            env=env.vars,
            pass_fds=(inherited,),
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    return daemon


def listening_socket(path: Path) -> socket.socket:
    """What systemd does for ListenStream= with SocketMode=0600."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(path))
    os.chmod(path, 0o600)
    sock.listen(16)
    return sock


@pytest.fixture
def systemd_socket(env: Env) -> Iterator[socket.socket]:
    sock = listening_socket(env.socket)
    try:
        yield sock
    finally:
        sock.close()


# ---------------------------------------------------------------- end to end


@pytest.mark.e2e
def test_the_daemon_serves_on_the_socket_systemd_passes_and_leaves_it(
    env: Env, systemd_socket: socket.socket
) -> None:
    daemon = start_activated(env, systemd_socket.fileno())
    try:
        daemon.wait_ready()
        assert daemon.cli("append", "the heron nests by the mill").returncode == 0
        found = daemon.cli("search", "heron")
        assert "the heron nests by the mill" in found.stdout, found.stderr
        assert "socket systemd passed" in daemon.log()
    finally:
        code = daemon.stop()
    assert code == 0, daemon.log()
    assert "openmemoryd stopped" in daemon.log()
    # systemd's socket file is left alone: it keeps listening for the next start.
    assert stat.S_ISSOCK(os.lstat(env.socket).st_mode)


@pytest.mark.e2e
def test_a_client_that_connects_while_no_daemon_runs_is_served_on_activation(
    env: Env, systemd_socket: socket.socket
) -> None:
    first = start_activated(env, systemd_socket.fileno())
    first.wait_ready()
    first.cli("append", "kept across activations")
    assert first.stop() == 0
    # Nothing runs now, but systemd still listens: the connection waits in the
    # backlog until the next activation serves it.
    waiting = subprocess.Popen(
        [sys.executable, "-m", "omem_client", "search", "activations"],
        env=env.vars,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    second = start_activated(env, systemd_socket.fileno())
    try:
        out, err = waiting.communicate(timeout=60)
        assert waiting.returncode == 0, err + second.log()
        assert "kept across activations" in out
    finally:
        if waiting.poll() is None:
            waiting.kill()
            waiting.wait()
        second.wait_ready()
        assert second.stop() == 0


@pytest.mark.e2e
def test_an_fd_that_is_not_a_socket_is_a_clear_error(env: Env, tmp_path: Path) -> None:
    with (tmp_path / "not-a-socket").open("w") as handle:
        daemon = start_activated(env, handle.fileno())
        assert daemon.proc is not None
        assert daemon.proc.wait(30) == 1
    log = daemon.log()
    assert "fd 3 (from LISTEN_FDS) is not a socket but a regular file" in log
    assert "Traceback" not in log


@pytest.mark.e2e
def test_an_activated_socket_in_an_unsafe_directory_is_refused(
    env: Env, systemd_socket: socket.socket
) -> None:
    os.chmod(env.socket_dir, 0o777)
    daemon = start_activated(env, systemd_socket.fileno())
    assert daemon.proc is not None
    assert daemon.proc.wait(30) == 1
    assert "writable by group or others" in daemon.log()


@pytest.mark.e2e
@pytest.mark.skipif(
    shutil.which("systemd-socket-activate") is None,
    reason="systemd-socket-activate is not installed (Debian package: systemd)",
)
def test_systemd_socket_activate_starts_the_daemon_at_the_first_connection(env: Env) -> None:
    """The same, with systemd's own implementation of the protocol."""
    passed = [
        arg for name in env.vars if name.startswith(("OPENMEMORY_", "XDG_")) for arg in ("-E", name)
    ]
    daemon = Daemon(env)
    with daemon.log_path.open("ab") as log:
        daemon.proc = subprocess.Popen(
            ["systemd-socket-activate", "-l", str(env.socket), *passed,
             sys.executable, "-m", "openmemoryd", "run"],
            env=env.vars, stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 20
        while not env.socket.exists():
            assert time.monotonic() < deadline, daemon.log()
            time.sleep(0.02)
        assert "ready on" not in daemon.log()  # nothing started yet
        status = daemon.cli("status")  # this connection starts it
        assert status.returncode == 0, status.stderr + daemon.log()
        assert "socket systemd passed" in daemon.log()
    finally:
        code = daemon.stop()
    assert code == 0, daemon.log()
    assert stat.S_ISSOCK(os.lstat(env.socket).st_mode)


# ---------------------------------------------------------------- the fd checks


def _activation_env(count: str = "1") -> dict[str, str]:
    return {"LISTEN_PID": str(os.getpid()), "LISTEN_FDS": count, "LISTEN_FDNAMES": "x"}


def test_not_activated_means_no_socket() -> None:
    assert take_activation_socket({}) is None


def test_variables_for_another_process_are_ignored_and_removed() -> None:
    environ = {"LISTEN_PID": "1", "LISTEN_FDS": "1", "LISTEN_FDNAMES": "x", "KEEP": "me"}
    assert take_activation_socket(environ) is None
    assert environ == {"KEEP": "me"}  # our children must not see them either


def test_the_inherited_socket_is_taken_with_its_path(env: Env) -> None:
    with listening_socket(env.socket) as original:
        environ = _activation_env()
        taken = take_activation_socket(environ, first_fd=os.dup(original.fileno()))
        assert taken is not None
        with taken.sock:
            assert taken.path == env.socket
            assert not taken.sock.get_inheritable()
            assert environ == {}


@pytest.mark.parametrize(
    ("kind", "message"),
    [
        ("datagram", "not a Unix stream socket"),
        ("tcp", "AF_INET SOCK_STREAM socket, not a Unix stream socket"),
        ("unlistened", "not listening"),
        ("unnamed", "not bound to a path"),
    ],
)
def test_sockets_systemd_would_not_pass_for_us_are_refused(
    env: Env, kind: str, message: str
) -> None:
    if kind == "datagram":
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        sock.bind(str(env.socket))
    elif kind == "tcp":
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))
        sock.listen()
    elif kind == "unlistened":
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.bind(str(env.socket))
    else:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.bind("")  # autobind: an abstract address on Linux
        sock.listen()
    with sock, pytest.raises(StartupError, match=message):
        take_activation_socket(_activation_env(), first_fd=os.dup(sock.fileno()))


@pytest.mark.parametrize(
    ("environ", "message"),
    [
        ({"LISTEN_PID": "me", "LISTEN_FDS": "1"}, "LISTEN_PID='me' is not a non-negative"),
        ({"LISTEN_FDS": "-1"}, "LISTEN_FDS='-1' is not a non-negative"),
    ],
)
def test_malformed_variables_are_a_clear_error(environ: dict[str, str], message: str) -> None:
    environ = {"LISTEN_PID": str(os.getpid()), **environ}
    with pytest.raises(StartupError, match=message):
        take_activation_socket(environ)


def test_a_closed_fd_is_a_clear_error() -> None:
    fd = os.dup(0)
    os.close(fd)
    with pytest.raises(StartupError, match=f"fd {fd} .* is not open"):
        take_activation_socket(_activation_env(), first_fd=fd)


def test_zero_fds_means_no_socket() -> None:
    assert take_activation_socket(_activation_env("0")) is None


def test_a_socket_bound_elsewhere_than_configured_is_refused(env: Env) -> None:
    with listening_socket(env.socket) as original:
        taken = take_activation_socket(_activation_env(), first_fd=os.dup(original.fileno()))
        assert taken is not None
        with taken.sock, pytest.raises(StartupError, match=r"make ListenStream= .* agree"):
            adopt_unix_listener(taken, env.socket_dir / "other.sock")
