"""The rerank stage: blending, squashing, failure handling, and its place in a search.

Unit tests use stub rerankers; the engine tests use the fake rerank server
(real HTTP on 127.0.0.1) and the in-process engine, keyword-only.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator, Sequence
from dataclasses import replace

import msgspec
import pytest

from fake_rerank_servers import HANG, INVALID_JSON, FakeRerankServer, status
from openmemoryd.config import RerankSettings, SearchSettings
from openmemoryd.config.model import FileConfig
from openmemoryd.config.search import RerankPlan
from openmemoryd.engine import Engine, workspace_status
from openmemoryd.search import Candidate, SearchQuery
from openmemoryd.search.rerank import (
    RerankBusy,
    RerankError,
    RerankSkipped,
    blend,
    normalise,
    rerank_candidates,
)
from openmemoryd.search.rerank.stage import codes_in, naming_first


def candidate(i: int, score: float, text: str = "") -> Candidate:
    return Candidate(
        id=i,
        path=f"memory/{i}.md",
        source="memory",
        start_line=1,
        end_line=1,
        heading="",
        text=text or f"note {i}",
        text_score=score,
        vector_score=None,
        score=score,
    )


class Stub:
    """A reranker answering fixed scores, or raising."""

    def __init__(self, scores: Sequence[float] = (), error: BaseException | None = None) -> None:
        self.scores = list(scores)
        self.error = error
        self.calls: list[tuple[str, list[str]]] = []

    @property
    def name(self) -> str:
        return "stub"

    @property
    def model(self) -> str:
        return "stub-1"

    @property
    def in_process(self) -> bool:
        return False

    async def rerank(self, query: str, documents: Sequence[str]) -> list[float]:
        self.calls.append((query, list(documents)))
        if self.error is not None:
            raise self.error
        return self.scores[: len(documents)] if len(self.scores) >= len(documents) else self.scores

    def close(self) -> None:
        pass


TEI = RerankSettings(provider="tei")


def ids(candidates: Sequence[Candidate]) -> list[int]:
    return [c.id for c in candidates]


# ---------------------------------------------------------------- blending


def test_probabilities_are_kept_and_logits_squashed() -> None:
    assert normalise([0.0, 0.4, 1.0]) == [0.0, 0.4, 1.0]
    squashed = normalise([-9.0, 0.0, 3.0])
    assert squashed[1] == pytest.approx(0.5)
    assert 0.0 < squashed[0] < 0.001 < 0.95 < squashed[2] < 1.0
    assert normalise([-1000.0, 1000.0]) == [0.0, 1.0]  # no overflow


def test_weight_one_orders_by_the_reranker_alone() -> None:
    fused = [candidate(1, 0.9), candidate(2, 0.8), candidate(3, 0.7)]
    out = blend(fused, [0.1, 0.2, 0.9], 1.0)
    assert ids(out) == [3, 2, 1]
    assert [c.rerank_score for c in out] == [0.9, 0.2, 0.1]
    assert out[0].score == pytest.approx(0.9)


def test_weight_zero_keeps_the_fused_order() -> None:
    fused = [candidate(1, 0.9), candidate(2, 0.8), candidate(3, 0.7)]
    assert ids(blend(fused, [0.1, 0.2, 0.9], 0.0)) == [1, 2, 3]


def test_the_blend_is_weight_r_plus_the_rest_scaled_fused() -> None:
    fused = [candidate(1, 0.03), candidate(2, 0.02), candidate(3, 0.01)]  # RRF-sized scores
    out = {c.id: c.score for c in blend(fused, [0.2, 0.6, 0.4], 0.5)}
    # f = 1, 0.5, 0 (min-max over the candidates)
    assert out == pytest.approx({1: 0.5 * 0.2 + 0.5, 2: 0.5 * 0.6 + 0.25, 3: 0.5 * 0.4})


def test_candidates_beyond_the_window_stay_below_it_in_fused_order() -> None:
    fused = [candidate(i, 1.0 - i / 10) for i in range(6)]
    out = blend(fused, [0.0, 0.0, 0.0], 0.7)  # the reranker dislikes all it saw
    assert ids(out)[3:] == [3, 4, 5]
    assert all(c.rerank_score is None for c in out[3:])
    assert min(c.score for c in out[:3]) >= max(c.score for c in out[3:])


# ---------------------------------------------------------------- the stage


async def test_only_the_top_n_texts_are_sent() -> None:
    stub = Stub([0.1, 0.9])
    fused = [candidate(i, 1.0 - i / 10, text=f"text {i}") for i in range(5)]
    out, note = await rerank_candidates(
        stub, "q", fused, RerankSettings(provider="tei", top_n=2, weight=1.0)
    )
    assert stub.calls == [("q", ["text 0", "text 1"])]
    assert ids(out) == [1, 0, 2, 3, 4]
    assert note.applied
    assert note.sent == 2
    assert "reranked 2 candidates with stub stub-1" in str(note)


async def test_the_notes_naming_a_code_keep_their_lead_over_the_models_order() -> None:
    # the model scores the neighbours' notes above the one naming the code
    stub = Stub([0.83, 0.997, 0.997, 0.993])
    fused = [
        candidate(1, 0.4, text="- zqhand009 shipped to the Leeds warehouse"),
        candidate(2, 0.3, text="- zqhand010 shipped to the Leeds warehouse"),
        candidate(3, 0.3, text="- zqhand008 shipped to the Leeds warehouse"),
        candidate(4, 0.2, text="- zqhand011 shipped to Leeds"),
    ]
    out, note = await rerank_candidates(
        stub, "zqhand009", fused, RerankSettings(provider="tei", weight=1.0)
    )
    assert note.applied
    assert ids(out) == [1, 2, 3, 4]  # the note naming it first, then the model's order
    scores = [c.score for c in out]
    assert scores == sorted(scores, reverse=True)  # still falling down the list
    # a question naming no code is the model's to order
    plain, _ = await rerank_candidates(
        stub, "what shipped to Leeds", fused, RerankSettings(provider="tei", weight=1.0)
    )
    assert ids(plain) == [2, 3, 4, 1]


@pytest.mark.parametrize(
    ("query", "codes"),
    [
        ("zqhand009", ["zqhand009"]),
        ("what broke with E1234 on ipv6", ["e1234", "ipv6"]),
        ("restic snapshots on B2", ["b2"]),
        # ordinals, amounts and times start with their digits
        ("what did I buy on the 23rd of March", []),
        ("timing for the 10k test postings at 3pm", []),
        ("ошибка E500 на сервере", ["e500"]),
    ],
)
def test_a_code_is_a_letter_then_a_digit(query: str, codes: list[str]) -> None:
    assert codes_in(query) == codes


def test_a_code_is_held_word_for_word_and_every_code_is_needed() -> None:
    notes = [
        candidate(1, 0.9, text="zqhand0091 is another"),
        candidate(2, 0.8, text="e1234 seen, ipv6 off"),
        candidate(3, 0.7, text="E1234 on IPv6 again"),
        candidate(4, 0.6, text="e1234 alone"),
    ]
    # the best note naming them comes first; the others keep the model's order
    assert ids(naming_first(notes, ["e1234", "ipv6"])) == [2, 1, 3, 4]
    assert ids(naming_first(notes, ["zqhand009"])) == [1, 2, 3, 4]  # nobody names it
    assert ids(naming_first(notes, ["zqhand0091"])) == [1, 2, 3, 4]  # already first
    assert ids(naming_first(notes, [])) == [1, 2, 3, 4]


def test_unset_numbers_take_the_providers_defaults() -> None:
    """The local model runs once per candidate: its best 10, alone, and only
    where the fusion is unsure; a service answers all its candidates at once."""
    assert RerankSettings(provider="local").plan() == RerankPlan(10, 1.0, 0.45)
    assert RerankSettings().plan() == RerankPlan(10, 1.0, 0.45)  # auto: the local model's
    for provider in ("cohere", "jina", "voyage", "tei", "llamacpp", "none"):
        assert RerankSettings(provider=provider).plan() == RerankPlan(30, 0.7, 1.0)
    chosen = RerankSettings(provider="local", top_n=3, weight=0.5, confident_at=1.0)
    assert chosen.plan() == RerankPlan(3, 0.5, 1.0)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("top_n = 0", "`int` >= 1 - at `$.search.rerank.top_n`"),
        ("weight = 1.5", "`float` <= 1.0 - at `$.search.rerank.weight`"),
        ("confident_at = 0", "`float` > 0.0 - at `$.search.rerank.confident_at`"),
    ],
)
def test_numbers_out_of_range_are_refused_when_set(line: str, message: str) -> None:
    with pytest.raises(msgspec.ValidationError, match=re.escape(message)):
        msgspec.toml.decode(f"[search.rerank]\n{line}\n".encode(), type=FileConfig)


async def test_the_local_models_defaults_skip_a_search_the_fusion_is_sure_of() -> None:
    stub = Stub([0.1, 0.9])
    local = RerankSettings(provider="local")
    sure = [candidate(1, 0.7), candidate(2, 0.5)]
    out, note = await rerank_candidates(stub, "q", sure, local, calibrated=True)
    assert (ids(out), stub.calls, note.skipped) == ([1, 2], [], True)
    unsure = [candidate(1, 0.44), candidate(2, 0.4)]  # below the local default, 0.45
    out, note = await rerank_candidates(stub, "q", unsure, local, calibrated=True)
    assert ids(out) == [2, 1]  # weight 1: the model's order
    assert note.weight == 1.0


async def test_the_default_sends_nothing_without_a_calibrated_estimate() -> None:
    """`auto` (the default) reranks only what calibrated fusion is unsure of:
    a keyword-only daemon or another fusion has no estimate, and runs no model."""
    stub = Stub([0.1, 0.9])
    fused = [candidate(1, 0.3), candidate(2, 0.2)]
    out, note = await rerank_candidates(stub, "q", fused, RerankSettings(), calibrated=False)
    assert (ids(out), stub.calls, note.skipped) == ([1, 2], [], True)
    assert "no calibrated estimate" in (note.error or "")
    out, note = await rerank_candidates(stub, "q", fused, RerankSettings(), calibrated=True)
    assert (ids(out), note.applied) == ([2, 1], True)  # unsure (0.3 < 0.45): sent


async def test_one_candidate_is_never_sent() -> None:
    stub = Stub([0.9])
    out, note = await rerank_candidates(stub, "q", [candidate(1, 0.3)], RerankSettings())
    assert stub.calls == []
    assert ids(out) == [1]
    assert note.skipped
    assert note.sent == 0
    assert "nothing to re-order" in str(note)


async def test_a_confident_fused_order_is_kept_without_a_call() -> None:
    settings = RerankSettings(weight=1.0, confident_at=0.6)
    stub = Stub([0.1, 0.9])
    sure = [candidate(1, 0.61), candidate(2, 0.5)]
    out, note = await rerank_candidates(stub, "q", sure, settings, calibrated=True)
    assert stub.calls == []
    assert ids(out) == [1, 2]
    assert note.skipped
    assert note.error is not None
    assert "estimate 0.610 is at least 0.6" in note.error
    assert all(c.rerank_score is None for c in out)

    unsure = [candidate(1, 0.59), candidate(2, 0.5)]
    out, note = await rerank_candidates(stub, "q", unsure, settings, calibrated=True)
    assert len(stub.calls) == 1
    assert ids(out) == [2, 1]
    assert note.applied


async def test_a_search_held_back_by_the_caller_is_not_sent_and_says_why() -> None:
    settings = RerankSettings(weight=1.0, confident_at=0.6)
    stub = Stub([0.1, 0.9])
    unsure = [candidate(1, 0.59), candidate(2, 0.5)]
    out, note = await rerank_candidates(
        stub, "q", unsure, settings, calibrated=True, held_back="1 other search running"
    )
    assert stub.calls == []
    assert ids(out) == [1, 2]
    assert (note.skipped, note.sent, note.error) == (True, 0, "1 other search running")
    # a search that would not have been sent says its own reason
    sure = [candidate(1, 0.61), candidate(2, 0.5)]
    _, note = await rerank_candidates(
        stub, "q", sure, settings, calibrated=True, held_back="1 other search running"
    )
    assert "estimate 0.610 is at least 0.6" in (note.error or "")


UNSURE = [candidate(1, 0.3), candidate(2, 0.2)]
BUSY = RerankBusy("scoring another search", retryable=True)
NOT_READ = RerankSkipped("reads English", retryable=False)


@pytest.mark.parametrize(
    ("stub", "fused", "held_back", "outcome", "sent"),
    [
        (Stub([0.1, 0.9]), UNSURE, None, "reranked", 2),
        (Stub([0.1, 0.9]), [candidate(1, 0.9), candidate(2, 0.2)], None, "confident", 0),
        (Stub([0.1, 0.9]), UNSURE, "1 other search running", "held_back", 0),
        (Stub(error=BUSY), UNSURE, None, "held_back", 0),
        (Stub(error=NOT_READ), UNSURE, None, "not_applicable", 0),
        (Stub([0.9]), UNSURE[:1], None, "not_applicable", 0),
        (Stub(error=RerankError("HTTP 500", retryable=True)), UNSURE, None, "failed", 2),
        (Stub(error=ValueError("a bug")), UNSURE, None, "failed", 2),
        (Stub([0.9]), UNSURE, None, "failed", 2),  # one score for two documents
    ],
    ids=[
        "reranked",
        "sure",
        "held-back",
        "busy",
        "not-read",
        "one-candidate",
        "error",
        "bug",
        "short-answer",
    ],
)
async def test_each_way_out_of_the_stage_names_its_outcome(
    stub: Stub, fused: list[Candidate], held_back: str | None, outcome: str, sent: int
) -> None:
    """What `status` counts: only a failure is one, and a busy model is a
    search held back, not one out of the model's reach."""
    _, note = await rerank_candidates(
        stub, "q", fused, RerankSettings(), calibrated=True, held_back=held_back
    )
    assert (note.outcome, note.sent) == (outcome, sent)
    assert note.skipped == (outcome not in ("reranked", "failed"))
    assert note.applied == (outcome == "reranked")


