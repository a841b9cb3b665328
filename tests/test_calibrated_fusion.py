"""Calibrated fusion, query dates and vector evidence, on a real index with vectors."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import apsw
import numpy as np
import pytest

from openmemoryd.config import SearchSettings
from openmemoryd.embed import to_blob
from openmemoryd.embed.reference import CROSS_SCRIPT_SHARE, Baseline
from openmemoryd.search import SearchContext, SearchQuery, calibrated, run_search
from openmemoryd.search.calibrated import (
    calibrated_score,
    coverage,
    fuse_calibrated,
    neighbour_best,
)
from openmemoryd.search.candidate import Candidate
from openmemoryd.search.vector import VectorQuery
from openmemoryd.store import ChunkRow, FileState, open_index, replace_file
from openmemoryd.store.vectors import store_vectors, target_table
from openmemoryd.text import query_terms

CTX = SearchContext(provider="test", model="m", stale=False)
DIMS = 8
NOW = 1_764_000_000.0  # 2025-11-24 UTC


def unit(*values: float) -> np.ndarray:
    v = np.zeros(DIMS, dtype=np.float32)
    v[: len(values)] = values
    return v / np.linalg.norm(v)


@pytest.fixture
def conn(tmp_path: Path) -> Iterator[apsw.Connection]:
    connection = open_index(tmp_path / "i.sqlite", workspace=tmp_path).conn
    yield connection
    connection.close()


def add(
    conn: apsw.Connection, path: str, notes: list[tuple[str, np.ndarray]], heading: str = ""
) -> None:
    rows = [
        ChunkRow(i + 1, i + 1, heading, text, f"h{path}{i}") for i, (text, _) in enumerate(notes)
    ]
    replace_file(conn, FileState(path, "memory", "h" + path, 1, 1), rows)
    table = target_table(conn, "test", DIMS)
    ids = conn.execute("SELECT id, hash FROM chunks WHERE path = ? ORDER BY id", (path,))
    store_vectors(
        conn,
        table,
        [(int(i), str(h), to_blob(vec)) for (i, h), (_, vec) in zip(ids, notes, strict=True)],
    )


def query(
    conn: apsw.Connection, vector: np.ndarray, **extra: float | Baseline | None
) -> VectorQuery:
    table = target_table(conn, "test", DIMS)
    return VectorQuery(table, to_blob(vector), 0.0, 1.0, **extra)  # type: ignore[arg-type]


def search(conn: apsw.Connection, text: str, vector: VectorQuery, **settings: object) -> list[str]:
    result = run_search(
        conn,
        SearchQuery(text, min_score=0.0),
        SearchSettings(**settings),  # type: ignore[arg-type]
        CTX,
        vector,
        NOW,
    )
    return [f"{h.path}:{h.start_line}" for h in result.results]


def test_the_default_fusion_is_calibrated() -> None:
    assert SearchSettings().fusion == "calibrated"
    assert SearchSettings().date_aware


def test_scores_are_probabilities_and_rise_with_each_feature() -> None:
    base = {"lexical_rr": 0.0, "vector_gap": -0.5, "vector_rr": 0.0, "coverage": 0.0}
    low = calibrated_score(base)
    assert 0.0 < low < 1.0
    for name, value in (
        ("lexical_rr", 1.0),
        ("vector_gap", 0.0),
        ("vector_rr", 1.0),
        ("coverage", 1.0),
        ("date_match", 1.0),
        ("neighbour", 1.0),
    ):
        assert calibrated_score({**base, name: value}) > low


def test_coverage_is_the_best_single_line() -> None:
    assert coverage("oolong here\ntea there", ["oolong", "tea"]) == 0.5
    assert coverage("oolong tea\nnothing", ["oolong", "tea"]) == 1.0
    assert coverage("乌龙茶很好", ["乌龙", "龙茶"]) == 1.0
    assert coverage("anything", []) == 0.0


def test_neighbours_are_candidates_of_one_file_within_two_lines() -> None:
    spans = {
        1: ("a.md", 1, 10),
        2: ("a.md", 9, 20),  # overlaps 1
        3: ("a.md", 22, 30),  # starts two lines after 2 ends (a blank line between)
        4: ("a.md", 33, 40),  # three lines after 3: not a neighbour
        5: ("b.md", 11, 20),  # next to 1's lines, but another file
    }
    estimate = {1: 0.9, 2: 0.2, 3: 0.5, 4: 0.7, 5: 0.99}
    assert neighbour_best(spans, estimate) == {1: 0.2, 2: 0.9, 3: 0.2, 4: 0.0, 5: 0.0}
    assert neighbour_best({}, {}) == {}


@pytest.mark.parametrize(
    ("query_text", "match", "follow_up"),
    [
        ("oolong", "Wei drinks oolong every morning", "she brews it in a clay pot"),
        ("乌龙茶", "魏每天早上喝乌龙茶", "她用紫砂壶泡"),
        ("улун", "Вэй каждое утро пьёт улун", "она заваривает его в глиняном чайнике"),
    ],
)
def test_a_chunk_next_to_a_strong_match_outranks_an_equal_one_elsewhere(
    conn: apsw.Connection,
    monkeypatch: pytest.MonkeyPatch,
    query_text: str,
    match: str,
    follow_up: str,
) -> None:
    """The same follow-up line in two files, found by the vector leg alone:
    the copy elsewhere is a little nearer the query, the copy right after
    the line that matches wins by its neighbour."""
    q = unit(1.0)
    add(conn, "b.md", [(follow_up, unit(1.0, 0.55))])
    add(conn, "a.md", [(match, unit(1.0, 0.1)), (follow_up, unit(1.0, 0.6))])
    add(conn, "c.md", [(f"filler {i}", unit(0.0, 0.0, 1.0)) for i in range(10)])
    hits = search(conn, query_text, query(conn, q))
    assert hits[:3] == ["a.md:1", "a.md:2", "b.md:1"], hits
    without = ["a.md:1", "b.md:1", "a.md:2"]
    assert search(conn, query_text, query(conn, q), neighbours=False)[:3] == without
    # The neighbour counts in both estimates (the first three get a second one).
    monkeypatch.setitem(calibrated.WEIGHTS, "neighbour", 0.0)  # type: ignore[arg-type]
    monkeypatch.setitem(calibrated.HEAD_WEIGHTS, "neighbour", 0.0)  # type: ignore[arg-type]
    assert search(conn, query_text, query(conn, q))[:3] == without


@pytest.mark.parametrize(
    ("query_text", "spread", "together"),
    [
        (
            "Which tea does Wei brew in the morning?",
            "Wei came by\nwe talked about tea\nshe likes to brew\nin the morning",
            "Wei brews tea every morning",
        ),
        ("魏早上用紫砂壶泡什么茶？", "她来了\n我们聊到紫砂\n她喜欢茶", "魏每天早上用紫砂壶泡茶"),
        (
            "Какой чай Вэй заваривает по утрам?",
            "Вэй зашла\nмы говорили про чай\nона любит заваривать\nпо утрам",
            "Вэй по утрам заваривает чай",
        ),
    ],
)
def test_the_first_three_are_ordered_by_a_second_estimate(
    query_text: str, spread: str, together: str
) -> None:
    """The first estimate puts first the chunk both legs rank first, its
    query words spread over lines; the second, for the first three only,
    puts first the one that holds them on one line, ranked second by both.
    Past the third, candidates keep their first estimate, and every score
    still falls down the list."""
    terms = query_terms(query_text)
    assert coverage(spread, terms) < coverage(together, terms)

    def candidate(i: int, text: str, score: float) -> Candidate:
        return Candidate(i, f"{i}.md", "memory", 1, 1, "", text, score, score, score)

    texts = [spread, together, together, together]
    lexical = [candidate(i, t, 0.9 - 0.1 * i) for i, t in enumerate(texts)]
    nearest = [candidate(i, t, 0.8 if i < 2 else 0.7) for i, t in enumerate(texts)]

    def fused(head: bool) -> list[Candidate]:
        return fuse_calibrated(lexical, nearest, vector_scores={}, terms=terms, head=head)

    first, second = fused(head=False), fused(head=True)
    assert [c.id for c in first] == [0, 1, 2, 3]
    assert [c.id for c in second[:2]] == [1, 0]
    assert [c.score for c in second] == sorted((c.score for c in second), reverse=True)
    assert next(c.score for c in second if c.id == 3) == first[3].score
    assert next(c.score for c in second if c.id == 1) != first[1].score


def test_an_observer_sees_every_candidate_with_the_features_it_is_scored_by() -> None:
    """What `bench.fusion_fit` fits on: the first estimate's logits order
    the candidates as the fusion does without its second estimate."""
    texts = ["oolong tea here", "tea", "oolong", "nothing"]
    lexical = [
        Candidate(i, "a.md", "memory", 3 * i + 1, 3 * i + 2, "", t, 0.9 - 0.2 * i, None, 0.0)
        for i, t in enumerate(texts[:3])
    ]
    nearest = [Candidate(3, "b.md", "memory", 1, 1, "", texts[3], None, 0.5, 0.5)]
    seen: list[calibrated.Described] = []
    fused = fuse_calibrated(
        lexical,
        nearest,
        vector_scores={0: 0.4, 1: 0.3, 2: 0.2},
        terms=["oolong", "tea"],
        head=False,
        observe=seen.append,
    )
    (described,) = seen
    assert sorted(described.found) == [0, 1, 2, 3]
    assert all(set(f) == {*calibrated.WEIGHTS} for f in described.features.values())
    assert described.features[0]["coverage"] == 1.0
    by_logit = sorted(described.logits, key=lambda i: -described.logits[i])
    assert [c.id for c in fused] == by_logit


def test_a_keyword_hit_the_model_dislikes_ranks_below_one_it_likes(conn: apsw.Connection) -> None:
    q = unit(1.0)
    add(
        conn,
        "a.md",
        [
            ("tea tea tea, tea everywhere", unit(0.0, 1.0)),  # best BM25, unrelated vector
            ("a cup of tea with Wei", unit(1.0, 0.2)),  # weaker BM25, near the query
            *((f"filler {i}", unit(0.0, 0.0, 1.0)) for i in range(10)),
        ],
    )
    result = run_search(
        conn, SearchQuery("tea", min_score=0.0), SearchSettings(), CTX, query(conn, q), NOW
    )
    first, second = result.results[:2]
    assert (first.start_line, second.start_line) == (2, 1)
    assert first.text_score is not None
    assert second.text_score is not None
    assert first.text_score < second.text_score


def test_keyword_only_candidates_get_their_vector_score_from_the_index(
    conn: apsw.Connection,
) -> None:
    q = unit(1.0)
    notes = [(f"unrelated {i}", unit(1.0, 0.1 * i)) for i in range(12)]
    notes.append(("rare keyword zebra", unit(0.2, 1.0)))
    add(conn, "a.md", notes)
    lexical = [Candidate(13, "a.md", "memory", 13, 13, "", "rare keyword zebra", 0.8, None, 0.8)]
    merged = fuse_calibrated(lexical, [], vector_scores={13: 0.1}, terms=["zebra"])
    assert merged[0].vector_score == 0.1
    table_result = run_search(
        conn,
        SearchQuery("zebra", limit=1, min_score=0.0),
        SearchSettings(),
        CTX,
        query(conn, q),
        NOW,
    )
    hit = next(h for h in table_result.results if h.start_line == 13)
    assert hit.vector_score is not None
    assert hit.vector_score < 0.5


def test_a_date_in_the_query_prefers_that_days_notes_in_three_languages(
    conn: apsw.Connection,
) -> None:
    q = unit(1.0)
    same = unit(1.0, 0.3)
    add(conn, "memory/2022-05-25.md", [("Nate made dinner for Joanna", same)])
    add(conn, "memory/2022-10-25.md", [("Nate made dinner for Joanna again", same)])
    add(
        conn,
        "notes/trips.md",
        [("Nate made dinner for Joanna", same)],
        heading="Trip > 3 June 2022",
    )
    for text in (
        "What did Nate do for Joanna on 25 May, 2022?",
        "Nate Joanna 2022年5月25日",
        "Nate Joanna 25 мая 2022",
    ):
        assert search(conn, text, query(conn, q))[0] == "memory/2022-05-25.md:1", text
    assert search(conn, "Nate Joanna 3 June 2022", query(conn, q))[0] == "notes/trips.md:1"
    # without date awareness, "25" and "2022" are keywords every file shares
    assert search(conn, "Nate Joanna on 25 October 2022", query(conn, q))[0] == (
        "memory/2022-10-25.md:1"
    )


@pytest.mark.parametrize(
    ("query_text", "day_note", "elsewhere", "away"),
    [
        (
            "How did the talk go on 14 May?",
            "Presented the migration plan to the team",
            "Everyone came to the talk",
            0.5,
        ),
        ("5月14日的讲座怎么样？", "给团队讲了迁移方案", "大家都来听讲座", 0.8),
        (
            "Как прошёл доклад 14 мая?",
            "Рассказал команде про план миграции",
            "Доклад Прии слушали все",
            0.5,
        ),
    ],
)
def test_the_best_chunk_of_a_day_the_query_names_comes_first(
    conn: apsw.Connection,
    monkeypatch: pytest.MonkeyPatch,
    query_text: str,
    day_note: str,
    elsewhere: str,
    away: float,
) -> None:
    """With the day read, what is left of the question ("the talk") is a
    word another day's note holds and the named day's note does not: that
    day's best chunk is lifted above it, as it is not without ``day_best``."""
    q = unit(1.0)
    add(conn, "memory/2026-05-14.md", [(day_note, unit(1.0, away))])
    add(conn, "memory/2026-06-03.md", [(elsewhere, unit(1.0, 0.8))])
    add(conn, "c.md", [(f"filler {i}", unit(0.0, 0.0, 1.0)) for i in range(10)])
    hits = search(conn, query_text, query(conn, q))
    assert hits[:2] == ["memory/2026-05-14.md:1", "memory/2026-06-03.md:1"], hits
    monkeypatch.setitem(calibrated.WEIGHTS, "day_best", 0.0)  # type: ignore[arg-type]
    monkeypatch.setitem(calibrated.HEAD_WEIGHTS, "day_best", 0.0)  # type: ignore[arg-type]
    assert search(conn, query_text, query(conn, q))[0] == "memory/2026-06-03.md:1"


