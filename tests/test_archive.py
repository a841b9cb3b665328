"""Export and import: a faithful round trip, merges that lose nothing, and
archives that cannot write outside the workspace."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import tarfile
from datetime import date
from pathlib import Path

import pytest

from openmemoryd.errors import BadRequest, Conflict
from openmemoryd.memory.archive import export_archive
from openmemoryd.memory.importer import Outcome, apply_import, read_source
from openmemoryd.workspace import PathPolicy, init_workspace

LIMIT = 1 << 20
DAY = date(2026, 11, 23)


def workspace(root: Path, extra: tuple[Path, ...] = ()) -> PathPolicy:
    init_workspace(root)
    return PathPolicy(root, extra)


def files_of(policy: PathPolicy) -> dict[str, bytes]:
    root = policy.workspace
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*.md"))
        if p.is_file()
    }


def import_into(policy: PathPolicy, source: Path, dry_run: bool = False) -> list[Outcome]:
    incoming = read_source(source, max_file_bytes=LIMIT)
    return apply_import(policy, incoming, dry_run=dry_run, today=DAY, max_file_bytes=LIMIT)


@pytest.fixture
def source(tmp_path: Path) -> PathPolicy:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "team.md").write_text("# Team\n\n- Lin owns the indexer\n")
    policy = workspace(tmp_path / "src", (notes,))
    (policy.workspace / "MEMORY.md").write_text("# MEMORY\n\n- Wei prefers oolong\n")
    daily = policy.workspace / "memory" / "2026-11-22.md"
    daily.write_bytes("# 2026-11-22\n\n周会改到周三\n".encode() + b"\xff raw byte\n")
    (policy.workspace / "memory" / "projects").mkdir()
    (policy.workspace / "memory" / "projects" / "omem.md").write_text("ship 0.5\n")
    return policy


def test_export_is_the_markdown_with_a_checked_manifest(source: PathPolicy, tmp_path: Path) -> None:
    out = tmp_path / "memory.tar.gz"
    exported = export_archive(source, out, max_file_bytes=LIMIT)
    assert exported.files == 6  # 3 at the root, 2 under memory/, 1 extra path
    assert out.stat().st_mode & 0o777 == 0o600
    with tarfile.open(out) as tar:
        names = tar.getnames()
        manifest = json.loads(tar.extractfile("manifest.json").read())  # type: ignore[union-attr]
        daily = tar.extractfile("workspace/memory/2026-11-22.md").read()  # type: ignore[union-attr]
    assert names[0] == "manifest.json"
    assert "workspace/MEMORY.md" in names
    assert f"extra{tmp_path}/notes/team.md" in names
    assert not [n for n in names if "sqlite" in n]  # never the index
    assert manifest["format"] == "openmemory-export"
    entry = next(f for f in manifest["files"] if f["key"] == "memory/2026-11-22.md")
    assert entry["sha256"] == hashlib.sha256(daily).hexdigest()
    assert daily.endswith(b"\xff raw byte\n")


def test_export_refuses_a_relative_or_odd_output(source: PathPolicy, tmp_path: Path) -> None:
    with pytest.raises(BadRequest, match="absolute"):
        export_archive(source, Path("memory.tar.gz"), max_file_bytes=LIMIT)
    (tmp_path / "dir.tar.gz").mkdir()
    with pytest.raises(BadRequest, match="not a file"):
        export_archive(source, tmp_path / "dir.tar.gz", max_file_bytes=LIMIT)
    with pytest.raises(BadRequest, match="no such directory"):
        export_archive(source, tmp_path / "missing" / "x.tar.gz", max_file_bytes=LIMIT)


@pytest.mark.parametrize("name", ["passwd", "export.md", "notes.tar"])
def test_an_export_is_a_tar_gz(source: PathPolicy, tmp_path: Path, name: str) -> None:
    with pytest.raises(BadRequest, match=r"an export is a \.tar\.gz file"):
        export_archive(source, tmp_path / name, max_file_bytes=LIMIT)
    assert not (tmp_path / name).exists()


def test_an_export_replaces_an_earlier_export_and_nothing_else(
    source: PathPolicy, tmp_path: Path
) -> None:
    out = tmp_path / "memory.tar.gz"
    export_archive(source, out, max_file_bytes=LIMIT)
    first = out.read_bytes()
    (source.workspace / "MEMORY.md").write_text("# Memory\n\n- a later line\n")
    export_archive(source, out, max_file_bytes=LIMIT)  # the same command again
    assert out.read_bytes() != first
    for other in (b"precious", gzip.compress(b"not a tar"), first[: len(first) // 2]):
        (tmp_path / "other.tgz").write_bytes(other)
        with pytest.raises(Conflict, match="exists and is not an earlier export"):
            export_archive(source, tmp_path / "other.tgz", max_file_bytes=LIMIT)
        assert (tmp_path / "other.tgz").read_bytes() == other
    (tmp_path / "link.tar.gz").symlink_to(out)
    with pytest.raises(BadRequest, match="symbolic link"):
        export_archive(source, tmp_path / "link.tar.gz", max_file_bytes=LIMIT)


def test_round_trip_into_an_empty_workspace(source: PathPolicy, tmp_path: Path) -> None:
    out = tmp_path / "memory.tar.gz"
    export_archive(source, out, max_file_bytes=LIMIT)
    target = PathPolicy(tmp_path / "fresh")
    (tmp_path / "fresh").mkdir()
    outcomes = import_into(target, out)
    assert {o.action for o in outcomes} == {"create"}
    copied = files_of(target)
    original = files_of(source)
    assert {k: copied[k] for k in original} == original  # byte for byte
    assert copied[f"memory/imported/extra{tmp_path}/notes/team.md"].startswith(b"# Team")
    again = import_into(target, out)
    assert {o.action for o in again} == {"unchanged"}  # importing twice changes nothing
    assert files_of(target) == copied


def test_a_differing_file_gains_only_the_missing_lines(source: PathPolicy, tmp_path: Path) -> None:
    out = tmp_path / "memory.tar.gz"
    export_archive(source, out, max_file_bytes=LIMIT)
    target = workspace(tmp_path / "dst")
    mine = "# MEMORY\n\n- Wei prefers oolong\n- Deploys on Thursday\n"
    (target.workspace / "MEMORY.md").write_text(mine)
    (source.workspace / "MEMORY.md").write_text("# MEMORY\n\n- Wei prefers oolong\n- New fact\n")
    export_archive(source, out, max_file_bytes=LIMIT)
    outcome = next(o for o in import_into(target, out) if o.target == "MEMORY.md")
    assert (outcome.action, outcome.lines_added) == ("merge", 1)
    assert (target.workspace / "MEMORY.md").read_text() == (
        mine + "\n<!-- imported from workspace/MEMORY.md on 2026-11-23 -->\n- New fact\n"
    )


def test_dry_run_writes_nothing(source: PathPolicy, tmp_path: Path) -> None:
    out = tmp_path / "memory.tar.gz"
    export_archive(source, out, max_file_bytes=LIMIT)
    target = workspace(tmp_path / "dst")
    before = files_of(target)
    outcomes = import_into(target, out, dry_run=True)
    assert "create" in {o.action for o in outcomes}
    assert files_of(target) == before


def tar_with(path: Path, members: list[tarfile.TarInfo], data: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for info in members:
            body = data.get(info.name, b"")
            info.size = len(body) if info.isreg() else 0
            tar.addfile(info, io.BytesIO(body) if info.isreg() else None)
    return path


@pytest.mark.parametrize(
    ("name", "kind", "message"),
    [
        ("../evil.md", tarfile.REGTYPE, "points outside"),
        ("/etc/evil.md", tarfile.REGTYPE, "points outside"),
        ("memory/link.md", tarfile.SYMTYPE, "not a regular file"),
        ("memory/dev.md", tarfile.CHRTYPE, "not a regular file"),
    ],
)
def test_unsafe_archives_are_refused_whole(
    tmp_path: Path, name: str, kind: bytes, message: str
) -> None:
    good = tarfile.TarInfo("memory/good.md")
    bad = tarfile.TarInfo(name)
    bad.type = kind
    archive = tar_with(tmp_path / "bad.tar.gz", [good, bad], {"memory/good.md": b"ok\n"})
    with pytest.raises(BadRequest, match=message):
        read_source(archive, max_file_bytes=LIMIT)


def test_a_tampered_export_is_refused(source: PathPolicy, tmp_path: Path) -> None:
    out = tmp_path / "memory.tar.gz"
    export_archive(source, out, max_file_bytes=LIMIT)
    with tarfile.open(out) as tar:
        contents = {m.name: tar.extractfile(m).read() for m in tar}  # type: ignore[union-attr]
    contents["workspace/MEMORY.md"] = b"# MEMORY\n\n- forged\n"
    infos = [tarfile.TarInfo(n) for n in contents]
    tampered = tar_with(tmp_path / "tampered.tar.gz", infos, contents)
    with pytest.raises(BadRequest, match="does not match its checksum"):
        read_source(tampered, max_file_bytes=LIMIT)


@pytest.mark.parametrize("manifest", [b"{not json", b'{"format": "caf\xe9"}'])
def test_a_damaged_manifest_is_refused(source: PathPolicy, tmp_path: Path, manifest: bytes) -> None:
    out = tmp_path / "memory.tar.gz"
    export_archive(source, out, max_file_bytes=LIMIT)
    with tarfile.open(out) as tar:
        contents = {m.name: tar.extractfile(m).read() for m in tar}  # type: ignore[union-attr]
    contents["manifest.json"] = manifest  # the second: a Latin-1 byte inside a string
    infos = [tarfile.TarInfo(n) for n in contents]
    damaged = tar_with(tmp_path / "damaged.tar.gz", infos, contents)
    with pytest.raises(BadRequest, match="damaged manifest"):
        read_source(damaged, max_file_bytes=LIMIT)


def test_garbage_is_not_an_archive(tmp_path: Path) -> None:
    junk = tmp_path / "junk.tar.gz"
    junk.write_bytes(b"\x1f\x8b not really gzip")
    with pytest.raises(BadRequest):
        read_source(junk, max_file_bytes=LIMIT)


def test_another_tools_folder_keeps_its_layout_or_goes_under_imported(tmp_path: Path) -> None:
    folder = tmp_path / "openclaw-ws"
    (folder / "memory").mkdir(parents=True)
    (folder / "MEMORY.md").write_text("# Long-term\n\n- likes tea\n")
    (folder / "memory" / "2026-03-10.md").write_text("- shipped\n")
    (folder / "docs").mkdir()
    (folder / "docs" / "notes.md").write_text("design notes\n")
    (folder / ".git").mkdir()
    (folder / ".git" / "HEAD.md").write_text("hidden\n")
    (folder / "memory" / "link.md").symlink_to(tmp_path / "elsewhere.md")
    (folder / "readme.txt").write_text("not markdown\n")
    target = workspace(tmp_path / "dst")
    outcomes = import_into(target, folder)
    assert sorted((o.target, o.action) for o in outcomes) == [
        ("MEMORY.md", "merge"),
        ("memory/2026-03-10.md", "create"),
        ("memory/imported/openclaw-ws/docs/notes.md", "create"),
    ]
    assert "- likes tea" in (target.workspace / "MEMORY.md").read_text()
