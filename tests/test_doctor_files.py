"""The doctor's ``files`` check: the files `status` lists as issues are its
warnings, each with a fix, and a skipped file is not counted as indexed
(by the count `status` shows, so the two agree). A file not in UTF-8 gets
a conversion from the encoding it looks like, or with a placeholder, and
never one that replaces the file without keeping the original."""

from __future__ import annotations

from pathlib import Path

from omem_protocol import SourceCounts
from openmemoryd.doctor.files import encodings_of_noted, files_check
from openmemoryd.store import IndexedFile
from openmemoryd.workspace import PathPolicy

BINARY = "skipped: binary file (contains NUL bytes)"
LOSSY = "not UTF-8, nor clearly one other encoding: invalid bytes replaced with U+FFFD"
GBK = "not UTF-8: read as gb18030"
CP1251 = "not UTF-8: read as cp1251"
LARGE = "skipped: memory/huge.md is 40000000 bytes, over the 33554432-byte limit"


def noted(path: str, note: str, source: str = "memory") -> IndexedFile:
    return IndexedFile(path=path, source=source, hash="", mtime_ns=0, size=0, chunks=0, note=note)


def memory(indexed: int, on_disk: int, chunks: int = 10, skipped: int = 0) -> SourceCounts:
    return SourceCounts(
        source="memory",
        files_on_disk=on_disk,
        files_indexed=indexed,
        chunks=chunks,
        files_skipped=skipped,
    )


def test_files_in_step_and_without_notes_pass() -> None:
    check = files_check([memory(3, 3)], syncing=False, running=True)
    assert (check.status, check.detail) == ("ok", "indexed/on disk: memory 3/3 (10 chunks)")


def test_a_binary_and_a_latin1_file_warn_with_their_fixes() -> None:
    check = files_check(
        [memory(26, 26, skipped=1)],
        syncing=False,
        running=True,
        noted=[noted("memory/export.md", BINARY), noted("memory/latin1.md", LOSSY)],
        encodings={"memory/latin1.md": "latin1"},
    )
    assert check.status == "warn"
    assert check.detail == (
        f"memory/export.md: {BINARY}; memory/latin1.md: {LOSSY}; "
        "indexed/on disk: memory 25/26 (10 chunks, 1 skipped)"
    )
    assert check.fix is not None
    assert "move memory/export.md out of the memory folders" in check.fix
    assert (
        "convert memory/latin1.md to UTF-8 in the workspace (it looks like latin1), keeping "
        "the original: iconv -f latin1 -t utf-8 memory/latin1.md > memory/latin1.md.utf8 "
        "&& mv memory/latin1.md memory/latin1.md.orig && mv memory/latin1.md.utf8 memory/latin1.md"
        in check.fix
    )
    # a skipped file has its row: it is not "on disk, not yet indexed"
    assert "not yet indexed" not in check.detail
    assert "omem-client sync" not in check.fix


