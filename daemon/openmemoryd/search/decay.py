"""Temporal decay: prefer recent notes among equally relevant ones.

The multiplier is OpenClaw's ``temporal-decay.ts``: ``exp(-ln2/h · age)``
with ``h`` the half-life in days (at least 1) and age clamped at 0, so a
note dated in the future counts as today's. What a candidate's age is:

* a daily file ``memory/YYYY-MM-DD.md`` of the ``memory`` source is as old
  as the date in its name (00:00 UTC), not its mtime: editing last year's
  note does not make it recent;
* every other ``memory`` file (``MEMORY.md``, ``USER.md``, ``PROJECT.md``,
  undated ``memory/...`` notes, extra paths) is evergreen and never decays:
  these hold facts meant to stay true;
* other sources (session transcripts) are as old as their mtime; unknown
  mtime means no decay rather than a guess.

Unlike OpenClaw, the multiplier is floored: the decayed score is
``score · max(floor, multiplier)``. OpenClaw's pure multiplier drives a
year-old note to ~0, below any ``min_score``, which on LoCoMo cut recall
from 0.61 to 0.23 (docs/recall.md); with a floor decay re-orders
relevant results and never removes more than ``1 - floor`` of a score.

Invariants (for scores >= 0): decay never raises a score, never lowers it
below ``score · floor``, and `Candidate.decay` is the factor applied, so
``score == fused score · decay``. Nothing is cached between calls: file
times change while the daemon runs.
"""

from __future__ import annotations

import math
from calendar import timegm
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Final

from openmemoryd.search.candidate import Candidate
from openmemoryd.workspace.layout import daily_date

SECONDS_PER_DAY: Final = 86400
MEMORY_SOURCE: Final = "memory"


def decay_multiplier(age_days: float, half_life_days: float) -> float:
    """``exp(-ln2/half_life · age)``: 0.5 at one half-life, 1 for age <= 0.

    A half-life under one day would make yesterday's notes vanish, so it is
    raised to 1 (OpenClaw does the same).
    """
    half_life = max(1.0, half_life_days)
    age = max(0.0, age_days)
    return math.exp(-math.log(2) / half_life * age)


def candidate_timestamp(
    c: Candidate, *, mtime_of: Callable[[Candidate], float | None]
) -> float | None:
    """When *c* was written (Unix seconds), or None if it must not decay."""
    if c.source == MEMORY_SOURCE:
        day = daily_date(c.path)
        if day is None:
            return None
        return float(timegm(day.timetuple()))
    mtime = mtime_of(c)
    if mtime is None or not math.isfinite(mtime):
        return None
    return mtime


def apply_decay(
    candidates: Sequence[Candidate],
    *,
    now: float,
    half_life_days: float,
    mtime_of: Callable[[Candidate], float | None],
    floor: float,
) -> list[Candidate]:
    """Candidates with decayed scores, best first.

    *floor* is clamped to [0, 1]; 0 reproduces OpenClaw exactly. The sort is
    stable, so candidates whose decayed scores tie keep the fusion order.
    *mtime_of* is asked at most once per (source, path) in this call.
    """
    floor = min(1.0, floor) if floor > 0.0 else 0.0
    timestamps: dict[tuple[str, str], float | None] = {}
    decayed: list[Candidate] = []
    for candidate in candidates:
        key = (candidate.source, candidate.path)
        if key not in timestamps:
            timestamps[key] = candidate_timestamp(candidate, mtime_of=mtime_of)
        written = timestamps[key]
        factor = 1.0
        if written is not None:
            age_days = (now - written) / SECONDS_PER_DAY
            factor = max(floor, decay_multiplier(age_days, half_life_days))
        decayed.append(replace(candidate, score=candidate.score * factor, decay=factor))
    decayed.sort(key=lambda c: -c.score)
    return decayed
