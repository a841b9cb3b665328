"""End to end: the workspace directory deleted, replaced or restored under a
running daemon.

A user deleted the workspace, appended, restored it from a copy and added a
line: the daemon had gone on watching the deleted directory, so `status`
said "Files: 0 indexed / 8 on disk", "Watcher: native, healthy", "Issues:
none", `search --fresh` waited out its timeout and found nothing, the
append failed with "no such memory file: memory/<today>.md", and `doctor`
said the workspace "does not exist yet; the daemon creates it on start"
beside the daemon that served it. What a watched root's deletion must give
(as watchman does): the daemon notices and says so (log, `status`, writes'
errors, `doctor`), creates nothing, and once the directory is back it
watches the new one and re-indexes it whole.

Searches here never trigger their own checks (``search_check_s = 0``), so
a file found without ``--fresh`` was brought in by the re-attached watcher.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable, Iterator

import pytest

from conftest import KEYWORD_ONLY, Daemon, Env, run_openmemoryd
from omem_client import Client
from omem_protocol import StatusResult

pytestmark = pytest.mark.e2e

WITHIN_S = 10.0


@pytest.fixture
def watched(env: Env) -> Iterator[Daemon]:
    env.write_config(KEYWORD_ONLY + "[sync]\nsearch_check_s = 0\ndebounce_ms = 100\n")
    daemon = Daemon(env).start()
    try:
        yield daemon
    finally:
        daemon.stop()


def wait_until(check: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WITHIN_S
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.05)
    pytest.fail(f"not within {WITHIN_S} s: {what}")


def missing_issues(status: StatusResult) -> list[str]:
    return [issue for issue in status.issues if issue.startswith("workspace missing")]


def settled(client: Client) -> Callable[[], bool]:
    """The watcher is on the workspace again and the index matches the disk."""

    def check() -> bool:
        status = client.status()
        sync = status.sync
        return (
            sync is not None
            and sync.watcher_healthy
            and not status.syncing
            and sync.queue_depth == 0
            and status.files_indexed == status.files_on_disk > 0
            and not missing_issues(status)
        )

    return check


def found(client: Client, query: str, path: str) -> Callable[[], bool]:
    return lambda: path in [hit.path for hit in client.search(query).results]


def test_deleting_and_restoring_the_workspace(watched: Daemon) -> None:
    env = watched.env
    workspace = env.workspace
    backup = env.root / "backup"
    assert watched.cli("append", "the first heron note").returncode == 0
    archive = env.root / "nightly.tar.gz"
    assert watched.cli("export", "-o", str(archive)).returncode == 0
    exported = archive.read_bytes()
    shutil.copytree(workspace, backup, symlinks=True)
    on_disk = sum(1 for p in backup.rglob("*.md"))
    shutil.rmtree(workspace)

    with watched.client() as client:
        # noticed: said in status, the watcher is not healthy, and the log warns
        def noticed() -> bool:
            sync = client.status().sync
            return sync is not None and sync.watcher_error == f"workspace missing: {workspace}"

        wait_until(noticed, "the watcher notices")
        status = client.status()
        assert status.sync is not None
        assert not status.sync.watcher_healthy
        issues = missing_issues(status)
        assert len(issues) == 1
        assert str(workspace) in issues[0]
        # said once, as what it is, not as a watcher that "is not working"
        assert not [i for i in status.issues if "watcher is not working" in i]
    shown = watched.cli("status").stdout
    assert f"workspace missing: {workspace}" in shown
    assert "NOT healthy" in shown
    assert f"the workspace {workspace} is missing" in watched.log()

    # a write names the missing workspace, and recreates nothing
    appended = watched.cli("append", "x")
    assert appended.returncode == 4
    assert f"workspace missing: {workspace}" in appended.stderr, appended.stderr
    assert "no such memory file" not in appended.stderr
    assert not workspace.exists()
    # nor does an export of nothing replace the last one, the backup
    again = watched.cli("export", "-o", str(archive))
    assert again.returncode == 4
    assert f"workspace missing: {workspace}" in again.stderr
    assert archive.read_bytes() == exported
    # the doctor knows a daemon serves it: not "the daemon creates it on start"
    doctor = run_openmemoryd(env, "doctor")
    assert "creates it on start" not in doctor.stdout, doctor.stdout
    workspace_line = next(line for line in doctor.stdout.splitlines() if "workspace:" in line)
    assert workspace_line.startswith("✗"), doctor.stdout
    assert "missing" in workspace_line
    assert doctor.returncode == 1
    inside = watched.cli("doctor")  # the daemon's own doctor says the same
    assert inside.returncode == 1
    assert "creates it on start" not in inside.stdout
    assert f"✗ workspace: {workspace} is missing" in inside.stdout, inside.stdout
    assert "watcher waits for the workspace" in inside.stdout

    # restored, and a line added at once: a fresh search finds it
    shutil.copytree(backup, workspace, symlinks=True)
    with (workspace / "MEMORY.md").open("a", encoding="utf-8") as out:
        out.write("- marker axolotl\n")
    started = time.monotonic()
    fresh = watched.cli("search", "axolotl", "--fresh")
    assert fresh.returncode == 0, fresh.stderr
    assert "MEMORY.md:" in fresh.stdout, fresh.stdout + fresh.stderr
    assert "results may lag" not in fresh.stderr
    assert time.monotonic() - started < 4.0

    with watched.client() as client:
        # the whole workspace is indexed again, and watched: counts agree
        wait_until(settled(client), "the workspace is watched and indexed again")
        assert client.status().files_on_disk == on_disk
        assert "heron" in client.search("heron").results[0].snippet
        # a later edit by someone else is seen by the watcher on the new directory
        (workspace / "memory" / "later.md").write_text("the quetzal feeder moved\n")
        wait_until(found(client, "quetzal", "memory/later.md"), "an edit after the restore")
    assert f"the workspace {workspace} is back" in watched.log()


def test_a_workspace_replaced_in_one_go_is_watched_again(watched: Daemon) -> None:
    """Moved away and a copy put in its place at once: no moment without a
    workspace, but the directory watched is no longer the workspace."""
    workspace = watched.env.workspace
    assert watched.cli("append", "the ibis ledger", "--path", "memory/ibis.md").returncode == 0
    aside = watched.env.root / "aside"
    os.rename(workspace, aside)
    shutil.copytree(aside, workspace, symlinks=True)
    with watched.client() as client:
        time.sleep(1.5)  # noticed, re-attached and re-scanned by now
        (workspace / "memory" / "ibis.md").write_text("the ibis ledger, kingfisher page\n")
        wait_until(found(client, "kingfisher", "memory/ibis.md"), "an edit in the new copy")
        # the moved-away copy is not the workspace any more
        (aside / "memory" / "ibis.md").write_text("the ibis ledger, pelican page\n")
        (workspace / "memory" / "bar.md").write_text("barrier\n")
        wait_until(found(client, "barrier", "memory/bar.md"), "a later edit")
        assert not client.search("pelican").results
        wait_until(settled(client), "counts agree")


def test_memory_folder_deleted_then_recreated_by_an_append(watched: Daemon) -> None:
    memory = watched.env.workspace / "memory"
    with watched.client() as client:
        client.append("the old daily note")
        shutil.rmtree(memory)
        time.sleep(0.5)
        # the workspace is there: a daily append creates memory/ again
        done = client.append("the tern colony count")
        assert done.indexed
        (memory / "extra.md").write_text("the plover survey\n")
        wait_until(found(client, "plover", "memory/extra.md"), "a note in the new memory/")
        time.sleep(0.5)  # past the check the new folder's creation asked for
        (memory / "second.md").write_text("the avocet survey\n")
        wait_until(found(client, "avocet", "memory/second.md"), "a later note in memory/")
        wait_until(settled(client), "counts agree")
