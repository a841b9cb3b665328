"""The record of what was forgotten, and the import holding it back."""

from __future__ import annotations

import json
import os
import stat
from datetime import date
from pathlib import Path

import pytest

from openmemoryd.config import Overrides, load_config
from openmemoryd.memory import forgotten
from openmemoryd.memory.forgotten import DamagedRecord, line_digest, load, remember
from openmemoryd.memory.import_cli import import_memory, outcome_lines
from openmemoryd.memory.importer import Incoming, Outcome, apply_import, plan_merge
from openmemoryd.workspace import PathPolicy, init_workspace

SECRET = "- 周一和 Ольга 对齐了 Q1 OKR"
LIMIT = 1 << 20


def test_the_record_holds_digests_never_the_text(tmp_path: Path) -> None:
    record = tmp_path / "state" / "forgotten" / "default.json"
    assert remember(record, "MEMORY.md", [f"{SECRET}\n\n- Ann's phone 555-0100"], now=5.0) == 2
    raw = record.read_text()
    for word in ("Ольга", "OKR", "555"):
        assert word not in raw
    stored = json.loads(raw)["entries"]
    assert stored == [
        {"digest": line_digest(SECRET), "path": "MEMORY.md", "at": 5.0},
        {"digest": line_digest("- Ann's phone 555-0100"), "path": "MEMORY.md", "at": 5.0},
    ]
    assert stat.S_IMODE(record.stat().st_mode) == 0o600
    assert stat.S_IMODE(record.parent.stat().st_mode) == 0o700
    assert set(load(record)) == {
        ("MEMORY.md", line_digest(SECRET)),
        ("MEMORY.md", line_digest("- Ann's phone 555-0100")),
    }
    # replaced atomically: no temporary file left beside it
    assert sorted(p.name for p in record.parent.iterdir()) == ["default.json", "default.json.lock"]


def test_a_digest_is_of_the_line_as_the_import_tells_lines_apart() -> None:
    assert line_digest(f"  {SECRET}  ") == line_digest(SECRET)
    assert line_digest("- a  b") == line_digest("- a b")
    assert line_digest("- Café") == line_digest("- Cafe\u0301")  # NFC
    assert line_digest("- Wei") != line_digest("- wei")
    # a task is its task: done or open, with or without its done date
    open_task = "- [ ] Ship 0.5 ➕ 2026-01-02"
    assert line_digest("- [x] Ship 0.5 ➕ 2026-01-02 ✅ 2026-02-01") == line_digest(open_task)
    assert line_digest("- [ ] Ship 0.5 ➕ 2026-03-01") != line_digest(open_task)  # added again


def test_the_record_is_bounded_and_drops_the_oldest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(forgotten, "MAX_ENTRIES", 3)
    record = tmp_path / "forgotten.json"
    for n in range(5):
        remember(record, "MEMORY.md", [f"- fact {n}"], now=float(n))
    remember(record, "MEMORY.md", ["- fact 1"], now=9.0)  # forgotten again: the newest now
    kept = {t.digest: t.at for t in load(record).values()}
    assert kept == {
        line_digest("- fact 3"): 3.0,
        line_digest("- fact 4"): 4.0,
        line_digest("- fact 1"): 9.0,
    }


def test_blank_lines_leave_no_tombstone_and_clear_drops_only_its_file(tmp_path: Path) -> None:
    record = tmp_path / "forgotten.json"
    assert remember(record, "MEMORY.md", ["\n  \n"]) == 0
    assert not record.exists()
    remember(record, "MEMORY.md", ["- a", "- b"])
    remember(record, "USER.md", ["- a"])
    forgotten.clear(record, "MEMORY.md", ["- a"])
    assert set(load(record)) == {("MEMORY.md", line_digest("- b")), ("USER.md", line_digest("- a"))}
    forgotten.clear(tmp_path / "none.json", "MEMORY.md", ["- a"])  # no record: nothing to do
    assert not (tmp_path / "none.json").exists()


def test_a_damaged_record_is_refused_by_import_and_set_aside_by_forget(tmp_path: Path) -> None:
    record = tmp_path / "forgotten.json"
    record.write_bytes(b"{not json")
    with pytest.raises(DamagedRecord, match="move it aside"):
        load(record)
    remember(record, "MEMORY.md", ["- new"])
    assert (tmp_path / "forgotten.json.damaged").read_bytes() == b"{not json"
    assert set(load(record)) == {("MEMORY.md", line_digest("- new"))}


