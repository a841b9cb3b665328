"""Taking over the listening socket systemd passes us (socket activation).

The protocol (``sd_listen_fds(3)``): a service started for a socket unit finds
its listening sockets at fds 3, 4, ... with ``LISTEN_FDS`` set to their count
and ``LISTEN_PID`` to the pid they are meant for. The pid check matters
because environment variables are inherited: a child that sees them must not
take fds that are not its own.

Invariants:

* The ``LISTEN_*`` variables are removed from our environment on the first
  look, whoever they were meant for, so the processes the daemon starts (the
  embedding worker) never see them; the fd we take is made close-on-exec.
* An fd that is not a listening ``AF_UNIX`` ``SOCK_STREAM`` socket bound to a
  path is refused with a `StartupError` that says what it is instead. We
  never fall back to binding our own socket: systemd holds the path, and a
  second socket there would leave clients talking to the wrong one.
* The socket file belongs to systemd: the daemon serves on it but never
  unlinks it (see `openmemoryd.app`).
"""

from __future__ import annotations

import logging
import os
import socket
import stat
from collections.abc import MutableMapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from openmemoryd.errors import StartupError

logger = logging.getLogger("openmemoryd.service")

SD_LISTEN_FDS_START: Final = 3
_VARIABLES: Final = ("LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES")


@dataclass(frozen=True, slots=True)
class ActivationSocket:
    """A listening Unix socket inherited from systemd, and the path it is bound to."""

    sock: socket.socket
    path: Path


def take_activation_socket(
    environ: MutableMapping[str, str] | None = None,
    *,
    pid: int | None = None,
    first_fd: int = SD_LISTEN_FDS_START,
) -> ActivationSocket | None:
    """Return the socket systemd passed us, or None when we were not socket-activated.

    *environ*, *pid* and *first_fd* default to this process's; tests pass
    their own. Raises `StartupError` for activation variables that are
    malformed or point at something other than a listening Unix socket.
    """
    env = os.environ if environ is None else environ
    pid_text = env.get("LISTEN_PID", "").strip()
    count_text = env.get("LISTEN_FDS", "").strip()
    for name in _VARIABLES:
        env.pop(name, None)
    if not pid_text or not count_text:
        return None
    listen_pid = _number("LISTEN_PID", pid_text)
    if listen_pid != (os.getpid() if pid is None else pid):
        return None  # meant for the process that started us, not for us
    count = _number("LISTEN_FDS", count_text)
    if count == 0:
        return None
    if count > 1:
        logger.warning(
            "systemd passed %d sockets; using the first (fd %d) and ignoring the rest",
            count,
            first_fd,
        )
    return _listening_unix_socket(first_fd)


def _number(name: str, text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise StartupError(f"socket activation: {name}={text!r} is not a non-negative number")
    return value


def _listening_unix_socket(fd: int) -> ActivationSocket:
    where = f"socket activation: fd {fd} (from LISTEN_FDS)"
    try:
        mode = os.fstat(fd).st_mode
    except OSError as exc:
        raise StartupError(f"{where} is not open: {exc.strerror}") from None
    if not stat.S_ISSOCK(mode):
        raise StartupError(f"{where} is not a socket but a {_file_kind(mode)}")
    sock = socket.socket(fileno=fd)
    try:
        sock.set_inheritable(False)
        if sock.family != socket.AF_UNIX or sock.type != socket.SOCK_STREAM:
            raise StartupError(
                f"{where} is a {_name(sock.family)} {_name(sock.type)} socket, "
                "not a Unix stream socket (use ListenStream=/path in openmemoryd.socket)"
            )
        if not sock.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN):
            raise StartupError(f"{where} is a Unix socket that is not listening")
        address = sock.getsockname()
        if not isinstance(address, str) or not address or address.startswith("\0"):
            raise StartupError(
                f"{where} is not bound to a path (unnamed or abstract sockets are not supported)"
            )
    except BaseException:
        sock.close()
        raise
    return ActivationSocket(sock, Path(address))


def _name(constant: object) -> str:
    return str(getattr(constant, "name", constant))


def _file_kind(mode: int) -> str:
    if stat.S_ISREG(mode):
        return "regular file"
    if stat.S_ISFIFO(mode):
        return "pipe"
    if stat.S_ISCHR(mode):
        return "character device"
    if stat.S_ISDIR(mode):
        return "directory"
    return f"file of mode {stat.filemode(mode)}"
