"""The daemon's life: start, serve, stop.

Start-up order: take over systemd's socket if we were socket-activated, take
the single-instance locks (state dir, socket), create the workspace from its
templates if missing, open the index, bind the socket (unless systemd gave us
one), then report ready and reconcile the index with the files in the
background.
With ``[http]`` on, the HTTP API (`gateway`) is bound right after the socket
and served beside it over the same `Api`; it drains with the socket server.
Shutdown on SIGTERM or SIGINT drains in-flight requests, commits, closes the
index and removes the socket (not systemd's: that one stays for the next
activation); a second signal exits at once (appended text is already fsynced
and the index is transactional, so nothing is lost).
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import signal
import socket
import time
from collections.abc import Callable

import trio

from omem_protocol import socket_lock_path
from openmemoryd.api import Api, DaemonInfo
from openmemoryd.config import Config
from openmemoryd.config.reload import ReloadState, plan_reload
from openmemoryd.engine import Engine, open_engine
from openmemoryd.errors import OmemdError
from openmemoryd.gateway import GatewayPlan, bind_tcp, plan_gateway, serve_http
from openmemoryd.server import (
    InstanceLock,
    adopt_unix_listener,
    bind_unix_listener,
    remove_socket,
    serve_rpc,
)
from openmemoryd.server.instance import STATE_LOCK_NAME
from openmemoryd.service import sd_notify, take_activation_socket
from openmemoryd.workspace import init_workspace

logger = logging.getLogger("openmemoryd")


async def run_daemon(config: Config, reload: Callable[[], Config] | None = None) -> None:
    """Run until a termination signal; raise `StartupError` if we cannot start.

    *reload* re-reads the configuration from where *config* came from; SIGHUP
    calls it and applies what can change at run time (`config.reload`).
    """
    # First, before anything can start a child process: it clears LISTEN_*.
    activation = take_activation_socket()
    inherited = adopt_unix_listener(activation, config.socket) if activation else None
    state_lock = InstanceLock(config.state_dir / STATE_LOCK_NAME, f"state dir {config.state_dir}")
    socket_lock = InstanceLock(socket_lock_path(config.socket), f"socket {config.socket}")
    state_lock.acquire()
    try:
        socket_lock.acquire()
        try:
            await _serve(config, inherited, reload)
        finally:
            socket_lock.release()
    finally:
        state_lock.release()


async def _serve(
    config: Config, inherited: trio.SocketListener | None, reload: Callable[[], Config] | None
) -> None:
    # Checked before anything opens: a bad [http] section must not cost an index open.
    http_plan = _plan_http(config)
    async with contextlib.AsyncExitStack() as stack:
        engines: dict[str, Engine] = {}
        for ws in config.workspace_configs():
            created = init_workspace(ws.workspace)
            if created:
                logger.info("created workspace %s (%s)", ws.workspace, ", ".join(created))
            engines[ws.name] = await stack.enter_async_context(open_engine(ws))
        if inherited is None:
            listener, inode = await bind_unix_listener(config.socket)
        else:
            listener, inode = inherited, None
            logger.info("serving on the socket systemd passed us (%s)", config.socket)
        http_socket: socket.socket | None = None
        try:
            if http_plan is not None:
                http_socket = bind_tcp(http_plan.address)
            api = Api(engines, DaemonInfo(socket=str(config.socket)))
            stop = trio.Event()
            async with trio.open_nursery() as background:
                background.start_soon(_watch_signals, stop)
                if reload is not None:
                    background.start_soon(_reload_on_sighup, api, reload)
                async with trio.open_nursery() as server:
                    await server.start(serve_rpc, listener, api, config.server, stop)
                    if http_plan is not None and http_socket is not None:
                        url = await server.start(
                            serve_http, api, http_plan, http_socket, config.server, stop
                        )
                        api.info = dataclasses.replace(api.info, http=url)
                    for name, engine in engines.items():
                        logger.info(
                            "openmemoryd %s ready on %s (workspace %s at %s, index %s)",
                            api.info.version,
                            config.socket,
                            name,
                            engine.config.workspace,
                            engine.config.index_path,
                        )
                    sd_notify(f"READY=1\nSTATUS=serving on {config.socket}")
                # serve_rpc returned: stop was set and the connections drained.
                background.cancel_scope.cancel()
        finally:
            if http_socket is not None:
                http_socket.close()  # a no-op once the HTTP server took it over
            if inode is not None:
                remove_socket(config.socket, inode)
    logger.info("openmemoryd stopped")


def _plan_http(config: Config) -> GatewayPlan | None:
    """The checked ``[http]`` settings, or None when HTTP is off."""
    if not config.http.enabled:
        return None
    return plan_gateway(config.http)


async def _watch_signals(stop: trio.Event) -> None:
    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async for signum in signals:
            if stop.is_set():
                logger.warning("second %s: exiting immediately", signal.Signals(signum).name)
                os._exit(128 + signum)
            logger.info("%s received: draining and stopping", signal.Signals(signum).name)
            sd_notify("STOPPING=1")
            stop.set()


async def _reload_on_sighup(api: Api, reload: Callable[[], Config]) -> None:
    """Reload on every SIGHUP; what it leaves to tell goes into `status`."""
    state = ReloadState()
    with trio.open_signal_receiver(signal.SIGHUP) as signals:
        async for _ in signals:
            state = apply_reload(api.engines, reload, state)
            api.info = dataclasses.replace(api.info, config_issues=state.issues(api.info.pid))


def apply_reload(
    engines: dict[str, Engine], reload: Callable[[], Config], state: ReloadState
) -> ReloadState:
    """Re-read the config and apply what is safe to change now, to every
    workspace; a config that does not load is logged and changes nothing.
    Returns *state* updated with this reload's outcome."""
    try:
        loaded = {ws.name: ws for ws in reload().workspace_configs()}
    except OmemdError as exc:
        logger.error("SIGHUP: the config did not load, nothing changed: %s", exc)
        return state.failed(str(exc), time.time())
    default = engines["default"]
    waiting: list[str] = []
    if set(loaded) != set(engines):
        waiting.append(f"workspaces {sorted(engines)} -> {sorted(loaded)}")
        logger.warning("SIGHUP: not applied until a restart: %s", waiting[0])
    plan = plan_reload(default.config, loaded["default"])
    if plan.config.log_level != default.config.log_level:
        logging.getLogger().setLevel(plan.config.log_level.upper())
    for name, engine in engines.items():
        if name in loaded:
            engine.config = plan_reload(engine.config, loaded[name]).config
    if not plan.applied and not plan.needs_restart:
        logger.info("SIGHUP: config reloaded, nothing changed")
    if plan.applied:
        logger.info("SIGHUP: applied %s", "; ".join(map(str, plan.applied)))
    if plan.needs_restart:
        logger.warning(
            "SIGHUP: not applied until a restart: %s", "; ".join(map(str, plan.needs_restart))
        )
    return state.loaded([*waiting, *map(str, plan.needs_restart)])
