"""Frame fuzzing against one real daemon: nothing a client sends hurts it.

One daemon serves the whole module; every generated case opens a raw socket,
sends its bytes, and reads with a deadline. What must hold for every case:

* the daemon answers every complete frame, or closes the connection, within
  `REPLY_TIMEOUT` (never a hang), and it closes once the client has sent
  everything and half-closed;
* every frame it sends decodes as a daemon frame; an answer to garbage is an
  ``Error`` (never a crash report, a result, or progress);
* an undecodable frame or a bad request body leaves the connection usable:
  a valid request sent after it on the same connection is answered;
* the daemon stays up and keeps serving other clients quickly: a normal
  `Client` status and search run every `HEALTH_EVERY` cases and at the end,
  when its open descriptors must also be back to where they were; and
  clients stuck in the middle of a frame hold up nobody else.

``OMEM_FUZZ_CASES`` sets the total number of cases (the issue asks for at
least 10,000), shared out over the strategies by `SHARES`. Hypothesis runs
derandomized, so CI sees the same cases every time.
"""

from __future__ import annotations

import os
import struct
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import Daemon
from omem_client import Client
from omem_protocol import (
    DEFAULT_MAX_FRAME,
    PROTOCOL_VERSION,
    Error,
    FrameBuffer,
    FrameTooLarge,
    GetParams,
    GetResult,
    Hello,
    Reply,
    Request,
    StatusParams,
    Welcome,
    encode_message,
)
from reliability_support import HangError, RawPeer, isolated_env, knob, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

CASES = knob("OMEM_FUZZ_CASES", 10_000)
REPLY_TIMEOUT = 5.0
HEALTH_EVERY = 250
HEALTHY_WITHIN_S = 2.0
SHARES = {
    "random_bytes": 14,
    "huge_length": 6,
    "truncated": 10,
    "wrong_types": 14,
    "unknown_tags": 10,
    "nested": 6,
    "garbage_bodies": 20,
    "out_of_range": 20,
    "not_utf8": 6,
}
HEADER = struct.Struct("!I")
FOLLOW_UP_ID = 4_000_000_000  # no generated request uses it


