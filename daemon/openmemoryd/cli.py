"""The ``openmemoryd`` command: ``run`` the daemon, ``init`` and ``configure``
(the setup wizard), ``install-service`` for systemd or launchd, ``import``,
``doctor``.

Exit codes: 0 clean stop, 1 could not start (the message says why: already
running, invalid config, unsafe socket directory, ...), 2 usage error.
"""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import trio
import typer

from omem_protocol import MCP_PROFILES, __version__
from openmemoryd.app import run_daemon
from openmemoryd.config import Config, Overrides, load_config
from openmemoryd.errors import OmemdError
from openmemoryd.logs import setup_logging
from openmemoryd.memory.import_cli import import_memory, outcome_lines, sync_running_daemon
from openmemoryd.service.install import InstallPlan, current_platform, install, plan_install
from openmemoryd.workspace import init_workspace

if TYPE_CHECKING:
    from openmemoryd.wizard import Preset, Prompter

app = typer.Typer(
    name="openmemoryd",
    help="openmemory daemon: indexes Markdown memory and serves agents over a Unix socket.",
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    # -h as well as --help, on every command (typer only knows --help).
    context_settings={"help_option_names": ["-h", "--help"]},
)

ConfigOpt = Annotated[
    Path | None,
    typer.Option(
        "--config", help="Config file (default: $OPENMEMORY_CONFIG or the user config dir)."
    ),
]
# `--workspace` names one of the daemon's workspaces in omem-client; here the
# directory is `--workspace-dir`, and `--workspace` stays accepted for it so
# existing service units and scripts keep working.
WorkspaceOpt = Annotated[
    Path | None,
    typer.Option(
        "--workspace-dir",
        "--workspace",
        help="Workspace directory (env OPENMEMORY_WORKSPACE; --workspace is its old name).",
    ),
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

HttpOpt = Annotated[
    str | None,
    typer.Option(
        "--http",
        metavar="HOST:PORT",
        help="Also serve the JSON HTTP API there (loopback only unless http.allow_remote).",
    ),
]


def _load(
    config: Path | None,
    workspace: Path | None,
    state_dir: Path | None,
    socket: Path | None,
    log_level: str | None = None,
    *,
    rewrites: str | None = None,
) -> Config:
    """The config, or exit 1 saying why not. *rewrites* names a command that
    would rewrite the file (init, configure): told how to get past a file
    that does not load, since it will not overwrite one it cannot read."""
    overrides = Overrides(config, workspace, state_dir, socket, log_level)
    try:
        return load_config(overrides)
    except OmemdError as exc:
        typer.echo(f"openmemoryd: {exc}", err=True)
        path = _config_path(overrides)
        if rewrites is not None and path.is_file():
            typer.echo(
                f"  openmemoryd {rewrites} leaves the file as it is: fix what the message "
                f"names, or move it aside ({shlex.join(['mv', str(path), f'{path}.broken'])})"
                f" and run openmemoryd {rewrites} again to write a fresh one",
                err=True,
            )
        raise typer.Exit(1) from None


def _config_path(overrides: Overrides) -> Path:
    from omem_protocol import default_config_path

    if overrides.config is not None:
        return overrides.config.expanduser().absolute()
    return default_config_path()


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
    http: HttpOpt = None,
) -> None:
    """Run the daemon in the foreground until SIGTERM or Ctrl-C.

    Creates the workspace with its templates if it does not exist.
    """
    overrides = Overrides(config, workspace, state_dir, socket, log_level, http)
    try:
        resolved = load_config(overrides)
    except OmemdError as exc:
        typer.echo(f"openmemoryd: {exc}", err=True)
        raise typer.Exit(1) from None
    setup_logging(resolved.log_level)
    try:
        trio.run(run_daemon, resolved, lambda: load_config(overrides))
    except OmemdError as exc:
        typer.echo(f"openmemoryd: {exc}", err=True)
        raise typer.Exit(1) from None


@app.command()
def serve(
    port: Annotated[
        int,
        typer.Option("--port", min=1, max=65535, help="Serve the HTTP API on 127.0.0.1:PORT."),
    ] = 8787,
    config: ConfigOpt = None,
    workspace: WorkspaceOpt = None,
    state_dir: StateDirOpt = None,
    socket: SocketOpt = None,
    log_level: LogLevelOpt = None,
) -> None:
    """Run the daemon in the foreground with the HTTP API on 127.0.0.1:PORT (default 8787).

    The same as ``run --http 127.0.0.1:PORT``; needs the http extra. The
    socket is served as always.
    """
    run(config, workspace, state_dir, socket, log_level, http=f"127.0.0.1:{port}")


