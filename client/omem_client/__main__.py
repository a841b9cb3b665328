"""``python -m omem_client`` is the ``omem-client`` command."""

from __future__ import annotations

from omem_client._entry import main

main()
