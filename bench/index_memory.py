"""How much memory indexing one large Markdown file takes, as the file grows.

Indexing memory should grow with what is being indexed at a time, not with
the file: a 20 MB daily log or transcript must not cost the daemon hundreds
of megabytes. For each size in ``--mb`` a fresh daemon (keyword search only,
so no embedder process is involved; ``max_file_bytes`` raised above the
file) starts on an empty workspace; once it answers, its peak resident set
(``VmHWM``) is read, the file is written and ``sync`` indexes it, and the
peak is read again. The difference is what indexing that file added, shown
next to the file's size and as a multiple of it.

Run from the repository root::

    python -m bench.index_memory [--mb 1,5,20] [--json PATH]

Progress goes to stderr; stdout is a Markdown table to paste. Linux only
(``/proc``); elsewhere the figures are None.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Final

from bench.append_scaling import note_lines
from bench.args import number_list
from bench.daemon import BenchDaemon
from bench.procstat import peak_rss_kb
from bench.report import invocation, progress, publish
from bench.search_latency import machine_info

__all__ = ["IndexMemory", "main", "measure", "render_table", "write_notes"]

FILE: Final = "memory/2026-01-05.md"


@dataclass(frozen=True, slots=True)
class IndexMemory:
    """One file size."""

    file_mb: float
    chunks: int
    index_s: float
    peak_before_mb: float | None
    peak_after_mb: float | None

    @property
    def added_mb(self) -> float | None:
        if self.peak_before_mb is None or self.peak_after_mb is None:
            return None
        return round(self.peak_after_mb - self.peak_before_mb, 1)


def write_notes(path: Path, megabytes: float) -> int:
    """A daily file (`append_scaling.note_lines`) of about *megabytes* MB; its size."""
    target = int(megabytes * 1024 * 1024)
    path.parent.mkdir(parents=True, exist_ok=True)
    written = 0
    with path.open("w", encoding="utf-8") as f:
        for line in note_lines():
            if written >= target:
                break
            f.write(line + "\n")
            written += len(line) + 1
    return written


def measure(sizes: Sequence[float]) -> list[IndexMemory]:
    results = []
    for megabytes in sizes:
        limit = int(megabytes * 1024 * 1024 * 2) + 1024 * 1024
        config = f'[embedding]\nprovider = "none"\n[index]\nmax_file_bytes = {limit}\n'
        with BenchDaemon(config_toml=config) as daemon:
            _progress(f"{megabytes:g} MB: starting a daemon")
            daemon.start()
            pid = daemon.pid
            before = peak_rss_kb(pid) if pid is not None else None
            size = write_notes(daemon.workspace / FILE, megabytes)
            started = time.perf_counter()
            done = daemon.sync()
            took = time.perf_counter() - started
            after = peak_rss_kb(pid) if pid is not None else None
            results.append(
                IndexMemory(
                    file_mb=round(size / 1024 / 1024, 2),
                    chunks=done.chunks,
                    index_s=round(took, 2),
                    peak_before_mb=None if before is None else round(before / 1024, 1),
                    peak_after_mb=None if after is None else round(after / 1024, 1),
                )
            )
            _progress(f"{megabytes:g} MB: indexed in {took:.1f} s")
    return results


def render_table(results: Sequence[IndexMemory], machine: dict[str, Any]) -> str:
    rows = [
        "| file | chunks | sync | daemon peak RSS before / after | added by indexing "
        "| added / file |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        added = r.added_mb
        ratio = "-" if added is None else f"{added / r.file_mb:.1f}x"
        peaks = f"{r.peak_before_mb} / {r.peak_after_mb} MB"
        rows.append(
            f"| {r.file_mb:g} MB | {r.chunks:,} | {r.index_s:.2f} s | {peaks} "
            f"| {added} MB | {ratio} |"
        )
    load = machine.get("load_average"), machine.get("load_average_end")
    rows.append("")
    rows.append(f"Keyword search only; load average {load[0]} → {load[1]}.")
    return "\n".join(rows)


_progress = progress("index-memory")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.index_memory", description=__doc__)
    parser.add_argument(
        "--mb", type=number_list(float, at_least=0.01, what="sizes in MB"), default=[1.0, 5.0, 20.0]
    )
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    machine = machine_info()
    results = measure(args.mb)
    args_list, command = invocation("bench.index_memory", argv)
    publish(
        "index_memory",
        lambda m: render_table(results, m),
        [{**asdict(r), "added_mb": r.added_mb} for r in results],
        command=command,
        argv=args_list,
        machine=machine,
        json_path=args.json,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
