"""Which encoding bytes that are not UTF-8 were written in, for a hint that
says how to convert them, and how to say it.

Our hints used to say ``iconv -f latin1`` whatever the bytes: that turns a
Russian (cp1251) or Chinese (GBK) note into mojibake without an error. So
each candidate here decodes the bytes strictly and must then read like its
language; an encoding is named only when exactly one candidate does, and
otherwise the hint has a placeholder for the user to fill in. A wrong name
is worse than none: the tests hold that a named encoding decodes the bytes
back to what was written.

What "reads like" means, per script:

* **Cyrillic** (cp1251): almost every non-ASCII character is a Cyrillic
  letter or the punctuation the code page carries; words do not mix
  Cyrillic with Latin letters, and are lower case, UPPER case or
  Capitalised (a wrong code page scrambles case: koi8-r read as cp1251
  gives "пРИВЕТ", Chinese bytes "ЦРОДгЮ"); most letters are lower case, as
  in prose; in 8 letters or more, vowels make the share a real text has.
* **Russian in KOI8-R** (koi8-r): its lower case letters are the bytes
  of cp1251's capitals and the other way round, so Russian prose (mostly
  lower case) is one or the other by case; but all-capitals cp1251
  ("ВАЖНО") reads as lower case koi8-r, so koi8-r is named only for 20
  Cyrillic letters or more that also fit Russian letter frequencies
  clearly better than the same bytes read as cp1251 (the two code pages
  order the alphabet differently, so the wrong one scores far worse: a
  real text's mean log frequency is about -3.0, a misread one -3.5 or
  less); cp1251 is not named for bytes that fit Russian that much better
  as koi8-r (all-capitals koi8-r reads as lower case cp1251). Shorter
  bytes that read as koi8-r name nothing: they read as Chinese too, or
  as capitals.
* **Chinese** (gb18030): the characters are Han, nearly all of them among
  the 3,755 common ones of GB2312 (other bytes decode to rare ones), no
  kana (Japanese), and hardly a space between two of them (Korean, Russian
  read as GBK keep their spaced words).
* **Traditional Chinese** (big5): the same, with the 5,401 common
  characters of Big5 (its level 1) in place of GB2312's. Big5 bytes read
  as GBK give rare characters and GBK's private-use area (Big5's "，"),
  GBK bytes read as Big5 give level-2 characters and Bopomofo (GBK's "，"),
  so at most one of the two reads.
* **Japanese** (shift_jis): Han and kana with a real share of kana,
  and no half-width katakana (which is what Chinese or Cyrillic bytes become).
* **Korean** (euc-kr): mostly Hangul syllables. Named when the bytes
  are not also plausible Chinese, which short Korean often is.
* **Western** (latin1, or cp1252 when bytes 0x80-0x9F occur): accented
  letters sit in words of mostly plain letters ("crème"); text whose every
  letter is accented ("Ïðèâåò") is another script misread, and so are
  words cased like none ("úLIS", GBK's arrow in "MAN→LIS"). English with
  only curly quotes and dashes (cp1252 "it’s") counts too.

A UTF-16 byte order mark names UTF-16 outright. Stdlib only, and imported
only when a hint is needed: ``omem-client`` starts as fast as before.
"""

from __future__ import annotations

import codecs
import itertools
import math
import re
import shlex
from collections.abc import Callable
from typing import Final

__all__ = [
    "ENCODING_PLACEHOLDER",
    "convert_file_hint",
    "convert_hint",
    "guess_encoding",
    "iconv_filter",
]

ENCODING_PLACEHOLDER: Final = "ENCODING"
# What to put in place of the placeholder, for the languages our users write.
_EXAMPLES: Final = (
    "cp1251 for Russian, gb18030 for Chinese, shift_jis for Japanese, latin1 for Western European"
)

