"""Command-line conventions a new user meets first: -h, bad choices, no hidden deps."""

from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import Env, run_cli

# Run a command with the `click` distribution made unimportable: typer
# vendors its own copy, so a base install has no `click` at all.
WITHOUT_CLICK = (
    "import runpy, sys; sys.modules['click'] = None; "
    "sys.argv = sys.argv[1:]; runpy.run_module(sys.argv[0], run_name='__main__')"
)


def _run(env: Env, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *argv],
        env=env.vars,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize(
    "argv",
    [
        ("omem_client", "-h"),
        ("omem_client", "search", "-h"),
        ("omem_client", "tasks", "-h"),
        ("omem_client", "tasks", "add", "-h"),
        ("openmemoryd", "-h"),
        ("openmemoryd", "run", "-h"),
        ("openmemoryd", "init", "-h"),
    ],
)
def test_dash_h_is_help_everywhere(env: Env, argv: tuple[str, ...]) -> None:
    result = _run(env, "-m", *argv)
    assert result.returncode == 0, result.stderr
    assert "Usage:" in result.stdout


def test_an_unknown_source_is_a_usage_error_naming_the_valid_ones(env: Env) -> None:
    result = run_cli(env, "search", "tea", "--source", "bogus")
    assert result.returncode == 2
    assert "memory" in result.stderr
    assert "sessions" in result.stderr


def test_init_and_configure_work_without_click(env: Env) -> None:
    init = _run(env, "-c", WITHOUT_CLICK, "openmemoryd", "init", "--yes")
    assert init.returncode == 0, init.stderr
    assert (env.workspace / "MEMORY.md").is_file()
    configure = _run(env, "-c", WITHOUT_CLICK, "openmemoryd", "configure", "--provider", "none")
    assert configure.returncode == 0, configure.stderr
    assert "ModuleNotFoundError" not in configure.stderr