def test_only_the_best_candidate_of_each_named_days_file_is_lifted() -> None:
    """Lifting every chunk of the day would fill the first ten with one long
    session; only the best of each of its files gets ``day_best``, and only
    when the query names days (not a month or a year)."""

    def candidate(i: int, path: str, score: float) -> Candidate:
        return Candidate(i, path, "memory", 10 * i, 10 * i + 1, "", f"text {i}", None, score, score)

    nearest = [
        candidate(0, "memory/2026-05-14.md", 0.5),
        candidate(1, "memory/2026-05-14.md", 0.7),  # the day's best
        candidate(2, "memory/2026-05-15.md", 0.4),  # within the slack: a day's file too
        candidate(3, "memory/2026-06-03.md", 0.9),  # not the day
    ]

    def lifted(days_named: bool) -> dict[int, float]:
        seen: list[calibrated.Described] = []
        fuse_calibrated(
            [],
            nearest,
            vector_scores={},
            terms=["talk"],
            date_match=lambda c: c.path != "memory/2026-06-03.md",
            named_day=(lambda c: c.path == "memory/2026-05-14.md") if days_named else None,
            observe=seen.append,
        )
        (described,) = seen
        return {i: f["day_best"] for i, f in described.features.items() if f["day_best"]}

    # the slack day's file counts a little less than the day's own
    assert lifted(days_named=True) == {1: 1.0, 2: calibrated.SLACK_DAY_BEST}
    assert lifted(days_named=False) == {}