_WORD: Final = re.compile(r"[^\W\d_]+")
# No text holds these (a NUL is UTF-16, or not text at all)
_CONTROL: Final = re.compile("[\x00-\x08\x0b\x0e-\x1f\x7f-\x9f]")
_MIN_SHARE: Final = 0.9  # of non-ASCII characters that must belong to the script
_CYRILLIC_PUNCT: Final = frozenset("«»—–…№“”„‘’\u00a0°·")
_CYRILLIC_VOWELS: Final = frozenset("аеёиоуыэюяіїєАЕЁИОУЫЭЮЯІЇЄ")
_WESTERN_PUNCT: Final = frozenset("«»—–…“”„‘’‚‹›\u00a0°·§£€¥©®™¡¿•†‡¹²³ºª½¼¾")
# What English typed on Windows holds beyond ASCII ("it’s", “quoted”, a — dash)
_TYPOGRAPHIC: Final = frozenset("‘’“”–—…•€«»\u00a0")
# "¡" and "¿" open a clause; after a letter or digit ("250¡ãC") they are
# the first byte of a CJK symbol (°) read as Latin-1
_INVERTED_AFTER_WORD: Final = re.compile(r"[^\W_][¡¿]")
# Han characters on both sides of a space (ASCII punctuation may sit beside
# it): Korean, Russian or Japanese bytes read as GBK, whose words are
# spaced; Chinese is written without spaces.
_SPACED_HAN: Final = re.compile(
    "[\u3400-\u4dbf\u4e00-\u9fff][!-/:-@]* +[!-/:-@]*[\u3400-\u4dbf\u4e00-\u9fff]"
)


def guess_encoding(data: bytes, *, cut: bool = False) -> str | None:
    """The encoding *data* (not UTF-8) was most likely written in, as iconv
    and Python both name it, or None when no single one is plausible.

    *cut*: *data* is the start of something longer, so its last character
    may be incomplete.
    """
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "utf-16"  # Windows' "Unicode": its byte order mark says so
    found = {name for name, reads_like in _CANDIDATES if _reads(data, name, cut, reads_like)}
    if len(found) != 1:
        return None
    named = found.pop()
    if any(name != named and _reads(data, name, cut, test) for name, test in _RIVALS):
        return None
    return named


def _reads(data: bytes, name: str, cut: bool, reads_like: Callable[[str], bool]) -> bool:
    text = _decoded(data, name, cut)
    return text is not None and _CONTROL.search(text) is None and reads_like(text)


def iconv_filter(encoding: str | None) -> str:
    """``iconv -f ENC -t utf-8``, with the placeholder when *encoding* is unknown."""
    return f"iconv -f {encoding or ENCODING_PLACEHOLDER} -t utf-8"


def convert_hint(encoding: str | None) -> str:
    """How to convert text to UTF-8: with the encoding found, or saying what
    to put in place of the placeholder."""
    if encoding is not None:
        return (
            f"it looks like {encoding}; convert it to UTF-8 first (e.g. {iconv_filter(encoding)})"
        )
    return (
        f"convert it to UTF-8 first ({iconv_filter(None)}, with its encoding in place of "
        f"{ENCODING_PLACEHOLDER}: {_EXAMPLES})"
    )


def convert_file_hint(path: str, encoding: str | None, *, where: str = "") -> str:
    """How to convert the file *path* (relative to *where*, said as "in
    the workspace") to UTF-8, keeping the original as ``PATH.orig``: the
    new text goes to another file first, and the original is moved aside
    only once that worked, so a wrong encoding or a failed iconv loses
    nothing."""
    new, orig, quoted = _shell_word(f"{path}.utf8"), _shell_word(f"{path}.orig"), _shell_word(path)
    command = (
        f"{iconv_filter(encoding)} {quoted} > {new} && mv {quoted} {orig} && mv {new} {quoted}"
    )
    convert = f"convert {path} to UTF-8{f' {where}' if where else ''}"
    if encoding is not None:
        return f"{convert} (it looks like {encoding}), keeping the original: {command}"
    return (
        f"{convert}, keeping the original, with its encoding in place of "
        f"{ENCODING_PLACEHOLDER} ({_EXAMPLES}): {command}"
    )


def _shell_word(word: str) -> str:
    """*word* for a shell command line: as it is when it holds only letters
    (any script: "memory/покупки.md" reads as written), digits and
    ``@%+=:,./-_``, else quoted."""
    if word and all(c.isalnum() or c in "@%+=:,./-_" for c in word):
        return word
    return shlex.quote(word)


# ---------------------------------------------------------------- decoding


def _decoded(data: bytes, name: str, cut: bool) -> str | None:
    if name == "latin1" and any(0x80 <= b <= 0x9F for b in data):
        return None  # C1 controls: text with them is cp1252, tried under that name
    if name == "cp1252" and not any(0x80 <= b <= 0x9F for b in data):
        return None  # the same text as latin1: named once
    try:
        decoder = codecs.getincrementaldecoder(name)("strict")
        return decoder.decode(data, final=not cut)
    except UnicodeDecodeError:
        return None


def _non_ascii(text: str) -> list[str]:
    return [c for c in text if ord(c) >= 0x80]


def _share(part: int, whole: int) -> float:
    return part / whole if whole else 0.0


# ---------------------------------------------------------------- Cyrillic


def _is_cyrillic(c: str) -> bool:
    return "\u0400" <= c <= "\u04ff"


