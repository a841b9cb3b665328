"""The headings the daemon writes before a block in a day's file
(`memory.own_headings`): capture's ``## Captured``, and ``## Notes`` for a
plain note after it, so the note is not filed as a capture."""

from __future__ import annotations

from pathlib import Path

import pytest

from openmemoryd.memory.own_headings import (
    CAPTURED_HEADING,
    NOTES_HEADING,
    append_under,
    heading_for,
    last_section,
    last_sections,
)
from openmemoryd.workspace import MemoryPath, PathPolicy, init_workspace

DAY = "memory/2026-11-28.md"


@pytest.fixture
def policy(tmp_path: Path) -> PathPolicy:
    ws = tmp_path / "ws"
    init_workspace(ws)
    return PathPolicy(ws)


def day(policy: PathPolicy, text: str | None = None) -> MemoryPath:
    mp = policy.resolve(DAY)
    if text is not None:
        mp.absolute.parent.mkdir(parents=True, exist_ok=True)
        mp.absolute.write_text(text)
    return mp


@pytest.mark.parametrize(
    ("last", "block", "section", "want"),
    [
        # capture: its heading unless the file has no section or ends in it
        (None, "- [fact] a", CAPTURED_HEADING, ""),
        ("## Встреча", "- [fact] a", CAPTURED_HEADING, CAPTURED_HEADING),
        (CAPTURED_HEADING, "- [fact] a", CAPTURED_HEADING, ""),
        (NOTES_HEADING, "- [fact] a", CAPTURED_HEADING, CAPTURED_HEADING),
        # a plain note: its own place only after the daemon's captures
        (CAPTURED_HEADING, "a note", None, NOTES_HEADING),
        (CAPTURED_HEADING, "## Ужин\n\nЗаказать столик.", None, ""),
        (CAPTURED_HEADING, "# Title\n\ntext", None, ""),
        (NOTES_HEADING, "another note", None, ""),
        ("## Встреча", "a note", None, ""),  # a person's section stays theirs
        (None, "a note", None, ""),
    ],
)
def test_heading_for(last: str | None, block: str, section: str | None, want: str) -> None:
    assert heading_for(last, block, section) == want


@pytest.mark.parametrize(
    ("last", "part_of", "want"),
    [
        # after a session end's block its last part would take the note
        ("### Next steps", "## Session end 12:11 (agent coder)", NOTES_HEADING),
        ("## Session end 12:11", "## Session end 12:11", NOTES_HEADING),
        # a person's subsection, or a heading merely saying "Session end"
        ("### Детали", "## Встреча", ""),
        ("### Next steps", "## Session end of the sprint", ""),
    ],
)
def test_a_note_after_a_session_end_block_gets_its_own_place(
    last: str, part_of: str, want: str
) -> None:
    assert heading_for(last, "a note", None, part_of) == want
    assert heading_for(last, "## Own\n\ntext", None, part_of) == ""


def test_last_sections_names_the_section_a_subsection_is_part_of(policy: PathPolicy) -> None:
    assert last_sections(day(policy)) == (None, None)
    mp = day(policy, "# 2026-11-28\n\n## Session end 12:11\n\n### Next steps\n\n- a\n")
    assert last_sections(mp) == ("### Next steps", "## Session end 12:11")
    mp = day(policy, "# 2026-11-28\n\n### Loose\n\n- a\n")
    assert last_sections(mp) == ("### Loose", None)


def test_last_section_reads_back_across_chunks(policy: PathPolicy) -> None:
    assert last_section(day(policy)) is None  # no file
    assert last_section(day(policy, "# 2026-11-28\n\nnote\n")) is None  # only the title
    filler = "".join(f"line {i} of a long day\n" for i in range(20_000))  # ~480 KB
    mp = day(policy, f"# 2026-11-28\n\n## Встреча  \n\n{filler}")
    assert last_section(mp) == "## Встреча"
    mp = day(policy, f"# 2026-11-28\n\n## Встреча\n\n{filler}## Captured\n\n- [fact] x\n")
    assert last_section(mp) == CAPTURED_HEADING


def test_a_note_after_captures_gets_notes_once(policy: PathPolicy) -> None:
    mp = day(policy, "# 2026-11-28\n\n## Встреча\n\nОбсудили gRPC.\n")
    captured, lead = append_under(mp, "- [fact] dentist Friday", 1 << 20, None, CAPTURED_HEADING)
    assert lead == 2
    assert captured.block == "## Captured\n\n- [fact] dentist Friday"  # journalled whole
    note, lead = append_under(mp, "Купить хлеб", 1 << 20, None, None)
    assert lead == 2
    assert note.block == "## Notes\n\nКупить хлеб"
    lines = mp.absolute.read_text().splitlines()
    assert lines[note.start_line - 1] == NOTES_HEADING
    assert lines[note.start_line + lead - 1] == "Купить хлеб"
    again, lead = append_under(mp, "И молоко", 1 << 20, None, None)
    assert (lead, again.block) == (0, "И молоко")
    assert mp.absolute.read_text().count(NOTES_HEADING) == 1


def test_a_capture_into_a_new_day_writes_no_heading(policy: PathPolicy) -> None:
    mp = day(policy)
    appended, lead = append_under(mp, "- [fact] a", 1 << 20, None, CAPTURED_HEADING)
    assert lead == 0
    assert appended.created
    assert mp.absolute.read_text() == "# 2026-11-28\n\n- [fact] a\n"
