"""BERT's uncased WordPiece tokenizer, as all-MiniLM-L6-v2's ``tokenizer.json`` defines it.

That file configures Hugging Face `tokenizers` with a BertNormalizer
(clean_text, handle_chinese_chars, lowercase, and strip_accents following
lowercase), the BertPreTokenizer and WordPiece (``##`` continuations,
``[UNK]`` for a word longer than 100 characters or with no segmentation).
Reproduced here in pure Python, it is about 150 lines and costs no
dependency; the pipeline, in the library's order:

1. special tokens written literally in the text (``[CLS]``, ``[SEP]``,
   ``[UNK]``, ``[PAD]``, ``[MASK]``, case-sensitive) are split out first and
   become their ids, as the library's added-token matching does;
2. per character: NUL, U+FFFD and control, format, private-use and surrogate
   characters (``Cc Cf Co Cs``; unassigned ones stay) are deleted, except
   tab, CR and LF, which like every other whitespace become a space; CJK
   ideographs get a space on each side; NFD, then non-spacing marks (``Mn``)
   are dropped; each remaining character is lowercased on its own (as Rust's
   ``char::to_lowercase``: no final-sigma rule); punctuation (ASCII
   punctuation or any ``P*`` category) gets a space on each side;
3. the result is split on whitespace into words, and each word is segmented
   greedily, longest vocabulary piece first.

Step 2 is a pure function of one character, so it is computed once per
distinct character and applied with `str.translate`.

Checked against `tokenizers` 0.23 with the wheel's ``tokenizer.json``: the
same ids on 2,050 texts (mixed scripts, random strings, edge cases), and the
same words for every code point placed between two letters, except about
560 rare code points whose Unicode data differs between the library's
tables (roughly Unicode 10) and Python's `unicodedata` (Unicode 14 on 3.11):
marks and punctuation of recently encoded scripts, which the vocabulary
maps to ``[UNK]`` either way; only word boundaries around them differ.

Invariants: `WordPieceTokenizer.encode` returns content ids only (no
``[CLS]``/``[SEP]``) and never truncates; that is the model's job. Every id
is a valid row of the vocabulary.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Final

__all__ = ["WordPieceTokenizer"]

CONTINUATION: Final = "##"
MAX_WORD_CHARS: Final = 100
_SPECIALS: Final = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
_SPECIAL_SPLIT: Final = re.compile(r"(\[(?:PAD|UNK|CLS|SEP|MASK)\])")
_CACHE_WORDS: Final = 1 << 16
_CONTROL: Final = frozenset({"Cc", "Cf", "Co", "Cs"})
# BERT's "CJK Unified Ideographs" blocks (not Hangul, Hiragana or Katakana), as
# `tokenizers` has them: Extension D (U+2B740-2B81F) ends where E starts at U+2B820,
# but the library's range for E starts at U+2B920, so U+2B820-2B91F get no spaces.
_CJK_RANGES: Final = (
    (0x4E00, 0x9FFF),
    (0x3400, 0x4DBF),
    (0x20000, 0x2A6DF),
    (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F),
    (0x2B920, 0x2CEAF),
    (0xF900, 0xFAFF),
    (0x2F800, 0x2FA1F),
)


class WordPieceTokenizer:
    """Normaliser, pre-tokenizer and WordPiece over one vocabulary (line i = id i)."""

    def __init__(self, vocab: list[str]) -> None:
        self._ids: dict[str, int] = {}
        for index, piece in enumerate(vocab):
            self._ids.setdefault(piece, index)
        missing = [token for token in _SPECIALS if token not in self._ids]
        if missing:
            raise ValueError(f"the vocabulary lacks {', '.join(missing)}")
        self.cls = self._ids["[CLS]"]
        self.sep = self._ids["[SEP]"]
        self.unk = self._ids["[UNK]"]
        self._longest = max(len(piece) for piece in self._ids)
        self._table: dict[int, str | None] = {}
        self._seen: set[str] = set()
        self._words: dict[str, tuple[int, ...]] = {}

    def normalize(self, text: str) -> str:
        """Step 2: the string whose whitespace-separated words get segmented."""
        new = set(text).difference(self._seen)
        for char in new:
            folded = _fold(char)
            if folded != char:
                self._table[ord(char)] = folded or None
        self._seen.update(new)
        return text.translate(self._table)

    def encode(self, text: str) -> list[int]:
        """Content token ids of `text` (no ``[CLS]``/``[SEP]``, no truncation)."""
        ids: list[int] = []
        parts = _SPECIAL_SPLIT.split(text) if "[" in text else [text]
        for position, part in enumerate(parts):
            if position % 2:  # re.split puts the captured separators at odd positions
                ids.append(self._ids[part])
                continue
            for word in self.normalize(part).split():
                ids.extend(self._word_ids(word))
        return ids

    def _word_ids(self, word: str) -> tuple[int, ...]:
        cached = self._words.get(word)
        if cached is None:
            cached = self._segment(word)
            if len(self._words) >= _CACHE_WORDS:
                self._words.clear()
            self._words[word] = cached
        return cached

    def _segment(self, word: str) -> tuple[int, ...]:
        """Greedy longest-match-first; one unknown piece makes the whole word ``[UNK]``."""
        if len(word) > MAX_WORD_CHARS:
            return (self.unk,)
        ids: list[int] = []
        start, size = 0, len(word)
        while start < size:
            prefix = CONTINUATION if start else ""
            for end in range(min(size, start + self._longest), start, -1):
                found = self._ids.get(prefix + word[start:end])
                if found is not None:
                    ids.append(found)
                    start = end
                    break
            else:
                return (self.unk,)
        return tuple(ids)


def _fold(char: str) -> str:
    """Step 2 for one character: what it becomes, possibly several characters or none."""
    code = ord(char)
    if char in "\t\n\r" or (char.isspace() and not _is_control(char)):
        return " "
    if code in (0, 0xFFFD) or _is_control(char):
        return ""
    pieces: list[str] = []
    for part in unicodedata.normalize("NFD", char):
        if unicodedata.category(part) == "Mn":
            continue
        for lower in part.lower():
            pieces.append(f" {lower} " if _is_punctuation(lower) else lower)
    folded = "".join(pieces)
    return f" {folded} " if _is_cjk(code) else folded


def _is_control(char: str) -> bool:
    return unicodedata.category(char) in _CONTROL


def _is_punctuation(char: str) -> bool:
    code = ord(char)
    ascii_punctuation = (
        33 <= code <= 47 or 58 <= code <= 64 or 91 <= code <= 96 or 123 <= code <= 126
    )
    return ascii_punctuation or unicodedata.category(char).startswith("P")


def _is_cjk(code: int) -> bool:
    return any(low <= code <= high for low, high in _CJK_RANGES)
