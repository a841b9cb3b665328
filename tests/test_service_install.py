"""`openmemoryd install-service`: the files it writes, checked by the tools that read them.

Every test points HOME and XDG_CONFIG_HOME into tmp_path, so nothing reaches
the real ~/.config/systemd/user or ~/Library/LaunchAgents.
"""

from __future__ import annotations

import configparser
import os
import plistlib
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from openmemoryd.cli import app
from openmemoryd.service.install import daemon_program
from openmemoryd.service.render import systemd_word

ENABLE_SOCKET = "systemctl --user daemon-reload && systemctl --user enable --now openmemoryd.socket"
ENABLE_SERVICE = "systemctl --user daemon-reload && systemctl --user enable --now openmemoryd"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    for name in list(os.environ):
        if name.startswith("OPENMEMORY_"):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    return home


def install(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["install-service", *args])
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def unit_dir(home: Path) -> Path:
    return home / ".config" / "systemd" / "user"


def read_unit(path: Path) -> configparser.ConfigParser:
    unit = configparser.ConfigParser(strict=False, interpolation=None)
    unit.optionxform = str  # type: ignore[assignment, method-assign]  # keys are case-sensitive
    unit.read(path)
    return unit


# ---------------------------------------------------------------- systemd


def test_linux_installs_a_service_and_its_socket_running_this_installation(home: Path) -> None:
    code, out, _ = install("--platform", "linux")
    assert code == 0
    service, socket_unit = (
        unit_dir(home) / "openmemoryd.service",
        unit_dir(home) / "openmemoryd.socket",
    )
    exec_start = read_unit(service)["Service"]["ExecStart"].split()
    assert exec_start == [*daemon_program(), "run"]
    program = Path(exec_start[0])
    assert program.is_absolute()
    assert os.access(program, os.X_OK)
    assert program.parent == Path(sys.executable).parent  # the console script of this venv
    listen = read_unit(socket_unit)["Socket"]
    assert listen["ListenStream"] == "%t/openmemory/openmemoryd.sock"
    assert listen["SocketMode"] == "0600"
    assert f"wrote {service}" in out
    assert f"wrote {socket_unit}" in out
    assert out.rstrip().endswith(ENABLE_SOCKET)


def test_without_socket_activation_only_the_service_is_installed(home: Path) -> None:
    code, out, _ = install("--platform", "linux", "--no-socket-activation")
    assert code == 0
    assert sorted(p.name for p in unit_dir(home).iterdir()) == ["openmemoryd.service"]
    assert out.rstrip().endswith(ENABLE_SERVICE)


def test_the_flags_given_are_passed_to_the_daemon_as_absolute_paths(
    home: Path, tmp_path: Path
) -> None:
    config = tmp_path / "my config.toml"
    config.write_text('[embedding]\nprovider = "none"\n')
    code, out, _ = install(
        "--platform", "linux", "--config", "my config.toml", "--workspace", "notes",
        "--state-dir", "~/state", "--socket", "/tmp/om-x/d.sock", "--log-level", "debug",
    )  # fmt: skip
    assert code == 0, out
    service = (unit_dir(home) / "openmemoryd.service").read_text()
    assert (
        f'ExecStart={systemd_word(daemon_program()[0])} run --config "{config}" '
        f"--workspace-dir {tmp_path / 'notes'} --state-dir {home / 'state'} "
        "--socket /tmp/om-x/d.sock --log-level debug\n"
    ) in service
    socket_unit = read_unit(unit_dir(home) / "openmemoryd.socket")
    assert socket_unit["Socket"]["ListenStream"] == "/tmp/om-x/d.sock"


def test_a_socket_set_in_the_config_file_is_where_systemd_listens(
    home: Path, tmp_path: Path
) -> None:
    config = home / ".config" / "openmemory" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('socket = "/tmp/om-y/from-config.sock"\n')
    assert install("--platform", "linux")[0] == 0
    socket_unit = read_unit(unit_dir(home) / "openmemoryd.socket")
    assert socket_unit["Socket"]["ListenStream"] == "/tmp/om-y/from-config.sock"
    # the daemon reads the same file under systemd, so no flag is needed
    assert "--socket" not in (unit_dir(home) / "openmemoryd.service").read_text()


def test_systemd_words_are_quoted_and_escaped() -> None:
    assert systemd_word("/usr/bin/openmemoryd") == "/usr/bin/openmemoryd"
    assert systemd_word("/home/me/my notes") == '"/home/me/my notes"'
    assert systemd_word("/data/100%") == "/data/100%%"  # not a specifier
    assert systemd_word("/data/$HOME") == '"/data/$$HOME"'  # not a variable
    assert systemd_word('/a "quoted" \\ path') == '"/a \\"quoted\\" \\\\ path"'


def test_a_path_with_a_newline_is_refused_not_written(home: Path) -> None:
    code, _, err = install("--platform", "linux", "--workspace", "/tmp/a\nExecStartPre=/bin/sh")
    assert code == 1
    assert "control characters" in err
    assert not unit_dir(home).exists()


