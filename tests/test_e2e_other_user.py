"""Only the user who runs openmemoryd may use it.

Two independent guards, each tested with the real client run as another uid
(``nobody``) against the real daemon: file permissions (a 0700 directory, a
0600 socket) stop other users before they reach the daemon, and where those
have been loosened the daemon itself refuses the peer by its credentials
(SO_PEERCRED, Linux).
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import Daemon

pytestmark = pytest.mark.e2e

PEER_REFUSAL = "only the user who runs openmemoryd may connect"


def as_other_user() -> list[str]:
    """The command prefix that runs a program as ``nobody``; skips if impossible."""
    if os.geteuid() != 0:
        pytest.skip("running the client as another user needs root")
    if not sys.platform.startswith("linux"):
        pytest.skip("the peer-credential check (SO_PEERCRED) is Linux only")
    try:
        nobody = pwd.getpwnam("nobody")
    except KeyError:
        pytest.skip("there is no `nobody` user to run the client as")
    if not _readable_by_others(Path(sys.executable).parent):
        pytest.skip(f"`nobody` cannot run {sys.executable}")
    if setpriv := shutil.which("setpriv"):
        ids = [f"--reuid={nobody.pw_uid}", f"--regid={nobody.pw_gid}", "--clear-groups"]
        return [setpriv, *ids, "--"]
    if runuser := shutil.which("runuser"):
        return [runuser, "-u", "nobody", "--"]
    pytest.skip("neither setpriv nor runuser is installed")


def _readable_by_others(directory: Path) -> bool:
    return all(os.stat(part).st_mode & 0o005 == 0o005 for part in [directory, *directory.parents])


def client_as_other_user(daemon: Daemon, *args: str) -> subprocess.CompletedProcess[str]:
    environ = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": "/",
        "OPENMEMORY_SOCKET": str(daemon.env.socket),
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    return subprocess.run(
        [*as_other_user(), sys.executable, "-m", "omem_client", *args],
        env=environ,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_other_users_cannot_reach_the_socket(daemon: Daemon) -> None:
    # As the daemon leaves it: the 0700 directory stops them first.
    hidden = client_as_other_user(daemon, "status")
    assert hidden.returncode != 0
    assert "permission denied" in hidden.stderr
    # A directory others may traverse: the 0600 socket still stops them.
    os.chmod(daemon.env.socket_dir, 0o711)
    private = client_as_other_user(daemon, "search", "anything")
    assert private.returncode != 0
    assert "permission denied" in private.stderr
    assert PEER_REFUSAL not in private.stderr  # they never got as far as the daemon
    assert daemon.cli("status").returncode == 0


def test_the_daemon_refuses_another_uid_that_gets_through(daemon: Daemon) -> None:
    daemon.cli("append", "the owner's secret")
    os.chmod(daemon.env.socket_dir, 0o711)
    os.chmod(daemon.env.socket, 0o666)  # as if file permissions had been loosened
    intruder = client_as_other_user(daemon, "search", "secret")
    assert intruder.returncode != 0
    assert PEER_REFUSAL in intruder.stderr
    assert "the owner's secret" not in intruder.stdout
    nobody = pwd.getpwnam("nobody").pw_uid
    assert f"refused a connection from uid {nobody}" in daemon.log()
    # The owner is still served.
    assert "the owner's secret" in daemon.cli("search", "secret").stdout
