"""The docs stay true: the config example loads, every command is documented."""

from __future__ import annotations

import re
from pathlib import Path

import msgspec

from omem_client.cli import app as client_app
from openmemoryd.cli import app as daemon_app
from openmemoryd.config import FileConfig, reference

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text("utf-8")
CONFIGURATION = (ROOT / "docs" / "configuration.md").read_text("utf-8")
CLI = (ROOT / "docs" / "cli.md").read_text("utf-8")
AGENTS = (ROOT / "docs" / "agents.md").read_text("utf-8")


def test_the_config_example_is_a_valid_config() -> None:
    blocks = re.findall(r"```toml\n(.*?)```", CONFIGURATION, re.S)
    assert blocks, "docs/configuration.md has no TOML example"
    for block in blocks:
        config = msgspec.toml.decode(block.encode(), type=FileConfig)  # unknown keys would raise
        assert config.search.limit >= 1


def test_the_config_example_shows_the_defaults() -> None:
    block = re.findall(r"```toml\n(.*?)```", CONFIGURATION, re.S)[0]
    documented = msgspec.toml.decode(block.encode(), type=FileConfig)
    defaults = FileConfig()
    assert documented.search == defaults.search
    assert documented.index == defaults.index
    assert documented.server == defaults.server
    assert documented.embedding.local == defaults.embedding.local
    assert documented.embedding.provider == defaults.embedding.provider


def _commands(app: object) -> list[str]:
    return [c.name or c.callback.__name__ for c in app.registered_commands]  # type: ignore[attr-defined, union-attr]


def test_every_cli_command_is_in_the_readme_and_the_cli_reference() -> None:
    for name in _commands(client_app):
        assert f"| `{name}" in README, f"omem-client {name} is missing from the README's table"
        assert f"| `{name}" in CLI, f"omem-client {name} is missing from docs/cli.md"
    for name in _commands(daemon_app):
        assert f"`openmemoryd {name}`" in README, f"openmemoryd {name} is not in the README"


def test_the_readme_is_a_front_door() -> None:
    assert len(README.splitlines()) <= 350
    for link in re.findall(r"\]\((docs/[^)#]+)", README):
        assert (ROOT / link).is_file(), f"README links to a missing {link}"


def test_the_config_reference_is_generated_from_the_schema() -> None:
    expected = reference.splice(CONFIGURATION, reference.render_markdown())
    assert expected == CONFIGURATION, (
        "run: python -m openmemoryd.config.reference --write docs/configuration.md"
    )


def test_every_config_key_is_described_and_in_the_schema() -> None:
    found = list(reference.keys())  # raises on a key without a description
    assert len(found) > 60
    assert len({(k.section, k.name) for k in found}) == len(found)
    schema = reference.json_schema()
    search = schema["$defs"]["SearchSettings"]["properties"]["min_score"]
    assert search["description"].startswith("Hits whose strongest signal")
    assert (search["minimum"], search["maximum"], search["default"]) == (0.0, 1.0, 0.35)


def test_the_agents_guide_lists_exactly_the_tools_of_every_mcp_profile() -> None:
    """`memory_compact_check` was served but missing from the guide's list.

    The default profile's tools are the paragraph that begins "The tools
    are"; each other profile's are the ``memory_x(...)`` of its row in the
    profile table.
    """
    from omem_client._mcp_profiles import DEFAULT_PROFILE, PROFILES

    paragraph = AGENTS.split("\nThe tools are ", 1)[1].split("\n\n", 1)[0]
    documented = {DEFAULT_PROFILE: set(re.findall(r"`(memory_\w+)`", paragraph))}
    for row in re.findall(r"^\| `([\w-]+)` \| (.*) \|$", AGENTS, re.MULTILINE):
        name, tools = row
        if name != DEFAULT_PROFILE:
            documented[name] = set(re.findall(r"`(memory_\w+)\(", tools))
    assert documented == {
        name: {tool.name for tool in profile.tools} for name, profile in PROFILES.items()
    }
