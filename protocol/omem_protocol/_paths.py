"""Where the socket and the config file live, resolved the same way on both sides.

Socket: ``OPENMEMORY_SOCKET``; else the config file's ``socket``; else
``$XDG_RUNTIME_DIR/openmemory/openmemoryd.sock`` (systemd creates that
directory 0700 per user); else a short per-user path under /tmp. The fallback
deliberately avoids `tempfile.gettempdir()`, which on macOS is a long
/var/folders path that would overflow ``sun_path``.

Config: ``OPENMEMORY_CONFIG``; else the platform's user config directory
(``$XDG_CONFIG_HOME`` or ~/.config on Linux, ~/Library/Application Support on
macOS), as platformdirs would answer, computed here with the standard library
so the client stays light.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Final

SOCKET_ENV: Final = "OPENMEMORY_SOCKET"
CONFIG_ENV: Final = "OPENMEMORY_CONFIG"
APP_NAME: Final = "openmemory"
SOCKET_NAME: Final = "openmemoryd.sock"

# sizeof(sockaddr_un.sun_path) minus the terminating NUL.
MAX_SOCKET_PATH_BYTES: Final = 103 if sys.platform == "darwin" else 107


def default_config_path(environ: Mapping[str, str] | None = None) -> Path:
    """Return the config file path (it need not exist)."""
    env = os.environ if environ is None else environ
    explicit = env.get(CONFIG_ENV, "").strip()
    if explicit:
        return Path(explicit).expanduser()
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support" / APP_NAME / "config.toml"
    xdg = env.get("XDG_CONFIG_HOME", "").strip()
    base = Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".config"
    return base / APP_NAME / "config.toml"


def resolve_socket_path(
    environ: Mapping[str, str] | None = None, configured: Path | None = None
) -> Path:
    """Return the socket path the daemon listens on and clients connect to.

    *configured* is the config file's ``socket`` setting, if any; the
    environment variable wins over it so a script can always redirect.
    """
    env = os.environ if environ is None else environ
    explicit = env.get(SOCKET_ENV, "").strip()
    if explicit:
        return Path(explicit).expanduser()
    if configured is not None:
        return configured.expanduser()
    runtime = env.get("XDG_RUNTIME_DIR", "").strip()
    if runtime and Path(runtime).is_absolute() and Path(runtime).is_dir():
        return Path(runtime) / "openmemory" / SOCKET_NAME
    return Path("/tmp") / f"openmemory-{os.getuid()}" / SOCKET_NAME


def socket_lock_path(socket: Path) -> Path:
    """The file a running daemon holds locked (``flock``) for *socket*, its pid inside.

    The daemon takes it before anything else and keeps it until it has
    exited, its stop's drain included, so a client finds there whether a
    daemon is on its way up or down while the socket itself refuses it.
    """
    return socket.with_name(socket.name + ".lock")


def socket_path_problem(path: Path) -> str | None:
    """Explain why *path* cannot be a Unix socket address, or return None."""
    size = len(os.fsencode(path))
    if size > MAX_SOCKET_PATH_BYTES:
        return (
            f"socket path is {size} bytes, over the {MAX_SOCKET_PATH_BYTES}-byte limit "
            f"of Unix sockets: {path} (set {SOCKET_ENV} to a shorter path)"
        )
    return None
