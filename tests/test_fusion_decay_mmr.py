"""Fusion, temporal decay and MMR: OpenClaw's cases (reference §7, 5-19) and
the properties the search pipeline relies on.

Where openmemory differs from OpenClaw on purpose the test says so: decay
is floored so old notes stay findable, RRF is rescaled to [0, 1], and
tokens follow `token_set` (words split at underscores, CJK bigrams).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from openmemoryd.search.candidate import Candidate
from openmemoryd.search.decay import (
    SECONDS_PER_DAY,
    apply_decay,
    candidate_timestamp,
    decay_multiplier,
)
from openmemoryd.search.fusion import fuse_rrf, fuse_weighted, normalize_weights
from openmemoryd.search.mmr import jaccard, mmr_rerank
from openmemoryd.text.terms import token_set


def cand(
    id: int,
    *,
    score: float = 0.0,
    text: str = "",
    path: str = "memory/notes.md",
    source: str = "memory",
    text_score: float | None = None,
    vector_score: float | None = None,
) -> Candidate:
    return Candidate(
        id=id,
        path=path,
        source=source,
        start_line=1,
        end_line=1,
        heading="",
        text=text,
        text_score=text_score,
        vector_score=vector_score,
        score=score,
    )


def keyword(id: int, score: float, text: str = "") -> Candidate:
    """A candidate as the keyword leg makes it."""
    return cand(id, score=score, text_score=score, text=text)


def nearest(id: int, score: float, text: str = "") -> Candidate:
    """A candidate as the vector leg makes it."""
    return cand(id, score=score, vector_score=score, text=text)


def utc(year: int, month: int, day: int) -> float:
    return datetime(year, month, day, tzinfo=UTC).timestamp()


def no_mtime(c: Candidate) -> float | None:
    raise AssertionError(f"mtime asked for {c.path}, which must not use its mtime")


# ---------------------------------------------------------------- fusion


def test_weights_are_clamped_and_normalised() -> None:
    assert normalize_weights(0.7, 0.3) == pytest.approx((0.7, 0.3))
    assert normalize_weights(0.7, 0.7) == pytest.approx((0.5, 0.5))
    assert normalize_weights(2.0, -1.0) == (1.0, 0.0)
    assert normalize_weights(0.0, 0.0) == (0.5, 0.5)
    assert normalize_weights(math.nan, 1.0) == (0.0, 1.0)


def test_weighted_merge_of_one_sided_hits() -> None:
    """OpenClaw case 5: vector-only 0.9 → 0.63, keyword-only 1.0 → 0.3."""
    merged = fuse_weighted(
        [keyword(2, 1.0, "kw")], [nearest(1, 0.9, "vec")], vector_weight=0.7, text_weight=0.3
    )
    assert [c.id for c in merged] == [1, 2]
    assert [c.score for c in merged] == pytest.approx([0.63, 0.3])
    by_id = {c.id: c for c in merged}
    assert (by_id[1].text_score, by_id[1].vector_score) == (None, 0.9)
    assert (by_id[2].text_score, by_id[2].vector_score) == (1.0, None)


def test_weighted_merge_of_a_chunk_both_legs_found() -> None:
    """OpenClaw case 6: one result, 0.5·0.2 + 0.5·1.0 = 0.6, both parts kept."""
    merged = fuse_weighted(
        [keyword(7, 1.0, "same chunk")],
        [nearest(7, 0.2, "same chunk")],
        vector_weight=0.5,
        text_weight=0.5,
    )
    assert len(merged) == 1
    (hit,) = merged
    assert hit.score == pytest.approx(0.6)
    assert (hit.text_score, hit.vector_score) == (1.0, 0.2)
    assert hit.text == "same chunk"


def test_weighted_merge_normalises_raw_weights() -> None:
    merged = fuse_weighted([keyword(1, 1.0)], [nearest(1, 1.0)], vector_weight=3, text_weight=3)
    assert merged[0].score == pytest.approx(1.0)


def test_weighted_score_never_exceeds_one() -> None:
    """0.03/0.29 normalise to weights that sum to 1 + 1 ulp in floating point."""
    wv, wt = normalize_weights(0.03, 0.29)
    assert wv + wt > 1.0
    merged = fuse_weighted(
        [keyword(1, 1.0)], [nearest(1, 1.0)], vector_weight=0.03, text_weight=0.29
    )
    assert merged[0].score == 1.0


def test_rrf_is_rescaled_so_first_in_both_legs_is_one() -> None:
    k = 60
    lexical = [keyword(1, 0.9), keyword(2, 0.8), keyword(3, 0.1)]
    vector = [nearest(1, 0.5), nearest(4, 0.4), nearest(3, 0.3)]
    scores = {c.id: c.score for c in fuse_rrf(lexical, vector, k=k)}
    best = 2 / (k + 1)
    assert scores[1] == pytest.approx(1.0)
    assert scores[2] == pytest.approx((1 / (k + 2)) / best)
    assert scores[4] == pytest.approx((1 / (k + 2)) / best)
    assert scores[3] == pytest.approx((1 / (k + 3) + 1 / (k + 3)) / best)
    # First in one leg only is half of first in both: a min_score of 0.35
    # still admits it, as it would with 0.5/0.5 weighted fusion.
    only = fuse_rrf([keyword(9, 0.1)], [], k=k)
    assert only[0].score == pytest.approx(0.5)


def test_rrf_ranks_follow_input_order_not_scores() -> None:
    lexical = [keyword(1, 0.1), keyword(2, 0.9)]
    assert [c.id for c in fuse_rrf(lexical, [])] == [1, 2]


def test_rrf_rejects_negative_k() -> None:
    with pytest.raises(ValueError, match="k"):
        fuse_rrf([], [], k=-1)


def test_ties_prefer_keyword_hits_then_lower_id() -> None:
    # Rank 1 in one leg each: equal RRF scores; the keyword hit comes first.
    merged = fuse_rrf([keyword(5, 0.4)], [nearest(3, 0.9)])
    assert [c.id for c in merged] == [5, 3]
    # Same score and same text score: the lower id comes first, whatever the input order.
    merged = fuse_weighted(
        [keyword(8, 0.5), keyword(4, 0.5)], [], vector_weight=0.5, text_weight=0.5
    )
    assert [c.id for c in merged] == [4, 8]


def test_repeated_id_in_one_leg_counts_once() -> None:
    merged = fuse_rrf([keyword(1, 0.9), keyword(1, 0.8), keyword(2, 0.7)], [])
    assert [c.id for c in merged] == [1, 2]
    assert merged[1].score == pytest.approx((1 / 62) / (2 / 61))
    weighted = fuse_weighted([keyword(1, 0.9), keyword(1, 0.2)], [], vector_weight=0, text_weight=1)
    assert [(c.id, c.score) for c in weighted] == [(1, 0.9)]


unit = st.floats(min_value=0.0, max_value=1.0)


@st.composite
def legs(draw: st.DrawFn) -> tuple[list[Candidate], list[Candidate]]:
    ids = st.lists(st.integers(0, 30), unique=True, max_size=15)
    lexical = [keyword(i, draw(unit)) for i in draw(ids)]
    vector = [nearest(i, draw(unit)) for i in draw(ids)]
    return lexical, vector


@given(legs(), unit, unit, st.integers(1, 1000))
def test_fusion_properties(
    both: tuple[list[Candidate], list[Candidate]], wv: float, wt: float, k: int
) -> None:
    lexical, vector = both
    ids = {c.id for c in lexical} | {c.id for c in vector}
    text_of = {c.id: c.text_score for c in lexical}
    vector_of = {c.id: c.vector_score for c in vector}
    for merged in (
        fuse_weighted(lexical, vector, vector_weight=wv, text_weight=wt),
        fuse_rrf(lexical, vector, k=k),
    ):
        assert len(merged) == len(ids)
        assert {c.id for c in merged} == ids
        assert all(0.0 <= c.score <= 1.0 for c in merged)
        scores = [c.score for c in merged]
        assert scores == sorted(scores, reverse=True)
        for c in merged:
            assert c.text_score == text_of.get(c.id)
            assert c.vector_score == vector_of.get(c.id)


# ---------------------------------------------------------------- decay

NOW = utc(2026, 2, 10)


def session(id: int, score: float, age_days: float) -> tuple[Candidate, float]:
    return cand(id, score=score, path="sessions/thread.jsonl", source="sessions"), (
        NOW - age_days * SECONDS_PER_DAY
    )


def test_multiplier_matches_openclaw() -> None:
    """OpenClaw cases 7 and 8."""
    assert decay_multiplier(10, 30) == pytest.approx(math.exp(-math.log(2) / 30 * 10))
    assert decay_multiplier(30, 30) == pytest.approx(0.5)
    assert decay_multiplier(-5, 30) == 1.0  # the future is today
    assert decay_multiplier(1, 0.1) == pytest.approx(0.5)  # half-life floored to a day


def test_ten_day_old_session_is_scaled_by_the_multiplier() -> None:
    """OpenClaw case 7 through `apply_decay` (floor 0: the pure multiplier)."""
    c, mtime = session(1, 0.8, 10)
    (out,) = apply_decay([c], now=NOW, half_life_days=30, mtime_of=lambda _: mtime, floor=0)
    assert out.score == pytest.approx(0.8 * math.exp(-math.log(2) / 30 * 10))
    assert out.decay == pytest.approx(math.exp(-math.log(2) / 30 * 10))


def test_evergreen_files_ignore_their_mtime() -> None:
    """OpenClaw case 9: MEMORY.md and undated memory/ notes never decay."""
    items = [
        cand(1, score=1.0, path="MEMORY.md"),
        cand(2, score=0.75, path="memory/projects.md"),
        cand(3, score=0.5, path="USER.md"),
    ]
    out = apply_decay(
        items, now=NOW, half_life_days=30, mtime_of=lambda _: utc(2010, 1, 1), floor=0
    )
    assert [(c.id, c.score, c.decay) for c in out] == [(1, 1.0, 1.0), (2, 0.75, 1.0), (3, 0.5, 1.0)]


def test_old_daily_file_ranks_below_todays() -> None:
    """OpenClaw case 10: dated by the file name, not the mtime."""
    items = [
        cand(1, score=0.95, path="memory/2025-01-01.md"),
        cand(2, score=0.8, path="memory/2026-02-10.md"),
    ]
    for floor in (0.0, 0.5):
        out = apply_decay(items, now=NOW, half_life_days=30, mtime_of=no_mtime, floor=floor)
        assert [c.id for c in out] == [2, 1]
        assert out[0].score == 0.8


def test_future_today_and_ancient_daily_files() -> None:
    """OpenClaw case 11 with floor 0; with a floor the 2000 note keeps score·floor."""
    items = [
        cand(1, score=0.9, path="memory/2099-01-01.md"),
        cand(2, score=0.8, path="memory/2026-02-10.md"),
        cand(3, score=1.0, path="memory/2000-01-01.md"),
    ]
    pure = {
        c.id: c.score
        for c in apply_decay(items, now=NOW, half_life_days=30, mtime_of=no_mtime, floor=0)
    }
    assert pure[1] == 0.9
    assert pure[2] == 0.8
    assert pure[3] < 0.001
    floored = apply_decay(items, now=NOW, half_life_days=30, mtime_of=no_mtime, floor=0.5)
    assert [(c.id, c.score, c.decay) for c in floored] == [
        (1, 0.9, 1.0),
        (2, 0.8, 1.0),
        (3, 0.5, 0.5),
    ]
    # With the floor, a relevant old note still passes the default min_score of 0.35.
    assert floored[2].score >= 0.35


def test_session_decays_by_mtime() -> None:
    """OpenClaw case 12."""
    c, mtime = session(1, 1.0, 30)
    (out,) = apply_decay([c], now=NOW, half_life_days=30, mtime_of=lambda _: mtime, floor=0)
    assert out.score == pytest.approx(0.5)


def test_unknown_mtime_means_no_decay() -> None:
    c, _ = session(1, 0.7, 0)
    (out,) = apply_decay([c], now=NOW, half_life_days=30, mtime_of=lambda _: None, floor=0)
    assert (out.score, out.decay) == (0.7, 1.0)


def test_timestamps() -> None:
    daily = cand(1, path="memory/2026-02-10.md")
    assert candidate_timestamp(daily, mtime_of=no_mtime) == NOW
    # Not a real date, nested under another folder, or not a memory source file
    # named like one: not a daily file, so evergreen.
    for path in ("memory/2025-02-30.md", "notes/memory/2025-01-01.md", "memory/2025/01-01.md"):
        assert candidate_timestamp(cand(1, path=path), mtime_of=no_mtime) is None
    c, mtime = session(2, 0.5, 3)
    assert candidate_timestamp(c, mtime_of=lambda _: mtime) == mtime
    assert candidate_timestamp(c, mtime_of=lambda _: math.nan) is None


def test_mtime_is_asked_once_per_file() -> None:
    asked: list[str] = []

    def mtime_of(c: Candidate) -> float:
        asked.append(c.path)
        return NOW

    items = [
        cand(i, score=0.5, path=f"sessions/{i % 2}.jsonl", source="sessions") for i in range(6)
    ]
    apply_decay(items, now=NOW, half_life_days=30, mtime_of=mtime_of, floor=0)
    assert sorted(asked) == ["sessions/0.jsonl", "sessions/1.jsonl"]


paths = st.sampled_from(
    [
        "MEMORY.md",
        "memory/notes.md",
        "memory/2000-01-01.md",
        "memory/2026-02-01.md",
        "memory/2030-06-30.md",
        "sessions/a.jsonl",
        "sessions/b.jsonl",
    ]
)


@given(
    st.lists(st.tuples(paths, unit), max_size=12),
    st.floats(min_value=0.1, max_value=1000),
    unit,
    st.floats(min_value=utc(1990, 1, 1), max_value=utc(2040, 1, 1)),
)
def test_decay_properties(
    items: list[tuple[str, float]], half_life: float, floor: float, mtime: float
) -> None:
    candidates = [
        cand(i, score=score, path=path, source=path.split("/")[0] if "/" in path else "memory")
        for i, (path, score) in enumerate(items)
    ]
    out = apply_decay(
        candidates, now=NOW, half_life_days=half_life, mtime_of=lambda _: mtime, floor=floor
    )
    before = {c.id: c.score for c in candidates}
    assert sorted(c.id for c in out) == sorted(before)
    for c in out:
        assert c.score <= before[c.id]
        assert c.score >= before[c.id] * floor
        assert c.score == before[c.id] * c.decay
    scores = [c.score for c in out]
    assert scores == sorted(scores, reverse=True)


# ---------------------------------------------------------------- MMR


def test_tokens() -> None:
    """OpenClaw cases 13 and 14, with our tokenizer's rules."""
    assert token_set("Hello World 123") == {"hello", "world", "123"}
    assert token_set("") == frozenset()
    assert token_set("!@#$%^&*()") == frozenset()
    assert token_set("tea tea TEA") == {"tea"}
    # OpenClaw keeps foo_bar as one token; ours splits at the underscore.
    assert token_set("foo_bar") == {"foo", "bar"}
    assert token_set("今天讨论") == {"今", "天", "讨", "论", "今天", "天讨", "讨论"}
    assert token_set("我a好") == {"a", "我", "好"}


