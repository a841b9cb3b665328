"""The doctor's ``files`` check: the files `status` lists as issues are its
warnings, each with a fix, and a skipped file is not counted as indexed."""

from __future__ import annotations

from omem_protocol import SourceCounts
from openmemoryd.doctor.files import files_check
from openmemoryd.store import IndexedFile

BINARY = "skipped: binary file (contains NUL bytes)"
LOSSY = "invalid UTF-8 replaced with U+FFFD"
LARGE = "skipped: memory/huge.md is 40000000 bytes, over the 33554432-byte limit"


def noted(path: str, note: str, source: str = "memory") -> IndexedFile:
    return IndexedFile(path=path, source=source, hash="", mtime_ns=0, size=0, chunks=0, note=note)


def memory(indexed: int, on_disk: int, chunks: int = 10) -> SourceCounts:
    return SourceCounts(
        source="memory", files_on_disk=on_disk, files_indexed=indexed, chunks=chunks
    )


def test_files_in_step_and_without_notes_pass() -> None:
    check = files_check([memory(3, 3)], syncing=False, running=True)
    assert (check.status, check.detail) == ("ok", "indexed/on disk: memory 3/3 (10 chunks)")


def test_a_binary_and_a_latin1_file_warn_with_their_fixes() -> None:
    check = files_check(
        [memory(26, 26)],
        syncing=False,
        running=True,
        noted=[noted("memory/export.md", BINARY), noted("memory/latin1.md", LOSSY)],
    )
    assert check.status == "warn"
    assert check.detail == (
        f"memory/export.md: {BINARY}; memory/latin1.md: {LOSSY}; "
        "indexed/on disk: memory 25/26 (10 chunks, 1 skipped)"
    )
    assert check.fix is not None
    assert "move memory/export.md out of the memory folders" in check.fix
    assert (
        "iconv -f latin1 -t utf-8 memory/latin1.md > memory/latin1.md.utf8 "
        "&& mv memory/latin1.md.utf8 memory/latin1.md" in check.fix
    )
    # a skipped file has its row: it is not "on disk, not yet indexed"
    assert "not yet indexed" not in check.detail
    assert "omem-client sync" not in check.fix


def test_a_file_over_the_size_limit_says_which_setting_to_raise() -> None:
    check = files_check(
        [memory(2, 2)], syncing=False, running=True, noted=[noted("memory/huge.md", LARGE)]
    )
    assert check.status == "warn"
    assert check.fix == "split memory/huge.md into smaller files, or raise [index] max_file_bytes"
    assert check.detail.endswith("memory 1/2 (10 chunks, 1 skipped)")


def test_unreadable_directories_warn() -> None:
    check = files_check(
        [memory(1, 1)],
        syncing=False,
        running=False,
        unreadable=["cannot list memory/private: Permission denied"],
    )
    assert check.status == "warn"
    assert check.detail.startswith("cannot list memory/private: Permission denied; ")
    assert check.fix == "make what cannot be listed readable by the user openmemoryd runs as"


def test_many_problems_are_cut_short_pointing_at_status() -> None:
    many = [noted(f"memory/b{i}.md", BINARY) for i in range(5)]
    check = files_check([memory(5, 5)], syncing=False, running=True, noted=many)
    assert check.detail.count(BINARY) == 3
    assert "and 2 more (`omem-client status` lists them all)" in check.detail
    assert check.fix is not None
    assert check.fix.count("move ") == 1  # one fix for the kind, naming the first


def test_missing_files_still_warn_with_the_sync_fix_beside_the_notes() -> None:
    check = files_check(
        [memory(3, 5)],
        syncing=True,
        running=True,
        noted=[noted("memory/latin1.md", LOSSY)],
    )
    assert check.status == "warn"
    assert "2 file(s) on disk not yet indexed while a sync runs" in check.detail
    assert check.fix is not None
    assert check.fix.endswith("wait for the sync to finish (`omem-client status` shows it)")
    assert check.fix.startswith("convert memory/latin1.md to UTF-8")
