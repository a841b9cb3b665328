"""What `Client` and `AsyncClient` share: the half of a call that does no I/O.

Turning friendly arguments into wire values, reading the daemon's frames, and
naming every failure as an `OmemError` with the same message in both clients.
The two clients differ only in how they move bytes and wait.
"""

from __future__ import annotations

import errno
from collections.abc import Callable, Mapping, Sequence
from datetime import date
from pathlib import Path
from typing import Literal, TypeVar

from omem_client._errors import (
    BadRequestError,
    ConnectError,
    DaemonError,
    DaemonNotRunning,
    ProtocolViolation,
    daemon_error,
)
from omem_protocol import (
    CaptureMessage,
    CompactParams,
    DaemonFrame,
    Error,
    FrameBuffer,
    Hello,
    Progress,
    ProtocolError,
    Reply,
    ReplyBody,
    Request,
    SessionEndParams,
    TasksParams,
    Turn,
    Welcome,
    decode_daemon_frame,
    encode_message,
)

R = TypeVar("R")
ProgressCallback = Callable[[Progress], None]

START_HINT = "start it with `openmemoryd run` (or `systemctl --user start openmemoryd`)"

# ---------------------------------------------------------------- arguments


def iso_date(value: date | None) -> str | None:
    """The agent's today on the wire; `None` lets the daemon use its own."""
    return value.isoformat() if value is not None else None


def as_turn(turn: Turn | Mapping[str, object]) -> Turn:
    """A `Turn`, or a mapping with ``role``, ``content`` (or ``text``), ``timestamp``."""
    if isinstance(turn, Turn):
        return turn
    text = turn.get("content", turn.get("text"))
    timestamp = turn.get("timestamp")
    if not isinstance(text, str):
        raise BadRequestError("each turn needs a 'content' (or 'text') string")
    if timestamp is not None and not isinstance(timestamp, int | float):
        raise BadRequestError("a turn's 'timestamp' must be epoch seconds")
    role = turn.get("role")
    if role != "user" and role != "assistant":
        raise BadRequestError(f"a turn's role must be 'user' or 'assistant', not {role!r}")
    return Turn(role=role, text=text, timestamp=timestamp)


def capture_message(message: CaptureMessage | Mapping[str, object]) -> CaptureMessage:
    """A chat-style message (string or text-block content) as the wire wants it."""
    if isinstance(message, CaptureMessage):
        return message
    role = message.get("role")
    content = message.get("content", message.get("text"))
    if not isinstance(role, str) or not role:
        raise BadRequestError("each message needs a 'role' string")
    if isinstance(content, str):
        text = content
    elif isinstance(content, list):
        text = "\n".join(
            block["text"]
            for block in content
            if isinstance(block, dict)
            and block.get("type") in ("text", "input_text")
            and isinstance(block.get("text"), str)
        )
    else:
        raise BadRequestError("each message needs 'content': a string or a list of text blocks")
    return CaptureMessage(role=role, text=text)


TaskAction = Literal["list", "add", "done", "reopen", "remove"]
TaskStatus = Literal["open", "done", "all"]


def _items(value: str | Sequence[str]) -> tuple[str, ...]:
    """A list argument; a lone string is one item, not a list of characters."""
    return (value,) if isinstance(value, str) else tuple(value)


def session_end_params(
    request: str | None,
    learned: str | Sequence[str],
    completed: str | Sequence[str],
    next_steps: str | Sequence[str],
    agent: str | None,
    session: str | None,
) -> SessionEndParams:
    return SessionEndParams(
        request=request,
        learned=_items(learned),
        completed=_items(completed),
        next_steps=_items(next_steps),
        agent=agent,
        session=session,
    )


def tasks_params(action: TaskAction, tasks: str | Sequence[str], status: TaskStatus) -> TasksParams:
    return TasksParams(action=action, tasks=_items(tasks), status=status)


def compact_params(
    session: str,
    messages: Sequence[CaptureMessage | Mapping[str, object]],
    *,
    keep_last: int | None,
    agent: str | None,
    flush: bool | None,
) -> CompactParams:
    """`compact`'s request; a message whose content is null (an assistant
    turn that only called tools) is sent as empty text, counted, not summarised."""
    wire = tuple(
        CaptureMessage(role=str(m.get("role") or ""), text="")
        if isinstance(m, Mapping) and m.get("content", m.get("text")) is None
        else capture_message(m)
        for m in messages
    )
    return CompactParams(
        session=session, messages=wire, keep_last=keep_last, agent=agent, flush=flush
    )


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
