"""Search latency at 1k, 10k and 100k chunks: in the daemon, over the socket, per CLI process.

What is measured, for each workspace size N (``--sizes``, sections of
`bench.corpus`, each about one chunk):

* **index**: the daemon's own ``took_ms`` for its startup sync of the fresh
  workspace, and the chunk count it reports afterwards;
* **in-daemon search**: the ``took_ms`` the daemon puts in each search reply
  (from the request entering the engine to the result being built), over
  ``--queries`` searches sent one at a time on a single `Client` connection;
* **client round-trip**: the same searches timed in this process around
  ``client.search()``: encode, socket, daemon, decode;
* **``omem-client search``**: the wall time of a whole CLI process (spawn,
  interpreter start, imports, connect, handshake, search, print, exit);
* **``python -c pass``**: the wall time of a bare interpreter of the same
  venv, the floor any Python CLI pays. The two process kinds alternate, one
  pair per run, in ABBA order, so slow drifts of a noisy machine hit both
  alike; their ratio of medians is the figure to quote.

Every process is spawned by `subprocess.run` with stdout discarded; timings
use `time.perf_counter_ns`. p50 and p95 come from `statistics.quantiles`
(``method="inclusive"``). Corpus, queries and run order derive only from
``--seed``. Before measuring, a few searches and processes run untimed so
page cache, SQLite caches and the daemon's reader pool are warm, as they are
for an agent that searches often.

The 100k workspace (13,334 files, 55 MB) takes about 15 s to write and two
minutes to index on the project's 2-core machine; the whole default run
takes about 5 minutes.

Run from the repository root::

    python -m bench.search_latency [--sizes 1000,10000,100000] [--queries 300]
        [--cli-runs 40] [--seed 0] [--json PATH]

Progress goes to stderr; stdout is a Markdown table to paste.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from bench.corpus import generate_workspace, sample_queries
from bench.daemon import BenchDaemon, BenchDaemonError
from bench.report import invocation, load_average, progress
from omem_client import Client, OmemError, __version__

__all__ = [
    "SizeResult",
    "Summary",
    "cli_command",
    "machine_info",
    "main",
    "measure_size",
    "percentile",
    "render_table",
]

DEFAULT_SIZES: Final = (1000, 10000, 100000)
DEFAULT_QUERIES: Final = 300
DEFAULT_CLI_RUNS: Final = 40
WARMUP_SEARCHES: Final = 20
WARMUP_PROCESSES: Final = 3
PROCESS_TIMEOUT_S: Final = 60.0
NS_PER_MS: Final = 1_000_000


# ---------------------------------------------------------------- statistics


def percentile(values: Sequence[float], pct: int) -> float:
    """The *pct*-th percentile (1-99), interpolated as `statistics.quantiles` does."""
    if not 1 <= pct <= 99:
        raise ValueError("pct must be between 1 and 99")
    if not values:
        raise ValueError("no values")
    if len(values) == 1:
        return float(values[0])
    return statistics.quantiles(values, n=100, method="inclusive")[pct - 1]


@dataclass(frozen=True, slots=True)
class Summary:
    """Milliseconds; min and max are kept because a p95 of 40 runs is only the 3rd-worst."""

    n: int
    p50: float
    p95: float
    min: float
    max: float

    @classmethod
    def of_ms(cls, values: Sequence[float]) -> Summary:
        return cls(
            n=len(values),
            p50=round(percentile(values, 50), 4),
            p95=round(percentile(values, 95), 4),
            min=round(min(values), 4),
            max=round(max(values), 4),
        )

    @classmethod
    def of_ns(cls, values: Sequence[int]) -> Summary:
        return cls.of_ms([v / NS_PER_MS for v in values])


@dataclass(frozen=True, slots=True)
class SizeResult:
    """Everything measured for one workspace size."""

    sections: int
    files: int
    corpus_bytes: int
    chunks: int
    files_indexed: int
    index_bytes: int
    daemon_version: str
    ready_ms: float
    index_ms: float
    search_took: Summary
    search_round_trip: Summary
    searches_without_results: int
    cli_wall: Summary
    python_wall: Summary
    cli_over_python_p50: float
    cli_minus_python_paired_p50_ms: float


# ---------------------------------------------------------------- measuring


def cli_command() -> list[str]:
    """The installed ``omem-client`` next to this interpreter, as a shell would run it."""
    script = Path(sys.executable).with_name("omem-client")
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script)]
    return [sys.executable, "-m", "omem_client"]


def _wall_ns(command: Sequence[str], env: Mapping[str, str]) -> int:
    """Wall time of one process; a failure aborts the run rather than skewing it."""
    started = time.perf_counter_ns()
    done = subprocess.run(
        command,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        timeout=PROCESS_TIMEOUT_S,
        check=False,
    )
    elapsed = time.perf_counter_ns() - started
    if done.returncode != 0:
        stderr = done.stderr.decode("utf-8", errors="replace")
        raise RuntimeError(f"{shlex.join(command)} exited with {done.returncode}:\n{stderr}")
    return elapsed


def _check_cli(cli: Sequence[str], query: str, env: Mapping[str, str]) -> None:
    """One untimed CLI search that must print hits, so we never time an error path."""
    done = subprocess.run(
        [*cli, "search", query],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=PROCESS_TIMEOUT_S,
        check=False,
    )
    if done.returncode != 0 or not done.stdout.strip():
        raise RuntimeError(
            f"omem-client search {query!r} failed (exit {done.returncode}):\n"
            f"{done.stdout}{done.stderr}"
        )


def _measure_searches(
    client: Client, warmup: Sequence[str], queries: Sequence[str]
) -> tuple[list[float], list[int], int]:
    """(took_ms, round-trip ns, searches with no result) over one connection."""
    for query in warmup:
        client.search(query)
    took: list[float] = []
    round_trip: list[int] = []
    empty = 0
    for query in queries:
        started = time.perf_counter_ns()
        result = client.search(query)
        round_trip.append(time.perf_counter_ns() - started)
        took.append(result.took_ms)
        empty += not result.results
    return took, round_trip, empty


def _measure_processes(
    cli: Sequence[str], queries: Sequence[str], runs: int, env: Mapping[str, str]
) -> tuple[list[int], list[int]]:
    """(CLI ns, python ns), one of each per run, ABBA order so drift cancels."""
    python = [sys.executable, "-c", "pass"]
    for i in range(WARMUP_PROCESSES):
        _wall_ns([*cli, "search", queries[i % len(queries)]], env)
        _wall_ns(python, env)
    cli_ns: list[int] = []
    python_ns: list[int] = []
    for i in range(runs):
        search = [*cli, "search", queries[i % len(queries)]]
        if i % 2 == 0:
            cli_ns.append(_wall_ns(search, env))
            python_ns.append(_wall_ns(python, env))
        else:
            python_ns.append(_wall_ns(python, env))
            cli_ns.append(_wall_ns(search, env))
    return cli_ns, python_ns


_progress = progress()


def measure_size(
    sections: int, *, queries: int, cli_runs: int, seed: int, provider: str = "none"
) -> SizeResult:
    """Build an N-section workspace, index it in a fresh daemon, and time searches on it.

    With a *provider* other than ``none`` the searches are hybrid, and timing
    starts only once every chunk has its vector.
    """
    all_queries = sample_queries(WARMUP_SEARCHES + queries, seed=seed)
    warmup, measured = all_queries[:WARMUP_SEARCHES], all_queries[WARMUP_SEARCHES:]
    cli = cli_command()
    config = f'[embedding]\nprovider = "{provider}"\n'
    with BenchDaemon(config_toml=config) as daemon:
        _progress(f"[{sections} sections] writing the workspace in {daemon.root}")
        corpus = generate_workspace(daemon.workspace, sections, seed=seed)
        ready_s = daemon.start()
        _progress(f"[{sections} sections] daemon ready in {ready_s:.2f} s; indexing")
        startup = daemon.wait_indexed().last_sync
        if startup is None:
            raise BenchDaemonError("the daemon reported no startup sync")
        index_ms = startup.took_ms
        check = daemon.sync()
        if check.added or check.updated or check.removed or check.skipped:
            raise RuntimeError(f"the index was not complete after the startup sync: {check}")
        if provider != "none":
            _progress(f"[{sections} sections] waiting for every chunk's vector ({provider})")
            daemon.wait_vectors()
        status = daemon.status()
        _progress(
            f"[{sections} sections] {status.chunks} chunks in {status.files_indexed} files "
            f"indexed in {index_ms / 1000:.2f} s; {queries} searches"
        )
        with daemon.client() as client:
            took, round_trip, empty = _measure_searches(client, warmup, measured)
        _progress(f"[{sections} sections] {cli_runs} x (omem-client search, python -c pass)")
        _check_cli(cli, measured[0], daemon.env)
        cli_ns, python_ns = _measure_processes(cli, measured, cli_runs, daemon.env)
        code = daemon.stop()
        if code != 0:
            raise BenchDaemonError(f"openmemoryd exited with {code}:\n{daemon.log()}")
    cli_wall = Summary.of_ns(cli_ns)
    python_wall = Summary.of_ns(python_ns)
    paired = [(c - p) / NS_PER_MS for c, p in zip(cli_ns, python_ns, strict=True)]
    return SizeResult(
        sections=sections,
        files=corpus.files,
        corpus_bytes=corpus.bytes,
        chunks=status.chunks,
        files_indexed=status.files_indexed,
        index_bytes=status.index_bytes,
        daemon_version=status.daemon_version,
        ready_ms=round(ready_s * 1000, 1),
        index_ms=index_ms,
        search_took=Summary.of_ms(took),
        search_round_trip=Summary.of_ns(round_trip),
        searches_without_results=empty,
        cli_wall=cli_wall,
        python_wall=python_wall,
        cli_over_python_p50=round(cli_wall.p50 / python_wall.p50, 2),
        cli_minus_python_paired_p50_ms=round(statistics.median(paired), 2),
    )


# ---------------------------------------------------------------- reporting


def _cpu_model() -> str | None:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def machine_info() -> dict[str, Any]:
    """What a reader needs to judge the numbers: CPUs, load, versions, when."""
    affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    return {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "cpu_count": os.cpu_count(),
        "cpu_affinity": affinity,
        "cpu_model": _cpu_model(),
        "load_average": load_average(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "python_implementation": platform.python_implementation(),
        "python_executable": sys.executable,
        # PYTHONDONTWRITEBYTECODE and friends change what every process start costs.
        "python_env": {k: v for k, v in sorted(os.environ.items()) if k.startswith("PYTHON")},
        "openmemory": __version__,
    }


def _ms(value: float) -> str:
    if value < 10:
        return f"{value:.2f}"
    if value < 100:
        return f"{value:.1f}"
    return f"{value:.0f}"


def _pair(summary: Summary) -> str:
    return f"{_ms(summary.p50)} / {_ms(summary.p95)}"


def render_table(results: Sequence[SizeResult], machine: Mapping[str, Any], command: str) -> str:
    """Markdown: a context line, the table, and what n each column is over."""
    load = " ".join(f"{x:.2f}" for x in machine["load_average"])
    lines = [
        f"`{command}`",
        "",
        f"openmemory {machine['openmemory']}, Python {machine['python']}, "
        f"{machine['cpu_count']} CPUs ({machine['cpu_model'] or 'unknown CPU'}), "
        f"{machine['platform']}, load {load} at start, {machine['date']}",
        "",
        "| chunks | index s | in-daemon search p50 / p95 ms | client round-trip p50 / p95 ms "
        "| `omem-client search` p50 / p95 ms | `python -c pass` p50 / p95 ms "
        "| CLI / python p50 |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        lines.append(
            f"| {r.chunks:,} | {r.index_ms / 1000:.2f} | {_pair(r.search_took)} "
            f"| {_pair(r.search_round_trip)} | {_pair(r.cli_wall)} | {_pair(r.python_wall)} "
            f"| {r.cli_over_python_p50:.1f}x |"
        )
    if results:
        first = results[0]
        lines += [
            "",
            f"Searches: n={first.search_took.n} per size on one connection "
            f"(+{WARMUP_SEARCHES} warm-up); processes: n={first.cli_wall.n} of each kind "
            f"per size, alternating (+{WARMUP_PROCESSES} warm-up). "
            "Chunks as reported by `omem-client status`; index s is the daemon's startup sync. "
            f"Search mode: {machine.get('search_mode', 'keyword')}.",
        ]
    return "\n".join(lines)


def _report(
    results: Sequence[SizeResult],
    machine: Mapping[str, Any],
    command: str,
    argv: Sequence[str],
    settings: Mapping[str, Any],
) -> dict[str, Any]:
    return {
        "benchmark": "search_latency",
        "command": command,
        "argv": list(argv),
        "machine": dict(machine),
        "settings": dict(settings),
        "results": [asdict(r) for r in results],
    }


# ---------------------------------------------------------------- command line


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1: {text!r}")
    return value


def _sizes(text: str) -> list[int]:
    parts = [p.strip() for p in text.split(",") if p.strip()]
    if not parts:
        raise argparse.ArgumentTypeError("give at least one size")
    return [_positive(p) for p in parts]


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m bench.search_latency``; returns the exit code (0 ok, 1 failed, 2 usage)."""
    args_list, command = invocation("bench.search_latency", argv)
    parser = argparse.ArgumentParser(
        prog="python -m bench.search_latency",
        description="Search latency of openmemoryd and omem-client on synthetic workspaces.",
    )
    parser.add_argument(
        "--sizes",
        type=_sizes,
        default=list(DEFAULT_SIZES),
        help="comma-separated workspace sizes in sections (~chunks); default 1000,10000,100000",
    )
    parser.add_argument("--queries", type=_positive, default=DEFAULT_QUERIES)
    parser.add_argument("--cli-runs", type=_positive, default=DEFAULT_CLI_RUNS)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--provider",
        default="none",
        choices=("none", "auto", "local"),
        help="embedding provider: none (keyword search, default) or a hybrid run",
    )
    parser.add_argument("--json", type=Path, default=None, help="also write the results here")
    args = parser.parse_args(args_list)

    machine = machine_info()
    machine["search_mode"] = (
        "keyword (embedding provider none)"
        if args.provider == "none"
        else f"hybrid (embedding provider {args.provider})"
    )
    settings = {
        "sizes": args.sizes,
        "queries": args.queries,
        "cli_runs": args.cli_runs,
        "seed": args.seed,
        "provider": args.provider,
        "warmup_searches": WARMUP_SEARCHES,
        "warmup_processes": WARMUP_PROCESSES,
        "cli": cli_command(),
    }
    results: list[SizeResult] = []
    try:
        for size in args.sizes:
            results.append(
                measure_size(
                    size,
                    queries=args.queries,
                    cli_runs=args.cli_runs,
                    seed=args.seed,
                    provider=args.provider,
                )
            )
    # BenchDaemonError is a RuntimeError; OmemError covers a daemon dying mid-run.
    except (RuntimeError, OmemError, OSError, subprocess.TimeoutExpired) as exc:
        print(f"search_latency: {exc}", file=sys.stderr)
        return 1
    machine["load_average_end"] = load_average()

    print(render_table(results, machine, command))
    if args.json is not None:
        report = _report(results, machine, command, args_list, settings)
        args.json.write_text(
            json.dumps(report, ensure_ascii=False, indent=2) + "\n", encoding="utf-8"
        )
        _progress(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
