"""A config file that no longer loads never traps the user.

`openmemoryd stop` finds the daemon's socket without a config that loads;
a reload that fails (or that loads changes needing a restart) is kept for
`status` and `doctor` to say; `init` and `configure` say how to get past a
file they will not overwrite. The real daemon is driven in
test_e2e_broken_config.py; these are the parts on their own.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import cast

import pytest
from typer.testing import CliRunner

from omem_protocol import socket_lock_path
from openmemoryd.app import apply_reload
from openmemoryd.cli import app
from openmemoryd.config import Config, Overrides, load_config, locate_socket
from openmemoryd.config.reload import RELOAD_FAILED, WAITS_FOR_RESTART, ReloadState
from openmemoryd.detach import stop_running
from openmemoryd.doctor.reload import reload_check
from openmemoryd.engine import Engine
from openmemoryd.errors import ConfigError

TYPO = '[embedding]\nprovider = "none"\n[recall]\nmin_score = 0.35”\n'  # a smart quote


def config_env(tmp_path: Path, text: str | None, **extra: str) -> dict[str, str]:
    """An environment whose config file (under XDG_CONFIG_HOME) holds *text*."""
    home = tmp_path / "config"
    if text is not None:
        (home / "openmemory").mkdir(parents=True, exist_ok=True)
        (home / "openmemory" / "config.toml").write_text(text)
    runtime = tmp_path / "run"
    runtime.mkdir(exist_ok=True)
    # Empty is unset: whatever the shell running the tests has set must not count.
    base = {"OPENMEMORY_SOCKET": "", "OPENMEMORY_CONFIG": ""}
    return {**base, "XDG_CONFIG_HOME": str(home), "XDG_RUNTIME_DIR": str(runtime), **extra}


# ---------------------------------------------------------------- locate_socket


def test_a_config_that_loads_gives_its_socket_and_no_error(tmp_path: Path) -> None:
    env = config_env(tmp_path, 'socket = "sock/d.sock"\n')
    where = locate_socket(Overrides(), env)
    assert where.path == tmp_path / "config" / "openmemory" / "sock" / "d.sock"
    assert (where.config_error, where.guessed) == (None, False)
    assert where.config is not None
    assert where.config.socket == where.path


def test_a_file_that_is_not_toml_falls_back_to_the_default_and_says_why(tmp_path: Path) -> None:
    env = config_env(tmp_path, TYPO)
    where = locate_socket(Overrides(), env)
    assert where.path == tmp_path / "run" / "openmemory" / "openmemoryd.sock"
    assert where.config_error is not None
    assert "invalid config file" in where.config_error
    assert "line 4" in where.config_error
    assert where.guessed  # the file may name another socket: nobody can tell


def test_the_environment_wins_and_is_no_guess(tmp_path: Path) -> None:
    env = config_env(tmp_path, TYPO, OPENMEMORY_SOCKET=str(tmp_path / "env.sock"))
    where = locate_socket(Overrides(), env)
    assert where.path == tmp_path / "env.sock"
    assert where.config_error is not None
    assert not where.guessed


def test_the_flag_wins_over_everything(tmp_path: Path) -> None:
    env = config_env(tmp_path, TYPO, OPENMEMORY_SOCKET=str(tmp_path / "env.sock"))
    where = locate_socket(Overrides(socket=tmp_path / "flag.sock"), env)
    assert where.path == tmp_path / "flag.sock"
    assert where.config_error is not None
    assert not where.guessed


def test_the_socket_key_of_a_file_invalid_elsewhere_is_still_used(tmp_path: Path) -> None:
    """Valid TOML with a value out of range: the socket key is still readable."""
    env = config_env(tmp_path, 'socket = "~/../d.sock"\n[search]\nlimit = -5\n')
    with pytest.raises(ConfigError):
        load_config(Overrides(), env)
    where = locate_socket(Overrides(), env)
    assert where.path == Path(os.path.normpath(Path.home() / ".." / "d.sock"))
    assert where.config_error is not None
    assert "$.search.limit" in where.config_error
    assert not where.guessed


def test_a_named_config_file_that_is_missing_still_gives_a_socket(tmp_path: Path) -> None:
    env = config_env(tmp_path, None)
    where = locate_socket(Overrides(config=tmp_path / "nope.toml"), env)
    assert where.config_error is not None
    assert "config file not found" in where.config_error
    assert where.path == tmp_path / "run" / "openmemory" / "openmemoryd.sock"
    assert not where.guessed  # no file: nothing in it to miss


# ---------------------------------------------------------------- stop


def test_stop_with_a_broken_config_and_no_daemon_says_both(tmp_path: Path) -> None:
    env = config_env(tmp_path, TYPO)
    result = CliRunner().invoke(app, ["stop"], env=env)
    assert result.exit_code == 0, result.output
    assert "the config file is broken: invalid config file" in result.output
    assert "openmemoryd is not running on" in result.output
    assert "pass --socket PATH" in result.output  # the file's socket key is unknown


def test_stop_finds_a_daemon_that_does_not_answer_by_its_lock(tmp_path: Path) -> None:
    """A daemon still opening its index answers nothing yet; its lock names it."""
    socket = tmp_path / "d.sock"
    # cmdline with "openmemoryd" in it: what the lock's reader checks on Linux
    proc = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)", "openmemoryd"],
        start_new_session=True,
    )
    reaper = threading.Thread(target=proc.wait)  # a zombie would look alive
    reaper.start()
    try:
        socket_lock_path(socket).write_text(f"{proc.pid}\n")
        code, message = stop_running(socket)
        assert (code, message) == (0, f"openmemoryd (pid {proc.pid}) stopped")
        reaper.join(10)
        assert proc.returncode == -signal.SIGTERM
    finally:
        if proc.poll() is None:
            proc.kill()
        reaper.join(10)


def test_stop_without_a_daemon_adds_the_hint_it_is_given(tmp_path: Path) -> None:
    code, message = stop_running(tmp_path / "d.sock", absent=" (hint)")
    assert (code, message) == (0, f"openmemoryd is not running on {tmp_path / 'd.sock'} (hint)")


def test_index_with_a_broken_config_and_no_daemon_refuses(tmp_path: Path) -> None:
    env = config_env(tmp_path, TYPO)
    result = CliRunner().invoke(app, ["index"], env=env)
    assert result.exit_code == 1
    assert result.output.startswith("openmemoryd: invalid config file")
    assert "Indexed" not in result.output


# ---------------------------------------------------------------- init, configure


@pytest.mark.parametrize("command", [["init", "--yes"], ["configure", "--provider", "none"]])
def test_init_and_configure_leave_a_broken_file_and_say_how_past_it(
    tmp_path: Path, command: list[str]
) -> None:
    env = config_env(tmp_path, TYPO)
    path = tmp_path / "config" / "openmemory" / "config.toml"
    result = CliRunner().invoke(app, command, env=env)
    assert result.exit_code == 1
    assert "invalid config file" in result.output
    assert f"openmemoryd {command[0]} leaves the file as it is" in result.output
    assert f"mv {path} {path}.broken" in result.output
    assert path.read_text() == TYPO  # untouched


# ---------------------------------------------------------------- what status says


def test_a_failed_reload_is_an_issue_with_its_time_error_and_fix() -> None:
    at = time.mktime((2026, 3, 4, 5, 6, 7, 0, 0, -1))
    state = ReloadState().failed("invalid config file /c.toml: Expected newline", at)
    (issue,) = state.issues(pid=4242)
    assert issue == (
        "the config file did not load at 2026-03-04 05:06:07: invalid config file /c.toml: "
        "Expected newline; the daemon still runs with the previous config; fix the file and "
        "reload (kill -HUP 4242 / systemctl --user reload openmemoryd)"
    )
    assert state.loaded([]).issues(pid=4242) == ()  # a good reload clears it


def test_changes_waiting_for_a_restart_outlive_a_failed_reload() -> None:
    state = ReloadState().loaded(["sync.debounce_ms 1500 -> 99"])
    (waiting,) = state.issues(pid=1)
    assert waiting.startswith(f"{WAITS_FOR_RESTART}: sync.debounce_ms 1500 -> 99; restart")
    failed, still = state.failed("boom", time.time()).issues(pid=1)
    assert failed.startswith(RELOAD_FAILED)
    assert still == waiting
    assert state.failed("boom", 0.0).loaded([]).issues(pid=1) == ()


class _Engine:
    """What `apply_reload` touches of an engine: its config."""

    def __init__(self, config: Config) -> None:
        self.config = config


def test_apply_reload_keeps_the_config_on_failure_and_reports_what_waits(tmp_path: Path) -> None:
    env = config_env(tmp_path, '[embedding]\nprovider = "none"\n')
    running = load_config(Overrides(), env)
    engines = cast(dict[str, Engine], {"default": _Engine(running)})

    def reload() -> Config:
        return load_config(Overrides(), env)

    config_file = tmp_path / "config" / "openmemory" / "config.toml"
    config_file.write_text(TYPO)
    state = apply_reload(engines, reload, ReloadState())
    assert state.error is not None
    assert "line 4" in state.error
    assert engines["default"].config == running

    config_file.write_text('[embedding]\nprovider = "none"\n[search]\nlimit = 2\n[sync]\n'
                           "debounce_ms = 99\n")  # fmt: skip
    state = apply_reload(engines, reload, state)
    assert state.error is None
    assert state.waiting == ("sync.debounce_ms 1500 -> 99",)
    assert engines["default"].config.search.limit == 2  # applied
    assert engines["default"].config.sync == running.sync  # not applied

    config_file.write_text('[embedding]\nprovider = "none"\n[search]\nlimit = 2\n')
    assert apply_reload(engines, reload, state) == ReloadState()  # reverted: nothing waits


# ---------------------------------------------------------------- what doctor says


def test_doctor_says_nothing_of_reloads_when_there_is_nothing_to_say() -> None:
    assert reload_check(["vector search is off"], 7, file_loads=True) is None


def test_doctor_warns_of_a_failed_reload_with_the_fix_that_fits() -> None:
    issues = ReloadState().failed("invalid config file /c.toml: bad", 0.0).issues(pid=7)
    broken = reload_check(issues, 7, file_loads=False)
    assert broken is not None
    assert broken.status == "warn"
    assert broken.detail.startswith(f"{RELOAD_FAILED} at ")
    assert "bad" not in broken.detail  # the config check shows the error
    assert broken.fix is not None
    assert broken.fix.startswith("fix the file")
    assert "kill -HUP 7" in broken.fix
    fixed = reload_check(issues, 7, file_loads=True)
    assert fixed is not None
    assert fixed.fix is not None
    assert "the file loads now" in fixed.detail
    assert fixed.fix.startswith("reload the daemon (kill -HUP 7")


def test_doctor_warns_of_changes_that_wait_for_a_restart() -> None:
    issues = ReloadState().loaded(["index.chunk_tokens 175 -> 300"]).issues(pid=7)
    check = reload_check(issues, 7, file_loads=True)
    assert check is not None
    assert check.status == "warn"
    assert check.detail == f"{WAITS_FOR_RESTART}: index.chunk_tokens 175 -> 300"
    assert check.fix is not None
    assert "systemctl --user restart openmemoryd" in check.fix
