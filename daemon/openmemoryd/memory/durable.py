"""Durable appends: lock, write whole, fsync.

Shared by Markdown appends and transcript writes so both keep the same
promise: once the call returns, the bytes are on disk, whole, after whatever
was there before, and no concurrent writer that also locks interleaved with
them.
"""

from __future__ import annotations

import errno
import fcntl
import os
import time
from pathlib import Path
from typing import Final

from openmemoryd.errors import Conflict

LOCK_TIMEOUT_S: Final = 10.0


def lock_exclusive(fd: int, name: str, timeout_s: float = LOCK_TIMEOUT_S) -> None:
    """flock *fd*, or raise `Conflict` if another process holds it too long."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except OSError as exc:
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise
        if time.monotonic() > deadline:
            raise Conflict(f"{name} is locked by another process; try again")
        time.sleep(0.02)


def read_all(fd: int) -> bytes:
    parts: list[bytes] = []
    offset = 0
    while block := os.pread(fd, 1 << 20, offset):
        parts.append(block)
        offset += len(block)
    return b"".join(parts)


def write_all(fd: int, payload: bytes) -> None:
    view = memoryview(payload)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def fsync_dir(directory: Path) -> None:
    """Make a new directory entry durable (after creating a file in it)."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
