"""Running the HTTP API: bind, accept, serve each connection with hypercorn, stop.

hypercorn is imported here, inside `serve_http`, so a daemon without
``[http]`` never loads it. We bind the listening socket ourselves
(`bind_tcp`): a port already in use is then a `StartupError` with a clear
message before the daemon reports ready, rather than an OSError from deep
inside the server.

We also run the accept loop ourselves and hand each connection to
hypercorn's per-connection server (`TCPServer`, HTTP/1.1 over h11), rather
than calling `hypercorn.trio.serve`, because its shutdown is not graceful
enough: it closes idle keep-alive connections the moment the stop begins, so
a client sending its next request on one gets a cut connection instead of
an answer, and cancels whatever still runs at the deadline without a reply.
Our stop, when *stop* is set:

1. the app answers every new request 503 ``unavailable`` with
   ``Connection: close`` (`GatewayApp.begin_stop`);
2. the port stops taking connections: the accept loop ends, connections the
   kernel had already completed are accepted (they get that 503) and the
   listening socket is closed, so later clients are refused at once;
3. requests already running get ``[server] drain_timeout_s`` (10 s by
   default, as the socket server) to finish with their normal reply; open
   connections stay open meanwhile, so a request arriving on one gets the
   503 rather than a reset, and so does one whose bytes had reached the
   machine but not yet the server when the stop began (`_wait_quiet`);
4. requests still running then are cancelled and answered 503
   (`GatewayApp.abandon`);
5. hypercorn closes the idle connections (``context.terminated``) and
   whatever has not closed `REPLY_WAIT_S` later is cut.

Beyond `hypercorn.config.Config`, this uses parts of hypercorn that are not
its documented API (`TCPServer`, `WorkerContext`, `ConnectionState`,
`wrap_app`); they are the same in 0.17 and 0.18, the releases our
``hypercorn>=0.17,<0.19`` pin allows, and the HTTP tests exercise them.
"""

from __future__ import annotations

import logging
import select
import socket
from collections.abc import Awaitable, Callable
from typing import Any, Final

import trio

from openmemoryd.api import Api
from openmemoryd.config import ServerSettings
from openmemoryd.errors import StartupError
from openmemoryd.gateway.address import GatewayPlan, ListenAddress
from openmemoryd.gateway.asgi import GatewayApp
from openmemoryd.service.accept import accept_forever, accept_waiting

logger = logging.getLogger("openmemoryd.http")

ServeConnection = Callable[[trio.SocketStream], Awaitable[None]]

READ_TIMEOUT_S: Final = 30
# After the grace period: how long the 503s of abandoned requests (small
# replies, already encoded) get to be written before connections are cut.
REPLY_WAIT_S: Final = 1.0
# While requests sent just before the stop are being read: how often to look.
_QUIET_POLL_S: Final = 0.01


def bind_tcp(address: ListenAddress) -> socket.socket:
    """A listening-ready TCP socket at *address*, or `StartupError`."""
    family = socket.AF_INET6 if ":" in address.host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((address.host, address.port))
    except OSError as exc:
        sock.close()
        raise StartupError(
            f"cannot listen for HTTP on {address.url}: {exc.strerror}; "
            "choose another port with --http HOST:PORT or [http] listen"
        ) from None
    return sock


