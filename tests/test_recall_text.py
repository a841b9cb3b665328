"""How a recalled part reads in the ``<relevant-memories>`` block: no list
markers, separate items kept apart, tasks in words (`engine.recall_text`)."""

from __future__ import annotations

import pytest

from omem_protocol import RecalledMemory
from openmemoryd.engine.agent_ops import render_block
from openmemoryd.engine.recall_text import memory_text


@pytest.mark.parametrize(
    ("snippet", "want"),
    [
        (
            "- У пользователя горный велосипед Merida",
            ("memory", "У пользователя горный велосипед Merida"),
        ),
        ("* starred item", ("memory", "starred item")),
        ("3. numbered item", ("memory", "numbered item")),
        ("A plain line of prose", ("memory", "A plain line of prose")),
        ("- [fact] my dentist is on Friday", ("fact", "my dentist is on Friday")),
    ],
)
def test_a_single_memory_loses_its_list_marker(snippet: str, want: tuple[str, str]) -> None:
    assert memory_text(snippet, "memory") == want


def test_the_tasks_of_a_part_are_tasks_in_words_apart() -> None:
    snippet = (
        "# Tasks\n\n## Open\n\n"
        "- [ ] 一个 ➕ 2026-11-28\n"
        "- [ ] 二个任务 ➕ 2026-11-28\n"
        "- [ ] Написать постмортем по инциденту ➕ 2026-11-28\n\n"
        "## Done\n\n"
        "- [x] Send the report ➕ 2026-11-20 ✅ 2026-11-27\n"
        "- [X] Old chore\n"
    )
    category, text = memory_text(snippet, "memory")
    assert category == "memory"
    assert text == (
        "open task: 一个; open task: 二个任务; "
        "open task: Написать постмортем по инциденту; "
        "done task (2026-11-27): Send the report; done task: Old chore"
    )
    assert "➕" not in text
    assert "✅" not in text
    assert "- [" not in text


def test_items_are_separated_unless_they_end_in_a_stop() -> None:
    snippet = "- Пользователь переехал в Казань.\n- У кошки аллергия\n- 他喜欢茶。\n- last"
    assert memory_text(snippet, "memory")[1] == (
        "Пользователь переехал в Казань. У кошки аллергия; 他喜欢茶。 last"
    )


def test_a_wrapped_item_continues_and_a_paragraph_reads_as_one() -> None:
    assert memory_text("- first item that\n  wraps here\n- second", "memory")[1] == (
        "first item that wraps here; second"
    )
    assert memory_text("one line\nof a paragraph", "memory")[1] == "one line of a paragraph"


def test_a_shared_category_is_the_parts_and_mixed_ones_stay_inline() -> None:
    assert memory_text("- [fact] a\n- [fact] b", "memory") == ("fact", "a; b")
    assert memory_text("- [fact] a\n- [entity] b", "memory") == (
        "memory",
        "[fact] a; [entity] b",
    )
    assert memory_text("- [fact] a\n- plain b", "sessions") == ("session", "[fact] a; plain b")


def test_a_heading_only_part_keeps_the_heading() -> None:
    assert memory_text("## Встреча с Иваном", "memory") == ("memory", "## Встреча с Иваном")


def test_the_block_format_is_unchanged_but_for_the_text() -> None:
    category, text = memory_text("- [ ] <b>ship</b> ➕ 2026-11-28\n- [x] done & dusted", "memory")
    block = render_block(
        [
            RecalledMemory(
                text=text,
                score=1.0,
                category=category,
                citation="memory/TASKS.md#L1-L2",
                path="memory/TASKS.md",
                start_line=1,
                end_line=2,
            )
        ]
    )
    lines = block.splitlines()
    assert lines[0] == "<relevant-memories>"
    assert lines[-1] == "</relevant-memories>"
    assert lines[2] == (
        "1. [memory] open task: &lt;b&gt;ship&lt;/b&gt;; done task: done &amp; dusted "
        "(memory/TASKS.md#L1-L2)"
    )
