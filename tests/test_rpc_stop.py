"""The socket server's graceful stop, in-process: `serve_rpc` on a real Unix
socket, clients speaking raw frames.

The end-to-end tests (test_e2e_rpc_stop.py) stop the real daemon with a
request in flight; these cover what is hard to time from outside: requests
pipelined behind a running one, a connection waiting for a request slot,
half a frame sent when the stop begins, a Hello after it, a connection made
in the instant of the stop, progress before an abandoned reply, a client
that never reads its replies, and the words of each reply.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import trio

from omem_protocol import (
    PROTOCOL_VERSION,
    AppendParams,
    Error,
    Hello,
    Progress,
    Reply,
    ReplyBody,
    Request,
    RequestBody,
    SearchParams,
    StatusParams,
    StatusResult,
    SyncParams,
    Welcome,
    encode_message,
)
from openmemoryd.api import Api, DaemonInfo
from openmemoryd.config import ServerSettings
from openmemoryd.engine import Engine, ProgressFn
from openmemoryd.server import bind_unix_listener, serve_rpc
from openmemoryd.server.connection import STOPPING_MESSAGE, abandoned_message
from openmemoryd.server.rpc import REPLY_WAIT_S
from test_connection import Peer

STOPPING = Error(code="unavailable", message=STOPPING_MESSAGE)


def _refused(path: Path) -> bool:
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(os.fspath(path))
    except ConnectionRefusedError:
        return True
    finally:
        probe.close()
    return False


class GatedApi(Api):
    """Every call reports progress if asked, then waits for `gate` (forever
    unless set); `entered` is set once one waits, `calls` counts them."""

    def __init__(self, engine: Engine) -> None:
        super().__init__(engine, DaemonInfo(socket="/tmp/test.sock"))
        self.entered = trio.Event()
        self.gate = trio.Event()
        self.calls = 0
        self._called = trio.Event()

    async def dispatch(
        self, body: RequestBody, progress: ProgressFn, workspace: str | None = None
    ) -> ReplyBody:
        self.calls += 1
        self._called.set()
        self._called = trio.Event()
        if isinstance(body, SyncParams):
            await progress(1, 3, "indexing")
        self.entered.set()
        await self.gate.wait()
        return await super().dispatch(body, progress, workspace)

    async def wait_calls(self, count: int) -> None:
        while self.calls < count:
            await self._called.wait()


class Server:
    """`serve_rpc` running on a socket of its own; `stop()` begins the stop,
    `stopped` is set once `serve_rpc` has returned."""

    def __init__(
        self, path: Path, api: GatedApi, settings: ServerSettings, *, accepting: bool = True
    ) -> None:
        self.path = path
        self.accepting = accepting
        self.api = api
        self.settings = settings
        self.stop_event = trio.Event()
        self.stopped = trio.Event()
        self.stopped_at = 0.0
        self.peers: list[Peer] = []  # closed when the test ends

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        listener, _ = await bind_unix_listener(self.path)
        served: Any = listener if self.accepting else NotAccepting(listener)
        try:
            await serve_rpc(
                served, self.api, self.settings, self.stop_event, task_status=task_status
            )
        finally:
            self.stopped.set()

    def stop(self) -> None:
        self.stopped_at = trio.current_time()
        self.stop_event.set()

    async def stopping(self) -> None:
        """`stop()`, and return once the stop has begun: every connection is
        stopping once the socket refuses new ones."""
        self.stop()
        with trio.fail_after(5):
            while True:  # nothing to wait on: the socket is asked
                if _refused(self.path):
                    return
                await trio.sleep(0.01)

    async def wait_stopped(self, within: float) -> float:
        """How long the stop took, which must be under *within* seconds."""
        with trio.fail_after(within):
            await self.stopped.wait()
        return trio.current_time() - self.stopped_at

    async def connect(self, *, hello: bool = True) -> Peer:
        peer = self.peer(await trio.open_unix_socket(os.fspath(self.path)))
        if hello:
            await peer.hello()
        return peer

    def peer(self, stream: trio.SocketStream) -> Peer:
        peer = Peer(stream)
        self.peers.append(peer)
        return peer


@pytest.fixture
def socket_path() -> Iterator[Path]:
    directory = Path(tempfile.mkdtemp(prefix="om-", dir="/tmp"))
    os.chmod(directory, 0o700)
    try:
        yield directory / "d.sock"
    finally:
        shutil.rmtree(directory, ignore_errors=True)


class NotAccepting:
    """A listener whose accept loop never takes a connection, so that every
    connection made before the stop is still in the kernel's backlog when it
    begins (trio's SocketListener cannot be subclassed)."""

    def __init__(self, listener: trio.SocketListener) -> None:
        self.socket = listener.socket
        self._listener = listener

    async def accept(self) -> trio.SocketStream:
        await trio.sleep_forever()
        raise AssertionError("unreachable")

    async def aclose(self) -> None:
        await self._listener.aclose()


class Servers:
    """Starts `Server`s in the test's nursery; `close` closes their peers."""

    def __init__(self, nursery: trio.Nursery) -> None:
        self.nursery = nursery
        self.started: list[Server] = []

    async def start(
        self,
        path: Path,
        engine: Engine,
        grace_s: float = 10,
        inflight: int = 8,
        *,
        accepting: bool = True,
    ) -> Server:
        settings = ServerSettings(max_inflight_per_connection=inflight, drain_timeout_s=grace_s)
        server = Server(path, GatedApi(engine), settings, accepting=accepting)
        await self.nursery.start(server.run)
        self.started.append(server)
        return server

    async def close(self) -> None:
        for server in self.started:
            for peer in server.peers:
                await peer.stream.aclose()


@pytest.fixture
async def servers() -> AsyncIterator[Servers]:
    async with trio.open_nursery() as nursery:
        opened = Servers(nursery)
        try:
            yield opened
        finally:
            await opened.close()
            nursery.cancel_scope.cancel()


async def test_requests_during_the_stop_are_refused_at_once_while_the_running_one_finishes(
    servers: Servers, socket_path: Path, engine: Engine
) -> None:
    server = await servers.start(socket_path, engine)
    peer = await server.connect()
    idle = await server.connect()  # sends nothing until the stop
    await peer.send(Request(id=1, body=StatusParams()))
    await server.api.entered.wait()
    await server.stopping()

    # pipelined behind the running request, and on a connection left idle
    await peer.send(Request(id=2, body=AppendParams(text="never written")))
    await peer.send(Request(id=3, body=StatusParams()))
    await idle.send(Request(id=7, body=SearchParams(query="tea")))
    for expected in (2, 3):
        reply = await peer.reply()
        assert (reply.id, reply.body) == (expected, STOPPING)
    reply = await idle.reply()
    assert (reply.id, reply.body) == (7, STOPPING)
    assert server.api.calls == 1  # nothing refused reached the API
    assert not server.stopped.is_set()  # the running request holds the stop

    server.api.gate.set()
    reply = await peer.reply()
    assert reply.id == 1
    assert isinstance(reply.body, StatusResult)  # its normal answer
    assert await peer.closed()  # then the connections close, cleanly (no reset)
    assert await idle.closed()
    assert await server.wait_stopped(5) < 5
    assert _refused(socket_path)


async def test_a_stop_with_nothing_running_closes_the_connections_at_once(
    servers: Servers, socket_path: Path, engine: Engine
) -> None:
    server = await servers.start(socket_path, engine)
    peers = [await server.connect() for _ in range(3)]
    server.stop()
    assert await server.wait_stopped(2) < 1  # not the 10 s of grace
    for peer in peers:
        assert await peer.closed()
    assert _refused(socket_path)  # the socket file is the caller's to remove


async def test_a_request_still_running_at_the_end_of_the_grace_period_is_answered(
    servers: Servers, socket_path: Path, engine: Engine
) -> None:
    server = await servers.start(socket_path, engine, grace_s=0.3)
    reader, writer = await server.connect(), await server.connect()
    await reader.send(Request(id=1, body=SearchParams(query="tea")))
    await writer.send(Request(id=2, body=AppendParams(text="maybe written")))
    await server.api.wait_calls(2)
    server.stop()

    reply = await reader.reply()
    assert (reply.id, reply.body) == (
        1,
        Error(
            code="unavailable",
            message="search did not finish: openmemoryd stopped (it waited 0.3 s for it, "
            "[server] drain_timeout_s); retry once it runs again",
        ),
    )
    reply = await writer.reply()
    assert reply.id == 2
    assert reply.body == Error(
        code="unavailable",
        message="append did not finish: openmemoryd stopped (it waited 0.3 s for it, "
        "[server] drain_timeout_s); a change it was making may or may not have been saved: "
        "check before sending it again",
    )
    assert await reader.closed()
    assert await writer.closed()
    assert 0.3 <= await server.wait_stopped(5) < 0.3 + REPLY_WAIT_S


async def test_progress_sent_before_an_abandoned_reply_leaves_the_stream_whole(
    servers: Servers, socket_path: Path, engine: Engine
) -> None:
    server = await servers.start(socket_path, engine, grace_s=0.2)
    peer = await server.connect()
    await peer.send(Request(id=5, body=SyncParams()))
    progress = await peer.receive()
    assert progress == Progress(id=5, done=1, total=3, phase="indexing")
    server.stop()
    reply = await peer.reply()
    assert reply.id == 5
    assert isinstance(reply.body, Error)
    assert reply.body.message.startswith("sync did not finish: openmemoryd stopped")
    assert await peer.closed()


async def test_a_request_waiting_for_a_slot_when_the_stop_begins_is_refused_not_run(
    servers: Servers, socket_path: Path, engine: Engine
) -> None:
    server = await servers.start(socket_path, engine, inflight=1)
    peer = await server.connect()
    await peer.send(Request(id=1, body=StatusParams()))
    await server.api.entered.wait()
    await peer.send(Request(id=2, body=StatusParams()))  # waits for the only slot
    await trio.sleep(0.05)
    await server.stopping()
    server.api.gate.set()
    replies = {reply.id: reply.body for reply in [await peer.reply(), await peer.reply()]}
    assert isinstance(replies[1], StatusResult)
    assert replies[2] == STOPPING
    assert server.api.calls == 1
    assert await peer.closed()


async def test_half_a_request_sent_at_the_stop_is_waited_for_and_answered(
    servers: Servers, socket_path: Path, engine: Engine
) -> None:
    server = await servers.start(socket_path, engine, grace_s=5)
    peer = await server.connect()
    frame = encode_message(Request(id=9, body=StatusParams()))
    await peer.send_raw(frame[:5])
    await trio.sleep(0.05)  # read and buffered by the server
    await server.stopping()
    await trio.sleep(0.1)
    assert not server.stopped.is_set()  # closing now would lose the request
    await peer.send_raw(frame[5:])
    reply = await peer.reply()
    assert (reply.id, reply.body) == (9, STOPPING)
    assert await peer.closed()
    assert await server.wait_stopped(2) < 1


async def test_a_hello_after_the_stop_began_is_told_the_daemon_is_stopping(
    servers: Servers, socket_path: Path, engine: Engine
) -> None:
    server = await servers.start(socket_path, engine)
    holder = await server.connect()
    await holder.send(Request(id=1, body=StatusParams()))  # keeps the daemon stopping
    await server.api.entered.wait()
    late = await server.connect(hello=False)
    await trio.sleep(0.05)
    await server.stopping()
    await late.send(Hello(protocol=PROTOCOL_VERSION, client="late"))
    reply = await late.reply()
    assert (reply.id, reply.body) == (0, STOPPING)
    assert await late.closed()
    server.api.gate.set()
    assert isinstance((await holder.reply()).body, StatusResult)


async def test_a_connection_made_in_the_instant_of_the_stop_is_answered_not_reset(
    servers: Servers, socket_path: Path, engine: Engine
) -> None:
    """Connected and its Hello sent without yielding to the server, so the
    stop begins with the connection in the kernel's backlog, or accepted
    with or without its Hello read: whichever, it is answered, never reset."""
    server = await servers.start(socket_path, engine)
    raw = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    raw.connect(os.fspath(socket_path))
    raw.sendall(encode_message(Hello(protocol=PROTOCOL_VERSION, client="instant")))
    server.stop()
    late = server.peer(trio.SocketStream(trio.socket.from_stdlib_socket(raw)))
    first = await late.receive()
    if isinstance(first, Welcome):  # greeted before the stop: its request is refused
        await late.send(Request(id=1, body=StatusParams()))
        first = await late.receive()
        assert first == Reply(id=1, body=STOPPING)
    else:
        assert first == Reply(id=0, body=STOPPING)
    assert await late.closed()
    await server.wait_stopped(2)


async def test_connections_still_in_the_backlog_at_the_stop_are_accepted_and_answered(
    servers: Servers, socket_path: Path, engine: Engine
) -> None:
    """Closing the listener would reset them: a client that has sent its
    Hello would read "connection reset" instead of why it is not served."""
    server = await servers.start(socket_path, engine, accepting=False)
    waiting = []
    for _ in range(3):
        raw = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        raw.connect(os.fspath(socket_path))  # completed by the kernel, never accepted
        raw.sendall(encode_message(Hello(protocol=PROTOCOL_VERSION, client="queued")))
        waiting.append(server.peer(trio.SocketStream(trio.socket.from_stdlib_socket(raw))))
    server.stop()
    for peer in waiting:
        assert await peer.reply() == Reply(id=0, body=STOPPING)
        assert await peer.closed()
    assert await server.wait_stopped(2) < 1


async def test_a_client_that_never_reads_cannot_hold_the_stop_past_the_grace_period(
    servers: Servers, socket_path: Path, engine: Engine
) -> None:
    server = await servers.start(socket_path, engine, grace_s=0.3)
    raw = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    raw.connect(os.fspath(socket_path))
    raw.setblocking(False)
    raw.sendall(encode_message(Hello(protocol=PROTOCOL_VERSION, client="deaf")))
    await trio.sleep(0.05)
    server.stop()
    request = encode_message(Request(id=1, body=StatusParams()))
    started = time.monotonic()
    # requests keep coming, their refusals are never read: the server's
    # replies fill the socket until it blocks
    while not server.stopped.is_set() and time.monotonic() - started < 10:
        with contextlib.suppress(BlockingIOError, BrokenPipeError, ConnectionResetError):
            raw.send(request)
        await trio.lowlevel.checkpoint()
    raw.close()
    assert await server.wait_stopped(0.1) < 0.3 + REPLY_WAIT_S + 0.5


def test_the_abandoned_message_names_the_method_and_whether_it_wrote() -> None:
    read = abandoned_message(SearchParams(query="tea"), 10)
    assert read.startswith("search did not finish: openmemoryd stopped (it waited 10 s")
    assert read.endswith("retry once it runs again")
    write = abandoned_message(AppendParams(text="x"), 2.5)
    assert "(it waited 2.5 s for it, [server] drain_timeout_s)" in write
    assert "may or may not have been saved" in write
