"""Taking lines out of a memory file: checked, atomic, and safe against
appenders running at the same time."""

from __future__ import annotations

import fcntl
import os
import threading
import time
from pathlib import Path

import pytest

from openmemoryd.errors import Conflict
from openmemoryd.memory import append_block
from openmemoryd.memory.remove import LineRange, remove_lines
from openmemoryd.workspace import PathPolicy, init_workspace


@pytest.fixture
def policy(tmp_path: Path) -> PathPolicy:
    ws = tmp_path / "ws"
    init_workspace(ws)
    return PathPolicy(ws)


def write(policy: PathPolicy, key: str, text: str) -> Path:
    path = policy.workspace / key
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_removes_the_lines_and_closes_the_gap(policy: PathPolicy) -> None:
    path = write(policy, "memory/notes.md", "# Notes\n\n- keep one\n\n- drop me\n\n- keep two\n")
    removed = remove_lines(policy.resolve("memory/notes.md"), [LineRange(5, 5)], ["- drop me"])
    assert removed == ["- drop me"]
    assert path.read_text() == "# Notes\n\n- keep one\n\n- keep two\n"


def test_several_ranges_in_one_replace(policy: PathPolicy) -> None:
    path = write(policy, "MEMORY.md", "a\nb\nc\nd\ne\n")
    removed = remove_lines(
        policy.resolve("MEMORY.md"), [LineRange(2, 3), LineRange(5, 5)], ["b\nc", "e"]
    )
    assert removed == ["b\nc", "e"]
    assert path.read_text() == "a\nd\n"


def test_a_changed_file_is_left_alone(policy: PathPolicy) -> None:
    path = write(policy, "MEMORY.md", "a\nedited by a human\nc\n")
    before = path.read_bytes()
    with pytest.raises(Conflict, match="changed since it was read"):
        remove_lines(policy.resolve("MEMORY.md"), [LineRange(2, 2)], ["b"])
    with pytest.raises(Conflict, match="not there"):
        remove_lines(policy.resolve("MEMORY.md"), [LineRange(3, 9)], ["c"])
    assert path.read_bytes() == before
    # nor does an emptied heading go when the memory under it changed
    day = write(policy, "memory/day.md", "# Day\n\n## Captured\n\n- [fact] edited\n")
    with pytest.raises(Conflict, match="changed since it was read"):
        remove_lines(
            policy.resolve("memory/day.md"),
            [LineRange(5, 5)],
            ["- [fact] original"],
            own_headings=("## Captured",),
        )
    assert day.read_text() == "# Day\n\n## Captured\n\n- [fact] edited\n"


def test_mode_and_foreign_bytes_survive_and_no_temp_file_is_left(policy: PathPolicy) -> None:
    path = policy.workspace / "MEMORY.md"
    path.write_bytes(b"caf\xe9 latin-1 line\nforget me\n\xff\xfe tail\n")
    path.chmod(0o640)
    remove_lines(policy.resolve("MEMORY.md"), [LineRange(2, 2)], ["forget me"])
    assert path.read_bytes() == b"caf\xe9 latin-1 line\n\xff\xfe tail\n"
    assert path.stat().st_mode & 0o777 == 0o640
    assert sorted(p.name for p in policy.workspace.iterdir() if "omem-forget" in p.name) == []


def test_an_append_waiting_on_the_lock_lands_in_the_new_file(policy: PathPolicy) -> None:
    """The appender locked the old inode; after the rename it must notice
    and append to the file the name now points at."""
    path = write(policy, "MEMORY.md", "keep\nforget me\n")
    holder = os.open(path, os.O_RDONLY)
    fcntl.flock(holder, fcntl.LOCK_EX)
    errors: list[BaseException] = []

    def appender() -> None:
        try:
            append_block(policy.resolve("MEMORY.md"), "appended meanwhile", 1 << 20)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    thread = threading.Thread(target=appender)
    thread.start()
    time.sleep(0.2)  # the appender is now blocked on the old file's lock
    replacement = path.with_name("MEMORY.md.new")
    replacement.write_text("keep\n")
    os.replace(replacement, path)
    os.close(holder)
    thread.join(10)
    assert errors == []
    assert path.read_text() == "keep\n\nappended meanwhile\n"


