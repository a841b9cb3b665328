"""Snippets: around the match, within budget, on whole lines, never broken."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from openmemoryd.search import citation, make_snippet
from openmemoryd.search.snippet import best_line, holds_every, line_matches, without_lines
from openmemoryd.text import query_terms, safe_boundary


def test_short_chunks_are_shown_whole() -> None:
    snippet = make_snippet("a\nb\nc", 10, ["b"], 700)
    assert (snippet.text, snippet.start_line, snippet.end_line) == ("a\nb\nc", 10, 12)


def test_long_chunk_snippet_is_centred_on_the_matching_line() -> None:
    lines = [f"filler line number {i} about nothing in particular" for i in range(60)]
    lines[45] = "Wei prefers oolong tea"
    snippet = make_snippet("\n".join(lines), 1, ["oolong"], 300)
    assert "Wei prefers oolong tea" in snippet.text
    assert len(snippet.text) <= 300
    assert snippet.start_line <= 46 <= snippet.end_line
    shown = snippet.text.split("\n")
    assert shown == lines[snippet.start_line - 1 : snippet.end_line]


def test_line_with_most_query_terms_wins() -> None:
    lines = ["tea"] + ["x" * 50] * 30 + ["oolong tea with Wei"] + ["y" * 50] * 30
    snippet = make_snippet("\n".join(lines), 1, ["oolong", "tea", "wei"], 200)
    assert "oolong tea with Wei" in snippet.text


def test_stemmed_matches_count() -> None:
    lines = ["z" * 60] * 20 + ["she prefers green tea"] + ["z" * 60] * 20
    snippet = make_snippet("\n".join(lines), 1, ["preferences"], 150)
    assert "prefers" in snippet.text


def test_russian_inflections_and_yo_count() -> None:
    lines = ["- купили чай"] * 3 + ["- Олег принёс зелёный чай на встречу"] + ["- чай"] * 3
    assert best_line(lines, query_terms("встречи с Олегом, зеленого чая")) == (3, 4)


def test_one_huge_line_is_cut_around_the_match_without_breaking_characters() -> None:
    line = "👩‍👩‍👧" * 200 + " needle here " + "é" * 400
    snippet = make_snippet(line, 7, ["needle"], 120)
    assert "needle" in snippet.text
    assert len(snippet.text) <= 120
    assert (snippet.start_line, snippet.end_line) == (7, 7)
    start = line.index(snippet.text)
    end = start + len(snippet.text)
    assert safe_boundary(line, start) == start
    assert safe_boundary(line, end) == end


def test_cjk_snippet_budget_counts_characters() -> None:
    text = "\n".join(["缓存方案讨论记录" * 10] * 20)
    snippet = make_snippet(text, 1, ["缓存"], 700)
    assert len(snippet.text) <= 700


def test_citations() -> None:
    assert citation("MEMORY.md", 5, 7) == "MEMORY.md#L5-L7"
    assert citation("memory/2026-11-22.md", 3, 3) == "memory/2026-11-22.md#L3"


def test_lines_a_better_hit_showed_are_left_out_at_either_end() -> None:
    snippet = make_snippet("a\nb\nc\nd\ne", 10, [], 700)
    start = without_lines(snippet, {8, 9, 10, 11})
    assert start is not None
    assert (start.text, start.start_line, start.end_line) == ("c\nd\ne", 12, 14)
    end = without_lines(snippet, {13, 14, 15})
    assert end is not None
    assert (end.text, end.start_line, end.end_line) == ("a\nb\nc", 10, 12)


def test_a_snippet_with_nothing_new_is_none_and_one_with_nothing_shown_is_itself() -> None:
    snippet = make_snippet("a\n\nb", 3, [], 700)
    assert without_lines(snippet, {3, 4, 5}) is None
    assert without_lines(snippet, {3, 5}) is None  # only a blank line would be left
    assert without_lines(snippet, {1, 2, 6}) is snippet


def test_lines_shown_only_inside_a_snippet_keep_it_whole() -> None:
    """What is left must be one range of lines, so its citation stays exact."""
    snippet = make_snippet("a\nb\nc", 1, [], 700)
    assert without_lines(snippet, {2}) is snippet


def test_blank_lines_left_at_a_new_edge_go_too() -> None:
    snippet = make_snippet("a\nb\n\nc\n\nd", 1, [], 700)
    trimmed = without_lines(snippet, {1, 2, 6})
    assert trimmed is not None
    assert (trimmed.text, trimmed.start_line, trimmed.end_line) == ("c", 4, 4)


def test_a_window_cut_from_one_long_line_is_never_trimmed() -> None:
    line = "filler " * 60 + "oolong " + "filler " * 60
    snippet = make_snippet(line, 7, ["oolong"], 100)
    assert snippet.cut
    assert without_lines(snippet, {7}) is snippet


def _best_by_brute_force(lines: list[str], terms: list[str]) -> tuple[int | None, int]:
    best, best_hits = None, -1
    for index, line in enumerate(lines):
        if line.strip() and line_matches(line, terms) > best_hits:
            best, best_hits = index, line_matches(line, terms)
    return best, max(best_hits, 0)


# "eternal" and "lantern" hold "tern" without matching it: a bound, not a match.
_WORDS = [
    *("tern", "terns", "ternary", "Tern", "ＴＥＲＮ", "eternal", "lantern"),
    *("乌龙", "乌龙茶", "Вэй", "вэя", "x", " ", "?"),
    # Russian stems read ё as е: "зелен" must bound and match "зелёный".
    *("зелёный", "Зеленого", "Ёлки", "елка"),
]


@settings(max_examples=400, deadline=None)
@given(
    lines=st.lists(st.lists(st.sampled_from(_WORDS), max_size=6).map(" ".join), max_size=8),
    terms=st.lists(
        st.sampled_from(["tern", "ternary", "乌龙", "вэй", "вэя", "x", "зелен", "елк"]), max_size=3
    ),
)
def test_best_line_bounded_search_agrees_with_trying_every_line(
    lines: list[str], terms: list[str]
) -> None:
    terms = list(dict.fromkeys(terms))
    assert best_line(lines, terms) == _best_by_brute_force(lines, terms)


@settings(max_examples=400, deadline=None)
@given(
    lines=st.lists(st.lists(st.sampled_from(_WORDS), max_size=6).map(" ".join), max_size=4),
    terms=st.lists(
        st.sampled_from(["tern", "ternary", "乌龙", "вэй", "вэя", "x", "зелен", "елк"]), max_size=3
    ),
)
def test_holds_every_agrees_with_counting_every_term(lines: list[str], terms: list[str]) -> None:
    """The substring pre-check never answers "no" for a text that holds them all."""
    terms = list(dict.fromkeys(terms))
    text = "\n".join(lines)
    assert holds_every(text, terms) == (line_matches(text, terms) == len(terms))


def test_a_snippet_ends_on_its_last_line_with_something_to_read() -> None:
    """A template's empty sections and closing rule after the one real line
    are left out, and the citation ends where the text does."""
    project = (
        "# PROJECT.md - Current Context\n\n\n\n## Overview\n\n"
        "- Migrating billing to Postgres 16\n\n## Goals\n\n\n## Constraints\n\n\n---\n"
    )
    snippet = make_snippet(project, 1, [], 700)
    assert snippet.text.endswith("- Migrating billing to Postgres 16")
    assert (snippet.start_line, snippet.end_line) == (1, 7)
    assert snippet.text.startswith("# PROJECT.md")  # the title above it stays
    for rule in ("***", "___", "- - -"):
        assert make_snippet(f"Kept\n{rule}\n", 3, [], 700).end_line == 3


def test_a_snippet_of_headings_alone_keeps_its_first_line() -> None:
    assert make_snippet("## Goals\n\n## Constraints", 5, [], 700).text == "## Goals"
    # a line that only looks like a heading or a rule is text
    kept = make_snippet("Plan\n#hashtag\n--", 1, [], 700)
    assert kept.text == "Plan\n#hashtag\n--"


@pytest.mark.parametrize(
    ("query", "held"),
    [
        ("女儿过敏", True),  # 儿过 only joins 女儿 and 过敏
        ("花生过敏", True),  # 生过 is in the note itself
        ("女儿生日", False),  # 生日 is not in it
        ("编辑器", False),  # 辑器 ends a word the note lacks
        ("北京烤鸭", False),
        ("daughter 女儿过敏", False),  # every other word is still needed
    ],
)
def test_holds_every_forgives_a_bigram_that_only_joins_two_held_words(
    query: str, held: bool
) -> None:
    note = "我女儿叫小雨，今年七岁，对花生过敏"
    assert holds_every(note, query_terms(query)) is held
