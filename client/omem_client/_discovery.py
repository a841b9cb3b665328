"""Finding the daemon's socket from the client side.

Order: an explicit path, ``OPENMEMORY_SOCKET``, the ``socket`` key of the
config file the daemon reads, then the protocol's default. Reading the config
file here keeps ``omem-client`` working when the socket was moved in the
config only; a config file that cannot be parsed is ignored (the daemon
reports it loudly; the client just falls back to the default path).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from omem_protocol import SOCKET_ENV, default_config_path, resolve_socket_path


def discover_socket(
    explicit: str | os.PathLike[str] | None = None, environ: Mapping[str, str] | None = None
) -> Path:
    """The socket path to connect to."""
    if explicit is not None:
        return Path(explicit).expanduser()
    env = os.environ if environ is None else environ
    if env.get(SOCKET_ENV, "").strip():
        return resolve_socket_path(env)
    return resolve_socket_path(env, _configured_socket(default_config_path(env)))


def _configured_socket(config_path: Path) -> Path | None:
    if not config_path.is_file():
        return None
    import tomllib  # only when there is a config file to read

    try:
        with config_path.open("rb") as handle:
            value = tomllib.load(handle).get("socket")
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):  # not UTF-8: not TOML either
        return None
    if not isinstance(value, str) or not value.strip():
        return None
    path = Path(value.strip()).expanduser()
    return path if path.is_absolute() else config_path.parent / path
