"""The accept loop and graceful shutdown of the socket server.

Shutdown ("drain"), when *stop* is set; every request read gets a reply:

1. every open connection answers each new request ``unavailable`` ("openmemoryd
   is stopping") from now on (`Connection.begin_stop`), but stays open:
   clients keep their connection between requests, and a request on it
   must be answered, not reset;
2. the listener closes, so a new connection is refused at once (the client
   says the daemon is not running); connections the kernel had already
   completed are accepted first (`_accept_backlog`), and their Hello is
   answered ``unavailable``;
3. requests already running get ``[server] drain_timeout_s`` to finish with
   their normal reply;
4. requests still running then are cancelled and answered ``unavailable``
   (`Connection.abandon`), with `REPLY_WAIT_S` for those replies to go;
5. the connections are closed once every one is `Connection.quiet` (nothing
   running, nothing unread, so closing resets none), or at the end of the
   waits above, whichever comes first.
"""

from __future__ import annotations

import logging
import os
import socket
import struct
from typing import Final

import trio

from openmemoryd.api import Api
from openmemoryd.config import ServerSettings
from openmemoryd.server.connection import Connection
from openmemoryd.service.accept import accept_forever, accept_waiting

logger = logging.getLogger("openmemoryd.server")

_CREDENTIALS = struct.Struct("3i")
# After the grace period: how long the replies of abandoned requests (small,
# already encoded) get to be written before the connections are closed.
REPLY_WAIT_S: Final = 1.0


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
            acceptor.start_soon(
                accept_forever,
                listener,
                lambda stream: _start_serving(stream, connections, live, api, settings),
                logger,
            )
            task_status.started()
            await stop.wait()
            acceptor.cancel_scope.cancel()
        _accept_backlog(listener, connections, live, api, settings)
        changed = trio.lowlevel.ParkingLot()
        for connection in live:
            connection.begin_stop(settings.drain_timeout_s, changed)
        await listener.aclose()
        await drain(live, settings.drain_timeout_s, changed)
        connections.cancel_scope.cancel()  # closes every connection


async def drain(live: set[Connection], grace_s: float, changed: trio.lowlevel.ParkingLot) -> None:
    """Wait up to *grace_s* for the requests running on *live* connections
    (already stopping, each unparking *changed* when it may have become
    quiet) to finish, then abandon the rest and give their replies
    `REPLY_WAIT_S`; return as soon as every connection is quiet."""
    logger.info(
        "stopping: %d request(s) running on %d connection(s) get up to %g s to finish",
        sum(connection.running for connection in live),
        len(live),
        grace_s,
    )
    with trio.move_on_after(grace_s):
        await _wait_quiet(live, changed)
    abandoned = sum(connection.abandon() for connection in live)
    if abandoned:
        logger.warning(
            "%d request(s) still running after %g s ([server] drain_timeout_s): "
            "answering them unavailable and stopping",
            abandoned,
            grace_s,
        )
    with trio.move_on_after(REPLY_WAIT_S):
        await _wait_quiet(live, changed)


async def _wait_quiet(live: set[Connection], changed: trio.lowlevel.ParkingLot) -> None:
    """Return once every connection in *live* is quiet. Bytes a client sent
    that the kernel holds wake its reader, which, once it has handled them,
    waits again and unparks *changed*, so no polling is needed."""
    while not all(connection.quiet() for connection in live):
        await changed.park()


def _accept_backlog(
    listener: trio.SocketListener,
    connections: trio.Nursery,
    live: set[Connection],
    api: Api,
    settings: ServerSettings,
) -> None:
    """Accept, without waiting, the connections the kernel completed before
    the stop: closing the listener would reset them, and a client that had
    already sent its Hello would read "connection reset" instead of a reason.

    Accepted through a duplicate of the listener's descriptor, since trio's
    sockets only accept by waiting; the duplicate shares the listener's
    non-blocking mode.
    """
    try:
        backlog = socket.socket(fileno=os.dup(listener.socket.fileno()))
    except OSError as exc:  # out of descriptors: they are reset, as before
        logger.warning("cannot accept at the stop (%s)", exc.strerror)
        return
    try:
        backlog.setblocking(False)
        accept_waiting(
            backlog,
            lambda stream: _start_serving(stream, connections, live, api, settings),
            logger,
        )
    finally:
        backlog.close()


def _start_serving(
    stream: trio.SocketStream,
    connections: trio.Nursery,
    live: set[Connection],
    api: Api,
    settings: ServerSettings,
) -> None:
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
