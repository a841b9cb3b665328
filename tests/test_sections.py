"""Section insertion and one-line edits keep every other byte of the file."""

from __future__ import annotations

import pytest

from openmemoryd.memory.sections import (
    insert_bullet,
    replace_line,
    sections_headed,
    split_count,
    with_count,
)
from openmemoryd.workspace import SECTIONS, template_text

PREFS = ("User Preferences", "Preferences")


def removed_line(after: str, number: int) -> str:
    lines = after.splitlines(keepends=True)
    del lines[number - 1]
    return "".join(lines)


def test_a_bullet_lands_under_its_template_heading_and_nothing_else_changes() -> None:
    before = template_text("MEMORY.md")
    inserted = insert_bullet(before, PREFS, "- I prefer dark mode")
    lines = inserted.text.splitlines()
    assert lines[inserted.line - 1] == "- I prefer dark mode"
    assert lines[inserted.line - 2] == "<!-- Add user preferences as you learn them -->"
    assert lines[inserted.line - 3] == "## User Preferences"
    assert not inserted.created_section
    assert removed_line(inserted.text, inserted.line) == before
    again = insert_bullet(inserted.text, PREFS, "- tabs, not spaces")
    assert again.line == inserted.line + 1
    assert removed_line(again.text, again.line) == inserted.text


def test_the_last_section_ends_before_the_footer() -> None:
    before = template_text("MEMORY.md")
    inserted = insert_bullet(before, ("Lessons Learned",), "- back up before migrating")
    lines = inserted.text.splitlines()
    assert lines[inserted.line - 2].startswith("<!-- Document mistakes")
    assert lines[-2:] == ["---", before.splitlines()[-1]]
    assert removed_line(inserted.text, inserted.line) == before


def test_a_missing_section_is_created_before_the_footer() -> None:
    before = "# MEMORY\n\n## Other\n- x\n\n---\n*footer*\n"
    inserted = insert_bullet(before, ("Lessons Learned",), "- new")
    assert inserted.created_section
    assert inserted.text == (
        "# MEMORY\n\n## Other\n- x\n\n## Lessons Learned\n- new\n\n---\n*footer*\n"
    )
    assert inserted.text.splitlines()[inserted.line - 1] == "- new"


@pytest.mark.parametrize(
    ("before", "after", "line"),
    [
        ("", "## Notes\n- new\n", 2),
        ("# Title\n", "# Title\n\n## Notes\n- new\n", 4),
        ("# Title\nno newline", "# Title\nno newline\n\n## Notes\n- new", 5),
        ("## Notes\n- a", "## Notes\n- a\n- new", 3),
        ("## Notes\r\n- a\r\n\r\n## Next\r\n", "## Notes\r\n- a\r\n- new\r\n\r\n## Next\r\n", 3),
    ],
)
def test_edges_of_files(before: str, after: str, line: int) -> None:
    inserted = insert_bullet(before, ("Notes",), "- new")
    assert inserted.text == after
    assert inserted.line == line


def test_headings_in_code_fences_and_deeper_subsections() -> None:
    before = "## Notes\n- a\n\n### Detail\n- d\n\n```md\n## Notes\n```\n\n## Next\nkept  \n"
    inserted = insert_bullet(before, ("notes",), "- new")
    # the section spans its ### subsection; the fenced "## Notes" is not a heading
    assert inserted.text.splitlines()[inserted.line - 2] == "```"
    assert removed_line(inserted.text, inserted.line) == before


def test_reinforcement_counts_round_trip() -> None:
    assert split_count("- I prefer tea") == ("- I prefer tea", 1)
    assert with_count("- I prefer tea", 2) == "- I prefer tea (×2)"
    assert split_count("- I prefer tea (×2)") == ("- I prefer tea", 2)
    assert with_count("- I prefer tea (×2)", 3) == "- I prefer tea (×3)"
    assert with_count("- I prefer tea (×3)", 1) == "- I prefer tea"


def test_replace_line_swaps_one_line_and_checks_it_first() -> None:
    before = "## P\r\n- dark mode\r\n- tabs\n"
    after = replace_line(before, 2, "- dark mode", "- light mode")
    assert after == "## P\r\n- light mode\r\n- tabs\n"
    with pytest.raises(LookupError):
        replace_line(before, 2, "- something else", "- x")
    with pytest.raises(LookupError):
        replace_line(before, 9, "- tabs", "- x")


def test_a_memory_goes_under_the_section_a_chinese_or_russian_file_already_has() -> None:
    before = "# 记忆\n\n## 偏好\n- 喝乌龙茶\n\n## Решения\n- Только PostgreSQL\n"
    preference = insert_bullet(before, SECTIONS["preference"][1], "- 用 Neovim")
    assert not preference.created_section
    assert preference.text.splitlines()[preference.line - 3 : preference.line] == [
        "## 偏好",
        "- 喝乌龙茶",
        "- 用 Neovim",
    ]
    decision = insert_bullet(before, SECTIONS["decision"][1], "- Деплой по вторникам")
    assert not decision.created_section
    assert decision.text.splitlines()[decision.line - 2] == "- Только PostgreSQL"


def test_sections_headed_finds_the_exact_heading_outside_code_up_to_its_level() -> None:
    lines = [
        "# Day\n",  # 0
        "## Captured\n",  # 1
        "### Doctors\n",  # 2: deeper, inside the section
        "- dentist\n",  # 3
        "## Dinner\n",  # 4: same level, ends it
        "```\n",  # 5
        "## Captured\n",  # 6: code, not a heading
        "```\n",  # 7
        "## captured\n",  # 8: another case, a person's
        "## Captured  \r\n",  # 9: spaces and CRLF aside, the same
        "---\n",  # 10: a thematic break ends it
        "after\n",  # 11
    ]
    assert sections_headed(lines, "## Captured") == [(1, 4), (9, 10)]
    assert sections_headed(lines, "## Nothing") == []
