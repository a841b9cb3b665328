"""End to end: `omem-client export` and `openmemoryd import` around a real daemon."""

from __future__ import annotations

import tarfile
from pathlib import Path

import pytest

from conftest import Daemon, Env, run_openmemoryd

pytestmark = pytest.mark.e2e


def test_export_then_import_restores_what_was_forgotten(daemon: Daemon, tmp_path: Path) -> None:
    with daemon.client() as client:
        kept = client.append("Wei prefers oolong tea", path="MEMORY.md")
        client.append("周会改到周三")
    archive = tmp_path / "backup.tar.gz"
    result = daemon.cli("export", "--output", str(archive))
    assert result.returncode == 0, result.stderr
    assert f"to {archive}" in result.stdout
    assert f"openmemoryd import {archive}" in result.stdout
    with tarfile.open(archive) as tar:
        names = tar.getnames()
    assert "workspace/MEMORY.md" in names
    assert not [n for n in names if n.endswith((".sqlite", ".sqlite-wal"))]

    with daemon.client() as client:
        client.forget(citation=kept.citation)
        assert client.search("oolong").results == ()
    restored = run_openmemoryd(daemon.env, "import", str(archive))
    assert restored.returncode == 0, restored.stderr
    assert "merged into MEMORY.md (1 new lines)" in restored.stdout
    assert "Indexed by the running daemon" in restored.stdout
    with daemon.client() as client:
        hits = client.search("oolong").results  # searchable when the command returned
    assert [h.path for h in hits] == ["MEMORY.md"]
    again = run_openmemoryd(daemon.env, "import", str(archive))
    assert "0 new, 0 merged" in again.stdout  # a second import changes nothing


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
