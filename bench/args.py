"""Argument types the benchmark parts share."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TypeVar

__all__ = ["number_list"]

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
