"""The local cross-encoder and calibrated fusion together, compared offline on LoCoMo.

By default the local cross-encoder orders the best ten candidates of an
English search whose first calibrated estimate is below 0.45, by its own
score alone (docs/recall.md, "Reranking"). This part compares that with
other ways of using the same model on the same candidates, without a daemon
per variant:

1. each conversation is indexed by a real daemon (`bench.locomo_offline`);
   each question's candidates are ranked in this process with the daemon's
   pipeline and default settings, and the best `WINDOW` are scored by the
   model as the daemon sends them and, for the searches the default sends,
   once more with the chunk's heading path (its session's date and time)
   before the text, and as its pairs of consecutive lines, the best pair's
   score standing for the chunk (a model trained on short web passages
   might judge two turns better than ten);
2. each variant re-orders them; hits are built as the daemon builds them
   (`to_hits`: ten hits, 700-character snippets, overlap trimmed) and scored
   as `bench.locomo` scores them (a hit holds evidence when its snippet
   shows an evidence turn).

A variant is a gate (a search is sent when its first estimate is below it),
a window (how many of the best candidates the model orders), the weight
*b* of the fusion in the order (model logit + b · logit(estimate); 0 is
the model alone, as the default) and what the model read: the chunk, the
chunk with its heading first, its best pair of lines, or the mean of the
chunk's score and its best pair's. Run
from the repository root::

    python -m bench.rerank_fit [--data ../shared/data/locomo10.json]
        [--conversations 0,1,...] [--json PATH]
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

from bench.args import number_list
from bench.locomo_data import DEFAULT_DATA, Conversation, load_locomo
from bench.locomo_offline import indexed, vector_query
from bench.locomo_scoring import Scores, budget_ranks, rank_evidence, snippet_ids
from bench.report import invocation, progress, publish
from bench.search_latency import machine_info
from openmemoryd.config import SearchSettings
from openmemoryd.search import SearchQuery
from openmemoryd.search.candidate import Candidate
from openmemoryd.search.hits import to_hits
from openmemoryd.search.pipeline import rank_candidates
from openmemoryd.search.rerank.local import LocalReranker

WINDOW: Final = 20  # the most candidates any variant sends
DEFAULT_GATE: Final = 0.45  # the local model's `confident_at`
MULTI_HOP, OPEN_DOMAIN = 1, 3
_SETTINGS: Final = SearchSettings()
_progress = progress("rerank_fit")


@dataclass(frozen=True, slots=True)
class Scored:
    """One question's best candidates in fused order, with the model's logits
    (*headed*: with the heading first; *paired*: its best pair of lines; both
    only for the searches the default sends)."""

    conversation: int
    category: int
    evidence: tuple[str, ...]
    terms: list[str]
    candidates: list[Candidate]
    logits: list[float]
    headed: list[float] | None = None
    paired: list[float] | None = None


Read = Literal["chunk", "headed", "pairs", "chunk+pairs"]


@dataclass(frozen=True, slots=True)
class Variant:
    name: str
    gate: float  # sent when the first estimate is below; 0: never
    window: int = 10
    weight: float = 0.0  # b: the fused estimate's logit in the order
    read: Read = "chunk"  # what of a candidate the model's score is of


VARIANTS: Final = (
    Variant("the fused order (no model)", 0.0),
    Variant("the default: the best 10 by the model alone, below 0.45", DEFAULT_GATE),
    Variant("+ 0.5 × the fused logit", DEFAULT_GATE, weight=0.5),
    Variant("+ 1 × the fused logit", DEFAULT_GATE, weight=1.0),
    Variant("+ 2 × the fused logit", DEFAULT_GATE, weight=2.0),
    Variant("the best 20, + 1 × the fused logit", DEFAULT_GATE, window=20, weight=1.0),
    Variant("the best 20, + 2 × the fused logit", DEFAULT_GATE, window=20, weight=2.0),
    Variant("below 0.6, the model alone", 0.6),
    Variant("below 0.6, + 0.5 × the fused logit", 0.6, weight=0.5),
    Variant("every search, the model alone", math.inf),
    Variant("every search, + 0.5 × the fused logit", math.inf, weight=0.5),
    Variant("the heading before the text, the model alone", DEFAULT_GATE, read="headed"),
    Variant(
        "the heading before the text, + 0.5 × the fused logit", DEFAULT_GATE, 10, 0.5, "headed"
    ),
    Variant("the best pair of lines, the model alone", DEFAULT_GATE, read="pairs"),
    Variant("the mean of the chunk's and its best pair's", DEFAULT_GATE, read="chunk+pairs"),
)


def headed_text(candidate: Candidate) -> str:
    """The chunk with its heading path first, unless its first line is that heading."""
    heading = candidate.heading or ""
    lines = candidate.text.strip().splitlines()
    if not heading or (lines and heading.split(" > ")[-1] in lines[0]):
        return candidate.text
    return f"{heading}\n{candidate.text}"


def line_pairs(text: str) -> list[str]:
    """Each two consecutive non-blank lines of *text* (the text itself when
    it has fewer than three)."""
    lines = [line for line in text.splitlines() if line.strip()]
    if len(lines) < 3:
        return ["\n".join(lines)]
    return ["\n".join(lines[i : i + 2]) for i in range(len(lines) - 1)]


def best_pairs(model: LocalReranker, question: str, candidates: Sequence[Candidate]) -> list[float]:
    """Each candidate's score as its best pair of lines (`line_pairs`), one call for all."""
    texts: list[str] = []
    owners: list[int] = []
    for index, candidate in enumerate(candidates):
        pairs = line_pairs(candidate.text)
        texts += pairs
        owners += [index] * len(pairs)
    best = [-math.inf] * len(candidates)
    for owner, logit in zip(owners, model.score(question, texts), strict=True):
        best[owner] = max(best[owner], logit)
    return best