def test_relative_dates_resolve_against_the_search_time(conn: apsw.Connection) -> None:
    q = unit(1.0)
    same = unit(1.0, 0.3)
    add(conn, "memory/2025-11-23.md", [("standup notes about the billing bug", same)])
    add(conn, "memory/2025-10-15.md", [("standup notes about the billing bug too", same)])
    yesterday = search(conn, "billing standup yesterday", query(conn, q))
    assert yesterday[0] == "memory/2025-11-23.md:1"
    last_month = search(conn, "上个月的 billing standup", query(conn, q))
    assert last_month[0] == "memory/2025-10-15.md:1"
    assert search(conn, "billing standup в прошлом месяце", query(conn, q))[0] == last_month[0]


def test_vector_evidence_needs_a_margin_over_the_query_baseline(conn: apsw.Connection) -> None:
    add(conn, "a.md", [("a short note", unit(1.0, 0.6))])
    q = unit(1.0)
    plain = query(conn, q)
    # cosine 0.857: evidence as is without a baseline
    assert plain.evidence(0.857) == 0.857
    calibrated = query(conn, q, null_cosine=0.84, evidence_width=0.1)
    assert calibrated.evidence(0.857) == pytest.approx(0.17)
    assert query(conn, q, null_cosine=0.5, evidence_width=0.1).evidence(0.857) == 0.857
    strict = run_search(conn, SearchQuery("zzzqqq"), SearchSettings(), CTX, calibrated, NOW)
    assert strict.results == ()
    assert strict.empty_reason == "below_min_score"
    assert strict.best_score == pytest.approx(0.17, abs=0.01)
    loose = run_search(conn, SearchQuery("zzzqqq"), SearchSettings(), CTX, plain, NOW)
    assert len(loose.results) == 1


