"""Finding memory files on disk."""

from __future__ import annotations

import os
from pathlib import Path

from openmemoryd.config import normalize_extra_paths
from openmemoryd.workspace import PathPolicy, init_workspace, scan_memory_files, template_text


def make_ws(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    init_workspace(ws)
    return ws


def test_templates_and_daily_files_are_found(tmp_path: Path) -> None:
    ws = make_ws(tmp_path)
    (ws / "memory" / "2026-11-22.md").write_text("x")
    (ws / "memory" / "topics").mkdir()
    (ws / "memory" / "topics" / "db.md").write_text("x")
    (ws / "memory" / "notes.txt").write_text("not markdown")
    (ws / "README.md").write_text("not memory")
    scan = scan_memory_files(PathPolicy(ws))
    assert sorted(scan.files) == [
        "MEMORY.md",
        "PROJECT.md",
        "USER.md",
        "memory/2026-11-22.md",
        "memory/topics/db.md",
    ]
    assert scan.issues == []


def test_hidden_tool_and_symlinked_entries_are_skipped(tmp_path: Path) -> None:
    ws = make_ws(tmp_path)
    for ignored in (".git", "node_modules", "__pycache__", "venv", ".venv"):
        (ws / "memory" / ignored).mkdir()
        (ws / "memory" / ignored / "x.md").write_text("x")
    (ws / "memory" / ".hidden.md").write_text("x")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "o.md").write_text("o")
    (ws / "memory" / "linked-dir").symlink_to(outside, target_is_directory=True)
    (ws / "memory" / "linked.md").symlink_to(outside / "o.md")
    scan = scan_memory_files(PathPolicy(ws))
    assert not any(key.startswith("memory/") for key in scan.files)


def test_extra_paths_dirs_files_missing_and_duplicates(tmp_path: Path) -> None:
    """OpenClaw internal.test cases 24-25, adapted."""
    ws = make_ws(tmp_path)
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "note1.md").write_text("1")
    (extra / "note2.md").write_text("2")
    (extra / "ignore.txt").write_text("3")
    single = tmp_path / "single.md"
    single.write_text("s")
    extras = normalize_extra_paths(
        ws,
        [
            " ../extra ",
            str(extra),
            str(single),
            "",
            str(tmp_path / "missing"),
            str(ws / "MEMORY.md"),
        ],
    )
    assert extras == (extra, single, tmp_path / "missing", ws / "MEMORY.md")
    scan = scan_memory_files(PathPolicy(ws, extras))
    assert str(extra / "note1.md") in scan.files
    assert str(extra / "note2.md") in scan.files
    assert str(single) in scan.files
    assert not any(key.endswith("ignore.txt") for key in scan.files)
    assert sum(1 for key in scan.files if key.endswith("MEMORY.md")) == 1


def test_unreadable_directory_is_an_issue_not_a_failure(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        # root reads anything; simulate with a directory that vanishes instead
        ws = make_ws(tmp_path)
        scan = scan_memory_files(PathPolicy(ws, [tmp_path / "gone"]))
        assert "MEMORY.md" in scan.files
        return
    ws = make_ws(tmp_path)
    locked = ws / "memory" / "locked"
    locked.mkdir()
    locked.chmod(0)
    try:
        scan = scan_memory_files(PathPolicy(ws))
    finally:
        locked.chmod(0o700)
    assert any("locked" in issue for issue in scan.issues)
    assert "MEMORY.md" in scan.files


def test_init_never_overwrites(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    created = init_workspace(ws)
    assert {"MEMORY.md", "USER.md", "PROJECT.md", "memory/"} <= set(created)
    assert (ws / "MEMORY.md").read_text() == template_text("MEMORY.md")
    (ws / "MEMORY.md").write_text("mine")
    assert init_workspace(ws) == []
    assert (ws / "MEMORY.md").read_text() == "mine"
    assert (ws.stat().st_mode & 0o777) == 0o700