def _reads_cyrillic(text: str) -> bool:
    others = _non_ascii(text)
    letters = [c for c in others if _is_cyrillic(c) and c.isalpha()]
    fitting = len(letters) + sum(c in _CYRILLIC_PUNCT for c in others)
    if _share(fitting, len(others)) < _MIN_SHARE:
        return False
    words = [w for w in _WORD.findall(text) if any(map(_is_cyrillic, w))]
    if not any(len(w) >= 3 for w in words):
        return False  # too little to tell: GBK's symbols read as "Ўъ" (→), "ўг" (€)
    odd = sum(not _cased_like_a_word(w) or not all(map(_is_cyrillic, w)) for w in words)
    if _share(odd, len(words)) > 0.1:
        return False
    vowels = _share(sum(c in _CYRILLIC_VOWELS for c in letters), len(letters))
    if len(letters) >= 8 and not 0.25 <= vowels <= 0.6:
        return False
    # mostly lower case, as prose is (koi8-r read as cp1251 swaps the case)
    return _share(sum(c.islower() for c in letters), len(letters)) >= 0.5


# How often each letter occurs in Russian text, per cent ("ё" counted as "е").
_RUSSIAN_FREQUENCY: Final = dict(
    zip(
        "оеаинтсрвлкмдпуяызьбгчйхжшюцщэфъ",
        (
            10.97,
            8.45,
            8.01,
            7.35,
            6.70,
            6.26,
            5.47,
            4.73,
            4.54,
            4.40,
            3.49,
            3.21,
            2.98,
            2.81,
            2.62,
            2.01,
            1.90,
            1.65,
            1.74,
            1.59,
            1.70,
            1.44,
            1.21,
            0.97,
            0.94,
            0.73,
            0.64,
            0.48,
            0.36,
            0.32,
            0.26,
            0.04,
        ),
        strict=True,
    )
)
_KOI8_MIN_LETTERS: Final = 20
# How much more Russian (mean log frequency per letter) the koi8-r reading
# must be than the cp1251 one: real text beats a misreading by 0.4 or more.
_KOI8_MARGIN: Final = 0.25


def _russian_score(text: str) -> tuple[float, int]:
    """The mean natural-log frequency of *text*'s Cyrillic letters in
    Russian, and how many there are (a letter Russian lacks counts as rare)."""
    letters = [c.lower().replace("ё", "е") for c in text if _is_cyrillic(c) and c.isalpha()]
    if not letters:
        return float("-inf"), 0
    total = sum(math.log(_RUSSIAN_FREQUENCY.get(c, 0.01) / 100) for c in letters)
    return total / len(letters), len(letters)


def _reads_koi8_russian(text: str) -> bool:
    """Russian read as koi8-r, clearly not cp1251 (see the module docstring)."""
    if not _reads_cyrillic(text):
        return False
    score, letters = _russian_score(text)
    if letters < _KOI8_MIN_LETTERS:
        return False
    as_cp1251, _ = _russian_score(text.encode("koi8-r").decode("cp1251", errors="replace"))
    return score >= as_cp1251 + _KOI8_MARGIN


def _reads_cp1251(text: str) -> bool:
    """Cyrillic read as cp1251, unless the bytes are clearly Russian in
    koi8-r: all-capitals koi8-r ("ВАЖНО") reads as lower case cp1251."""
    if not _reads_cyrillic(text):
        return False
    score, letters = _russian_score(text)
    if letters < _KOI8_MIN_LETTERS:
        return True
    as_koi8, _ = _russian_score(text.encode("cp1251").decode("koi8-r"))
    return as_koi8 < score + _KOI8_MARGIN


def _cased_like_a_word(word: str) -> bool:
    return word.islower() or word.isupper() or word.istitle()


# ---------------------------------------------------------------- CJK


def _is_han(c: str) -> bool:
    return "\u4e00" <= c <= "\u9fff" or "\u3400" <= c <= "\u4dbf"


def _is_kana(c: str) -> bool:
    return "\u3040" <= c <= "\u30ff"


def _is_hangul(c: str) -> bool:
    return "\uac00" <= c <= "\ud7a3"


def _is_cjk_punct(c: str) -> bool:
    """CJK symbols and punctuation, full-width forms (not half-width kana),
    and the curly quotes and dashes GB2312 and JIS carry."""
    return (
        "\u3000" <= c <= "\u303f"
        or "\uff01" <= c <= "\uff60"
        or "\uffe0" <= c <= "\uffef"
        or c in "“”‘’—…·•※"
    )


