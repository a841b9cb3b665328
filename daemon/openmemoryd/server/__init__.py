"""The Unix-socket server: binding, connections, shutdown."""

from __future__ import annotations

from openmemoryd.server.connection import Connection
from openmemoryd.server.instance import InstanceLock
from openmemoryd.server.listener import (
    adopt_unix_listener,
    bind_unix_listener,
    check_socket_dir,
    remove_socket,
)
from openmemoryd.server.rpc import peer_uid, serve_rpc

__all__ = [
    "Connection",
    "InstanceLock",
    "adopt_unix_listener",
    "bind_unix_listener",
    "check_socket_dir",
    "peer_uid",
    "remove_socket",
    "serve_rpc",
]
