"""``python -m bench``: every benchmark in one run, one results file, one table, plots.

Each part is the benchmark's own ``main`` (`bench.locomo`, `bench.multilingual`,
`bench.search_latency`, `bench.freshness`, `bench.load`, `bench.indexing`,
`bench.append_scaling`, ...),
called in this process with the arguments in `FULL` or `QUICK` plus
``--json``; every part starts
and stops its own daemons in their own temp dirs, so nothing here touches
the user's workspace. A part that fails is recorded with its exit code and
the rest still run; the exit code is then 1.

Writes, into ``--out`` (default ``bench/results``; with ``--quick`` a new
temp dir, so a smoke run never litters the repository):

* ``<date>.json``: machine (CPUs, load average at start and end), git
  commit, the command, wall time, and per part its reproducing command, exit
  code, wall time and full report (LoCoMo's per-question rows excepted);
* ``<date>-locomo.json``: LoCoMo's full report, per-question rows included;
* ``<date>.md``: every part's Markdown tables, under one heading each;
* ``<date>-latency.png`` and ``<date>-recall.png`` (`bench.plots`; needs
  matplotlib, the ``bench`` extra; skipped with a note otherwise).

A run of some parts only (``--only``) names its files ``<date>-<parts>.*``
instead, so it never replaces a full run's.

Time: the two embedding phases (LoCoMo's 1,573 chunks, the indexing part's
~1,000) dominate and scale with the free CPU. On the project's 2-core
machine, otherwise quiet, the whole run took 1,001 s (2026-11-23); under a
load average of 3-10 from other people's tests it took 57 minutes, when the
embedder managed 0.8-1.5 chunks/s instead of its idle 7-10. The local
embedder's worker runs at ``--embed-nice`` (default 0, not the daemon's 10)
so that other processes slow it down fairly rather than starve it; the
figure is recorded with the results.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from bench import (
    append_scaling,
    cli_startup,
    freshness,
    index_memory,
    indexing,
    int8_matmul,
    load,
    locomo,
    multilingual,
    query_threads,
    search_latency,
    search_scale,
    soak,
)
from bench.locomo import to_json
from bench.plots import matplotlib_available, plot_report
from bench.report import load_average, progress
from bench.search_latency import machine_info

__all__ = ["FULL", "OPT_IN", "PARTS", "QUICK", "Part", "main", "run_suite"]

REPO: Final = Path(__file__).resolve().parents[1]
RESULTS_DIR: Final = REPO / "bench" / "results"


@dataclass(frozen=True, slots=True)
class Part:
    """One benchmark: its module (for the reproducing command) and its ``main``."""

    name: str
    title: str
    module: str
    main: Callable[[Sequence[str] | None], int]


PARTS: Final[tuple[Part, ...]] = (
    Part("locomo", "Retrieval quality (LoCoMo)", "bench.locomo", locomo.main),
    Part(
        "multilingual",
        "Retrieval in notes: Russian, Chinese, English",
        "bench.multilingual",
        multilingual.main,
    ),
    Part("latency", "Search latency", "bench.search_latency", search_latency.main),
    Part("freshness", "Freshness", "bench.freshness", freshness.main),
    Part("load", "Throughput under load (keyword search)", "bench.load", load.main),
    Part("load-hybrid", "Throughput under load (hybrid search)", "bench.load", load.main),
    Part("indexing", "Indexing", "bench.indexing", indexing.main),
    Part("append", "Append cost vs file size", "bench.append_scaling", append_scaling.main),
    Part("index-memory", "Indexing memory vs file size", "bench.index_memory", index_memory.main),
    Part("cli-startup", "CLI start-up", "bench.cli_startup", cli_startup.main),
    Part("int8", "int8 vs float32 matrix products", "bench.int8_matmul", int8_matmul.main),
    Part(
        "query-threads",
        "Query embedding threads, while indexing and idle",
        "bench.query_threads",
        query_threads.main,
    ),
    Part(
        "search-scale", "Search at 10k, 100k and 1M chunks", "bench.search_scale", search_scale.main
    ),
    Part("soak", "Soak under mixed load", "bench.soak", soak.main),
)
# Parts that run only when --only names them (the soak takes half an hour).
OPT_IN: Final = frozenset({"soak"})

# Arguments per part, split on spaces; "{nice}" becomes --embed-nice. A part
# missing from a table does not run in that mode.
FULL: Final[Mapping[str, str]] = {
    # the default on both layouts, and each leg alone beside it
    "locomo": "--methods calibrated,bm25,vector --embed-nice {nice}",
    "multilingual": "--embed-nice {nice}",
    "latency": "--sizes 1000,10000,100000",
    "freshness": "",
    "load": "--sections 10000 --clients 32 --ops 3200",
    "load-hybrid": ("--provider local --sections 500 --clients 32 --ops 1600 --embed-nice {nice}"),
    "indexing": "--keyword-sections 10000 --vector-sections 1000 --embed-nice {nice}",
    "append": "--lines 20,2000,20000 --appends 60",
    "index-memory": "--mb 1,5,20",
    "cli-startup": "--runs 30",
    # Builds are kept in /tmp/omscale and reused: 1M chunks take ~40 minutes.
    "search-scale": "--sizes 10000,100000,1000000 --queries 100 --cache /tmp/omscale",
    "int8": "--tokens 512 --repeat 7",
    "query-threads": "--threads 1,2 --sections 600 --queries 150 --rounds 2",
    "soak": "--minutes 30 --model local",
}
QUICK: Final[Mapping[str, str]] = {
    "locomo": "--methods bm25 --layouts dated --conversations 0",
    "multilingual": "--sets ru --methods bm25",
    "latency": "--sizes 40 --queries 10 --cli-runs 2",
    "freshness": "--sections 20 --edits 2 --queries 6 --debounce-ms 100",
    "load": "--sections 60 --clients 4 --ops 40",
    "indexing": "--keyword-sections 60 --skip-vectors",
    "append": "--lines 20,200 --appends 3",
    "index-memory": "--mb 0.2",
    "cli-startup": "--runs 2",
    "search-scale": "--sizes 500 --queries 3 --keyword-only",
    "int8": "--tokens 16 --repeat 1",
    "soak": "--minutes 0.5 --rebuild-every 0.2",
}


_progress = progress("bench")


def git_info() -> dict[str, Any]:
    """The commit the code under test came from, and whether the tree had changes."""

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(
                ["git", *args], cwd=REPO, capture_output=True, text=True, timeout=10, check=False
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    status = git("status", "--porcelain")
    return {
        "commit": git("rev-parse", "HEAD"),
        "describe": git("describe", "--always", "--dirty"),
        "dirty": None if status is None else bool(status),
    }


def _part_args(part: Part, quick: bool, nice: int, locomo_data: Path | None) -> list[str]:
    table = QUICK if quick else FULL
    args = table[part.name].replace("{nice}", str(nice)).split()
    if part.name in ("locomo", "search-scale") and locomo_data is not None:
        args += ["--data", str(locomo_data)]
    return args


def _skip_reason(part: Part, locomo_data: Path | None) -> str | None:
    if part.name == "locomo":
        data = locomo_data or locomo.DEFAULT_DATA
        if not data.is_file():
            return f"LoCoMo data not found at {data} (CC BY-NC 4.0, not shipped; see --locomo-data)"
    return None


def _run_part(part: Part, args: list[str], json_path: Path) -> tuple[int, str, float]:
    """(exit code, its stdout Markdown, wall seconds); progress still goes to stderr."""
    out = io.StringIO()
    started = time.perf_counter()
    with contextlib.redirect_stdout(out):
        try:
            code = part.main([*args, "--json", str(json_path)])
        except Exception as exc:  # a crashed part must not lose the others' results
            print(f"{part.name} crashed: {type(exc).__name__}: {exc}", file=sys.stderr)
            code = 1
    return code, out.getvalue(), time.perf_counter() - started


def _strip_command(markdown: str, command: str) -> str:
    """Replace the part's own first line (its command, with a temp --json) by *command*."""
    lines = markdown.strip("\n").splitlines()
    if lines and lines[0].startswith("`") and lines[0].endswith("`"):
        lines[0] = f"`{command}`"
    return "\n".join(lines)


