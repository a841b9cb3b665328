"""The ``openmemoryd`` command: ``run`` the daemon, ``init`` a workspace.

Exit codes: 0 clean stop, 1 could not start (the message says why: already
running, invalid config, unsafe socket directory, ...), 2 usage error.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import trio
import typer

from omem_protocol import __version__
from openmemoryd.app import run_daemon
from openmemoryd.config import Config, Overrides, load_config
from openmemoryd.errors import OmemdError
from openmemoryd.logs import setup_logging
from openmemoryd.workspace import init_workspace

app = typer.Typer(
    name="openmemoryd",
    help="openmemory daemon: indexes Markdown memory and serves agents over a Unix socket.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

ConfigOpt = Annotated[
    Path | None,
    typer.Option(
        "--config", help="Config file (default: $OPENMEMORY_CONFIG or the user config dir)."
    ),
]
WorkspaceOpt = Annotated[
    Path | None, typer.Option("--workspace", help="Workspace directory (env OPENMEMORY_WORKSPACE).")
]
StateDirOpt = Annotated[
    Path | None,
    typer.Option("--state-dir", help="Index and state directory (env OPENMEMORY_STATE_DIR)."),
]
SocketOpt = Annotated[
    Path | None, typer.Option("--socket", help="Unix socket path (env OPENMEMORY_SOCKET).")
]
LogLevelOpt = Annotated[
    str | None,
    typer.Option("--log-level", help="debug, info, warning or error (env OPENMEMORY_LOG_LEVEL)."),
]


def _load(
    config: Path | None,
    workspace: Path | None,
    state_dir: Path | None,
    socket: Path | None,
    log_level: str | None = None,
) -> Config:
    try:
        return load_config(Overrides(config, workspace, state_dir, socket, log_level))
    except OmemdError as exc:
        typer.echo(f"openmemoryd: {exc}", err=True)
        raise typer.Exit(1) from None


def _version(value: bool) -> None:
    if value:
        typer.echo(f"openmemoryd {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """openmemory daemon."""


@app.command()
def run(
    config: ConfigOpt = None,
    workspace: WorkspaceOpt = None,
    state_dir: StateDirOpt = None,
    socket: SocketOpt = None,
    log_level: LogLevelOpt = None,
) -> None:
    """Run the daemon in the foreground until SIGTERM or Ctrl-C.

    Creates the workspace with its templates if it does not exist.
    """
    resolved = _load(config, workspace, state_dir, socket, log_level)
    setup_logging(resolved.log_level)
    try:
        trio.run(run_daemon, resolved)
    except OmemdError as exc:
        typer.echo(f"openmemoryd: {exc}", err=True)
        raise typer.Exit(1) from None


@app.command()
def init(
    config: ConfigOpt = None,
    workspace: WorkspaceOpt = None,
    state_dir: StateDirOpt = None,
    socket: SocketOpt = None,
) -> None:
    """Create the workspace (MEMORY.md, USER.md, PROJECT.md, memory/); never overwrites."""
    resolved = _load(config, workspace, state_dir, socket)
    try:
        created = init_workspace(resolved.workspace)
    except OSError as exc:
        typer.echo(f"openmemoryd: cannot create {resolved.workspace}: {exc.strerror}", err=True)
        raise typer.Exit(1) from None
    for item in created:
        typer.echo(f"  created {item}")
    if not created:
        typer.echo("  nothing to create: the workspace is complete")
    typer.echo(f"Workspace: {resolved.workspace}")
    typer.echo(f"Config:    {resolved.config_path or '(none; defaults in use)'}")
    typer.echo(f"Index:     {resolved.index_path}")
    typer.echo(f"Socket:    {resolved.socket}")


def main() -> None:
    """Console-script entry point."""
    app()
