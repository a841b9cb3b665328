"""The rerank stage of a search: score the best candidates, blend, re-order.

Where it sits: after fusion and ``min_score`` (and the honest-empty rules),
before decay, MMR and the limit (`pipeline`). So:

* only candidates that already count as evidence are sent: a reranker can
  re-order hits but never hide one or surface one below the bar, and a
  search that finds nothing costs no rerank call at all;
* the first ``top_n`` of them (in fused order) are sent, which bounds the
  cost of a search whatever its limit;
* nothing is sent when there is nothing to re-order (one candidate), nor,
  with ``auto`` (the default), when the search has no calibrated estimate
  (another fusion, or no vector leg: a keyword-only daemon is not made to
  run a model), nor,
  with ``confident_at`` below 1 and calibrated fusion, when the first
  candidate's estimate (the fusion's probability that it holds what was
  asked) is at least ``confident_at``. On LoCoMo the estimate is high
  where the fused first hit is right: at ``confident_at = 0.45`` (the local
  model's default) 44 % of searches are reranked and the first hit holds
  evidence more often than when all are (docs/recall.md, "Reranking");
* nor when the caller holds the search back (``held_back``: the engine
  does for the local model while other searches run, `RerankSlot`).

`top_n`, `weight` and `confident_at` left unset take the provider's
defaults (`RerankSettings.plan`).

A query naming a code (``zqhand009``, ``E1234``: a letter, then a digit)
is answered first by the best candidate holding it, word for word, after
the blend (`naming_first`): the model reads a code as any word.

The blended score, which becomes the hit's ``score`` and orders the hits, is
``weight · r + (1 − weight) · f``, where

* ``r`` is the reranker's score, taken as is when every score of the answer
  is within [0, 1] (Cohere, Jina, Voyage, TEI answer probabilities) and
  passed through the logistic function otherwise (llama.cpp answers raw
  logits), so one weight means the same whatever the service;
* ``f`` is the fused score min-max scaled over the candidates (1 for the
  best, 0 for the worst), because the fusions' scales differ wildly (RRF
  scores are about 0.03, calibrated ones up to 1).

A candidate beyond ``top_n`` was not scored; it counts the lowest ``r`` of
the ones that were, so (its ``f`` being no higher than theirs) it stays
below every scored one and keeps its fused order among the rest.

Failure never fails the search: a timeout, an HTTP error, an answer that is
not JSON or not the expected shape leaves the fused order unchanged, logs a
warning, and the `RerankNote` says why (the engine shows the last one in
status). A reranker that does not apply to the query (`RerankSkipped`: the
local model and a question in another script than English) leaves the
fused order too, and its note says why, but that is no failure: debug log
only, nothing in status.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Final, Literal

from openmemoryd.config import RerankSettings
from openmemoryd.search.candidate import Candidate
from openmemoryd.search.rerank.base import (
    RerankBusy,
    Reranker,
    RerankError,
    RerankSkipped,
    logger,
)
from openmemoryd.text.terms import query_terms, token_set

# What became of one search at the stage, counted for `status`.
RerankOutcome = Literal["reranked", "confident", "held_back", "not_applicable", "failed"]


@dataclass(frozen=True, slots=True)
class RerankNote:
    """What the rerank stage did for one search (for logs, status, explain)."""

    provider: str
    model: str
    sent: int
    weight: float
    took_ms: float = 0.0
    error: str | None = None  # why the candidates kept their fused order
    outcome: RerankOutcome = "reranked"

    @property
    def applied(self) -> bool:
        return self.error is None

    @property
    def skipped(self) -> bool:
        """The reranker did not apply (`error` says why); not a failure."""
        return self.outcome not in ("reranked", "failed")

    def __str__(self) -> str:
        who = f"{self.provider} {self.model}".strip()
        if self.error is not None:
            verb = "not applied" if self.skipped else "skipped"
            return f"reranking {verb} ({who}): {self.error}"
        return f"reranked {self.sent} candidates with {who} in {self.took_ms:.0f} ms"


async def rerank_candidates(
    reranker: Reranker,
    query: str,
    candidates: Sequence[Candidate],
    settings: RerankSettings,
    *,
    calibrated: bool = False,
    held_back: str | None = None,
) -> tuple[list[Candidate], RerankNote]:
    """*candidates* (in fused order) re-ordered by the blended score, and a note.

    *calibrated*: their scores are calibrated fusion's estimates, which
    ``confident_at`` is compared with. *held_back*: why the caller would not
    have this search scored now (the local model while other searches run),
    if it would have been sent. On any failure the candidates come back
    unchanged, with the reason in the note and a warning in the log.
    """
    plan = settings.plan()
    window = list(candidates[: plan.top_n])
    started = time.perf_counter()

    def note(outcome: RerankOutcome, error: str | None = None) -> RerankNote:
        took = round((time.perf_counter() - started) * 1000, 3)
        sent = len(window) if outcome in ("reranked", "failed") else 0
        return RerankNote(reranker.name, reranker.model, sent, plan.weight, took, error, outcome)

    if len(window) < 2:
        why = "one candidate: nothing to re-order" if window else "no candidates"
        return list(candidates), note("not_applicable", why)
    if settings.provider == "auto" and not calibrated:
        why = "no calibrated estimate to tell whether the fusion is unsure (auto)"
        return list(candidates), note("not_applicable", why)
    first = window[0].score
    if calibrated and plan.confident_at < 1.0 and first >= plan.confident_at:
        why = f"the first candidate's estimate {first:.3f} is at least {plan.confident_at}"
        logger.debug("not reranked: %s", why)
        return list(candidates), note("confident", why)
    if held_back is not None:
        logger.debug("not reranked: %s", held_back)
        return list(candidates), note("held_back", held_back)
    try:
        scores = await reranker.rerank(query, [c.text for c in window])
        if len(scores) != len(window):
            raise RerankError(f"{len(scores)} scores for {len(window)} documents", retryable=False)
    except RerankSkipped as exc:
        logger.debug("%s; keeping the fused order", exc)
        outcome: RerankOutcome = "held_back" if isinstance(exc, RerankBusy) else "not_applicable"
        return list(candidates), note(outcome, str(exc))
    except RerankError as exc:
        logger.warning("%s; keeping the fused order", exc)
        return list(candidates), note("failed", str(exc))
    except Exception as exc:  # a bug here must not fail the search either
        logger.warning("reranking failed; keeping the fused order", exc_info=True)
        return list(candidates), note("failed", f"{type(exc).__name__}: {exc}")
    done = note("reranked")
    logger.debug("%s", done)
    return naming_first(blend(candidates, scores, plan.weight), codes_in(query)), done


# A term that names a thing by a code: a letter, then a digit somewhere after
# it (zqhand009, E1234, ipv6, B2). Ordinals and amounts start with their
# digits (18th, 10k, 3pm) and are not codes.
_CODE: Final = re.compile(r"[^\W\d_].*\d")


def codes_in(query: str) -> list[str]:
    """The terms of *query* that are codes (`_CODE`): a ticket, a host, an
    error number, a version."""
    return [term for term in query_terms(query) if _CODE.match(term)]


def naming_first(candidates: list[Candidate], codes: Sequence[str]) -> list[Candidate]:
    """*candidates* with the best of those holding every one of *codes*,
    word for word, first (at the first's score at least), unless the first
    already holds them; the rest as they were.

    A cross-encoder trained on web questions reads a code as a word like
    any other and ``zqhand009`` as near enough ``zqhand010``: asked for the
    one note holding ``zqhand009``, the local model put four notes on its
    neighbours first (0.997 against 0.83) and a search for three hits lost
    it. A code is what the keyword leg is exact about, so a note naming it
    answers first. Only first: a question naming a code and something more
    ("is either merchant double-charged in February the ledger v2 pilot?")
    needs notes that do not name it too, which the model places (moving
    every note naming ``v2`` ahead of them took one such question's second
    note out of its top ten). Word for word: the stems a keyword match
    allows (`search.snippet.terms_in`) would take ``zqhand010`` for
    ``zqhand009``.
    """
    if not codes or not candidates:
        return candidates

    def names(candidate: Candidate) -> bool:
        return token_set(candidate.text).issuperset(codes)

    if names(candidates[0]):
        return candidates
    best = next((c for c in candidates if names(c)), None)
    if best is None:
        return candidates
    lifted = replace(best, score=max(best.score, candidates[0].score))
    return [lifted, *(c for c in candidates if c.id != best.id)]


def blend(
    candidates: Sequence[Candidate], scores: Sequence[float], weight: float
) -> list[Candidate]:
    """Candidates re-ordered by ``weight·r + (1−weight)·f`` (module docstring).

    *scores* belong to the first ``len(scores)`` candidates; each candidate
    keeps its normalised rerank score in `Candidate.rerank_score` (None when
    it was not sent).
    """
    if not candidates:
        return []
    normalised = normalise(scores)
    fused = [c.score for c in candidates]
    low, high = min(fused), max(fused)
    floor = min(normalised, default=0.0)
    blended: list[Candidate] = []
    for position, candidate in enumerate(candidates):
        f = (candidate.score - low) / (high - low) if high > low else 1.0
        r = normalised[position] if position < len(normalised) else None
        score = weight * (floor if r is None else r) + (1.0 - weight) * f
        blended.append(replace(candidate, score=score, rerank_score=r))
    blended.sort(key=lambda c: -c.score)  # stable: ties keep the fused order
    return blended


def normalise(scores: Sequence[float]) -> list[float]:
    """Scores in [0, 1]: as they are if all already are, else each logistic-squashed."""
    if all(0.0 <= s <= 1.0 for s in scores):
        return list(scores)
    return [_logistic(s) for s in scores]


def _logistic(x: float) -> float:
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    z = math.exp(x)  # no overflow for very negative logits
    return z / (1.0 + z)
