"""Which paths are memory, and that symlinks and special files are refused."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from openmemoryd.errors import BadRequest, Forbidden, NotFound, TooLarge
from openmemoryd.workspace import (
    PathPolicy,
    RootMissing,
    init_workspace,
    open_beneath,
    read_memory_file,
)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    init_workspace(root)
    (root / "memory" / "2026-11-22.md").write_text("line 1\nline 2\n")
    (root / "memory" / "projects").mkdir()
    (root / "memory" / "projects" / "alpha.md").write_text("alpha\n")
    return root


@pytest.mark.parametrize(
    ("raw", "key"),
    [
        ("MEMORY.md", "MEMORY.md"),
        ("USER.md", "USER.md"),
        ("PROJECT.md", "PROJECT.md"),
        ("memory/2026-11-22.md", "memory/2026-11-22.md"),
        ("./memory/projects/alpha.md", "memory/projects/alpha.md"),
        ("  memory/2026-11-22.md  ", "memory/2026-11-22.md"),
    ],
)
def test_memory_paths_resolve_to_their_keys(ws: Path, raw: str, key: str) -> None:
    assert PathPolicy(ws).resolve(raw).key == key


def test_absolute_path_inside_the_workspace_is_accepted(ws: Path) -> None:
    assert PathPolicy(ws).resolve(str(ws / "MEMORY.md")).key == "MEMORY.md"


@pytest.mark.parametrize(
    ("raw", "error", "message"),
    [
        ("", BadRequest, "path required"),
        ("   ", BadRequest, "path required"),
        ("memory/a\x00.md", BadRequest, "NUL"),
        ("../secret.md", Forbidden, "'..'"),
        ("memory/../MEMORY.md", Forbidden, "'..'"),
        ("/etc/passwd", Forbidden, ".md"),
        ("/etc/notes.md", Forbidden, "not a memory file"),
        ("NOTES.md", Forbidden, "not a memory file"),
        ("memory/notes.txt", Forbidden, ".md"),
        ("memory", Forbidden, ".md"),
        ("memory/.git/x.md", Forbidden, "not a memory file"),
        ("memory/node_modules/x.md", Forbidden, "not a memory file"),
    ],
)
def test_everything_else_is_refused_with_a_clear_error(
    ws: Path, raw: str, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        PathPolicy(ws).resolve(raw)


def test_symlinked_file_is_refused(ws: Path, tmp_path: Path) -> None:
    secret = tmp_path / "secret.md"
    secret.write_text("secret")
    (ws / "memory" / "link.md").symlink_to(secret)
    mp = PathPolicy(ws).resolve("memory/link.md")
    with pytest.raises(Forbidden, match="symlink"):
        read_memory_file(mp, 1 << 20)


def test_symlinked_intermediate_directory_is_refused(ws: Path, tmp_path: Path) -> None:
    """OpenClaw PRs #68597/#80331: only the last component used to be checked."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "x.md").write_text("outside the workspace")
    (ws / "memory" / "sub").symlink_to(outside, target_is_directory=True)
    mp = PathPolicy(ws).resolve("memory/sub/x.md")
    with pytest.raises(Forbidden, match="symlink"):
        read_memory_file(mp, 1 << 20)


def test_fifo_is_refused_without_blocking(ws: Path) -> None:
    os.mkfifo(ws / "memory" / "pipe.md")
    mp = PathPolicy(ws).resolve("memory/pipe.md")
    with pytest.raises(Forbidden, match=r"not a regular file"):
        read_memory_file(mp, 1 << 20)


def test_directory_named_md_is_refused(ws: Path) -> None:
    (ws / "memory" / "dir.md").mkdir()
    with pytest.raises(Forbidden):
        read_memory_file(PathPolicy(ws).resolve("memory/dir.md"), 1 << 20)


def test_missing_file_is_not_found(ws: Path) -> None:
    with pytest.raises(NotFound, match=r"memory/none\.md"):
        read_memory_file(PathPolicy(ws).resolve("memory/none.md"), 1 << 20)


def test_a_missing_workspace_is_named_not_the_file_and_is_not_recreated(ws: Path) -> None:
    """The error names the workspace: "no such memory file:
    memory/<today>.md" sent a user whose workspace had been deleted looking
    for a daily note."""
    policy = PathPolicy(ws)
    daily, top = policy.resolve("memory/2026-11-23.md"), policy.resolve("MEMORY.md")
    shutil.rmtree(ws)
    named = re.escape(f"workspace missing: {ws} (deleted or moved?)")
    with pytest.raises(RootMissing, match=named) as raised:
        open_beneath(daily, os.O_WRONLY | os.O_CREAT | os.O_APPEND, make_dirs=True)
    assert raised.value.code == "unavailable"
    with pytest.raises(RootMissing, match=named):
        read_memory_file(top, 1 << 20)
    assert not ws.exists()


def test_a_missing_extra_directory_is_named(ws: Path, tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "n.md").write_text("n")
    mp = PathPolicy(ws, [notes]).resolve(str(notes / "n.md"))
    shutil.rmtree(notes)
    with pytest.raises(RootMissing, match=re.escape(f"memory folder missing: {notes}")):
        read_memory_file(mp, 1 << 20)


def test_size_limit(ws: Path) -> None:
    (ws / "memory" / "big.md").write_bytes(b"x" * 5000)
    with pytest.raises(TooLarge, match="5000 bytes"):
        read_memory_file(PathPolicy(ws).resolve("memory/big.md"), 4096)


def test_make_dirs_creates_missing_directories_but_not_through_symlinks(
    ws: Path, tmp_path: Path
) -> None:
    policy = PathPolicy(ws)
    fd = open_beneath(policy.resolve("memory/a/b/c.md"), os.O_WRONLY | os.O_CREAT, make_dirs=True)
    os.close(fd)
    assert (ws / "memory" / "a" / "b" / "c.md").is_file()
    (ws / "memory" / "evil").symlink_to(tmp_path, target_is_directory=True)
    with pytest.raises(Forbidden, match="symlink"):
        open_beneath(policy.resolve("memory/evil/new.md"), os.O_WRONLY | os.O_CREAT, make_dirs=True)
    assert not (tmp_path / "new.md").exists()


def test_extra_directory_and_file(ws: Path, tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    (notes / "deep").mkdir(parents=True)
    (notes / "deep" / "n.md").write_text("n")
    single = tmp_path / "single.md"
    single.write_text("s")
    policy = PathPolicy(ws, [notes, single])
    assert policy.resolve(str(notes / "deep" / "n.md")).key == str(notes / "deep" / "n.md")
    assert policy.resolve(str(single)).key == str(single)
    with pytest.raises(Forbidden):
        policy.resolve(str(tmp_path / "other.md"))


def test_extra_path_that_is_a_symlink_is_ignored(ws: Path, tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (real / "r.md").write_text("r")
    link = tmp_path / "link"
    link.symlink_to(real, target_is_directory=True)
    with pytest.raises(Forbidden):
        PathPolicy(ws, [link]).resolve(str(link / "r.md"))


def test_extra_directory_inside_the_workspace_uses_relative_keys(ws: Path) -> None:
    (ws / "notes").mkdir()
    (ws / "notes" / "x.md").write_text("x")
    policy = PathPolicy(ws, [ws / "notes"])
    assert policy.resolve("notes/x.md").key == "notes/x.md"
