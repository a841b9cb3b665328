"""Which characters are CJK, for token estimates and term segmentation.

"CJK" here means scripts written without spaces between words: Han
ideographs, Japanese kana and Hangul. These get bigram segmentation and count
as roughly one token per character (a multilingual tokenizer spends about one
token per Han character, against about four Latin characters per token).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from types import MappingProxyType
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
def script_shares(text: str) -> Mapping[str, float]:
    """How much of *text* each script carries: ``"cjk"``, ``"cyrillic"`` and
    ``"latin"`` mapped to their shares of its words (summing to 1), weighing
    a CJK character as about four letters (a token each); empty when *text*
    has too few letters of these to say.

    Each line counts whole in the script most of its words are in. A Chinese
    note keeps its English product names and error codes, so neither the
    script with the most letters nor the share of each is the note's
    language; its lines are. A note written in two languages at once, line
    by line, is in both, in the shares of its words their lines carry.
    Searches ask this of the same chunks again and again (each candidate's
    vector evidence), so answers are cached.
    """
    if text.isascii():
        latin = _letters(_LATIN_RUN_RE, text) / LETTERS_PER_TOKEN
        return MappingProxyType({"latin": 1.0} if latin >= MIN_SCRIPT_TOKENS else {})
    letters = dict.fromkeys(("cjk", "cyrillic", "latin"), 0.0)  # the text's, by script
    lines = dict.fromkeys(letters, 0.0)  # the words of the lines in each script
    for line in text.splitlines():
        weights = _weights(line)
        for script, weight in weights.items():
            letters[script] += weight
        if any(weights.values()):
            lines[max(weights, key=weights.__getitem__)] += sum(weights.values())
    if max(letters.values()) < MIN_SCRIPT_TOKENS:
        return MappingProxyType({})
    total = sum(lines.values())
    return MappingProxyType({script: words / total for script, words in lines.items() if words})


def _weights(line: str) -> dict[str, float]:
    """*line*'s words in each script, a CJK character being one."""
    return {
        "cjk": float(count_cjk(line)),
        "cyrillic": _letters(_CYRILLIC_RUN_RE, line) / LETTERS_PER_TOKEN,
        "latin": _letters(_LATIN_RUN_RE, line) / LETTERS_PER_TOKEN,
    }


def main_script(text: str) -> str | None:
    """The script most of *text*'s words are written in (`script_shares`);
    None when *text* has too few letters to say."""
    shares = script_shares(text)
    return max(shares, key=shares.__getitem__) if shares else None


def _letters(run: re.Pattern[str], text: str) -> int:
    return sum(len(found) for found in run.findall(text))
