"""Refit calibrated fusion's second estimate (its first three candidates) on LoCoMo.

Calibrated fusion scores every candidate by a first estimate and re-orders
its first three by a second one (`openmemoryd.search.calibrated`, docs/recall.md
"The first three: a second estimate"). This part reproduces how the second
one's weights were found, and checks them:

1. each LoCoMo conversation is indexed by a real daemon (the default
   configuration, dated files); its index is then searched in this process
   with the same pipeline and the bundled model, every candidate of the
   fusion recorded with its features (`calibrated.describe`) and whether it
   holds an evidence turn;
2. a listwise fit of the seven features (the chance that the answer is this
   one among the query's candidates), then a logistic fit of the fitted
   score on each question's first three, which makes it an estimate;
3. leave one conversation out: fitted on nine, the first hit of the tenth
   after its first three are re-estimated.

It prints the weights fitted on all ten beside the shipped ones, and the
first-hit rates of the first estimate alone, of the shipped weights, of
the weights fitted on all ten and of each fold's own fit on the conversation
it left out (each fold's weights and rate are in the JSON). Run from the
repository root::

    python -m bench.fusion_fit [--data ../shared/data/locomo10.json] [--json PATH]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import numpy as np

from bench.locomo_data import DEFAULT_DATA, Conversation, load_locomo
from bench.locomo_offline import indexed, vector_query
from bench.locomo_scoring import snippet_ids
from bench.report import invocation, progress, publish
from bench.search_latency import machine_info
from openmemoryd.config import SearchSettings
from openmemoryd.embed.local.provider import LocalEmbedder
from openmemoryd.search import SearchQuery
from openmemoryd.search.calibrated import HEAD_BIAS, HEAD_SIZE, HEAD_WEIGHTS, Described
from openmemoryd.search.pipeline import rank_candidates

FEATURES: Final = (
    "lexical_rr",
    "vector_gap",
    "vector_rr",
    "coverage",
    "date_match",
    "neighbour",
    "day_best",
)
F64 = np.ndarray[Any, np.dtype[np.float64]]
_progress = progress("fusion_fit")


@dataclass(frozen=True, slots=True)
class Asked:
    """One question's candidates: their features (rows in `FEATURES` order),
    first logits and labels (1: the chunk holds an evidence turn)."""

    conversation: int
    features: F64
    first: F64
    labels: F64

    def head(self) -> np.ndarray[Any, np.dtype[np.intp]]:
        """The first `HEAD_SIZE` candidates by the first estimate, best first."""
        return np.argsort(-self.first, kind="stable")[:HEAD_SIZE]


def _sigmoid(z: F64) -> F64:
    return 1.0 / (1.0 + np.exp(-z))


def collect(conversation: Conversation) -> list[Asked]:
    """Index *conversation* with a real daemon, then record every question's candidates."""
    with indexed(conversation) as (conn, embedder):
        return [
            _ask(conn, embedder, conversation.index, q.question, q.evidence)
            for q in conversation.questions
        ]


def _ask(
    conn: Any, embedder: LocalEmbedder, conversation: int, text: str, evidence: Sequence[str]
) -> Asked:
    seen: list[Described] = []
    rank_candidates(
        conn,
        SearchQuery(text, limit=10, min_score=0.0),
        SearchSettings(),
        vector_query(conn, embedder, text),
        time.time(),
        observe=seen.append,
    )
    (described,) = seen
    ids = sorted(described.found)
    wanted = frozenset(evidence)
    return Asked(
        conversation,
        np.array([[described.features[i].get(f, 0.0) for f in FEATURES] for i in ids]),
        np.array([described.logits[i] for i in ids]),
        np.array([1.0 if snippet_ids(described.found[i].base.text) & wanted else 0.0 for i in ids]),
    )


def fit_listwise(asked: Sequence[Asked], *, steps: int = 600, l2: float = 1e-3) -> F64:
    """Weights *w* maximising, over the questions with evidence among their
    candidates, the share of softmax(features · w) that falls on evidence
    (Adam on the mean negative log; started from ones)."""
    groups = [a for a in asked if a.labels.any()]
    x = np.concatenate([a.features for a in groups])
    y = np.concatenate([a.labels for a in groups]).astype(bool)
    starts = np.cumsum([0] + [len(a.labels) for a in groups[:-1]])
    owner = np.repeat(np.arange(len(groups)), [len(a.labels) for a in groups])
    w = np.ones(x.shape[1])
    m, v = np.zeros_like(w), np.zeros_like(w)
    for step in range(1, steps + 1):
        s = x @ w
        s -= np.maximum.reduceat(s, starts)[owner]
        e = np.exp(s)
        p = e / np.add.reduceat(e, starts)[owner]
        pos = np.where(y, e, 0.0)
        q = pos / np.add.reduceat(pos, starts)[owner]
        grad = ((p - q)[:, None] * x).sum(axis=0) / len(groups) + 2 * l2 * w
        m = 0.9 * m + 0.1 * grad
        v = 0.999 * v + 0.001 * grad**2
        w -= 0.05 * (m / (1 - 0.9**step)) / (np.sqrt(v / (1 - 0.999**step)) + 1e-8)
    return w


