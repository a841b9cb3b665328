"""The append journal's rule, on byte strings, and its persistence."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from openmemoryd.memory.append import Appended, append_block, digest
from openmemoryd.memory.append_journal import (
    AppendJournal,
    Entry,
    Verdict,
    _Prefixes,
    _present,
    holds,
    judge,
)
from openmemoryd.memory.edit import insert_line
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
            Entry(
                seq,
                "memory/d.md",
                block,
                at,
                len(before),
                digest(before),
                digest(self.content),
                after_len=len(self.content),
            )
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
    assert second.seq > entry.seq  # after everything loaded
    again.drop([entry])
    assert AppendJournal(path).entries() == [second]
    assert path.stat().st_mode & 0o777 == 0o600


def test_entries_are_judged_in_the_order_their_blocks_were_written(tmp_path: Path) -> None:
    """An append and a restore of the keeper are journalled after the writer
    lane, so their records can land in the other order than their writes.
    A stale rewrite that dropped both must still put both back: judged in
    record order, the one written last looked merely missing and stayed lost."""
    mp = MemoryPath(key="memory/d.md", root=tmp_path, parts=("memory", "d.md"))
    journal = AppendJournal(tmp_path / "journal.json")
    journal.record(append_block(mp, "a", 1 << 20), 100.0)
    before_b = mp.absolute.read_bytes()
    b = append_block(mp, "b", 1 << 20)  # written first...
    restored = append_block(mp, "a again", 1 << 20)
    journal.record(restored, 100.0)  # ...but journalled second
    journal.record(b, 100.0)
    stale = before_b + b"edited\n"  # a rewrite based on the file before "b"
    verdict = judge(stale, journal.entries("memory/d.md"), 101.0, SETTLE, MAX_AGE)
    assert [e.block for e in verdict.restore] == ["b", "a again"]
    assert verdict.missing == []


@pytest.mark.parametrize(
    "garbage",
    [b"{not json", b'[{"seq": "x"}]', b'[{"seq": 1, "key": "caf\xe9"}]'],  # the last: not UTF-8
)
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


# ---------------------------------------------------------------- lines inserted under a heading

MEMORY = "# Memory\n\n## Preferences\n\n- likes tea\n\n## Decisions\n\n- Postgres 16\n"
PREFS = ("Preferences",)


class Inserts:
    """A MEMORY.md grown by `log`'s inserts under headings, journalled."""

    def __init__(self, tmp_path: Path, text: str = MEMORY) -> None:
        self.mp = MemoryPath(key="MEMORY.md", root=tmp_path, parts=("MEMORY.md",))
        self.mp.absolute.write_text(text)
        self.journal = AppendJournal(tmp_path / "journal.json")

    def insert(self, line: str, titles: tuple[str, ...] = PREFS) -> bytes:
        """Insert *line*, journal it; return the file as it was before."""
        before = self.mp.absolute.read_bytes()
        done = insert_line(self.mp, titles, line, max_file_bytes=1 << 20)
        self.journal.record(done, 100.0)
        return before

    @property
    def content(self) -> bytes:
        return self.mp.absolute.read_bytes()

    def judge(self, content: bytes) -> Verdict:
        return judge(content, self.journal.entries(), 101.0, SETTLE, MAX_AGE)


def test_an_inserted_line_lost_to_a_stale_rewrite_is_restored(tmp_path: Path) -> None:
    f = Inserts(tmp_path)
    before = f.insert("- prefers dark roast")
    stale = before + b"- an editor's own line\n"  # based on the copy read before the insert
    verdict = f.judge(stale)
    assert [e.block for e in verdict.restore] == ["- prefers dark roast"]
    assert verdict.missing == []


def test_a_stale_rewrite_that_edited_before_the_line_is_reported_not_restored(
    tmp_path: Path,
) -> None:
    f = Inserts(tmp_path)
    before = f.insert("- prefers dark roast")
    edited = before.replace(b"likes tea", b"likes green tea") + b"more\n"
    verdict = f.judge(edited)
    assert verdict.restore == []
    assert [e.block for e in verdict.missing] == ["- prefers dark roast"]


def test_an_inserted_line_deleted_with_nothing_added_is_reported_not_restored(
    tmp_path: Path,
) -> None:
    f = Inserts(tmp_path)
    before = f.insert("- prefers dark roast")
    verdict = f.judge(before)  # exactly the file without it: a deletion as likely as a stale copy
    assert verdict.restore == []
    assert [e.block for e in verdict.missing] == ["- prefers dark roast"]


def test_an_inserted_line_deleted_after_a_later_insert_is_not_restored(tmp_path: Path) -> None:
    f = Inserts(tmp_path)
    f.insert("- prefers dark roast")
    f.insert("- use Redis for the cache", ("Decisions",))
    # A person deletes the first in an editor: the file still holds the
    # second, which was made to a version that held the first.
    f.mp.absolute.write_bytes(f.content.replace(b"- prefers dark roast\n", b"") + b"\nnote\n")
    verdict = f.judge(f.content)
    assert [e.block for e in verdict.settled] == ["- prefers dark roast"]  # on purpose
    assert verdict.restore == verdict.missing == []