async def test_only_calibrated_estimates_are_taken_for_confidence() -> None:
    """Weighted, RRF and keyword-only scores are not probabilities: every search is sent."""
    stub = Stub([0.1, 0.9])
    fused = [candidate(1, 0.95), candidate(2, 0.5)]
    settings = RerankSettings(provider="tei", weight=1.0, confident_at=0.6)
    out, _ = await rerank_candidates(stub, "q", fused, settings, calibrated=False)
    assert ids(out) == [2, 1]
    service = RerankSettings(provider="tei", weight=1.0)
    out, _ = await rerank_candidates(stub, "q", fused, service, calibrated=True)
    assert ids(out) == [2, 1]  # confident_at 1 (the default): every search
    assert len(stub.calls) == 2


@pytest.mark.parametrize(
    "error",
    [
        RerankError("rerank stub: HTTP 500", retryable=True),
        RerankError("rerank stub: no answer within 5 s", retryable=True),
        RuntimeError("a bug"),
    ],
    ids=["5xx", "timeout", "bug"],
)
async def test_a_failure_keeps_the_fused_order_with_a_warning_and_a_note(
    error: BaseException, caplog: pytest.LogCaptureFixture
) -> None:
    fused = [candidate(1, 0.9), candidate(2, 0.8)]
    with caplog.at_level(logging.WARNING, logger="openmemoryd.rerank"):
        out, note = await rerank_candidates(Stub(error=error), "q", fused, TEI)
    assert out == fused
    assert not note.applied
    assert str(error) in (note.error or "")
    assert "reranking skipped (stub stub-1)" in str(note)
    assert "keeping the fused order" in caplog.text


