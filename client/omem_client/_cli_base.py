"""What every ``omem-client`` command shares: the app and its options, the
call to the daemon with the CLI's exit codes, output as text or JSON, and the
small parsers several commands use."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Annotated, NoReturn, TypeVar

import msgspec
import typer

from omem_client._client import DEFAULT_TIMEOUT, Client
from omem_client._errors import ConnectError, DaemonError, OmemError, ProtocolViolation
from omem_protocol import KNOWN_SOURCES, Msg, __version__

EXIT_UNREACHABLE = 3
EXIT_DAEMON_ERROR = 4

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


@dataclass(frozen=True, slots=True)
class Options:
    socket: Path | None
    timeout: float
    workspace: str | None = None


JsonOpt = Annotated[bool, typer.Option("--json", help="Print the reply as JSON.")]


def _version(value: bool) -> None:
    if value:
        typer.echo(f"omem-client {__version__}")
        raise typer.Exit()


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
        float, typer.Option("--timeout", min=0.1, help="Seconds to wait for the daemon.")
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
    try:
        with Client(options.socket, timeout=options.timeout, workspace=options.workspace) as client:
            return action(client)
    except DaemonError as exc:
        _fail(f"error ({exc.code}): {exc}", EXIT_DAEMON_ERROR, error=exc.code, plain=str(exc))
    except ConnectError as exc:
        _fail(str(exc), EXIT_UNREACHABLE, error="unreachable", hint=START_HINT)
    except ProtocolViolation as exc:
        _fail(str(exc), EXIT_DAEMON_ERROR, error="protocol")
    except OmemError as exc:
        _fail(str(exc), EXIT_DAEMON_ERROR, error="client")


START_HINT = "start the daemon: openmemoryd run (or systemctl --user start openmemoryd)"


def _json_errors() -> bool:
    """Whether this run asked for JSON (then errors are JSON too, on stdout).

    Read from the command line because errors are raised before, or outside,
    the command that parsed ``--json``; no option takes a value that could
    be the literal ``--json``.
    """
    return "--json" in sys.argv[1:]


def _print_error(code: str, message: str, hint: str | None) -> None:
    error = {"error": {"code": code, "message": message, "hint": hint}}
    sys.stdout.write(msgspec.json.encode(error).decode("utf-8") + "\n")


def _fail(
    message: str,
    code: int,
    *,
    error: str | None = None,
    hint: str | None = None,
    plain: str | None = None,
) -> NoReturn:
    """Exit with *code*: *message* on stderr, or under ``--json`` an object
    ``{"error": {"code", "message", "hint"}}`` on stdout (*plain* is the
    message without the code already in it)."""
    if _json_errors():
        _print_error(error or ("usage" if code == 2 else "error"), plain or message, hint)
    else:
        typer.echo(f"omem-client: {message}", err=True)
    raise typer.Exit(code)


def _print_json(result: Msg) -> None:
    sys.stdout.write(msgspec.json.encode(result).decode("utf-8") + "\n")


def _output(result: R, as_json: bool, render: Callable[[R], list[str]]) -> None:
    """The reply as JSON, or as the lines *render* makes of it."""
    if as_json:
        _print_json(result)
    else:
        _print_lines(render(result))


def _print_lines(lines: list[str], *, err: bool = False) -> None:
    for line in lines:
        typer.echo(line, err=err)


def _known_sources(values: list[str] | None) -> list[str] | None:
    """Reject a source the daemon does not have (exit 2, naming the valid ones)."""
    for value in values or ():
        if value not in KNOWN_SOURCES:
            raise typer.BadParameter(f"{value!r} is not one of {', '.join(KNOWN_SOURCES)}")
    return values


def _text_or_stdin(text: str | None, verb: str) -> str:
    """The argument, or stdin when it is ``-`` or missing (not from a terminal)."""
    if text is not None and text != "-":
        return text
    if sys.stdin.isatty():
        _fail(f"nothing to {verb}: give the text as an argument or on stdin", 2)
    return sys.stdin.read()


def _parse_date(raw: str | None) -> date | None:
    if raw is None:
        return None
    try:
        return date.fromisoformat(raw)
    except ValueError:
        _fail(f"--date must be YYYY-MM-DD, not {raw!r}", 2)


def _read_text(path: Path) -> str:
    try:
        return path.read_text("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        _fail(f"cannot read {path}: {exc}", 2)


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
            _fail(f"messages are not valid JSON: {exc}", 2)
    if isinstance(parsed, dict):
        found = parsed.get("messages")
        parsed = found if isinstance(found, list) else [parsed]
    if not isinstance(parsed, list) or not parsed or not all(isinstance(t, dict) for t in parsed):
        _fail("messages must be a non-empty list of objects with role and content", 2)
    return parsed
