"""Single-instance locks.

A lock is an ``flock`` on a small file holding the owner's pid. The kernel
releases it when the process dies, however it dies, so a crash never leaves a
stale lock behind; the file itself is left in place on exit (removing it
would let a third process lock a new file while a second still waits on the
old one).
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from typing import Final

from openmemoryd.errors import StartupError

STATE_LOCK_NAME: Final = "openmemoryd.lock"
"""The lock file in the state dir that one running daemon holds."""


class InstanceLock:
    """An exclusive lock that says "one openmemoryd uses this *what*"."""

    def __init__(self, path: Path, what: str) -> None:
        self.path = path
        self.what = what
        self._fd: int | None = None

    def acquire(self) -> None:
        """Take the lock or raise `StartupError` naming the holder's pid."""
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "unknown"
            os.close(fd)
            raise StartupError(
                f"openmemoryd is already running (pid {holder}) for {self.what}; "
                "stop it first, or give this one another --state-dir and --socket"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
        self._fd = fd

    def held(self) -> bool:
        """Whether a running daemon holds the lock now; creates nothing, so
        commands like `openmemoryd init` can ask without side effects (a
        connect to a socket-activated socket would start the daemon)."""
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
        except OSError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        finally:
            os.close(fd)
        return False

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