@pytest.mark.parametrize(
    ("note", "question"),
    [
        ("- 买了乐歌的单臂显示器支架，629 元", "Which monitor arm did I buy?"),
        ("- Купил Соне рюкзак Ergobag за 14 990 рублей", "Which backpack did I buy for Sonya?"),
        ("- Bought the Ergotron single monitor arm, 189 EUR", "我买的是哪款显示器支架？"),
    ],
)
def test_a_note_in_another_script_than_the_question_is_judged_as_if_in_its_own(
    conn: apsw.Connection, note: str, question: str
) -> None:
    """The model puts a question nearer every text of its own language: its
    cosine with the note that answers it in another script falls below its
    baseline. Read higher by the question's distance to text about nothing
    in the note's script, the match is an answer; text in the question's
    own script is judged as before."""
    add(conn, "a.md", [(note, unit(1.0, 0.6))], heading="")  # cosine 0.857
    add(conn, "b.md", [(f"filler {i}", unit(0.0, 1.0)) for i in range(5)])
    own = "cjk" if question.startswith("我") else "latin"
    by_script = {"latin": 0.85, "cjk": 0.80, "cyrillic": 0.80}
    if own == "cjk":
        by_script = {"latin": 0.80, "cjk": 0.85, "cyrillic": 0.80}
    baseline = Baseline(0.85, by_script, own)
    flat = query(conn, unit(1.0), null_cosine=0.85, evidence_width=0.1)
    scripted = query(conn, unit(1.0), null_cosine=baseline, evidence_width=0.1)
    assert flat.evidence(0.857, note) == pytest.approx(0.07)
    raised = 0.857 + CROSS_SCRIPT_SHARE * 0.05  # the note's script is 0.05 further off
    assert scripted.evidence(0.857, note) == pytest.approx((raised - 0.85) / 0.1)
    own_script = "Bought a monitor arm" if own == "latin" else "买了显示器支架"
    assert scripted.evidence(0.857, own_script) == flat.evidence(0.857, own_script)

    before = run_search(conn, SearchQuery(question), SearchSettings(), CTX, flat, NOW)
    assert before.results == ()
    assert before.empty_reason == "below_min_score"
    answered = run_search(conn, SearchQuery(question), SearchSettings(), CTX, scripted, NOW)
    assert [h.path for h in answered.results] == ["a.md"]


