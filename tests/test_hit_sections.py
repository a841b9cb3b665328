"""A hit names the section of the lines it shows: the heading path at its
first line, from the headings the chunker recorded inside the chunk, also
when the hit shows only part of the chunk (a list item, lines a better hit
does not show, a budget's best line); the text output prints it beside the
location and a token budget counts it."""

from __future__ import annotations

import msgspec

from conftest import search_result
from omem_client import _render
from omem_protocol import SearchHit, SearchResult
from openmemoryd.index.chunker import chunk_markdown
from openmemoryd.search.budget import hit_cost, within_budget
from openmemoryd.search.candidate import Candidate
from openmemoryd.search.hits import citation, heading_at, headings_within, to_hits
from openmemoryd.text import line_cost, query_terms

NOTES = """# Notes

## Lessons learned
- Never run migrations on Friday afternoons; the rollback script is untested.
- The staging database password rotates every 30 days; check the vault first.
- Keep pull requests under 400 lines, reviewers skim anything longer.

## Предпочтения
- Пьёт улун по утрам, кофе не любит.
- Пишет в Neovim с менеджером плагинов lazy.nvim.

## 决定
- 数据库迁移只在周二上午做。
"""


def candidate(text: str, path: str = "MEMORY.md", number: int = 1) -> Candidate:
    (chunk,) = chunk_markdown(text, max_tokens=2000)  # small sections share one chunk
    return Candidate(
        id=number,
        path=path,
        source="memory",
        start_line=chunk.start_line,
        end_line=chunk.end_line,
        heading=chunk.heading,
        text=chunk.text,
        text_score=0.9,
        vector_score=0.5,
        score=0.9,
        inner_headings=chunk.inner_headings,
    )


def hits_for(query: str, *candidates: Candidate) -> list[SearchHit]:
    return to_hits(list(candidates), query_terms(query), 10, 700)


def result(*hits: SearchHit) -> SearchResult:
    return search_result(hits)


def test_heading_at_takes_the_last_heading_line_at_or_before_the_line() -> None:
    inner = ((5, "A > B"), (9, "A > C"))
    assert [heading_at("A", inner, line) for line in (1, 4, 5, 8, 9, 30)] == [
        "A",
        "A",
        "A > B",
        "A > B",
        "A > C",
        "A > C",
    ]
    assert headings_within(inner, 5, 9) == ((9, "A > C"),)
    assert headings_within(inner, 1, 4) == ()


def test_a_list_item_shown_alone_names_its_own_section_in_each_script() -> None:
    notes = candidate(NOTES)
    assert notes.heading == "Notes"
    for query, lines, section in [
        ("staging database password", (4, 6), "Notes > Lessons learned"),
        ("менеджер плагинов Neovim", (9, 10), "Notes > Предпочтения"),
        ("数据库迁移", (13, 13), "Notes > 决定"),
    ]:
        (hit,) = hits_for(query, notes)
        assert (hit.start_line, hit.end_line) == lines, query
        assert hit.heading == section, query
        assert hit.inner_headings == ()
        assert hit.section() == section


def test_a_whole_chunk_keeps_its_first_lines_heading_and_lists_the_rest() -> None:
    (hit,) = hits_for("rollback coffee", candidate(NOTES))  # words in two sections
    assert (hit.start_line, hit.end_line) == (1, 13)
    assert hit.heading == "Notes"
    assert hit.inner_headings == (
        (3, "Notes > Lessons learned"),
        (8, "Notes > Предпочтения"),
        (12, "Notes > 决定"),
    )
    assert hit.section() == ""  # the snippet opens with "# Notes"


def test_lines_a_better_hit_shows_already_are_left_out_under_the_right_heading() -> None:
    text = "# Log\n\n## Monday\nalpha one\nalpha two\n\n## Tuesday\nalpha three\nbeta four"
    whole = candidate(text)
    (chunk,) = chunk_markdown(text, max_tokens=2000)
    better = Candidate(
        id=2,
        path="MEMORY.md",
        source="memory",
        start_line=1,
        end_line=5,
        heading="Log",
        text="\n".join(text.split("\n")[:5]),
        text_score=0.95,
        vector_score=0.5,
        score=0.95,
        inner_headings=((3, "Log > Monday"),),
    )
    hits = hits_for("alpha", better, whole)
    assert [(h.start_line, h.end_line, h.heading) for h in hits] == [
        (1, 5, "Log"),
        (7, 9, "Log > Tuesday"),
    ]
    assert chunk.inner_headings == ((3, "Log > Monday"), (7, "Log > Tuesday"))


