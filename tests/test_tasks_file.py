"""memory/TASKS.md editing and the session-end journal block, without a daemon.

What a person keeping TASKS.md by hand must be able to rely on: their lines
survive every edit byte for byte, a task is only touched where its state
changes, ids stay put while the text does, and a next step that is already
open is not added twice.
"""

from __future__ import annotations

from datetime import datetime

import pytest

from openmemoryd.errors import BadRequest, NotFound
from openmemoryd.memory.journal import SessionNotes, render_journal
from openmemoryd.memory.tasks_file import (
    NEW_FILE,
    TasksFile,
    clean_task_text,
    distinct_tasks,
)

HAND_WRITTEN = (
    "# My tasks\r\n"
    "\r\n"
    "Some prose a human wrote, with  two  spaces.\r\n"
    "<!-- keep me -->\r\n"
    "\r\n"
    "## Open\r\n"
    "\r\n"
    "- [ ] Call the plumber 📅 2026-12-01\r\n"
    "  - bring the invoice\r\n"
    "* [ ] Renew passport ➕ 2026-11-01\r\n"
    "\r\n"
    "## Done\r\n"
    "\r\n"
    "- [x] Buy milk ➕ 2026-11-02 ✅ 2026-11-03\r\n"
    "\r\n"
    "## Notes\r\n"
    "- [ ] not really a task? it is top level, so it counts\r\n"
    "trailing line without newline"
)


def test_a_new_file_gets_the_sections_and_dated_tasks() -> None:
    tasks = TasksFile("")
    task, new = tasks.add("Write the README section", "2026-11-23")
    assert new
    assert tasks.text() == (
        "# Tasks\n\n## Open\n\n- [ ] Write the README section ➕ 2026-11-23\n\n## Done\n"
    )
    assert (task.text, task.done, task.added, task.line) == (
        "Write the README section",
        False,
        "2026-11-23",
        5,
    )
    second, _ = tasks.add("Ship it", "2026-11-24")
    assert tasks.text().splitlines()[4:7] == [
        "- [ ] Write the README section ➕ 2026-11-23",
        "- [ ] Ship it ➕ 2026-11-24",
        "",
    ]
    assert second.line == 6


def test_hand_written_lines_survive_every_edit_byte_for_byte() -> None:
    tasks = TasksFile(HAND_WRITTEN)
    listed = tasks.tasks()
    assert [t.text for t in listed] == [
        "Call the plumber 📅 2026-12-01",
        "Renew passport",
        "Buy milk",
        "not really a task? it is top level, so it counts",
    ]
    assert [t.done for t in listed] == [False, False, True, False]
    assert listed[2].completed == "2026-11-03"
    assert listed[0].size == 2  # the nested line belongs to it

    added, _ = tasks.add("Book flights", "2026-11-23")
    plumber = tasks.find("plumber", want_done=True)
    tasks.complete(plumber, "2026-11-23")
    out = tasks.text()
    # unknown lines, CRLF endings and the last line without a newline are all kept
    for line in HAND_WRITTEN.split("\r\n"):
        if "plumber" not in line and "bring the invoice" not in line:
            assert line in out
    assert out.endswith("trailing line without newline")
    assert "\r\n- [ ] Book flights ➕ 2026-11-23\r\n" in out
    # the completed task moved with its nested line to the end of Done
    done_part = out.split("## Done")[1].split("## Notes")[0]
    assert done_part == (
        "\r\n\r\n- [x] Buy milk ➕ 2026-11-02 ✅ 2026-11-03\r\n"
        "- [x] Call the plumber 📅 2026-12-01 ✅ 2026-11-23\r\n"
        "  - bring the invoice\r\n\r\n"
    )
    assert "\n" not in out.replace("\r\n", "")
    assert added.id == tasks.find("Book flights", want_done=None).id


def test_reopen_moves_back_and_drops_the_done_date() -> None:
    tasks = TasksFile(HAND_WRITTEN)
    milk = tasks.find("buy MILK", want_done=False)
    reopened = tasks.reopen(milk)
    assert not reopened.done
    assert reopened.completed is None
    assert reopened.id == milk.id  # the id follows the text, not the place
    text = tasks.text()
    assert "- [ ] Buy milk ➕ 2026-11-02\r\n" in text.split("## Done")[0]
    # round trip: done again, then open again, gives the same file
    tasks.complete(tasks.find(milk.id, want_done=True), "2026-11-30")
    tasks.reopen(tasks.find(milk.id, want_done=False))
    assert tasks.text() == text