def test_a_file_over_the_size_limit_says_which_setting_to_raise() -> None:
    check = files_check(
        [memory(2, 2, skipped=1)],
        syncing=False,
        running=True,
        noted=[noted("memory/huge.md", LARGE)],
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


def test_the_skipped_count_is_the_one_status_shows_not_the_notes_read_apart() -> None:
    """`status` and the check read the counts in one go and the notes in
    another; the counts decide, so both print the same numbers."""
    check = files_check([memory(3, 3, skipped=1)], syncing=False, running=True)
    assert (check.status, check.detail) == (
        "ok",
        "indexed/on disk: memory 2/3 (10 chunks, 1 skipped)",
    )
    # a lossy (not UTF-8) file is indexed, not skipped: it warns, counted as indexed
    check = files_check(
        [memory(3, 3)], syncing=False, running=True, noted=[noted("memory/latin1.md", LOSSY)]
    )
    assert check.detail.endswith("indexed/on disk: memory 3/3 (10 chunks)")


def test_a_file_whose_encoding_is_unclear_gets_a_placeholder_and_keeps_its_original() -> None:
    check = files_check(
        [memory(3, 3)], syncing=False, running=True, noted=[noted("memory/x.md", LOSSY)]
    )
    assert check.fix == (
        "convert memory/x.md to UTF-8 in the workspace, keeping the original, with its "
        "encoding in place of ENCODING (cp1251 for Russian, gb18030 for Chinese, shift_jis "
        "for Japanese, latin1 for Western European): iconv -f ENCODING -t utf-8 memory/x.md "
        "> memory/x.md.utf8 && mv memory/x.md memory/x.md.orig && mv memory/x.md.utf8 memory/x.md"
    )


def test_a_lossy_file_is_read_for_its_encoding(tmp_path: Path) -> None:
    """A file read lossily is read (its start only) for the encoding it
    looks like; a binary or missing file, or a path outside the workspace
    (a transcript), gives no name."""
    memory_dir = tmp_path / "memory"
    memory_dir.mkdir()
    (memory_dir / "ru.md").write_bytes("# Заметки\n\n- Купить молоко и хлеб.\n".encode("cp1251"))
    (memory_dir / "zh.md").write_bytes("# 笔记\n\n- 今天我们去公园散步，天气很好。\n".encode("gbk"))
    # a long file, its sample (64 KiB) ending inside a character, is still named
    (memory_dir / "long.md").write_bytes(b"#" + ("今天天气很好。" * 5000).encode("gbk"))
    (memory_dir / "one.md").write_bytes(b"\xe9")
    policy = PathPolicy(tmp_path)

    def found(*paths: str) -> dict[str, str]:
        return encodings_of_noted(policy, [noted(p, LOSSY) for p in paths])

    assert found("memory/ru.md", "memory/zh.md") == {
        "memory/ru.md": "cp1251",
        "memory/zh.md": "gb18030",
    }
    assert found("memory/long.md") == {"memory/long.md": "gb18030"}
    assert found("memory/one.md") == {}  # too little to tell
    assert found("memory/gone.md") == {}
    assert found("/elsewhere/transcript.jsonl") == {}
    skipped = encodings_of_noted(policy, [noted("memory/ru.md", BINARY)])
    assert skipped == {}  # a skipped file's fix is not a conversion
    (memory_dir / "link.md").symlink_to(memory_dir / "ru.md")
    assert found("memory/link.md") == {}  # opened as every memory file is: no symlinks


def test_a_file_read_in_a_legacy_encoding_is_named_by_its_note_without_reading_it(
    tmp_path: Path,
) -> None:
    """The indexer's note says which encoding it read the file as: that is
    the name, even with the file gone since (nothing is read)."""
    policy = PathPolicy(tmp_path)
    files = [noted("memory/gbk笔记.md", GBK), noted("memory/2026-10-15.md", CP1251)]
    assert encodings_of_noted(policy, files) == {
        "memory/gbk笔记.md": "gb18030",
        "memory/2026-10-15.md": "cp1251",
    }


def test_every_file_not_in_utf8_gets_its_own_conversion() -> None:
    """A GBK note and a cp1251 one: two commands, each with its encoding
    (one fix per kind named only the first file)."""
    files = [noted("memory/2026-10-15.md", CP1251), noted("memory/gbk笔记.md", GBK)]
    check = files_check(
        [memory(2, 2)],
        syncing=False,
        running=True,
        noted=files,
        encodings={"memory/2026-10-15.md": "cp1251", "memory/gbk笔记.md": "gb18030"},
    )
    assert check.detail.startswith(
        f"memory/2026-10-15.md: {CP1251}; memory/gbk笔记.md: {GBK}; indexed/on disk"
    )
    assert check.fix is not None
    assert "iconv -f cp1251 -t utf-8 memory/2026-10-15.md > memory/2026-10-15.md.utf8" in check.fix
    assert "iconv -f gb18030 -t utf-8 memory/gbk笔记.md > memory/gbk笔记.md.utf8" in check.fix


def test_many_files_not_in_utf8_are_cut_short_pointing_at_status() -> None:
    many = [noted(f"memory/ru{i:02}.md", CP1251) for i in range(12)]
    encodings = {f.path: "cp1251" for f in many}
    check = files_check(
        [memory(12, 12)], syncing=False, running=True, noted=many, encodings=encodings
    )
    assert check.fix is not None
    assert check.fix.count("iconv -f cp1251") == 10
    assert "memory/ru09.md" in check.fix
    assert "memory/ru10.md" not in check.fix
    assert check.fix.endswith(
        "and 2 more file(s) not in UTF-8 (`omem-client status` lists them all)"
    )
