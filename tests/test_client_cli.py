"""The CLI without a daemon: parsing, usage errors and exit code 3."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from omem_client import Client, DaemonNotRunning
from omem_client.cli import EXIT_UNREACHABLE, app


def test_usage_errors_exit_2() -> None:
    runner = CliRunner()
    assert runner.invoke(app, ["search"]).exit_code == 2
    assert runner.invoke(app, ["search", "x", "--limit", "0"]).exit_code == 2
    assert runner.invoke(app, ["search", "x", "--min-score", "2"]).exit_code == 2
    assert runner.invoke(app, ["get", "MEMORY.md", "--from", "0"]).exit_code == 2
    assert runner.invoke(app, ["frobnicate"]).exit_code == 2


def test_no_daemon_exits_3_and_says_how_to_start_it(tmp_path: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(app, ["--socket", str(tmp_path / "none.sock"), "status"])
    assert result.exit_code == EXIT_UNREACHABLE
    assert "openmemoryd run" in result.output
    assert "Traceback" not in result.output


def test_library_raises_daemon_not_running(tmp_path: Path) -> None:
    with pytest.raises(DaemonNotRunning, match="openmemoryd run"):
        Client(tmp_path / "none.sock").status()


def test_version_flag() -> None:
    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.output.startswith("omem-client ")
