"""``python -m openmemoryd`` is the ``openmemoryd`` command."""

from __future__ import annotations

from openmemoryd.cli import main

main()
