"""Fusion: one ranked list from the keyword leg and the vector leg.

Two ways to combine the legs, both pure functions of their inputs:

* `fuse_weighted`, OpenClaw's ``mergeHybridResults``: a weighted sum of the
  part scores, ``wv·vector_score + wt·text_score`` with the weights clamped
  to [0, 1] and normalised to sum 1;
* `fuse_rrf`, reciprocal rank fusion: ``Σ 1/(k + rank)`` over the legs a
  chunk appears in, rescaled so that rank 1 in both legs scores 1.0.

Invariants:

* the result is the union of both legs by `Candidate.id`, each id once;
* a chunk keeps ``text_score`` from the keyword leg and ``vector_score`` from
  the vector leg; a leg that did not find it leaves its part ``None`` (so
  ``--explain`` shows "not found" rather than "scored 0"), and that part
  counts 0 in the fused score;
* with part scores in [0, 1], every fused score is in [0, 1], so one
  ``min_score`` means the same thing whichever fusion is configured;
* the output is sorted by score, then by higher ``text_score`` (an exact
  keyword match is the easier result to explain), then by lower id, so equal
  inputs always give the same order.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from openmemoryd.search.candidate import Candidate

DEFAULT_WEIGHTS = (0.5, 0.5)
DEFAULT_RRF_K = 60


def _clamp01(value: float) -> float:
    # NaN compares false with everything; treat it as "no weight".
    if not value > 0.0:
        return 0.0
    return min(1.0, value)


def normalize_weights(vector_weight: float, text_weight: float) -> tuple[float, float]:
    """The weights as fusion uses them: each clamped to [0, 1], summing to 1.

    Normalising keeps fused scores in [0, 1] whatever the user configured
    (``0.7/0.7`` behaves like ``0.5/0.5``); both zero would make every score
    0, so the defaults are used instead, as OpenClaw does.
    """
    vector = _clamp01(vector_weight)
    text = _clamp01(text_weight)
    total = vector + text
    if total <= 0.0:
        return DEFAULT_WEIGHTS
    return vector / total, text / total


def first_by_id(candidates: Iterable[Candidate]) -> dict[int, Candidate]:
    """Each id's first (best-ranked) candidate, in leg order; a leg should not repeat ids,
    but if one does, its later copies must not add to the score."""
    out: dict[int, Candidate] = {}
    for candidate in candidates:
        out.setdefault(candidate.id, candidate)
    return out


def _sort_key(candidate: Candidate) -> tuple[float, float, int]:
    text = candidate.text_score
    return (-candidate.score, -(text if text is not None else -math.inf), candidate.id)


@dataclass(slots=True)
class Found:
    """One chunk as the two legs saw it: the shared fields come from the
    keyword copy when there is one (as OpenClaw keeps the keyword snippet),
    each part score from its own leg."""

    base: Candidate
    text_score: float | None = None
    vector_score: float | None = None


def union_of_legs(lexical: Sequence[Candidate], vector: Sequence[Candidate]) -> dict[int, Found]:
    found: dict[int, Found] = {}
    for candidate in first_by_id(lexical).values():
        found[candidate.id] = Found(candidate, text_score=candidate.text_score)
    for candidate in first_by_id(vector).values():
        entry = found.setdefault(candidate.id, Found(candidate))
        entry.vector_score = candidate.vector_score
    return found


def ranked(found: dict[int, Found], score_of: dict[int, float]) -> list[Candidate]:
    merged = [
        replace(
            entry.base,
            text_score=entry.text_score,
            vector_score=entry.vector_score,
            score=score_of[chunk_id],
        )
        for chunk_id, entry in found.items()
    ]
    merged.sort(key=_sort_key)
    return merged


def fuse_weighted(
    lexical: Sequence[Candidate],
    vector: Sequence[Candidate],
    *,
    vector_weight: float,
    text_weight: float,
) -> list[Candidate]:
    """Union of both legs scored ``wv·vector_score + wt·text_score``.

    The weights are normalised here as well, so a caller cannot produce
    scores above 1 by passing raw configuration values.
    """
    wv, wt = normalize_weights(vector_weight, text_weight)
    found = union_of_legs(lexical, vector)
    # min(): the normalised weights can sum to 1 + 1 ulp (0.03/0.29 does).
    scores = {
        chunk_id: min(1.0, wv * (entry.vector_score or 0.0) + wt * (entry.text_score or 0.0))
        for chunk_id, entry in found.items()
    }
    return ranked(found, scores)


def fuse_rrf(
    lexical: Sequence[Candidate], vector: Sequence[Candidate], *, k: int = DEFAULT_RRF_K
) -> list[Candidate]:
    """Union of both legs scored by reciprocal rank, rescaled to [0, 1].

    Each leg's input order is its ranking (best first, rank 1). Raw RRF sums
    are tiny (at most ``2/(k+1)``, 0.033 for k = 60), so a ``min_score`` of
    0.35 would reject everything; dividing by that maximum makes 1.0 "first
    in both legs" and 0.5 "first in one leg only", which keeps ``min_score``
    meaningful and comparable with weighted fusion.
    """
    if k < 0:
        raise ValueError(f"rrf k must be >= 0, got {k}")
    best = 2.0 / (k + 1)
    scores: dict[int, float] = {}
    for leg in (lexical, vector):
        for rank, chunk_id in enumerate(first_by_id(leg), start=1):
            scores[chunk_id] = scores.get(chunk_id, 0.0) + 1.0 / (k + rank)
    return ranked(
        union_of_legs(lexical, vector), {i: min(1.0, s / best) for i, s in scores.items()}
    )
