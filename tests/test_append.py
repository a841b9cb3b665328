"""Appending: layout, line numbers, locking, and never losing a byte."""

from __future__ import annotations

import fcntl
import os
import threading
from datetime import date
from pathlib import Path

import pytest

from openmemoryd.errors import BadRequest, Conflict, Forbidden, TooLarge
from openmemoryd.memory import append as append_module
from openmemoryd.memory import append_block, target_path
from openmemoryd.workspace import PathPolicy, init_workspace

DAY = date(2026, 11, 22)


@pytest.fixture
def policy(tmp_path: Path) -> PathPolicy:
    ws = tmp_path / "ws"
    init_workspace(ws)
    return PathPolicy(ws)


def lines_of(policy: PathPolicy, key: str) -> list[str]:
    return (policy.workspace / key).read_text().split("\n")


def test_new_daily_file_gets_a_heading(policy: PathPolicy) -> None:
    mp = target_path(policy, None, DAY)
    assert mp.key == "memory/2026-11-22.md"
    done = append_block(mp, "Wei prefers oolong tea", 1 << 20)
    assert (policy.workspace / mp.key).read_text() == "# 2026-11-22\n\nWei prefers oolong tea\n"
    assert (done.start_line, done.end_line, done.created) == (3, 3, True)


def test_appends_are_blocks_separated_by_a_blank_line(policy: PathPolicy) -> None:
    mp = target_path(policy, None, DAY)
    append_block(mp, "first", 1 << 20)
    done = append_block(mp, "second\nthird line\n\n", 1 << 20)
    assert lines_of(policy, mp.key) == ["# 2026-11-22", "", "first", "", "second", "third line", ""]
    assert (done.start_line, done.end_line, done.created) == (5, 6, False)
    assert lines_of(policy, mp.key)[done.start_line - 1 : done.end_line] == ["second", "third line"]


@pytest.mark.parametrize(
    ("existing", "expected"),
    [
        (b"no newline at end", "no newline at end\n\nnew\n"),
        (b"one newline\n", "one newline\n\nnew\n"),
        (b"blank line\n\n", "blank line\n\nnew\n"),
    ],
)
def test_existing_content_is_never_rewritten(
    policy: PathPolicy, existing: bytes, expected: str
) -> None:
    target = policy.workspace / "memory" / "topic.md"
    target.write_bytes(existing)
    done = append_block(policy.resolve("memory/topic.md"), "new", 1 << 20)
    content = target.read_text()
    assert content == expected
    assert content.encode().startswith(existing)
    assert content.split("\n")[done.start_line - 1] == "new"


def test_crlf_is_normalised_and_other_files_get_no_heading(policy: PathPolicy) -> None:
    done = append_block(policy.resolve("MEMORY.md"), "a\r\nb", 1 << 20)
    lines = lines_of(policy, "MEMORY.md")
    assert lines[done.start_line - 1 : done.end_line] == ["a", "b"]
    fresh = append_block(policy.resolve("memory/new-topic.md"), "x", 1 << 20)
    assert (policy.workspace / "memory" / "new-topic.md").read_text() == "x\n"
    assert fresh.start_line == 1


@pytest.mark.parametrize(
    ("text", "message"), [("", "empty"), ("\n \n", "empty"), ("a\x00b", "NUL")]
)
def test_bad_text_is_refused(policy: PathPolicy, text: str, message: str) -> None:
    with pytest.raises(BadRequest, match=message):
        append_block(target_path(policy, None, DAY), text, 1 << 20)
    assert not (policy.workspace / "memory" / "2026-11-22.md").exists()


def test_appending_through_a_symlink_is_refused(policy: PathPolicy, tmp_path: Path) -> None:
    victim = tmp_path / "victim.md"
    victim.write_text("do not touch\n")
    (policy.workspace / "memory" / "evil.md").symlink_to(victim)
    with pytest.raises(Forbidden):
        append_block(policy.resolve("memory/evil.md"), "pwned", 1 << 20)
    assert victim.read_text() == "do not touch\n"


def test_file_size_limit(policy: PathPolicy) -> None:
    mp = policy.resolve("memory/topic.md")
    append_block(mp, "x" * 900, 1000)
    before = (policy.workspace / mp.key).read_bytes()
    with pytest.raises(TooLarge):
        append_block(mp, "y" * 200, 1000)
    assert (policy.workspace / mp.key).read_bytes() == before


def test_a_file_locked_elsewhere_is_a_conflict_not_a_hang(
    policy: PathPolicy, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(append_module, "LOCK_TIMEOUT_S", 0.2)
    target = policy.workspace / "MEMORY.md"
    holder = os.open(target, os.O_RDONLY)
    fcntl.flock(holder, fcntl.LOCK_EX)
    try:
        with pytest.raises(Conflict, match="locked"):
            append_block(policy.resolve("MEMORY.md"), "waiting", 1 << 20)
    finally:
        os.close(holder)
    assert "waiting" not in target.read_text()


def test_concurrent_appends_lose_nothing(policy: PathPolicy) -> None:
    mp = target_path(policy, None, DAY)
    errors: list[BaseException] = []

    def writer(n: int) -> None:
        try:
            for i in range(25):
                append_block(mp, f"writer {n} entry {i}", 1 << 20)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    lines = lines_of(policy, mp.key)
    entries = [line for line in lines if line.startswith("writer ")]
    assert sorted(entries) == sorted(f"writer {n} entry {i}" for n in range(8) for i in range(25))
    assert lines[0] == "# 2026-11-22"
    assert lines.count("# 2026-11-22") == 1


def test_a_crlf_file_gets_crlf_lines(policy: PathPolicy) -> None:
    path = policy.workspace / "memory" / "crlf.md"
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(b"# Notes\r\n\r\n- first\r\n")
    mp = policy.resolve("memory/crlf.md")
    done = append_block(mp, "second\nthird", 1 << 20)
    assert path.read_bytes() == b"# Notes\r\n\r\n- first\r\n\r\nsecond\r\nthird\r\n"
    assert (done.start_line, done.end_line) == (5, 6)
    append_block(mp, "fourth", 1 << 20)  # the known state of the file, not read again
    assert path.read_bytes().endswith(b"third\r\n\r\nfourth\r\n")
    assert b"\n" not in path.read_bytes().replace(b"\r\n", b"")
