"""Error codes on the wire and the protocol's own exceptions.

Exception tree::

    ProtocolError            the byte stream or a message broke the protocol
    ├── FrameTooLarge        a length prefix announced more than the limit
    └── MessageDecodeError   a frame's body is not a valid message

`ErrorCode` is the closed set of codes an `Error` reply may carry. The codes
are plain strings on the wire so that a client meeting a code added later
still decodes the reply (it treats the unknown code as a generic error).
"""

from __future__ import annotations

from typing import Final, Literal

ErrorCode = Literal[
    "bad_request",
    "not_found",
    "forbidden",
    "too_large",
    "unavailable",
    "timeout",
    "conflict",
    "internal",
    "version_mismatch",
]

ERROR_CODES: Final[tuple[ErrorCode, ...]] = (
    "bad_request",
    "not_found",
    "forbidden",
    "too_large",
    "unavailable",
    "timeout",
    "conflict",
    "internal",
    "version_mismatch",
)


class ProtocolError(Exception):
    """The peer sent bytes that do not follow the protocol."""


class FrameTooLarge(ProtocolError):
    """A frame's length prefix exceeds the configured maximum.

    Raised before the body is read, so an attacker cannot make the reader
    buffer an arbitrary amount of memory.
    """

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"frame of {size} bytes exceeds the limit of {limit} bytes")
        self.size = size
        self.limit = limit


class MessageDecodeError(ProtocolError):
    """A complete frame arrived but its body is not a message we understand."""
