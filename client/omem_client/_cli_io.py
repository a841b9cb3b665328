"""The half of ``omem-client`` that needs no command-line framework.

Calling the daemon with the CLI's exit codes, printing replies as text or
JSON, failing with a message (or a JSON error object under ``--json``), and
the bodies of the commands scripts call in loops (search, get, append,
status). Both the full CLI (typer) and the lean path (`_lean`) run these, so
the two cannot print or exit differently. Nothing here imports typer, and
`_render` is imported only where text is printed.

Every command runs with `command_output` around it: a reader that stops
early (``| head``) ends the output quietly, and on a terminal memory text
is shown with its control characters escaped (`visible`).
"""

from __future__ import annotations

import contextlib
import functools
import io
import os
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple, NoReturn, ParamSpec, TextIO, TypeVar

import msgspec

from omem_client._calls import undecoded_byte
from omem_client._client import Client
from omem_client._errors import ConnectError, DaemonError, NoAnswer, OmemError, ProtocolViolation
from omem_protocol import Msg

if TYPE_CHECKING:
    from omem_protocol import GetResult, SearchScope

EXIT_USAGE = 2
EXIT_UNREACHABLE = 3
EXIT_DAEMON_ERROR = 4
START_HINT = "start the daemon: openmemoryd start (or systemctl --user start openmemoryd)"

T = TypeVar("T")
R = TypeVar("R", bound=Msg)
P = ParamSpec("P")


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
    except NoAnswer as exc:  # the daemon runs: starting it is no advice
        fail(str(exc), EXIT_DAEMON_ERROR, error="timeout")
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
    _print_json_of({"error": {"code": code, "message": message, "hint": hint}})


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
        # the daemon's messages quote paths and text from memory
        shown = visible(message) if sys.stderr.isatty() else message
        sys.stderr.write(f"omem-client: {shown}\n")
    raise SystemExit(code)


def print_json(result: Msg) -> None:
    _print_json_of(result)


# JSON escapes the C0 controls but leaves DEL and the C1 controls raw, which
# a terminal obeys (0x9B is a CSI): escaped as JSON too, the value is the same.
_JSON_RAW = re.compile("[\x7f-\x9f]")


def _print_json_of(value: object) -> None:
    text = msgspec.json.encode(value).decode("utf-8")
    sys.stdout.write(_JSON_RAW.sub(lambda found: f"\\u{ord(found.group()):04x}", text) + "\n")


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
        _not_text(f"the byte 0x{bad[0]:02X}" if bad else "a cut-off character", exc.object)
    kept = _SURROGATE.search(text)
    if kept is not None:
        byte = undecoded_byte(kept.group())
        found = f"the byte 0x{byte:02X}" if byte is not None else f"U+{ord(kept.group()):04X}"
        try:
            data = text.encode(sys.stdin.encoding or "utf-8", "surrogateescape")
        except UnicodeEncodeError:  # a lone surrogate: no bytes to look at
            data = b""
        _not_text(found, data)
    return text


_SURROGATE = re.compile("[\ud800-\udfff]")


def _not_text(found: str, data: bytes) -> NoReturn:
    """Refuse stdin, saying how to convert it: from the encoding *data* (what
    was read) looks like when one does, else with a placeholder to fill in
    (``iconv -f latin1`` for every case made Russian and Chinese mojibake)."""
    from omem_client._encodings import convert_hint, guess_encoding  # only when needed

    encoding = (sys.stdin.encoding or "utf-8").lower()
    fail(
        f"stdin is not {encoding} text ({found}): {convert_hint(guess_encoding(data))}", EXIT_USAGE
    )


# ---------------------------------------------------------------- stdout and stderr