def test_dry_run_prints_the_files_and_writes_nothing(home: Path) -> None:
    code, out, _ = install("--platform", "linux", "--dry-run")
    assert code == 0
    assert not unit_dir(home).exists()
    assert f"# {unit_dir(home) / 'openmemoryd.service'}\n" in out
    assert "[Service]\nType=notify\n" in out
    assert "ListenStream=%t/openmemory/openmemoryd.sock" in out
    assert "nothing was written" in out


def test_an_edited_unit_is_not_overwritten_without_force(home: Path) -> None:
    assert install("--platform", "linux")[0] == 0
    service = unit_dir(home) / "openmemoryd.service"
    edited = service.read_text().replace("RestartSec=2", "RestartSec=9")
    service.write_text(edited)
    code, _, err = install("--platform", "linux")
    assert code == 1
    assert "-RestartSec=9\n+RestartSec=2\n" in err
    assert "--force" in err
    assert service.read_text() == edited
    code, out, _ = install("--platform", "linux", "--force")
    assert code == 0
    assert "RestartSec=2" in service.read_text()
    assert "systemctl --user restart openmemoryd" in out


def test_reinstalling_the_same_files_changes_nothing(home: Path) -> None:
    assert install("--platform", "linux")[0] == 0
    code, out, _ = install("--platform", "linux")
    assert code == 0
    assert "unchanged" in out
    assert "wrote" not in out


def test_openmemory_variables_of_this_shell_are_pointed_out(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENMEMORY_WORKSPACE", "/somewhere/else")
    code, _, err = install("--platform", "linux", "--dry-run")
    assert code == 0
    assert "OPENMEMORY_WORKSPACE is set in this shell" in err
    assert "--workspace" in err


# ---------------------------------------------------------------- launchd


def test_macos_installs_a_launch_agent_that_launchd_can_load(home: Path) -> None:
    code, out, _ = install("--platform", "macos")
    assert code == 0
    path = home / "Library" / "LaunchAgents" / "dev.openmemory.openmemoryd.plist"
    with path.open("rb") as handle:
        plist = plistlib.load(handle)
    assert plist["Label"] == "dev.openmemory.openmemoryd"
    assert plist["ProgramArguments"] == [*daemon_program(), "run"]
    program = Path(plist["ProgramArguments"][0])
    assert program.is_absolute()
    assert os.access(program, os.X_OK)
    assert plist["RunAtLoad"] is True
    assert plist["KeepAlive"] == {"SuccessfulExit": False}
    log = home / "Library" / "Logs" / "openmemory" / "openmemoryd.log"
    assert plist["StandardErrorPath"] == plist["StandardOutPath"] == str(log)
    assert log.parent.is_dir()  # launchd does not create it
    assert f"launchctl bootstrap gui/$(id -u) {path}" in out


def test_socket_activation_is_refused_for_launchd(home: Path) -> None:
    code, _, err = install("--platform", "macos", "--socket-activation")
    assert code == 1
    assert "launchd starts openmemoryd at login" in err


# ---------------------------------------------------------------- systemd-analyze


SYSTEMD_ANALYZE = shutil.which("systemd-analyze")
needs_systemd_analyze = pytest.mark.skipif(
    SYSTEMD_ANALYZE is None,
    reason="systemd-analyze is not installed (Debian: apt-get install systemd; .ci/run tries)",
)


def systemd_verify(home: Path, *units: Path) -> subprocess.CompletedProcess[str]:
    """`systemd-analyze verify --user`, which needs no running systemd, only a
    runtime directory; HOME and XDG_* keep it away from the real user's units.

    The runtime directory is a short one in /tmp: the system's user units put
    sockets in it (gnupg's), whose paths must fit a socket address's 107
    bytes, which a tmp_path under pytest-xdist (``popen-gw0/``) can exceed."""
    assert SYSTEMD_ANALYZE is not None
    with tempfile.TemporaryDirectory(prefix="omr-", dir="/tmp") as runtime:
        environ = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(home),
            "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_RUNTIME_DIR": runtime,
            "SYSTEMD_LOG_LEVEL": "notice",
        }
        return subprocess.run(
            [SYSTEMD_ANALYZE, "verify", "--user", *map(str, units)],
            env=environ,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )


@needs_systemd_analyze
@pytest.mark.parametrize("activation", ["--socket-activation", "--no-socket-activation"])
def test_systemd_analyze_verifies_the_installed_units(home: Path, activation: str) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "openmemoryd", "install-service", activation,
         "--workspace", str(home / "my notes % $HOME")],
        env=os.environ | {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config")},
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    units = sorted(unit_dir(home).iterdir())
    assert len(units) == (2 if activation == "--socket-activation" else 1)
    verified = systemd_verify(home, *units)
    # Unknown keys are only warnings (exit 0), so any output at all is a failure.
    assert (verified.returncode, verified.stdout + verified.stderr) == (0, "")


@needs_systemd_analyze
def test_systemd_analyze_would_catch_a_broken_unit(home: Path) -> None:
    """The check above can fail: the same invocation rejects a missing program."""
    assert install("--platform", "linux", "--no-socket-activation")[0] == 0
    service = unit_dir(home) / "openmemoryd.service"
    text = service.read_text()
    service.write_text(text.replace(daemon_program()[0], "/nonexistent/openmemoryd", 1))
    verified = systemd_verify(home, service)
    assert verified.returncode != 0
    assert "/nonexistent/openmemoryd" in verified.stderr
