"""Search at 10k, 100k and 1M chunks: keyword, vector and hybrid, exact and quantised.

Issue 19's goals: at 100k chunks hybrid p50 ≤ 50 ms including the query
embedding and keyword p50 ≤ 15 ms; at 1M hybrid p50 ≤ 150 ms and daemon RSS
≤ 1.5 GB; recall@10 of the quantised vector path against exact ≥ 0.98 on
the LoCoMo questions.

For each size in ``--sizes`` an index is built once (`bench.scale_build`:
real corpus text indexed by a real daemon, synthetic vectors around real e5
vectors, stored under the local e5 identity) and kept in ``--cache``. Then:

* a daemon with ``provider = "none"`` answers ``--queries`` keyword searches
  (every daemon here runs with ``[sync] search_check_s = 0`` and
  ``interval_minutes = 0`` unless ``--with-checks``: those background
  checks rescan the workspace, 19 s of CPU for an unchanged pass at 1M
  chunks, and would be timed as search latency), and every daemon first
  waits until ``status`` says its keyword index is merged (the first start
  on a fresh build merges it in the background; searches timed meanwhile
  would race the merge);
* a daemon with the local e5 model (the default embedder) answers them
  as **hybrid** (the default calibrated fusion) and **vector** (weighted
  fusion 1.0 / 0.0: the keyword leg still runs, its score counts for
  nothing), each on the **exact** float scan (``quantised_above`` above the
  size) and on the **quantised** path (``quantised_above = 0``), switched by
  a config reload (SIGHUP) between runs. Every search has a query text not
  searched before, so each one embeds its query with the real model.

Per run: the ``took_ms`` the daemon reports (in-daemon) and the client's
wall time around ``client.search`` (through the socket), p50 and p95; per
size the daemon's peak and steady resident set (``VmHWM``, ``VmRSS`` after
the runs; the embedding worker process is separate and idle) and how long
its start and unchanged-files startup sync took. Recall (`bench.scale_recall`)
is measured in this process on the LoCoMo index and on each synthetic one.

Run from the repository root::

    python -m bench.search_scale [--sizes 10000,100000,1000000] [--queries 100]
        [--cache DIR] [--keyword-only] [--no-locomo] [--data locomo10.json]
        [--compare-multipliers 4,8] [--json PATH]

``--compare-multipliers 4,8`` then also times hybrid quantised search with
each candidate multiplier on the same daemon, in alternating rounds.

Progress goes to stderr; stdout is the Markdown tables. Building 1M chunks
takes about 16 minutes on the project's 2-core machine, once per cache (and
5 GB of disk); measuring all three sizes then about 10.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Final

from bench.args import number_list
from bench.corpus import sample_queries
from bench.daemon import BenchDaemon, BenchDaemonError
from bench.locomo_data import DEFAULT_DATA
from bench.procstat import peak_rss_kb, rss_kb
from bench.report import invocation, progress, publish
from bench.scale_build import INDEX_CONFIG, STATUS_TIMEOUT_S, Built, build
from bench.scale_recall import Recall, build_locomo, embed_queries, locomo_questions, recall_at
from bench.search_latency import Summary, machine_info

__all__ = ["Run", "SizeReport", "main", "render_table"]

WARMUP: Final = 5
EXACT_ALWAYS: Final = 1 << 40
RECALL_QUERIES: Final = 50
COMPARE_ROUNDS: Final = 3


@dataclass(frozen=True, slots=True)
class Run:
    """One mode on one path at one size."""

    mode: str  # keyword, vector, hybrid
    path: str  # "-" (keyword), exact, quantised
    took: Summary
    round_trip: Summary
    empty: int


@dataclass(slots=True)
class SizeReport:
    built: Built
    runs: list[Run] = field(default_factory=list)
    start_s: float | None = None  # ready + unchanged startup sync, local-model daemon
    keyword_segments: int | None = None  # the keyword index's b-trees when searched
    rss_peak_mb: float | None = None
    rss_steady_mb: float | None = None
    recall: Recall | None = None
    # --compare-multipliers: hybrid quantised p50 (ms) per round, per multiplier
    multipliers: dict[int, list[float]] = field(default_factory=dict)


_progress = progress("search-scale")


def _config(
    provider: str,
    *,
    vector_only: bool = False,
    quantised_above: int = 0,
    checks: bool = False,
    multiplier: int | None = None,
) -> str:
    """The daemon's config: defaults but for the provider, the chunk shape
    the index was built with, the vector path, the vector-only weights,
    (unless *checks*) the background checks, and the candidate multiplier
    when one is compared."""
    text = f'[embedding]\nprovider = "{provider}"\n\n{INDEX_CONFIG}\n'
    if not checks:
        text += "[sync]\nsearch_check_s = 0\ninterval_minutes = 0\n\n"
    text += f"[search]\nquantised_above = {quantised_above}\n"
    if multiplier is not None:
        text += f"candidate_multiplier = {multiplier}\n"
    if vector_only:
        text += 'fusion = "weighted"\nvector_weight = 1.0\ntext_weight = 0.0\n'
    return text


class _Queries:
    """Distinct query texts, handed out once each, so no query vector is cached."""

    def __init__(self, seed: int) -> None:
        self._texts = list(dict.fromkeys(sample_queries(20_000, seed=seed)))
        self._next = 0

    def take(self, count: int) -> list[str]:
        if self._next + count > len(self._texts):
            raise RuntimeError("ran out of distinct queries; lower --queries")
        part = self._texts[self._next : self._next + count]
        self._next += count
        return part


def _searches(daemon: BenchDaemon, mode: str, path: str, queries: _Queries, n: int) -> Run:
    took: list[float] = []
    trips: list[int] = []
    empty = 0
    with daemon.client(timeout=120.0) as client:
        for text in queries.take(WARMUP):
            client.search(text)
        for text in queries.take(n):
            started = time.perf_counter_ns()
            result = client.search(text)
            trips.append(time.perf_counter_ns() - started)
            took.append(result.took_ms)
            empty += not result.results
            if mode != "keyword" and result.mode != "hybrid":
                raise BenchDaemonError(f"a {mode} search ran as {result.mode}: {result}")
    run = Run(mode, path, Summary.of_ms(took), Summary.of_ns(trips), empty)
    _progress(f"  {mode} {path}: p50 {run.took.p50:.1f} ms in-daemon, {run.round_trip.p50:.1f} ms")
    return run


def _start(daemon: BenchDaemon) -> float:
    """Start and wait out the startup sync (every file unchanged); seconds."""
    started = time.perf_counter()
    daemon.start(timeout=600.0, status_timeout=STATUS_TIMEOUT_S)
    daemon.sync(timeout=3600.0)
    return time.perf_counter() - started


def _wait_merged(daemon: BenchDaemon) -> int | None:
    """Wait for the daemon to merge the keyword index (the first start on a
    freshly built one does); the number of segments searched."""
    started = time.perf_counter()
    keywords = daemon.wait_keywords_merged(status_timeout=STATUS_TIMEOUT_S).keyword_index
    segments = None if keywords is None else keywords.segments
    _progress(f"  keyword index: {segments} segment(s), {time.perf_counter() - started:.1f} s")
    return segments


def _reload(daemon: BenchDaemon, config: str) -> None:
    """Apply *config* by SIGHUP and wait until the daemon logged it."""
    before = daemon.log().count("SIGHUP:")
    daemon.reload_config(config)
    deadline = time.monotonic() + 30.0
    while daemon.log().count("SIGHUP:") == before:
        if time.monotonic() > deadline:
            raise BenchDaemonError(f"the config reload was not applied:\n{daemon.log()[-2000:]}")
        time.sleep(0.1)


def measure_size(
    built: Built,
    queries: _Queries,
    n: int,
    *,
    keyword_only: bool,
    recall_vectors: list[bytes],
    checks: bool = False,
    multipliers: Sequence[int] = (),
) -> SizeReport:
    report = SizeReport(built)
    size = built.chunks
    with BenchDaemon(root=built.root, config_toml=_config("none", checks=checks)) as daemon:
        _progress(f"{size:,} chunks: keyword daemon starting")
        _start(daemon)
        report.keyword_segments = _wait_merged(daemon)
        report.runs.append(_searches(daemon, "keyword", "-", queries, n))
        daemon.stop()
    if keyword_only:
        return report
    exact = _config("local", quantised_above=EXACT_ALWAYS, checks=checks)
    with BenchDaemon(root=built.root, config_toml=exact) as daemon:
        _progress(f"{size:,} chunks: local-model daemon starting")
        report.start_s = round(_start(daemon), 1)
        _wait_merged(daemon)
        for vector_only in (False, True):
            mode = "vector" if vector_only else "hybrid"
            for path, above in (("exact", EXACT_ALWAYS), ("quantised", 0)):
                config = _config(
                    "local", vector_only=vector_only, quantised_above=above, checks=checks
                )
                _reload(daemon, config)
                report.runs.append(_searches(daemon, mode, path, queries, n))
        report.multipliers = _compare_multipliers(daemon, multipliers, queries, n, checks)
        pid = daemon.pid
        if pid is not None:
            peak, steady = peak_rss_kb(pid), rss_kb(pid)
            report.rss_peak_mb = None if peak is None else round(peak / 1024, 1)
            report.rss_steady_mb = None if steady is None else round(steady / 1024, 1)
        daemon.stop()
    if recall_vectors:
        report.recall = recall_at(built.root, recall_vectors, oversample=8)
        _progress(f"{size:,} chunks: recall@10 {report.recall.recall}")
    return report


def _compare_multipliers(
    daemon: BenchDaemon, multipliers: Sequence[int], queries: _Queries, n: int, checks: bool
) -> dict[int, list[float]]:
    """Hybrid quantised p50 for each candidate multiplier, `COMPARE_ROUNDS`
    rounds in alternating order on one daemon (switched by SIGHUP), so the
    machine's drift falls on all of them alike."""
    p50s: dict[int, list[float]] = {m: [] for m in multipliers}
    for round_number in range(COMPARE_ROUNDS if multipliers else 0):
        order = multipliers if round_number % 2 == 0 else list(reversed(multipliers))
        for multiplier in order:
            _reload(daemon, _config("local", checks=checks, multiplier=multiplier))
            run = _searches(daemon, "hybrid", f"quantised, multiplier {multiplier}", queries, n)
            p50s[multiplier].append(round(run.took.p50, 1))
    return p50s


