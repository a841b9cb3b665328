"""The vector leg: nearest chunks by cosine similarity in sqlite-vec.

Cosine similarity is rescaled between the embedder's score floor and
ceiling, ``clamp((cos - floor) / (ceiling - floor), 0, 1)``, because models
differ in where texts land (e5: unrelated near 0.75, paraphrases near 0.95;
OpenAI: near 0 and 0.7). After rescaling, 0 means "unrelated" and
``min_score`` means the same whichever model is configured. The map is
monotonic, so it never changes the vector leg's own order.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import apsw

from openmemoryd.embed.reference import Baseline
from openmemoryd.search.candidate import Candidate
from openmemoryd.store import chunk_records
from openmemoryd.store.quantised import quantised_knn, size_hint
from openmemoryd.store.vectors import VecTable, knn


@dataclass(frozen=True, slots=True)
class VectorQuery:
    """An embedded query and the table of vectors from the same model."""

    table: VecTable
    vector: bytes
    score_floor: float = 0.0
    score_ceiling: float = 1.0
    # The query's cosine with text about nothing in particular (one figure,
    # or a `Baseline` that knows each script's), and the margin above it
    # that counts fully (embed.reference); None: uncalibrated.
    null_cosine: float | Baseline | None = None
    evidence_width: float | None = None

    def evidence(self, score: float, text: str = "") -> float:
        """A rescaled vector score of a chunk of *text* as evidence of
        relevance, in [0, 1].

        Without a calibrated baseline this is the score itself. With one, it
        is the cosine's margin over the query's baseline divided by the
        evidence width, never more than the score: a query near the centre
        of the model's space (nonsense, or about nothing the memory holds)
        gets no credit for the cosine every text has with it. A chunk in
        another script than the query's has its cosine raised by the
        query's distance to that script (`Baseline.gap`) first, for both:
        an English question about a Chinese note is judged as if it had
        been asked in Chinese.
        """
        if self.null_cosine is None or not self.evidence_width:
            return score
        null = self.null_cosine
        cosine = self.score_floor + score * (self.score_ceiling - self.score_floor)
        if isinstance(null, Baseline):
            gap, null = null.gap(text), null.overall
            if gap:
                cosine += gap
                score = rescale(cosine, self.score_floor, self.score_ceiling)
        margin = (cosine - null) / self.evidence_width
        return min(score, max(0.0, min(1.0, margin)))

    def raises(
        self, candidates: Iterable[Candidate], scores: Mapping[int, float]
    ) -> dict[int, float]:
        """What the ranking reads each candidate's rescaled vector score higher
        by (`calibrated.describe`): a chunk in another script than the query's
        whose match counts as evidence, its cosine raised by the query's
        distance to that script beating the query's baseline, is ranked at
        the raised cosine too. Below the bar it keeps its own: there the raise
        would only lift notes in another language over the query's own at
        the model's noise level ("mountain trip" to a note on oolong tea).
        *scores* holds the vector scores of candidates found by keywords alone.
        """
        null, width = self.null_cosine, self.score_ceiling - self.score_floor
        if not isinstance(null, Baseline) or width <= 0:
            return {}
        raised: dict[int, float] = {}
        for candidate in candidates:
            score = candidate.vector_score
            if score is None:
                score = scores.get(candidate.id)
            if score is None:
                continue
            gap = null.gap(candidate.text)
            if gap and self.evidence(score, candidate.text) > 0.0:
                raised[candidate.id] = gap / width
        return raised


def rescale(cosine: float, floor: float, ceiling: float = 1.0) -> float:
    """Map a cosine similarity onto [0, 1]: *floor* and below → 0, *ceiling* and above → 1."""
    if ceiling <= floor:
        return 1.0 if cosine >= ceiling else 0.0
    return min(1.0, max(0.0, (cosine - floor) / (ceiling - floor)))


def vector_leg(
    conn: apsw.Connection,
    query: VectorQuery,
    limit: int,
    sources: Sequence[str] | None,
    agent: str | None = None,
    quantised_above: int | None = None,
) -> list[Candidate]:
    """The *limit* nearest chunks, best first.

    An agent filter is applied after the nearest-neighbour scan (vec tables
    index the source, not the agent), so it asks for more neighbours first.
    From *quantised_above* vectors on, the scan is the quantised one with
    exact rescoring (`store.quantised`); None: always the exact float scan.
    """
    wanted = limit * 4 if agent else limit
    neighbours = None
    if quantised_above is not None and size_hint(conn, query.table.table) >= quantised_above:
        neighbours = quantised_knn(conn, query.table.table, query.vector, wanted, sources)
    if neighbours is None:
        neighbours = knn(conn, query.table, query.vector, wanted, sources)
    records = chunk_records(conn, [chunk_id for chunk_id, _ in neighbours])
    candidates = []
    for chunk_id, distance in neighbours:
        record = records.get(chunk_id)
        if record is None or (agent is not None and record.agent != agent):
            continue  # a vector whose chunk is gone, or another agent's
        score = rescale(1.0 - distance, query.score_floor, query.score_ceiling)
        candidates.append(Candidate.found_by_vector(record, score))
        if len(candidates) == limit:
            break
    return candidates
