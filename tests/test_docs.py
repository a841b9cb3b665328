"""The README stays true: its config example loads, every command is documented."""

from __future__ import annotations

import re
from pathlib import Path

import msgspec

from omem_client.cli import app as client_app
from openmemoryd.cli import app as daemon_app
from openmemoryd.config import FileConfig, reference

README = (Path(__file__).resolve().parents[1] / "README.md").read_text("utf-8")


def test_the_config_example_is_a_valid_config() -> None:
    blocks = re.findall(r"```toml\n(.*?)```", README, re.S)
    assert blocks, "README has no TOML example"
    for block in blocks:
        config = msgspec.toml.decode(block.encode(), type=FileConfig)  # unknown keys would raise
        assert config.search.limit >= 1


def test_the_config_example_shows_the_defaults() -> None:
    block = re.findall(r"```toml\n(.*?)```", README, re.S)[0]
    documented = msgspec.toml.decode(block.encode(), type=FileConfig)
    defaults = FileConfig()
    assert documented.search == defaults.search
    assert documented.index == defaults.index
    assert documented.server == defaults.server
    assert documented.embedding.local == defaults.embedding.local
    assert documented.embedding.provider == defaults.embedding.provider


def _commands(app: object) -> list[str]:
    return [c.name or c.callback.__name__ for c in app.registered_commands]  # type: ignore[attr-defined, union-attr]


def test_every_cli_command_is_in_the_readme() -> None:
    for name in _commands(client_app):
        assert f"| `{name}" in README, f"omem-client {name} is missing from the CLI table"
    for name in _commands(daemon_app):
        assert f"`openmemoryd {name}`" in README, f"openmemoryd {name} is not documented"


def test_the_config_reference_is_generated_from_the_schema() -> None:
    expected = reference.splice(README, reference.render_markdown())
    assert expected == README, "run: python -m openmemoryd.config.reference --write README.md"


def test_every_config_key_is_described_and_in_the_schema() -> None:
    found = list(reference.keys())  # raises on a key without a description
    assert len(found) > 60
    assert len({(k.section, k.name) for k in found}) == len(found)
    schema = reference.json_schema()
    search = schema["$defs"]["SearchSettings"]["properties"]["min_score"]
    assert search["description"].startswith("Hits whose strongest signal")
    assert (search["minimum"], search["maximum"], search["default"]) == (0.0, 1.0, 0.35)
