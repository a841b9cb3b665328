"""The memories inside a range of lines, as `forget` by citation reads them."""

from __future__ import annotations

from openmemoryd.memory.units import Memory, memories_in


def test_list_items_paragraphs_and_what_is_no_memory() -> None:
    text = (
        "# MEMORY.md - Long-term Memory\n"  # 1
        "\n"
        "*Your curated knowledge base. Write significant facts, decisions, and lessons here.*\n"
        "\n"
        "## User Preferences\n"  # 5
        "<!-- Add user preferences as you learn them -->\n"
        "- 我更喜欢用 Vim\n"
        "- Предпочитаю тёмную тему\n"
        "  во всех редакторах\n"
        "  - nested under it\n"  # 10
        "\n"
        "A paragraph of two\n"
        "lines.\n"
        "---\n"
        "- **Name:**\n"  # 15
    )
    assert memories_in(text, 1) == [
        Memory(7, 7, "- 我更喜欢用 Vim"),
        Memory(8, 10, "- Предпочитаю тёмную тему\n  во всех редакторах\n  - nested under it"),
        Memory(12, 13, "A paragraph of two\nlines."),
    ]


def test_numbers_count_from_the_first_line_of_the_range() -> None:
    assert memories_in("- a\r\n- b\r\n", 40) == [Memory(40, 40, "- a\r"), Memory(41, 41, "- b\r")]
    assert memories_in("## Notes\n\n", 8) == []
    assert memories_in("in the middle of a paragraph", 12) == [
        Memory(12, 12, "in the middle of a paragraph")
    ]


def test_a_list_item_after_a_paragraph_starts_a_memory() -> None:
    assert memories_in("Decided today:\n- use Postgres\n1. ship it", 1) == [
        Memory(1, 1, "Decided today:"),
        Memory(2, 2, "- use Postgres"),
        Memory(3, 3, "1. ship it"),
    ]
