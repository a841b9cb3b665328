"""Encoders and decoders, created once and shared.

The daemon decodes a request in two steps: first the envelope with the body
left raw, then the body. A request whose body is malformed (unknown method,
wrong field types, out-of-range values) therefore still yields its id, and the
daemon can answer that very request with a precise ``bad_request`` instead of
dropping the connection.
"""

from __future__ import annotations

import functools
from typing import Annotated, TypeVar

import msgspec

from omem_protocol._base import Msg
from omem_protocol._errors import MessageDecodeError
from omem_protocol._framing import DEFAULT_MAX_FRAME, encode_frame
from omem_protocol._messages import DaemonFrame, Hello, RequestBody


class RawRequest(msgspec.Struct, tag_field="type", tag="request", kw_only=True, frozen=True):
    """Daemon-side view of `Request` with the body not yet decoded."""

    id: Annotated[int, msgspec.Meta(ge=1)]
    body: msgspec.Raw
    # Checked by the daemon, not here: a bad name must still yield the id,
    # so that the request gets its own error reply.
    workspace: str | None = None


T = TypeVar("T")

_encoder = msgspec.msgpack.Encoder()


# Decoders are built on first use: building one walks every struct of its
# union, and a client only ever needs the daemon-frame decoder (the daemon
# only the other two), so neither side pays for the other's at import.
@functools.cache
def _client_frame_decoder() -> msgspec.msgpack.Decoder[Hello | RawRequest]:
    return msgspec.msgpack.Decoder(Hello | RawRequest)


@functools.cache
def _request_body_decoder() -> msgspec.msgpack.Decoder[RequestBody]:
    return msgspec.msgpack.Decoder(RequestBody)


@functools.cache
def _daemon_frame_decoder() -> msgspec.msgpack.Decoder[DaemonFrame]:
    return msgspec.msgpack.Decoder(DaemonFrame)


def encode_message(msg: Msg, max_frame: int = DEFAULT_MAX_FRAME) -> bytes:
    """Encode *msg* as one complete frame (length prefix included)."""
    return encode_frame(_encoder.encode(msg), max_frame)


def decode_client_frame(body: bytes) -> Hello | RawRequest:
    """Daemon side: decode a frame a client sent."""
    return _decoded(_client_frame_decoder(), body)


def decode_request_body(raw: msgspec.Raw) -> RequestBody:
    """Daemon side: decode the body of a `RawRequest`."""
    return _decoded(_request_body_decoder(), raw)


def decode_daemon_frame(body: bytes) -> DaemonFrame:
    """Client side: decode a frame the daemon sent."""
    return _decoded(_daemon_frame_decoder(), body)


def _decoded(decoder: msgspec.msgpack.Decoder[T], data: bytes | msgspec.Raw) -> T:
    """*data* decoded, or `MessageDecodeError` saying what is wrong with it.

    msgspec raises `UnicodeDecodeError`, not `DecodeError`, for a string
    whose bytes are not UTF-8 (a client that sent Latin-1), and
    `RecursionError` for absurdly deep nesting: both are malformed input
    like any other, answered with ``bad_request``, never a traceback.
    """
    try:
        return decoder.decode(data)
    except msgspec.DecodeError as exc:
        raise MessageDecodeError(str(exc)) from None
    except UnicodeDecodeError as exc:
        raise MessageDecodeError(
            f"a string is not UTF-8 ({exc.reason}, at its byte {exc.start})"
        ) from None
    except RecursionError:
        raise MessageDecodeError("message nested too deeply") from None