def _ms(summary: Summary) -> str:
    return f"{summary.p50:.1f} / {summary.p95:.1f}"


def render_table(
    reports: Sequence[SizeReport], locomo: Recall | None, machine: dict[str, Any]
) -> str:
    rows = [
        "| chunks | search | vector path | in-daemon p50 / p95 | through the socket p50 / p95 "
        "| no result |",
        "|---:|---|---|---:|---:|---:|",
    ]
    for report in reports:
        for run in report.runs:
            rows.append(
                f"| {report.built.chunks:,} | {run.mode} | {run.path} | {_ms(run.took)} ms "
                f"| {_ms(run.round_trip)} ms | {run.empty} |"
            )
    rows += [
        "",
        "| chunks | files | corpus | write / index / vectors | index on disk "
        "| daemon start + sync | daemon RSS peak / steady | recall@10 synthetic "
        "| cosine lost |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for report in reports:
        b = report.built
        recall = "-" if report.recall is None else f"{report.recall.recall:.3f}"
        gap = "-" if report.recall is None else f"{report.recall.cosine_gap:.4f}"
        start = "-" if report.start_s is None else f"{report.start_s:.0f} s"
        rss = f"{report.rss_peak_mb} / {report.rss_steady_mb} MB"
        rows.append(
            f"| {b.chunks:,} | {b.files:,} | {b.corpus_bytes / 1e6:.0f} MB "
            f"| {b.write_s:.0f} / {b.index_s:.0f} / {b.vectors_s:.0f} s "
            f"| {b.index_bytes / 1e6:,.0f} MB | {start} | {rss} | {recall} | {gap} |"
        )
    compared = [report for report in reports if report.multipliers]
    if compared:
        rows += [
            "",
            "| chunks | candidate multiplier | hybrid quantised p50 by round | median |",
            "|---:|---:|---|---:|",
        ]
        for report in compared:
            for multiplier, p50s in report.multipliers.items():
                rounds = ", ".join(f"{p50:.1f}" for p50 in p50s)
                rows.append(
                    f"| {report.built.chunks:,} | {multiplier} | {rounds} ms "
                    f"| {statistics.median(p50s):.1f} ms |"
                )
    if locomo is not None:
        rows += [
            "",
            f"Quantised vs exact recall@10 on the LoCoMo questions (real e5 vectors, "
            f"{locomo.chunks:,} chunks, {locomo.queries:,} questions): **{locomo.recall:.3f}** "
            f"(worst question {locomo.worst:.1f}; mean cosine lost {locomo.cosine_gap:.4f}).",
        ]
    load = machine.get("load_average"), machine.get("load_average_end")
    rows += ["", f"Load average {load[0]} → {load[1]}."]
    return "\n".join(rows)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.search_scale", description=__doc__)
    parser.add_argument(
        "--sizes",
        type=number_list(int, at_least=500, what="chunk counts"),
        default=[10_000, 100_000, 1_000_000],
    )
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--cache",
        type=Path,
        default=None,
        help="keep built indexes here and reuse them (default: a temp dir, removed)",
    )
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="locomo10.json")
    parser.add_argument("--centres", type=int, default=256)
    parser.add_argument(
        "--keyword-only", action="store_true", help="no vectors, no model (the quick suite)"
    )
    parser.add_argument("--no-locomo", action="store_true", help="skip the LoCoMo recall check")
    parser.add_argument(
        "--with-checks",
        action="store_true",
        help="keep the daemon's background checks for changes (off by default: they scan "
        "the whole workspace every 30 s after a search and every 5 minutes, which at "
        "133k files competes with the searches being timed)",
    )
    parser.add_argument(
        "--compare-multipliers",
        type=number_list(int, at_least=1, what="candidate multipliers"),
        default=[],
        help="also time hybrid quantised search with each of these candidate multipliers, "
        f"{COMPARE_ROUNDS} rounds in alternating order",
    )
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    if args.cache is not None:
        return _run(args, args.cache, argv)
    with tempfile.TemporaryDirectory(prefix="omscale-", dir="/tmp") as scratch:
        return _run(args, Path(scratch), argv)


