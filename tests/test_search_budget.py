"""A token budget on search answers (`max_tokens`): hits kept in rank order
while they fit, the first cut to fit when it alone does not."""

from __future__ import annotations

import msgspec
import pytest

from conftest import Daemon
from omem_protocol import SearchHit, SearchParams, SearchResult
from openmemoryd.search.budget import ELLIPSIS, cost, cut, within_budget
from openmemoryd.text import estimate_tokens


def hit(snippet: str, rank: int) -> SearchHit:
    return SearchHit(
        path=f"memory/2026-11-{rank:02d}.md",
        start_line=1,
        end_line=2,
        score=1.0 - rank / 10,
        text_score=None,
        vector_score=None,
        snippet=snippet,
        source="memory",
        citation=f"memory/2026-11-{rank:02d}.md#L1-L2",
    )


def result(*snippets: str) -> SearchResult:
    return SearchResult(
        results=tuple(hit(s, i + 1) for i, s in enumerate(snippets)),
        mode="hybrid",
        provider="none",
        model=None,
        degraded=False,
        degraded_reason=None,
        fallback=False,
        stale=False,
        empty_reason=None,
        best_score=None,
        min_score=0.35,
        threshold_relaxed=False,
        took_ms=1.0,
    )


def test_hits_are_kept_in_rank_order_while_they_fit() -> None:
    snippets = ["a" * 40, "b" * 40, "c" * 40]  # 10 tokens + 1 for the line each
    trimmed = within_budget(result(*snippets), 25)
    assert [h.snippet for h in trimmed.results] == snippets[:2]
    assert trimmed.budget_omitted == 1
    assert sum(cost(h.snippet) for h in trimmed.results) <= 25


def test_a_budget_that_holds_everything_changes_nothing() -> None:
    whole = result("short one", "short two")
    assert within_budget(whole, 1000) is whole


def test_the_last_hit_is_trimmed_at_a_line_boundary() -> None:
    second = "\n".join(f"line {n} " + "x" * 36 for n in range(6))  # 6 lines of 12 tokens
    trimmed = within_budget(result("a" * 40, second, "third"), 11 + 30)
    first, cut_hit = trimmed.results
    assert first.snippet == "a" * 40
    assert cut_hit.snippet == "\n".join(second.split("\n")[:2])  # 2 whole lines fit in 30
    assert (cut_hit.start_line, cut_hit.end_line) == (1, 2)
    assert cut_hit.citation.endswith("#L1-L2")  # the citation shows what is shown
    assert trimmed.budget_omitted == 1  # "third" is left out; the trimmed hit is kept
    assert sum(cost(h.snippet) for h in trimmed.results) <= 41


def test_a_later_hit_with_no_whole_line_that_fits_is_left_out() -> None:
    trimmed = within_budget(result("a" * 40, "b" * 400), 15)
    assert [h.snippet for h in trimmed.results] == ["a" * 40]
    assert trimmed.budget_omitted == 1


def test_the_best_hit_alone_over_budget_is_cut_not_dropped() -> None:
    trimmed = within_budget(result("word " * 200, "second"), 20)
    (first,) = trimmed.results
    assert first.snippet.endswith(ELLIPSIS)
    assert cost(first.snippet) <= 20
    assert first.snippet.startswith("word word")
    assert first.end_line == first.start_line
    assert trimmed.budget_omitted == 1


def test_cjk_is_counted_a_token_a_character() -> None:
    chinese = "用户喜欢在周末写代码并且讨厌开会" * 3  # 48 tokens
    assert estimate_tokens(cut(chinese, 10)) <= 10
    assert cut(chinese, 10).startswith("用户喜欢")
    kept = within_budget(result(chinese, "ok"), 60)
    assert len(kept.results) == 2


def test_zero_or_negative_budgets_are_refused_on_the_wire() -> None:
    for bad in (0, -5):
        with pytest.raises(msgspec.ValidationError, match="max_tokens"):
            msgspec.convert({"query": "x", "max_tokens": bad}, SearchParams)


@pytest.mark.e2e
def test_max_tokens_through_the_real_daemon_and_cli(daemon: Daemon) -> None:
    with daemon.client() as client:
        for n in range(6):
            note = f"Glacier log {n}: the moraine moved {n} metres " + "with ice " * 15
            client.append(note, path=f"memory/glacier-{n}.md")
        everything = client.search("glacier moraine")
        budgeted = client.search("glacier moraine", max_tokens=60)
    assert len(everything.results) >= 3
    assert 1 <= len(budgeted.results) < len(everything.results)
    assert budgeted.budget_omitted == len(everything.results) - len(budgeted.results)
    assert sum(cost(h.snippet) for h in budgeted.results) <= 60
    shown = daemon.cli("search", "glacier", "moraine", "--max-tokens", "60")
    assert shown.returncode == 0, shown.stderr
    assert "left out to stay within the token budget" in shown.stderr
    refused = daemon.cli("search", "glacier", "--max-tokens", "0")
    assert refused.returncode == 2


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
