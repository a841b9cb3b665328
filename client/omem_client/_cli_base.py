"""What every ``omem-client`` command shares: the app and its options, the
call to the daemon with the CLI's exit codes, output as text or JSON, and the
small parsers several commands use."""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from datetime import date
from pathlib import Path
from typing import Annotated, Any, Final, TypeVar

import msgspec
import typer
from typer.core import TyperCommand

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


# What an option can look like: one or two dashes, an ASCII letter, letters,
# digits and dashes, then perhaps ``=value``. A token starting with "-" that
# is not of this shape ("- a list item", "-ss 00:01:00", "-5", "---") can be
# no option of any command.
_OPTION_SHAPE: Final = re.compile(r"--?[A-Za-z][A-Za-z0-9_-]*(?:=.*)?", re.DOTALL)


def is_text(token: str, options: frozenset[str]) -> bool:
    """Whether *token*, which the parser would take for an option, is text.

    A Markdown list item ("- пункт списка") is the most natural thing to
    append or log, and a query may start with a dash ("-ss 00:01:00"); the
    parser refused both with ``No such option: -``. A token is text when it
    is not shaped like an option at all; one that is shaped like an option
    stays an option, so a misspelt ``--limt`` is still an error, never text
    written to memory. A token whose option part the command knows
    (``--path=my notes.md``, ``-n5``) is always that option.
    """
    if token.split("=", 1)[0] in options or (token[1:2] != "-" and token[:2] in options):
        return False
    return _OPTION_SHAPE.fullmatch(token) is None


class TextCommand(TyperCommand):
    """A command whose free text (a note, a query, a task) may start with "-".

    Its parser takes a token that `is_text` says is text as a positional
    word, where click would have raised ``No such option``; the option value
    after an option (``--type -x``) is taken by the parser before any of
    this. An option-shaped token the command does not know is still an
    error, and its message now says how to pass it as text: ``--`` first.

    The hook is click's ``_process_opts``, which every token the parser
    takes for an option goes through; click has no public one. typer is
    pinned below 0.29, and tests/test_client_cli.py fails if it moves.
    """

    def make_parser(self, ctx: Any) -> Any:
        parser: Any = super().make_parser(ctx)  # click's own, private: only its hook is used
        options = frozenset(
            name
            for param in self.get_params(ctx)
            if param.param_type_name == "option"
            for name in (*param.opts, *param.secondary_opts)
        )
        process_option = parser._process_opts

        def process(token: str, state: Any) -> None:
            if is_text(token, options):
                state.largs.append(token)  # where the parser keeps positional words
                return
            try:
                process_option(token, state)
            except typer.TyperException as exc:
                _say_how_to_pass_text(exc, token, ctx.command_path)
                raise

        parser._process_opts = process
        return parser


def _say_how_to_pass_text(exc: typer.TyperException, token: str, command: str) -> None:
    """Add to an unknown option's message how to pass *token* as text.

    Only when click has no option to suggest: ``--limt`` is a misspelt
    ``--limit``, and ``-x`` may be text as well as a wrong option.
    """
    message = getattr(exc, "message", None)
    if isinstance(message, str) and hasattr(exc, "possibilities") and not exc.possibilities:
        exc.message = (
            f"{message}. Text starting with '-'? Put -- before it: "
            f"{command} -- {shlex.quote(token)}"
        )


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
