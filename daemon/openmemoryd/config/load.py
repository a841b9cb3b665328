"""Build the `Config` from file, environment and flags, in that order of strength.

Precedence (strongest first): command-line flags, ``OPENMEMORY_*`` environment
variables, the TOML file, built-in defaults. Relative paths in the file are
relative to the file's directory; relative paths from flags or the
environment are relative to the current directory, as a shell user expects.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import msgspec
import platformdirs

from omem_protocol import CONFIG_ENV, SOCKET_ENV, default_config_path, resolve_socket_path
from openmemoryd.config.http_token import check_http_token
from openmemoryd.config.model import Config, FileConfig, HttpSettings
from openmemoryd.errors import ConfigError

WORKSPACE_ENV: Final = "OPENMEMORY_WORKSPACE"
STATE_DIR_ENV: Final = "OPENMEMORY_STATE_DIR"
LOG_LEVEL_ENV: Final = "OPENMEMORY_LOG_LEVEL"
DEFAULT_WORKSPACE: Final = Path("~/.openmemory/workspace")


@dataclass(frozen=True, slots=True)
class Overrides:
    """Values given as command-line flags; None means "not given"."""

    config: Path | None = None
    workspace: Path | None = None
    state_dir: Path | None = None
    socket: Path | None = None
    log_level: str | None = None
    http: str | None = None  # ``--http HOST:PORT``: serve HTTP there, whatever the file says


def load_config(
    overrides: Overrides | None = None, environ: Mapping[str, str] | None = None
) -> Config:
    """Resolve the configuration; raise `ConfigError` with a precise message."""
    flags = overrides or Overrides()
    env = os.environ if environ is None else environ

    path, explicit = _config_file(flags, env)
    file_config, config_path = _read_file(path, explicit)
    base = path.parent

    workspace = _pick(flags.workspace, env.get(WORKSPACE_ENV), file_config.workspace, base)
    state_dir = _pick(flags.state_dir, env.get(STATE_DIR_ENV), file_config.state_dir, base)
    if flags.socket is not None:
        socket = _absolute(flags.socket, Path.cwd())
    else:
        configured = _absolute(Path(file_config.socket), base) if file_config.socket else None
        socket = _absolute(resolve_socket_path(env, configured), Path.cwd())

    workspace = workspace or _absolute(DEFAULT_WORKSPACE, Path.cwd())
    state_dir = state_dir or Path(platformdirs.user_state_dir("openmemory", appauthor=False))
    log_level = flags.log_level or env.get(LOG_LEVEL_ENV, "").strip() or file_config.log_level
    if log_level not in ("debug", "info", "warning", "error"):
        raise ConfigError(f"log level must be debug, info, warning or error, not {log_level!r}")

    return Config(
        config_path=config_path,
        workspace=workspace,
        state_dir=state_dir,
        socket=socket,
        extra_paths=normalize_extra_paths(workspace, file_config.extra_paths),
        log_level=log_level,  # type: ignore[arg-type]  # checked just above
        index=file_config.index,
        search=file_config.search,
        server=file_config.server,
        embedding=file_config.embedding,
        sync=file_config.sync,
        sessions=file_config.sessions,
        recall=file_config.recall,
        capture=file_config.capture,
        primer=file_config.primer,
        flush=file_config.flush,
        session_paths=normalize_extra_paths(workspace, file_config.sessions.paths),
        others=_other_workspaces(file_config, workspace, base),
        http=_http_settings(file_config, flags, config_path),
        chat=file_config.chat,
    )


@dataclass(frozen=True, slots=True)
class SocketLocation:
    """Where the daemon's socket is, found with or without a config that loads."""

    path: Path
    config: Config | None = None  # the config, when it loads
    config_error: str | None = None  # why it did not; None when it did
    # True when the path is the default only because the file could not be
    # read as TOML: a ``socket`` key in it, if any, is unknown.
    guessed: bool = False


