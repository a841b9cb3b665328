"""``python -m bench``: run every benchmark (see `bench.suite`)."""

from __future__ import annotations

import sys

from bench.suite import main

# Guarded: bench.load's client processes are spawned, and spawn re-imports this module.
if __name__ == "__main__":
    sys.exit(main())
