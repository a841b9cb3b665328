"""Token estimates that do not undercount CJK text.

OpenClaw estimates tokens as characters / 4, which makes a Chinese chunk four
times larger than its budget says. We count each CJK character as one token
and every other character as a quarter token, which tracks multilingual
subword tokenizers (XLM-R, e5) closely enough for chunk sizing.
"""

from __future__ import annotations

from openmemoryd.text.scripts import count_cjk


def estimate_tokens(text: str) -> int:
    """Approximate model tokens in *text* (never 0 for non-empty text)."""
    if not text:
        return 0
    cjk = count_cjk(text)
    other = len(text) - cjk
    return cjk + (other + 3) // 4
