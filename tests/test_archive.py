"""Export and import: a faithful round trip, merges that lose nothing and
undo nothing done since the export, and archives that cannot write outside
the workspace."""

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
from openmemoryd.memory.import_cli import outcome_lines
from openmemoryd.memory.importer import (
    MAX_PAIRS,
    HeldBack,
    Merge,
    Outcome,
    apply_import,
    plan_merge,
    read_source,
)
from openmemoryd.memory.tasks_file import TasksFile
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


def import_into(
    policy: PathPolicy, source: Path, dry_run: bool = False, all_lines: bool = False
) -> list[Outcome]:
    incoming = read_source(source, max_file_bytes=LIMIT)
    return apply_import(
        policy, incoming, dry_run=dry_run, today=DAY, max_file_bytes=LIMIT, all_lines=all_lines
    )


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


def test_a_restore_into_a_new_workspace_gives_back_its_files_byte_for_byte(
    source: PathPolicy, tmp_path: Path
) -> None:
    """`openmemoryd init` (and `import` itself) lays out the bootstrap files
    first; merged into, the template kept its empty sections and the
    export's MEMORY.md came after them without its title or headings
    (found by dogfooding). A file still holding its template counts as
    absent."""
    out = tmp_path / "memory.tar.gz"
    export_archive(source, out, max_file_bytes=LIMIT)
    target = workspace(tmp_path / "new")  # init_workspace: the templates
    assert (target.workspace / "MEMORY.md").read_bytes() != files_of(source)["MEMORY.md"]
    dry = import_into(target, out, dry_run=True)
    assert {o.target: o.action for o in dry}["MEMORY.md"] == "create"
    outcomes = import_into(target, out)
    assert {o.target: o.action for o in outcomes}["MEMORY.md"] == "create"
    copied = files_of(target)
    assert {k: copied[k] for k in files_of(source)} == files_of(source)
    # a template someone wrote in is merged into, as before
    other = workspace(tmp_path / "used")
    memory = other.workspace / "MEMORY.md"
    memory.write_text(memory.read_text() + "- my own line\n")
    merged = {o.target: o.action for o in import_into(other, out)}
    assert merged["MEMORY.md"] == "merge"
    assert "- my own line" in memory.read_text()


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
        # the workspace's MEMORY.md was its untouched template: the tool's is taken whole
        ("MEMORY.md", "create"),
        ("memory/2026-03-10.md", "create"),
        ("memory/imported/openclaw-ws/docs/notes.md", "create"),
    ]
    assert (target.workspace / "MEMORY.md").read_text() == "# Long-term\n\n- likes tea\n"


# ------------------------------------------------------- merging an older copy

TASKS_THEN = """# Tasks

## Open

- [ ] 完成接口文档 ➕ 2026-11-20
- [ ] Renew the passport ➕ 2026-11-20
  - the form is in the drawer

## Done
"""
TASKS_NOW = """# Tasks

## Open

- [ ] Renew the passport ➕ 2026-11-20
  - the form is in the drawer

## Done

- [x] 完成接口文档 ➕ 2026-11-20 ✅ 2026-11-23
"""


def test_a_task_done_since_is_the_same_task() -> None:
    assert plan_merge(TASKS_NOW, TASKS_THEN) == Merge(added=(), held_back=())
    # and the other way round: an export newer than the workspace does not
    # reopen nor duplicate a task either
    assert plan_merge(TASKS_THEN, TASKS_NOW) == Merge(added=(), held_back=())


