"""Length-prefixed framing, without any I/O.

A frame is a 4-byte big-endian unsigned length followed by that many bytes of
msgpack. The trio server and the blocking client both feed received bytes into
a `FrameBuffer` and write what `encode_frame` returns, so the framing rules
live in exactly one place and are tested without sockets.

Invariant: a length above the limit raises `FrameTooLarge` as soon as its
4-byte header is complete, before any of the body is buffered.
"""

from __future__ import annotations

import struct
from typing import Final

from omem_protocol._errors import FrameTooLarge

HEADER: Final = struct.Struct("!I")
HEADER_SIZE: Final = HEADER.size
DEFAULT_MAX_FRAME: Final = 16 * 1024 * 1024


def encode_frame(body: bytes, max_frame: int = DEFAULT_MAX_FRAME) -> bytes:
    """Prefix *body* with its length; refuse bodies the peer would refuse too."""
    if len(body) > max_frame:
        raise FrameTooLarge(len(body), max_frame)
    return HEADER.pack(len(body)) + body


class FrameBuffer:
    """Accumulates received bytes and splits them into complete frame bodies."""

    __slots__ = ("_buf", "_max_frame")

    def __init__(self, max_frame: int = DEFAULT_MAX_FRAME) -> None:
        self._buf = bytearray()
        self._max_frame = max_frame

    @property
    def pending(self) -> int:
        """Bytes received that do not yet form a complete frame."""
        return len(self._buf)

    def feed(self, data: bytes | bytearray | memoryview) -> list[bytes]:
        """Add *data*; return every frame body it completes, in order.

        Raises:
            FrameTooLarge: a header announces a body over the limit. The buffer
                is left unusable: the stream cannot be resynchronised.
        """
        self._buf += data
        frames: list[bytes] = []
        offset = 0
        buf = self._buf
        while len(buf) - offset >= HEADER_SIZE:
            (size,) = HEADER.unpack_from(buf, offset)
            if size > self._max_frame:
                raise FrameTooLarge(size, self._max_frame)
            end = offset + HEADER_SIZE + size
            if len(buf) < end:
                break
            frames.append(bytes(buf[offset + HEADER_SIZE : end]))
            offset = end
        if offset:
            del buf[:offset]
        return frames
