"""CLI start-up: what a shell script pays per ``omem-client`` call.

Scripts call ``omem-client search|get|append|status`` in loops, and the
daemon answers in a few milliseconds, so the cost of a call is mostly the
process: interpreter, imports, connect. This times whole processes against
a keyword-only daemon with a small workspace (its answer is not what is
measured) and reports each command's median wall time and its ratio to a
bare ``python -c pass`` of the same interpreter, measured alternately in
the same run (ABBA order, so load drifts cancel). ``sync`` is timed too: it
takes the full command-line framework (typer), which the four hot commands
skip.

Run from the repository root::

    python -m bench.cli_startup [--runs 30] [--json PATH]

Progress goes to stderr; stdout is a Markdown table to paste.
"""

from __future__ import annotations

import argparse
import compileall
import json
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path

from bench.daemon import BenchDaemon, embedder_toml
from bench.search_latency import _wall_ns, cli_command, machine_info

WARMUP = 3
COMMANDS: dict[str, list[str]] = {
    "search": ["search", "ferry", "timetable"],
    "search (JSON reply)": ["search", "ferry", "timetable", "--json"],
    "get": ["get", "MEMORY.md", "--from", "1", "--lines", "5"],
    "append": ["append", "--path", "memory/startup.md", "a line from the start-up bench"],
    "status": ["status"],
    "sync (full CLI)": ["sync"],
}


def compile_client() -> None:
    """Bring the client's and the protocol's bytecode up to date, as an install
    has it: a process started with PYTHONDONTWRITEBYTECODE (or from a tree
    edited since its last run) would otherwise compile every changed module
    anew each time, and time that instead of the command."""
    import omem_client
    import omem_protocol

    for package in (omem_client, omem_protocol):
        compileall.compile_dir(Path(package.__path__[0]), quiet=1)


def measure(runs: int) -> dict[str, object]:
    """Median wall ms per command and for ``python -c pass``, and their ratios."""
    compile_client()
    cli = cli_command()
    python = [sys.executable, "-c", "pass"]
    with BenchDaemon(config_toml=embedder_toml("none")) as daemon:
        daemon.start()
        with daemon.client() as client:
            for n in range(20):
                client.append(f"Ferry note {n}: the timetable changes in spring.")
        env = daemon.env
        for _ in range(WARMUP):
            for args in COMMANDS.values():
                _wall_ns([*cli, *args], env)
            _wall_ns(python, env)
        command_ms: dict[str, list[float]] = {name: [] for name in COMMANDS}
        python_ms: list[float] = []
        for i in range(runs):
            print(f"[cli-startup] round {i + 1}/{runs}", file=sys.stderr, flush=True)
            for name, args in COMMANDS.items():
                pair = [(name, [*cli, *args]), ("python", python)]
                for label, command in pair if i % 2 == 0 else reversed(pair):
                    ms = _wall_ns(command, env) / 1e6
                    (python_ms if label == "python" else command_ms[name]).append(ms)
    python_p50 = statistics.median(python_ms)
    return {
        "runs": runs,
        "python_c_pass_p50_ms": round(python_p50, 1),
        "commands": {
            name: {
                "p50_ms": round(statistics.median(values), 1),
                "over_python_p50": round(statistics.median(values) / python_p50, 2),
            }
            for name, values in command_ms.items()
        },
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.cli_startup", description=__doc__)
    parser.add_argument("--runs", type=int, default=30, help="timed rounds (default 30)")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args(argv)
    results = measure(args.runs)
    command = f"python -m bench.cli_startup --runs {args.runs}"
    report = {"command": command, "machine": machine_info(), "results": results}
    print(f"`{command}`\n")
    print(f"`python -c pass` p50: {results['python_c_pass_p50_ms']} ms (same run, alternating)\n")
    print("| command | p50 ms | / `python -c pass` |")
    print("|---|---:|---:|")
    commands = results["commands"]
    assert isinstance(commands, dict)
    for name, figures in commands.items():
        print(f"| `omem-client {name}` | {figures['p50_ms']} | {figures['over_python_p50']}x |")
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
