"""Calibrated fusion: one relevance estimate from everything both legs know.

Weighted fusion adds a BM25 score and a cosine score as if they were on one
scale; they are not. BM25 depends on the query's length and on how rare its
words are in this workspace, and a small embedding model puts related and
unrelated texts within a few hundredths of each other. On LoCoMo the vector
leg alone found the evidence for 78% of the questions, yet adding it to BM25
moved recall by one point. What carries the signal is where a chunk stands
*relative to the other candidates of the same query*, which no fixed scale
captures. So each candidate (the union of both legs' pools) is described by:

* ``lexical_rr``: 1 / its rank in the keyword leg (0 when the leg missed it);
* ``vector_gap``: its rescaled vector score minus the best one of the query
  (0 for the nearest chunk, negative below). Candidates found only by the
  keyword leg are scored too: their vectors are read from the index, so a
  keyword hit the model finds unrelated is told apart from one it likes;
* ``vector_rr``: 1 / its rank in the vector leg (0 when outside the pool).
  These two read a chunk in another script than the query's whose match
  counts as evidence as closer by the query's distance to that script, as
  min_score's evidence does (`embed.reference.Baseline.gap`): in a
  workspace of two languages a note in the question's own would otherwise
  outrank, by its language alone, the note in the other that answers it;
* ``coverage``: the share of the query's terms found on its best line: the
  question's words together on one line beat the same words spread over a
  chunk;
* ``date_match``: 1 when the query names a date (see `dates`) and the chunk's
  file name or heading is that day, month or year;
* ``neighbour``: the highest estimate, from the features above, of another
  candidate of the same file next to this one (the chunk before or after
  it, or one overlapping it, at most one line apart); 0 when there is none. What people
  write about one thing runs on across a chunk boundary: a conversation
  stays on its topic for a while, a section's notes continue one another.
  So a chunk next to a strong match is likelier to hold the rest of the
  answer than an equally scored chunk elsewhere;
* ``day_best``: 1 for the candidate of each file of a day the query names
  (a day, a week, a third of a month; not a month or a year) whose estimate
  from the features above is the highest of that file's candidates
  (`SLACK_DAY_BEST` for a file of the slack days after it). "How
  did the talk go on 14 May?" is about that day's note, yet with its date
  read, what is left of the question is a word another day's note may hold
  and the day's note may not; lifting *every* chunk of the day instead fills
  the first ten with one long session and pushes out the evidence of the
  days around it (docs/recall.md, "The best chunk of a day the question
  names").

and the score is the logistic ``σ(b + Σ wᵢ·fᵢ)``, an estimate in (0, 1) of
how likely the chunk holds what was asked. The weights started from a
logistic fit on LoCoMo (1,535 questions, evidence turns as labels); fitted
on nine of its ten conversations, that fit ranks the tenth as well as when
fitted on all ten, so the signals are not memorised. The values below are
rounded from it and picked among a few variants by recall on LoCoMo itself
(docs/recall.md says how much that last step is worth); `bench/locomo.py`
measures this fusion against weighted and RRF fusion, with ablations. The
``neighbour`` weight was added later, on a plateau: any weight from 1 to 4
gained the same on LoCoMo.

The first three candidates by that estimate then get a second one, which
orders them: the same features under weights fitted to put a chunk that
answers *first* (a listwise fit: the chance that the answer is this one of
the query's candidates), where the weights above were fitted to tell each
chunk that answers from the many that do not. Among the few best
candidates, which all rank high in a leg, what tells the answer apart is
more often the query's words together on one line and a strong neighbour,
less often a rank: the second weighting puts less on the ranks and the
vector gap and more on coverage. Rescaled by a logistic fit on the
first three of each question, it is an estimate on the same scale as the
first, and every candidate is ordered by the last estimate it got, so a
hit's score still never rises down the list. Through the daemon on
LoCoMo the first hit holds evidence for 0.606 of the questions instead of
0.583 (weights fitted on nine conversations order the tenth as well), and
no other figure moves; on notes in Russian, Chinese and English, which the
fit never saw, 0.683, 0.817 and 0.700 instead of 0.650, 0.800 and 0.633.
``search.head_estimate = false`` leaves it out.

The score orders results. ``min_score`` still applies to a candidate's
strongest raw evidence (`evidence.strongest`), so a query that matches
nothing well returns nothing, however the candidates rank among themselves.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from openmemoryd.search.candidate import Candidate
from openmemoryd.search.fusion import Found, first_by_id, ranked, union_of_legs
from openmemoryd.search.snippet import best_line

__all__ = [
    "BIAS",
    "HEAD_BIAS",
    "HEAD_SIZE",
    "HEAD_WEIGHTS",
    "NEIGHBOUR_LINES",
    "WEIGHTS",
    "Described",
    "calibrated_score",
    "coverage",
    "describe",
    "fuse_calibrated",
    "neighbour_best",
]

# Logistic weights per feature and the bias (see the module docstring).
WEIGHTS: Final[Mapping[str, float]] = {
    "lexical_rr": 3.0,
    "vector_gap": 4.0,
    "vector_rr": 1.3,
    "coverage": 1.8,
    "date_match": 2.0,
    "neighbour": 2.0,
    # Picked on LoCoMo's 135 questions naming a day, from a plateau (any
    # weight from 1 to 4 gave the same), in both estimates; too few for a
    # fit to weigh (the listwise refit gives the second estimate's 0.40).
    "day_best": 1.5,
}
BIAS: Final = -4.5
# The second estimate of the first `HEAD_SIZE` candidates (module docstring):
# the listwise fit's weights, scaled and biased by the logistic fit that
# makes them an estimate, rounded (`python -m bench.fusion_fit` refits them).
# Candidates past the third did not change the first hit more often on
# LoCoMo (two: 0.605, four: the same as three).
HEAD_SIZE: Final = 3
HEAD_WEIGHTS: Final[Mapping[str, float]] = {
    "lexical_rr": 1.6,
    "vector_gap": 2.8,
    "vector_rr": 0.9,
    "coverage": 2.5,
    "date_match": 1.8,
    "neighbour": 2.1,
    "day_best": 1.5,
}
HEAD_BIAS: Final = -4.0
# ``day_best`` of a file in the slack after a named day, not of the day
# itself: with a note every day, "on Wednesday" is likelier Wednesday's
# note than Thursday's, which tie on every other feature. At 0.8 Thursday's
# still came first for some weekdays; LoCoMo's sessions lie days apart, and
# one question there moves for it (to second from fourth).
SLACK_DAY_BEST: Final = 0.5
# Candidates of one file are neighbours when one starts at most this many
# lines after the other ends: a blank line may separate the chunk that ends
# a section from the one that opens the next with its heading.
NEIGHBOUR_LINES: Final = 2


def calibrated_score(features: Mapping[str, float]) -> float:
    """σ(bias + Σ weight·feature), in (0, 1)."""
    return _sigmoid(_logit(features))


def _logit(
    features: Mapping[str, float],
    weights: Mapping[str, float] = WEIGHTS,
    bias: float = BIAS,
) -> float:
    return bias + sum(weights[name] * value for name, value in features.items())


def _sigmoid(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-z))


def neighbour_best(
    spans: Mapping[int, tuple[str, int, int]], estimate: Mapping[int, float]
) -> dict[int, float]:
    """For each candidate, the best *estimate* among its neighbours (0 if none).

    *spans* maps a candidate to its (path, first line, last line). Sorted by
    first line, a candidate's neighbours after it are the ones starting no
    more than `NEIGHBOUR_LINES` after its last line, so one sweep per file
    finds every pair.
    """
    best = dict.fromkeys(spans, 0.0)
    by_path: dict[str, list[tuple[int, int, int]]] = {}
    for chunk_id, (path, start, end) in spans.items():
        by_path.setdefault(path, []).append((start, end, chunk_id))
    for ordered in by_path.values():
        ordered.sort()
        for i, (_, end, chunk_id) in enumerate(ordered):
            for later_start, _, other in ordered[i + 1 :]:
                if later_start > end + NEIGHBOUR_LINES:
                    break
                best[chunk_id] = max(best[chunk_id], estimate[other])
                best[other] = max(best[other], estimate[chunk_id])
    return best


def coverage(text: str, terms: Sequence[str]) -> float:
    """The largest share of *terms* that one line of *text* holds
    (`snippet.best_line`, which tokenises only the lines that can win)."""
    if not terms:
        return 0.0
    return best_line(text.split("\n"), terms)[1] / len(terms)


@dataclass(frozen=True, slots=True)
class Described:
    """The candidates of both legs as calibrated fusion sees them: each one
    (`found`), its features (the five, and ``neighbour`` where neighbours
    count) and the logit of its first estimate, the neighbour's term
    included."""

    found: dict[int, Found]
    features: dict[int, dict[str, float]]
    logits: dict[int, float]


def describe(
    lexical: Sequence[Candidate],
    nearest: Sequence[Candidate],
    *,
    vector_scores: Mapping[int, float],
    terms: Sequence[str],
    date_match: Callable[[Candidate], bool] | None = None,
    neighbours: bool = True,
    vector_raise: Mapping[int, float] | None = None,
    named_day: Callable[[Candidate], bool] | None = None,
) -> Described:
    """The union of both legs with every candidate's features and first logit
    (the arguments are `fuse_calibrated`'s)."""
    lexical_rank = {i: r for r, i in enumerate(first_by_id(lexical), start=1)}
    found = union_of_legs(lexical, nearest)
    for chunk_id, entry in found.items():
        if entry.vector_score is None:
            entry.vector_score = vector_scores.get(chunk_id)
    raised = vector_raise or {}

    def seen(chunk_id: int, score: float | None) -> float | None:
        if score is None or chunk_id not in raised:
            return score
        return min(1.0, score + raised[chunk_id])

    vectors = {i: seen(i, e.vector_score) for i, e in found.items()}
    in_leg = list(first_by_id(nearest))
    if raised:  # the leg's own order is by the plain cosine
        in_leg.sort(key=lambda i: -(vectors[i] or 0.0))
    vector_rank = {i: r for r, i in enumerate(in_leg, start=1)}

    known = [v for v in vectors.values() if v is not None]
    top = max(known) if known else 0.0
    floor = min(known) if known else 0.0

    def features(chunk_id: int, entry: Found) -> dict[str, float]:
        vector = vectors[chunk_id]
        return {
            "lexical_rr": 1.0 / lexical_rank[chunk_id] if chunk_id in lexical_rank else 0.0,
            "vector_gap": (vector if vector is not None else floor) - top,
            "vector_rr": 1.0 / vector_rank[chunk_id] if chunk_id in vector_rank else 0.0,
            "coverage": coverage(entry.base.text, terms),
            "date_match": 1.0 if date_match is not None and date_match(entry.base) else 0.0,
        }

    described = {i: features(i, entry) for i, entry in found.items()}
    logits = {i: _logit(f) for i, f in described.items()}
    if neighbours:
        near = neighbour_best(
            {i: (e.base.path, e.base.start_line, e.base.end_line) for i, e in found.items()},
            {i: _sigmoid(z) for i, z in logits.items()},
        )
        for i, f in described.items():
            f["neighbour"] = near[i]
        weight = WEIGHTS["neighbour"]
        logits = {i: z + weight * near[i] for i, z in logits.items()}
    best_of_day = _best_of_each_file(found, described, logits) if named_day else set()
    for f in described.values():
        f["day_best"] = 0.0
    for i in best_of_day:  # the only logits the feature changes
        named = named_day is not None and named_day(found[i].base)
        described[i]["day_best"] = 1.0 if named else SLACK_DAY_BEST
        logits[i] += WEIGHTS["day_best"] * described[i]["day_best"]
    return Described(found, described, logits)


def _best_of_each_file(
    found: Mapping[int, Found],
    features: Mapping[int, Mapping[str, float]],
    logits: Mapping[int, float],
) -> set[int]:
    """The candidate with the highest *logits* of each file among those of a
    date the query names (``date_match``)."""
    best: dict[str, int] = {}
    for chunk_id, entry in found.items():
        if not features[chunk_id]["date_match"]:
            continue
        path = entry.base.path
        if path not in best or logits[chunk_id] > logits[best[path]]:
            best[path] = chunk_id
    return set(best.values())


def fuse_calibrated(
    lexical: Sequence[Candidate],
    nearest: Sequence[Candidate],
    *,
    vector_scores: Mapping[int, float],
    terms: Sequence[str],
    date_match: Callable[[Candidate], bool] | None = None,
    neighbours: bool = True,
    head: bool = True,
    observe: Callable[[Described], None] | None = None,
    vector_raise: Mapping[int, float] | None = None,
    named_day: Callable[[Candidate], bool] | None = None,
) -> list[Candidate]:
    """Union of both legs, each candidate scored by `calibrated_score`.

    *vector_scores* holds the rescaled vector score of every candidate the
    vector leg did not return (read from the index by the caller); a
    candidate missing from both has no vector yet and counts the lowest
    score seen. With *neighbours* false the ``neighbour`` feature is left
    out (`search.neighbours`); with *head* false the first candidates keep
    their first estimate (`search.head_estimate`). *observe* is shown the
    candidates with their features before they are scored (`bench.fusion_fit`
    fits the weights on them). *vector_raise* is what a candidate's vector
    score is read higher by for its ranking (a chunk in another script than
    the query's: `embed.reference.Baseline.gap`, rescaled); the candidates
    keep their own scores. *named_day* tells a candidate of a day the query
    names from one of the slack after it, when the query names days, not a
    month or a year (``day_best``); None when it names none. The union and
    the order are those of the other fusions (`fusion.union_of_legs`,
    `fusion.ranked`).
    """
    described = describe(
        lexical,
        nearest,
        vector_scores=vector_scores,
        terms=terms,
        date_match=date_match,
        neighbours=neighbours,
        vector_raise=vector_raise,
        named_day=named_day,
    )
    if observe is not None:
        observe(described)
    found = described.found
    merged = ranked(found, {i: _sigmoid(z) for i, z in described.logits.items()})
    if not head:
        return merged
    estimate = {c.id: c.score for c in merged}
    for candidate in merged[:HEAD_SIZE]:
        features = described.features[candidate.id]
        estimate[candidate.id] = _sigmoid(_logit(features, HEAD_WEIGHTS, HEAD_BIAS))
    return ranked(found, estimate)
