"""What `Client` and `AsyncClient` share: the half of a call that does no I/O.

Turning friendly arguments into wire values, reading the daemon's frames, and
naming every failure as an `OmemError` with the same message in both clients.
The two clients differ only in how they move bytes and wait.
"""

from __future__ import annotations

import errno
from pathlib import Path
from typing import TypeVar

from omem_client._errors import (
    ConnectError,
    DaemonError,
    DaemonNotRunning,
    ProtocolViolation,
    daemon_error,
)
from omem_protocol import (
    DaemonFrame,
    Error,
    FrameBuffer,
    Hello,
    ProtocolError,
    Reply,
    ReplyBody,
    Request,
    Welcome,
    decode_daemon_frame,
    encode_message,
)

R = TypeVar("R")

START_HINT = "start it with `openmemoryd run` (or `systemctl --user start openmemoryd`)"


def encode(frame: Hello | Request) -> bytes:
    """*frame* as bytes to send; one the daemon would refuse as too large is an error."""
    try:
        return encode_message(frame)
    except ProtocolError as exc:
        raise ProtocolViolation(f"request too large to send: {exc}") from None


# ---------------------------------------------------------------- replies


def welcome_of(frame: DaemonFrame) -> Welcome:
    """The handshake's answer, or the refusal it carries as an exception."""
    if isinstance(frame, Reply) and isinstance(frame.body, Error):
        raise reply_error(frame.body)
    if not isinstance(frame, Welcome):
        raise violation(f"expected Welcome, got {type(frame).__name__}")
    return frame


def result_of(body: ReplyBody, expected: type[R]) -> R:
    """The result a reply carries, or its error as an exception."""
    if isinstance(body, Error):
        raise reply_error(body)
    if not isinstance(body, expected):
        raise violation(f"expected {expected.__name__}, got {type(body).__name__}")
    return body


def reply_error(error: Error) -> DaemonError:
    return daemon_error(error.code, error.message, error.detail)


def parting_error(frames: FrameBuffer, unread: bytes) -> DaemonError | None:
    """The error the daemon sent just before closing, if *unread* holds one.

    A refused connection (another uid, a version the daemon does not speak)
    gets one error frame and is closed; a client still sending its Hello
    then sees a broken pipe, yet the explanation is waiting in its receive
    buffer, and is what the user should read.
    """
    try:
        bodies = frames.feed(unread)
        decoded = [decode_daemon_frame(body) for body in bodies]
    except ProtocolError:
        return None
    for frame in decoded:
        if isinstance(frame, Reply) and isinstance(frame.body, Error):
            return reply_error(frame.body)
    return None


# ---------------------------------------------------------------- failures


def connect_error(exc: OSError, socket_path: Path) -> ConnectError:
    """What a failed connect to *socket_path* means to the user."""
    if isinstance(exc, FileNotFoundError | ConnectionRefusedError):
        return DaemonNotRunning(
            f"openmemoryd is not running (nothing listens on {socket_path}); {START_HINT}"
        )
    if exc.errno in (errno.EACCES, errno.EPERM):
        return ConnectError(f"permission denied connecting to {socket_path}")
    return ConnectError(f"cannot connect to {socket_path}: {exc.strerror or exc}")


def lost_connection(exc: OSError | None) -> ConnectError:
    reason = f": {exc.strerror or exc}" if exc is not None else ""
    return ConnectError(f"lost the connection to openmemoryd{reason}")


def closed_by_daemon() -> ConnectError:
    return ConnectError("openmemoryd closed the connection")


def no_answer(timeout: float | None) -> ConnectError:
    within = f"within {timeout:g} s" if timeout is not None else "in time"
    return ConnectError(f"openmemoryd did not answer {within}")


def violation(message: str) -> ProtocolViolation:
    return ProtocolViolation(f"protocol error talking to openmemoryd: {message}")