def _common_hanzi(c: str) -> bool:
    """One of GB2312's 3,755 level-1 (most used) characters."""
    try:
        lead = c.encode("gb2312")[0]
    except UnicodeEncodeError:
        return False
    return 0xB0 <= lead <= 0xD7


def _reads_chinese(text: str) -> bool:
    return _reads_han(text, _common_hanzi)


def _common_traditional(c: str) -> bool:
    """One of Big5's 5,401 level-1 (frequently used) characters."""
    try:
        lead = c.encode("big5")[0]
    except UnicodeEncodeError:
        return False
    return 0xA4 <= lead <= 0xC6


def _reads_traditional_chinese(text: str) -> bool:
    return _reads_han(text, _common_traditional)


def _reads_han(text: str, common: Callable[[str], bool]) -> bool:
    """Whether *text* reads as Chinese whose characters are mostly *common*
    ones (GB2312's or Big5's first level): Han and CJK punctuation only, no
    kana, and not spaced out character by character as a misread is."""
    others = _non_ascii(text)
    han = [c for c in others if _is_han(c)]
    if len(han) < 2 or any(map(_is_kana, others)):
        return False
    fitting = len(han) + sum(map(_is_cjk_punct, others))
    return (
        _share(fitting, len(others)) >= _MIN_SHARE
        and _share(sum(map(common, han)), len(han)) >= 0.8
        and len(_SPACED_HAN.findall(text)) <= len(han) // 20
    )


def _reads_japanese(text: str) -> bool:
    others = _non_ascii(text)
    kana = sum(map(_is_kana, others))
    han = sum(map(_is_han, others))
    if kana + han < 2:
        return False
    fitting = kana + han + sum(map(_is_cjk_punct, others))
    return _share(fitting, len(others)) >= _MIN_SHARE and _share(kana, kana + han) >= 0.15


def _reads_korean(text: str) -> bool:
    others = _non_ascii(text)
    hangul = sum(map(_is_hangul, others))
    han = sum(map(_is_han, others))
    if hangul < 2:
        return False
    fitting = hangul + han + sum(map(_is_cjk_punct, others))
    return _share(fitting, len(others)) >= _MIN_SHARE and _share(hangul, hangul + han) >= 0.8


# ---------------------------------------------------------------- Western


def _is_latin_letter(c: str) -> bool:
    return ("\u00c0" <= c <= "\u024f" and c not in "×÷") or c in "ŒœŠšŽžŸƒ"


def _reads_western(text: str) -> bool:
    others = _non_ascii(text)
    if _typographic_only(text, others):
        return True
    fitting = sum(_is_latin_letter(c) or c in _WESTERN_PUNCT for c in others)
    if _share(fitting, len(others)) < _MIN_SHARE:
        return False
    accented = [w for w in _WORD.findall(text) if any(ord(c) >= 0x80 for c in w)]
    if not any(len(w) >= 2 for w in accented):
        return False  # too little to tell
    if not all(all(c.isascii() or _is_latin_letter(c) for c in w) for w in accented):
        return False
    letters = sum(len(w) for w in accented)
    marked = sum(not c.isascii() for w in accented for c in w)
    if _share(sum(not _cased_like_a_word(w) for w in accented), len(accented)) > 0.1:
        return False  # "MAN¡úLIS": GBK's arrow between two words
    return _share(marked, letters) <= 0.5 and _INVERTED_AFTER_WORD.search(text) is None


def _typographic_only(text: str, others: list[str]) -> bool:
    """ASCII text with curly quotes, dashes, ellipses, one at a time (two
    in a row, but for a no-break space, are more likely a two-byte character)."""
    if not others or not all(c in _TYPOGRAPHIC for c in others):
        return False
    return not any(
        ord(a) >= 0x80 and ord(b) >= 0x80 and "\u00a0" not in (a, b)
        for a, b in itertools.pairwise(text)
    )


# Each encoding tried, with the test its text must pass.
_CANDIDATES: Final[tuple[tuple[str, Callable[[str], bool]], ...]] = (
    ("cp1251", _reads_cp1251),
    ("koi8-r", _reads_koi8_russian),
    ("gb18030", _reads_chinese),
    ("big5", _reads_traditional_chinese),
    ("shift_jis", _reads_japanese),
    ("euc-kr", _reads_korean),
    ("latin1", _reads_western),
    ("cp1252", _reads_western),
)
# Tried as well: bytes that read like one of these (more loosely than the
# candidate of the same name) are too ambiguous to name another encoding.
_RIVALS: Final[tuple[tuple[str, Callable[[str], bool]], ...]] = (("koi8-r", _reads_cyrillic),)
