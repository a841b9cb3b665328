"""Template boilerplate is blanked before indexing, in any script, lines kept."""

from __future__ import annotations

import pytest

from openmemoryd.workspace import ROOT_FILES, template_text
from openmemoryd.workspace.boilerplate import has_memory, mask_boilerplate


@pytest.mark.parametrize("name", ROOT_FILES)
def test_an_untouched_template_holds_no_memory(name: str) -> None:
    masked = mask_boilerplate(template_text(name))
    assert not has_memory(masked)
    assert masked.count("\n") == template_text(name).count("\n")


def test_real_notes_around_the_boilerplate_stay() -> None:
    text = template_text("USER.md").replace("- **Name:** ", "- **Name:** Wei") + "- 喜欢乌龙茶\n"
    masked = mask_boilerplate(text)
    assert "- **Name:** Wei" in masked
    assert "- 喜欢乌龙茶" in masked
    assert "**Timezone:**" not in masked
    assert "<!--" not in masked
    assert "Information about the person" not in masked
    assert has_memory(masked)


@pytest.mark.parametrize(
    "field",
    [
        "- **Name:**",
        "- **姓名：**",
        "* **Имя:**",
        "+ **Часовой пояс:** ",
        "- **Name**:",
        "  - **Role:**\r",
    ],
)
def test_unfilled_fields_in_any_script_are_blank(field: str) -> None:
    assert mask_boilerplate(field).strip() == ""


@pytest.mark.parametrize(
    "kept",
    [
        "- **Name:** Wei",
        "- **姓名：** 魏",
        "**Note:** the key rotates monthly",
        "*Remember the milk*",
    ],
)
def test_filled_fields_and_ones_own_italics_stay(kept: str) -> None:
    assert mask_boilerplate(kept) == kept


def test_comments_are_blanked_across_lines_and_numbers_kept() -> None:
    text = "a\n<!-- one\ntwo -->\nb <!-- x --> c\n<!-- 用户偏好 -->\nd"
    masked = mask_boilerplate(text)
    assert masked.split("\n") == ["a", "", "", "b  c", "", "d"]


def test_an_unclosed_comment_runs_to_the_end_as_markdown_renders_it() -> None:
    assert mask_boilerplate("a\n<!-- never closed\nb\n") == "a\n\n\n"


def test_crlf_files_keep_their_line_ends() -> None:
    text = "- **Name:**\r\n- real note\r\n"
    assert mask_boilerplate(text) == "\r\n- real note\r\n"


def test_headings_and_rules_alone_are_not_memory() -> None:
    assert not has_memory("# Title\n\n## Section\n---\n***\n")
    assert has_memory("# Title\n\nbody\n")