async def test_a_wrong_number_of_scores_is_a_failure() -> None:
    fused = [candidate(1, 0.9), candidate(2, 0.8)]
    out, note = await rerank_candidates(Stub([0.5]), "q", fused, TEI)
    assert out == fused
    assert note.error == "1 scores for 2 documents"


# ---------------------------------------------------------------- in a search

NOTES = {
    "memory/a.md": "Wei drinks tea every morning, mostly green tea",
    "memory/b.md": "The tea shop on Main Street closed; tea prices went up",
    "memory/c.md": "Wei's favourite tea is oolong from Taiwan",
}


@pytest.fixture
def tei() -> Iterator[FakeRerankServer]:
    with FakeRerankServer("tei") as fake:
        fake.boost = {"oolong": 0.99}
        yield fake


def with_rerank(engine: Engine, **fields: object) -> None:
    rerank = RerankSettings(**fields)  # type: ignore[arg-type]
    engine.config = replace(engine.config, search=SearchSettings(rerank=rerank))


async def filled(engine: Engine) -> Engine:
    for path, text in NOTES.items():
        await engine.append(text, path)
    return engine


async def rerank_issues(engine: Engine) -> list[str]:
    return [i for i in (await workspace_status(engine)).issues if "rerank" in i]


async def paths(engine: Engine, text: str, **query: object) -> list[str]:
    result = await engine.search(SearchQuery(text, **query))  # type: ignore[arg-type]
    return [hit.path for hit in result.results]