@pytest.mark.parametrize(
    ("theirs", "own", "question", "script"),
    [
        (
            "- 买了乐歌的单臂显示器支架",
            "- Purchased an Ergotron desk mount",
            "Which monitor arm did I buy?",
            "latin",
        ),
        (
            "- Купил Ergotron на стол",
            "- 周末去超市买了水果和蔬菜",
            "我买的是哪款显示器支架？",
            "cjk",
        ),
    ],
)
def test_a_note_in_another_script_ranks_as_if_in_the_questions_own(
    conn: apsw.Connection, theirs: str, own: str, question: str, script: str
) -> None:
    """In a workspace of two languages, a note in the question's language
    would outrank, by that alone, a closer one in the other: the ranking
    reads a cosine across scripts that counts as evidence as much higher as
    the evidence does. The hit's own vector score stays the cosine's."""
    add(conn, "theirs.md", [(theirs, unit(1.0, 0.62))], heading="")  # cosine 0.850
    add(conn, "own.md", [(own, unit(1.0, 0.593))], heading="")  # cosine 0.860
    by_script = {"latin": 0.80, "cjk": 0.80, "cyrillic": 0.80}
    by_script[script] = 0.85
    flat = query(conn, unit(1.0), null_cosine=0.80, evidence_width=0.1)
    scripted = query(
        conn, unit(1.0), null_cosine=Baseline(0.80, by_script, script), evidence_width=0.1
    )
    settings = SearchSettings(min_score=0.0)
    before = run_search(conn, SearchQuery(question), settings, CTX, flat, NOW)
    assert [h.path for h in before.results] == ["own.md", "theirs.md"]
    after = run_search(conn, SearchQuery(question), settings, CTX, scripted, NOW)
    assert [h.path for h in after.results] == ["theirs.md", "own.md"]
    shown = {h.path: h.vector_score for h in after.results}
    assert shown == {h.path: h.vector_score for h in before.results}

    # Below the bar (raised, its cosine still short of the baseline) the
    # note keeps its own: no note in another language is lifted at the
    # model's noise level.
    by_script = {key: value + 0.05 for key, value in by_script.items()}
    weak = Baseline(0.90, by_script, script)
    under = query(conn, unit(1.0), null_cosine=weak, evidence_width=0.1)
    noise = run_search(conn, SearchQuery(question), settings, CTX, under, NOW)
    assert [h.path for h in noise.results] == ["own.md", "theirs.md"]