def test_concurrent_appends_and_removals_lose_no_append(policy: PathPolicy) -> None:
    path = write(policy, "MEMORY.md", "".join(f"- old {i}\n" for i in range(40)))
    mp = policy.resolve("MEMORY.md")
    errors: list[BaseException] = []

    def appender(n: int) -> None:
        try:
            for i in range(20):
                append_block(mp, f"- new {n}.{i}", 1 << 20)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    def remover() -> None:
        try:
            for i in range(40):
                lines = path.read_text().splitlines()
                at = lines.index(f"- old {i}") + 1
                remove_lines(mp, [LineRange(at, at)], [f"- old {i}"])
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=appender, args=(n,)) for n in range(4)]
    threads.append(threading.Thread(target=remover))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # the remover reads the line number without the lock, so a racing append
    # may shift nothing (appends go at the end) - every removal must succeed
    assert errors == []
    lines = path.read_text().splitlines()
    assert not [line for line in lines if line.startswith("- old")]
    news = sorted(line for line in lines if line.startswith("- new"))
    assert news == sorted(f"- new {n}.{i}" for n in range(4) for i in range(20))


# ------------------------------------------------- the headings the daemon writes

CAPTURED = ("## Captured",)
DAY = "# 2026-11-28\n\n## Meeting with Ivan\n\n- discussed the Q3 roadmap\n"


def forget(policy: PathPolicy, text: str, line: str, key: str = "memory/day.md") -> str:
    """*text* as the file, the line reading *line* forgotten as `forget` does."""
    path = write(policy, key, text)
    at = text.splitlines().index(line) + 1
    remove_lines(policy.resolve(key), [LineRange(at, at)], [line], own_headings=CAPTURED)
    return path.read_text()


def test_the_last_captured_memory_takes_its_heading_with_it(policy: PathPolicy) -> None:
    captured = DAY + "\n## Captured\n\n- [fact] dentist on Friday\n"
    assert forget(policy, captured, "- [fact] dentist on Friday") == DAY  # as before the capture


def test_an_emptied_captured_section_between_two_others_leaves_one_blank_line(
    policy: PathPolicy,
) -> None:
    text = DAY + "\n## Captured\n\n- [fact] dentist on Friday\n\n## Dinner\n\nbook a table\n"
    assert forget(policy, text, "- [fact] dentist on Friday") == (
        DAY + "\n## Dinner\n\nbook a table\n"
    )


def test_the_heading_stays_while_a_memory_is_left_under_it(policy: PathPolicy) -> None:
    text = DAY + "\n## Captured\n\n- [fact] dentist on Friday\n- [entity] wife is Xiaohong\n"
    assert forget(policy, text, "- [fact] dentist on Friday") == (
        DAY + "\n## Captured\n\n- [entity] wife is Xiaohong\n"
    )


@pytest.mark.parametrize(
    "under",
    [
        "a line a person wrote",
        "<!-- keep this for later -->",
        "### Doctors",  # a deeper heading belongs to the section
        "```\nnot a heading\n```",
    ],
)
def test_anything_but_blank_lines_keeps_the_heading(policy: PathPolicy, under: str) -> None:
    text = DAY + f"\n## Captured\n\n- [fact] dentist on Friday\n\n{under}\n"
    assert forget(policy, text, "- [fact] dentist on Friday") == (
        DAY + f"\n## Captured\n\n{under}\n"
    )


def test_a_persons_heading_emptied_by_a_forget_stays(policy: PathPolicy) -> None:
    for heading in ("## Notes", "## captured", "### Captured", "## Captured notes"):
        text = DAY + f"\n{heading}\n\n- [fact] dentist on Friday\n"
        assert forget(policy, text, "- [fact] dentist on Friday") == DAY + f"\n{heading}\n"


