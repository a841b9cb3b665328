"""A candidate's evidence: what ``min_score`` judges it by.

A search returns what has evidence of answering the query, and nothing when
nothing has (a query about what no note is about gets an empty reply, with
how close the nearest came). The evidence is the stronger of the two legs'
scores, each discounted where it is known to mislead: a keyword match of a
word shared by chance, a vector score the model gives every text.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from openmemoryd.search.candidate import Candidate
from openmemoryd.search.snippet import holds_every, terms_in
from openmemoryd.search.vector import VectorQuery

__all__ = ["relaxed_matches", "strongest"]


def strongest(
    candidate: Candidate,
    vector: VectorQuery | None = None,
    words: Sequence[str] = (),
    beside_tails: Sequence[str] = (),
    parts: Sequence[Sequence[str]] = (),
) -> float:
    """The candidate's best evidence: its higher leg score (or its score).

    The vector score counts as `VectorQuery.evidence` makes it: its margin
    over the query's baseline where the model is calibrated for that. The
    keyword score counts unless the chunk holds only some of the query's
    *words* and the model finds it no closer to the query than text about
    nothing in particular (vector evidence 0): one word shared by chance
    ("history" of the Byzantine empire, in a note on the history of GPS
    tracks) scores high in a small workspace, where BM25 finds every word
    rare, and is no evidence. A chunk holding every word (a name, an error
    code) counts whatever the model thinks of it, as does one holding every
    word of one script of a query written in several (*parts*,
    `text.terms.words_by_script`): the names a Chinese question keeps in
    Latin letters, asked of a note in English.

    *beside_tails* are the query's terms other than the letters its
    apostrophes left (the "s" of "Fermat's"), when it has such letters: a
    keyword match holding none of them matched only those letters, which
    half the notes hold ("Biscuit's jab"); it is no evidence at all, and
    the vector score alone decides.
    """
    vector_score = candidate.vector_score
    text_score = candidate.text_score
    if text_score and beside_tails and not terms_in(candidate.text, beside_tails):
        text_score = 0.0
    if vector_score is not None and vector is not None:
        vector_score = vector.evidence(vector_score, candidate.text)
        if (
            text_score
            and vector_score <= 0.0
            and not holds_every(candidate.text, words)
            and not any(holds_every(candidate.text, part) for part in parts)
        ):
            text_score = 0.0
    legs = [s for s in (vector_score, text_score) if s is not None]
    return max(legs) if legs else candidate.score


def relaxed_matches(
    merged: list[Candidate],
    words: list[str],
    evidence: Callable[[Candidate], float],
    *,
    everything: bool,
) -> list[Candidate]:
    """What a default search returns when nothing reaches ``min_score``."""
    if everything:
        return [c for c in merged if c.text_score is not None or evidence(c) > 0.0]
    if not words:
        return []
    return [c for c in merged if c.text_score is not None and holds_every(c.text, words)]