def test_jaccard() -> None:
    """OpenClaw case 15."""
    abc = frozenset("abc")
    assert jaccard(abc, abc) == 1.0
    assert jaccard(abc, frozenset("xyz")) == 0.0
    assert jaccard(frozenset(), frozenset()) == 1.0
    assert jaccard(abc, frozenset()) == 0.0
    assert jaccard(frozenset(), abc) == 0.0
    assert jaccard(abc, frozenset("bcd")) == 0.5
    assert jaccard(frozenset("bcd"), abc) == 0.5


FRUIT = [
    cand(1, score=1.0, text="apple banana cherry"),
    cand(2, score=0.9, text="apple banana date"),
    cand(3, score=0.8, text="elderberry fig grape"),
]


@pytest.mark.parametrize(
    ("lambda_", "start"), [(0.0, [1, 3]), (-0.5, [1, 3]), (1.0, [1, 2, 3]), (1.5, [1, 2, 3])]
)
def test_lambda_is_clamped(lambda_: float, start: list[int]) -> None:
    """OpenClaw case 16."""
    out = mmr_rerank(FRUIT, lambda_=lambda_)
    assert [c.id for c in out][: len(start)] == start
    assert [c.mmr_rank for c in out] == [1, 2, 3]


def test_a_different_topic_comes_second() -> None:
    """OpenClaw case 17."""
    items = [
        cand(1, score=1.0, text="machine learning models use neural networks"),
        cand(2, score=0.95, text="machine learning models use deep neural networks"),
        cand(3, score=0.85, text="database indexes speed up sql queries"),
        cand(4, score=0.8, text="neural networks learn machine learning models"),
    ]
    assert [c.id for c in mmr_rerank(items, lambda_=0.5)][:2] == [1, 3]
    duplicates = [
        cand(1, score=1.0, text="Wei prefers oolong tea"),
        cand(2, score=0.9, text="Wei prefers oolong tea"),
        cand(3, score=0.5, text="the deploy runs on Fridays"),
    ]
    assert [c.id for c in mmr_rerank(duplicates, lambda_=0.5)] == [1, 3, 2]


