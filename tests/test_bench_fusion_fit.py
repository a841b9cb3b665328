"""bench.fusion_fit's fits and first-hit rate on synthetic questions (the
collection, a daemon per LoCoMo conversation, is what the part runs)."""

from __future__ import annotations

import numpy as np
import pytest

from bench.fusion_fit import (
    FEATURES,
    Asked,
    evaluate,
    first_hit_rate,
    fit_listwise,
    fit_platt,
    head_weights,
)

COVERAGE = FEATURES.index("coverage")


def synthetic(questions: int, seed: int, conversations: int = 1) -> list[Asked]:
    """Ten candidates a question, one holding the answer: its coverage is
    higher, and its first logit a little higher (often in the first three,
    not often first)."""
    rng = np.random.default_rng(seed)
    asked = []
    for q in range(questions):
        features = rng.normal(size=(10, len(FEATURES)))
        labels = np.zeros(10)
        answer = int(rng.integers(10))
        labels[answer] = 1.0
        features[answer, COVERAGE] += 2.0
        first = rng.normal(size=10) - 3.0  # a chance of about one in ten each
        first[answer] += 1.5
        asked.append(Asked(q % conversations, features, first, labels))
    return asked


def test_the_listwise_fit_weighs_the_feature_that_finds_the_answer() -> None:
    weights = fit_listwise(synthetic(300, seed=1))
    assert int(np.argmax(weights)) == COVERAGE
    assert weights[COVERAGE] > 1.0
    others = np.delete(weights, COVERAGE)
    assert np.all(np.abs(others) < 0.5)


def test_platt_scaling_recovers_a_known_logistic() -> None:
    rng = np.random.default_rng(2)
    scores = rng.normal(scale=2.0, size=20_000)
    labels = (rng.random(20_000) < 1.0 / (1.0 + np.exp(-(1.5 * scores - 1.0)))).astype(float)
    a, b = fit_platt(scores, labels)
    assert a == pytest.approx(1.5, abs=0.1)
    assert b == pytest.approx(-1.0, abs=0.1)


def test_only_the_first_three_are_re_estimated() -> None:
    """The answer with the best features wins the first place from the
    second place by the first estimate, not from the fourth, which keeps its
    first estimate (below the others' second ones)."""
    features = np.zeros((5, len(FEATURES)))
    weights = np.zeros(len(FEATURES))
    weights[COVERAGE] = 5.0
    labels = np.zeros(5)
    for place in (1, 3):  # 0-based: second and fourth by the first logit
        features[:] = 0.0
        features[place, COVERAGE] = 1.0
        labels[:] = 0.0
        labels[place] = 1.0
        asked = [Asked(0, features.copy(), np.array([-1.0, -2.0, -3.0, -4.0, -5.0]), labels.copy())]
        assert first_hit_rate(asked, None) == 0.0
        assert first_hit_rate(asked, weights, -1.0) == (1.0 if place == 1 else 0.0)


def test_a_fit_on_some_conversations_finds_the_answer_first_in_another() -> None:
    asked = synthetic(400, seed=3, conversations=4)
    weights, bias = head_weights([a for a in asked if a.conversation != 0])
    held = [a for a in asked if a.conversation == 0]
    assert first_hit_rate(held, weights, bias) > first_hit_rate(held, None) + 0.1
    report = evaluate(asked)
    assert [f["conversation"] for f in report["folds"]] == [0, 1, 2, 3]
    assert report["questions"] == 400
    assert report["first_hit"]["left_out"] > report["first_hit"]["first_estimate"]