async def serve_http(
    api: Api,
    plan: GatewayPlan,
    sock: socket.socket,
    server: ServerSettings,
    stop: trio.Event,
    *,
    task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve the HTTP API on *sock* (from `bind_tcp`; this takes it over and
    closes it) until *stop* is set, then stop gracefully (see the module
    docstring); reports the base URL once listening."""
    from hypercorn.config import Config as HypercornConfig
    from hypercorn.trio.tcp_server import TCPServer
    from hypercorn.trio.worker_context import WorkerContext
    from hypercorn.typing import ConnectionState
    from hypercorn.utils import wrap_app

    host, port = sock.getsockname()[:2]
    url = ListenAddress(host, port).url
    config = HypercornConfig()
    # hypercorn's warnings and errors reach the daemon's log. No access log:
    # it adds nothing the debug line in `asgi` lacks, and must never risk
    # logging headers.
    config.errorlog = logging.getLogger("openmemoryd.http.server")
    config.errorlog.setLevel(logging.WARNING)
    config.accesslog = None
    # A client that stalls mid-request holds one of `max_inflight` slots at
    # most this long.
    config.read_timeout = READ_TIMEOUT_S
    config.include_server_header = False
    gateway = GatewayApp(api, plan, server.max_frame_bytes)
    # hypercorn's Framework type spells out every ASGI event TypedDict; our
    # app takes the same messages as plain mappings.
    framework: Any = gateway
    app = wrap_app(framework, config.wsgi_max_body_size, "asgi")
    context = WorkerContext(None)

    live: set[WatchedStream] = set()

    async def serve_connection(stream: trio.SocketStream) -> None:
        watched = WatchedStream(stream)
        # hypercorn 0.18 annotates the stream as TLS, but serves a plain one
        # (its AttributeError branch); 0.17 annotated any trio stream.
        plain: Any = watched
        live.add(watched)
        try:
            await TCPServer(app, config, context, ConnectionState({}), plain).run()
        except* Exception:
            logger.exception("HTTP connection handler failed")
        finally:
            live.discard(watched)

    access = "bearer token required" if plan.token is not None else "no token: loopback only"
    sock.listen(config.backlog)
    listener = trio.SocketListener(trio.socket.from_stdlib_socket(sock))
    try:
        async with trio.open_nursery() as connections:
            async with trio.open_nursery() as acceptor:
                acceptor.start_soon(
                    accept_forever,
                    listener,
                    lambda stream: connections.start_soon(serve_connection, stream),
                    logger,
                )
                logger.info("HTTP API on %s (%s)", url, access)
                task_status.started(url)
                await stop.wait()
                gateway.begin_stop(server.drain_timeout_s)
                acceptor.cancel_scope.cancel()
            _accept_backlog(sock, connections, serve_connection)
            await listener.aclose()
            logger.info(
                "HTTP: stopping; %d request(s) running get up to %g s to finish",
                gateway.active,
                server.drain_timeout_s,
            )
            with trio.move_on_after(server.drain_timeout_s):
                await _wait_quiet(gateway, live)
            abandoned = gateway.abandon()
            if abandoned:
                logger.warning(
                    "%d HTTP request(s) still running after %g s ([server] drain_timeout_s): "
                    "answering them 503 and stopping",
                    abandoned,
                    server.drain_timeout_s,
                )
                with trio.move_on_after(REPLY_WAIT_S):
                    await _wait_quiet(gateway, live)
            await context.terminated.set()  # hypercorn closes the idle connections
            connections.cancel_scope.deadline = trio.current_time() + REPLY_WAIT_S
        logger.debug("HTTP: stopped")
    finally:
        sock.close()  # a no-op if the listener closed it


class WatchedStream(trio.abc.HalfCloseableStream):
    """A connection's stream that tells whether hypercorn has handled all it
    was sent: `waiting` while it waits for more bytes, `done` once it read
    the end of the stream (or failed to read). Either way the connection is
    running a request or idle, never holding a request half-read. hypercorn
    reaches the socket through `socket`, as on `trio.SocketStream`, which
    cannot be subclassed."""

    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self.socket = stream.socket
        self.waiting = False
        self.done = False

    async def receive_some(self, max_bytes: int | None = None) -> bytes | bytearray:
        # `waiting` covers only the wait for the kernel, not the read: a read
        # takes the bytes and then yields to other tasks before returning
        # them, a moment when this connection would look idle with nothing
        # unread, though it holds a request not yet handed to the app.
        self.waiting = True
        try:
            await trio.lowlevel.wait_readable(self.socket)
            self.waiting = False
            data = await self.stream.receive_some(max_bytes)
        except BaseException:
            self.done = True  # hypercorn reads no more after a failed read
            raise
        finally:
            self.waiting = False
        self.done = not data
        return data

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        await self.stream.send_all(data)

    async def wait_send_all_might_not_block(self) -> None:
        await self.stream.wait_send_all_might_not_block()

    async def send_eof(self) -> None:
        await self.stream.send_eof()

    async def aclose(self) -> None:
        await self.stream.aclose()


async def _wait_quiet(gateway: GatewayApp, live: set[WatchedStream]) -> None:
    """Return once no request is running and every open connection is idle
    with nothing unread: a request a client sent just before the stop, on a
    kept-alive connection or one accepted from the backlog, is then answered
    (503) instead of lost when the idle connections are closed."""
    while True:
        await gateway.wait_idle()
        if _all_idle(live):
            return
        await trio.sleep(_QUIET_POLL_S)


def _all_idle(live: set[WatchedStream]) -> bool:
    """Whether every connection in *live* is done reading, or waits for bytes
    and has none in the kernel that hypercorn has not read yet."""
    reading = [stream for stream in live if not stream.done]
    if not all(stream.waiting for stream in reading):
        return False
    poller = select.poll()
    for stream in reading:
        poller.register(stream.socket.fileno(), select.POLLIN)
    return not poller.poll(0)


def _accept_backlog(
    sock: socket.socket, connections: trio.Nursery, serve_connection: ServeConnection
) -> None:
    """Accept, without waiting, the connections the kernel completed before the
    stop: closing the listening socket would reset them, and a client that
    already sent its request would get no answer. They are served (a 503)."""
    # trio made the socket non-blocking
    accept_waiting(sock, lambda stream: connections.start_soon(serve_connection, stream), logger)
