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
