"""Framing and message codecs, tested without any I/O."""

from __future__ import annotations

import itertools

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import search_result
from omem_protocol import (
    HEADER_SIZE,
    AppendParams,
    Error,
    FrameBuffer,
    FrameTooLarge,
    Hello,
    MessageDecodeError,
    Progress,
    RawRequest,
    Reply,
    Request,
    SearchHit,
    SearchParams,
    SyncParams,
    Welcome,
    decode_client_frame,
    decode_daemon_frame,
    decode_request_body,
    encode_frame,
    encode_message,
)


def test_frame_is_big_endian_length_then_body() -> None:
    assert encode_frame(b"abc") == b"\x00\x00\x00\x03abc"


def test_feed_returns_frames_only_when_complete() -> None:
    buf = FrameBuffer()
    data = encode_frame(b"hello") + encode_frame(b"") + encode_frame(b"world")
    assert buf.feed(data[:3]) == []
    assert buf.feed(data[3:7]) == []
    assert buf.feed(data[7:]) == [b"hello", b"", b"world"]
    assert buf.pending == 0


def test_oversized_length_is_rejected_before_the_body_arrives() -> None:
    buf = FrameBuffer(max_frame=1024)
    with pytest.raises(FrameTooLarge) as info:
        buf.feed((1025).to_bytes(4, "big"))  # header only: no body bytes sent yet
    assert info.value.size == 1025
    assert info.value.limit == 1024


def test_a_huge_length_prefix_does_not_allocate() -> None:
    buf = FrameBuffer()
    with pytest.raises(FrameTooLarge):
        buf.feed(b"\xff\xff\xff\xff" + b"x" * 10)
    assert buf.pending < 100


def test_encode_refuses_what_the_peer_would_refuse() -> None:
    with pytest.raises(FrameTooLarge):
        encode_frame(b"x" * 2048, max_frame=1024)


# deadline=None: a first example once took 530 ms on a machine at load 8
# (two test workers next to other suites); speed is not what this checks.
@settings(deadline=None)
@given(
    bodies=st.lists(st.binary(max_size=300), max_size=20),
    cuts=st.lists(st.integers(min_value=0, max_value=10_000), max_size=30),
)
def test_any_split_of_the_stream_yields_the_same_frames(
    bodies: list[bytes], cuts: list[int]
) -> None:
    stream = b"".join(encode_frame(body) for body in bodies)
    points = sorted({c % (len(stream) + 1) for c in cuts} | {0, len(stream)})
    buf = FrameBuffer()
    received: list[bytes] = []
    for start, end in itertools.pairwise(points):
        received.extend(buf.feed(stream[start:end]))
    assert received == bodies
    assert buf.pending == 0


def _body(message: object) -> bytes:
    return encode_message(message)[HEADER_SIZE:]  # type: ignore[arg-type]


def test_request_round_trip_through_the_two_step_decode() -> None:
    request = Request(id=7, body=SearchParams(query="oolong", limit=3, sources=("memory",)))
    frame = decode_client_frame(_body(request))
    assert isinstance(frame, RawRequest)
    assert frame.id == 7
    assert decode_request_body(frame.body) == request.body


def test_hello_decodes_as_hello() -> None:
    assert decode_client_frame(_body(Hello(protocol=1, client="t"))) == Hello(
        protocol=1, client="t"
    )


def test_a_bad_body_still_yields_the_request_id() -> None:
    raw = msgspec.msgpack.encode(
        {"type": "request", "id": 9, "body": {"type": "search", "query": 5}}
    )
    frame = decode_client_frame(raw)
    assert isinstance(frame, RawRequest)
    assert frame.id == 9
    with pytest.raises(MessageDecodeError, match=r"query"):
        decode_request_body(frame.body)


def test_unknown_method_is_a_decode_error_naming_the_tag() -> None:
    raw = msgspec.msgpack.encode({"type": "request", "id": 2, "body": {"type": "launch_rockets"}})
    frame = decode_client_frame(raw)
    assert isinstance(frame, RawRequest)
    with pytest.raises(MessageDecodeError, match="launch_rockets"):
        decode_request_body(frame.body)


