"""End to end: what an agent sees of its memories, through the real daemon
and client — recall's text without Markdown noise, a plain note after a
capture not filed as one, and a forget at a file's first line."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest

from conftest import Daemon

pytestmark = pytest.mark.e2e


def today_file(daemon: Daemon) -> Path:
    return daemon.env.workspace / "memory" / f"{date.today().isoformat()}.md"


def quoted(output: str) -> list[str]:
    return [line for line in output.splitlines() if line[:1].isdigit()]


def test_recall_reads_tasks_and_list_items_as_words(daemon: Daemon) -> None:
    with daemon.client() as client:
        client.append(
            "- [ ] Написать постмортем по инциденту ➕ 2026-11-28\n"
            "  - собрать логи\n"
            "  - созвать команду\n"
            "- [x] Отправить квартальный отчёт ➕ 2026-11-20 ✅ 2026-11-27\n"
            "- Пользователь переехал в Казань.",
            path="memory/plans.md",
        )
    shown = daemon.cli("recall", "постмортем по инциденту")
    assert shown.returncode == 0, shown.stderr
    first = quoted(shown.stdout)[0]
    # the task and the item under it, apart (the hit's snippet ends where it ends)
    assert first.startswith("1. [memory] open task: Написать постмортем по инциденту; собрать логи")
    assert "➕" not in first
    assert "- [" not in first
    done = daemon.cli_json("recall", "-n", "1", "квартальный отчёт отправить")
    assert [m["text"] for m in done["memories"]] == [
        "done task (2026-11-27): Отправить квартальный отчёт"
    ]
    moved = daemon.cli_json("recall", "-n", "1", "куда переехал пользователь Казань")
    assert moved["memories"][0]["text"] == "Пользователь переехал в Казань."
    assert "1. [memory] Пользователь переехал в Казань. (" in moved["block"]


def test_a_plain_note_after_a_capture_gets_its_own_heading(daemon: Daemon) -> None:
    # a long day: search cites a part of it, under the heading it is in
    minutes = "\n".join(f"- пункт {i}: обсудили сервис номер {i} и его метрики" for i in range(80))
    with daemon.client() as client:
        client.append(f"## Встреча с Иваном\n\n{minutes}")
        client.capture(
            [{"role": "user", "content": "Remember that my dentist appointment is on Friday"}]
        )
    appended = daemon.cli_json("append", "Купить корм для кошки Мурки")
    more = daemon.cli_json("append", "Позвонить маме в субботу")
    text = today_file(daemon).read_text("utf-8")
    assert text.endswith(
        "## Captured\n\n- [fact] Remember that my dentist appointment is on Friday\n"
        "\n## Notes\n\nКупить корм для кошки Мурки\n\nПозвонить маме в субботу\n"
    )
    lines = text.splitlines()
    # the citation is the note's own line, not the heading added before it
    assert lines[appended["start_line"] - 1] == "Купить корм для кошки Мурки"
    assert appended["citation"].endswith(f"#L{appended['start_line']}")
    assert lines[more["start_line"] - 1] == "Позвонить маме в субботу"
    with daemon.client() as client:
        # the rest of the day's notes: cited under "Notes", never "Captured"
        for i in range(60):
            client.append(f"Заметка {i}: проверить счётчик воды номер {i} в подвале")
        [hit] = client.search("проверить счётчик воды номер 59 в подвале", limit=1).results
        assert hit.heading.endswith(" > Notes"), hit.heading
    shown = daemon.cli("search", "-n", "1", "проверить счётчик воды номер 59 в подвале")
    assert shown.returncode == 0, shown.stderr
    assert "· Captured" not in shown.stdout
    with daemon.client() as client:
        hit = client.search("dentist appointment Friday", limit=1).results[0]
        assert hit.heading.endswith(" > Captured")  # captures stay where they were
        # a later capture opens its own section again, after the notes
        client.capture([{"role": "user", "content": "Remember that my passport expires in 2027"}])
    assert today_file(daemon).read_text("utf-8").count("## Captured") == 2
    assert today_file(daemon).read_text("utf-8").count("## Notes") == 1


def test_forgetting_the_notes_takes_the_notes_heading_too(daemon: Daemon) -> None:
    with daemon.client() as client:
        client.append("## Встреча\n\nОбсудили gRPC.")
        client.capture([{"role": "user", "content": "Remember that my dentist is on Friday"}])
    before = today_file(daemon).read_text("utf-8")
    note = daemon.cli_json("append", "Купить корм для кошки Мурки")
    assert today_file(daemon).read_text("utf-8").count("## Notes") == 1
    gone = daemon.cli("forget", note["citation"])
    assert gone.returncode == 0, gone.stderr
    assert today_file(daemon).read_text("utf-8") == before


def test_forgetting_a_files_first_line_leaves_no_blank_line(daemon: Daemon) -> None:
    daemon.cli_json("append", "--path", "memory/cite.md", "Первая заметка о велосипеде")
    daemon.cli_json("append", "--path", "memory/cite.md", "Вторая заметка о кошке")
    cite = daemon.env.workspace / "memory" / "cite.md"
    assert cite.read_text("utf-8") == "Первая заметка о велосипеде\n\nВторая заметка о кошке\n"
    gone = daemon.cli("forget", "memory/cite.md#L1")
    assert gone.returncode == 0, gone.stderr
    assert cite.read_text("utf-8") == "Вторая заметка о кошке\n"
    with daemon.client() as client:
        hit = client.search("заметка о кошке").results[0]
        assert hit.citation == "memory/cite.md#L1"


def test_a_plain_note_after_a_session_end_is_not_one_of_its_next_steps(daemon: Daemon) -> None:
    """The session end's block ends with "### Next steps": a note appended
    after it was cited as "Session end 12:11 (agent coder) > Next steps"
    (found by dogfooding)."""
    with daemon.client() as client:
        client.session_end(
            request="fix the retry policy", next_steps=["Retry only on 5xx"], agent="coder"
        )
        note = client.append("The staging database moved to db2.internal")
        text = today_file(daemon).read_text("utf-8")
        assert text.endswith(
            "### Next steps\n- Retry only on 5xx\n"
            "\n## Notes\n\nThe staging database moved to db2.internal\n"
        )
        assert text.splitlines()[note.start_line - 1].startswith("The staging database")
        [hit] = client.search("staging database moved db2", limit=1).results
        # the section the note's line is in, as search tells the headings of a chunk
        under = [path for line, path in hit.inner_headings if line <= note.start_line]
        assert under[-1].endswith(" > Notes"), hit.inner_headings