# What a terminal would act on rather than show: the C0 controls but tab and
# newline, DEL, the C1 controls, and a carriage return that does not end a
# line (one that does, a CRLF file's, moves nothing a newline would not).
_CONTROL = re.compile("\r(?!\n)|[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


def visible(text: str) -> str:
    """*text* with every control character a terminal would obey written as
    an escape (ESC as ``\\x1b``).

    Memory holds text agents wrote and people pasted from the web: a note
    with ``ESC ]0;`` retitles the terminal that prints it, ``ESC [8m`` hides
    the lines after it, OSC 8 makes a link say anything. Only text meant
    for a terminal is escaped; piped or redirected, output stays byte for
    byte (scripts rely on ``get`` printing the file).
    """
    return _CONTROL.sub(lambda found: f"\\x{ord(found.group()):02x}", text)


class _CommandStream(io.TextIOWrapper):
    """``sys.stdout`` or ``sys.stderr`` while a command runs, over the same
    buffer and encoding.

    A reader that stops early (``omem-client search … | head -1``) closes
    the pipe; Python then raises BrokenPipeError at the next write, and
    again when it flushes at exit. Here that write points the stream at
    /dev/null instead, so the command finishes as it would have (its exit
    code its own, a search's 0) and prints no traceback. With *shown*
    (stdout on a terminal), control characters are escaped (`visible`).
    """

    def __init__(self, stream: io.TextIOWrapper, *, shown: bool) -> None:
        super().__init__(
            stream.buffer,
            encoding=stream.encoding,
            errors=stream.errors,
            line_buffering=stream.line_buffering,
            write_through=stream.write_through,
        )
        self._shown = shown

    def write(self, text: str) -> int:
        try:
            super().write(visible(text) if self._shown else text)
        except BrokenPipeError:
            self._reader_gone()
        return len(text)

    def flush(self) -> None:
        try:
            super().flush()
        except BrokenPipeError:
            self._reader_gone()

    def _reader_gone(self) -> None:
        """Whatever is still buffered, and all that follows, goes nowhere."""
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, self.fileno())
        finally:
            os.close(devnull)


def command_output(command: Callable[P, T]) -> Callable[P, T]:
    """*command* with its output through `_CommandStream` (stdout escaped
    on a terminal): every command of both CLIs runs so, once (a command
    calling another is not wrapped twice)."""

    @functools.wraps(command)
    def run(*args: P.args, **kwargs: P.kwargs) -> T:
        if isinstance(sys.stdout, _CommandStream) or isinstance(sys.stderr, _CommandStream):
            return command(*args, **kwargs)
        swapped = [_swap("stdout", escape=True), _swap("stderr", escape=False)]
        try:
            return command(*args, **kwargs)
        finally:
            for name, original, stream in swapped:
                setattr(sys, name, original)
                if stream is not None:
                    # detached, not closed: the buffer is the original's; one
                    # the command closed itself has nothing left to flush
                    with contextlib.suppress(ValueError):
                        stream.detach()

    return run


def _swap(name: str, *, escape: bool) -> tuple[str, TextIO, _CommandStream | None]:
    """Put a `_CommandStream` in place of ``sys.<name>`` (left alone when it
    is no text file, as a test's StringIO)."""
    original: TextIO = getattr(sys, name)
    if not isinstance(original, io.TextIOWrapper):
        return name, original, None
    original.flush()
    stream = _CommandStream(original, shown=escape and original.isatty())
    setattr(sys, name, stream)
    return name, original, stream


# ---------------------------------------------------------------- the hot commands


@command_output
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


@command_output
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
    if not result.to_line and result.from_line > 1:
        nothing = _nothing_from(result)
        fail(f"error (not_found): {nothing}", EXIT_DAEMON_ERROR, error="not_found", plain=nothing)
    if as_json:
        print_json(result)
        return
    if result.text:
        sys.stdout.write(result.text if result.text.endswith("\n") else result.text + "\n")
    if result.note:  # not UTF-8: say how it was read, on stderr (stdout is the text)
        print_lines([_read_note(result.path, result.note)], err=True)


def _read_note(path: str, note: str) -> str:
    return (
        f"note: {path}: {note}; the file is as it was "
        "(`omem-client doctor` says how to convert it to UTF-8)"
    )


def _nothing_from(result: GetResult) -> str:
    """Lines asked for past the end of a file, said as `forget` says it.

    The daemon answers such a range with empty text and ``to_line`` 0 (an
    agent paging through a file stops there), but a person who asked for
    line 100000 of a 15-line file should not get silence and success.
    """
    total = result.total_lines
    size = "is empty" if not total else f"has {total} line{'' if total == 1 else 's'}"
    return f"{result.path} {size}; nothing from line {result.from_line}"


@command_output
def append_command(
    options: Options, text: str | None, *, path: str | None = None, as_json: bool = False
) -> None:
    body = text_or_stdin(text, "append")
    result = run_call(options, lambda c: c.append(body, path=path))
    if as_json:
        print_json(result)
        return
    from omem_client import _render

    print_lines(_render.append_lines(result))


@command_output
def status_command(options: Options, *, as_json: bool = False) -> None:
    result = run_call(options, lambda c: c.status())
    if as_json:
        print_json(result)
        return
    from omem_client import _render

    print_lines(_render.status_lines(result))
