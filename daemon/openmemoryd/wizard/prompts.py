"""How the wizard asks: a terminal, or nobody (defaults).

The questions are written once against `Prompter`; `openmemoryd init` picks
`TerminalPrompter` when a person is at a terminal and `DefaultPrompter`
otherwise (``--yes``, a pipe, systemd, CI), so a script gets exactly the
answers a person would get by pressing Enter at every question.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import typer


@dataclass(frozen=True, slots=True)
class Option:
    """One answer of a multiple-choice question: what is stored, what is shown."""

    value: str
    label: str


class Prompter(Protocol):
    """Asks one question at a time and returns the answer as text."""

    def say(self, text: str = "") -> None:
        """Tell the person something that needs no answer."""

    def text(self, question: str, default: str) -> str:
        """A free-text answer; Enter takes *default*."""

    def choose(self, question: str, options: Sequence[Option], default: str) -> str:
        """The ``value`` of one of *options*; Enter takes *default*."""

    def secret(self, question: str) -> str:
        """A hidden answer (an API key); Enter means none."""


class DefaultPrompter:
    """Answers every question with its default and says nothing: the
    non-interactive wizard, so scripts and the terminal share one code path."""

    def say(self, text: str = "") -> None:
        pass

    def text(self, question: str, default: str) -> str:
        return default

    def choose(self, question: str, options: Sequence[Option], default: str) -> str:
        return default

    def secret(self, question: str) -> str:
        return ""


class TerminalPrompter:
    """Numbered menus and prompts on the controlling terminal (click)."""

    def say(self, text: str = "") -> None:
        typer.echo(text)

    def text(self, question: str, default: str) -> str:
        answer: str = typer.prompt(f"? {question}", default=default, show_default=True)
        return answer.strip() or default

    def choose(self, question: str, options: Sequence[Option], default: str) -> str:
        typer.echo(f"? {question}")
        default_index = 1
        for index, option in enumerate(options, start=1):
            marker = "›" if option.value == default else " "
            if option.value == default:
                default_index = index
            typer.echo(f"  {marker} {index}) {option.label}")
        while True:
            raw: str = typer.prompt("  choice", default=str(default_index), show_default=True)
            picked = _pick(raw.strip(), options)
            if picked is not None:
                return picked
            typer.echo(f"  please enter a number from 1 to {len(options)} or a name shown above")

    def secret(self, question: str) -> str:
        answer: str = typer.prompt(f"? {question}", default="", hide_input=True, show_default=False)
        return answer.strip()


def _pick(raw: str, options: Sequence[Option]) -> str | None:
    """The option *raw* names, by its number or its value (any case)."""
    if raw.isdigit() and 1 <= int(raw) <= len(options):
        return options[int(raw) - 1].value
    lowered = raw.lower()
    return next((option.value for option in options if option.value.lower() == lowered), None)
