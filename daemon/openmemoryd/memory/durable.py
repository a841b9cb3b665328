"""Durable appends: lock, write whole, fsync.

Shared by Markdown appends and transcript writes so both keep the same
promise: once the call returns, the bytes are on disk, whole, after whatever
was there before, and no concurrent writer that also locks interleaved with
them.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import time
from pathlib import Path
from typing import Final

from openmemoryd.errors import Conflict

LOCK_TIMEOUT_S: Final = 10.0


def lock_exclusive(fd: int, name: str, timeout_s: float = LOCK_TIMEOUT_S) -> None:
    """flock *fd* for writing, or raise `Conflict` if another process holds it too long."""
    _lock(fd, fcntl.LOCK_EX, name, timeout_s)


def lock_shared(fd: int, name: str, timeout_s: float = LOCK_TIMEOUT_S) -> None:
    """flock *fd* for reading: no writer is halfway through while we read."""
    _lock(fd, fcntl.LOCK_SH, name, timeout_s)


def _lock(fd: int, operation: int, name: str, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            fcntl.flock(fd, operation | fcntl.LOCK_NB)
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


def replace_file(target: Path, data: bytes, *, mode: int, tag: str) -> None:
    """Give *target* the content *data* atomically: a temporary file beside
    it (named with *tag*), fsynced, renamed over it, the directory fsynced.
    A crash leaves the old file or the new one, never a mix."""
    temp = target.with_name(f".{target.name}.omem-{tag}-{os.getpid()}")
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(temp, flags, mode)
    try:
        write_all(fd, data)
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    os.close(fd)
    os.replace(temp, target)
    fsync_dir(target.parent)
