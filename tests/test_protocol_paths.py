"""Socket and config path resolution, identical for daemon and client."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from omem_client._discovery import discover_socket
from omem_protocol import default_config_path, resolve_socket_path, socket_path_problem


def test_explicit_socket_env_wins(tmp_path: Path) -> None:
    env = {"OPENMEMORY_SOCKET": str(tmp_path / "s.sock"), "XDG_RUNTIME_DIR": str(tmp_path)}
    assert resolve_socket_path(env, configured=Path("/elsewhere.sock")) == tmp_path / "s.sock"


def test_configured_socket_beats_the_runtime_dir(tmp_path: Path) -> None:
    env = {"XDG_RUNTIME_DIR": str(tmp_path)}
    assert resolve_socket_path(env, configured=Path("/x/y.sock")) == Path("/x/y.sock")


def test_runtime_dir_default(tmp_path: Path) -> None:
    assert resolve_socket_path({"XDG_RUNTIME_DIR": str(tmp_path)}) == (
        tmp_path / "openmemory" / "openmemoryd.sock"
    )


def test_missing_or_relative_runtime_dir_falls_back_to_a_short_tmp_path(tmp_path: Path) -> None:
    expected = Path(f"/tmp/openmemory-{os.getuid()}/openmemoryd.sock")
    assert resolve_socket_path({}) == expected
    assert resolve_socket_path({"XDG_RUNTIME_DIR": "relative/dir"}) == expected
    assert resolve_socket_path({"XDG_RUNTIME_DIR": str(tmp_path / "missing")}) == expected


def test_too_long_socket_paths_are_explained() -> None:
    assert socket_path_problem(Path("/tmp/x.sock")) is None
    problem = socket_path_problem(Path("/tmp/" + "d" * 200 + "/s.sock"))
    assert problem is not None
    assert "OPENMEMORY_SOCKET" in problem


@pytest.mark.skipif(sys.platform == "darwin", reason="XDG layout is Linux's")
def test_config_path_follows_xdg(tmp_path: Path) -> None:
    assert default_config_path({"XDG_CONFIG_HOME": str(tmp_path)}) == (
        tmp_path / "openmemory" / "config.toml"
    )
    assert default_config_path({"OPENMEMORY_CONFIG": "~/c.toml"}) == Path.home() / "c.toml"
    assert default_config_path({}) == Path.home() / ".config" / "openmemory" / "config.toml"


@pytest.mark.parametrize(
    "text", [b'socket = "/x/y.sock"\n', b"socket = [\n", b'socket = "/x/caf\xe9.sock"\n']
)
def test_the_client_reads_the_socket_from_the_config_or_falls_back(
    tmp_path: Path, text: bytes
) -> None:
    """A config the client cannot read (not TOML, not UTF-8) is the daemon's
    to report; the client falls back to the default socket, never raises."""
    config = tmp_path / "config.toml"
    config.write_bytes(text)
    env = {"OPENMEMORY_CONFIG": str(config), "XDG_RUNTIME_DIR": str(tmp_path)}
    readable = text.startswith(b'socket = "/x/y')
    expected = Path("/x/y.sock") if readable else resolve_socket_path(env)
    assert discover_socket(environ=env) == expected
