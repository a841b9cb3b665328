"""The HTTP gateway's graceful stop, in-process: `GatewayApp`'s stopping
states through httpx's ASGI transport, and `serve_http` itself on a real
127.0.0.1 port for the moment the stop begins.

The end-to-end tests (test_e2e_http_stop.py) stop the real daemon with a
request in flight; these cover what is hard to time from outside: a request
arriving in the instant of the stop, a request abandoned when the grace
period ends, the body of a refused request.
"""

from __future__ import annotations

import contextlib
import socket
from typing import Any

import httpx
import pytest
import trio

from omem_protocol import ReplyBody, RequestBody
from openmemoryd.api import Api, DaemonInfo
from openmemoryd.config import ServerSettings
from openmemoryd.engine import Engine, ProgressFn
from openmemoryd.gateway import GatewayApp, GatewayPlan, ListenAddress, bind_tcp, serve_http

PLAN = GatewayPlan(ListenAddress("127.0.0.1", 8787), None)


class GatedApi(Api):
    """Every call waits for `gate` (forever unless set); `entered` is set once
    one is waiting, so a test knows a request is inside the API."""

    def __init__(self, engine: Engine) -> None:
        super().__init__(engine, DaemonInfo(socket="/tmp/test.sock"))
        self.entered = trio.Event()
        self.gate = trio.Event()

    async def dispatch(
        self, body: RequestBody, progress: ProgressFn, workspace: str | None = None
    ) -> ReplyBody:
        self.entered.set()
        await self.gate.wait()
        return await super().dispatch(body, progress, workspace)


def http(app: GatewayApp) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1")


def error_of(response: httpx.Response) -> dict[str, str]:
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert set(body) == {"error"}
    return dict(body["error"])


async def test_every_request_after_the_stop_is_503_with_connection_close(engine: Engine) -> None:
    api = GatedApi(engine)
    app = GatewayApp(api, PLAN, max_body_bytes=1 << 20)
    app.begin_stop(10)
    async with http(app) as client:
        for reply in (
            await client.get("/health"),  # a probe learns the daemon is going away
            await client.post("/append", json={"text": "never written"}),
            await client.get("/no-such-route"),  # before routing: nothing else is answered
        ):
            assert reply.status_code == 503
            assert reply.headers["connection"] == "close"
            assert error_of(reply) == {
                "code": "unavailable",
                "message": "openmemoryd is stopping and takes no new requests; "
                "retry once it runs again",
            }
    assert not api.entered.is_set()  # nothing reached the API
    with trio.fail_after(1):
        await app.wait_idle()


async def test_a_request_running_at_the_stop_gets_its_reply(engine: Engine) -> None:
    api = GatedApi(engine)
    app = GatewayApp(api, PLAN, max_body_bytes=1 << 20)
    replies: list[httpx.Response] = []
    async with http(app) as client, trio.open_nursery() as nursery:

        async def search() -> None:
            replies.append(await client.post("/search", json={"query": "anything"}))

        nursery.start_soon(search)
        await api.entered.wait()
        app.begin_stop(10)
        assert app.active == 1
        api.gate.set()
        with trio.fail_after(5):
            await app.wait_idle()
    [reply] = replies
    assert reply.status_code == 200, reply.text
    assert reply.json()["type"] == "search_result"
    assert reply.headers["connection"] == "close"  # no reuse of a stopping daemon's connection


async def test_a_request_abandoned_at_the_end_of_the_grace_period_is_503(engine: Engine) -> None:
    api = GatedApi(engine)  # the gate never opens
    app = GatewayApp(api, PLAN, max_body_bytes=1 << 20)
    replies: list[httpx.Response] = []
    async with http(app) as client, trio.open_nursery() as nursery:

        async def append() -> None:
            replies.append(await client.post("/append", json={"text": "held"}))

        nursery.start_soon(append)
        await api.entered.wait()
        app.begin_stop(2.5)
        assert app.abandon() == 1
        with trio.fail_after(5):
            await app.wait_idle()
    [reply] = replies
    assert reply.status_code == 503
    assert reply.headers["connection"] == "close"
    error = error_of(reply)
    assert error["code"] == "unavailable"
    assert error["message"].startswith(
        "openmemoryd stopped before this request finished (it waited 2.5 s for it, "
        "[server] drain_timeout_s)"
    )
    assert app.abandon() == 0  # nothing left to cancel