@app.command()
def index(
    full: Annotated[
        bool, typer.Option("--full", help="Re-chunk every file, even unchanged ones.")
    ] = False,
    config: ConfigOpt = None,
    workspace: WorkspaceOpt = None,
    state_dir: StateDirOpt = None,
    socket: SocketOpt = None,
) -> None:
    """Bring the index up to date with the Markdown now, then exit.

    When a daemon answers on the socket it does the work (even while the
    config file is broken); otherwise the index is opened here, synced, and
    every chunk embedded before this returns.
    """
    from openmemoryd.config import locate_socket
    from openmemoryd.one_shot import index_by_daemon, index_now

    where = locate_socket(Overrides(config, workspace, state_dir, socket))
    if where.config is not None:
        code, lines = index_now(where.config, full=full)
    else:  # a running daemon has a config of its own; without one, nothing can be done
        typer.echo(f"openmemoryd: {where.config_error}", err=True)
        done = index_by_daemon(where.path, full=full)
        if done is None:
            raise typer.Exit(1)
        typer.echo(
            "  the running daemon indexes with the config it loaded before; fix the file",
            err=True,
        )
        code, lines = done
    for line in lines:
        typer.echo(line, err=code != 0)
    raise typer.Exit(code)


@app.command()
def start(
    config: ConfigOpt = None,
    workspace: WorkspaceOpt = None,
    state_dir: StateDirOpt = None,
    socket: SocketOpt = None,
    log_level: LogLevelOpt = None,
    http: HttpOpt = None,
) -> None:
    """Run the daemon in the background; return once it answers.

    Its output goes to <state_dir>/openmemoryd.log. For a daemon that survives
    logout and reboot, use install-service instead.
    """
    from openmemoryd.detach import start_detached

    resolved = _load(config, workspace, state_dir, socket, log_level)
    run_args: list[str] = []
    for flag, value in (
        ("--config", config),
        ("--workspace-dir", workspace),
        ("--state-dir", state_dir),
        ("--socket", socket),
        ("--log-level", log_level),
        ("--http", http),
    ):
        if value is not None:
            run_args += [flag, str(Path(value).resolve()) if isinstance(value, Path) else value]
    code, message = start_detached(resolved, run_args)
    typer.echo(message, err=code != 0)
    raise typer.Exit(code)


@app.command()
def stop(
    config: ConfigOpt = None,
    socket: SocketOpt = None,
) -> None:
    """Stop the daemon answering on the socket (one started by start or run).

    A broken config file does not prevent it: the socket is found without it
    (--socket, OPENMEMORY_SOCKET, the file's socket key, the default).
    """
    from openmemoryd.config import locate_socket
    from openmemoryd.detach import stop_running

    where = locate_socket(Overrides(config=config, socket=socket))
    if where.config_error is not None:
        typer.echo(
            f"openmemoryd: the config file is broken: {where.config_error}\n"
            f"  stopping the daemon on {where.path} anyway; fix the file before the next start",
            err=True,
        )
    absent = (
        " (the default socket: the broken file's socket key, if it has one, is unknown;"
        " pass --socket PATH to stop a daemon listening elsewhere)"
        if where.guessed
        else ""
    )
    code, message = stop_running(where.path, absent=absent)
    typer.echo(message, err=code != 0)
    raise typer.Exit(code)


YesOpt = Annotated[
    bool,
    typer.Option("--yes", "-y", help="Ask nothing: take every default (also without a terminal)."),
]
ProviderOpt = Annotated[
    str | None,
    typer.Option(
        "--provider",
        help="Embedding provider: local, ollama, openai, gemini, voyage, mistral, none or auto.",
    ),
]
ModelOpt = Annotated[str | None, typer.Option("--model", help="The provider's embedding model.")]


