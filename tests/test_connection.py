"""The connection protocol over in-memory streams: handshake, errors, concurrency."""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncIterator

import msgspec
import pytest
import trio
import trio.testing

from omem_protocol import (
    PROTOCOL_VERSION,
    DaemonFrame,
    Error,
    FrameBuffer,
    GetParams,
    GetResult,
    Hello,
    Msg,
    Progress,
    Reply,
    Request,
    SearchParams,
    SearchResult,
    StatusParams,
    StatusResult,
    SyncParams,
    SyncResult,
    Welcome,
    decode_daemon_frame,
    encode_frame,
    encode_message,
)
from openmemoryd.api import Api, DaemonInfo, handlers
from openmemoryd.config import ServerSettings
from openmemoryd.engine import Engine
from openmemoryd.server import Connection


class Peer:
    """The client end of an in-memory connection, speaking raw frames."""

    def __init__(self, stream: trio.abc.Stream) -> None:
        self.stream = stream
        self.frames = FrameBuffer()
        self.pending: deque[DaemonFrame] = deque()

    async def send(self, message: Msg) -> None:
        await self.stream.send_all(encode_message(message))

    async def send_raw(self, data: bytes) -> None:
        await self.stream.send_all(data)

    async def receive(self) -> DaemonFrame:
        with trio.fail_after(10):
            while not self.pending:
                data = await self.stream.receive_some(65536)
                assert data, "the daemon closed the connection"
                self.pending.extend(decode_daemon_frame(b) for b in self.frames.feed(data))
        return self.pending.popleft()

    async def reply(self) -> Reply:
        frame = await self.receive()
        assert isinstance(frame, Reply), frame
        return frame

    async def closed(self) -> bool:
        with trio.fail_after(10):
            while True:
                data = await self.stream.receive_some(65536)
                if not data:
                    return True
                self.pending.extend(decode_daemon_frame(b) for b in self.frames.feed(data))

    async def hello(self) -> Welcome:
        await self.send(Hello(protocol=PROTOCOL_VERSION, client="test"))
        welcome = await self.receive()
        assert isinstance(welcome, Welcome)
        return welcome


SETTINGS = ServerSettings(max_frame_bytes=64 * 1024, max_inflight_per_connection=8)


@pytest.fixture
async def api(engine: Engine) -> Api:
    return Api(engine, DaemonInfo(socket="/test.sock"))


@pytest.fixture
async def peer(api: Api) -> AsyncIterator[Peer]:
    client_end, server_end = trio.testing.memory_stream_pair()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(Connection(server_end, api, SETTINGS).serve)
        yield Peer(client_end)
        nursery.cancel_scope.cancel()


async def test_handshake_announces_protocol_and_capabilities(peer: Peer) -> None:
    welcome = await peer.hello()
    assert welcome.protocol == PROTOCOL_VERSION
    assert welcome.workspaces == ("default",)
    assert {"search", "get", "append", "status", "sync"} <= set(welcome.capabilities)


async def test_a_request_before_hello_is_refused_and_closed(peer: Peer) -> None:
    await peer.send(Request(id=1, body=StatusParams()))
    reply = await peer.reply()
    assert reply.id == 1
    assert isinstance(reply.body, Error)
    assert "Hello" in reply.body.message
    assert await peer.closed()


async def test_a_protocol_major_mismatch_is_a_clear_error(peer: Peer) -> None:
    await peer.send(Hello(protocol=PROTOCOL_VERSION + 1))
    reply = await peer.reply()
    assert isinstance(reply.body, Error)
    assert reply.body.code == "version_mismatch"
    assert f"version {PROTOCOL_VERSION + 1}" in reply.body.message
    assert await peer.closed()


async def test_garbage_frame_gets_an_error_and_the_connection_survives(peer: Peer) -> None:
    await peer.hello()
    await peer.send_raw(encode_frame(b"\xc1 garbage"))
    reply = await peer.reply()
    assert (reply.id, getattr(reply.body, "code", None)) == (0, "bad_request")
    await peer.send(Request(id=2, body=StatusParams()))
    assert isinstance((await peer.reply()).body, StatusResult)