@pytest.mark.parametrize(
    "body",
    [
        {"type": "search", "query": "x", "limit": 0},
        {"type": "search", "query": "x", "min_score": 1.5},
        {"type": "search", "query": "x" * 9000},
        {"type": "get", "path": ""},
        {"type": "get", "path": "a.md", "from_line": 0},
        {"type": "search", "query": "x", "sources": ["Bad Source!"]},
    ],
)
def test_out_of_range_fields_are_rejected(body: dict[str, object]) -> None:
    frame = decode_client_frame(msgspec.msgpack.encode({"type": "request", "id": 1, "body": body}))
    assert isinstance(frame, RawRequest)
    with pytest.raises(MessageDecodeError):
        decode_request_body(frame.body)


@pytest.mark.parametrize("garbage", [b"", b"\xc1", b"\x93\x01\x02\x03", b"not msgpack at all"])
def test_garbage_is_a_decode_error(garbage: bytes) -> None:
    with pytest.raises(MessageDecodeError):
        decode_client_frame(garbage)


def test_a_string_that_is_not_utf8_is_a_decode_error_wherever_it_is() -> None:
    latin1 = b"\xa4caf\xe9"  # a msgpack str of four bytes, "café" in Latin-1
    hello = b"\x83\xa4type\xa5hello\xa8protocol\x01\xa6client" + latin1
    with pytest.raises(MessageDecodeError, match="not UTF-8"):
        decode_client_frame(hello)
    body = b"\x82\xa4type\xa6search\xa5query" + latin1
    frame = decode_client_frame(b"\x83\xa4type\xa7request\xa2id\x05\xa4body" + body)
    assert isinstance(frame, RawRequest)
    assert frame.id == 5  # the envelope is read, so the request gets its own answer
    with pytest.raises(MessageDecodeError, match="not UTF-8"):
        decode_request_body(frame.body)
    error = b"\x83\xa4type\xa5reply\xa2id\x05\xa4body\x83\xa4type\xa5error\xa4code\xa8internal"
    with pytest.raises(MessageDecodeError, match="not UTF-8"):
        decode_daemon_frame(error + b"\xa7message" + latin1)


def test_request_ids_start_at_one() -> None:
    raw = msgspec.msgpack.encode({"type": "request", "id": 0, "body": {"type": "status"}})
    with pytest.raises(MessageDecodeError):
        decode_client_frame(raw)


def test_daemon_frames_round_trip() -> None:
    hit = SearchHit(
        path="MEMORY.md",
        start_line=1,
        end_line=2,
        snippet="s",
        score=0.5,
        text_score=0.5,
        vector_score=None,
        source="memory",
        citation="MEMORY.md#L1-L2",
    )
    result = search_result([hit], mode="lexical")
    for frame in (
        Reply(id=3, body=result),
        Reply(id=0, body=Error(code="bad_request", message="m")),
        Progress(id=3, done=1, total=2, phase="index"),
        Welcome(protocol=1, daemon_version="0", pid=1, workspaces=("default",), capabilities=()),
    ):
        assert decode_daemon_frame(_body(frame)) == frame


def test_new_fields_from_a_newer_peer_are_ignored() -> None:
    """Schema evolution: a field added later must not break an older decoder."""
    raw = msgspec.msgpack.encode(
        {"type": "request", "id": 1, "body": {"type": "sync", "full": True, "added_in_v9": [1, 2]}}
    )
    frame = decode_client_frame(raw)
    assert isinstance(frame, RawRequest)
    assert decode_request_body(frame.body) == SyncParams(full=True)


def test_append_text_limit_is_enforced_on_decode() -> None:
    body = AppendParams(text="x" * 1_000_001)
    frame = decode_client_frame(_body(Request(id=1, body=body)))
    assert isinstance(frame, RawRequest)
    with pytest.raises(MessageDecodeError, match="length"):
        decode_request_body(frame.body)
