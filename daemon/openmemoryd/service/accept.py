"""The accept loop both servers run: the socket's RPC and the HTTP API's.

Running out of descriptors or memory for a moment (``EMFILE``, ``ENOBUFS``,
…) must not end a daemon that many agents share, so such an error is
logged and the loop tries again shortly; any other error means the
listener itself is broken and ends the loop.
"""

from __future__ import annotations

import errno
import logging
import socket
from collections.abc import Callable
from typing import Final

import trio

# accept() errors that mean "out of resources for now", not "listener broken".
TRANSIENT_ACCEPT_ERRORS: Final = frozenset(
    {errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.ENOBUFS}
)
RETRY_AFTER_S: Final = 0.1


async def accept_forever(
    listener: trio.SocketListener,
    serve: Callable[[trio.SocketStream], None],
    logger: logging.Logger,
) -> None:
    """Hand each connection *listener* accepts to *serve* (which starts its
    task and returns), until cancelled."""
    while True:
        try:
            stream = await listener.accept()
        except OSError as exc:
            if exc.errno not in TRANSIENT_ACCEPT_ERRORS:
                raise
            logger.error("accept failed (%s); retrying shortly", exc.strerror)
            await trio.sleep(RETRY_AFTER_S)
            continue
        serve(stream)


def accept_waiting(
    sock: socket.socket,
    serve: Callable[[trio.SocketStream], None],
    logger: logging.Logger,
) -> None:
    """Hand *serve* each connection the kernel has already completed on the
    non-blocking *sock*, without waiting for more: at a stop, closing the
    listener would reset them, and a client that had sent its request would
    get no answer."""
    while True:
        try:
            accepted, _ = sock.accept()
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            logger.warning("accept at the stop failed (%s)", exc.strerror)
            return
        serve(trio.SocketStream(trio.socket.from_stdlib_socket(accepted)))