def test_toggles_in_place_without_the_two_sections() -> None:
    flat = "Things:\n- [ ] one\n- [ ] two\nthe end\n"
    tasks = TasksFile(flat)
    tasks.complete(tasks.find("two", want_done=True), "2026-11-23")
    assert tasks.text() == "Things:\n- [ ] one\n- [x] two ✅ 2026-11-23\nthe end\n"
    tasks.add("three", "2026-11-23")  # after the last task, not after the prose
    assert tasks.text() == (
        "Things:\n- [ ] one\n- [x] two ✅ 2026-11-23\n- [ ] three ➕ 2026-11-23\nthe end\n"
    )
    prose = TasksFile("just notes")
    prose.add("first", "2026-11-23")
    assert prose.text() == "just notes\n\n## Open\n\n- [ ] first ➕ 2026-11-23\n"


def test_an_open_duplicate_is_not_added_twice_but_a_done_one_may_return() -> None:
    tasks = TasksFile(NEW_FILE)
    first, new = tasks.add("Write  the README", "2026-11-23")
    again, new_again = tasks.add("- [ ] write the readme", "2026-11-24")
    assert new
    assert not new_again
    assert again.id == first.id
    tasks.complete(first, "2026-11-25")
    back, new_back = tasks.add("Write the README", "2026-11-26")
    assert new_back
    assert back.id != first.id  # added again: a task of its own
    assert tasks.find(first.id, want_done=None).done  # the old one kept its id
    twins = TasksFile("- [ ] same\n- [ ] same\n")  # hand-made twins still differ
    assert len({t.id for t in twins.tasks()}) == 2


def test_find_by_id_text_or_unique_part() -> None:
    tasks = TasksFile(HAND_WRITTEN)
    passport = tasks.find("passport", want_done=True)
    assert passport.text == "Renew passport"
    assert tasks.find(passport.id, want_done=None) == passport
    with pytest.raises(NotFound):
        tasks.find("dentist", want_done=True)
    with pytest.raises(BadRequest, match="matches 3 tasks"):
        tasks.find("e", want_done=True)  # plumber, passport, the notes task: not milk, done
    with pytest.raises(BadRequest):
        tasks.find("   ", want_done=None)


def test_remove_takes_the_whole_block_and_nothing_else() -> None:
    tasks = TasksFile(HAND_WRITTEN)
    tasks.remove(tasks.find("plumber", want_done=None))
    assert tasks.text() == HAND_WRITTEN.replace(
        "- [ ] Call the plumber 📅 2026-12-01\r\n  - bring the invoice\r\n", ""
    )


def test_task_text_is_one_clean_line() -> None:
    assert clean_task_text("  - [ ] fix\n the   bug ") == "fix the bug"
    assert clean_task_text("* do it") == "do it"
    with pytest.raises(BadRequest):
        clean_task_text(" - [x] ")


def test_distinct_tasks_keep_each_task_once_as_add_judges_them() -> None:
    given = ["Write docs", "write  DOCS", "Fix the bug", "Write docs"]
    steps = distinct_tasks(clean_task_text(s) for s in [*given, "- [ ] Write docs"])
    assert steps == ["Write docs", "Fix the bug"]  # the first spelling stays
    tasks = TasksFile(NEW_FILE)
    added = [new for step in given for _, new in [tasks.add(step, "2026-11-23")]]
    assert added == [True, False, True, False]  # the task list holds the same two


# ---------------------------------------------------------------- journal


def test_journal_block_has_a_heading_and_the_parts_given() -> None:
    notes = SessionNotes(
        request="Add session end\r\nand tasks",
        learned=["TASKS.md lives in memory/", "ids come from\nthe text"],
        completed=[],
        next_steps=["Write the README"],
        agent="claude",
        session="s-42",
    )
    block = render_journal(notes, datetime(2026, 11, 23, 14, 5))
    assert block == (
        "## Session end 14:05 (agent claude, session s-42)\n"
        "\n### Request\nAdd session end\nand tasks\n"
        "\n### Learned\n- TASKS.md lives in memory/\n- ids come from\n  the text\n"
        "\n### Next steps\n- Write the README"
    )


def test_journal_refuses_nothing_and_empty_items() -> None:
    at = datetime(2026, 11, 23, 9, 0)
    with pytest.raises(BadRequest, match="nothing to record"):
        render_journal(SessionNotes(request="  ", learned=[], completed=[], next_steps=[]), at)
    blank = SessionNotes(request=None, learned=["a", " "], completed=[], next_steps=[])
    with pytest.raises(BadRequest, match="learned item 2 is empty"):
        render_journal(blank, at)
    only_done = SessionNotes(request=None, learned=[], completed=["shipped"], next_steps=[])
    assert render_journal(only_done, at) == "## Session end 09:00\n\n### Completed\n- shipped"
