"""Every command's help shows what its docstring and options say: typer reads
them as Rich markup, where a bracketed word (``[chat]``, the config section)
is a style tag and silently vanishes ("the daemon's chat model ()")."""

from __future__ import annotations

import re

import pytest
import typer
from typer.core import TyperCommand, TyperGroup
from typer.testing import CliRunner

from omem_client.cli import app as client_app
from openmemoryd.cli import app as daemon_app

# A config section or key in brackets, as the help texts name them.
_BRACKETED = re.compile(r"(?<!\\)\[([a-z][a-z_.]*)\]")


def _commands(app: typer.Typer) -> list[tuple[str, TyperCommand]]:
    group = typer.main.get_command(app)
    assert isinstance(group, TyperGroup)
    return sorted(group.commands.items())  # type: ignore[arg-type]


def _texts(command: TyperCommand) -> list[str]:
    """The command's own help and each option's and argument's."""
    return [command.help or ""] + [getattr(p, "help", None) or "" for p in command.params]


@pytest.mark.parametrize("app", [client_app, daemon_app], ids=["omem-client", "openmemoryd"])
def test_no_help_text_has_a_bracketed_word_rich_would_eat(app: typer.Typer) -> None:
    eaten = [
        (name, found)
        for name, command in _commands(app)
        for text in _texts(command)
        for found in _BRACKETED.findall(text)
    ]
    assert eaten == []


@pytest.mark.parametrize(
    ("app", "command", "shown"),
    [
        (client_app, "compact", "chat model ([chat])"),
        (daemon_app, "configure", "updates only [embedding]"),
    ],
)
def test_an_escaped_section_is_shown_in_the_help(
    app: typer.Typer, command: str, shown: str
) -> None:
    result = CliRunner().invoke(app, [command, "--help"], env={"COLUMNS": "300"})
    assert result.exit_code == 0, result.output
    assert shown in " ".join(result.output.split())
