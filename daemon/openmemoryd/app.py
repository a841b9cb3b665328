"""The daemon's life: start, serve, stop.

Start-up order: take the single-instance locks (state dir, socket), create
the workspace from its templates if missing, open the index, bind the socket,
then report ready and reconcile the index with the files in the background.
Shutdown on SIGTERM or SIGINT drains in-flight requests, commits, closes the
index and removes the socket; a second signal exits at once (appended text is
already fsynced and the index is transactional, so nothing is lost).
"""

from __future__ import annotations

import logging
import os
import signal

import trio

from openmemoryd.api import Api, DaemonInfo
from openmemoryd.config import Config
from openmemoryd.engine import open_engine
from openmemoryd.server import InstanceLock, bind_unix_listener, remove_socket, serve_rpc
from openmemoryd.service import sd_notify
from openmemoryd.workspace import init_workspace

logger = logging.getLogger("openmemoryd")


async def run_daemon(config: Config) -> None:
    """Run until a termination signal; raise `StartupError` if we cannot start."""
    state_lock = InstanceLock(
        config.state_dir / "openmemoryd.lock", f"state dir {config.state_dir}"
    )
    socket_lock = InstanceLock(
        config.socket.with_name(config.socket.name + ".lock"), f"socket {config.socket}"
    )
    state_lock.acquire()
    try:
        socket_lock.acquire()
        try:
            await _serve(config)
        finally:
            socket_lock.release()
    finally:
        state_lock.release()


async def _serve(config: Config) -> None:
    created = init_workspace(config.workspace)
    if created:
        logger.info("created workspace %s (%s)", config.workspace, ", ".join(created))
    async with open_engine(config) as engine:
        listener, inode = await bind_unix_listener(config.socket)
        try:
            api = Api(engine, DaemonInfo(socket=str(config.socket)))
            stop = trio.Event()
            async with trio.open_nursery() as background:
                background.start_soon(_watch_signals, stop)
                async with trio.open_nursery() as server:
                    await server.start(serve_rpc, listener, api, config.server, stop)
                    logger.info(
                        "openmemoryd %s ready on %s (workspace %s, index %s)",
                        api.info.version,
                        config.socket,
                        config.workspace,
                        config.index_path,
                    )
                    sd_notify(f"READY=1\nSTATUS=serving on {config.socket}")
                # serve_rpc returned: stop was set and the connections drained.
                background.cancel_scope.cancel()
        finally:
            remove_socket(config.socket, inode)
    logger.info("openmemoryd stopped")


async def _watch_signals(stop: trio.Event) -> None:
    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async for signum in signals:
            if stop.is_set():
                logger.warning("second %s: exiting immediately", signal.Signals(signum).name)
                os._exit(128 + signum)
            logger.info("%s received: draining and stopping", signal.Signals(signum).name)
            sd_notify("STOPPING=1")
            stop.set()