def _run(args: argparse.Namespace, cache: Path, argv: Sequence[str] | None) -> int:
    machine = machine_info()
    queries = _Queries(args.seed)
    recall_vectors: list[bytes] = []
    locomo: Recall | None = None
    if not args.keyword_only:
        recall_vectors = embed_queries(queries.take(RECALL_QUERIES))
        if not args.no_locomo:
            root = build_locomo(cache, args.data)
            locomo = recall_at(root, embed_queries(locomo_questions(args.data)), oversample=8)
            _progress(f"LoCoMo recall@10 {locomo.recall}")
    reports = []
    for size in args.sizes:
        built = build(cache, size, args.seed, vectors=not args.keyword_only, centres=args.centres)
        reports.append(
            measure_size(
                built,
                queries,
                args.queries,
                keyword_only=args.keyword_only,
                recall_vectors=recall_vectors,
                checks=args.with_checks,
                multipliers=args.compare_multipliers,
            )
        )
    args_list, command = invocation("bench.search_scale", argv)
    results = {
        "sizes": [
            {**asdict(r), "built": {**asdict(r.built), "root": str(r.built.root)}} for r in reports
        ],
        "locomo_recall": None if locomo is None else asdict(locomo),
    }
    publish(
        "search_scale",
        lambda m: render_table(reports, locomo, m),
        results,
        command=command,
        argv=args_list,
        machine=machine,
        json_path=args.json,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
