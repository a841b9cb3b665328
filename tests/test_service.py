"""Service-manager integration: sd_notify readiness and the unit templates."""

from __future__ import annotations

import configparser
import plistlib
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import Daemon, Env

ROOT = Path(__file__).resolve().parents[1]
PLIST = "dev.openmemory.openmemoryd.plist"


@pytest.mark.e2e
def test_daemon_reports_ready_then_stopping_to_systemd(env: Env) -> None:
    notify_path = env.socket_dir / "notify"
    receiver = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    receiver.bind(str(notify_path))
    receiver.settimeout(20)
    daemon = Daemon(env)
    env_vars = env.vars
    env_vars["NOTIFY_SOCKET"] = str(notify_path)
    log = daemon.log_path.open("ab")
    daemon.proc = subprocess.Popen(
        [sys.executable, "-m", "openmemoryd", "run"], env=env_vars, stdout=log, stderr=log
    )
    log.close()
    try:
        ready = receiver.recv(4096).decode()
        assert ready.startswith("READY=1")
        assert str(env.socket) in ready
        # READY comes only once clients are served
        assert daemon.cli("status").returncode == 0
        daemon.proc.terminate()
        assert receiver.recv(4096) == b"STOPPING=1"
        assert daemon.proc.wait(20) == 0
    finally:
        if daemon.proc.poll() is None:
            daemon.proc.kill()
        receiver.close()


def test_systemd_unit_is_a_notify_user_service() -> None:
    unit = configparser.ConfigParser(strict=False, interpolation=None)
    unit.read(ROOT / "systemd" / "openmemoryd.service")
    service = unit["Service"]
    assert service["Type"] == "notify"
    assert service["ExecStart"].endswith("openmemoryd run")
    assert service["Restart"] == "on-failure"
    assert service["RuntimeDirectory"] == "openmemory"
    assert service["RuntimeDirectoryMode"] == "0700"
    # kept when the service stops: with socket activation it holds systemd's socket
    assert service["RuntimeDirectoryPreserve"] == "yes"
    assert unit["Install"]["WantedBy"] == "default.target"


def test_systemd_socket_unit_listens_where_clients_look_and_only_for_us() -> None:
    unit = configparser.ConfigParser(strict=False, interpolation=None)
    unit.read(ROOT / "systemd" / "openmemoryd.socket")
    listen = unit["Socket"]
    assert listen["ListenStream"] == "%t/openmemory/openmemoryd.sock"  # the default socket
    assert listen["SocketMode"] == "0600"
    assert listen["DirectoryMode"] == "0700"
    assert listen["Service"] == "openmemoryd.service"
    assert unit["Install"]["WantedBy"] == "sockets.target"


@pytest.mark.parametrize(
    "copy",
    ["systemd/openmemoryd.service", "systemd/openmemoryd.socket", "launchd/" + PLIST],
)
def test_the_hand_install_copies_match_the_shipped_templates(copy: str) -> None:
    shipped = ROOT / "daemon" / "openmemoryd" / "service" / "units" / Path(copy).name
    assert (ROOT / copy).read_bytes() == shipped.read_bytes(), (
        f"{copy} and {shipped.relative_to(ROOT)} must stay identical; copy one over the other"
    )


def test_launchd_plist_parses_and_has_the_keys_launchd_needs() -> None:
    with (ROOT / "launchd" / PLIST).open("rb") as handle:
        plist = plistlib.load(handle)
    assert plist["Label"] == "dev.openmemory.openmemoryd"
    assert plist["ProgramArguments"][-1] == "run"
    assert Path(plist["ProgramArguments"][0]).is_absolute()
    assert plist["RunAtLoad"] is True
    assert plist["KeepAlive"] == {"SuccessfulExit": False}
