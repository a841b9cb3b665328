"""The lean path: ``omem-client search|get|append|status`` without typer.

Shell scripts call these commands in loops, and importing typer (with click
and rich's helpers) costs more than the daemon takes to answer. A command
line of one of these commands whose every option is well formed runs here,
through the same command bodies as the full CLI (`_cli_io`); anything else
(help, completion, another command, a misspelt or out-of-range option)
returns None, and the full CLI handles it, errors included. So the lean
path never decides what is an error: it only skips the framework for
command lines the framework would accept.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from omem_client._cli_io import (
    Options,
    append_command,
    get_command,
    search_command,
    status_command,
)
from omem_client._client import DEFAULT_TIMEOUT
from omem_protocol import KNOWN_SOURCES, MAX_LIMIT


class _NotLean(Exception):
    """This command line is for the full CLI."""


def _int(low: int, high: int) -> Callable[[str], int]:
    def parse(raw: str) -> int:
        if not raw.isdigit():
            raise _NotLean
        value = int(raw)
        if not low <= value <= high:
            raise _NotLean
        return value

    return parse


def _float(low: float, high: float) -> Callable[[str], float]:
    def parse(raw: str) -> float:
        try:
            value = float(raw)
        except ValueError:
            raise _NotLean from None
        if not low <= value <= high or value != value:  # NaN
            raise _NotLean
        return value

    return parse


def _source(raw: str) -> str:
    if raw not in KNOWN_SOURCES:
        raise _NotLean
    return raw


def _text(raw: str) -> str:
    if raw.startswith("-"):
        raise _NotLean  # the framework decides what an option-like value means
    return raw


# option -> (keyword, parser or None for a flag, repeatable)
_Spec = dict[str, tuple[str, Callable[[str], Any] | None, bool]]
_GLOBAL: _Spec = {
    "--socket": ("socket", _text, False),
    "--timeout": ("timeout", _float(0.1, float("inf")), False),
    "--workspace": ("workspace", _text, False),
    "-w": ("workspace", _text, False),
}
_JSON: _Spec = {"--json": ("as_json", None, False)}
_COMMANDS: dict[str, _Spec] = {
    "search": {
        "--limit": ("limit", _int(1, MAX_LIMIT), False),
        "-n": ("limit", _int(1, MAX_LIMIT), False),
        "--min-score": ("min_score", _float(0.0, 1.0), False),
        "--source": ("sources", _source, True),
        "--agent": ("agent", _text, False),
        "--fresh": ("fresh", None, False),
        "--explain": ("explain", None, False),
        "--max-tokens": ("max_tokens", _int(1, 1_000_000), False),
        **_JSON,
    },
    "get": {
        "--from": ("from_line", _int(1, 2**63 - 1), False),
        "--lines": ("lines", _int(1, 2**63 - 1), False),
        **_JSON,
    },
    "append": {"--path": ("path", _text, False), **_JSON},
    "status": {**_JSON},
}


def _options(
    tokens: list[str], spec: _Spec, *, stop_at_word: bool
) -> tuple[dict[str, Any], list[str]]:
    """The options among *tokens* and the words left; a word ends the options
    when *stop_at_word* (the global options come before the command)."""
    found: dict[str, Any] = {}
    words: list[str] = []
    while tokens:
        token = tokens.pop(0)
        if not token.startswith("-") or token == "-":
            if stop_at_word:
                return found, [token, *tokens]
            words.append(token)
            continue
        if token not in spec:
            raise _NotLean  # --help, --opt=value, a typo: the full CLI says what it means
        keyword, parse, repeatable = spec[token]
        if parse is None:
            found[keyword] = True
            continue
        if not tokens:
            raise _NotLean
        value = parse(tokens.pop(0))
        if repeatable:
            found.setdefault(keyword, []).append(value)
        elif keyword in found:
            raise _NotLean
        else:
            found[keyword] = value
    return found, words


def run(argv: Sequence[str]) -> bool:
    """Run *argv* (without the program name) if it is a lean command line.

    Returns False, having done nothing, when the full CLI must handle it.
    Exits (``SystemExit``) as the full CLI would on a daemon or connection error.
    """
    try:
        shared, rest = _options(list(argv), _GLOBAL, stop_at_word=True)
        if not rest or rest[0] not in _COMMANDS:
            return False
        command = rest[0]
        given, words = _options(rest[1:], _COMMANDS[command], stop_at_word=False)
    except _NotLean:
        return False
    socket = shared.get("socket")
    options = Options(
        socket=Path(socket) if socket is not None else None,
        timeout=shared.get("timeout", DEFAULT_TIMEOUT),
        workspace=shared.get("workspace"),
    )
    if command == "search":
        if not words:
            return False  # the full CLI says the query is missing
        search_command(options, " ".join(words), **given)
    elif command == "get":
        if len(words) != 1:
            return False
        get_command(options, words[0], **given)
    elif command == "append":
        if len(words) > 1:
            return False
        append_command(options, words[0] if words else None, **given)
    else:
        if words:
            return False
        status_command(options, **given)
    return True