def test_a_record_that_cannot_be_written_fails_loudly_but_not_the_forget(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("")  # a file where the record's directory should be
    with pytest.raises(NotADirectoryError):
        remember(blocked / "sub" / "forgotten.json", "MEMORY.md", ["- a"])
    forgotten.note_forgotten(blocked / "sub" / "forgotten.json", "MEMORY.md", ["- a"])
    assert "could not record what was forgotten from MEMORY.md" in caplog.text


MEMORY_NOW = "# MEMORY\n\n- Wei prefers oolong\n- Деплой идёт на Nomad с марта\n"
MEMORY_THEN = (
    "# MEMORY\n\n- Wei prefers oolong\n"
    f"{SECRET}\n- Деплой идёт на Kubernetes с марта\n- Backups run nightly\n"
)


def test_a_forgotten_line_is_held_back_apart_from_older_versions() -> None:
    gone = {line_digest(SECRET)}
    merge = plan_merge(MEMORY_NOW, MEMORY_THEN, forgotten=gone)
    assert merge.added == ("- Backups run nightly",)  # lost otherwise: restored
    assert merge.forgotten == (SECRET,)
    assert [h.line for h in merge.held_back] == ["- Деплой идёт на Kubernetes с марта"]
    # --all-lines is about older versions: it does not bring back what was forgotten
    assert plan_merge(MEMORY_NOW, MEMORY_THEN, forgotten=gone, all_lines=True).added == (
        "- Деплой идёт на Kubernetes с марта",
        "- Backups run nightly",
    )
    back = plan_merge(MEMORY_NOW, MEMORY_THEN, forgotten=gone, include_forgotten=True)
    assert back.added == (SECRET, "- Backups run nightly")
    assert back.forgotten == (SECRET,)
    assert len(back.held_back) == 1


def test_a_forgotten_task_is_not_brought_back_open() -> None:
    done = "- [x] Call Ольга ➕ 2026-01-02 ✅ 2026-01-03"
    then = "## Open\n- [ ] Call Ольга ➕ 2026-01-02\n- [ ] Other ➕ 2026-01-02\n"
    merge = plan_merge("## Open\n", then, forgotten={line_digest(done)})
    assert merge.added == ("- [ ] Other ➕ 2026-01-02",)
    assert merge.forgotten == ("- [ ] Call Ольга ➕ 2026-01-02",)


def _policy(root: Path) -> PathPolicy:
    init_workspace(root)
    return PathPolicy(root, ())


def _import(
    policy: PathPolicy, items: list[Incoming], gone: set[str], *, dry: bool, back: bool = False
) -> list[Outcome]:
    return apply_import(
        policy,
        items,
        dry_run=dry,
        today=date(2026, 11, 23),
        max_file_bytes=LIMIT,
        forgotten={"MEMORY.md": gone, "memory/2026-01-05.md": gone},
        include_forgotten=back,
    )


def test_import_holds_back_per_file_in_dry_run_too_and_in_a_file_it_creates(
    tmp_path: Path,
) -> None:
    policy = _policy(tmp_path / "ws")
    memory = policy.workspace / "MEMORY.md"
    memory.write_text(MEMORY_NOW)
    daily = "# 2026-01-05\n\n" + SECRET + "\n- kickoff\n"
    items = [
        Incoming("workspace/MEMORY.md", "MEMORY.md", MEMORY_THEN.encode()),
        Incoming("workspace/memory/2026-01-05.md", "memory/2026-01-05.md", daily.encode()),
        Incoming("workspace/USER.md", "USER.md", f"{SECRET}\n".encode()),  # not from here
    ]
    gone = {line_digest(SECRET)}
    for dry in (True, False):
        outcomes = _import(policy, items, gone, dry=dry)
        assert [(o.target, o.lines_added, o.forgotten) for o in outcomes] == [
            ("MEMORY.md", 1, (SECRET,)),
            ("memory/2026-01-05.md", 3, (SECRET,)),
            ("USER.md", 1, ()),
        ]
    assert SECRET not in memory.read_text()
    created = policy.workspace / "memory" / "2026-01-05.md"
    assert created.read_text() == "# 2026-01-05\n\n- kickoff\n"  # every other byte kept
    report = "\n".join(outcome_lines(outcomes, dry_run=False))
    assert "merged into MEMORY.md (1 new line, 1 held back, 1 forgotten since)" in report
    assert (
        "Held back 2 lines forgotten since the export (`--include-forgotten` brings them back):\n"
        "  MEMORY.md: 1 line\n  memory/2026-01-05.md: 1 line"
    ) in report
    assert "Ольга" not in report.replace("USER.md", "")  # the forgotten text is never shown

    created.unlink()
    back = _import(policy, items[:2], gone, dry=False, back=True)
    assert [o.forgotten for o in back] == [(SECRET,), (SECRET,)]
    assert SECRET in memory.read_text()
    assert created.read_text() == daily
    said = "\n".join(outcome_lines(back, dry_run=False, include_forgotten=True))
    assert "Brought back 2 lines forgotten since the export:" in said


def test_import_memory_reads_the_record_and_clears_what_it_brings_back(tmp_path: Path) -> None:
    overrides = Overrides(workspace=tmp_path / "ws", state_dir=tmp_path / "state")
    config = load_config(overrides, environ={"XDG_CONFIG_HOME": str(tmp_path)})
    policy = _policy(config.workspace)
    (policy.workspace / "MEMORY.md").write_text(MEMORY_NOW)
    source = tmp_path / "old"
    source.mkdir()
    (source / "MEMORY.md").write_text(MEMORY_THEN)
    remember(config.forgotten_path, "MEMORY.md", [SECRET, "- other"])
    dry = import_memory(config, source, dry_run=True, include_forgotten=True)
    assert dry[0].forgotten == (SECRET,)
    assert len(load(config.forgotten_path)) == 2  # a dry run clears nothing
    held = import_memory(config, source, dry_run=False)
    assert held[0].forgotten == (SECRET,)
    assert len(load(config.forgotten_path)) == 2
    import_memory(config, source, dry_run=False, include_forgotten=True)
    assert set(load(config.forgotten_path)) == {("MEMORY.md", line_digest("- other"))}
    assert SECRET in (policy.workspace / "MEMORY.md").read_text()

    config.forgotten_path.write_text("garbage")
    with pytest.raises(DamagedRecord):
        import_memory(config, source, dry_run=True)
    assert os.path.exists(config.forgotten_path)  # an import leaves it for a person