def share(name: str) -> int:
    return max(1, CASES * SHARES[name] // sum(SHARES.values()))


def fuzz_settings(name: str) -> settings:
    return settings(
        max_examples=share(name),
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )


def frame(body: bytes) -> bytes:
    return HEADER.pack(len(body)) + body


def pack(value: object) -> bytes:
    return msgspec.msgpack.encode(value)


HELLO = encode_message(Hello(protocol=PROTOCOL_VERSION, client="fuzz"))
# cheap (one small file read) but a full request: proves the connection still works
FOLLOW_UP = encode_message(
    Request(id=FOLLOW_UP_ID, body=GetParams(path="memory/canary.md", from_line=1, lines=1))
)


# ---------------------------------------------------------------- the target


@dataclass
class Target:
    """The module's daemon, and what was sent to it."""

    daemon: Daemon
    cases: int = 0
    replies: int = 0
    closes: int = 0
    health_checks: list[float] = field(default_factory=list)
    started: float = field(default_factory=time.monotonic)

    @property
    def pid(self) -> int:
        assert self.daemon.proc is not None
        return self.daemon.proc.pid

    def exchange(
        self, payload: bytes, *, hello: bool = False, follow_up: bool = False
    ) -> list[Any]:
        """Send *payload* on a fresh connection (after a Hello if asked) and
        return the daemon's frames after the Welcome.

        *follow_up*: then send a valid frame (a small `get`, or a Hello if
        none was sent) and expect its answer: the connection survived.
        """
        complete = _complete_frames(payload)
        with RawPeer(self.daemon.env.socket, REPLY_TIMEOUT) as peer:
            if hello:
                peer.send(HELLO)
                peer.wait_frames(1)
                assert isinstance(peer.frames[0], Welcome), peer.frames
            before = len(peer.frames)
            peer.send(payload)
            if complete:  # answered without waiting for the client to hang up
                peer.wait_frames(before + 1)
            if follow_up:
                peer.send(FOLLOW_UP if hello else HELLO)
            peer.finish()  # half-close: the daemon must answer what it has, then close
            frames = peer.frames[before:]
        for reply in frames:
            assert isinstance(reply, Reply | Welcome), reply  # never progress for garbage
        if follow_up:
            if hello:
                answers = [f for f in frames if isinstance(f, Reply) and f.id == FOLLOW_UP_ID]
                assert answers, f"the connection did not survive: {frames}"
                assert isinstance(answers[0].body, GetResult)
                frames = [f for f in frames if f is not answers[0]]
            else:
                assert isinstance(frames[-1], Welcome), f"the connection did not survive: {frames}"
                frames = frames[:-1]
        self.cases += 1
        self.replies += len(frames)
        self.closes += not frames
        if self.cases % HEALTH_EVERY == 0:
            self.check_health()
        return frames

    def check_health(self) -> None:
        """The daemon is up and a normal client is served quickly."""
        assert self.daemon.proc is not None
        assert self.daemon.proc.poll() is None, self.daemon.log()[-3000:]
        started = time.monotonic()
        with Client(self.daemon.env.socket, timeout=HEALTHY_WITHIN_S) as client:
            assert client.status().files_indexed >= 1
            hits = client.search("albatross canary").results
            assert hits
            assert hits[0].path == "memory/canary.md"
        took = time.monotonic() - started
        assert took < HEALTHY_WITHIN_S
        self.health_checks.append(took)


def _complete_frames(payload: bytes) -> int:
    """How many complete frames *payload* holds; an oversized header counts
    as one (the daemon answers it at once)."""
    try:
        return len(FrameBuffer(DEFAULT_MAX_FRAME).feed(payload))
    except FrameTooLarge:
        return 1


def open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    with isolated_env(tmp_path_factory.mktemp("fuzz")) as env:
        daemon = Daemon(env).start()
        try:
            with daemon.client() as client:
                client.append("the albatross canary sings", path="memory/canary.md")
            handle = Target(daemon)
            fds = open_fds(handle.pid)
            yield handle
            handle.check_health()
            # every connection was closed: no descriptor leaked
            wait_until(lambda: open_fds(handle.pid) <= fds + 2, "descriptors released", 10)
            took = time.monotonic() - handle.started
            print(
                f"\nfuzz: {handle.cases} cases in {took:.1f} s, {handle.replies} frames back,"
                f" {handle.closes} closed without a frame; {len(handle.health_checks)} health"
                f" checks, slowest {max(handle.health_checks) * 1000:.0f} ms"
            )
        finally:
            assert daemon.stop() == 0  # still alive, and stops cleanly


# ---------------------------------------------------------------- strategies

# Kept small: generating values costs more than sending them (hypothesis
# spends ~2 ms on a 6-leaf tree, the daemon ~1 ms on the exchange).
scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.floats()
    | st.text(max_size=20)
    | st.binary(max_size=20)
    | st.builds(msgspec.msgpack.Ext, st.integers(-128, 127), st.binary(max_size=8))
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.text(max_size=8) | st.integers(-5, 5), inner, max_size=3)
    ),
    max_leaves=6,
)
KNOWN_TAGS = (
    "hello request status search get append sync log_turns session_start recall capture"
    " forget primer flush_check turn capture_message session_end tasks log doctor export compact"
).split()
unknown_tags = st.text(min_size=0, max_size=20).filter(lambda t: t not in KNOWN_TAGS)
request_ids = st.integers(min_value=1, max_value=2**64 - 1).filter(lambda i: i != FOLLOW_UP_ID)


def assert_all_errors(frames: list[Any], codes: set[str]) -> None:
    for reply in frames:
        assert isinstance(reply, Reply), reply
        assert isinstance(reply.body, Error), reply
        assert reply.body.code in codes, reply.body


@fuzz_settings("random_bytes")
@given(payload=st.binary(max_size=2048) | st.binary(max_size=64).map(frame))
def test_random_bytes(target: Target, payload: bytes) -> None:
    frames = target.exchange(payload)
    # Random bytes may by chance hold a Hello (answered with a Welcome);
    # everything else is refused.
    for reply in frames:
        if not isinstance(reply, Welcome):
            assert isinstance(reply.body, Error), reply


