"""Every command's help shows what its docstring and options say: typer reads
them as Rich markup, where a bracketed word (``[chat]``, the config section)
is a style tag and silently vanishes ("the daemon's chat model ()")."""

from __future__ import annotations

import inspect
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
        (daemon_app, "configure", "Updates only [embedding]"),
    ],
)
def test_an_escaped_section_is_shown_in_the_help(
    app: typer.Typer, command: str, shown: str
) -> None:
    result = CliRunner().invoke(app, [command, "--help"], env={"COLUMNS": "300"})
    assert result.exit_code == 0, result.output
    assert shown in " ".join(result.output.split())


def _all_commands(app: typer.Typer) -> list[tuple[str, TyperCommand | TyperGroup]]:
    """Every command and subcommand (``tasks add``), by its full name."""
    found: list[tuple[str, TyperCommand | TyperGroup]] = []

    def walk(group: TyperGroup, prefix: str) -> None:
        for name, command in sorted(group.commands.items()):
            found.append((prefix + name, command))  # type: ignore[arg-type]
            if isinstance(command, TyperGroup):
                walk(command, f"{prefix}{name} ")

    root = typer.main.get_command(app)
    assert isinstance(root, TyperGroup)
    walk(root, "")
    return found


def _listed(command: TyperCommand | TyperGroup) -> str:
    """The text a command list shows for *command*, chosen as typer chooses
    it: ``short_help``, else the first paragraph of its help. In the rich
    markup mode typer keeps that paragraph's single line breaks, so a
    docstring whose first sentence wraps in the source was shown broken
    mid-sentence ("(defaults on" / "Enter)")."""
    text = command.short_help or command.help or ""
    return inspect.cleandoc(text).split("\n\n")[0].strip()


_PAIRS = (("(", ")"), ("[", "]"), ("{", "}"))


@pytest.mark.parametrize("app", [client_app, daemon_app], ids=["omem-client", "openmemoryd"])
def test_every_short_help_is_one_complete_sentence(app: typer.Typer) -> None:
    bad = []
    for name, command in _all_commands(app):
        listed = _listed(command)
        balanced = all(listed.count(a) == listed.count(b) for a, b in _PAIRS)
        if (
            not listed
            or "\n" in listed
            or not listed.endswith((".", ")"))
            or not balanced
            or listed.count("`") % 2
        ):
            bad.append((name, listed))
    assert bad == []


@pytest.mark.parametrize(
    ("app", "args"),
    [
        (client_app, []),
        (client_app, ["tasks"]),
        (daemon_app, []),
    ],
    ids=["omem-client", "omem-client tasks", "openmemoryd"],
)
def test_a_wide_command_list_shows_each_command_on_one_line(
    app: typer.Typer, args: list[str]
) -> None:
    """What a person sees in ``--help``: on a terminal wide enough for every
    description, no row goes on to a second line, and each ends a sentence."""
    result = CliRunner().invoke(app, [*args, "--help"], env={"COLUMNS": "300"})
    assert result.exit_code == 0, result.output
    panel = result.output.split("Commands ")[1].split("╰")[0].splitlines()[1:]
    rows = [line.strip("│ ") for line in panel]
    assert rows
    for row in rows:
        name, _, description = row.partition("  ")
        assert name, f"a continued row: {row!r}"
        assert description.strip().endswith((".", ")")), row
