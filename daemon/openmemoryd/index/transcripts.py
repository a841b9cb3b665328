"""Turn agent session transcripts (JSONL) into searchable, citable text.

A transcript holds one JSON record per line. Only what the user and the
assistant said is worth finding later, so `parse_transcript` keeps those
messages and drops everything else (tool calls and results, reasoning,
metadata, system prompts). It reads the shapes written by OpenClaw, plain
and OpenAI chat logs, Claude Code and Codex. `render` lays the messages out
as ``User: ...`` / ``Assistant: ...`` lines for `chunk_markdown`;
`map_lines` takes a chunk's content lines back to JSONL lines, so search
results cite the transcript itself.

Invariants of `parse_transcript`:

* it never raises for any input bytes: blank lines, invalid JSON, invalid
  UTF-8 (replaced, for that line only) and unknown shapes are skipped;
* it reads only complete lines: ``consumed`` is the offset just after the
  last ``\\n`` (0 if there is none) and ``lines`` is the number of ``\\n`` in
  ``data[:consumed]``, so a line still being written is read next time;
* each line is read on its own, so parsing ``data[:k]`` and then
  ``data[k:]`` from line ``first_line + lines`` gives exactly the messages
  of parsing ``data`` whole, whenever ``data[:k]`` ends with ``\\n``; this is
  what makes indexing from a stored byte offset correct;
* message text is one line of single-space-separated words (so one message
  is one content line), secrets are masked by `redact_secrets`, it is at
  most `MAX_MESSAGE_CHARS` long, and it encodes as UTF-8 (lone surrogates
  from JSON escapes become U+FFFD).

`render` gives content line ``i`` (1-based) the JSONL line ``line_map[i-1]``;
`map_lines` and `message_time` read that map back for a range of lines.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Final, Literal, TypeVar

from openmemoryd.text.boundaries import safe_boundary
from openmemoryd.text.redact import redact_secrets

__all__ = [
    "MAX_MESSAGE_CHARS",
    "Message",
    "ParsedSlice",
    "Rendered",
    "map_lines",
    "message_time",
    "parse_transcript",
    "render",
]

Role = Literal["user", "assistant"]
_T = TypeVar("_T")

# A pasted log or file dump can make one message megabytes long; past this
# it adds noise to every chunk it lands in and nothing worth finding.
MAX_MESSAGE_CHARS: Final = 20_000

_LABELS: Final[dict[Role, str]] = {"user": "User", "assistant": "Assistant"}

# Content blocks that are words someone said: OpenClaw, Claude Code and
# OpenAI chat use "text"; Codex and the OpenAI Responses API use
# "input_text" (user) and "output_text" (assistant).
_TEXT_BLOCKS: Final = frozenset({"text", "input_text", "output_text"})

# Codex sends the environment and AGENTS.md to the model as user messages;
# they are instructions, not the user speaking, and repeat in every session.
_INJECTED_PREFIXES: Final = (
    "<environment_context>",
    "<user_instructions>",
    "# AGENTS.md instructions",
)

_TIME_KEYS: Final = ("timestamp", "created_at", "time", "ts")

# Epoch numbers above these are in milliseconds, microseconds or
# nanoseconds: seconds only pass 1e11 in the year 5138.
_MS_FROM: Final = 1e11
_US_FROM: Final = 1e14
_NS_FROM: Final = 1e17

_SURROGATE_RE: Final = re.compile("[\ud800-\udfff]")
_UTF8_BOM: Final = b"\xef\xbb\xbf"


@dataclass(frozen=True, slots=True)
class Message:
    """One thing the user or the assistant said, where it was said and when."""

    role: Role
    text: str  # whitespace-normalised, redacted, at most MAX_MESSAGE_CHARS
    line: int  # 1-based JSONL line number, absolute in the file
    timestamp: float | None  # epoch seconds, if the record carries a time


@dataclass(frozen=True, slots=True)
class ParsedSlice:
    """The messages of a slice of a transcript and how much of it was read."""

    messages: list[Message]
    consumed: int  # bytes read: up to and including the last "\n"
    lines: int  # complete lines read, for the caller's absolute line counter


@dataclass(frozen=True, slots=True)
class Rendered:
    """Messages as text for the chunker, with a way back to JSONL lines."""

    text: str  # "User: ...\nAssistant: ...", one content line per message
    line_map: list[int]  # line_map[i] = JSONL line of content line i + 1
    timestamps: list[float | None]  # timestamps[i] = time of content line i + 1


def parse_transcript(data: bytes, *, first_line: int = 1) -> ParsedSlice:
    """The messages in the complete lines of *data*.

    *data* starts at a line boundary of the file and *first_line* is that
    line's 1-based number, so messages carry absolute line numbers however
    far into the file the slice starts.
    """
    if first_line < 1:
        raise ValueError(f"first_line must be at least 1, got {first_line}")
    consumed = data.rfind(b"\n") + 1
    if consumed == 0:
        return ParsedSlice([], 0, 0)
    raw_lines = data[:consumed].split(b"\n")
    raw_lines.pop()  # the empty remainder after the final "\n"
    messages: list[Message] = []
    for number, raw in enumerate(raw_lines, start=first_line):
        message = _parse_line(raw, number)
        if message is not None:
            messages.append(message)
    return ParsedSlice(messages, consumed, len(raw_lines))


def render(messages: Sequence[Message]) -> Rendered:
    """Lay *messages* out as labelled content lines, one per message.

    Text with line breaks (a Message built by hand, not by the parser) still
    maps correctly: each of its content lines maps to the message's line.
    """
    lines: list[str] = []
    line_map: list[int] = []
    timestamps: list[float | None] = []
    for message in messages:
        content = f"{_LABELS[message.role]}: {message.text}"
        count = content.count("\n") + 1
        lines.append(content)
        line_map.extend([message.line] * count)
        timestamps.extend([message.timestamp] * count)
    return Rendered("\n".join(lines), line_map, timestamps)


def map_lines(rendered: Rendered, start: int, end: int) -> tuple[int, int]:
    """The JSONL lines that content lines *start*..*end* (1-based) came from.

    The range is clamped to the content, and the result spans every source
    line in it, so ``first <= last`` holds even for a hand-built map that is
    not in order. With no content there is nothing to map through and the
    range comes back unchanged.
    """
    window = _window(rendered.line_map, start, end)
    if not window:
        return start, end
    return min(window), max(window)


def message_time(rendered: Rendered, start: int, end: int) -> float | None:
    """The latest timestamp among content lines *start*..*end*, if any.

    The latest, because a chunk is as recent as the newest thing said in it;
    temporal decay then ages it from there.
    """
    known = [t for t in _window(rendered.timestamps, start, end) if t is not None]
    return max(known) if known else None


def _window(items: list[_T], start: int, end: int) -> list[_T]:
    """Items for 1-based lines *start*..*end*, clamped, in either order."""
    if not items:
        return []
    lo, hi = sorted((start, end))
    lo = min(max(lo, 1), len(items))
    hi = min(max(hi, 1), len(items))
    return items[lo - 1 : hi]


def _parse_line(raw: bytes, number: int) -> Message | None:
    record = _load(raw)
    if record is None:
        return None
    found = _locate_message(record)
    if found is None:
        return None
    role, node = found
    text = _content_text(node.get("content"))
    if not text:
        return None
    if role == "user" and text.startswith(_INJECTED_PREFIXES):
        return None
    text = _finish(text)
    if not text:
        return None
    return Message(role, text, number, _timestamp(record, node))


def _load(raw: bytes) -> dict[str, object] | None:
    """The JSON object on one line, or None for anything else."""
    if raw.startswith(_UTF8_BOM):
        raw = raw[len(_UTF8_BOM) :]
    stripped = raw.strip()
    # Cheap rejection of blank and non-object lines before decoding.
    if not stripped.startswith(b"{"):
        return None
    try:
        text = stripped.decode("utf-8")
    except UnicodeDecodeError:
        text = stripped.decode("utf-8", errors="replace")
    try:
        value: object = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def _locate_message(record: dict[str, object]) -> tuple[Role, dict[str, object]] | None:
    """The speaker and the object holding ``content``, for a message record.

    Shapes, by the record's ``type``:

    * ``"message"`` with a ``message`` object: OpenClaw;
    * ``"user"``/``"assistant"`` with a ``message`` object: Claude Code, whose
      meta lines (command caveats) and sidechains (sub-agents) are skipped;
    * ``"response_item"`` with a ``payload`` of type ``"message"``: Codex;
    * ``"message"`` with ``role`` at the top: older Codex rollouts;
    * no ``type`` and a ``role``: plain and OpenAI chat logs.

    Any other type is an event, a tool call or metadata.
    """
    if record.get("isMeta") or record.get("isSidechain"):
        return None
    kind = record.get("type")
    node: object
    if kind == "response_item":
        node = record.get("payload")
        if not isinstance(node, dict) or node.get("type") != "message":
            return None
    elif kind in ("message", "user", "assistant") and isinstance(record.get("message"), dict):
        node = record["message"]
    elif kind == "message" or (kind is None and "role" in record):
        node = record
    else:
        return None
    if not isinstance(node, dict):
        return None
    role = node.get("role")
    if role is None and kind in ("user", "assistant"):
        role = kind
    if role == "user" or role == "assistant":
        return role, node
    return None


def _content_text(content: object) -> str:
    """The normalised words of a message's content; "" if there are none.

    A string is taken whole; a list keeps its text blocks (and bare strings)
    joined by a space. Tool use, tool results, reasoning and images carry no
    words of the conversation and are dropped.
    """
    if isinstance(content, str):
        return _normalise(content)
    if isinstance(content, dict):
        content = [content]
    if not isinstance(content, list):
        return ""
    return " ".join(part for part in map(_block_text, content) if part)


def _block_text(block: object) -> str:
    if isinstance(block, str):
        return _normalise(block)
    if isinstance(block, dict) and block.get("type") in _TEXT_BLOCKS:
        text = block.get("text")
        if isinstance(text, str):
            return _normalise(text)
    return ""


def _normalise(text: str) -> str:
    """Collapse every whitespace run (line breaks included) to one space."""
    return " ".join(text.split())


def _finish(text: str) -> str:
    """Redact, cap the length and make *text* safe to store.

    Redaction runs first so a cut can never leave a secret too short for its
    pattern; the cut then lands on a character boundary.
    """
    text = redact_secrets(text)
    if len(text) > MAX_MESSAGE_CHARS:
        cut = safe_boundary(text, MAX_MESSAGE_CHARS) or MAX_MESSAGE_CHARS
        text = text[:cut].rstrip()
    if not text.isascii():
        text = _SURROGATE_RE.sub("\ufffd", text)
    return text


def _timestamp(record: dict[str, object], node: dict[str, object]) -> float | None:
    """Epoch seconds from the record or its message, whichever has a time."""
    for source in _sources(record, node):
        for key in _TIME_KEYS:
            seconds = _epoch_seconds(source.get(key))
            if seconds is not None:
                return seconds
    return None


def _sources(record: dict[str, object], node: dict[str, object]) -> Iterable[dict[str, object]]:
    yield record
    if node is not record:
        yield node


def _epoch_seconds(value: object) -> float | None:
    """An ISO 8601 string or an epoch number (s, ms, µs or ns) in seconds.

    A time without a zone is taken as UTC: transcripts are written by
    programs, which log UTC far more often than local time.
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        value = value.strip()
        try:
            number: float = float(value)
        except ValueError:
            return _iso_seconds(value)
    elif isinstance(value, int | float):
        try:
            number = float(value)
        except OverflowError:  # an int too large for a float
            return None
    else:
        return None
    if not math.isfinite(number) or number < 0:
        return None
    if number >= _NS_FROM:
        return number / 1e9
    if number >= _US_FROM:
        return number / 1e6
    if number >= _MS_FROM:
        return number / 1e3
    return number


def _iso_seconds(value: str) -> float | None:
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    try:
        return moment.timestamp()
    except (OverflowError, ValueError):
        return None
