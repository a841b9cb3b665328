"""Binding the Unix socket safely.

* The socket's directory must belong to us and be writable by nobody else
  (otherwise another user could swap the socket for their own); a directory
  we create is 0700. The socket itself is created 0600 (under umask 0177, so
  there is no window with a wider mode).
* An existing socket file is probed: if a daemon answers, we refuse to start;
  if nothing answers it is the leftover of a crash and is replaced. Anything
  else at that path is refused, never deleted.
* On shutdown the socket is removed only if it is still the one we bound, so
  a stopping daemon never deletes a newer daemon's socket.
* A socket passed by systemd (socket activation) is served as it is, but only
  if it is bound to the configured path and its directory passes the same
  checks; its file is systemd's, so it is never removed.
"""

from __future__ import annotations

import logging
import os
import socket
import stat
from pathlib import Path

import trio

from omem_protocol import socket_path_problem
from openmemoryd.errors import StartupError
from openmemoryd.service.activation import ActivationSocket

logger = logging.getLogger("openmemoryd.server")


def check_socket_dir(directory: Path) -> None:
    """Create *directory* (0700) if missing; refuse one others could write."""
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = os.lstat(directory)
    except OSError as exc:
        raise StartupError(f"cannot create socket directory {directory}: {exc.strerror}") from None
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        raise StartupError(f"socket directory {directory} is not a directory (or is a symlink)")
    if st.st_uid != os.geteuid():
        raise StartupError(
            f"socket directory {directory} belongs to uid {st.st_uid}, not to you; "
            "refusing to use it"
        )
    if st.st_mode & 0o022:
        raise StartupError(
            f"socket directory {directory} is writable by group or others "
            f"(mode {stat.S_IMODE(st.st_mode):o}); run `chmod 0700 {directory}` "
            "or choose another socket path"
        )


def _daemon_answers(path: Path) -> bool:
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(1.0)
    try:
        probe.connect(os.fspath(path))
    except OSError:
        return False
    finally:
        probe.close()
    return True


async def bind_unix_listener(path: Path) -> tuple[trio.SocketListener, int]:
    """Listen on *path*; return the listener and the socket file's inode."""
    problem = socket_path_problem(path)
    if problem:
        raise StartupError(problem)
    check_socket_dir(path.parent)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        pass
    else:
        if not stat.S_ISSOCK(st.st_mode):
            raise StartupError(f"{path} exists and is not a socket; refusing to replace it")
        if await trio.to_thread.run_sync(_daemon_answers, path):
            raise StartupError(f"openmemoryd is already running on {path}")
        os.unlink(path)  # left behind by a daemon that crashed
    sock = trio.socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    previous = os.umask(0o177)
    try:
        await sock.bind(os.fspath(path))
    except OSError as exc:
        sock.close()
        raise StartupError(f"cannot bind {path}: {exc.strerror}") from None
    finally:
        os.umask(previous)
    os.chmod(path, 0o600)
    sock.listen(128)
    return trio.SocketListener(sock), os.lstat(path).st_ino


def adopt_unix_listener(activation: ActivationSocket, path: Path) -> trio.SocketListener:
    """Serve on the listening socket systemd passed us instead of binding *path*.

    The socket must be bound to *path*: clients, the single-instance lock and
    `status` all go by the configured path, so a socket elsewhere would be a
    daemon nobody finds.
    """
    if os.path.realpath(activation.path) != os.path.realpath(path):
        raise StartupError(
            f"systemd passed a socket bound to {activation.path}, but openmemoryd is "
            f"configured for {path}; make ListenStream= in openmemoryd.socket and the "
            "daemon's socket setting (--socket, OPENMEMORY_SOCKET or the config file) agree"
        )
    check_socket_dir(path.parent)
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        mode = 0
    if mode & 0o077:
        # Still safe (the directory is private and peers' uids are checked), but
        # not what our own socket unit asks for.
        logger.warning(
            "socket %s has mode %o; SocketMode=0600 in openmemoryd.socket is recommended",
            path,
            mode,
        )
    return trio.SocketListener(trio.socket.from_stdlib_socket(activation.sock))


def remove_socket(path: Path, inode: int) -> None:
    """Unlink *path* if it is still the socket we bound (same inode)."""
    try:
        if os.lstat(path).st_ino == inode:
            os.unlink(path)
    except FileNotFoundError:
        pass
