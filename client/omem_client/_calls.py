"""What `Client` and `AsyncClient` share: the half of a call that does no I/O.

Turning friendly arguments into wire values, reading the daemon's frames, and
naming every failure as an `OmemError` with the same message in both clients.
The two clients differ only in how they move bytes and wait.
"""

from __future__ import annotations

import errno
import sys
from pathlib import Path
from typing import TypeVar

from omem_client._errors import (
    BadRequestError,
    ConnectError,
    DaemonError,
    NoAnswer,
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

START_HINT = "start it with `openmemoryd start` (or `systemctl --user start openmemoryd`)"


def encode(frame: Hello | Request) -> bytes:
    """*frame* as bytes to send; one the daemon would refuse as too large is an
    error, and so are text that is not Unicode (`unsendable_text`) and an
    integer msgpack cannot hold."""
    try:
        return encode_message(frame)
    except ProtocolError as exc:
        raise ProtocolViolation(f"request too large to send: {exc}") from None
    except UnicodeEncodeError as exc:
        raise BadRequestError(unsendable_text(exc)) from None
    except OverflowError as exc:  # an int past 64 bits, e.g. `get --from 1e21` written out
        raise BadRequestError(f"a number in the request is out of range: {exc}") from None


def unsendable_text(exc: UnicodeEncodeError) -> str:
    """Why a request's text cannot go on the wire, which carries UTF-8 only.

    Such text holds surrogates: the bytes of a command-line argument that
    were not UTF-8 (Python keeps each as U+DC80-U+DCFF, so a Latin-1 "é"
    arrives as U+DCE9), or a lone surrogate from a JSON escape. Neither can
    be stored in Markdown as written, and converting it here could change
    a memory, so the request is refused before it is sent, naming the
    character and where it is, and how to convert it: from the encoding
    the bytes look like when one does (``iconv -f latin1`` for every
    case made Russian and Chinese text mojibake), else with a placeholder.
    """
    text, at = exc.object, exc.start
    if not isinstance(text, str) or not 0 <= at < len(text):
        return f"text is not valid Unicode: {exc.reason}"
    byte = undecoded_byte(text[at])
    if byte is not None:
        from omem_client._encodings import convert_hint, guess_encoding  # only when needed

        what = f"the byte 0x{byte:02X} (not UTF-8)"
        hint = convert_hint(guess_encoding(_undecoded_bytes(text)))
    else:
        what, hint = f"a lone surrogate (U+{ord(text[at]):04X})", "only valid Unicode can be sent"
    excerpt = "".join(map(_shown, text[max(0, at - 20) : at + 20]))
    return f'text holds {what} at character {at + 1} of {len(text)}, in "{excerpt}": {hint}'


def _undecoded_bytes(text: str) -> bytes:
    """*text* as the bytes it was decoded from, its undecodable ones
    (kept as surrogates) included; empty if it holds a lone surrogate."""
    try:
        return text.encode(sys.getfilesystemencoding(), "surrogateescape")
    except UnicodeEncodeError:
        return b""


def undecoded_byte(char: str) -> int | None:
    """The byte Python kept as *char* (U+DC80-U+DCFF) where it was not text, or None."""
    code = ord(char)
    return code - 0xDC00 if 0xDC80 <= code <= 0xDCFF else None


def _shown(char: str) -> str:
    byte = undecoded_byte(char)
    if byte is not None:
        return f"\\x{byte:02x}"
    return char if char.isprintable() else char.encode("unicode_escape").decode("ascii")


# A socket's timeout must fit in 64-bit nanoseconds (about 292 years);
# asked to wait longer than this, a client waits without a limit.
NO_LIMIT_BEYOND_S = 1e9


def wait_limit(timeout: float | None) -> float | None:
    """*timeout* as the clients keep it: None (no limit) for one longer than
    `NO_LIMIT_BEYOND_S`, infinity included, which a socket refuses.

    Raises:
        ValueError: NaN, zero or a negative number of seconds.
    """
    if timeout is None:
        return None
    if not timeout > 0:  # NaN too
        raise ValueError(f"timeout must be a positive number of seconds or None, not {timeout!r}")
    return None if timeout > NO_LIMIT_BEYOND_S else timeout


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
    """What a failed connect to *socket_path* means to the user, when no
    daemon can be on its way (`_restart_wait` judges refusals and an absent
    socket)."""
    if exc.errno in (errno.EACCES, errno.EPERM):
        return ConnectError(f"permission denied connecting to {socket_path}")
    return ConnectError(f"cannot connect to {socket_path}: {exc.strerror or exc}")


def lost_connection(exc: OSError | None) -> ConnectError:
    reason = f": {exc.strerror or exc}" if exc is not None else ""
    return ConnectError(f"lost the connection to openmemoryd{reason}")


def closed_by_daemon() -> ConnectError:
    return ConnectError("openmemoryd closed the connection")


def no_answer(timeout: float | None) -> NoAnswer:
    within = f"within {timeout:g} s" if timeout is not None else "in time"
    return NoAnswer(
        f"openmemoryd did not answer {within}; it may still have done what was asked: "
        "look (search, get) before sending a write again"
    )


def violation(message: str) -> ProtocolViolation:
    return ProtocolViolation(f"protocol error talking to openmemoryd: {message}")