def run_suite(
    *,
    quick: bool,
    out_dir: Path,
    only: Sequence[str],
    embed_nice: int,
    locomo_data: Path | None,
    plots: bool,
    argv: Sequence[str],
) -> tuple[int, dict[str, Any], Path]:
    """Run the selected parts; write the JSON, Markdown and plots; return (code, report, md)."""
    started_at = datetime.now(UTC)
    stem = started_at.date().isoformat()
    selected = [p.name for p in PARTS if p.name in only and p.name in (QUICK if quick else FULL)]
    if not quick and len(selected) < len(FULL) - len(OPT_IN):
        # A partial run is named after its parts, so it never replaces a full run's files.
        stem += "-" + "-".join(selected)
    out_dir.mkdir(parents=True, exist_ok=True)
    command = shlex.join([sys.executable, "-m", "bench", *argv])
    report: dict[str, Any] = {
        "benchmark": "openmemory",
        "command": command,
        "argv": list(argv),
        "git": git_info(),
        "machine": machine_info(),
        "settings": {"quick": quick, "embed_nice": embed_nice, "parts": selected},
        "parts": {},
    }
    sections: list[str] = []
    failed = 0
    wall = time.perf_counter()
    tables = QUICK if quick else FULL
    with tempfile.TemporaryDirectory(prefix="omb-suite-") as scratch:
        for part in PARTS:
            if part.name not in only or part.name not in tables:
                continue
            args = _part_args(part, quick, embed_nice, locomo_data)
            part_command = shlex.join(["python", "-m", part.module, *args])
            reason = _skip_reason(part, locomo_data)
            if reason is not None:
                _progress(f"{part.name}: skipped: {reason}")
                report["parts"][part.name] = {"command": part_command, "skipped": reason}
                sections += [f"## {part.title}", "", f"Skipped: {reason}", ""]
                continue
            _progress(f"{part.name}: {part_command}")
            json_path = Path(scratch) / f"{part.name}.json"
            code, markdown, seconds = _run_part(part, args, json_path)
            _progress(f"{part.name}: exit {code} after {seconds:.0f} s")
            entry: dict[str, Any] = {
                "command": part_command,
                "exit_code": code,
                "wall_s": round(seconds, 1),
            }
            if json_path.is_file():
                part_report = json.loads(json_path.read_text("utf-8"))
                if part.name == "locomo":
                    detail = out_dir / f"{stem}-locomo.json"
                    detail.write_text(to_json(part_report) + "\n", encoding="utf-8")
                    entry["details"] = detail.name
                    for result in part_report.get("results", []):
                        result.pop("queries", None)
                entry["report"] = part_report
            report["parts"][part.name] = entry
            failed += code != 0
            sections += [f"## {part.title}", ""]
            if code != 0:
                sections += [f"**Failed with exit code {code}.**", ""]
            sections += [_strip_command(markdown, part_command), ""]
    report["wall_s"] = round(time.perf_counter() - wall, 1)
    report["machine"]["load_average_end"] = load_average()

    plot_note = "Plots: not made (--quick or --no-plots)."
    if plots:
        if matplotlib_available():
            made = plot_report(report, out_dir, stem)
            report["plots"] = [p.name for p in made]
            links = ", ".join(f"[{p.name}]({p.name})" for p in made)
            plot_note = f"Plots: {links}." if made else "Plots: none for these parts."
        else:
            plot_note = "Plots: skipped, matplotlib is not installed (pip install -e '.[bench]')."
    _progress(plot_note)

    json_out = out_dir / f"{stem}.json"
    json_out.write_text(to_json(report) + "\n", encoding="utf-8")
    md_out = out_dir / f"{stem}.md"
    md_out.write_text(_render(report, sections, plot_note), encoding="utf-8")
    _progress(f"wrote {json_out} and {md_out} ({report['wall_s']:.0f} s)")
    return (1 if failed else 0), report, md_out