async def test_oversized_frame_is_refused_and_the_connection_closed(peer: Peer) -> None:
    await peer.hello()
    await peer.send_raw((10 * 1024 * 1024).to_bytes(4, "big") + b"x" * 100)
    reply = await peer.reply()
    assert isinstance(reply.body, Error)
    assert reply.body.code == "too_large"
    assert await peer.closed()


async def test_unknown_method_and_bad_fields_answer_that_request(peer: Peer) -> None:
    await peer.hello()
    unknown = {"type": "request", "id": 5, "body": {"type": "teleport"}}
    await peer.send_raw(encode_frame(msgspec.msgpack.encode(unknown)))
    reply = await peer.reply()
    assert reply.id == 5
    assert isinstance(reply.body, Error)
    assert reply.body.code == "bad_request"
    assert "teleport" in reply.body.message
    bad = {"type": "request", "id": 6, "body": {"type": "search", "query": "x", "limit": -1}}
    await peer.send_raw(encode_frame(msgspec.msgpack.encode(bad)))
    reply = await peer.reply()
    assert reply.id == 6
    assert isinstance(reply.body, Error)
    assert "limit" in reply.body.message


async def test_several_requests_in_flight_on_one_connection(peer: Peer) -> None:
    await peer.hello()
    await peer.send(Request(id=1, body=SearchParams(query="memory")))
    await peer.send(Request(id=2, body=StatusParams()))
    await peer.send(Request(id=3, body=GetParams(path="MEMORY.md", from_line=1, lines=1)))
    replies = {reply.id: reply.body for reply in [await peer.reply() for _ in range(3)]}
    assert isinstance(replies[1], SearchResult)
    assert isinstance(replies[2], StatusResult)
    assert isinstance(replies[3], GetResult)
    assert replies[3].text == "# MEMORY.md - Long-term Memory"


async def test_daemon_errors_become_error_replies(peer: Peer) -> None:
    await peer.hello()
    await peer.send(Request(id=9, body=GetParams(path="../../etc/passwd.md")))
    reply = await peer.reply()
    assert isinstance(reply.body, Error)
    assert reply.body.code == "forbidden"


async def test_an_unexpected_failure_is_internal_and_not_fatal(
    peer: Peer, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def explode(*_: object) -> StatusResult:
        raise RuntimeError("kaboom with secret detail")

    monkeypatch.setitem(handlers._HANDLERS, StatusParams, explode)
    await peer.hello()
    await peer.send(Request(id=4, body=StatusParams()))
    reply = await peer.reply()
    assert isinstance(reply.body, Error)
    assert reply.body.code == "internal"
    assert "RuntimeError" in reply.body.message
    assert "secret" not in reply.body.message
    await peer.send(Request(id=5, body=SearchParams(query="x")))
    assert isinstance((await peer.reply()).body, SearchResult)


async def test_sync_streams_progress_before_its_reply(peer: Peer) -> None:
    await peer.hello()
    await peer.send(Request(id=7, body=SyncParams()))
    frames = []
    while True:
        frame = await peer.receive()
        frames.append(frame)
        if isinstance(frame, Reply):
            break
    progress = [f for f in frames if isinstance(f, Progress)]
    assert progress
    assert all(p.id == 7 for p in progress)
    assert progress[-1].done == progress[-1].total
    assert isinstance(frames[-1], Reply)
    assert isinstance(frames[-1].body, SyncResult)


async def test_a_reply_over_the_frame_limit_becomes_too_large(peer: Peer, engine: Engine) -> None:
    (engine.config.workspace / "memory" / "big.md").write_text("word " * 20_000)
    await peer.hello()
    await peer.send(Request(id=3, body=GetParams(path="memory/big.md")))
    reply = await peer.reply()
    assert isinstance(reply.body, Error)
    assert reply.body.code == "too_large"
    assert "fewer lines" in reply.body.message


async def test_an_unknown_workspace_is_that_requests_error(peer: Peer) -> None:
    await peer.hello()
    await peer.send(Request(id=6, body=StatusParams(), workspace="elsewhere"))
    reply = await peer.reply()
    assert reply.id == 6
    assert isinstance(reply.body, Error)
    assert reply.body.code == "not_found"
    assert "this daemon serves: default" in reply.body.message
    await peer.send(Request(id=7, body=StatusParams(), workspace="default"))
    assert isinstance((await peer.reply()).body, StatusResult)
