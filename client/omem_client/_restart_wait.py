"""Riding out a daemon restart at connect time, for `Client` and `AsyncClient` alike.

A refused connect, or no socket file, means "no daemon" only when no daemon
process is around. But while openmemoryd stops, its listener is closed for
the whole drain (up to ``[server] drain_timeout_s``) before its socket file
goes; while it starts, it binds the socket only once its index is open (and
answers at once from then on). A command run in either window, as during
``systemctl --user restart openmemoryd``, met "not running" although the
daemon was back a moment later. Throughout both windows the daemon holds its
socket lock (`socket_lock_path`), whose file names its pid. So a failed
connect is judged by that pid:

* a live openmemoryd there: the daemon is stopping or starting, so connect
  again every `POLL_S` until it answers, the process is gone, or the
  caller's timeout has passed;
* a process seen alive and now gone: a short grace (`RESTART_GAP_S`) for the
  next daemon of a restart to take the lock;
* no live daemon from the first look: nothing is coming, and the error is
  raised at once, so a stopped daemon costs no wait at all.

The lock file is only read, never locked: taking the lock, even for an
instant, could make a starting daemon believe another one runs. I/O here is
a stat and two tiny reads, cheap enough for an event loop too.
"""

from __future__ import annotations

import os
import stat
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Final

from omem_client._calls import START_HINT, connect_error
from omem_client._errors import ConnectError, DaemonNotRunning
from omem_protocol import socket_lock_path

POLL_S: Final = 0.05
"""How often a waiting client tries the socket again."""

RESTART_GAP_S: Final = 5.0
"""How long after the daemon it waited for has exited a client still waits
for the next one (a restart's new process takes the lock once its interpreter
has started and imported the daemon: about 2 s on a busy machine)."""

UNLIMITED_WAIT_S: Final = 60.0
"""The bound for a client with no timeout, which would otherwise wait for
ever on a daemon stuck in its start."""


def daemon_pid(socket_path: Path) -> int | None:
    """The pid of the live openmemoryd that holds *socket_path*'s lock, or None.

    None when there is no lock file, when its pid has exited or is a zombie,
    belongs to another user, or (where /proc tells) is not openmemoryd: a
    pid reused after a crash must not make a client wait.
    """
    try:
        text = socket_lock_path(socket_path).read_bytes()[:32]
    except OSError:
        return None
    try:
        pid = int(text.strip() or b"0")
    except ValueError:
        return None
    if pid <= 0:  # 0 and negatives would name process groups to os.kill
        return None
    try:
        os.kill(pid, 0)
    except OSError:  # gone, or not ours (EPERM): not our daemon either way
        return None
    return pid if _is_live_daemon(pid) else None


def _is_live_daemon(pid: int) -> bool:
    """What /proc says of *pid* (Linux); elsewhere the pid alone is trusted."""
    proc = Path("/proc") / str(pid)
    if not sys.platform.startswith("linux"):
        return True
    try:
        state = (proc / "stat").read_bytes()
        command = (proc / "cmdline").read_bytes()
    except OSError:
        return False  # exited meanwhile
    # the state follows the parenthesised command name, which may hold spaces
    if state[state.rfind(b")") + 2 : state.rfind(b")") + 3] in (b"Z", b"X"):
        return False  # exited, not yet reaped by its parent
    return b"openmemoryd" in command


def socket_file_exists(socket_path: Path) -> bool:
    """Whether a socket file is at *socket_path* (what a crash leaves behind)."""
    try:
        return stat.S_ISSOCK(os.stat(socket_path).st_mode)
    except OSError:
        return False


class RestartWait:
    """The decision, after each failed connect, to try again or give up.

    *limit* is the client's timeout (None: `UNLIMITED_WAIT_S`); *clock* and
    *probe* (`daemon_pid`) are parameters for the tests.
    """

    def __init__(
        self,
        socket_path: Path,
        limit: float | None,
        *,
        clock: Callable[[], float] = time.monotonic,
        probe: Callable[[Path], int | None] = daemon_pid,
    ) -> None:
        self.socket_path = socket_path
        self._limit = UNLIMITED_WAIT_S if limit is None else limit
        self._clock = clock
        self._probe = probe
        self._deadline = clock() + self._limit
        self._seen: int | None = None  # the last daemon pid found alive
        self._gap_ends = 0.0

    def after(self, exc: OSError) -> float | ConnectError:
        """Seconds to pause before the next connect, or the error to give up with."""
        if not isinstance(exc, FileNotFoundError | ConnectionRefusedError):
            return connect_error(exc, self.socket_path)  # no wait can cure it
        now = self._clock()
        pid = self._probe(self.socket_path)
        if pid is not None:
            self._seen, self._gap_ends = pid, now + RESTART_GAP_S
        elif self._seen is None or now >= self._gap_ends:
            return not_running(self.socket_path)
        if now >= self._deadline:
            return self._still_away()
        return min(POLL_S, self._deadline - now)

    def _still_away(self) -> ConnectError:
        assert self._seen is not None
        if socket_file_exists(self.socket_path):
            doing = "a socket is there but nothing answers: it is stopping"
        else:
            doing = "its socket is not there yet: it is starting"
        return ConnectError(
            f"openmemoryd (pid {self._seen}) did not answer on {self.socket_path} within "
            f"{self._limit:g} s; {doing}; retry in a moment"
        )


def not_running(socket_path: Path) -> DaemonNotRunning:
    """No daemon to wait for: said apart for an absent and a leftover socket."""
    if socket_file_exists(socket_path):
        return DaemonNotRunning(
            f"openmemoryd is not running: a socket is at {socket_path} but nothing answers "
            f"(the daemon crashed or was killed; starting it replaces the socket); {START_HINT}"
        )
    return DaemonNotRunning(
        f"openmemoryd is not running (no socket at {socket_path}); {START_HINT}"
    )
