"""What every ``omem-client`` command shares: the app and its options, the
call to the daemon with the CLI's exit codes, output as text or JSON, and the
small parsers several commands use."""

from __future__ import annotations

from collections.abc import Callable
from datetime import date
from pathlib import Path
from typing import Annotated, TypeVar

import msgspec
import typer

from omem_client._cli_io import (
    Options,
    fail,
    run_call,
)
from omem_client._client import DEFAULT_TIMEOUT, Client
from omem_protocol import KNOWN_SOURCES, SEARCH_SCOPES, Msg, __version__

T = TypeVar("T")
R = TypeVar("R", bound=Msg)

app = typer.Typer(
    name="omem-client",
    help="Talk to openmemoryd: search, read and append memory, check status.",
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    # -h as well as --help, on every command (typer only knows --help).
    context_settings={"help_option_names": ["-h", "--help"]},
)


JsonOpt = Annotated[bool, typer.Option("--json", help="Print the reply as JSON.")]


def _version(value: bool) -> None:
    if value:
        typer.echo(f"omem-client {__version__}")
        raise typer.Exit()


def _seconds(value: float) -> float:
    """--timeout: at least 0.1 s; NaN, which no range check catches, is an error too."""
    if not value >= 0.1:
        raise typer.BadParameter(f"{value} is not a number of seconds of at least 0.1")
    return value


@app.callback()
def _main(
    ctx: typer.Context,
    socket: Annotated[
        Path | None,
        typer.Option(
            "--socket", help="Daemon socket (default: $OPENMEMORY_SOCKET, config, runtime dir)."
        ),
    ] = None,
    timeout: Annotated[
        float,
        typer.Option(
            "--timeout",
            callback=_seconds,
            help="Seconds to wait for the daemon (inf: no limit).",
        ),
    ] = DEFAULT_TIMEOUT,
    workspace: Annotated[
        str | None,
        typer.Option(
            "--workspace", "-w", help="Which of the daemon's workspaces (default: default)."
        ),
    ] = None,
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """Client for the openmemory daemon."""
    ctx.obj = Options(socket=socket, timeout=timeout, workspace=workspace)


def _call(ctx: typer.Context, action: Callable[[Client], T]) -> T:
    options: Options = ctx.obj
    return run_call(options, action)


def _known_sources(values: list[str] | None) -> list[str] | None:
    """Reject a source the daemon does not have (exit 2, naming the valid ones)."""
    for value in values or ():
        if value not in KNOWN_SOURCES:
            raise typer.BadParameter(f"{value!r} is not one of {', '.join(KNOWN_SOURCES)}")
    return values


def _known_scope(value: str | None) -> str | None:
    """Reject a scope the daemon does not know (exit 2, naming the valid ones)."""
    if value is not None and value not in SEARCH_SCOPES:
        raise typer.BadParameter(f"{value!r} is not one of {', '.join(SEARCH_SCOPES)}")
    return value


def _parse_date(raw: str | None) -> date | None:
    if raw is None:
        return None
    try:
        return date.fromisoformat(raw)
    except ValueError:
        fail(f"--date must be YYYY-MM-DD, not {raw!r}", 2)


def _read_text(path: Path) -> str:
    try:
        return path.read_text("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        fail(f"cannot read {path}: {exc}", 2)


def _parse_turns(raw: str) -> list[dict[str, object]]:
    """A JSON list of messages, a chat request body ({"messages": [...]}), or JSONL."""
    text = raw.strip()
    parsed: object
    try:
        parsed = msgspec.json.decode(text)
    except msgspec.DecodeError:
        try:
            parsed = [msgspec.json.decode(line) for line in text.splitlines() if line.strip()]
        except msgspec.DecodeError as exc:
            fail(f"messages are not valid JSON: {exc}", 2)
    if isinstance(parsed, dict):
        found = parsed.get("messages")
        parsed = found if isinstance(found, list) else [parsed]
    if not isinstance(parsed, list) or not parsed or not all(isinstance(t, dict) for t in parsed):
        fail("messages must be a non-empty list of objects with role and content", 2)
    return parsed