def _logits(q: Scored, read: Read) -> list[float]:
    if read == "chunk":
        return q.logits
    assert q.headed is not None, "other readings are scored for the default's searches only"
    assert q.paired is not None
    if read == "headed":
        return q.headed
    if read == "pairs":
        return q.paired
    return [(a + b) / 2 for a, b in zip(q.logits, q.paired, strict=False)]


def sent(q: Scored, gate: float) -> bool:
    """Whether a search goes to the model under *gate* (two candidates at least)."""
    return len(q.candidates) > 1 and q.candidates[0].score < gate


def _logit(p: float) -> float:
    p = min(max(p, 1e-6), 1 - 1e-6)
    return math.log(p / (1 - p))


def order(q: Scored, variant: Variant) -> list[Candidate]:
    """*q*'s candidates as *variant* orders them: its window re-ordered, the rest after."""
    if not sent(q, variant.gate):
        return q.candidates
    logits = _logits(q, variant.read)
    k = min(variant.window, len(q.candidates))
    key = [logits[i] + variant.weight * _logit(q.candidates[i].score) for i in range(k)]
    best = sorted(range(k), key=lambda i: -key[i])  # stable: ties keep the fused order
    return [q.candidates[i] for i in best] + q.candidates[k:]


def evaluate(scored: Sequence[Scored], variant: Variant) -> dict[str, Any]:
    """`bench.locomo`'s figures for *variant*, and the share of searches sent."""
    ranks, budgets, by_category = [], [], {MULTI_HOP: [0, 0], OPEN_DOMAIN: [0, 0]}
    for q in scored:
        hits = to_hits(order(q, variant), q.terms, 10, _SETTINGS.snippet_chars, True)
        ids = [snippet_ids(hit.snippet) for hit in hits]
        first, every = rank_evidence(ids, q.evidence)
        ranks.append((first, every))
        budgets.append(budget_ranks(ids, [len(hit.snippet) for hit in hits], q.evidence))
        if q.category in by_category:
            by_category[q.category][0] += 1
            by_category[q.category][1] += every is not None and every <= 10
    scores = Scores.of(ranks, budgets)
    return {
        "variant": variant.name,
        "sent": round(sum(sent(q, variant.gate) for q in scored) / len(scored), 4),
        "r1_any": scores.r1_any,
        "mrr": scores.mrr,
        "r5_any": scores.r5_any,
        "r10_any": scores.r10_any,
        "r10_all": scores.r10_all,
        "b3000_any": scores.b3000_any,
        "b3000_all": scores.b3000_all,
        "b6000_any": scores.b6000_any,
        "b6000_all": scores.b6000_all,
        "multi_hop_all10": round(by_category[MULTI_HOP][1] / max(1, by_category[MULTI_HOP][0]), 4),
        "open_domain_all10": round(
            by_category[OPEN_DOMAIN][1] / max(1, by_category[OPEN_DOMAIN][0]), 4
        ),
    }


