"""``openmemoryd install-service``: write the systemd units or the launchd agent.

What gets installed runs *this* installation: the ``openmemoryd`` console
script next to ``sys.executable`` (or ``sys.executable -m openmemoryd``), so a
venv or pipx install works without PATH tricks. Only the flags the user
gave are baked into the command line; everything else the daemon resolves at
run time, exactly as it does in a shell.

The service manager does not see this shell's environment, so
``OPENMEMORY_*`` variables set here are reported, not copied: the user
decides whether to pass them as flags.

Writing is all or nothing: if any file exists with other contents, nothing
is written unless ``--force`` (the user may have edited it), and the
differences are shown. A file with the same contents is left untouched.
"""

from __future__ import annotations

import difflib
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, Literal

from omem_protocol import resolve_socket_path
from openmemoryd.config import Config, Overrides, load_config
from openmemoryd.errors import OmemdError
from openmemoryd.service import render

Platform = Literal["linux", "macos"]

# Environment variable -> (install-service flag, the `Overrides` field it sets).
_ENV_FLAGS: Final = {
    "OPENMEMORY_CONFIG": ("--config", "config"),
    "OPENMEMORY_WORKSPACE": ("--workspace-dir", "workspace"),
    "OPENMEMORY_STATE_DIR": ("--state-dir", "state_dir"),
    "OPENMEMORY_SOCKET": ("--socket", "socket"),
    "OPENMEMORY_LOG_LEVEL": ("--log-level", "log_level"),
}


class InstallError(OmemdError):
    """The service files cannot be installed as asked."""


@dataclass(frozen=True, slots=True)
class UnitFile:
    """One file to install: where, what, and whether it differs from what is there."""

    path: Path
    content: bytes
    existing: bytes | None = None

    @property
    def unchanged(self) -> bool:
        return self.existing == self.content


@dataclass(frozen=True, slots=True)
class InstallPlan:
    """Everything `install-service` would do, computed without touching the disk.

    *enable* is the one command that starts the service now and at every
    login; *reload* applies replaced files to a service that already runs.
    """

    platform: Platform
    argv: tuple[str, ...]
    files: tuple[UnitFile, ...]
    enable: str
    reload: str
    notes: tuple[str, ...] = field(default=())
    make_dirs: tuple[Path, ...] = field(default=())


def current_platform() -> Platform:
    """The platform whose service manager we can install for; else `InstallError`."""
    name: str = sys.platform  # a plain str, so mypy does not prune the other branches
    if name.startswith("linux"):
        return "linux"
    if name == "darwin":
        return "macos"
    raise InstallError(
        f"install-service knows systemd (Linux) and launchd (macOS), not {name}; "
        "run `openmemoryd run` from your own service manager"
    )


def daemon_program() -> list[str]:
    """The command that starts this installation's daemon, as absolute paths.

    ``sys.executable`` is deliberately not resolved: in a venv it is the
    venv's own interpreter link, and the console script sits beside it.
    """
    interpreter = Path(os.path.abspath(sys.executable))
    script = interpreter.parent / "openmemoryd"
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script)]
    return [str(interpreter), "-m", "openmemoryd"]


def plan_install(
    platform: Platform,
    flags: Overrides,
    *,
    socket_activation: bool,
    environ: Mapping[str, str] | None = None,
) -> InstallPlan:
    """Work out the files for *platform*; raise `InstallError` or `ConfigError`."""
    env = dict(os.environ if environ is None else environ)
    # What the daemon will see under the service manager: none of our OPENMEMORY_*.
    service_env = {k: v for k, v in env.items() if k not in _ENV_FLAGS}
    config = load_config(flags, environ=service_env)  # also validates the config file
    argv = (*daemon_program(), "run", *_flag_args(flags, config))
    notes = [
        f"{name} is set in this shell, but the service will not see it; "
        f"pass {flag} to install-service to make the service use it"
        for name, (flag, field) in _ENV_FLAGS.items()
        if env.get(name, "").strip() and getattr(flags, field) is None
    ]
    if platform == "linux":
        return _plan_systemd(argv, env, service_env, config.socket, flags, notes, socket_activation)
    if socket_activation:
        raise InstallError(
            "--socket-activation is for systemd; launchd starts openmemoryd at login instead"
        )
    return _plan_launchd(argv, notes)