@app.command()
def init(
    config: ConfigOpt = None,
    workspace: WorkspaceOpt = None,
    state_dir: StateDirOpt = None,
    socket: SocketOpt = None,
    yes: YesOpt = False,
    provider: ProviderOpt = None,
    model: ModelOpt = None,
    cursor: Annotated[
        bool | None,
        typer.Option(
            "--cursor/--no-cursor",
            help="Add the MCP bridge to Cursor's ~/.cursor/mcp.json (asked when Cursor is "
            "installed and a person is at the terminal).",
        ),
    ] = None,
    mcp_profile: Annotated[
        str | None,
        typer.Option(
            "--mcp-profile",
            help="The bridge's tool profile in that entry: openclaw, workany or "
            "openclaw-memory (default: ours).",
        ),
    ] = None,
) -> None:
    """Set up openmemory: the config, the workspace and, with --cursor, the MCP bridge.

    Asks for the workspace and the embedder (defaults on Enter), writes the
    config, creates the workspace (MEMORY.md, USER.md, PROJECT.md, memory/),
    and with --cursor registers the MCP bridge with Cursor. Never overwrites
    a Markdown file; without a terminal or with --yes it asks nothing.
    """
    from openmemoryd.wizard import McpHosts, run_init

    if mcp_profile is not None and mcp_profile not in MCP_PROFILES:
        typer.echo(
            f"openmemoryd: unknown --mcp-profile {mcp_profile!r}; "
            f"choose one of: {', '.join(MCP_PROFILES)}",
            err=True,
        )
        raise typer.Exit(2)

    resolved = _load(config, workspace, state_dir, socket, rewrites="init")
    interactive = _interactive(yes)
    try:
        run_init(
            resolved,
            _prompter(interactive),
            typer.echo,
            interactive=interactive,
            preset=_preset(provider, model),
            environ=os.environ,
            hosts=McpHosts(
                cursor=cursor,
                profile=None if mcp_profile in (None, "openmemory") else mcp_profile,
            ),
        )
    except OmemdError as exc:
        typer.echo(f"openmemoryd: {exc}", err=True)
        raise typer.Exit(1) from None


@app.command()
def configure(
    config: ConfigOpt = None,
    yes: YesOpt = False,
    provider: ProviderOpt = None,
    model: ModelOpt = None,
) -> None:
    r"""Choose the embedding provider and model again.

    Updates only \[embedding] in the config: comments and other settings are
    kept, and the old file is saved as config.toml.bak.
    """
    from openmemoryd.wizard import run_configure

    resolved = _load(config, None, None, None, rewrites="configure")
    interactive = _interactive(yes)
    if not interactive and provider is None:
        typer.echo("openmemoryd: configure needs a terminal, or --provider (and --model)", err=True)
        raise typer.Exit(2)
    try:
        run_configure(
            resolved,
            _prompter(interactive),
            typer.echo,
            preset=_preset(provider, model),
            environ=os.environ,
        )
    except OmemdError as exc:
        typer.echo(f"openmemoryd: {exc}", err=True)
        raise typer.Exit(1) from None


def _interactive(yes: bool) -> bool:
    """A person can answer: not --yes, and both ends of the dialogue are a terminal."""
    return not yes and sys.stdin.isatty() and sys.stdout.isatty()


def _prompter(interactive: bool) -> Prompter:
    from openmemoryd.wizard import DefaultPrompter, TerminalPrompter

    return TerminalPrompter() if interactive else DefaultPrompter()


def _preset(provider: str | None, model: str | None) -> Preset:
    from openmemoryd.wizard import PROVIDER_NAMES, Preset

    if provider is not None and provider not in PROVIDER_NAMES:
        typer.echo(
            f"openmemoryd: unknown provider {provider!r}; choose one of "
            + ", ".join(PROVIDER_NAMES),
            err=True,
        )
        raise typer.Exit(2)
    return Preset(provider=provider, model=model)


@app.command("install-service")
def install_service(
    config: ConfigOpt = None,
    workspace: WorkspaceOpt = None,
    state_dir: StateDirOpt = None,
    socket: SocketOpt = None,
    log_level: LogLevelOpt = None,
    socket_activation: Annotated[
        bool | None,
        typer.Option(
            "--socket-activation/--no-socket-activation",
            help="systemd starts the daemon on first use (default on Linux).",
            show_default=False,
        ),
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print the files instead of writing them.")
    ] = False,
    force: Annotated[
        bool, typer.Option("--force", help="Replace installed files that differ.")
    ] = False,
    platform: Annotated[
        str | None, typer.Option("--platform", hidden=True, help="linux or macos (tests).")
    ] = None,
) -> None:
    """Install a systemd user service (Linux) or a LaunchAgent (macOS) running openmemoryd.

    The service runs this openmemoryd, the one installed here; flags given
    here (--workspace, ...) are passed to it.
    """
    try:
        target = platform or current_platform()
        if target not in ("linux", "macos"):
            raise typer.BadParameter("must be linux or macos", param_hint="--platform")
        plan = plan_install(
            target,  # type: ignore[arg-type]  # checked just above
            Overrides(config, workspace, state_dir, socket, log_level),
            socket_activation=(target == "linux")
            if socket_activation is None
            else socket_activation,
        )
        if not dry_run:
            install(plan, force=force)
    except OmemdError as exc:
        typer.echo(f"openmemoryd: {exc}", err=True)
        raise typer.Exit(1) from None
    _report_install(plan, dry_run)


