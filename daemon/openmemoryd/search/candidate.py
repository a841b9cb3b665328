"""A search candidate as it moves through the pipeline.

Each leg produces candidates with its own part score (`text_score` from BM25,
`vector_score` from cosine similarity, rescaled by the model's score floor);
fusion combines them into `score`; a reranker (where one applies) replaces `score` by
a blend with its own (`rerank_score`, see `rerank.stage`); decay multiplies
`score` by `decay`; salience (optional) raises it towards 1; MMR records the
rank it chose. The parts are kept so
``--explain`` can show why a result ranked where it did.
"""

from __future__ import annotations

from dataclasses import dataclass

from openmemoryd.store import ChunkRecord, InnerHeadings


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
    agent: str | None = None
    msg_time: float | None = None
    rerank_score: float | None = None
    access_count: int = 0  # times it was among the hits a reader saw
    salience: float = 1.0  # the share of the distance to 1 kept (`search.salience`)
    inner_headings: InnerHeadings = ()  # heading lines inside it, with their paths
    # What `min_score` judged it by (`evidence.strongest`), once it was
    # chosen: not always a leg's score, since a vector score counts by its
    # margin over the query's baseline, raised for a note in another script.
    evidence: float | None = None

    @classmethod
    def found_by_keyword(cls, chunk: ChunkRecord, score: float) -> Candidate:
        return cls._of(chunk, text_score=score, vector_score=None, score=score)

    @classmethod
    def found_by_vector(cls, chunk: ChunkRecord, score: float) -> Candidate:
        return cls._of(chunk, text_score=None, vector_score=score, score=score)

    @classmethod
    def found_by_date(cls, chunk: ChunkRecord) -> Candidate:
        """A chunk about a day the query asked for (`search.timeline`)."""
        return cls._of(chunk, text_score=None, vector_score=None, score=1.0)

    @classmethod
    def _of(
        cls,
        chunk: ChunkRecord,
        *,
        text_score: float | None,
        vector_score: float | None,
        score: float,
    ) -> Candidate:
        return cls(
            id=chunk.id,
            path=chunk.path,
            source=chunk.source,
            start_line=chunk.start_line,
            end_line=chunk.end_line,
            heading=chunk.heading,
            text=chunk.text,
            text_score=text_score,
            vector_score=vector_score,
            score=score,
            agent=chunk.agent,
            msg_time=chunk.msg_time,
            access_count=chunk.access_count,
            inner_headings=chunk.inner_headings,
        )
