"""Token estimates that do not undercount CJK text.

OpenClaw estimates tokens as characters / 4, which makes a Chinese chunk four
times larger than its budget says. We count each CJK character as one token
and every other character as a quarter token, which tracks multilingual
subword tokenizers (XLM-R, e5) closely enough for chunk sizing.
"""

from __future__ import annotations

from bisect import bisect_right

from openmemoryd.text.scripts import count_cjk


def estimate_tokens(text: str) -> int:
    """Approximate model tokens in *text* (never 0 for non-empty text)."""
    if not text:
        return 0
    cjk = count_cjk(text)
    other = len(text) - cjk
    return cjk + (other + 3) // 4


def line_cost(line: str) -> int:
    """What one line costs in a chunk: its tokens, plus one for its break.

    The chunker sizes chunks by it, and a search's token budget counts with
    it, so "fits in N tokens" means the same in both.
    """
    return estimate_tokens(line) + 1


def fitting_prefix(text: str, max_tokens: int, suffix: str = "") -> int:
    """Length of the longest prefix of *text* that, followed by *suffix*,
    costs at most *max_tokens* as a line (0 if none does).

    Binary search works because a prefix never costs more than a longer one.
    """
    return bisect_right(
        range(1, len(text) + 1), max_tokens, key=lambda size: line_cost(text[:size] + suffix)
    )
