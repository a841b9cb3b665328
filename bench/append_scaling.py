"""What an append costs as the file it goes to grows.

Memory files only get longer, so an append must cost what it writes, not
what the file already holds. For each size in ``--lines`` a daemon (keyword
search only, so the embedder does not blur the figures) gets a daily file of
that many lines of notes under headings; then one client per daemon appends
a one-line note ``--appends`` times through the public Python client, the
daemons taken in turn so that the machine's noise falls on every size alike.
Each append returns once the note is on disk and indexed (searchable), so
its round trip is the whole cost.

Run from the repository root::

    python -m bench.append_scaling [--lines 20,2000,20000] [--appends 60] [--json PATH]

Progress goes to stderr; stdout is a Markdown table to paste: p50 and p90 of
an append per file size, and each p50 as a ratio to the smallest file's.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack
from dataclasses import asdict, dataclass
from itertools import count, islice
from pathlib import Path
from typing import Any, Final

from bench.args import number_list
from bench.daemon import BenchDaemon
from bench.report import invocation, progress, publish
from bench.search_latency import machine_info

__all__ = ["WORDS", "AppendResult", "main", "measure", "note_file", "note_lines", "render_table"]

KEYWORD_ONLY: Final = '[embedding]\nprovider = "none"\n'
FILE: Final = "memory/2026-01-05.md"
WARMUP: Final = 5
WORDS: Final = (
    "billing migration cache Redis Postgres deploy Friday review Wei Priya Marco "
    "oolong tea hiking Alps budget invoice checksum rollout flag region staging"
).split()


@dataclass(frozen=True, slots=True)
class AppendResult:
    """One file size; milliseconds."""

    lines: int
    file_kb: float
    chunks: int
    p50_ms: float
    p90_ms: float
    samples: int


def note_lines() -> Iterator[str]:
    """A daily file's lines, without end: its date heading, then notes with
    a section heading every 20 lines (also `bench.index_memory`'s file)."""
    yield "# 2026-01-05"
    for n in count(1):
        if n % 20 == 1:
            yield f"## Meeting {n // 20 + 1}"
        else:
            yield f"- note {n}: " + " ".join(WORDS[(n * 7 + k * 3) % len(WORDS)] for k in range(9))


def note_file(lines: int) -> str:
    """A daily file of *lines* lines (`note_lines`)."""
    return "\n".join(islice(note_lines(), lines)) + "\n"


def measure(sizes: Sequence[int], appends: int) -> list[AppendResult]:
    """Append to one file per size, round-robin over the daemons."""
    with ExitStack() as stack:
        daemons = []
        for lines in sizes:
            daemon = stack.enter_context(BenchDaemon(config_toml=KEYWORD_ONLY))
            path = daemon.workspace / FILE
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(note_file(lines), "utf-8")
            _progress(f"{lines} lines: starting a daemon and indexing")
            daemon.start()
            daemon.wait_indexed()
            daemons.append(daemon)
        clients = [stack.enter_context(daemon.client()) for daemon in daemons]
        timings: list[list[float]] = [[] for _ in sizes]
        for i in range(WARMUP + appends):
            for k, client in enumerate(clients):
                started = time.perf_counter()
                client.append(f"appended note {i}: the {WORDS[i % len(WORDS)]} plan", path=FILE)
                if i >= WARMUP:
                    timings[k].append((time.perf_counter() - started) * 1000)
        results = []
        for lines, daemon, samples in zip(sizes, daemons, timings, strict=True):
            status = daemon.status()
            size = (daemon.workspace / FILE).stat().st_size
            results.append(
                AppendResult(
                    lines=lines,
                    file_kb=round(size / 1024, 1),
                    chunks=status.chunks,
                    p50_ms=round(statistics.median(samples), 2),
                    p90_ms=round(statistics.quantiles(samples, n=10)[-1], 2),
                    samples=len(samples),
                )
            )
        return results


def render_table(results: Sequence[AppendResult], machine: dict[str, Any]) -> str:
    base = results[0].p50_ms
    rows = [
        "| file lines | file size | chunks | append p50 | append p90 | p50 vs smallest |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        rows.append(
            f"| {r.lines:,} | {r.file_kb:,.1f} KB | {r.chunks:,} | {r.p50_ms:.2f} ms "
            f"| {r.p90_ms:.2f} ms | {r.p50_ms / base:.2f}x |"
        )
    load = machine.get("load_average"), machine.get("load_average_end")
    rows.append("")
    rows.append(f"{results[0].samples} appends per size; load average {load[0]} → {load[1]}.")
    return "\n".join(rows)


_progress = progress("append-scaling")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.append_scaling", description=__doc__)
    parser.add_argument(
        "--lines", type=number_list(int, at_least=2, what="line counts"), default=[20, 2000, 20000]
    )
    parser.add_argument("--appends", type=int, default=60)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    if args.appends < 2:
        parser.error("--appends must be 2 or more")
    machine = machine_info()
    results = measure(args.lines, args.appends)
    args_list, command = invocation("bench.append_scaling", argv)
    publish(
        "append_scaling",
        lambda m: render_table(results, m),
        [asdict(r) for r in results],
        command=command,
        argv=args_list,
        machine=machine,
        json_path=args.json,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
