"""A token budget on search answers (`max_tokens`): the best hits whole while
they fill most of it, later ones as their best line, everything cited exactly."""

from __future__ import annotations

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import Daemon, search_result
from omem_protocol import SearchHit, SearchParams, SearchResult
from openmemoryd.search import citation
from openmemoryd.search.budget import (
    ELLIPSIS,
    budget_limit,
    budget_terms,
    cost,
    cut,
    hit_cost,
    within_budget,
)
from openmemoryd.text import estimate_tokens, line_cost


def hit(snippet: str, rank: int, start_line: int = 1) -> SearchHit:
    path = f"memory/2026-11-{rank:02d}.md"
    end_line = start_line + snippet.count("\n")
    return SearchHit(
        path=path,
        start_line=start_line,
        end_line=end_line,
        score=1.0 - rank / 100,
        text_score=None,
        vector_score=None,
        snippet=snippet,
        source="memory",
        citation=citation(path, start_line, end_line),
    )


def result(*snippets: str, mode: str = "hybrid") -> SearchResult:
    return search_result(
        [hit(s, i + 1, start_line=10 * i + 1) for i, s in enumerate(snippets)], mode
    )


def chunk(topic: str, n: int) -> str:
    """Four lines of filler with *topic* on line *n* (0-based)."""
    lines = [f"- filler line {i} about nothing in particular " + "x" * 20 for i in range(4)]
    lines[n] = f"- the {topic} line"
    return "\n".join(lines)


def spent(trimmed: SearchResult) -> int:
    return sum(hit_cost(h) for h in trimmed.results)


def test_best_hits_whole_then_later_ones_as_their_best_line() -> None:
    hits = [chunk("glacier", 3), chunk("glacier", 1), chunk("glacier", 2), chunk("glacier", 0)]
    whole = hit_cost(hit(hits[0], 1))
    budget = int(whole / 0.7) + 1 + 25  # the first fills the whole share
    trimmed = within_budget(result(*hits), budget, ["glacier"])
    first, *lines = trimmed.results
    assert first.snippet == hits[0]  # whole
    assert lines, "later hits are shown as their best line"
    for shown in lines:
        assert shown.snippet.endswith("the glacier line")
        assert shown.start_line == shown.end_line
        original = next(h for h in result(*hits).results if h.path == shown.path)
        offset = original.snippet.split("\n").index(shown.snippet)
        assert shown.start_line == original.start_line + offset  # the line it is
        assert shown.citation == f"{shown.path}#L{shown.start_line}"
    assert spent(trimmed) <= budget
    assert trimmed.budget_omitted == len(hits) - len(trimmed.results)


def test_hits_are_whole_while_they_fill_the_whole_share() -> None:
    hits = [chunk("moraine", i % 4) for i in range(5)]
    one = hit_cost(hit(hits[0], 1, 1))
    budget = 3 * one + 5  # room for three whole, but the share holds two
    trimmed = within_budget(result(*hits), budget, ["moraine"])
    sizes = [len(h.snippet.split("\n")) for h in trimmed.results]
    assert sizes[:2] == [4, 4]
    assert all(size == 1 for size in sizes[2:])
    assert len(sizes) > 3
    assert spent(trimmed) <= budget


def test_a_budget_that_holds_everything_changes_nothing() -> None:
    whole = result("short one", "short two")
    assert within_budget(whole, 1000, ["short"]) is whole
    # also when it takes more than the whole share: nothing needs leaving out
    many = result(*(chunk("tern", 1) for _ in range(3)))
    assert within_budget(many, spent(many), ["tern"]) is many


def test_a_line_that_does_not_fit_is_passed_over_for_a_later_one() -> None:
    long_line = "- the fjord " + "word " * 60  # ~70 tokens
    hits = ["- fjord start", long_line, "- the fjord again"]
    budget = hit_cost(hit(hits[0], 1)) + 30
    trimmed = within_budget(result(*hits), budget, ["fjord"])
    assert [h.snippet for h in trimmed.results] == ["- fjord start", "- the fjord again"]
    assert trimmed.budget_omitted == 1
    assert spent(trimmed) <= budget


def test_a_line_already_shown_is_not_shown_again() -> None:
    # with search.trim_overlap off, overlapping chunks of one file repeat lines
    first = hit(chunk("tern", 1), 1, start_line=1)
    twin = msgspec.structs.replace(hit(chunk("tern", 1), 2, start_line=1), path=first.path)
    other = hit(chunk("tern", 2), 3, start_line=1)
    answer = msgspec.structs.replace(result(), results=(first, twin, other))
    trimmed = within_budget(answer, hit_cost(first) + 25, ["tern"])
    assert [h.path for h in trimmed.results] == [first.path, other.path]
    assert trimmed.results[1].snippet == "- the tern line"