def test_an_empty_captured_heading_the_forget_did_not_touch_stays(policy: PathPolicy) -> None:
    text = "# 2026-11-28\n\n## Captured\n\n## Captured\n\n- [fact] dentist on Friday\n"
    assert forget(policy, text, "- [fact] dentist on Friday") == "# 2026-11-28\n\n## Captured\n"
    text = "# 2026-11-28\n\n## Captured\n\n## Dinner\n\n- book a table\n- call Bo\n"
    assert forget(policy, text, "- call Bo") == (
        "# 2026-11-28\n\n## Captured\n\n## Dinner\n\n- book a table\n"
    )


def test_a_captured_heading_inside_a_code_block_is_not_one(policy: PathPolicy) -> None:
    text = "# Notes\n\n```\n## Captured\n\n- [fact] an example\n"  # unclosed: code to the end
    assert forget(policy, text, "- [fact] an example") == "# Notes\n\n```\n## Captured\n"


def test_without_own_headings_every_heading_stays(policy: PathPolicy) -> None:
    path = write(policy, "memory/day.md", DAY + "\n## Captured\n\n- [fact] dentist\n")
    remove_lines(policy.resolve("memory/day.md"), [LineRange(9, 9)], ["- [fact] dentist"])
    assert path.read_text() == DAY + "\n## Captured\n"


def test_crlf_and_foreign_bytes_around_an_emptied_heading_survive(policy: PathPolicy) -> None:
    path = policy.workspace / "memory" / "day.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    day = b"# Day\r\n\r\n## Caf\xe9\r\n\r\nlatin-1 text\r\n"
    path.write_bytes(day + b"\r\n## Captured\r\n\r\n- [fact] x\r\n\r\n## Next\r\n\r\n\xff tail\r\n")
    remove_lines(
        policy.resolve("memory/day.md"), [LineRange(9, 9)], ["- [fact] x\r"], own_headings=CAPTURED
    )
    assert path.read_bytes() == day + b"\r\n## Next\r\n\r\n\xff tail\r\n"


def test_blank_runs_away_from_the_removal_are_kept_as_written(policy: PathPolicy) -> None:
    """Only the blank lines at a removal close up: a person's double blank
    line elsewhere, and blank lines ending the file, are theirs."""
    text = "# Notes\n\n\n- one\n\n- drop me\n\n- two\n\n\n"
    assert forget(policy, text, "- drop me", "MEMORY.md") == "# Notes\n\n\n- one\n\n- two\n\n\n"
    # removals at the end take the blank lines before them; two blank runs
    # meeting at a removal keep the longer one
    assert forget(policy, "a\n\n- x\n\n", "- x", "MEMORY.md") == "a\n"
    assert forget(policy, "a\n\n\n- x\n\nb\n", "- x", "MEMORY.md") == "a\n\n\nb\n"


@pytest.mark.parametrize(
    ("text", "span", "after"),
    [
        # the first line of a file, a blank line after it
        ("- drop me\n\n- keep\n", LineRange(1, 1), "- keep\n"),
        # blank lines before and after it: none left at the start
        ("\n\n- drop me\n\n\n- keep\n", LineRange(3, 3), "- keep\n"),
        # the first lines, then a paragraph: nothing with text goes
        ("a\nb\n\nc\nd\n", LineRange(1, 2), "c\nd\n"),
        # a removal further down still keeps the person's leading blank line
        ("\n- keep\n\n- drop me\n\n- also\n", LineRange(4, 4), "\n- keep\n\n- also\n"),
        # in the middle: one blank line, not two
        ("- a\n\n- drop me\n\n- b\n", LineRange(3, 3), "- a\n\n- b\n"),
    ],
)
def test_a_removal_at_the_start_leaves_no_blank_line_there(
    policy: PathPolicy, text: str, span: LineRange, after: str
) -> None:
    path = write(policy, "memory/cite.md", text)
    lines = text.split("\n")
    want = "\n".join(lines[span.start - 1 : span.end])
    remove_lines(policy.resolve("memory/cite.md"), [span], [want])
    assert path.read_text() == after


def test_removing_every_line_with_text_leaves_an_empty_file(policy: PathPolicy) -> None:
    path = write(policy, "memory/cite.md", "\n- only\n\n")
    remove_lines(policy.resolve("memory/cite.md"), [LineRange(2, 2)], ["- only"])
    assert path.read_text() == ""