async def test_a_refused_request_body_is_read_before_the_503(engine: Engine) -> None:
    """The 503 is sent only once the body has arrived: closing on an unread
    body would reset the connection, and the client could lose the reply."""
    app = GatewayApp(Api(engine, DaemonInfo(socket="s")), PLAN, max_body_bytes=1 << 20)
    app.begin_stop(10)
    pending: list[dict[str, Any]] = [
        {"type": "http.request", "body": b'{"text": "', "more_body": True},
        {"type": "http.request", "body": b'x"}', "more_body": False},
    ]
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return pending.pop(0)

    async def send(message: Any) -> None:
        sent.append(dict(message))

    scope = {"type": "http", "method": "POST", "path": "/append", "headers": []}
    await app(scope, receive, send)
    assert pending == []  # both chunks were read
    assert sent[0]["status"] == 503
    assert (b"connection", b"close") in sent[0]["headers"]


async def test_a_connection_made_as_the_stop_begins_is_answered_not_reset(
    engine: Engine,
) -> None:
    """The client connects and sends its request, then the stop is set
    before the server runs again: the connection waits in the kernel's
    backlog, or was just accepted (which one is up to trio's scheduling, so
    the test runs a few times). Either way it gets a 503, never the reset
    that closing a listening socket with connections queued on it sends."""
    api = Api(engine, DaemonInfo(socket="s"))
    for _ in range(3):
        sock = bind_tcp(ListenAddress("127.0.0.1", 0))
        port = sock.getsockname()[1]
        stop = trio.Event()
        async with trio.open_nursery() as nursery:
            await nursery.start(serve_http, api, PLAN, sock, ServerSettings(), stop)
            client = socket.create_connection(("127.0.0.1", port), timeout=10)
            client.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            stop.set()  # no checkpoint since the connect: the server has not seen it
            with trio.fail_after(10):
                raw = await trio.to_thread.run_sync(_read_to_close, client)
        head, _, body = raw.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 503 "), raw
        assert b"\r\nconnection: close" in head.lower()
        assert b'"code":"unavailable"' in body
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", port), timeout=10).close()


def _read_response(client: socket.socket) -> bytes:
    """One whole response (its head, then Content-Length bytes of body)."""
    raw = b""
    while b"\r\n\r\n" not in raw:
        raw += client.recv(65536)
    head, _, body = raw.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.lower().split(b"\r\n")
        if line.startswith(b"content-length:")
    )
    while len(body) < length:
        body += client.recv(65536)
    return raw


def _read_to_close(client: socket.socket) -> bytes:
    with client:
        chunks = []
        while chunk := client.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


async def test_nothing_in_flight_stops_at_once_and_closes_idle_connections(
    engine: Engine,
) -> None:
    """Nothing to wait for: neither an idle keep-alive connection nor one its
    client has just closed (hypercorn keeps such a handler around until its
    5 s keep-alive timer ends) holds the stop up."""
    sock = bind_tcp(ListenAddress("127.0.0.1", 0))
    port = sock.getsockname()[1]
    stop = trio.Event()
    api = Api(engine, DaemonInfo(socket="s"))
    request = b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    with contextlib.ExitStack() as sockets:
        async with trio.open_nursery() as nursery:
            await nursery.start(serve_http, api, PLAN, sock, ServerSettings(), stop)
            gone = sockets.enter_context(socket.create_connection(("127.0.0.1", port), 10))
            idle = sockets.enter_context(socket.create_connection(("127.0.0.1", port), 10))
            for client in (gone, idle):
                client.sendall(request)
                reply = await trio.to_thread.run_sync(_read_response, client)
                assert reply.startswith(b"HTTP/1.1 200 ")
                assert b"connection: close" not in reply.lower()  # kept alive
            await trio.sleep(0.1)  # `gone` is closed once the server waits for more
            gone.close()
            await trio.sleep(0.1)  # and the server has seen it close
            stopped_at = trio.current_time()
            stop.set()
        assert trio.current_time() - stopped_at < 2  # not the 10 s grace, nor the 5 s timer
        rest = await trio.to_thread.run_sync(_read_to_close, idle)
    assert rest == b""  # closed by the server, with nothing more sent
