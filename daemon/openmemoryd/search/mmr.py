"""Maximal marginal relevance: fewer near-duplicates at the top of the list.

OpenClaw's ``mmr.ts``: greedily pick the candidate maximising
``λ·relevance − (1−λ)·max similarity to the ones already picked``, where
relevance is the min-max normalised score and similarity is the Jaccard index
of token sets. Tokens come from `token_set` (lowercased words, CJK unigrams
and bigrams), so Chinese notes that repeat each other are recognised as such.

Invariants:

* the output is a new list holding every input candidate exactly once, in
  MMR order, each with ``mmr_rank`` set (1-based); scores are not changed,
  so ``min_score`` and ``--explain`` still speak about relevance;
* λ is clamped to [0, 1]; λ = 1 is a plain sort by score;
* ties go to the higher score, then the lower id, so the order is
  deterministic.

Cost: the greedy loop is quadratic in the number of candidates, so each
round only compares the remaining candidates with the one picked last and
keeps a running maximum per candidate (the plain loop would compare with
every pick again). Token sets are computed once per distinct text and
reduced to bit masks over the tokens that two or more candidates share (a
token only one candidate has never adds to an intersection), so one
similarity is an AND and a popcount instead of a set intersection: for 200
chunk-sized texts, tokenising dominates what is left.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

from openmemoryd.search.candidate import Candidate
from openmemoryd.text.terms import token_set


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """|a ∩ b| / |a ∪ b|; two empty texts count as identical, as in OpenClaw."""
    if not a and not b:
        return 1.0
    if not a or not b:
        return 0.0
    inter = len(a & b)
    return inter / (len(a) + len(b) - inter)


def _bit_masks(sets: Sequence[frozenset[str]]) -> tuple[list[int], list[int]]:
    """Each set as a bit mask over the tokens shared by two or more sets, and
    each set's size: ``|a ∩ b|`` is then ``(mask_a & mask_b).bit_count()``,
    exactly as for the sets themselves, in a fraction of the time."""
    seen: set[str] = set()
    shared: set[str] = set()
    for s in sets:
        shared |= seen & s
        seen |= s
    bit_value = {token: 1 << bit for bit, token in enumerate(shared)}
    masks = [sum(map(bit_value.__getitem__, s & shared)) for s in sets]
    return masks, [len(s) for s in sets]


def _clamp01(value: float) -> float:
    # NaN compares false with everything; treat it as 0 (pure diversity).
    if not value > 0.0:
        return 0.0
    return min(1.0, value)


def mmr_rerank(candidates: Sequence[Candidate], *, lambda_: float) -> list[Candidate]:
    """*candidates* in MMR order with ``mmr_rank`` set; see the module docstring."""
    lam = _clamp01(lambda_)
    if lam >= 1.0 or len(candidates) <= 1:
        ordered = sorted(candidates, key=lambda c: (-c.score, c.id))
        return [replace(c, mmr_rank=rank) for rank, c in enumerate(ordered, start=1)]

    scores = [c.score for c in candidates]
    low, high = min(scores), max(scores)
    spread = high - low
    relevance = [(s - low) / spread if spread > 0 else 1.0 for s in scores]

    by_text: dict[str, frozenset[str]] = {}
    for c in candidates:
        if c.text not in by_text:  # overlapping chunks often repeat a text
            by_text[c.text] = token_set(c.text)
    sets = [by_text[c.text] for c in candidates]
    order = _greedy(lam, relevance, scores, [c.id for c in candidates], *_bit_masks(sets))
    return [replace(candidates[i], mmr_rank=rank) for rank, i in enumerate(order, start=1)]


def _greedy(
    lam: float,
    relevance: Sequence[float],
    scores: Sequence[float],
    ids: Sequence[int],
    masks: Sequence[int],
    sizes: Sequence[int],
) -> list[int]:
    """Indices in MMR order; ``max_sim[i]`` is i's similarity to its nearest pick."""
    penalty = 1.0 - lam
    max_sim = [0.0] * len(relevance)
    remaining = list(range(len(relevance)))
    picked: list[int] = []
    while remaining:
        best = -1
        best_value = -math.inf
        last = picked[-1] if picked else -1
        for i in remaining:
            if last >= 0:
                inter = (masks[i] & masks[last]).bit_count()
                union = sizes[i] + sizes[last] - inter
                sim = inter / union if union else 1.0  # two empty texts are identical
                if sim > max_sim[i]:
                    max_sim[i] = sim
            value = lam * relevance[i] - penalty * max_sim[i]
            if value > best_value or (value == best_value and _before(i, best, scores, ids)):
                best, best_value = i, value
        picked.append(best)
        remaining.remove(best)
    return picked


def _before(i: int, j: int, scores: Sequence[float], ids: Sequence[int]) -> bool:
    """The tie-break between equal MMR values: higher score, then lower id."""
    if scores[i] != scores[j]:
        return scores[i] > scores[j]
    return (ids[i], i) < (ids[j], j)
