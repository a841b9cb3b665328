"""The ``omem-client`` console script: the lean path first, else the full CLI.

Kept to the standard library so that deciding costs nothing; `_lean` runs
the commands scripts call in loops without importing typer.
"""

from __future__ import annotations

import sys


def main() -> None:
    """Console-script entry point."""
    from omem_client import _lean

    if _lean.run(sys.argv[1:]):
        return
    from omem_client.cli import main as full_cli

    full_cli()