def test_a_later_insert_made_without_the_line_shows_the_rewrite_was_stale(tmp_path: Path) -> None:
    f = Inserts(tmp_path)
    before = f.insert("- prefers dark roast")
    f.mp.absolute.write_bytes(before + b"\nnote\n")  # a stale rewrite, then another insert
    f.insert("- use Redis for the cache", ("Decisions",))
    verdict = f.judge(f.content)
    assert [e.block for e in verdict.restore] == ["- prefers dark roast"]


def test_a_new_section_counts_as_part_of_the_insert(tmp_path: Path) -> None:
    f = Inserts(tmp_path)
    before = f.insert("- ships on Fridays", ("Habits",))
    assert b"## Habits" in f.content
    (entry,) = f.journal.entries()
    assert entry.block == "- ships on Fridays"
    assert entry.titles == ("Habits",)
    verdict = f.judge(before + b"tail\n")  # stale: lacks the heading and the line
    assert [e.block for e in verdict.restore] == ["- ships on Fridays"]


def test_a_line_counted_again_by_log_still_holds() -> None:
    assert holds(b"# d\n- tea\n", "- tea")
    assert holds(b"# d\n- tea (\xc3\x972)\n", "- tea")
    assert holds(b"# d\n- tea (\xc3\x9712)\r\n", "- tea")
    assert not holds(b"# d\n- tea leaves (\xc3\x972)\n", "- tea")  # another memory
    assert not holds(b"# d\n- tea (\xc3\x972) and more\n", "- tea")
    assert not holds(b"# d\n- a\n- b (\xc3\x972)\n", "- a\n- b")  # blocks match exactly


def test_a_file_saved_with_crlf_line_ends_or_a_bom_still_holds_its_blocks() -> None:
    # a Windows editor, unix2dos or vim's ff=dos keep every line
    assert holds(b"# Notes\r\n\r\n- existing\r\n\r\nagent note 1\r\n", "agent note 1")
    assert holds(b"\xef\xbb\xbfagent note 1\n\nmore\n", "agent note 1")
    assert holds(b"a\r\nb\r\n", "a\nb")
    assert not holds(b"agent note 10\r\n", "agent note 1")


def _framed_holds(content: bytes, block: str) -> bool:
    """`holds` as first written: the content framed by newlines, then
    searched (with its line ends and a leading byte-order mark read as LF)."""
    encoded = block.encode("utf-8")
    content = content.removeprefix(b"\xef\xbb\xbf").replace(b"\r\n", b"\n")
    framed = b"\n" + content + b"\n"
    if b"\n" + encoded + b"\n" in framed:
        return True
    if b"\n" in encoded:
        return False
    counted = re.compile(b"\n" + re.escape(encoded) + rb"[ \t]+\(\xc3\x97\d+\)[ \t]*\r?\n")
    return counted.search(framed) is not None


_LINES = st.lists(st.sampled_from(["a", "b", "a b", "", "- x", "- x (×2)", "- x (×3) ", "b\r"]))


@given(_LINES, st.lists(st.sampled_from(["a", "b", "a\nb", "- x", "x", "a b"]), min_size=1))
def test_holds_without_copying_the_file_agrees_with_the_framed_search(
    lines: list[str], blocks: list[str]
) -> None:
    content = "\n".join(lines).encode("utf-8")
    for block in blocks:
        assert holds(content, block) == _framed_holds(content, block)
        assert holds(content + b"\n", block) == _framed_holds(content + b"\n", block)


@given(_LINES, st.lists(st.sampled_from(["a", "b", "a\nb", "- x"]), min_size=1, max_size=4), _LINES)
def test_a_block_looked_for_where_it_was_written_is_found_as_anywhere(
    start: list[str], blocks: list[str], edit: list[str]
) -> None:
    """The keeper's positional shortcut never changes a verdict: on the
    grown file and on files changed after the appends, `_present` says what
    `holds` says."""
    h = History("\n".join(start).encode("utf-8"))
    for block in blocks:
        h.append(block)
    changed = [
        h.content,
        h.content + "\n".join(edit).encode("utf-8"),
        "\n".join(edit).encode("utf-8") + h.content,
        h.content[: len(h.content) // 2],
        h.content.replace(b"- x\n", b"- x (\xc3\x972)\n", 1),
    ]
    for content in changed:
        for entry in h.entries:
            assert _present(content, entry) == holds(content, entry.block)
    assert all(_present(h.content, e) for e in h.entries)


@given(st.binary(max_size=300), st.lists(st.integers(min_value=0, max_value=320), max_size=20))
def test_the_beginnings_hashed_incrementally_are_those_hashed_afresh(
    content: bytes, lengths: list[int]
) -> None:
    """`judge` hashes the file's beginnings once each, in any order asked."""
    file = _Prefixes(content)
    for n in lengths:
        expected = n <= len(content)
        assert file.begins_with(n, digest(content[:n])) is expected
        assert not file.begins_with(n, digest(content[:n] + b"x"))
