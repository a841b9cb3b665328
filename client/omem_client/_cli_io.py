"""The half of ``omem-client`` that needs no command-line framework.

Calling the daemon with the CLI's exit codes, printing replies as text or
JSON, failing with a message (or a JSON error object under ``--json``), and
the bodies of the commands scripts call in loops (search, get, append,
status). Both the full CLI (typer) and the lean path (`_lean`) run these, so
the two cannot print or exit differently. Nothing here imports typer, and
`_render` is imported only where text is printed.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple, NoReturn, TypeVar

import msgspec

from omem_client._calls import undecoded_byte
from omem_client._client import Client
from omem_client._errors import ConnectError, DaemonError, OmemError, ProtocolViolation
from omem_protocol import Msg

if TYPE_CHECKING:
    from omem_protocol import SearchScope

EXIT_USAGE = 2
EXIT_UNREACHABLE = 3
EXIT_DAEMON_ERROR = 4
START_HINT = "start the daemon: openmemoryd start (or systemctl --user start openmemoryd)"

T = TypeVar("T")
R = TypeVar("R", bound=Msg)


class Options(NamedTuple):
    """The options every command shares (given before the command's name).

    A NamedTuple, not a dataclass: the lean path does not import dataclasses."""

    socket: Path | None
    timeout: float
    workspace: str | None = None


def run_call(options: Options, action: Callable[[Client], T]) -> T:
    """*action* on a connected client; every failure exits with the CLI's code."""
    try:
        with Client(options.socket, timeout=options.timeout, workspace=options.workspace) as client:
            return action(client)
    except DaemonError as exc:
        fail(f"error ({exc.code}): {exc}", EXIT_DAEMON_ERROR, error=exc.code, plain=str(exc))
    except ConnectError as exc:
        fail(str(exc), EXIT_UNREACHABLE, error="unreachable", hint=START_HINT)
    except ProtocolViolation as exc:
        fail(str(exc), EXIT_DAEMON_ERROR, error="protocol")
    except OmemError as exc:
        fail(str(exc), EXIT_DAEMON_ERROR, error="client")


def json_errors() -> bool:
    """Whether this run asked for JSON (then errors are JSON too, on stdout).

    Read from the command line because errors are raised before, or outside,
    the command that parsed ``--json``; no option takes a value that could
    be the literal ``--json``.
    """
    return "--json" in sys.argv[1:]


def print_error(code: str, message: str, hint: str | None) -> None:
    error = {"error": {"code": code, "message": message, "hint": hint}}
    sys.stdout.write(msgspec.json.encode(error).decode("utf-8") + "\n")


def fail(
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
    if json_errors():
        print_error(error or ("usage" if code == EXIT_USAGE else "error"), plain or message, hint)
    else:
        sys.stdout.flush()
        sys.stderr.write(f"omem-client: {message}\n")
    raise SystemExit(code)


def print_json(result: Msg) -> None:
    sys.stdout.write(msgspec.json.encode(result).decode("utf-8") + "\n")


def print_lines(lines: Sequence[str], *, err: bool = False) -> None:
    stream = sys.stderr if err else sys.stdout
    for line in lines:
        stream.write(line + "\n")
    stream.flush()


def output(result: R, as_json: bool, render: Callable[[R], list[str]]) -> None:
    """The reply as JSON, or as the lines *render* makes of it."""
    if as_json:
        print_json(result)
    else:
        print_lines(render(result))


def text_or_stdin(text: str | None, verb: str) -> str:
    """The argument, or stdin when it is ``-`` or missing (not from a terminal)."""
    if text is not None and text != "-":
        return text
    if sys.stdin.isatty():
        fail(f"nothing to {verb}: give the text as an argument or on stdin", EXIT_USAGE)
    return read_stdin()


def read_stdin() -> str:
    """All of stdin as text in the locale's encoding (UTF-8 almost everywhere).

    Bytes that are not text in it are a usage error, named with what to do,
    rather than a traceback: a script piping a Latin-1 file would otherwise
    learn nothing, and replacing the bytes would change the memory written.
    Where Python keeps such bytes as surrogates instead (the C locale), they
    are refused the same way.
    """
    try:
        text = sys.stdin.read()
    except UnicodeDecodeError as exc:
        bad = exc.object[exc.start : exc.start + 1]
        _not_text(f"the byte 0x{bad[0]:02X}" if bad else "a cut-off character")
    kept = _SURROGATE.search(text)
    if kept is not None:
        byte = undecoded_byte(kept.group())
        _not_text(f"the byte 0x{byte:02X}" if byte is not None else f"U+{ord(kept.group()):04X}")
    return text


_SURROGATE = re.compile("[\ud800-\udfff]")


def _not_text(found: str) -> NoReturn:
    encoding = (sys.stdin.encoding or "utf-8").lower()
    fail(
        f"stdin is not {encoding} text ({found}): convert it first (e.g. iconv -f latin1 -t utf-8)",
        EXIT_USAGE,
    )


# ---------------------------------------------------------------- the hot commands


def search_command(
    options: Options,
    text: str,
    *,
    limit: int | None = None,
    min_score: float | None = None,
    sources: Sequence[str] | None = None,
    agent: str | None = None,
    fresh: bool = False,
    explain: bool = False,
    max_tokens: int | None = None,
    scope: SearchScope | None = None,
    as_json: bool = False,
) -> None:
    result = run_call(
        options,
        lambda c: c.search(
            text,
            limit=limit,
            min_score=min_score,
            sources=sources or None,
            agent=agent,
            fresh=fresh,
            explain=explain,
            max_tokens=max_tokens,
            scope=scope,
        ),
    )
    if as_json:
        print_json(result)
        return
    from omem_client import _render

    print_lines(_render.search_lines(result, explain=explain) or ["No matches."])
    print_lines(_render.search_notes(result), err=True)


def get_command(
    options: Options,
    path: str,
    *,
    from_line: int | None = None,
    lines: int | None = None,
    to_line: int | None = None,
    as_json: bool = False,
) -> None:
    result = run_call(
        options, lambda c: c.get(path, from_line=from_line, lines=lines, to_line=to_line)
    )
    if as_json:
        print_json(result)
        return
    if result.text:
        sys.stdout.write(result.text if result.text.endswith("\n") else result.text + "\n")


def append_command(
    options: Options, text: str | None, *, path: str | None = None, as_json: bool = False
) -> None:
    body = text_or_stdin(text, "append")
    result = run_call(options, lambda c: c.append(body, path=path))
    if as_json:
        print_json(result)
        return
    from omem_client import _render

    print_lines([_render.append_line(result)])


def status_command(options: Options, *, as_json: bool = False) -> None:
    result = run_call(options, lambda c: c.status())
    if as_json:
        print_json(result)
        return
    from omem_client import _render

    print_lines(_render.status_lines(result))
