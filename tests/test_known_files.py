"""Appends that continue from what the last one left (`memory.known`):
the same answers as reading the file, and never trusted after a change."""

from __future__ import annotations

import hashlib
import os
from datetime import date
from pathlib import Path

import pytest

from openmemoryd.memory import append as append_module
from openmemoryd.memory import append_block, target_path
from openmemoryd.memory.append import Appended
from openmemoryd.memory.known import FileSoFar, KnownFiles
from openmemoryd.workspace import MemoryPath, PathPolicy, init_workspace

DAY = date(2026, 11, 22)


@pytest.fixture
def daily(tmp_path: Path) -> MemoryPath:
    ws = tmp_path / "ws"
    init_workspace(ws)
    return target_path(PathPolicy(ws), None, DAY)


def expected(mp: MemoryPath, done: Appended) -> None:
    """*done* says what reading the whole file would have said."""
    data = mp.absolute.read_bytes()
    before = data[: done.before_len]
    assert done.before_hash == hashlib.sha256(before).hexdigest()
    assert done.after_hash == hashlib.sha256(data).hexdigest()
    assert done.after_len == len(data)
    lines = data.decode().split("\n")
    assert "\n".join(lines[done.start_line - 1 : done.end_line]) == done.block


def count_reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    reads: list[int] = []
    real = append_module.read_all

    def read_all(fd: int) -> bytes:
        reads.append(fd)
        return real(fd)

    monkeypatch.setattr(append_module, "read_all", read_all)
    return reads


def test_appends_after_the_first_do_not_read_the_file_and_say_the_same(
    daily: MemoryPath, monkeypatch: pytest.MonkeyPatch
) -> None:
    known = KnownFiles()
    reads = count_reads(monkeypatch)
    for n in range(30):
        done = append_block(
            daily, f"note {n}\nsecond line {n}" if n % 3 else f"note {n}", 1 << 20, known
        )
        expected(daily, done)
    assert len(reads) == 1  # the first append only


def _replaced_by_rename(path: Path) -> None:
    """An editor's save: a new file (same bytes) renamed over the old one."""
    temp = path.with_name("tmp")
    temp.write_bytes(path.read_bytes())
    os.replace(temp, path)


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(lambda p: p.write_bytes(p.read_bytes() + b"added by hand\n"), id="appended"),
        pytest.param(
            lambda p: p.write_bytes(p.read_bytes().replace(b"note 1", b"NOTE 1")),
            id="same-size-in-place",
        ),
        pytest.param(lambda p: _replaced_by_rename(p), id="replaced-by-rename"),
        pytest.param(lambda p: os.truncate(p, 5), id="truncated"),
    ],
)
def test_a_file_changed_since_is_read_again(
    daily: MemoryPath, monkeypatch: pytest.MonkeyPatch, change: object
) -> None:
    known = KnownFiles()
    append_block(daily, "note 1", 1 << 20, known)
    append_block(daily, "note 2", 1 << 20, known)
    reads = count_reads(monkeypatch)
    change(daily.absolute)  # type: ignore[operator]
    done = append_block(daily, "note 3", 1 << 20, known)
    expected(daily, done)
    assert len(reads) == 1


def test_a_change_the_stat_does_not_show_is_caught_by_the_end_bytes(
    daily: MemoryPath, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A same-size rewrite in place within one tick of the clock can keep
    every time the stat shows; the last bytes, read back, still tell."""
    known = KnownFiles()
    append_block(daily, "note 1", 1 << 20, known)
    path = daily.absolute
    old = FileSoFar.of(path.read_bytes())
    with open(path, "r+b") as f:  # in place: same inode, same size
        f.write(path.read_bytes().replace(b"note 1", b"NOTE 1"))
    known.remember(daily.key, path.stat(), old)  # as if the stat had not moved
    reads = count_reads(monkeypatch)
    done = append_block(daily, "note 2", 1 << 20, known)
    expected(daily, done)
    assert len(reads) == 1


def test_a_refused_append_leaves_nothing_remembered(
    daily: MemoryPath, monkeypatch: pytest.MonkeyPatch
) -> None:
    known = KnownFiles()
    append_block(daily, "note 1", 1 << 20, known)
    size = daily.absolute.stat().st_size
    with pytest.raises(Exception, match="limit"):
        append_block(daily, "x" * 100, size + 10, known)
    reads = count_reads(monkeypatch)
    expected(daily, append_block(daily, "note 2", 1 << 20, known))
    assert len(reads) == 1
