"""Scores, thresholds and reasons, on a real index."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import apsw
import pytest

from openmemoryd.config import SearchSettings
from openmemoryd.errors import BadRequest
from openmemoryd.search import SearchContext, SearchQuery, run_search
from openmemoryd.store import ChunkRow, FileState, open_index, replace_file

CTX = SearchContext(provider="none", model=None, stale=False)
SETTINGS = SearchSettings()


@pytest.fixture
def conn(tmp_path: Path) -> Iterator[apsw.Connection]:
    connection = open_index(tmp_path / "i.sqlite", workspace=tmp_path).conn
    yield connection
    connection.close()


def add(conn: apsw.Connection, path: str, *texts: str) -> None:
    rows = [ChunkRow(i + 1, i + 1, "", text, f"h{path}{i}") for i, text in enumerate(texts)]
    replace_file(conn, FileState(path, "memory", "h" + path, 1, 1), rows)


def test_empty_index_says_so(conn: apsw.Connection) -> None:
    result = run_search(conn, SearchQuery("oolong"), SETTINGS, CTX)
    assert result.results == ()
    assert result.empty_reason == "index_empty"


def test_no_match_and_no_terms(conn: apsw.Connection) -> None:
    add(conn, "a.md", "Wei prefers oolong tea")
    assert run_search(conn, SearchQuery("espresso"), SETTINGS, CTX).empty_reason == "no_match"
    assert run_search(conn, SearchQuery("?!…"), SETTINGS, CTX).empty_reason == "no_terms"


def test_blank_query_is_a_bad_request(conn: apsw.Connection) -> None:
    with pytest.raises(BadRequest, match="empty"):
        run_search(conn, SearchQuery("   "), SETTINGS, CTX)


def test_a_single_note_workspace_scores_an_exact_match_high(conn: apsw.Connection) -> None:
    """FTS5 alone gives idf ~0 when N is tiny; the padding rows fix that."""
    add(conn, "memory/2026-11-22.md", "Wei prefers oolong tea")
    result = run_search(conn, SearchQuery("oolong"), SETTINGS, CTX)
    assert result.results[0].score > 0.7
    assert not result.threshold_relaxed


def test_results_are_ordered_by_bm25_with_citations(conn: apsw.Connection) -> None:
    add(conn, "a.md", "oolong", "oolong oolong tea from Taiwan", "coffee only")
    add(conn, "b.md", "green tea")
    add(conn, "c.md", *(f"filler {i}" for i in range(30)))
    result = run_search(conn, SearchQuery("oolong tea"), SETTINGS, CTX)
    assert [h.snippet for h in result.results][:2] == ["oolong oolong tea from Taiwan", "oolong"]
    scores = [h.score for h in result.results]
    assert scores == sorted(scores, reverse=True)
    assert len(set(scores)) == len(scores)  # the #5767 bug made them all equal
    top = result.results[0]
    assert (top.path, top.start_line, top.end_line, top.citation) == ("a.md", 2, 2, "a.md#L2")
    assert top.text_score == top.score
    assert top.vector_score is None


def test_limit(conn: apsw.Connection) -> None:
    add(conn, "a.md", *(f"tea note {i} " + "x" * i for i in range(20)))
    assert len(run_search(conn, SearchQuery("tea", limit=3), SETTINGS, CTX).results) == 3
    assert len(run_search(conn, SearchQuery("tea"), SETTINGS, CTX).results) == SETTINGS.limit


def test_default_threshold_never_hides_keyword_matches(conn: apsw.Connection) -> None:
    """A term in most chunks has BM25 idf ~0; the default threshold must not hide it."""
    add(conn, "a.md", *(f"Wei note number {i}" for i in range(120)))
    result = run_search(conn, SearchQuery("Wei"), SETTINGS, CTX)
    assert len(result.results) == SETTINGS.limit
    assert result.threshold_relaxed is True
    assert all(h.score < SETTINGS.min_score for h in result.results)


def test_a_possessive_does_not_add_a_word_the_note_must_hold(conn: apsw.Connection) -> None:
    """Every word of "Wei's favourite tea" is in the note, its "s" aside."""
    add(conn, "a.md", *(f"Wei favourite tea note {i}" for i in range(120)))
    result = run_search(conn, SearchQuery("Wei's favourite tea"), SETTINGS, CTX)
    assert result.threshold_relaxed is True
    assert len(result.results) == SETTINGS.limit


def test_explicit_min_score_is_strict_and_reports_the_best(conn: apsw.Connection) -> None:
    add(conn, "a.md", "Wei likes tea", "other words here", "more words here")
    result = run_search(conn, SearchQuery("tea", min_score=0.99), SETTINGS, CTX)
    assert result.results == ()
    assert result.empty_reason == "below_min_score"
    assert result.best_score is not None
    assert 0 < result.best_score < 0.99


def test_each_hit_says_what_min_score_judged_it_by(conn: apsw.Connection) -> None:
    add(conn, "a.md", "Wei likes tea", "other words here", "more words here")
    result = run_search(conn, SearchQuery("tea", min_score=0.1), SETTINGS, CTX)
    (hit,) = result.results
    # no vector leg: the keyword score is the evidence
    assert hit.evidence == hit.text_score
    assert hit.evidence is not None
    assert hit.evidence >= result.min_score


def test_source_filter(conn: apsw.Connection) -> None:
    add(conn, "a.md", "oolong")
    replace_file(
        conn,
        FileState("sessions/x.jsonl", "sessions", "hx", 1, 1),
        [ChunkRow(1, 1, "", "oolong in a session", "hs")],
    )
    only = run_search(conn, SearchQuery("oolong", sources=("sessions",)), SETTINGS, CTX)
    assert [h.source for h in only.results] == ["sessions"]


def test_overlapping_chunks_showing_the_same_lines_are_reported_once(
    conn: apsw.Connection,
) -> None:
    rows = [
        ChunkRow(1, 3, "", "alpha\nbeta\nomega oolong", "h1"),
        ChunkRow(3, 3, "", "omega oolong", "h2"),
    ]
    replace_file(conn, FileState("a.md", "memory", "h", 1, 1), rows)
    narrow = SearchSettings(snippet_chars=80)
    result = run_search(conn, SearchQuery("oolong"), narrow, CTX)
    keys = [(h.path, h.start_line, h.end_line) for h in result.results]
    assert len(keys) == len(set(keys))


def test_a_hit_leaves_out_the_lines_a_better_hit_of_its_file_shows(
    conn: apsw.Connection,
) -> None:
    """Chunks overlap: the second hit starts after the lines the first showed,
    and a chunk whose every line was shown is no hit at all."""
    rows = [
        ChunkRow(1, 3, "", "oolong oolong tea\nWei likes it\nbrewed at 90 degrees", "h1"),
        ChunkRow(2, 5, "", "Wei likes it\nbrewed at 90 degrees\noolong again\nfrom Fujian", "h2"),
        ChunkRow(2, 3, "", "Wei likes it\nbrewed at 90 degrees oolong", "h3"),
    ]
    replace_file(conn, FileState("a.md", "memory", "h", 1, 1), rows)
    trimmed = run_search(conn, SearchQuery("oolong", min_score=0.0), SETTINGS, CTX).results
    assert [(h.start_line, h.end_line) for h in trimmed] == [(1, 3), (4, 5)]
    assert trimmed[1].snippet == "oolong again\nfrom Fujian"
    assert trimmed[1].citation == "a.md#L4-L5"
    whole = SearchSettings(trim_overlap=False)
    repeated = run_search(conn, SearchQuery("oolong", min_score=0.0), whole, CTX).results
    assert sorted((h.start_line, h.end_line) for h in repeated) == [(1, 3), (2, 3), (2, 5)]


@pytest.mark.parametrize(
    ("query", "lines"),
    [
        ("乌龙茶", ["魏喜欢乌龙茶和乌龙茶点心", "每天早上喝", "九十度的水", "乌龙茶来自福建"]),
        (
            "улун",
            [
                "Вэй любит улун, улун с утра",
                "каждый день",
                "вода девяносто градусов",
                "улун из Фуцзяня",
            ],
        ),
    ],
)
def test_trimming_in_chinese_and_russian(
    conn: apsw.Connection, query: str, lines: list[str]
) -> None:
    first, second = "\n".join(lines[:3]), "\n".join(lines[1:])
    rows = [ChunkRow(1, 3, "", first, "h1"), ChunkRow(2, 4, "", second, "h2")]
    replace_file(conn, FileState("m.md", "memory", "h", 1, 1), rows)
    hits = run_search(conn, SearchQuery(query, min_score=0.0), SETTINGS, CTX).results
    assert [(h.start_line, h.end_line, h.snippet) for h in hits] == [
        (1, 3, first),
        (4, 4, lines[3]),
    ]


def test_trimming_never_joins_lines_of_different_files(conn: apsw.Connection) -> None:
    add(conn, "a.md", "oolong tea")
    add(conn, "b.md", "oolong tea")
    result = run_search(conn, SearchQuery("oolong"), SETTINGS, CTX).results
    assert sorted((h.path, h.snippet) for h in result) == [
        ("a.md", "oolong tea"),
        ("b.md", "oolong tea"),
    ]


def test_stale_flag_is_passed_through(conn: apsw.Connection) -> None:
    add(conn, "a.md", "oolong")
    stale = SearchContext(provider="none", model=None, stale=True)
    assert run_search(conn, SearchQuery("oolong"), SETTINGS, stale).stale is True
