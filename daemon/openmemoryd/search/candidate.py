"""A search candidate as it moves through the pipeline.

Each leg produces candidates with its own part score (`text_score` from BM25,
`vector_score` from cosine similarity, rescaled by the model's score floor);
fusion combines them into `score`; decay multiplies `score` by `decay`; MMR
records the rank it chose. The parts are kept so ``--explain`` can show why a
result ranked where it did.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Candidate:
    id: int
    path: str
    source: str
    start_line: int
    end_line: int
    heading: str
    text: str
    text_score: float | None
    vector_score: float | None
    score: float
    decay: float = 1.0
    mmr_rank: int | None = None