def test_the_best_hit_over_budget_shows_the_lines_around_its_best_line() -> None:
    lines = [f"- line {n} " + "x" * 30 for n in range(12)]
    lines[8] = "- the crevasse line"
    trimmed = within_budget(result("\n".join(lines), "second"), 40, ["crevasse"])
    (first,) = trimmed.results
    shown = first.snippet.split("\n")
    assert "- the crevasse line" in shown  # not the leading lines
    assert shown[0] != lines[0]
    assert first.start_line == 1 + lines.index(shown[0])
    assert first.end_line == first.start_line + len(shown) - 1
    assert first.citation == f"{first.path}#L{first.start_line}-L{first.end_line}"
    assert hit_cost(first) <= 40
    assert trimmed.budget_omitted == 1


def test_the_best_hit_whose_best_line_alone_is_over_budget_is_cut_not_dropped() -> None:
    trimmed = within_budget(result("word " * 200, "second"), 20, ["word"])
    (first,) = trimmed.results
    assert first.snippet.endswith(ELLIPSIS)
    assert first.snippet.startswith("word word")
    assert hit_cost(first) <= 20
    assert first.end_line == first.start_line
    assert trimmed.budget_omitted == 1


def test_a_timeline_is_kept_in_order_and_cut_at_a_line_boundary() -> None:
    second = "\n".join(f"line {n} " + "x" * 36 for n in range(6))  # 6 lines of 12 tokens
    days = result("a" * 40, second, "third", mode="timeline")
    first_cost = hit_cost(days.results[0])
    budget = first_cost + line_cost(days.results[1].citation) + 30
    trimmed = within_budget(days, budget, [])
    first, cut_hit = trimmed.results
    assert first.snippet == "a" * 40
    assert cut_hit.snippet == "\n".join(second.split("\n")[:2])  # the leading lines, in order
    assert (cut_hit.start_line, cut_hit.end_line) == (11, 12)
    assert cut_hit.citation.endswith("#L11-L12")
    assert trimmed.budget_omitted == 1  # "third" is left out; the trimmed hit is kept


def test_cjk_is_counted_a_token_a_character() -> None:
    chinese = "用户喜欢在周末写代码并且讨厌开会" * 3  # 48 tokens
    assert estimate_tokens(cut(chinese, 10)) <= 10
    assert cut(chinese, 10).startswith("用户喜欢")
    kept = within_budget(result(chinese, "ok"), 80, ["写代码"])
    assert len(kept.results) == 2
    lines = "\n".join(["今天下雨", "用户喜欢乌龙茶", "明天开会"] * 3)
    packed = within_budget(result(lines, lines, lines), 40, budget_terms("乌龙茶"))
    assert [h.snippet for h in packed.results[1:]] == ["用户喜欢乌龙茶"] * (len(packed.results) - 1)


def test_a_russian_hit_shows_its_best_line() -> None:
    lines = "\n".join(
        ["- Погода была хорошая", "- Вэй любит улун и пуэр", "- Завтра совещание"] * 3
    )
    answer = result("- Вэй пьёт чай по утрам", lines, lines)
    packed = within_budget(answer, 60, budget_terms("какой чай любит Вэй"))
    assert len(packed.results) >= 2
    assert [h.snippet for h in packed.results[1:]] == ["- Вэй любит улун и пуэр"] * (
        len(packed.results) - 1
    )
    assert all(h.start_line == h.end_line for h in packed.results[1:])


def test_the_best_line_is_chosen_without_the_query_dates() -> None:
    assert budget_terms("what did Nate cook on 25 May, 2022?") == budget_terms(
        "what did Nate cook?"
    )
    assert "may" not in budget_terms("what did Nate cook on 25 May, 2022?")
    assert budget_terms("что Нейт готовил 25 мая 2022 года") == budget_terms("что Нейт готовил")


def test_a_budget_without_a_limit_considers_more_hits() -> None:
    assert budget_limit(100, 6) == 6
    assert budget_limit(1500, 6) == 38
    assert budget_limit(1_000_000, 6) == 50
    assert budget_limit(1500, 60) == 60


def test_zero_or_negative_budgets_are_refused_on_the_wire() -> None:
    for bad in (0, -5):
        with pytest.raises(msgspec.ValidationError, match="max_tokens"):
            msgspec.convert({"query": "x", "max_tokens": bad}, SearchParams)


def test_a_cut_never_splits_a_visible_character() -> None:
    family = "\U0001f468\u200d\U0001f469\u200d\U0001f467"  # one emoji, five code points
    line = "e\u0301" * 30 + family * 10
    for budget in range(2, 40):
        shown = cut(line, budget)
        if shown == line:  # it fits whole
            assert cost(line) <= budget
            continue
        assert shown.endswith(ELLIPSIS)
        body = shown[: -len(ELLIPSIS)]
        assert line.startswith(body)
        assert not body.endswith("e"), budget  # the accent stays with its letter
        assert not body.endswith("\u200d"), budget
        assert cost(shown) <= budget or body == ""