@pytest.mark.parametrize(
    ("imported", "added"),
    [
        ("- [ ] 完成接口文档", ()),  # no added date: the text decides
        ("* [X] 完成接口文档   ➕ 2026-11-20", ()),  # another bullet, mark and spacing
        ("- [ ] Renew the PASSPORT ➕ 2026-11-01", ()),  # open next to open: never twice
        ("  - [ ] Renew the passport ➕ 2026-11-20", ()),  # indented: a task too
        # the same text done before it was added again: an earlier task, kept
        (
            "- [x] Renew the passport ➕ 2026-10-01 ✅ 2026-10-02",
            ("- [x] Renew the passport ➕ 2026-10-01 ✅ 2026-10-02",),
        ),
        ("- [ ] Book the flights ➕ 2026-11-21", ("- [ ] Book the flights ➕ 2026-11-21",)),
    ],
)
def test_which_imported_tasks_are_already_here(imported: str, added: tuple[str, ...]) -> None:
    assert plan_merge(TASKS_NOW, imported + "\n") == Merge(added=added, held_back=())


def test_task_ids_agree_that_the_skipped_task_is_the_one_here() -> None:
    # what the merge calls the same task, `tasks` lists under one id
    then = {t.text: t.id for t in TasksFile(TASKS_THEN).tasks()}
    now = {t.text: t.id for t in TasksFile(TASKS_NOW).tasks()}
    assert then == now


MEMORY_THEN = """# MEMORY

## Infrastructure

- Деплой идёт на Kubernetes с марта
- Backups run nightly at 02:00
- Editor: vim

## People

- Wei prefers oolong
- 周会改到周三
"""
MEMORY_NOW = """# MEMORY

## Infrastructure

- Деплой идёт на Nomad с марта
- Editor: helix

## People

- Wei prefers oolong
- 周会改到周四
- Lin owns the indexer
"""


def test_an_edited_line_is_held_back_and_a_forgotten_one_comes_back() -> None:
    merge = plan_merge(MEMORY_NOW, MEMORY_THEN)
    assert merge.added == ("- Backups run nightly at 02:00",)  # gone with no newer version
    assert merge.held_back == (
        HeldBack("- Деплой идёт на Kubernetes с марта", "- Деплой идёт на Nomad с марта", 5),
        HeldBack("- Editor: vim", "- Editor: helix", 6),  # in place: half the words do
        HeldBack("- 周会改到周三", "- 周会改到周四", 11),  # CJK: a character a word
    )
    everything = plan_merge(MEMORY_NOW, MEMORY_THEN, all_lines=True)
    assert everything.held_back == ()
    assert everything.added == (
        "- Деплой идёт на Kubernetes с марта",
        "- Backups run nightly at 02:00",
        "- Editor: vim",
        "- 周会改到周三",
    )


@pytest.mark.parametrize(
    ("mine", "theirs", "added"),
    [
        # the workspace line is in the import too: the imported one is
        # another fact the workspace lost, not an older version of it
        (
            "- Deploy to staging on Monday\n",
            "- Deploy to staging on Monday\n- Deploy to staging on Tuesday\n",
            ("- Deploy to staging on Tuesday",),
        ),
        # moved elsewhere, sharing too few words to be a version
        (
            "# A\n- Meeting with Ann on Friday\n# B\n- x\n",
            "# A\n- y\n# B\n- Meeting with Bob on Monday\n",
            ("- y", "- Meeting with Bob on Monday"),
        ),
        # a heading is no version of a list item, nor a comment of anything
        ("- Release notes for 0.5\n", "## Release notes for 0.4\n", ("## Release notes for 0.4",)),
        (
            "<!-- imported from a on 2026-11-23 -->\n",
            "<!-- imported from a on 2026-11-22 -->\n",
            ("<!-- imported from a on 2026-11-22 -->",),
        ),
        # separators and blank lines: nothing to compare, nothing added twice
        ("---\n", "---\n\n\n***\n***\n", ("***",)),
    ],
)
def test_lines_that_are_not_older_versions(mine: str, theirs: str, added: tuple[str, ...]) -> None:
    assert plan_merge(mine, theirs) == Merge(added=added, held_back=())


def test_an_edited_task_text_is_held_back() -> None:
    now = TASKS_NOW.replace("完成接口文档", "完成接口文档和示例")
    merge = plan_merge(now, TASKS_THEN)
    assert merge.added == ()
    assert [(h.line, h.current_line) for h in merge.held_back] == [
        ("- [ ] 完成接口文档 ➕ 2026-11-20", 10)
    ]


