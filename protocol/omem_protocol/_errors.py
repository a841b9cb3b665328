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

import re
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


# msgspec's refusal of an empty string (or list) where at least one is needed.
_EMPTY: Final = re.compile(
    r"^Expected `(?:str|array)(?: \| null)?` of length >= 1 - at `\$\.(?P<field>[^`]+)`$"
)


def empty_field(detail: str) -> str | None:
    """``query is empty`` for msgspec's "Expected `str` of length >= 1 - at
    `$.query`", else None.

    An empty field is said as the daemon says a blank one (``search "  "``
    gets "query is empty"), on every surface: the daemon's replies, HTTP,
    and the MCP bridge, which checks a tool's arguments itself. msgspec's
    words name its type system, not the user's mistake, so they are left out.
    """
    found = _EMPTY.match(detail)
    return None if found is None else f"{found['field']} is empty"