def test_chinese_near_duplicates_are_recognised() -> None:
    """Without CJK bigrams each note would be one token and never overlap."""
    items = [
        cand(1, score=1.0, text="我们讨论了缓存方案的细节"),
        cand(2, score=0.95, text="我们讨论了缓存方案"),
        cand(3, score=0.9, text="周会改到星期四下午"),
        cand(4, score=0.1, text="明天去机场接人"),
    ]
    assert [c.id for c in mmr_rerank(items, lambda_=0.5)][:2] == [1, 3]


def test_small_inputs_and_field_preservation() -> None:
    """OpenClaw cases 18 and 19."""
    assert mmr_rerank([], lambda_=0.7) == []
    (single,) = mmr_rerank([FRUIT[0]], lambda_=0.7)
    assert single == replace(FRUIT[0], mmr_rank=1)
    items = list(FRUIT)
    out = mmr_rerank(items, lambda_=0.7)
    assert out is not items
    assert items == FRUIT  # the input is untouched
    assert {replace(c, mmr_rank=None) for c in out} == set(FRUIT)
    negative = [cand(1, score=-1.0, text="a"), cand(2, score=-0.5, text="b")]
    assert [c.id for c in mmr_rerank(negative, lambda_=0.7)] == [2, 1]
    equal = [cand(i, score=0.5, text=f"note {i}") for i in range(4)]
    assert sorted(c.id for c in mmr_rerank(equal, lambda_=0.7)) == [0, 1, 2, 3]


