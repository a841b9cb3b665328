"""The JSON every benchmark writes: what ran, on what machine, and what it found.

One shape for all of them, so `bench.suite` and `bench.plots` read any part's
file the same way.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any


def load_average() -> list[float]:
    """The 1/5/15-minute load averages, rounded: every report records them at
    its start and end, since other work on the machine moves every figure."""
    return [round(x, 2) for x in os.getloadavg()]


def progress(label: str = "") -> Callable[[str], None]:
    """A part's progress printer: each message on stderr at once, after
    ``[label] `` when there is one. Stdout is kept for the Markdown report,
    and a run of many minutes must show where it is as it goes."""
    prefix = f"[{label}] " if label else ""

    def say(message: str) -> None:
        print(prefix + message, file=sys.stderr, flush=True)

    return say


def invocation(module: str, argv: Sequence[str] | None) -> tuple[list[str], str]:
    """A part's arguments (*argv*, or the process's own when None) and the
    command that reproduces the run, as every report records them."""
    args = list(sys.argv[1:] if argv is None else argv)
    return args, shlex.join([sys.executable, "-m", module, *args])


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


def publish(
    benchmark: str,
    render: Callable[[dict[str, Any]], str],
    results: Any,
    *,
    command: str,
    argv: Sequence[str],
    machine: dict[str, Any],
    json_path: Path | None,
) -> None:
    """A part's ending: record the load at the end in *machine*, print the
    Markdown table *render* makes of it, and write the JSON if asked to."""
    machine["load_average_end"] = load_average()
    print(render(machine))
    if json_path is not None:
        write_report(
            json_path, benchmark, command=command, argv=argv, machine=machine, results=results
        )
