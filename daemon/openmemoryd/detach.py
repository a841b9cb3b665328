"""`openmemoryd start` and `openmemoryd stop`: the daemon in the background.

A quick start that blocks the shell (`openmemoryd run`) cannot be pasted
top to bottom, and a user service is one more thing to set up before the
first search. `start` runs the same `openmemoryd run` as a detached process
(its own session, stdin from /dev/null, output appended to
``<state_dir>/openmemoryd.log``) and returns once the daemon answers on its
socket, so the next command can use it; `stop` asks the daemon that answers
there to shut down (SIGTERM to the pid it reports) and waits until it has.
For a daemon that should survive logout and reboots, `install-service`
remains the way.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from omem_client import Client, OmemError
from omem_client._restart_wait import daemon_pid
from openmemoryd.config import Config

__all__ = ["LOG_NAME", "start_detached", "stop_running"]

LOG_NAME: Final = "openmemoryd.log"
START_TIMEOUT_S: Final = 60.0
STOP_TIMEOUT_S: Final = 30.0


def _running_pid(socket: Path) -> int | None:
    """The pid of the daemon answering on *socket*, if one does."""
    try:
        with Client(socket, timeout=5.0) as client:
            return client.status().pid
    except OmemError:  # not running, or not answering as a daemon should
        return None


def _tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text("utf-8", errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def start_detached(config: Config, run_args: Sequence[str]) -> tuple[int, str]:
    """Start `openmemoryd run RUN_ARGS` in the background; (exit code, message)."""
    pid = _running_pid(config.socket)
    if pid is not None:
        return 0, f"openmemoryd is already running (pid {pid}) on {config.socket}"
    config.state_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    log = config.state_dir / LOG_NAME
    with log.open("ab") as out, open(os.devnull, "rb") as devnull:
        proc = subprocess.Popen(
            [sys.executable, "-m", "openmemoryd", "run", *run_args],
            stdin=devnull,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        code = proc.poll()
        if code is not None:
            return 1, f"openmemoryd exited with {code} while starting; {log}:\n{_tail(log)}"
        if _running_pid(config.socket) == proc.pid:
            return 0, f"openmemoryd started (pid {proc.pid}) on {config.socket}; log: {log}"
        time.sleep(0.1)
    return 1, (
        f"openmemoryd (pid {proc.pid}) did not answer on {config.socket} within "
        f"{START_TIMEOUT_S:.0f} s; it is still running; see {log}"
    )


def stop_running(socket: Path, *, absent: str = "") -> tuple[int, str]:
    """Stop the daemon of *socket*; (exit code, message), *absent* added to
    the message when no daemon is there.

    Only the socket is needed, not the config: `stop` must work while the
    config file is broken. The daemon answering there names its pid; one
    that does not answer (still opening its index, or stuck) is found by the
    pid in the socket's lock file, which only a live openmemoryd holds.
    """
    pid = _running_pid(socket) or daemon_pid(socket)
    if pid is None:
        return 0, f"openmemoryd is not running on {socket}{absent}"
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return 0, f"openmemoryd (pid {pid}) has already exited"
    except PermissionError:
        return 1, f"not allowed to signal pid {pid}: is it another user's daemon?"
    deadline = time.monotonic() + STOP_TIMEOUT_S
    while time.monotonic() < deadline:
        if not _alive(pid):
            return 0, f"openmemoryd (pid {pid}) stopped"
        time.sleep(0.1)
    return 1, f"openmemoryd (pid {pid}) did not stop within {STOP_TIMEOUT_S:.0f} s"


def _alive(pid: int) -> bool:
    """Whether *pid* still runs: an exited daemon its parent has not reaped
    yet (a zombie, which signal 0 still finds) has stopped all the same."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:  # not Linux, or gone meanwhile: signal 0 said it was there
        return True
    # the state follows the parenthesised command name, which may hold spaces
    return stat[stat.rfind(b")") + 2 : stat.rfind(b")") + 3] not in (b"Z", b"X")
