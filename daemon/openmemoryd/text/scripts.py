"""Which characters are CJK, for token estimates and term segmentation.

"CJK" here means scripts written without spaces between words: Han
ideographs, Japanese kana and Hangul. These get bigram segmentation and count
as roughly one token per character (a multilingual tokenizer spends about one
token per Han character, against about four Latin characters per token).
"""

from __future__ import annotations

import functools
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
    return _letters(CJK_RUN_RE, text)


# Letters of the alphabetic scripts `main_script` tells apart. A CJK
# character is about one token and a word; about four letters are one.
_CYRILLIC_RUN_RE: Final = re.compile("[\u0400-\u052f]+")
_LATIN_RUN_RE: Final = re.compile("[A-Za-z\u00c0-\u024f]+")
LETTERS_PER_TOKEN: Final = 4
# Below this many tokens of letters a text has no script worth naming (a
# line of digits, an IP address and a port).
MIN_SCRIPT_TOKENS: Final = 2


@functools.lru_cache(maxsize=4096)
def main_script(text: str) -> str | None:
    """The script most of *text* is written in: ``"cjk"``, ``"cyrillic"`` or
    ``"latin"``, weighing a CJK character as about four letters (a token
    each); None when *text* has too few letters of these to say.

    A Chinese note keeps its English product names and error codes, so the
    script with the most letters is not the note's language; the one that
    carries most of its words is. Searches ask this of the same chunks again
    and again (each candidate's vector evidence), so answers are cached.
    """
    if text.isascii():
        latin = _letters(_LATIN_RUN_RE, text) / LETTERS_PER_TOKEN
        return "latin" if latin >= MIN_SCRIPT_TOKENS else None
    weights = {
        "cjk": float(count_cjk(text)),
        "cyrillic": _letters(_CYRILLIC_RUN_RE, text) / LETTERS_PER_TOKEN,
        "latin": _letters(_LATIN_RUN_RE, text) / LETTERS_PER_TOKEN,
    }
    script, weight = max(weights.items(), key=lambda item: item[1])
    return script if weight >= MIN_SCRIPT_TOKENS else None


def _letters(run: re.Pattern[str], text: str) -> int:
    return sum(len(found) for found in run.findall(text))