@pytest.mark.parametrize(
    ("note", "unrelated", "related"),
    [
        ("the history of our GPS tracks", "history of the Byzantine empire", "GPS tracks history"),
        ("история GPS-треков курьеров", "история Византийской империи", "история треков GPS"),
        ("在职证明已经开好了", "费马大定理的证明", "在职证明"),
    ],
)
def test_one_shared_word_the_model_finds_unrelated_is_no_evidence(
    conn: apsw.Connection, note: str, unrelated: str, related: str
) -> None:
    """A keyword match of part of the query counts only where the vector
    evidence is above nothing; a chunk holding every word counts anyway."""
    add(conn, "a.md", [(note, unit(1.0, 0.6))], heading="")
    add(conn, "b.md", [(f"filler {i}", unit(0.0, 1.0)) for i in range(5)])
    q = query(conn, unit(1.0), null_cosine=0.9, evidence_width=0.1)  # cosine 0.857: below it
    reply = run_search(conn, SearchQuery(unrelated), SearchSettings(), CTX, q, NOW)
    assert reply.results == (), [h.snippet for h in reply.results]
    assert reply.empty_reason == "below_min_score"
    every_word = run_search(conn, SearchQuery(related), SearchSettings(), CTX, q, NOW)
    assert [h.path for h in every_word.results][:1] == ["a.md"]
    liked = query(conn, unit(1.0), null_cosine=0.8, evidence_width=0.1)  # above the baseline
    partial = run_search(conn, SearchQuery(unrelated), SearchSettings(), CTX, liked, NOW)
    assert [h.path for h in partial.results][:1] == ["a.md"]