async def test_a_reranker_reorders_the_hits_but_not_their_set(
    engine: Engine, tei: FakeRerankServer
) -> None:
    await filled(engine)
    before = await paths(engine, "tea")
    assert before[0] != "memory/c.md"

    with_rerank(engine, provider="tei", base_url=tei.url, weight=0.9)
    after = await paths(engine, "tea")
    assert after[0] == "memory/c.md"
    assert sorted(after) == sorted(before)
    [sent] = tei.documents()
    assert len(sent) == len(before)
    assert any("oolong" in text for text in sent)
    assert await rerank_issues(engine) == []


async def test_nothing_past_min_score_means_no_rerank_call(
    engine: Engine, tei: FakeRerankServer
) -> None:
    await filled(engine)
    with_rerank(engine, provider="tei", base_url=tei.url)
    result = await engine.search(SearchQuery("lattice chromodynamics"))
    assert result.results == ()
    assert result.empty_reason == "no_match"
    result = await engine.search(SearchQuery("tea", min_score=1.0))
    assert result.results == ()
    assert result.empty_reason == "below_min_score"
    assert tei.requests == []


@pytest.mark.parametrize("fault", [status(500), INVALID_JSON, HANG], ids=["500", "json", "hang"])
async def test_a_failing_reranker_leaves_the_fused_order_and_says_so_in_status(
    engine: Engine, tei: FakeRerankServer, fault: object
) -> None:
    await filled(engine)
    before = await paths(engine, "tea")
    with_rerank(engine, provider="tei", base_url=tei.url, timeout_s=0.2)
    tei.outage(fault)  # type: ignore[arg-type]
    assert await paths(engine, "tea") == before
    [issue] = await rerank_issues(engine)
    assert issue.startswith("search reranking failed, results keep the fused order: rerank tei")

    tei.recover()
    assert (await paths(engine, "tea"))[0] == "memory/c.md"
    assert await rerank_issues(engine) == []