def test_lines_are_numbered_and_split_as_the_daemon_does() -> None:
    mine = "# M\r\n\r\n- a \u2028 b\r\n- we deploy on nomad now\r\n"
    theirs = "# M\n- a \u2028 b\n- c \x0c d\n- we deploy on kubernetes now\n"
    merge = plan_merge(mine, theirs)
    assert merge.added == ("- c \x0c d",)  # one line, as written
    assert merge.held_back[0].current_line == 4


def test_files_differing_everywhere_are_not_compared_pair_by_pair() -> None:
    def notes(count: int, shift: int) -> str:
        return "".join(f"- note {i} about topic {i * 7 + shift}\n" for i in range(count))

    # a few differences: each imported line is compared with every newer one
    few = plan_merge(notes(40, 0), notes(40, 1))
    assert (len(few.added), len(few.held_back)) == (0, 40)
    # thousands of pairs: unrelated files; only edits in place would count
    assert MAX_PAIRS < 400 * 400
    many = plan_merge(notes(400, 0), notes(400, 1))
    assert (len(many.added), len(many.held_back)) == (400, 0)


def test_an_older_export_undoes_nothing(source: PathPolicy, tmp_path: Path) -> None:
    ws = source.workspace
    (ws / "MEMORY.md").write_text(MEMORY_THEN)
    (ws / "memory" / "TASKS.md").write_text(TASKS_THEN)
    out = tmp_path / "memory.tar.gz"
    export_archive(source, out, max_file_bytes=LIMIT)
    (ws / "MEMORY.md").write_text(MEMORY_NOW)
    (ws / "memory" / "TASKS.md").write_text(TASKS_NOW)
    dry = import_into(source, out, dry_run=True)
    outcomes = import_into(source, out)
    assert dry == outcomes
    by_target = {o.target: o for o in outcomes}
    assert by_target["memory/TASKS.md"].action == "unchanged"
    assert (ws / "memory" / "TASKS.md").read_text() == TASKS_NOW  # not a byte more
    memory = by_target["MEMORY.md"]
    assert (memory.action, memory.lines_added, len(memory.held_back)) == ("merge", 1, 3)
    assert (ws / "MEMORY.md").read_text() == MEMORY_NOW + (
        "\n<!-- imported from workspace/MEMORY.md on 2026-11-23 -->\n"
        "- Backups run nightly at 02:00\n"
    )
    again = import_into(source, out)
    assert {o.action for o in again} == {"unchanged"}
    assert sum(len(o.held_back) for o in again) == 3  # still reported, still not added
    forced = next(o for o in import_into(source, out, all_lines=True) if o.target == "MEMORY.md")
    assert (forced.action, forced.lines_added, forced.held_back) == ("merge", 3, ())
    assert (ws / "MEMORY.md").read_text().endswith("- Editor: vim\n- 周会改到周三\n")


def test_another_tools_folder_goes_through_the_same_merge(tmp_path: Path) -> None:
    folder = tmp_path / "openclaw-ws"
    (folder / "memory").mkdir(parents=True)
    (folder / "MEMORY.md").write_text(MEMORY_THEN)
    (folder / "memory" / "TASKS.md").write_text(TASKS_THEN)
    target = workspace(tmp_path / "dst")
    (target.workspace / "MEMORY.md").write_text(MEMORY_NOW)
    (target.workspace / "memory" / "TASKS.md").write_text(TASKS_NOW)
    outcomes = {o.target: o for o in import_into(target, folder)}
    assert outcomes["memory/TASKS.md"].action == "unchanged"
    assert outcomes["MEMORY.md"].lines_added == 1
    assert len(outcomes["MEMORY.md"].held_back) == 3


