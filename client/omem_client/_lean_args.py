"""The lean path's command-line reading, with nothing but the standard library.

`parse` decides, before msgspec or the protocol load, whether a command line
is one the lean path takes (see `_lean`): a hot command whose every option is
well formed. It returns None for anything else, and the full CLI handles it.
Two limits are the protocol's, repeated here so that reading them costs no
import (a test holds them equal): the most hits a search returns, and the
sources a search can name.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

MAX_LIMIT = 100  # omem_protocol.MAX_LIMIT
KNOWN_SOURCES = ("memory", "sessions")  # omem_protocol.KNOWN_SOURCES
SEARCH_SCOPES = ("project", "global", "all")  # omem_protocol.SEARCH_SCOPES


class Plan(NamedTuple):
    """A lean command line, read: the command, the shared options, the
    command's keyword arguments and its words."""

    command: str
    shared: dict[str, Any]
    given: dict[str, Any]
    words: list[str]


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


def _choice(*allowed: str) -> Callable[[str], str]:
    def parse(raw: str) -> str:
        if raw not in allowed:
            raise _NotLean
        return raw

    return parse


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
        "--scope": ("scope", _choice(*SEARCH_SCOPES), False),
        **_JSON,
    },
    "get": {
        "--from": ("from_line", _int(1, 2**63 - 1), False),
        "--lines": ("lines", _int(1, 2**63 - 1), False),
        "--to": ("to_line", _int(1, 2**63 - 1), False),
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


def parse(argv: Sequence[str]) -> Plan | None:
    """The plan for *argv* (without the program name), or None for the full CLI."""
    try:
        shared, rest = _options(list(argv), _GLOBAL, stop_at_word=True)
        if not rest or rest[0] not in _COMMANDS:
            return None
        command = rest[0]
        given, words = _options(rest[1:], _COMMANDS[command], stop_at_word=False)
    except _NotLean:
        return None
    arity_ok = {
        "search": bool(words),  # the full CLI says the query is missing
        "get": len(words) == 1,
        "append": len(words) <= 1,
        "status": not words,
    }[command]
    return Plan(command, shared, given, words) if arity_ok else None