def collect(conversation: Conversation, model: LocalReranker) -> list[Scored]:
    """Index *conversation* with a real daemon; every question's best candidates, scored."""
    out: list[Scored] = []
    with indexed(conversation) as (conn, embedder):
        for q in conversation.questions:
            ranked = rank_candidates(
                conn,
                SearchQuery(q.question, limit=10),
                _SETTINGS,
                vector_query(conn, embedder, q.question),
                time.time(),
            )
            best = ranked.chosen[:WINDOW]
            texts = [c.text for c in best]
            logits = model.score(q.question, texts) if len(best) > 1 else [0.0] * len(best)
            first = best[:10]
            unsure = len(first) > 1 and first[0].score < DEFAULT_GATE
            headed = model.score(q.question, [headed_text(c) for c in first]) if unsure else None
            paired = best_pairs(model, q.question, first) if unsure else None
            out.append(
                Scored(
                    conversation.index,
                    q.category,
                    q.evidence,
                    ranked.terms,
                    best,
                    logits,
                    headed,
                    paired,
                )
            )
    return out


def render(rows: Sequence[dict[str, Any]], command: str, machine: dict[str, Any], n: int) -> str:
    lines = [
        f"`{command}`",
        "",
        f"{n} questions, dated files; load {machine.get('load_average')} at the start.",
        "",
        "| variant | sent | R@1 | MRR | R@5 | R@10 any / all | 3,000 chars any / all "
        "| 6,000 chars any / all | multi-hop all@10 | open-domain all@10 |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['variant']} | {r['sent']:.1%} | {r['r1_any']:.3f} | {r['mrr']:.3f} "
            f"| {r['r5_any']:.3f} | {r['r10_any']:.3f} / {r['r10_all']:.3f} "
            f"| {r['b3000_any']:.3f} / {r['b3000_all']:.3f} "
            f"| {r['b6000_any']:.3f} / {r['b6000_all']:.3f} "
            f"| {r['multi_hop_all10']:.3f} | {r['open_domain_all10']:.3f} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.rerank_fit", description=__doc__)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="LoCoMo's JSON")
    parser.add_argument(
        "--conversations",
        type=number_list(int, at_least=0, what="conversation indices"),
        default=None,
        help="0-based indices; default all",
    )
    parser.add_argument("--json", type=Path, help="also write the results here")
    args_list, command = invocation("bench.rerank_fit", argv)
    args = parser.parse_args(args_list)
    if not args.data.is_file():
        parser.error(f"no LoCoMo data at {args.data}")
    machine = machine_info()
    model = LocalReranker()
    scored: list[Scored] = []
    try:
        for conversation in load_locomo(args.data):
            if args.conversations is not None and conversation.index not in args.conversations:
                continue
            scored += collect(conversation, model)
            _progress(f"conversation {conversation.index}: {len(scored)} questions")
    finally:
        model.close()
    rows = [evaluate(scored, variant) for variant in VARIANTS]
    publish(
        "rerank_fit",
        lambda m: render(rows, command, m, len(scored)),
        {"questions": len(scored), "variants": rows},
        command=command,
        argv=args_list,
        machine=machine,
        json_path=args.json,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
