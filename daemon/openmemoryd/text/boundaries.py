"""Where text may be cut without breaking a character a reader sees.

Python strings never split a code point, but a visible character can span
several: a base letter plus combining accents, emoji joined by U+200D, or a
symbol plus a variation selector. Cutting inside such a sequence shows the
user a broken glyph, so every truncation goes through `safe_boundary`.
"""

from __future__ import annotations

import unicodedata
from typing import Final

ZWJ: Final = "\u200d"


def _continues(ch: str) -> bool:
    """True if *ch* belongs to the character before it."""
    return (
        ch == ZWJ
        or "\ufe00" <= ch <= "\ufe0f"
        or "\U000e0100" <= ch <= "\U000e01ef"
        or "\U0001f3fb" <= ch <= "\U0001f3ff"  # skin-tone modifiers
        or unicodedata.combining(ch) != 0
    )


def safe_boundary(text: str, index: int) -> int:
    """The largest cut position <= *index* that does not split a character.

    Returns 0 only if no safe position exists before *index* (a single
    character longer than the budget); callers then cut after it instead.
    """
    index = max(0, min(index, len(text)))
    while 0 < index < len(text) and (_continues(text[index]) or text[index - 1] == ZWJ):
        index -= 1
    return index
