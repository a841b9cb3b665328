"""The append journal's rule, on byte strings, and its persistence."""

from __future__ import annotations

from pathlib import Path

import pytest

from openmemoryd.memory.append import Appended, digest
from openmemoryd.memory.append_journal import AppendJournal, Entry, judge
from openmemoryd.workspace import MemoryPath

SETTLE = 30.0
MAX_AGE = 3600.0


class History:
    """A file grown by journalled appends, as the daemon would record them."""

    def __init__(self, start: bytes = b"# day\n") -> None:
        self.content = start
        self.entries: list[Entry] = []

    def append(self, block: str, at: float = 100.0) -> bytes:
        before = self.content
        self.content = before + b"\n" + block.encode() + b"\n"
        seq = len(self.entries) + 1
        self.entries.append(
            Entry(seq, "memory/d.md", block, at, len(before), digest(before), digest(self.content))
        )
        return before


def test_present_lines_stay_until_settled() -> None:
    h = History()
    h.append("a", at=100.0)
    assert judge(h.content, h.entries, 110.0, SETTLE, MAX_AGE).settled == []
    assert judge(h.content, h.entries, 131.0, SETTLE, MAX_AGE).settled == h.entries


def test_stale_rewrite_restores_the_lines_it_lacks_and_all_after() -> None:
    h = History()
    base = h.append("a")
    h.append("b")
    h.append("c")
    stale = h.content.replace(b"\nb\n\nc\n", b"") + b"edited\n"
    assert stale == base + b"\na\n" + b"edited\n"
    verdict = judge(stale, h.entries, 101.0, SETTLE, MAX_AGE)
    assert [e.block for e in verdict.restore] == ["b", "c"]
    assert verdict.missing == []
    assert verdict.settled == []


def test_appends_made_after_the_stale_rewrite_do_not_hide_it() -> None:
    h = History()
    h.append("a")
    before_b = h.append("b")
    rewritten = before_b + b"edited\n"  # based on the file before "b"
    h.content = rewritten
    h.append("c")  # appended to the rewritten file
    verdict = judge(h.content, h.entries, 101.0, SETTLE, MAX_AGE)
    assert [e.block for e in verdict.restore] == ["b"]


def test_deleting_a_line_that_later_appends_followed_is_on_purpose() -> None:
    h = History()
    h.append("a")
    h.append("b")
    h.append("c")
    edited = h.content.replace(b"\nb\n", b"")
    verdict = judge(edited, h.entries, 101.0, SETTLE, MAX_AGE)
    assert verdict.restore == []
    assert verdict.missing == []
    assert [e.block for e in verdict.settled] == ["b"]


def test_rewrite_that_changed_earlier_content_is_reported_not_restored() -> None:
    h = History()
    h.append("a")
    other = b"# renamed day\n\na\n"  # lacks "b" but does not extend its base
    h.append("b")
    verdict = judge(other, h.entries, 101.0, SETTLE, MAX_AGE)
    assert [e.block for e in verdict.missing] == ["b"]
    assert verdict.restore == []
    given_up = judge(other, h.entries, 100 + MAX_AGE, SETTLE, MAX_AGE)
    assert [e.block for e in given_up.settled] == ["a", "b"]  # a: present; b: too old
    assert given_up.missing == []


def test_a_rewrite_equal_to_the_base_adds_nothing_and_is_not_stale() -> None:
    h = History()
    base = h.append("a")
    verdict = judge(base, h.entries, 101.0, SETTLE, MAX_AGE)
    assert verdict.restore == []
    assert [e.block for e in verdict.missing] == ["a"]


def test_journal_persists_and_drops(tmp_path: Path) -> None:
    path = tmp_path / "journal" / "default.json"
    journal = AppendJournal(path)
    mp = MemoryPath(key="memory/d.md", root=tmp_path, parts=("memory", "d.md"))
    entry = journal.record(Appended(mp, 1, 1, True, "x", 0, digest(b""), digest(b"x\n")), 5.0)
    again = AppendJournal(path)
    assert again.entries() == [entry]
    assert again.keys() == {"memory/d.md"}
    second = again.record(Appended(mp, 2, 2, False, "y", 2, digest(b"x\n"), "h"), 6.0)
    assert second.seq == entry.seq + 1
    again.drop([entry])
    assert AppendJournal(path).entries() == [second]
    assert path.stat().st_mode & 0o777 == 0o600


@pytest.mark.parametrize("garbage", [b"{not json", b'[{"seq": "x"}]'])
def test_damaged_journal_is_set_aside_not_fatal(tmp_path: Path, garbage: bytes) -> None:
    path = tmp_path / "default.json"
    path.write_bytes(garbage)
    journal = AppendJournal(path)
    assert journal.entries() == []
    assert (tmp_path / "default.json.damaged").read_bytes() == garbage


def test_a_block_counts_only_as_whole_lines() -> None:
    h = History(b"# daybreak\n")
    h.append("day")
    verdict = judge(b"# daybreak\nx\n", h.entries, 101.0, SETTLE, MAX_AGE)
    assert [e.block for e in verdict.restore] == ["day"]