@pytest.mark.parametrize(
    ("note", "mixed", "partial"),
    [
        ("Priya: the rehearsal ran long, cut the intro", "Priya 对我演讲彩排的反馈", "Priya lunch"),
        ("Nomad — кодовое имя проекта синхронизации", "Nomad 项目是谁负责的", "погода для проекта"),
        ("周末买了两斤乌龙茶", "where did I buy the 乌龙茶", "乌龙茶和咖啡"),
    ],
)
def test_a_note_holding_every_word_of_one_script_of_a_mixed_query_is_evidence(
    conn: apsw.Connection, note: str, mixed: str, partial: str
) -> None:
    """A question in one language naming something in another (a name in
    Latin letters in a Chinese question) asked of a note in the other: the
    note holds every word the query has in the note's script, and that
    counts, even where the model sees nothing in it. A note holding part of
    a query in one script is still judged by the model."""
    add(conn, "a.md", [(note, unit(1.0, 0.6))], heading="")
    add(conn, "b.md", [(f"filler {i}", unit(0.0, 1.0)) for i in range(5)])
    q = query(conn, unit(1.0), null_cosine=0.9, evidence_width=0.1)  # cosine 0.857: below it
    reply = run_search(conn, SearchQuery(mixed), SearchSettings(), CTX, q, NOW)
    assert [h.path for h in reply.results][:1] == ["a.md"]
    assert reply.results[0].evidence > 0.35
    unrelated = run_search(conn, SearchQuery(partial), SearchSettings(), CTX, q, NOW)
    assert unrelated.results == (), [h.snippet for h in unrelated.results]


def test_a_keyword_match_of_only_what_an_apostrophe_leaves_is_no_evidence(
    conn: apsw.Connection,
) -> None:
    """ "Fermat's" leaves an "s" that any note with a possessive holds: a
    chunk matching nothing else is judged by its vector evidence alone, even
    where the model finds it a little closer than nothing."""
    add(conn, "a.md", [("Biscuit's jab moved to 4 Jun", unit(1.0, 0.6))], heading="")
    add(conn, "b.md", [(f"filler {i}", unit(0.0, 1.0)) for i in range(5)])
    liked = query(conn, unit(1.0), null_cosine=0.85, evidence_width=0.1)  # evidence 0.07
    reply = run_search(
        conn, SearchQuery("proof of Fermat's theorem"), SearchSettings(), CTX, liked, NOW
    )
    assert reply.results == (), [h.snippet for h in reply.results]
    assert reply.best_score == pytest.approx(0.07, abs=0.01)
    # a word of the query beside the "s" is a partial match, judged as before
    named = run_search(conn, SearchQuery("Biscuit's vet"), SearchSettings(), CTX, liked, NOW)
    assert [h.path for h in named.results][:1] == ["a.md"]
    # and a query without an apostrophe is not affected
    plain = run_search(conn, SearchQuery("biscuit vet"), SearchSettings(), CTX, liked, NOW)
    assert [h.path for h in plain.results][:1] == ["a.md"]
    # nor a letter that is a word ("vitamin D" asked in Russian of English notes)
    add(conn, "c.md", [("Bloods: vitamin D 38 nmol/L", unit(1.0, 0.6))], heading="")
    asked = run_search(conn, SearchQuery("витамин D в анализах"), SearchSettings(), CTX, liked, NOW)
    assert [h.path for h in asked.results][:1] == ["c.md"]