def locate_socket(
    overrides: Overrides | None = None, environ: Mapping[str, str] | None = None
) -> SocketLocation:
    """The socket a daemon started with *overrides* listens on, even when the
    config file no longer loads.

    For the commands that only need to reach a running daemon (`stop`,
    `doctor`): a typo saved into the file must not lock the user out of the
    daemon still running with the config it loaded before. Resolved as
    `load_config` resolves it: the ``--socket`` flag, ``OPENMEMORY_SOCKET``,
    the file's ``socket`` key (read as plain TOML, so a value out of range
    elsewhere does not hide it), the default path.
    """
    flags = overrides or Overrides()
    env = os.environ if environ is None else environ
    try:
        config = load_config(flags, env)
    except ConfigError as exc:
        error = str(exc)
    else:
        return SocketLocation(config.socket, config)
    if flags.socket is not None:
        return SocketLocation(_absolute(flags.socket, Path.cwd()), config_error=error)
    path, _ = _config_file(flags, env)
    configured: Path | None = None
    guessed = False
    try:
        with path.open("rb") as handle:
            value = tomllib.load(handle).get("socket")
        if isinstance(value, str) and value.strip():
            configured = _absolute(Path(value.strip()), path.parent)
    except FileNotFoundError:
        pass  # no file: the default is the daemon's socket too
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
        guessed = not env.get(SOCKET_ENV, "").strip()
    socket = _absolute(resolve_socket_path(env, configured), Path.cwd())
    return SocketLocation(socket, config_error=error, guessed=guessed)


def _config_file(flags: Overrides, env: Mapping[str, str]) -> tuple[Path, bool]:
    """The config file to read, and whether it was named (a missing named file is an error)."""
    if flags.config is not None:
        return _absolute(flags.config, Path.cwd()), True
    return default_config_path(env), bool(env.get(CONFIG_ENV, "").strip())


def _http_settings(
    file_config: FileConfig, flags: Overrides, config_path: Path | None
) -> HttpSettings:
    """``[http]``, with ``--http HOST:PORT`` turning it on at that address.
    Its token is checked here, whether or not HTTP is on: a token no client
    can send is a mistake in the file, like a value out of range."""
    check_http_token(
        file_config.http.token.strip(), f"invalid config file {config_path}: $.http.token"
    )
    if flags.http is None:
        return file_config.http
    return msgspec.structs.replace(file_config.http, enabled=True, listen=flags.http)


def _other_workspaces(
    file_config: FileConfig, default: Path, base: Path
) -> tuple[tuple[str, Path, tuple[Path, ...]], ...]:
    """The ``[workspaces.<name>]`` tables, checked: the name ``default`` is the
    top-level workspace's, and no two workspaces may share or nest their
    Markdown (a file would belong to two indexes and be written by both)."""
    others: list[tuple[str, Path, tuple[Path, ...]]] = []
    seen = {"default": default}
    for name, settings in sorted(file_config.workspaces.items()):
        if name == "default":
            raise ConfigError(
                "$.workspaces.default: 'default' is the top-level workspace; pick another name"
            )
        path = _absolute(Path(settings.path), base)
        for other, other_path in seen.items():
            if (
                path == other_path
                or path.is_relative_to(other_path)
                or other_path.is_relative_to(path)
            ):
                raise ConfigError(
                    f"$.workspaces.{name}.path: {path} overlaps workspace {other!r} ({other_path})"
                )
        seen[name] = path
        others.append((name, path, normalize_extra_paths(path, settings.extra_paths)))
    return tuple(others)


def normalize_extra_paths(workspace: Path, raw: Iterable[str]) -> tuple[Path, ...]:
    """Expand ``~``, resolve relative entries against the workspace, drop
    blanks and duplicates (keeping the first), without following symlinks."""
    seen: dict[Path, None] = {}
    for entry in raw:
        text = entry.strip()
        if not text:
            continue
        seen.setdefault(_absolute(Path(text), workspace), None)
    return tuple(seen)


def _read_file(path: Path, explicit: bool) -> tuple[FileConfig, Path | None]:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        if explicit:
            raise ConfigError(f"config file not found: {path}") from None
        return FileConfig(), None
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror}") from None
    try:
        return msgspec.toml.decode(data, type=FileConfig), path
    except msgspec.DecodeError as exc:
        raise ConfigError(f"invalid config file {path}: {exc}") from None
    except UnicodeDecodeError as exc:  # TOML is UTF-8; msgspec lets this one through
        raise ConfigError(
            f"invalid config file {path}: not UTF-8 (the byte 0x{exc.object[exc.start]:02X}"
            f" at offset {exc.start}); save it as UTF-8"
        ) from None


def _pick(
    flag: Path | None, env_value: str | None, file_value: str | None, base: Path
) -> Path | None:
    if flag is not None:
        return _absolute(flag, Path.cwd())
    if env_value and env_value.strip():
        return _absolute(Path(env_value.strip()), Path.cwd())
    if file_value:
        return _absolute(Path(file_value), base)
    return None


def _absolute(path: Path, base: Path) -> Path:
    """Expand ``~`` and anchor at *base*, normalising ``..`` lexically (no
    symlink resolution: the user's spelling of the path is what we watch)."""
    expanded = path.expanduser()
    return Path(os.path.normpath(expanded if expanded.is_absolute() else base / expanded))
