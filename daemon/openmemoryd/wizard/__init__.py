"""The setup wizard behind `openmemoryd init` and `openmemoryd configure`."""

from __future__ import annotations

from openmemoryd.wizard.flow import McpHosts, Preset, run_configure, run_init
from openmemoryd.wizard.prompts import DefaultPrompter, Option, Prompter, TerminalPrompter
from openmemoryd.wizard.questions import PROVIDER_NAMES

__all__ = [
    "PROVIDER_NAMES",
    "DefaultPrompter",
    "McpHosts",
    "Option",
    "Preset",
    "Prompter",
    "TerminalPrompter",
    "run_configure",
    "run_init",
]