def fit_platt(scores: F64, labels: F64) -> tuple[float, float]:
    """(a, b) of the logistic σ(a·score + b) fitted to *labels* (Newton)."""
    mean, spread = float(scores.mean()), float(scores.std()) or 1.0
    u = (scores - mean) / spread
    a = b = 0.0
    for _ in range(100):
        p = _sigmoid(np.clip(a * u + b, -30, 30))
        r = p * (1 - p) + 1e-9
        gradient = np.array([((p - labels) * u).sum(), (p - labels).sum()])
        hessian = np.array([[(r * u * u).sum(), (r * u).sum()], [(r * u).sum(), r.sum()]])
        da, db = np.linalg.solve(hessian, gradient)
        a, b = a - da, b - db
    return a / spread, b - a * mean / spread


def head_weights(asked: Sequence[Asked]) -> tuple[F64, float]:
    """The second estimate's weights and bias fitted on *asked*: the listwise
    fit, scaled and biased by the logistic fit on each question's first three."""
    w = fit_listwise(asked)
    heads = [a.head() for a in asked]
    scores = np.concatenate([a.features[h] @ w for a, h in zip(asked, heads, strict=True)])
    labels = np.concatenate([a.labels[h] for a, h in zip(asked, heads, strict=True)])
    scale, bias = fit_platt(scores, labels)
    return scale * w, bias


def first_hit_rate(asked: Sequence[Asked], weights: F64 | None, bias: float = 0.0) -> float:
    """The share of *asked* whose first candidate holds evidence once the
    first three are re-estimated by (*weights*, *bias*); None: the first
    estimate alone. Candidates are ordered by the last estimate they got."""
    hits = 0
    for a in asked:
        estimate = _sigmoid(a.first)
        if weights is not None:
            head = a.head()
            estimate[head] = _sigmoid(a.features[head] @ weights + bias)
        hits += int(a.labels[int(np.argmax(estimate))] > 0) if len(estimate) else 0
    return hits / len(asked)


def evaluate(asked: Sequence[Asked]) -> dict[str, Any]:
    """Weights fitted on all, a fold per conversation, and the first-hit rates."""
    weights, bias = head_weights(asked)
    shipped = np.array([HEAD_WEIGHTS[f] for f in FEATURES])
    folds: list[dict[str, Any]] = []
    for held in sorted({a.conversation for a in asked}):
        train = [a for a in asked if a.conversation != held]
        test = [a for a in asked if a.conversation == held]
        w, b = head_weights(train)
        folds.append(
            {
                "conversation": held,
                "questions": len(test),
                "weights": [round(float(x), 3) for x in w],
                "bias": round(b, 3),
                "first_hit": first_hit_rate(test, w, b),
            }
        )
    n = sum(f["questions"] for f in folds)
    return {
        "features": list(FEATURES),
        "fitted": {"weights": [round(float(x), 3) for x in weights], "bias": round(bias, 3)},
        "shipped": {"weights": shipped.tolist(), "bias": HEAD_BIAS},
        "folds": folds,
        "first_hit": {
            "first_estimate": first_hit_rate(asked, None),
            "shipped": first_hit_rate(asked, shipped, HEAD_BIAS),
            "fitted_all": first_hit_rate(asked, weights, bias),
            "left_out": sum(f["first_hit"] * f["questions"] for f in folds) / n,
        },
        "questions": len(asked),
    }


def render(results: dict[str, Any], command: str, machine: dict[str, Any]) -> str:
    rates = results["first_hit"]
    head = "| | " + " | ".join(f"`{f}`" for f in results["features"]) + " | bias |"
    lines = [
        f"`{command}`",
        "",
        f"{results['questions']} questions; load {machine.get('load_average')} at the start.",
        "",
        head,
        "|---|" + "---:|" * (len(results["features"]) + 1),
    ]
    for name in ("fitted", "shipped"):
        row = results[name]
        lines.append(
            f"| {name} | "
            + " | ".join(f"{x:.2f}" for x in row["weights"])
            + f" | {row['bias']:.2f} |"
        )
    lines += [
        "",
        "| first hit holds evidence | rate |",
        "|---|---:|",
        f"| first estimate alone | {rates['first_estimate']:.3f} |",
        f"| shipped second estimate | {rates['shipped']:.3f} |",
        f"| fitted on all ten | {rates['fitted_all']:.3f} |",
        f"| fitted on nine, the tenth tested (each in turn) | {rates['left_out']:.3f} |",
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.fusion_fit", description=__doc__)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="LoCoMo's JSON")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args_list, command = invocation("bench.fusion_fit", argv)
    args = parser.parse_args(args_list)
    if not args.data.is_file():
        parser.error(f"no LoCoMo data at {args.data}")
    machine = machine_info()
    asked: list[Asked] = []
    for conversation in load_locomo(args.data):
        asked += collect(conversation)
        _progress(f"conversation {conversation.index}: {len(asked)} questions")
    results = evaluate(asked)
    publish(
        "fusion_fit",
        lambda m: render(results, command, m),
        results,
        command=command,
        argv=args_list,
        machine=machine,
        json_path=args.json,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
