"""The workspace deleted or moved under a running engine: what it says and
does, part by part (tests/test_e2e_workspace_gone.py drives a real daemon).

A user deleted the workspace: `append` said "no such memory file:
memory/<today>.md", `status` listed no issue, and `doctor` said the
workspace "does not exist yet; the daemon creates it on start" beside the
daemon serving it. The watcher's side is in tests/test_watcher.py.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from conftest import Env
from omem_protocol import SyncStatus
from openmemoryd.doctor.paths import workspace_check
from openmemoryd.doctor.runtime import watcher_check
from openmemoryd.engine import Engine
from openmemoryd.engine.status_report import workspace_status
from openmemoryd.errors import Unavailable
from openmemoryd.memory.archive import export_archive
from openmemoryd.workspace import PathPolicy, RootMissing, init_workspace


async def test_status_says_the_workspace_is_missing_and_sync_empties_the_index(
    engine: Engine,
) -> None:
    await engine.append("the heron count is 12", None)
    workspace = engine.config.workspace
    assert not [i for i in (await workspace_status(engine)).issues if "missing" in i]
    shutil.rmtree(workspace)

    # every file left with its workspace: removed from the index, not kept
    # as "skipped" with a warning each (the file itself is not the problem)
    result = await engine.sync()
    assert (result.removed, result.skipped) == (4, 0)
    status = await workspace_status(engine)
    assert (status.files_indexed, status.files_on_disk) == (0, 0)
    assert status.issues[0].startswith(f"workspace missing: {workspace} (deleted or moved?)")
    assert "Restore it" in status.issues[0]


async def test_a_write_names_the_missing_workspace_and_creates_nothing(engine: Engine) -> None:
    workspace = engine.config.workspace
    shutil.rmtree(workspace)
    with pytest.raises(RootMissing, match=re.escape(f"workspace missing: {workspace}")) as raised:
        await engine.append("x", None)
    assert isinstance(raised.value, Unavailable)
    assert "no such memory file" not in str(raised.value)
    assert not workspace.exists()


def test_the_doctor_tells_a_missing_workspace_from_one_not_created_yet(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    first_start = workspace_check(workspace)
    assert first_start.status == "warn"
    assert "creates it on start" in first_start.detail
    served = workspace_check(workspace, served=True)
    assert served.status == "fail"
    assert "creates it on start" not in served.detail
    assert f"{workspace} is missing" in served.detail
    assert "restore" in (served.fix or "")


def test_the_doctor_does_not_blame_the_watcher_for_a_missing_workspace(env: Env) -> None:
    config = env.config()
    error = f"workspace missing: {config.workspace}"
    state = SyncStatus(
        queue_depth=0,
        running=False,
        last_reason=None,
        last_finished_at=None,
        last_error=None,
        watcher="native",
        watcher_healthy=False,
        watcher_restarts=1,
        watcher_error=error,
    )
    check = watcher_check(state, config)
    assert check.status == "fail"
    assert error in check.detail
    # restarting the daemon would create an empty workspace: not the fix
    assert "restart" not in (check.fix or "")
    assert "restore the workspace" in (check.fix or "")


def test_an_export_of_a_missing_workspace_leaves_the_earlier_export(
    env: Env, tmp_path: Path
) -> None:
    """An archive of nothing, written over last night's export of the same
    name, would lose the backup of the very files that are missing."""
    workspace = env.config().workspace
    init_workspace(workspace)
    policy = PathPolicy(workspace)
    archive = tmp_path / "memory.tar.gz"
    assert export_archive(policy, archive, max_file_bytes=1 << 20).files == 3
    before = archive.read_bytes()
    shutil.rmtree(workspace)
    with pytest.raises(RootMissing, match=re.escape(f"workspace missing: {workspace}")):
        export_archive(policy, archive, max_file_bytes=1 << 20)
    assert archive.read_bytes() == before
    assert not workspace.exists()
