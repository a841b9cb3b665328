"""The JSON every benchmark writes: what ran, on what machine, and what it found.

One shape for all of them, so `bench.suite` and `bench.plots` read any part's
file the same way.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any


def write_report(
    path: Path,
    benchmark: str,
    *,
    command: str,
    argv: Sequence[str],
    machine: Mapping[str, Any],
    results: Any,
) -> None:
    """Write the report to *path* and say so on stderr."""
    report = {
        "benchmark": benchmark,
        "command": command,
        "argv": list(argv),
        "machine": dict(machine),
        "results": results,
    }
    path.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"[{benchmark}] wrote {path}", file=sys.stderr, flush=True)