def install(plan: InstallPlan, *, force: bool) -> None:
    """Write the plan's files (atomically, 0644); refuse to replace edited ones."""
    differing = [unit for unit in plan.files if unit.existing is not None and not unit.unchanged]
    if differing and not force:
        diffs = "\n".join(_diff(unit) for unit in differing)
        raise InstallError(
            "these files exist and differ from what install-service would write:\n"
            f"{diffs}\nrun again with --force to replace them (or --dry-run to see them whole)"
        )
    for directory in plan.make_dirs:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    for unit in plan.files:
        if not unit.unchanged:
            _write_atomically(unit.path, unit.content)


def _plan_systemd(
    argv: tuple[str, ...],
    env: Mapping[str, str],
    service_env: Mapping[str, str],
    socket: Path,
    flags: Overrides,
    notes: list[str],
    socket_activation: bool,
) -> InstallPlan:
    xdg = env.get("XDG_CONFIG_HOME", "").strip()
    config_home = Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".config"
    unit_dir = config_home / "systemd" / "user"
    service = unit_dir / render.SERVICE_NAME
    socket_unit = unit_dir / render.SOCKET_NAME
    files = [_unit(service, render.systemd_service(argv).encode("utf-8"))]
    reload = "systemctl --user daemon-reload"
    if socket_activation:
        # The template listens where the daemon looks by default; only a socket
        # set by flag or config file needs writing in.
        default = flags.socket is None and socket == resolve_socket_path(service_env, None)
        listen = None if default else socket
        files.append(_unit(socket_unit, render.systemd_socket(listen).encode("utf-8")))
        enable = f"{reload} && systemctl --user enable --now {render.SOCKET_NAME}"
    else:
        enable = f"{reload} && systemctl --user enable --now openmemoryd"
        if socket_unit.exists():
            notes.append(
                f"{socket_unit} from an earlier install is still there; remove it with "
                f"`systemctl --user disable --now {render.SOCKET_NAME} && rm {socket_unit}`"
            )
    restart = f"{reload} && systemctl --user restart openmemoryd"
    return InstallPlan("linux", argv, tuple(files), enable, restart, tuple(notes))


def _plan_launchd(argv: tuple[str, ...], notes: list[str]) -> InstallPlan:
    home = Path.home()
    log_dir = home / "Library" / "Logs" / "openmemory"
    path = home / "Library" / "LaunchAgents" / render.PLIST_NAME
    content = render.launchd_plist(argv, log_dir / "openmemoryd.log")
    enable = f"launchctl bootstrap gui/$(id -u) {path}"
    reload = f"launchctl bootout gui/$(id -u)/{render.LAUNCHD_LABEL}; {enable}"
    files = (_unit(path, content),)
    return InstallPlan("macos", argv, files, enable, reload, tuple(notes), (log_dir,))


def _flag_args(flags: Overrides, config: Config) -> list[str]:
    """The flags the user gave, resolved to absolute paths (the service's working
    directory is not this shell's)."""
    given = {
        "--config": flags.config and config.config_path,
        "--workspace-dir": flags.workspace and config.workspace,
        "--state-dir": flags.state_dir and config.state_dir,
        "--socket": flags.socket and config.socket,
        "--log-level": flags.log_level and config.log_level,
    }
    return [item for flag, value in given.items() if value for item in (flag, str(value))]


def _unit(path: Path, content: bytes) -> UnitFile:
    try:
        existing: bytes | None = path.read_bytes()
    except FileNotFoundError:
        existing = None
    except OSError as exc:
        raise InstallError(f"cannot read {path}: {exc.strerror}") from None
    return UnitFile(path, content, existing)


def _diff(unit: UnitFile) -> str:
    old = (unit.existing or b"").decode("utf-8", "replace").splitlines(keepends=True)
    new = unit.content.decode("utf-8", "replace").splitlines(keepends=True)
    lines = difflib.unified_diff(old, new, f"{unit.path} (installed)", f"{unit.path} (new)")
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def _write_atomically(path: Path, content: bytes) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        with temporary.open("wb") as handle:
            handle.write(content)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary, 0o644)
        os.replace(temporary, path)
    except OSError as exc:
        raise InstallError(f"cannot write {path}: {exc.strerror}") from None