def _render(report: Mapping[str, Any], sections: Sequence[str], plot_note: str) -> str:
    machine = report["machine"]
    git = report["git"]
    load_start = " ".join(f"{x:.2f}" for x in machine["load_average"])
    load_end = " ".join(f"{x:.2f}" for x in machine["load_average_end"])
    head = [
        f"# openmemory benchmarks, {machine['date'][:10]}",
        "",
        f"`{report['command']}`: {report['wall_s']:.0f} s in all.",
        "",
        f"openmemory {machine['openmemory']} at {git.get('describe') or 'unknown commit'}, "
        f"Python {machine['python']}, {machine['cpu_count']} CPUs "
        f"({machine['cpu_model'] or 'unknown CPU'}), {machine['platform']}; load average "
        f"{load_start} at start and {load_end} at the end (other processes share this "
        "machine: compare medians and ratios, not single runs). Embedding worker nice "
        f"{report['settings']['embed_nice']}.",
        "",
        "| part | command | exit | wall s |",
        "|---|---|---:|---:|",
    ]
    for name, part in report["parts"].items():
        if "skipped" in part:
            head.append(f"| {name} | `{part['command']}` | skipped | - |")
        else:
            head.append(
                f"| {name} | `{part['command']}` | {part['exit_code']} | {part['wall_s']:.0f} |"
            )
    return "\n".join([*head, "", *sections, plot_note, ""])


