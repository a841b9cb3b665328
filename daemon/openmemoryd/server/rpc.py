"""The accept loop and graceful shutdown of the socket server.

Shutdown ("drain"): when `stop` is set the listener closes, every connection
stops reading new requests, and requests already running get up to
``drain_timeout_s`` to finish and send their replies; whatever is still
running after that is cancelled.
"""

from __future__ import annotations

import errno
import logging
import os
import socket
import struct

import trio

from openmemoryd.api import Api
from openmemoryd.config import ServerSettings
from openmemoryd.server.connection import Connection

logger = logging.getLogger("openmemoryd.server")

# accept() errors that mean "out of resources for now", not "listener broken".
_TRANSIENT_ACCEPT_ERRORS = {errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.ENOBUFS}
_CREDENTIALS = struct.Struct("3i")


def peer_uid(sock: trio.socket.SocketType) -> int | None:
    """The connecting process's uid, where the platform tells us (Linux)."""
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return None
    raw = sock.getsockopt(socket.SOL_SOCKET, option, _CREDENTIALS.size)
    _pid, uid, _gid = _CREDENTIALS.unpack(raw)
    return int(uid)


async def serve_rpc(
    listener: trio.SocketListener,
    api: Api,
    settings: ServerSettings,
    stop: trio.Event,
    *,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve clients until *stop* is set, then drain and return."""
    live: set[Connection] = set()
    async with trio.open_nursery() as connections:
        async with trio.open_nursery() as acceptor:
            acceptor.start_soon(_accept_forever, listener, connections, live, api, settings)
            task_status.started()
            await stop.wait()
            acceptor.cancel_scope.cancel()
        await listener.aclose()
        logger.info("draining %d connection(s)", len(live))
        for connection in list(live):
            connection.stop_reading()
        connections.cancel_scope.deadline = trio.current_time() + settings.drain_timeout_s


async def _accept_forever(
    listener: trio.SocketListener,
    connections: trio.Nursery,
    live: set[Connection],
    api: Api,
    settings: ServerSettings,
) -> None:
    while True:
        try:
            stream = await listener.accept()
        except OSError as exc:
            if exc.errno not in _TRANSIENT_ACCEPT_ERRORS:
                raise
            logger.error("accept failed (%s); retrying shortly", exc.strerror)
            await trio.sleep(0.1)
            continue
        connection = Connection(stream, api, settings)
        live.add(connection)
        connections.start_soon(_serve_connection, connection, live, peer_uid(stream.socket))


async def _serve_connection(connection: Connection, live: set[Connection], uid: int | None) -> None:
    try:
        if uid is not None and uid != os.geteuid():
            logger.warning("refused a connection from uid %d", uid)
            await connection.refuse("only the user who runs openmemoryd may connect to it")
            return
        await connection.serve()
    except* Exception:
        logger.exception("connection handler failed")
    finally:
        live.discard(connection)