@fuzz_settings("huge_length")
@given(
    size=st.integers(min_value=DEFAULT_MAX_FRAME + 1, max_value=2**32 - 1),
    tail=st.binary(max_size=64),
    hello=st.booleans(),
)
def test_huge_length_prefix_is_refused_at_once(
    target: Target, size: int, tail: bytes, hello: bool
) -> None:
    frames = target.exchange(HEADER.pack(size) + tail, hello=hello, follow_up=False)
    assert len(frames) == 1
    assert_all_errors(frames, {"too_large"})


@fuzz_settings("truncated")
@given(
    body=st.sampled_from(
        [
            Hello(protocol=PROTOCOL_VERSION),
            Request(id=7, body=StatusParams()),
        ]
    ),
    announced_extra=st.integers(min_value=0, max_value=DEFAULT_MAX_FRAME // 2),
    cut=st.floats(min_value=0.0, max_value=0.999),
    hello=st.booleans(),
)
def test_truncated_frames_are_never_acted_on(
    target: Target, body: Any, announced_extra: int, cut: float, hello: bool
) -> None:
    whole = encode_message(body)
    if announced_extra:  # a header promising more than will ever come
        whole = HEADER.pack(len(whole) - 4 + announced_extra) + whole[4:]
    payload = whole[: int(len(whole) * cut)]
    assert target.exchange(payload, hello=hello, follow_up=False) == []


@fuzz_settings("wrong_types")
@given(
    value=values
    | st.fixed_dictionaries({"type": st.just("hello"), "protocol": values})
    | st.fixed_dictionaries({"type": st.just("request"), "id": values, "body": values})
    | st.fixed_dictionaries(
        {"type": st.just("hello"), "protocol": st.just(PROTOCOL_VERSION), "capabilities": values}
    ).filter(lambda d: not isinstance(d["capabilities"], list | tuple)),
)
def test_valid_msgpack_of_the_wrong_shape(target: Target, value: object) -> None:
    frames = target.exchange(frame(pack(value)), follow_up=False)
    # A frame that happens to be a Hello is welcomed; a well-formed request
    # before any Hello is refused; everything else is a bad frame.
    for reply in frames:
        if not isinstance(reply, Welcome):
            assert isinstance(reply.body, Error), reply
            assert reply.body.code in {"bad_request", "version_mismatch"}, reply.body


@fuzz_settings("unknown_tags")
@given(
    tag=unknown_tags,
    fields=st.dictionaries(st.text(max_size=12), scalars, max_size=4),
    where=st.sampled_from(["frame", "body"]),
    request_id=request_ids,
)
def test_unknown_tags(
    target: Target, tag: str, fields: dict[str, object], where: str, request_id: int
) -> None:
    message = {**fields, "type": tag}
    if where == "frame":  # before any Hello: refused, and a Hello after it still works
        frames = target.exchange(frame(pack(message)), follow_up=True)
        assert_all_errors(frames, {"bad_request"})
        assert [f.id for f in frames] == [0]
    else:
        envelope = {"type": "request", "id": request_id, "body": message}
        frames = target.exchange(frame(pack(envelope)), hello=True, follow_up=True)
        assert_all_errors(frames, {"bad_request"})
        assert [f.id for f in frames] == [request_id]


def nested(depth: int, kind: str) -> bytes:
    """msgpack of *depth* nested one-element arrays (or maps) around nil."""
    opener = b"\x91" if kind == "array" else b"\x81\xa1k"
    return opener * depth + b"\xc0"


@fuzz_settings("nested")
@given(
    depth=st.integers(min_value=1, max_value=200_000),
    kind=st.sampled_from(["array", "map"]),
    where=st.sampled_from(["frame", "hello_field", "body", "query"]),
    request_id=request_ids,
)
def test_nested_garbage(target: Target, depth: int, kind: str, where: str, request_id: int) -> None:
    deep = nested(depth, kind)
    if where == "frame":
        frames = target.exchange(frame(deep), follow_up=True)
        expected_id = 0
    elif where == "hello_field":  # a second Hello: a duplicate, however deep its extras
        hello = b"\x83\xa4type\xa5hello\xa8protocol" + pack(PROTOCOL_VERSION) + b"\xa5extra"
        frames = target.exchange(frame(hello + deep), hello=True, follow_up=True)
        expected_id = 0
    else:
        body = (
            deep
            if where == "body"
            else b"\x82\xa4type\xa6search\xa5query" + deep  # a field of the wrong type
        )
        envelope = b"\x83\xa4type\xa7request\xa2id" + pack(request_id) + b"\xa4body" + body
        frames = target.exchange(frame(envelope), hello=True, follow_up=True)
        # the request's own id, unless the nesting is too deep to even skip
        # over while reading the envelope (then the frame is refused as a whole)
        expected_id = request_id if [f.id for f in frames] != [0] else 0
    assert_all_errors(frames, {"bad_request"})
    assert [f.id for f in frames] == [expected_id]


def raw_str(data: bytes) -> bytes:
    """A msgpack string (str 8 or str 16) holding *data* as it is, UTF-8 or not."""
    if len(data) < 256:
        return b"\xd9" + bytes([len(data)]) + data
    return b"\xda" + struct.pack("!H", len(data)) + data


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


@fuzz_settings("not_utf8")
@given(
    data=st.binary(min_size=1, max_size=300).filter(lambda b: not _is_utf8(b)),
    where=st.sampled_from(["hello", "workspace", "query", "tag"]),
    request_id=request_ids,
)
def test_strings_that_are_not_utf8(
    target: Target, data: bytes, where: str, request_id: int
) -> None:
    """msgspec reports such a string with UnicodeDecodeError, not its own
    DecodeError: refused like any malformed input, with the request's id once
    the envelope is read, and the connection goes on."""
    if where == "hello":
        hello = b"\x83\xa4type\xa5hello\xa8protocol" + pack(PROTOCOL_VERSION) + b"\xa6client"
        frames = target.exchange(frame(hello + raw_str(data)), follow_up=True)
        expected_id = 0
    else:
        body = (
            b"\x81\xa4type" + raw_str(data)
            if where == "tag"
            else b"\x82\xa4type\xa6search\xa5query"
            + (raw_str(data) if where == "query" else pack("x"))
        )
        envelope = b"\xa4type\xa7request\xa2id" + pack(request_id) + b"\xa4body" + body
        if where == "workspace":  # in the envelope itself: the frame is refused whole
            envelope = b"\x84" + envelope + b"\xa9workspace" + raw_str(data)
            expected_id = 0
        else:
            envelope = b"\x83" + envelope
            expected_id = request_id
        frames = target.exchange(frame(envelope), hello=True, follow_up=True)
    assert_all_errors(frames, {"bad_request"})
    assert [f.id for f in frames] == [expected_id]
    assert "not UTF-8" in frames[0].body.message


@fuzz_settings("garbage_bodies")
@given(body=values, request_id=request_ids)
def test_valid_hello_then_garbage_request_bodies(
    target: Target, body: object, request_id: int
) -> None:
    envelope = {"type": "request", "id": request_id, "body": body}
    frames = target.exchange(frame(pack(envelope)), hello=True, follow_up=True)
    assert_all_errors(frames, {"bad_request"})
    assert [f.id for f in frames] == [request_id]


def above(low: int) -> st.SearchStrategy[int]:
    """Integers from *low* up to what msgpack can carry."""
    return st.integers(min_value=low, max_value=2**64 - 1)


def below(high: int) -> st.SearchStrategy[int]:
    return st.integers(min_value=-(2**63), max_value=high)


def _too_long(limit: int) -> st.SearchStrategy[str]:
    return st.integers(min_value=limit + 1, max_value=limit * 2).map(lambda n: "q" * n)


not_a_name = st.text(max_size=70).filter(
    lambda s: not s or not s[0].isalnum() or len(s) > 64 or not s.isascii()
)
OUT_OF_RANGE = st.one_of(
    st.fixed_dictionaries({"type": st.just("search"), "query": _too_long(8192)}),
    st.fixed_dictionaries(
        {"type": st.just("search"), "query": st.text(max_size=20), "limit": above(101)}
    ),
    st.fixed_dictionaries(
        {
            "type": st.just("search"),
            "query": st.text(max_size=20),
            "limit": below(0),
        }
    ),
    st.fixed_dictionaries(
        {
            "type": st.just("search"),
            "query": st.text(max_size=20),
            "min_score": st.floats(min_value=1.0, exclude_min=True)
            | st.floats(max_value=0.0, exclude_max=True),
        }
    ),
    st.fixed_dictionaries({"type": st.just("search"), "query": st.just("x"), "agent": not_a_name}),
    st.fixed_dictionaries({"type": st.just("get"), "path": st.just("") | _too_long(4096)}),
    st.fixed_dictionaries(
        {
            "type": st.just("get"),
            "path": st.just("MEMORY.md"),
            "from_line": below(0),
        }
    ),
    st.fixed_dictionaries(
        {"type": st.just("get"), "path": st.just("MEMORY.md"), "lines": below(0)}
    ),
    st.fixed_dictionaries({"type": st.just("append"), "text": st.just("x"), "path": st.just("")}),
    st.fixed_dictionaries({"type": st.just("primer"), "budget": below(49) | above(200_001)}),
    st.fixed_dictionaries(
        {"type": st.just("primer"), "date": st.text(max_size=12).filter(lambda s: len(s) != 10)}
    ),
    st.fixed_dictionaries(
        {
            "type": st.just("flush_check"),
            "session": st.just("s1"),
            "tokens": below(-1),
            "context_window": st.integers(1, 10),
        }
    ),
    st.fixed_dictionaries(
        {
            "type": st.just("flush_check"),
            "session": not_a_name,
            "tokens": st.just(1),
            "context_window": below(0),
        }
    ),
    st.fixed_dictionaries(
        {
            "type": st.just("log_turns"),
            "agent": st.just("a"),
            "session_id": st.just("s"),
            "turns": st.just([]),
        }
    ),
    st.fixed_dictionaries(
        {
            "type": st.just("capture"),
            "messages": st.just([{"type": "capture_message", "role": "user", "text": "hi"}]),
            "max_captures": below(0) | above(21),
        }
    ),
    st.fixed_dictionaries({"type": st.just("recall"), "query": st.just("x"), "limit": above(101)}),
)


@fuzz_settings("out_of_range")
@given(body=OUT_OF_RANGE, request_id=request_ids)
def test_out_of_range_fields(target: Target, body: dict[str, object], request_id: int) -> None:
    envelope = {"type": "request", "id": request_id, "body": body}
    frames = target.exchange(frame(pack(envelope)), hello=True, follow_up=True)
    assert_all_errors(frames, {"bad_request"})
    assert [f.id for f in frames] == [request_id]


def test_out_of_range_request_ids_are_refused_as_frames(target: Target) -> None:
    for bad_id in (0, -1, -(2**63), "1", None, 1.5):
        envelope = {"type": "request", "id": bad_id, "body": {"type": "status"}}
        frames = target.exchange(frame(pack(envelope)), hello=True, follow_up=True)
        assert_all_errors(frames, {"bad_request"})
        assert [f.id for f in frames] == [0]


def test_clients_stuck_mid_frame_do_not_block_others(target: Target) -> None:
    # 32 connections each announce a 16 MiB frame and send a few bytes of
    # it: the daemon waits for each, but serves everyone else meanwhile.
    stuck = [RawPeer(target.daemon.env.socket, REPLY_TIMEOUT) for _ in range(32)]
    try:
        for peer in stuck:
            peer.send(HELLO + HEADER.pack(DEFAULT_MAX_FRAME) + b"\x83\xa4type")
        for peer in stuck:
            peer.wait_frames(1)  # the Welcome
        for _ in range(5):
            target.check_health()
        stuck[0].timeout = 0.5
        with pytest.raises(HangError):  # still waiting for the rest, as it should
            stuck[0].wait_frames(2)
    finally:
        for peer in stuck:
            peer.sock.close()