def _parts(text: str) -> list[str]:
    names = [p.strip() for p in text.split(",") if p.strip()]
    known = [p.name for p in PARTS]
    unknown = [n for n in names if n not in known]
    if not names or unknown:
        raise argparse.ArgumentTypeError(f"choose from {','.join(known)}")
    return names


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m bench``; 0 when every part succeeded, 1 otherwise, 2 usage."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(
        prog="python -m bench",
        description="Run every openmemory benchmark; write results JSON, Markdown and plots.",
    )
    parser.add_argument(
        "--quick", action="store_true", help="tiny corpora, seconds not minutes (the CI smoke run)"
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="results directory; default bench/results (with --quick: a new temp dir)",
    )
    parser.add_argument(
        "--only",
        type=_parts,
        default=[p.name for p in PARTS if p.name not in OPT_IN],
        help=f"comma-separated parts, default all but {','.join(sorted(OPT_IN))}: "
        f"{','.join(p.name for p in PARTS)}",
    )
    parser.add_argument(
        "--embed-nice",
        type=int,
        default=0,
        help="niceness of the local embedding worker while corpora are embedded (default 0)",
    )
    parser.add_argument("--locomo-data", type=Path, default=None, help="locomo10.json")
    plots = parser.add_mutually_exclusive_group()
    plots.add_argument("--plots", dest="plots", action="store_true", default=None)
    plots.add_argument("--no-plots", dest="plots", action="store_false")
    args = parser.parse_args(args_list)

    out_dir: Path = args.out or (
        Path(tempfile.mkdtemp(prefix="omb-quick-")) if args.quick else RESULTS_DIR
    )
    code, _, md = run_suite(
        quick=args.quick,
        out_dir=out_dir,
        only=args.only,
        embed_nice=args.embed_nice,
        locomo_data=args.locomo_data,
        plots=(not args.quick) if args.plots is None else args.plots,
        argv=args_list,
    )
    print(md.read_text("utf-8"))
    return code
