"""Typed access to SQLite values.

apsw returns ``int | float | bytes | str | None`` for every column; these
helpers state what a column holds and fail loudly if the schema and the code
disagree, instead of letting a wrong type travel into search results.
"""

from __future__ import annotations

from typing import Final

import msgspec

SQLiteValue = int | float | bytes | str | None

# The heading lines inside a chunk: (1-based line, heading path from it on).
InnerHeadings = tuple[tuple[int, str], ...]

_HEADINGS_DECODER: Final = msgspec.json.Decoder(InnerHeadings)


def as_int(value: SQLiteValue) -> int:
    assert isinstance(value, int), value
    return value


def as_float(value: SQLiteValue) -> float:
    assert isinstance(value, int | float), value
    return float(value)


def as_str(value: SQLiteValue) -> str:
    assert isinstance(value, str), value
    return value


def as_bytes(value: SQLiteValue) -> bytes:
    assert isinstance(value, bytes), value
    return value


def headings_column(headings: InnerHeadings) -> str:
    """*headings* as ``chunks.inner_headings`` holds them: JSON, '' for none."""
    return msgspec.json.encode(headings).decode() if headings else ""


def as_headings(value: SQLiteValue) -> InnerHeadings:
    """A ``chunks.inner_headings`` value read back."""
    text = as_str(value)
    return _HEADINGS_DECODER.decode(text) if text else ()