def _report_install(plan: InstallPlan, dry_run: bool) -> None:
    for unit in plan.files:
        if dry_run:
            typer.echo(f"# {unit.path}")
            typer.echo(unit.content.decode("utf-8"))
        else:
            typer.echo(f"  {'unchanged' if unit.unchanged else 'wrote'} {unit.path}")
    for note in plan.notes:
        typer.echo(f"note: {note}", err=True)
    typer.echo(f"The service runs: {shlex.join(plan.argv)}")
    if dry_run:
        typer.echo("Dry run: nothing was written. Once written, enable it with:")
    else:
        typer.echo("Enable and start it (now and at every login) with:")
    typer.echo(f"  {plan.enable}")
    if not dry_run and any(u.existing is not None and not u.unchanged for u in plan.files):
        typer.echo(f"If it is already running, apply the changes with:\n  {plan.reload}")


@app.command("import")
def import_(
    source: Annotated[
        Path, typer.Argument(help="An `omem-client export` archive, or a folder of Markdown.")
    ],
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Only say what would be created or merged.")
    ] = False,
    all_lines: Annotated[
        bool,
        typer.Option(
            "--all-lines",
            help="Also add lines that look like an older version of a line you have now.",
        ),
    ] = False,
    include_forgotten: Annotated[
        bool,
        typer.Option(
            "--include-forgotten",
            help="Also bring back lines forgotten (forget, tasks remove) since the export.",
        ),
    ] = False,
    config: ConfigOpt = None,
    workspace: WorkspaceOpt = None,
    state_dir: StateDirOpt = None,
    socket: SocketOpt = None,
) -> None:
    """Bring an export or another tool's Markdown into the workspace; overwrites nothing.

    New files are created; a file that differs gains the lines it lacks,
    except those that look like an older version of a line it has now
    (listed; `--all-lines` adds them), tasks it has in another state, and
    lines forgotten since (counted; `--include-forgotten` brings them back).
    A running daemon indexes the result before this returns.
    """
    resolved = _load(config, workspace, state_dir, socket)
    try:
        init_workspace(resolved.workspace)
        outcomes = import_memory(
            resolved,
            source.expanduser().absolute(),
            dry_run=dry_run,
            all_lines=all_lines,
            include_forgotten=include_forgotten,
        )
    except OmemdError as exc:
        typer.echo(f"openmemoryd: {exc}", err=True)
        raise typer.Exit(1) from None
    for line in outcome_lines(outcomes, dry_run=dry_run, include_forgotten=include_forgotten):
        typer.echo(line)
    if not dry_run:
        typer.echo(sync_running_daemon(resolved))


@app.command()
def doctor(
    config: ConfigOpt = None,
    workspace: WorkspaceOpt = None,
    state_dir: StateDirOpt = None,
    socket: SocketOpt = None,
    log_level: LogLevelOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Check the setup and say how to fix each problem, whether or not the daemon runs.

    It checks the config, workspace, index, SQLite, embedder, socket,
    watcher and files. Exit 0 when no check failed (warnings do not count),
    1 otherwise.
    """
    # Imported here: the checks bring in the client and the embedders, which
    # the other commands never need.
    import logging
    import os

    import msgspec

    from omem_client._render import doctor_lines  # one renderer for both CLIs
    from openmemoryd.doctor import diagnose

    # Every problem the loggers would shout about is one of the report's lines.
    logging.getLogger("openmemoryd").addHandler(logging.NullHandler())
    logging.getLogger("openmemoryd").propagate = False
    result = diagnose(Overrides(config, workspace, state_dir, socket, log_level), os.environ)
    if as_json:
        typer.echo(msgspec.json.encode(result).decode("utf-8"))
    else:
        for line in doctor_lines(result):
            typer.echo(line)
    if not result.ok:
        raise typer.Exit(1)


def main() -> None:
    """Console-script entry point."""
    app()
