"""Salience: among relevant memories, prefer those said often and used often.

The Python MCP memory server ranks by semantic score, reinforcement, time
and access. Here, with ``[search.salience] enabled = true``:

* **reinforcement** is how often a statement was logged: `log` counts a
  repeat on the line itself (``- prefers oolong tea (×3)``), so a chunk's
  count is the highest on its lines;
* **access** is how often the chunk was among the hits a reader saw
  (``chunks.access_count``, counted by the engine after each search);
* **time** is temporal decay (``[search.decay]``), applied before this.

They raise a hit's score towards 1 without passing it:
``score + (1 - score) · (1 - 1/s)`` with
``s = 1 + reinforcement · ln(count) + access · ln(1 + accesses)``, so a
note logged once and never shown keeps its score, the order among equally
salient notes is the relevance order, and salience never lets anything past
``min_score`` (it runs after the threshold, like decay). Off by default:
LoCoMo has no repeats or history to measure it on, and counting accesses
feeds back into what is shown next.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import replace
from typing import Final

from openmemoryd.search.candidate import Candidate
from openmemoryd.text.counts import COUNT_SUFFIX

__all__ = ["apply_salience", "reinforcement"]

_COUNT: Final = re.compile(COUNT_SUFFIX, re.MULTILINE)


def reinforcement(text: str) -> int:
    """The highest ``(×N)`` count on *text*'s lines; 1 when none."""
    return max((int(n) for n in _COUNT.findall(text)), default=1)


def apply_salience(
    candidates: Sequence[Candidate], *, reinforcement_weight: float, access_weight: float
) -> list[Candidate]:
    """*candidates* with their scores raised by salience, best first."""
    raised = []
    for c in candidates:
        s = 1.0 + reinforcement_weight * math.log(reinforcement(c.text))
        s += access_weight * math.log1p(c.access_count)
        kept = 1.0 / s  # share of the distance to 1 the score keeps
        raised.append(replace(c, score=1.0 - (1.0 - c.score) * kept, salience=kept))
    return sorted(raised, key=lambda c: -c.score)