def test_a_budgets_best_line_names_the_section_it_is_in() -> None:
    filler = "\n".join(f"- filler item number {i} about nothing in particular" for i in range(12))
    text = f"# Notes\n\n## Errands\n{filler}\n\n## Lessons\n- the staging password rotates monthly"
    (whole,) = hits_for("staging password monthly rotates errands", candidate(text))
    assert (whole.heading, whole.end_line) == ("Notes", 18)
    best = hits_for("filler", candidate(text, path="b.md", number=2))[0]
    packed = within_budget(result(best, whole), hit_cost(best) + 30, ["staging", "password"])
    line = packed.results[1]
    assert line.snippet == "- the staging password rotates monthly"
    assert (line.start_line, line.heading, line.inner_headings) == (18, "Notes > Lessons", ())


def test_the_section_is_left_out_where_it_only_repeats_the_file_or_the_first_line() -> None:
    def shown(path: str, heading: str, snippet: str) -> str:
        return SearchHit(
            path=path,
            start_line=1,
            end_line=1,
            snippet=snippet,
            score=1.0,
            text_score=None,
            vector_score=None,
            source="memory",
            citation=citation(path, 1, 1),
            heading=heading,
        ).section()

    assert shown("memory/2026-11-25.md", "2026-11-25 > Standup", "- shipped it") == "Standup"
    assert shown("memory/2026-11-25.md", "2026-11-25", "- shipped it") == ""
    assert shown("notes/trip.md", "2026-11-25 > Standup", "- x") == "2026-11-25 > Standup"
    assert shown("MEMORY.md", "MEMORY.md - Long-term Memory > Lessons", "- x") == "Lessons"
    assert shown("MEMORY.md", "MEMORY.md", "- x") == ""
    assert shown("MEMORY.md", "MEMORY.mdx > Lessons", "- x") == "MEMORY.mdx > Lessons"
    assert shown("MEMORY.md", "Notes > Lessons", "## Lessons") == ""
    assert shown("MEMORY.md", "Notes > Lessons", "#hashtag line") == "Notes > Lessons"
    assert shown("MEMORY.md", "", "plain") == ""


def test_the_text_output_prints_the_section_and_a_budget_counts_it() -> None:
    (hit,) = hits_for("staging database password", candidate(NOTES))
    lines = _render.search_lines(result(hit))
    assert lines[0] == "0.900 MEMORY.md:4-6 · Notes > Lessons learned"
    assert lines[1].startswith("  - Never run migrations")
    bare = msgspec.structs.replace(hit, heading="")
    assert _render.search_lines(result(bare))[0] == "0.900 MEMORY.md:4-6"
    assert hit_cost(hit) - hit_cost(bare) == (
        line_cost(f"{hit.citation} · Notes > Lessons learned") - line_cost(hit.citation)
    )
    assert hit_cost(hit) > hit_cost(bare)


def test_the_text_output_shows_a_run_of_blank_lines_as_one() -> None:
    """A template's comment and hint lines are blank in the index: three in a
    row under MEMORY.md's title. The JSON keeps them (exact line numbers);
    the text an agent reads shows one."""
    snippet = "# MEMORY.md - Long-term Memory\n\n\n\n## User Preferences\n\n- Dark mode"
    hit = SearchHit(
        path="MEMORY.md",
        start_line=1,
        end_line=7,
        snippet=snippet,
        score=0.9,
        text_score=0.9,
        vector_score=0.5,
        source="memory",
        citation="MEMORY.md#L1-L7",
    )
    assert _render.search_lines(result(hit))[1:] == [
        "  # MEMORY.md - Long-term Memory",
        "  ",
        "  ## User Preferences",
        "  ",
        "  - Dark mode",
    ]
    assert hit.snippet.count("\n") == 6
