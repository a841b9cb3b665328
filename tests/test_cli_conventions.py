"""Command-line conventions a new user meets first: -h, bad choices, no hidden deps."""

from __future__ import annotations

import io
import json
import shlex
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from conftest import Daemon, Env, run_cli

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


WITHOUT_HYPERCORN = WITHOUT_CLICK.replace("'click'", "'hypercorn'")


@pytest.mark.e2e  # the real `openmemoryd run`, refusing at start-up
def test_http_without_its_extra_says_how_to_install_it(env: Env) -> None:
    result = _run(env, "-c", WITHOUT_HYPERCORN, "openmemoryd", "run", "--http", "127.0.0.1:0")
    assert result.returncode != 0
    assert "pip install -e '.[http]'" in result.stderr
    assert "Traceback" not in result.stderr


def test_no_install_hint_names_another_projects_package() -> None:
    """'openmemory' on the package index is someone else's: hints name ours."""
    root = Path(__file__).resolve().parents[1]
    tracked = subprocess.run(
        ["git", "ls-files"], cwd=root, capture_output=True, text=True, check=False
    ).stdout.split()
    if not tracked:
        pytest.skip("not a git checkout")
    offenders = []
    for name in tracked:
        path = root / name
        if path.suffix not in {".py", ".md", ".toml", ".txt"} or not path.is_file():
            continue
        if path.name == "test_cli_conventions.py":
            continue
        text = path.read_text("utf-8", errors="replace")
        for bad in ("openmemory[", "install openmemory ", "install openmemory\n"):
            if bad in text:
                offenders.append(f"{name}: {bad!r}")
    assert offenders == []


@pytest.mark.e2e
def test_export_to_dash_writes_the_archive_to_stdout(daemon: Daemon, env: Env) -> None:
    assert daemon.cli("append", "--path", "MEMORY.md", "Wei prefers oolong").returncode == 0
    result = subprocess.run(
        [sys.executable, "-m", "omem_client", "export", "-o", "-"],
        env=env.vars,
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    with tarfile.open(fileobj=io.BytesIO(result.stdout), mode="r:gz") as archive:
        names = archive.getnames()
    assert any(name.endswith("MEMORY.md") for name in names), names
    assert b"to stdout" in result.stderr
    assert not Path("-").exists()


def test_an_unquoted_multi_word_task_is_refused_with_the_quoted_form(env: Env) -> None:
    result = run_cli(env, "tasks", "add", "Fix", "the", "login", "bug")
    assert result.returncode == 2
    assert "omem-client tasks add 'Fix the login bug'" in result.stderr


@pytest.mark.e2e
def test_quoted_tasks_are_added_one_per_argument(daemon: Daemon) -> None:
    added = daemon.cli("tasks", "add", "Fix the login bug", "Write the release notes", "--json")
    assert added.returncode == 0, added.stderr
    listed = daemon.cli("tasks").stdout
    assert "Fix the login bug" in listed
    assert "Write the release notes" in listed
    single = daemon.cli("tasks", "add", "Deploy")
    assert single.returncode == 0, single.stderr


@pytest.mark.parametrize(
    ("argv", "exit_code", "code"),
    [
        (("search", "tea", "--json"), 3, "unreachable"),
        (("search", "tea", "--source", "bogus", "--json"), 2, "usage"),
        (("search", "--json"), 2, "usage"),
        (("tasks", "add", "Fix", "the", "bug", "--json"), 2, "usage"),
    ],
)
def test_under_json_every_error_is_one_json_object(
    env: Env, argv: tuple[str, ...], exit_code: int, code: str
) -> None:
    result = run_cli(env, *argv)  # no daemon is running in this environment
    assert result.returncode == exit_code, result.stderr
    reply = json.loads(result.stdout)
    assert set(reply) == {"error"}
    assert reply["error"]["code"] == code
    assert reply["error"]["message"]
    assert set(reply["error"]) == {"code", "message", "hint"}


@pytest.mark.e2e
def test_a_daemon_error_under_json_carries_the_daemons_code(daemon: Daemon) -> None:
    result = daemon.cli("get", "../etc/passwd", "--json")
    assert result.returncode == 4
    reply = json.loads(result.stdout)
    assert reply["error"]["code"] in {"forbidden", "bad_request"}


def test_an_unknown_sqlite_vfs_is_a_clear_startup_error(env: Env) -> None:
    from openmemoryd.errors import StartupError
    from openmemoryd.store.db import index_vfs

    assert index_vfs({}) is None
    with pytest.raises(StartupError, match="no SQLite VFS"):
        index_vfs({"OPENMEMORYD_SQLITE_VFS": "no-such-vfs"})


def test_test_helpers_are_not_in_the_packages() -> None:
    import openmemoryd.store

    package = Path(openmemoryd.store.__file__).parent
    assert not (package / "fault_vfs.py").exists()


@pytest.mark.parametrize("module", ["omem_client", "openmemoryd"])
def test_shell_completion_is_offered(env: Env, module: str) -> None:
    # The shell is detected from the parent process, so ask from bash; the
    # trailing `exit` keeps bash from exec-ing the command (then pytest, not
    # bash, would be its parent).
    command = f"{shlex.quote(sys.executable)} -m {module} --show-completion; exit $?"
    shown = subprocess.run(
        ["bash", "-c", command], env=env.vars, capture_output=True, text=True, check=False
    )
    assert shown.returncode == 0, shown.stderr
    assert "complete -o default -F" in shown.stdout
    helped = _run(env, "-m", module, "--help")
    assert "--install-completion" in helped.stdout


def test_workspace_means_a_name_and_the_directory_is_workspace_dir(env: Env) -> None:
    client = _run(env, "-m", "omem_client", "-h").stdout
    assert "--workspace" in client
    assert "workspaces" in client  # picks one of the daemon's workspaces by name
    daemon = _run(env, "-m", "openmemoryd", "run", "-h").stdout
    assert "--workspace-dir" in daemon
    # the old spelling still works for the directory (existing units and scripts)
    init = _run(env, "-m", "openmemoryd", "init", "--yes", "--workspace", str(env.root / "w2"))
    assert init.returncode == 0, init.stderr
    assert (env.root / "w2" / "MEMORY.md").is_file()