async def test_a_hosted_reranker_without_a_key_does_not_fail_searches(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("COHERE_API_KEY", raising=False)
    monkeypatch.delenv("CO_API_KEY", raising=False)
    await filled(engine)
    before = await paths(engine, "tea")
    with_rerank(engine, provider="cohere")
    assert await paths(engine, "tea") == before
    [issue] = await rerank_issues(engine)
    assert "no API key for api.cohere.com" in issue


async def test_turning_reranking_off_again_takes_effect_at_once(
    engine: Engine, tei: FakeRerankServer
) -> None:
    await filled(engine)
    before = await paths(engine, "tea")
    with_rerank(engine, provider="tei", base_url=tei.url, weight=1.0)
    assert (await paths(engine, "tea"))[0] == "memory/c.md"
    with_rerank(engine)
    assert await paths(engine, "tea") == before
    assert len(tei.requests) == 1


async def test_the_daemons_own_look_ups_are_not_reranked(
    engine: Engine, tei: FakeRerankServer
) -> None:
    from openmemoryd.engine.similar import nearby_lines

    await filled(engine)
    with_rerank(engine, provider="tei", base_url=tei.url)
    assert await paths(engine, "tea", for_reader=False)
    assert await nearby_lines(engine, "Wei likes tea")
    assert tei.requests == []
    assert await paths(engine, "tea")
    assert len(tei.requests) == 1


async def test_reranking_comes_before_decay_and_mmr(engine: Engine, tei: FakeRerankServer) -> None:
    from openmemoryd.config import DecaySettings, MmrSettings

    await filled(engine)
    rerank = RerankSettings(provider="tei", base_url=tei.url, weight=1.0)
    engine.config = replace(
        engine.config,
        search=SearchSettings(
            rerank=rerank, decay=DecaySettings(enabled=True), mmr=MmrSettings(enabled=True)
        ),
    )
    result = await engine.search(SearchQuery("tea"))
    assert result.results[0].path == "memory/c.md"  # undated notes: decay leaves them
    assert result.results[0].mmr_rank == 1
    assert len(tei.requests) == 1