def test_no_relaxed_fallback_for_partial_matches_unless_configured(
    conn: apsw.Connection,
) -> None:
    add(conn, "a.md", [(f"quantum note {i} with filler words", unit(0.0, 1.0)) for i in range(60)])
    q = unit(1.0)
    vq = query(conn, q)
    strict = run_search(
        conn, SearchQuery("lattice quantum chromodynamics"), SearchSettings(), CTX, vq, NOW
    )
    assert strict.results == ()
    relaxed = run_search(
        conn,
        SearchQuery("lattice quantum chromodynamics"),
        SearchSettings(relaxed_fallback=True),
        CTX,
        vq,
        NOW,
    )
    assert relaxed.results
    assert relaxed.threshold_relaxed
    every_word = run_search(conn, SearchQuery("quantum filler"), SearchSettings(), CTX, vq, NOW)
    assert every_word.results
    assert every_word.threshold_relaxed


def test_hybrid_off_searches_by_vectors_alone(conn: apsw.Connection) -> None:
    """OpenClaw's hybrid.enabled = false: the keyword leg is not consulted
    while vectors are there (the exact-word note the model dislikes is not
    found), and answers again when they are not."""
    add(
        conn,
        "a.md",
        [
            ("oolong oolong oolong", unit(0.0, 1.0)),  # the word, far from the query
            ("Wei drinks a green brew every morning", unit(1.0, 0.1)),  # near, no shared word
        ],
    )
    vector = query(conn, unit(1.0))
    settings = SearchSettings(hybrid=False)
    result = run_search(conn, SearchQuery("oolong", min_score=0.0), settings, CTX, vector, NOW)
    assert result.mode == "vector"
    assert result.results[0].start_line == 2
    assert all(h.text_score is None for h in result.results)
    keywords = run_search(conn, SearchQuery("oolong"), settings, CTX, None, NOW)
    assert (keywords.mode, [h.start_line for h in keywords.results]) == ("lexical", [1])


@pytest.mark.parametrize(
    ("question", "says_when", "does_not"),
    [
        (
            "Where did we volunteer last weekend?",
            "Volunteered at the food bank over the weekend with the whole team",
            "Volunteered at the animal shelter",
        ),
        (
            "Где мы были волонтёрами на выходных?",
            "Были волонтёрами в продуктовом банке на выходных всей командой",
            "Были волонтёрами в приюте для животных",
        ),
        ("周末我们在哪里做志愿者？", "周末全组在食物银行做志愿者", "在动物收容所做志愿者"),
    ],
    ids=["en", "ru", "zh"],
)
def test_a_date_no_candidate_is_about_stays_a_keyword(
    conn: apsw.Connection, question: str, says_when: str, does_not: str
) -> None:
    """No note is of last weekend: read as a date, "weekend" would lift
    nothing and be lost as a word; the note that says it comes first."""
    q = unit(1.0)
    add(conn, "notes/a.md", [(says_when, unit(1.0, 0.6))])
    add(conn, "notes/b.md", [(does_not, unit(1.0, 0.3))])
    add(conn, "c.md", [(f"filler {i}", unit(0.0, 0.0, 1.0)) for i in range(10)])
    assert search(conn, question, query(conn, q))[0] == "notes/a.md:1"
    # with a note of those days, the date is read and lifts it
    add(conn, "memory/2025-11-22.md", [(does_not, unit(1.0, 0.3))])
    assert search(conn, question, query(conn, q))[0] == "memory/2025-11-22.md:1"
