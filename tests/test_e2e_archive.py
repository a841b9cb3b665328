"""End to end: `omem-client export` and `openmemoryd import` around a real daemon."""

from __future__ import annotations

import tarfile
from pathlib import Path

import pytest

from conftest import Daemon, Env, run_openmemoryd
from openmemoryd.memory.forgotten import remember

pytestmark = pytest.mark.e2e


def test_export_then_import_restores_what_was_lost_but_not_what_was_forgotten(
    daemon: Daemon, tmp_path: Path
) -> None:
    secret = "周一和 Ольга 对齐了 Q1 OKR"
    memory = daemon.env.workspace / "MEMORY.md"
    # by hand: the daemon would put back a line it appended seconds ago that
    # a hand edit drops (docs/durability.md); this is about the import
    memory.write_text(memory.read_text() + "\n- Wei prefers oolong tea\n")
    with daemon.client() as client:
        client.append(secret, path="MEMORY.md")
        task = client.tasks("add", ["Call Ольга about the offer"]).tasks[0]
    archive = tmp_path / "backup.tar.gz"
    result = daemon.cli("export", "--output", str(archive))
    assert result.returncode == 0, result.stderr
    assert f"to {archive}" in result.stdout
    assert f"openmemoryd import {archive}" in result.stdout
    with tarfile.open(archive) as tar:
        names = tar.getnames()
    assert "workspace/MEMORY.md" in names
    assert not [n for n in names if n.endswith((".sqlite", ".sqlite-wal"))]

    forgot = daemon.cli("forget", "--query", secret)
    assert forgot.returncode == 0, forgot.stderr
    assert daemon.cli("tasks", "remove", task.id).returncode == 0
    record = (daemon.env.state_dir / "forgotten" / "default.json").read_text()
    assert "Ольга" not in record
    assert "OKR" not in record
    # lost some other way (a hand edit): an import is how it comes back
    memory.write_text(memory.read_text().replace("- Wei prefers oolong tea\n", ""))
    before = memory.read_text()
    tasks_before = (daemon.env.workspace / "memory" / "TASKS.md").read_bytes()

    dry = run_openmemoryd(daemon.env, "import", "--dry-run", str(archive))
    assert dry.returncode == 0, dry.stderr
    assert "Would hold back 2 lines forgotten since the export" in dry.stdout
    restored = run_openmemoryd(daemon.env, "import", str(archive))
    assert restored.returncode == 0, restored.stderr
    out = restored.stdout
    assert "merged into MEMORY.md (1 new line, 1 forgotten since)" in out
    assert (
        "Held back 2 lines forgotten since the export (`--include-forgotten` brings them back):\n"
        "  MEMORY.md: 1 line\n"
        "  memory/TASKS.md: 1 line\n"
    ) in out
    assert "Ольга" not in out
    assert "Indexed by the running daemon" in out
    assert (daemon.env.workspace / "memory" / "TASKS.md").read_bytes() == tasks_before
    now = memory.read_text()
    assert now.startswith(before)
    assert secret not in now
    with daemon.client() as client:
        hits = client.search("oolong").results  # searchable when the command returned
        assert [h.path for h in hits] == ["MEMORY.md"]
        assert client.search("OKR").results == ()
    again = run_openmemoryd(daemon.env, "import", str(archive))
    assert "0 new, 0 merged" in again.stdout  # a second import changes nothing

    back = run_openmemoryd(daemon.env, "import", "--include-forgotten", str(archive))
    assert back.returncode == 0, back.stderr
    assert "Brought back 2 lines forgotten since the export:" in back.stdout
    assert secret in memory.read_text()
    assert (
        "Call Ольга about the offer" in (daemon.env.workspace / "memory" / "TASKS.md").read_text()
    )
    with daemon.client() as client:
        assert [h.path for h in client.search("OKR").results] == ["MEMORY.md"]
    assert "Ольга" not in (daemon.env.state_dir / "forgotten" / "default.json").read_text()
    assert "0 new, 0 merged" in run_openmemoryd(daemon.env, "import", str(archive)).stdout


def test_import_without_a_daemon_holds_back_what_the_daemon_forgot(
    env: Env, tmp_path: Path
) -> None:
    folder = tmp_path / "old"
    folder.mkdir()
    (folder / "MEMORY.md").write_text("# MEMORY\n\n- Ann's phone is 555-0100\n- kickoff\n")
    env.workspace.mkdir(parents=True, exist_ok=True)
    (env.workspace / "MEMORY.md").write_text("# MEMORY\n")
    record = env.state_dir / "forgotten" / "default.json"
    remember(record, "MEMORY.md", ["- Ann's phone is 555-0100"])  # as the daemon's forget does
    done = run_openmemoryd(env, "import", str(folder))
    assert done.returncode == 0, done.stderr
    assert "merged into MEMORY.md (1 new line, 1 forgotten since)" in done.stdout
    assert "No daemon is running" in done.stdout
    now = (env.workspace / "MEMORY.md").read_text()
    assert now.endswith("-->\n- kickoff\n")
    assert "555" not in now
    record.write_text("{damaged")
    refused = run_openmemoryd(env, "import", str(folder))
    assert refused.returncode == 1
    assert "is damaged" in refused.stderr, refused.stderr
    assert "Traceback" not in refused.stderr