def test_ties_go_to_higher_score_then_lower_id() -> None:
    # λ = 0: every first pick ties at 0; the best score wins, then the lower id.
    items = [cand(5, score=0.5, text="x"), cand(2, score=0.5, text="y"), cand(9, score=0.1)]
    assert mmr_rerank(items, lambda_=0.0)[0].id == 2


def reference_mmr(candidates: Sequence[Candidate], lambda_: float) -> list[int]:
    """The plain greedy loop the module docstring describes, for comparison."""
    lam = min(1.0, max(0.0, lambda_))
    scores = [c.score for c in candidates]
    low, high = min(scores), max(scores)
    rel = [(s - low) / (high - low) if high > low else 1.0 for s in scores]
    sets = [token_set(c.text) for c in candidates]
    picked: list[int] = []
    remaining = list(range(len(candidates)))
    while remaining:

        def key(i: int) -> tuple[float, float, int]:
            sim = max((jaccard(sets[i], sets[j]) for j in picked), default=0.0)
            return lam * rel[i] - (1.0 - lam) * sim, scores[i], -candidates[i].id

        best = max(remaining, key=key)
        picked.append(best)
        remaining.remove(best)
    return [candidates[i].id for i in picked]


WORDS = ["tea", "oolong", "wei", "deploy", "friday", "cache", "缓存", "方案", "讨论", ""]
texts = st.lists(st.sampled_from(WORDS), max_size=6).map(" ".join)