@pytest.mark.e2e
def test_max_tokens_through_the_real_daemon_and_cli(daemon: Daemon) -> None:
    with daemon.client() as client:
        for n in range(12):
            filler = "\n".join(
                f"- day {n} entry {i}: " + "notes about the weather " * 3 for i in range(5)
            )
            note = f"{filler}\n- the moraine moved {n} metres downhill\n{filler}"
            client.append(note, path=f"memory/glacier-{n:02d}.md")
        everything = client.search("moraine moved", limit=12, min_score=0)
        budgeted = client.search("moraine moved", max_tokens=400, min_score=0)
        for shown in budgeted.results:  # every citation reads back as what was shown
            got = client.get(
                shown.path, from_line=shown.start_line, lines=shown.end_line - shown.start_line + 1
            )
            assert got.text.rstrip("\n") == shown.snippet
    assert len(everything.results) == 12
    assert sum(hit_cost(h) for h in budgeted.results) <= 400
    lines = [h for h in budgeted.results if h.start_line == h.end_line]
    assert lines
    assert all("the moraine moved" in h.snippet for h in lines)
    assert len(budgeted.results) > 400 // max(hit_cost(h) for h in everything.results)
    # without a limit it considered what 400 tokens of single lines could show
    assert len(budgeted.results) + budgeted.budget_omitted == budget_limit(400, 6)
    shown = daemon.cli("search", "moraine", "moved", "--max-tokens", "120")
    assert shown.returncode == 0, shown.stderr
    assert "left out to stay within the token budget" in shown.stderr
    refused = daemon.cli("search", "glacier", "--max-tokens", "0")
    assert refused.returncode == 2


_ALPHABET = [*"abc tern 用户乌龙 Вэй?!", "e\u0301", "\U0001f468\u200d\U0001f469"]
_LINE = st.lists(st.sampled_from(_ALPHABET), max_size=60).map("".join)


@settings(max_examples=300, deadline=None)
@given(
    snippets=st.lists(
        st.lists(_LINE, min_size=1, max_size=8).map("\n".join).filter(str.strip),
        min_size=1,
        max_size=8,
    ),
    budget=st.integers(min_value=1, max_value=400),
    share=st.floats(min_value=0.1, max_value=1.0),
    mode=st.sampled_from(["hybrid", "timeline"]),
)
def test_packing_keeps_its_promises(
    snippets: list[str], budget: int, share: float, mode: str
) -> None:
    answer = result(*snippets, mode=mode)
    packed = within_budget(answer, budget, ["tern", "乌龙", "вэй"], share)
    kept = packed.results
    assert kept, "the best hit is always shown"
    assert len(kept) + packed.budget_omitted == len(answer.results)
    originals = {h.path: h for h in answer.results}
    assert [originals[h.path].score for h in kept] == sorted(
        (originals[h.path].score for h in kept), reverse=True
    )  # rank order
    for shown in kept:
        original = originals[shown.path]
        lines = original.snippet.split("\n")
        first = shown.start_line - original.start_line
        count = shown.end_line - shown.start_line + 1
        assert first >= 0
        assert first + count <= len(lines)
        assert shown.citation == citation(shown.path, shown.start_line, shown.end_line)
        if shown.snippet.endswith(ELLIPSIS) and shown.snippet != lines[first]:
            assert shown is kept[0]  # only the best hit is cut inside a line
            assert count == 1
            assert lines[first].startswith(shown.snippet[: -len(ELLIPSIS)])
        else:
            assert shown.snippet == "\n".join(lines[first : first + count])
    cut_first = kept[0].snippet.endswith(ELLIPSIS) and kept[0].snippet != answer.results[0].snippet
    if not cut_first:
        assert spent(packed) <= budget or (len(kept) == 1 and hit_cost(kept[0]) > budget)
    if spent(answer) <= budget:
        assert packed is answer  # what fits is left as it is


def test_a_hits_line_is_never_a_heading_but_the_memory_under_it() -> None:
    # "deploy rollback" once showed a later hit as its heading alone: "## Deploy"
    first = chunk("glacier", 0)
    later = (
        "# 2026-11-13\n\n## Deploy\n\n"
        "The v2.4 release went out after the auth fix, canary at 5 %.\n\n## Заметки\n\n- разное"
    )
    budget = hit_cost(hit(first, 1)) + 30
    assert hit_cost(hit(later, 2)) > 30  # shown in part
    trimmed = within_budget(result(first, later), budget, ["deploy", "rollback"])
    shown = trimmed.results[1]
    assert shown.snippet == "The v2.4 release went out after the auth fix, canary at 5 %."
    assert shown.start_line == 11 + 4  # its own line, cited exactly