def test_an_older_export_brings_back_no_done_task_nor_outdated_line(
    daemon: Daemon, tmp_path: Path
) -> None:
    # the user's report: export, complete a task, correct a line, import the export
    memory = daemon.env.workspace / "MEMORY.md"
    # written by hand: a hand edit of lines an agent appended seconds ago
    # would look like an editor's stale save, which the daemon undoes
    # (docs/durability.md), and this is about what the import does
    text = memory.read_text() + "\n- Деплой идёт на Kubernetes с марта\n- Wei prefers oolong tea\n"
    memory.write_text(text)
    with daemon.client() as client:
        task = client.tasks("add", ["完成接口文档"]).tasks[0]
    archive = tmp_path / "openmemory-export.tar.gz"
    assert daemon.cli("export", "--output", str(archive)).returncode == 0
    assert daemon.cli("tasks", "done", task.id).returncode == 0
    memory.write_text(text.replace("Kubernetes", "Nomad").replace("- Wei prefers oolong tea\n", ""))
    tasks_before = (daemon.env.workspace / "memory" / "TASKS.md").read_bytes()
    nomad_line = memory.read_text().splitlines().index("- Деплой идёт на Nomad с марта") + 1

    dry = run_openmemoryd(daemon.env, "import", "--dry-run", str(archive))
    assert dry.returncode == 0, dry.stderr
    assert "Would hold back 1 line" in dry.stdout
    result = run_openmemoryd(daemon.env, "import", str(archive))
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "merged into MEMORY.md (1 new line, 1 held back)" in out  # the forgotten one
    assert "unchanged memory/TASKS.md" in out
    assert (
        "Held back 1 line that looks like an older version of a line you have now "
        "(`--all-lines` adds it too):\n"
        f"  MEMORY.md:{nomad_line} now: - Деплой идёт на Nomad с марта\n"
        "    the import has: - Деплой идёт на Kubernetes с марта\n"
    ) in out
    assert (daemon.env.workspace / "memory" / "TASKS.md").read_bytes() == tasks_before
    now = memory.read_text()
    assert now.startswith(
        text.replace("Kubernetes", "Nomad").replace("- Wei prefers oolong tea\n", "")
    )
    assert "Kubernetes" not in now
    assert now.endswith("- Wei prefers oolong tea\n")
    listed = daemon.cli("tasks", "--all")
    assert listed.stdout.count("完成接口文档") == 1, listed.stdout
    assert listed.stdout.splitlines()[-1] == "0 open, 1 done"
    with daemon.client() as client:
        assert [h.path for h in client.search("Kubernetes").results] == []

    forced = run_openmemoryd(daemon.env, "import", "--all-lines", str(archive))
    assert "merged into MEMORY.md (1 new line)" in forced.stdout
    assert "Held back" not in forced.stdout
    assert memory.read_text().endswith("- Деплой идёт на Kubernetes с марта\n")
    assert daemon.cli("tasks", "--all").stdout.count("完成接口文档") == 1  # still the one task


def test_export_path_is_relative_to_the_caller(daemon: Daemon, tmp_path: Path) -> None:
    with daemon.client() as client:
        result = client.export(tmp_path / "a.tar.gz")
        assert result.path == str(tmp_path / "a.tar.gz")
        assert result.files >= 3
    bad = daemon.cli("export", "--output", str(tmp_path / "missing" / "x.tar.gz"))
    assert bad.returncode == 4
    assert "no such directory" in bad.stderr


def test_export_never_overwrites_what_is_not_an_earlier_export(
    daemon: Daemon, tmp_path: Path
) -> None:
    # any client of the daemon could name any file its user may write
    precious = tmp_path / "precious.tar.gz"
    precious.write_text("not an archive\n")
    passwd = tmp_path / "passwd"
    passwd.write_text("root:x:0:0:root:/root:/bin/bash\n")
    refused = daemon.cli("export", "--output", str(precious))
    assert refused.returncode != 0
    assert "exists and is not an earlier export" in refused.stderr
    refused = daemon.cli("export", "--output", str(passwd))
    assert refused.returncode != 0
    assert "an export is a .tar.gz file" in refused.stderr
    assert precious.read_text() == "not an archive\n"
    assert passwd.read_text() == "root:x:0:0:root:/root:/bin/bash\n"
    archive = tmp_path / "memory.tar.gz"
    for _ in range(2):  # the same command run again replaces its own export
        done = daemon.cli("export", "--output", str(archive))
        assert done.returncode == 0, done.stderr


def test_import_without_a_daemon_and_its_failures(env: Env, tmp_path: Path) -> None:
    folder = tmp_path / "old-notes"
    (folder / "memory").mkdir(parents=True)
    (folder / "memory" / "2026-01-05.md").write_text("- kickoff\n")
    (folder / "ideas.md").write_text("- a cache for embeddings\n")
    dry = run_openmemoryd(env, "import", "--dry-run", str(folder))
    assert "would create memory/2026-01-05.md" in dry.stdout
    assert not (env.workspace / "memory" / "2026-01-05.md").exists()
    done = run_openmemoryd(env, "import", str(folder))
    assert done.returncode == 0, done.stderr
    assert "created memory/imported/old-notes/ideas.md" in done.stdout
    assert "No daemon is running" in done.stdout
    assert (env.workspace / "memory" / "2026-01-05.md").read_text() == "- kickoff\n"

    missing = run_openmemoryd(env, "import", str(tmp_path / "nope"))
    assert missing.returncode == 1
    assert "cannot read" in missing.stderr
    junk = tmp_path / "junk.tar.gz"
    junk.write_bytes(b"not an archive")
    refused = run_openmemoryd(env, "import", str(junk))
    assert refused.returncode == 1
    assert "neither a directory nor a tar archive" in refused.stderr
    assert "Traceback" not in refused.stderr
