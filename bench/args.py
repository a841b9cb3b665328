"""Argument types the benchmark parts share."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable
from typing import TypeVar

__all__ = ["name_list", "number_list"]

N = TypeVar("N", int, float)


def number_list(cast: Callable[[str], N], *, at_least: N, what: str) -> Callable[[str], list[N]]:
    """An argparse type for comma-separated numbers, each at least *at_least*
    (``--lines 20,2000,20000``); *what* names them in the error."""

    def parse(text: str) -> list[N]:
        try:
            numbers = [cast(part) for part in text.split(",") if part.strip()]
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a list of {what}: {text!r}") from None
        if not numbers or min(numbers) < at_least:
            raise argparse.ArgumentTypeError(f"{what} must be at least {at_least}")
        return numbers

    return parse


def name_list(allowed: Iterable[str], what: str) -> Callable[[str], list[str]]:
    """An argparse type for comma-separated names, each one of *allowed*
    (``--methods calibrated,bm25``), distinct and in the order given."""
    valid = list(allowed)

    def parse(text: str) -> list[str]:
        names = [p.strip() for p in text.split(",") if p.strip()]
        if not names:
            raise argparse.ArgumentTypeError(f"give at least one {what}")
        unknown = [n for n in names if n not in valid]
        if unknown:
            raise argparse.ArgumentTypeError(
                f"unknown {what} {', '.join(unknown)}; choose from {', '.join(valid)}"
            )
        return list(dict.fromkeys(names))

    return parse
