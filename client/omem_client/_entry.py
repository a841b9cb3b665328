"""The ``omem-client`` console script: the lean path first, else the full CLI.

The command line is read (`_lean_args`, standard library only) before
anything else loads. On the lean path msgspec is kept from importing
``typing_extensions`` (a third of msgspec's import time): msgspec only
uses it for ``Required``/``NotRequired`` in TypedDicts and falls back to
``typing`` without it, and no wire type uses either. The full CLI needs
it (typer does), so there nothing is changed.
"""

from __future__ import annotations

import sys


def main() -> None:
    """Console-script entry point."""
    from omem_client._lean_args import parse

    plan = parse(sys.argv[1:])
    if plan is not None:
        # None in sys.modules makes `import typing_extensions` fail at once,
        # which msgspec expects and handles (see the module docstring).
        sys.modules.setdefault("typing_extensions", None)  # type: ignore[arg-type]
        from omem_client import _lean

        _lean.run(plan)
        return
    from omem_client.cli import main as full_cli

    full_cli()
