"""Running the HTTP API: bind, serve with hypercorn's trio worker, drain.

hypercorn is imported here, inside `serve_http`, so a daemon without
``[http]`` never loads it. We bind the listening socket ourselves and hand
hypercorn its descriptor (``fd://``): a port already in use is then a
`StartupError` with a clear message before the daemon reports ready, rather
than an OSError from deep inside the server. Shutdown follows the socket
server's: when *stop* is set hypercorn stops accepting and in-flight
requests get ``drain_timeout_s`` to finish.
"""

from __future__ import annotations

import logging
import socket
from functools import partial
from typing import Any, Final

import trio

from openmemoryd.api import Api
from openmemoryd.config import ServerSettings
from openmemoryd.errors import StartupError
from openmemoryd.gateway.address import GatewayPlan, ListenAddress
from openmemoryd.gateway.asgi import GatewayApp

logger = logging.getLogger("openmemoryd.http")

READ_TIMEOUT_S: Final = 30


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
    """Serve the HTTP API on *sock* (from `bind_tcp`; this takes it over) until
    *stop* is set; reports the base URL once listening."""
    from hypercorn.config import Config as HypercornConfig
    from hypercorn.trio import serve

    host, port = sock.getsockname()[:2]
    url = ListenAddress(host, port).url
    config = HypercornConfig()
    config.bind = [f"fd://{sock.detach()}"]
    # hypercorn's own info lines ("Running on ...") repeat ours; its warnings
    # and errors still reach the daemon's log. No access log: it adds nothing
    # the debug line in `asgi` lacks, and must never risk logging headers.
    config.errorlog = logging.getLogger("openmemoryd.http.server")
    config.errorlog.setLevel(logging.WARNING)
    config.accesslog = None
    # A client that stalls mid-request holds one of `max_inflight` slots at
    # most this long.
    config.read_timeout = READ_TIMEOUT_S
    config.graceful_timeout = server.drain_timeout_s
    config.include_server_header = False
    # hypercorn's Framework type spells out every ASGI event TypedDict; our
    # app takes the same messages as plain mappings.
    app: Any = GatewayApp(api, plan, server.max_frame_bytes)
    async with trio.open_nursery() as nursery:
        await nursery.start(partial(serve, app, config, shutdown_trigger=stop.wait))
        logger.info(
            "HTTP API on %s (%s)",
            url,
            "bearer token required" if plan.token is not None else "no token: loopback only",
        )
        task_status.started(url)