@given(
    st.lists(st.tuples(texts, st.floats(min_value=-1, max_value=1)), min_size=1, max_size=12),
    st.floats(min_value=-0.5, max_value=1.5),
)
def test_mmr_properties(items: list[tuple[str, float]], lambda_: float) -> None:
    candidates = [cand(i, score=score, text=text) for i, (text, score) in enumerate(items)]
    out = mmr_rerank(candidates, lambda_=lambda_)
    assert sorted(c.id for c in out) == list(range(len(candidates)))
    assert [c.mmr_rank for c in out] == list(range(1, len(candidates) + 1))
    assert all(c.score == candidates[c.id].score for c in out)
    assert [c.id for c in out] == reference_mmr(candidates, lambda_)


def test_two_hundred_chunk_sized_candidates_are_fast() -> None:
    """Guards against a per-pair set intersection (about 1.5 s here for CJK)."""
    words = [f"word{i}" for i in range(800)]
    han = [chr(0x4E00 + i) for i in range(1500)]
    items = []
    for i in range(200):
        latin = " ".join(words[(i * 7 + j * j) % 800] for j in range(120))
        cjk = "".join(han[(i * 13 + j * 31) % 1500] for j in range(300))
        items.append(cand(i, score=(i * 37 % 200) / 200, text=f"{latin} {cjk}"))
    start = time.perf_counter()
    out = mmr_rerank(items, lambda_=0.7)
    assert time.perf_counter() - start < 1.0
    assert len(out) == 200
