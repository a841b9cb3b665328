"""bench.rerank_fit's orders and scoring on synthetic questions (the collection,
a daemon per LoCoMo conversation and the model, is what the part runs)."""

from __future__ import annotations

import math
from dataclasses import replace

from bench.rerank_fit import (
    VARIANTS,
    Scored,
    Variant,
    best_pairs,
    evaluate,
    headed_text,
    line_pairs,
    order,
    render,
)
from openmemoryd.search.candidate import Candidate
from test_rerank_stage import candidate


def chunk(i: int, estimate: float, turn: str, heading: str = "2023-05-08 > Session 1") -> Candidate:
    text = f"- [{turn}] Caroline: something about note {i}"
    return replace(candidate(i, estimate, text), heading=heading)


def question(estimates: list[float], logits: list[float], evidence: str = "D3:1") -> Scored:
    candidates = [chunk(i + 1, e, f"D{i + 1}:1") for i, e in enumerate(estimates)]
    return Scored(
        0,
        1,
        (evidence,),
        ["note"],
        candidates,
        logits,
        headed=[-x for x in logits],
        paired=[2 * x if x < 3 else 0.0 for x in logits],
    )


def ids(candidates: list[Candidate]) -> list[int]:
    return [c.id for c in candidates]


def test_a_search_the_fusion_is_sure_of_keeps_its_order() -> None:
    sure = question([0.6, 0.3, 0.2], [0.0, 1.0, 5.0])
    assert ids(order(sure, Variant("default", 0.45))) == [1, 2, 3]
    assert ids(order(sure, Variant("every", math.inf))) == [3, 2, 1]
    assert ids(order(sure, Variant("none", 0.0))) == [1, 2, 3]


def test_the_window_and_the_fusions_weight_decide_the_order() -> None:
    unsure = question([0.4, 0.3, 0.2], [0.0, 1.0, 5.0])
    assert ids(order(unsure, Variant("two", 0.45, window=2))) == [2, 1, 3]
    # logits 0 + b·logit(0.4), 1 + b·logit(0.3), 5 + b·logit(0.2): b = 20 keeps the fused order
    assert ids(order(unsure, Variant("fused", 0.45, weight=20.0))) == [1, 2, 3]
    assert ids(order(unsure, Variant("headed", 0.45, read="headed"))) == [1, 2, 3]
    # the best pairs score 0, 2, 0: the second first
    assert ids(order(unsure, Variant("pairs", 0.45, read="pairs"))) == [2, 1, 3]
    # the means 0, 1.5, 2.5
    assert ids(order(unsure, Variant("both", 0.45, read="chunk+pairs"))) == [3, 2, 1]


def test_a_chunk_is_read_as_its_pairs_of_lines() -> None:
    assert line_pairs("a\n\nb") == ["a\nb"]
    assert line_pairs("a\nb\n\nc\nd") == ["a\nb", "b\nc", "c\nd"]

    class Model:
        def score(self, query: str, documents: list[str]) -> list[float]:
            return [float(len(d)) for d in documents]

    texts = [replace(chunk(1, 0.4, "D1:1"), text="x\nyy\nzzz"), chunk(2, 0.3, "D1:2")]
    assert best_pairs(Model(), "q", texts) == [6.0, float(len(texts[1].text))]  # type: ignore[arg-type]


def test_the_heading_goes_first_unless_the_chunk_opens_with_it() -> None:
    inside = chunk(1, 0.4, "D1:3")
    assert headed_text(inside) == "2023-05-08 > Session 1\n" + inside.text
    opening = replace(
        chunk(2, 0.4, "D1:1", heading="2023-05-08"), text="# 2023-05-08\n\n- [D1:1] hi"
    )
    assert headed_text(opening) == opening.text


def test_scores_follow_the_order_a_variant_gives() -> None:
    unsure = question([0.4, 0.3, 0.2], [0.0, 1.0, 5.0])  # evidence in the third
    fused = evaluate([unsure], VARIANTS[0])
    reranked = evaluate([unsure], VARIANTS[1])
    assert (fused["r1_any"], fused["mrr"], fused["sent"]) == (0.0, round(1 / 3, 4), 0.0)
    assert (reranked["r1_any"], reranked["sent"]) == (1.0, 1.0)
    assert reranked["multi_hop_all10"] == 1.0
    assert reranked["b3000_any"] == 1.0
    table = render([fused, reranked], "python -m bench.rerank_fit", {"load_average": [1]}, 1)
    assert "| the fused order (no model) | 0.0% | 0.000 |" in table
