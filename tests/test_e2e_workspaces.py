"""Several named workspaces in one daemon: separate Markdown, separate
indexes, chosen per call with `--workspace`."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import KEYWORD_ONLY, Daemon, Env, run_openmemoryd
from omem_client import Client, NotFoundError
from openmemoryd.errors import ConfigError
from openmemoryd.search.budget import hit_cost

pytestmark = pytest.mark.e2e


def two_workspaces(env: Env) -> Path:
    project = env.root / "work-notes"
    env.write_config(KEYWORD_ONLY + f'\n[workspaces.work]\npath = "{project}"\n')
    return project


def test_each_workspace_has_its_own_files_and_index(env: Env) -> None:
    project = two_workspaces(env)
    daemon = Daemon(env).start()
    try:
        with (
            Client(env.socket, timeout=30) as home,
            Client(env.socket, timeout=30, workspace="work") as work,
        ):
            assert home.connect().workspaces == ("default", "work")
            home.append("Wei prefers oolong tea")
            work.append("The deploy freeze starts Friday")
            hits = work.search("deploy freeze").results
            assert len(hits) == 1
            assert "deploy freeze" in (project / hits[0].path).read_text()  # its own Markdown
            assert not (env.workspace / hits[0].path).read_text().count("deploy freeze")
            assert home.search("deploy freeze").results == ()
            assert work.search("oolong").results == ()
            status = work.status()
            assert (status.workspace, status.workspace_path) == ("work", str(project))
            assert status.workspaces == ("default", "work")
            assert status.index_path.endswith("index/work.sqlite")
            assert (project / "MEMORY.md").exists()  # created with its templates
            recalled = work.recall("when does the deploy freeze start", min_score=0.0)
            assert "Friday" in recalled.block
        assert (env.state_dir / "index" / "default.sqlite").exists()

        out = daemon.cli("--workspace", "work", "search", "freeze")
        assert out.returncode == 0
        assert "deploy freeze" in out.stdout
        _scopes(env, daemon)
        missing = daemon.cli("--workspace", "nope", "status")
        assert missing.returncode == 4
        assert "no workspace named 'nope'; this daemon serves: default, work" in missing.stderr
        with (
            Client(env.socket, timeout=30, workspace="nope") as client,
            pytest.raises(NotFoundError),
        ):
            client.search("x")
    finally:
        daemon.stop()


def _scopes(env: Env, daemon: Daemon) -> None:
    """A project's search with scope global or all reaches the global
    workspace (`default`) too, each hit naming its workspace; the Python
    client, the full CLI and the lean CLI path alike."""
    with Client(env.socket, timeout=30, workspace="work") as work:
        work.append("The oolong order ships with the deploy freeze")
        own = work.search("oolong").results
        assert [h.workspace for h in own] == [None]
        both = work.search("oolong", scope="all").results
        assert sorted(h.workspace or "" for h in both) == ["default", "work"]
        home = work.search("oolong", scope="global").results
        assert [(h.workspace, h.path) for h in home] == [("default", home[0].path)]
        assert "oolong tea" in (env.workspace / home[0].path).read_text()
        # a budget is spent once, on the merged answer, and counts what it left out
        for n in range(4):
            filler = "\n".join(f"- shelf {n}.{i}: " + "boxes and crates " * 4 for i in range(4))
            work.append(f"{filler}\n- oolong batch {n} arrived", path=f"memory/stock-{n}.md")
        merged = work.search("oolong", scope="all", min_score=0).results
        packed = work.search("oolong", scope="all", min_score=0, max_tokens=90)
        assert len(merged) >= 4
        assert sum(hit_cost(h) for h in packed.results) <= 90
        assert 1 <= len(packed.results) < len(merged)
        assert len(packed.results) + packed.budget_omitted == len(merged)
        assert all(h.workspace in ("default", "work") for h in packed.results)
    out = daemon.cli("--workspace", "work", "search", "oolong", "--scope", "all")
    assert out.returncode == 0, out.stderr
    assert "[default]" in out.stdout
    assert "[work]" in out.stdout
    bad = daemon.cli("--workspace", "work", "search", "oolong", "--scope", "everywhere")
    assert bad.returncode == 2
    assert "project, global, all" in bad.stderr


def test_overlapping_or_reserved_workspaces_are_refused(env: Env) -> None:
    env.write_config(KEYWORD_ONLY + f'\n[workspaces.inner]\npath = "{env.workspace / "sub"}"\n')
    result = run_openmemoryd(env, "run")
    assert result.returncode == 1
    assert "$.workspaces.inner.path" in result.stderr
    assert "overlaps workspace 'default'" in result.stderr
    env.write_config(KEYWORD_ONLY + '\n[workspaces.default]\npath = "/tmp/x"\n')
    with pytest.raises(ConfigError, match="'default' is the top-level workspace"):
        env.config()
    env.write_config(KEYWORD_ONLY + '\n[workspaces."Bad Name"]\npath = "/tmp/x"\n')
    with pytest.raises(ConfigError, match="workspaces"):
        env.config()
