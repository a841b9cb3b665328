"""Configuration: file, environment and flags, in that order of strength."""

from __future__ import annotations

from pathlib import Path

import pytest

from openmemoryd.config import Overrides, load_config
from openmemoryd.errors import ConfigError


def write_config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "cfg" / "config.toml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(text)
    return path


def test_defaults_without_a_config_file(tmp_path: Path) -> None:
    config = load_config(environ={"XDG_CONFIG_HOME": str(tmp_path)})
    assert config.config_path is None
    assert config.workspace == Path.home() / ".openmemory" / "workspace"
    assert config.search.limit == 6
    assert config.search.min_score == 0.35
    assert config.index.chunk_tokens == 175  # measured on LoCoMo; the seeds said 400/80
    assert config.index.chunk_overlap == 35
    assert config.search.snippet_chars == 700


def test_file_values_and_paths_relative_to_the_file(tmp_path: Path) -> None:
    path = write_config(
        tmp_path,
        'workspace = "ws"\nstate_dir = "~/st"\nsocket = "s.sock"\nextra_paths = ["notes", " "]\n'
        "[search]\nlimit = 9\n",
    )
    config = load_config(environ={"OPENMEMORY_CONFIG": str(path)})
    assert config.config_path == path
    assert config.workspace == path.parent / "ws"
    assert config.state_dir == Path.home() / "st"
    assert config.socket == path.parent / "s.sock"
    assert config.extra_paths == (path.parent / "ws" / "notes",)
    assert config.search.limit == 9


def test_environment_beats_file_and_flags_beat_environment(tmp_path: Path) -> None:
    path = write_config(tmp_path, 'workspace = "/from/file"\nsocket = "/from/file.sock"\n')
    env = {
        "OPENMEMORY_CONFIG": str(path),
        "OPENMEMORY_WORKSPACE": "/from/env",
        "OPENMEMORY_SOCKET": "/from/env.sock",
    }
    config = load_config(environ=env)
    assert (config.workspace, config.socket) == (Path("/from/env"), Path("/from/env.sock"))
    config = load_config(
        Overrides(workspace=Path("/from/flag"), socket=Path("/f.sock")), environ=env
    )
    assert (config.workspace, config.socket) == (Path("/from/flag"), Path("/f.sock"))


def test_config_flag_beats_the_config_env(tmp_path: Path) -> None:
    a = write_config(tmp_path, "[search]\nlimit = 2\n")
    b = tmp_path / "b.toml"
    b.write_text("[search]\nlimit = 3\n")
    config = load_config(Overrides(config=b), environ={"OPENMEMORY_CONFIG": str(a)})
    assert config.search.limit == 3


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[serch]\nlimit = 3\n", "unknown field `serch`"),
        ("[search]\nmin_score = 3\n", r"<= 1.0 - at `\$.search.min_score`"),
        ("[index]\nchunk_tokens = 1\n", r"chunk_tokens"),
        ("log_level = 'loud'\n", "log_level"),
        ("[search]\nseasons = 'east'\n", r"Invalid enum value 'east' - at `\$.search.seasons`"),
        ("this is = not toml [", "invalid config file"),
    ],
)
def test_invalid_config_is_reported_precisely(tmp_path: Path, text: str, message: str) -> None:
    path = write_config(tmp_path, text)
    with pytest.raises(ConfigError, match=message):
        load_config(environ={"OPENMEMORY_CONFIG": str(path)})


def test_a_config_that_is_not_utf8_is_reported_not_raised(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_bytes(b'workspace = "~/caf\xe9"\n')  # saved as Latin-1
    with pytest.raises(ConfigError, match=r"not UTF-8 \(the byte 0xE9 at offset 18\)"):
        load_config(environ={"OPENMEMORY_CONFIG": str(path)})


def test_an_explicit_config_that_does_not_exist_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not found"):
        load_config(environ={"OPENMEMORY_CONFIG": str(tmp_path / "missing.toml")})


def test_bad_log_level_from_the_environment(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="log level"):
        load_config(environ={"XDG_CONFIG_HOME": str(tmp_path), "OPENMEMORY_LOG_LEVEL": "chatty"})