def test_tasks_listed_inline_elsewhere_are_the_task_files_tasks(tmp_path: Path) -> None:
    folder = tmp_path / "openclaw-ws"
    folder.mkdir()
    (folder / "MEMORY.md").write_text(
        "# Memory\n\n- [ ] 完成接口文档\n- [ ] Renew the passport\n- [x] Call the plumber\n"
    )
    target = workspace(tmp_path / "dst")
    (target.workspace / "MEMORY.md").write_text("# Memory\n")
    (target.workspace / "memory" / "TASKS.md").write_text(TASKS_NOW)
    [outcome] = import_into(target, folder)
    assert outcome.lines_added == 1
    assert (target.workspace / "MEMORY.md").read_text().endswith("\n- [x] Call the plumber\n")
    assert (target.workspace / "memory" / "TASKS.md").read_text() == TASKS_NOW
    # with no task file (or one that cannot be read) the file's own lines decide
    (target.workspace / "memory" / "TASKS.md").unlink()
    (target.workspace / "MEMORY.md").write_text("# Memory\n")
    [alone] = import_into(target, folder)
    assert alone.lines_added == 3


def test_a_line_that_is_not_utf8_is_reported_not_written(tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "MEMORY.md").write_bytes(b"# M\n- caf\xe9 latin-1\n- plain new line\n")
    target = workspace(tmp_path / "dst")
    (target.workspace / "MEMORY.md").write_text("# M\n")
    [outcome] = import_into(target, folder)
    assert (outcome.action, outcome.lines_added) == ("merge", 1)
    assert outcome.not_text == ("- caf\udce9 latin-1",)
    assert (target.workspace / "MEMORY.md").read_text().endswith("\n- plain new line\n")
    report = outcome_lines([outcome], dry_run=False)
    assert report[0] == "  merged into MEMORY.md (1 new line, 1 not UTF-8)  <- MEMORY.md"
    assert report[-1] == "  MEMORY.md: - caf\\xe9 latin-1"


def test_the_report_counts_in_words_and_shows_what_was_held_back() -> None:
    held = HeldBack("- Editor: vim", "- Editor: helix", 6)
    outcomes = [
        Outcome("workspace/MEMORY.md", "MEMORY.md", "merge", 1, (held,)),
        Outcome("workspace/USER.md", "USER.md", "merge", 2),
        Outcome("workspace/memory/TASKS.md", "memory/TASKS.md", "unchanged", 0),
        Outcome("workspace/PROJECT.md", "PROJECT.md", "unchanged", 0, (held,)),
    ]
    assert outcome_lines(outcomes, dry_run=False) == [
        "  merged into MEMORY.md (1 new line, 1 held back)  <- workspace/MEMORY.md",
        "  merged into USER.md (2 new lines)  <- workspace/USER.md",
        "  unchanged memory/TASKS.md  <- workspace/memory/TASKS.md",
        "  unchanged PROJECT.md (1 held back)  <- workspace/PROJECT.md",
        "4 files: 0 new, 2 merged, 2 unchanged",
        "Held back 2 lines that look like older versions of lines you have now"
        " (`--all-lines` adds them too):",
        "  MEMORY.md:6 now: - Editor: helix",
        "    the import has: - Editor: vim",
        "  PROJECT.md:6 now: - Editor: helix",
        "    the import has: - Editor: vim",
    ]
    dry = outcome_lines(outcomes[:1], dry_run=True)
    assert dry[1] == "1 file: 0 new, 1 merged, 0 unchanged (dry run: nothing written)"
    assert dry[2].startswith("Would hold back 1 line that looks like an older version")


def test_the_report_escapes_what_a_terminal_would_obey() -> None:
    held = HeldBack("- title \x1b]0;owned\x07", "- title now", 2)
    outcome = Outcome("workspace/MEMORY.md", "MEMORY.md", "unchanged", 0, (held,))
    assert outcome_lines([outcome], dry_run=False)[-1] == (
        "    the import has: - title \\x1b]0;owned\\x07"
    )
