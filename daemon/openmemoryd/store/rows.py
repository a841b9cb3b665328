"""Typed access to SQLite values.

apsw returns ``int | float | bytes | str | None`` for every column; these
helpers state what a column holds and fail loudly if the schema and the code
disagree, instead of letting a wrong type travel into search results.
"""

from __future__ import annotations

SQLiteValue = int | float | bytes | str | None


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
