"""Which characters are CJK, for token estimates and term segmentation.

"CJK" here means scripts written without spaces between words: Han
ideographs, Japanese kana and Hangul. These get bigram segmentation and count
as roughly one token per character (a multilingual tokenizer spends about one
token per Han character, against about four Latin characters per token).
"""

from __future__ import annotations

import re
from typing import Final

CJK_CLASS: Final = (
    "\u1100-\u11ff"  # Hangul Jamo
    "\u2e80-\u2fdf"  # CJK radicals, Kangxi radicals
    "\u3040-\u30ff"  # Hiragana, Katakana
    "\u3130-\u318f"  # Hangul compatibility Jamo
    "\u31f0-\u31ff"  # Katakana phonetic extensions
    "\u3400-\u4dbf"  # CJK extension A
    "\u4e00-\u9fff"  # CJK unified ideographs
    "\ua960-\ua97f"  # Hangul Jamo extended A
    "\uac00-\ud7af"  # Hangul syllables
    "\uf900-\ufaff"  # CJK compatibility ideographs
    "\uff66-\uff9f"  # halfwidth Katakana
    "\U00020000-\U0003134f"  # CJK extensions B-G
)

CJK_RUN_RE: Final = re.compile(f"[{CJK_CLASS}]+")


def is_cjk(ch: str) -> bool:
    """True if the single character *ch* belongs to a CJK script."""
    return CJK_RUN_RE.fullmatch(ch) is not None


def count_cjk(text: str) -> int:
    """Number of CJK characters in *text*."""
    return sum(len(run) for run in CJK_RUN_RE.findall(text))
