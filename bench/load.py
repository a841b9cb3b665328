"""Throughput under load: many clients searching and appending at once.

One daemon (its own temp dir) indexes a `bench.corpus` workspace of
``--sections`` sections, keyword search only unless ``--provider local``, in
which case the run starts only once every chunk has its vector. Then
``--clients`` clients, each on its own connection, share a fixed number of
operations (``--ops``), of which ``--append-share`` are ``append`` and the
rest ``search``. The op list is drawn from ``--seed`` and dealt round-robin,
so every client and every run gets the same work.

Clients (`bench.load_clients`) are separate processes by default
(``--workers processes``, started with ``spawn``), so the clients' own Python
(encode, decode, the GIL) cannot be what limits throughput; ``--workers
threads`` runs them as threads of this process, for comparison. On the
project's 2-core machine at 10k chunks both gave the same throughput within
4%, the 32 clients together using 0.05 cores: the daemon is the bottleneck.
Several ``--workers`` kinds run one after the other on the same daemon and
corpus. Every client connects and handshakes before a barrier; timing
starts when all have passed it. Each run appends to its own fresh file
(``memory/load-<workers>.md``), as an agent appends to a new day's note, so
runs do not inherit each other's file growth.

Reported per run: searches/s and appends/s over the wall time from the
barrier to the last reply; p50/p95/p99 latency per op kind (each op timed by
its client around the call); errors (any raised `OmemError`; must be 0, and
the exit code is 1 otherwise); whether a sample of the appended notes is
searchable afterwards; CPU seconds of the daemon and of the clients over the
window, as cores (2.0 would be both CPUs of this machine); and from /proc the
daemon's peak RSS (VmHWM: over its whole life, indexing included) and its
embedding worker's.

Run from the repository root::

    python -m bench.load [--sections 10000] [--clients 32] [--ops 3200]
        [--append-share 0.1] [--workers processes,threads] [--provider none]
        [--embed-nice N] [--query-threads N] [--engine NAME]
        [--rerank auto|local|none] [--seed 0] [--json PATH]

Progress goes to stderr; stdout is a Markdown table to paste.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Final

from bench.corpus import generate_workspace, sample_queries
from bench.daemon import BenchDaemon, BenchDaemonError, embedder_toml
from bench.load_clients import APPEND, SEARCH, plan_ops, run_clients
from bench.procstat import (
    ProcessSampler,
    children_of,
    cpu_seconds,
    main_thread_cpu_seconds,
    rss_kb,
)
from bench.report import invocation, load_average, progress, publish
from bench.search_latency import machine_info, percentile
from omem_client import OmemError

__all__ = [
    "LoadResult",
    "LoadRun",
    "OpStats",
    "main",
    "measure",
    "render_table",
    "run_load",
]

DEFAULT_SECTIONS: Final = 10_000
DEFAULT_CLIENTS: Final = 32
DEFAULT_OPS: Final = 3200
DEFAULT_APPEND_SHARE: Final = 0.1
WORKER_KINDS: Final = ("processes", "threads")
APPEND_CHECKS: Final = 20
ERROR_SAMPLES: Final = 5


# ---------------------------------------------------------------- results


@dataclass(frozen=True, slots=True)
class OpStats:
    """One op kind over a run; latencies in milliseconds."""

    n: int
    per_s: float
    p50: float
    p95: float
    p99: float
    max: float

    @classmethod
    def of(cls, durations_ns: Sequence[int], wall_s: float) -> OpStats:
        if not durations_ns:
            return cls(0, 0.0, 0.0, 0.0, 0.0, 0.0)
        ms = [d / 1e6 for d in durations_ns]
        return cls(
            n=len(ms),
            per_s=round(len(ms) / wall_s, 1) if wall_s > 0 else 0.0,
            p50=round(percentile(ms, 50), 3),
            p95=round(percentile(ms, 95), 3),
            p99=round(percentile(ms, 99), 3),
            max=round(max(ms), 3),
        )


@dataclass(frozen=True, slots=True)
class LoadRun:
    """One burst of ``clients`` clients against the daemon."""

    workers: str
    clients: int
    ops: int
    append_share: float
    wall_s: float
    searches: OpStats
    appends: OpStats
    errors: int
    error_samples: tuple[str, ...]
    keyword_replies: int
    appends_checked: int
    appends_found: int
    daemon_cpu_s: float | None
    daemon_cores: float | None
    daemon_loop_cores: float | None
    clients_cpu_s: float
    clients_cores: float
    embed_worker_cpu_s: float | None
    daemon_rss_after_mb: float | None
    load_average_before: tuple[float, ...]
    load_average_after: tuple[float, ...]
    # what became of the burst's searches at the rerank stage (`status`), by
    # outcome; None where no reranker runs
    rerank: dict[str, int] | None = None


@dataclass(frozen=True, slots=True)
class LoadResult:
    """Every run on one daemon, with the corpus and memory figures they share."""

    mode: str
    provider: str
    sections: int
    chunks: int
    index_s: float
    vectors_s: float | None
    runs: tuple[LoadRun, ...]
    daemon_peak_rss_mb: float | None
    embed_worker_peak_rss_mb: float | None


def _children_cpu(pid: int) -> float | None:
    values = [cpu_seconds(child) for child in children_of(pid)]
    known = [v for v in values if v is not None]
    return sum(known) if known else None


_progress = progress("load")


def _stop(daemon: BenchDaemon) -> None:
    code = daemon.stop()
    if code != 0:
        raise BenchDaemonError(f"openmemoryd exited with {code}:\n{daemon.log()}")


def run_load(
    daemon: BenchDaemon,
    *,
    workers: str,
    clients: int,
    ops: int,
    append_share: float,
    seed: int,
) -> LoadRun:
    """One burst against a running, fully indexed *daemon*."""
    pid = daemon.pid
    if pid is None:
        raise RuntimeError("the daemon is not running")
    plans = plan_ops(ops, clients, append_share, seed)
    append_path = f"memory/load-{workers}.md"
    load_before = tuple(load_average())
    daemon_cpu_before = cpu_seconds(pid)
    loop_cpu_before = main_thread_cpu_seconds(pid)
    worker_cpu_before = _children_cpu(pid)
    reranks_before = _rerank_counts(daemon)
    outcomes, released = run_clients(workers, str(daemon.socket), plans, append_path)
    reranks_after = _rerank_counts(daemon)
    daemon_cpu_after = cpu_seconds(pid)
    loop_cpu_after = main_thread_cpu_seconds(pid)
    worker_cpu_after = _children_cpu(pid)
    load_after = tuple(load_average())

    setup = [o.setup_error for o in outcomes if o.setup_error is not None]
    records = [r for o in outcomes for r in o.records]
    if not records:
        raise RuntimeError(f"no client ran an op: {setup[:3]}")
    first = min(r[1] for r in records)
    last = max(r[1] + r[2] for r in records)
    wall_s = (last - min(first, released)) / 1e9
    errors = [e for o in outcomes for e in o.errors] + setup
    cpu_clients = sum(o.cpu_s for o in outcomes)

    # Appends return once indexed: a sample of them must be searchable now.
    appended = [text for plan in plans for kind, text in plan if kind == APPEND]
    sample = random.Random(seed).sample(appended, min(APPEND_CHECKS, len(appended)))
    found = 0
    with daemon.client() as client:
        for text in sample:
            word = text.rsplit(" ", 1)[-1]
            found += any(word in hit.snippet for hit in client.search(word).results)

    daemon_cpu = (
        None
        if daemon_cpu_before is None or daemon_cpu_after is None
        else daemon_cpu_after - daemon_cpu_before
    )
    loop_cpu = (
        None
        if loop_cpu_before is None or loop_cpu_after is None
        else loop_cpu_after - loop_cpu_before
    )
    worker_cpu = None if worker_cpu_after is None else worker_cpu_after - (worker_cpu_before or 0.0)
    rss = rss_kb(pid)
    return LoadRun(
        workers=workers,
        clients=clients,
        ops=ops,
        append_share=append_share,
        wall_s=round(wall_s, 3),
        searches=OpStats.of([r[2] for r in records if r[0] == SEARCH and r[3]], wall_s),
        appends=OpStats.of([r[2] for r in records if r[0] == APPEND and r[3]], wall_s),
        errors=len(errors),
        error_samples=tuple(dict.fromkeys(errors))[:ERROR_SAMPLES],
        keyword_replies=sum(o.keyword_replies for o in outcomes),
        appends_checked=len(sample),
        appends_found=found,
        daemon_cpu_s=None if daemon_cpu is None else round(daemon_cpu, 2),
        daemon_cores=None if daemon_cpu is None else round(daemon_cpu / wall_s, 2),
        daemon_loop_cores=None if loop_cpu is None else round(loop_cpu / wall_s, 2),
        clients_cpu_s=round(cpu_clients, 2),
        clients_cores=round(cpu_clients / wall_s, 2),
        embed_worker_cpu_s=None if worker_cpu is None else round(worker_cpu, 2),
        daemon_rss_after_mb=None if rss is None else round(rss / 1024, 1),
        load_average_before=load_before,
        load_average_after=load_after,
        rerank=(
            None
            if reranks_before is None or reranks_after is None
            else {k: reranks_after[k] - reranks_before[k] for k in RERANK_OUTCOMES}
        ),
    )


RERANK_OUTCOMES = ("reranked", "confident", "held_back", "not_applicable", "failed")


def _rerank_counts(daemon: BenchDaemon) -> dict[str, int] | None:
    """The daemon's rerank outcomes so far (`status`), or None with no reranker."""
    with daemon.client() as client:
        rerank = client.status().rerank
    if rerank is None or rerank.model is None:
        return None
    return {outcome: getattr(rerank, outcome) for outcome in RERANK_OUTCOMES}


def measure(
    sections: int,
    *,
    clients: int,
    ops: int,
    append_share: float,
    workers: Sequence[str],
    provider: str,
    seed: int,
    embed_nice: int | None = None,
    query_threads: int | None = None,
    engine: str | None = None,
    rerank: str | None = None,
) -> LoadResult:
    """Index a fresh *sections*-section workspace, then one `run_load` per *workers* kind.

    With *embed_nice*, the corpus is embedded at that niceness, then the
    daemon restarts with its default settings (vectors kept) to serve the load.
    """
    toml = embedder_toml(
        provider, nice=embed_nice, query_threads=query_threads, engine=engine, rerank=rerank
    )
    with BenchDaemon(config_toml=toml) as daemon:
        generate_workspace(daemon.workspace, sections, seed=seed)
        spawned = time.perf_counter()
        daemon.start()
        status = daemon.wait_indexed()
        assert status.last_sync is not None
        index_s = status.last_sync.took_ms / 1000
        vectors_s: float | None = None
        if provider != "none":
            _progress(f"{status.chunks} chunks indexed; waiting for their vectors")
            status = daemon.wait_vectors()
            vectors_s = round(time.perf_counter() - spawned, 1)
            if embed_nice is not None:
                _progress("vectors done; restarting the daemon with its default settings")
                _stop(daemon)
                daemon.write_config(
                    embedder_toml(
                        provider, query_threads=query_threads, engine=engine, rerank=rerank
                    )
                )
                daemon.start()
                daemon.wait_indexed()
                status = daemon.wait_vectors()
        pid = daemon.pid
        assert pid is not None
        with ProcessSampler(pid) as sampler:
            _progress(f"{status.chunks} chunks ready ({provider}); warming up")
            with daemon.client() as client:
                for query in sample_queries(20, seed=seed + 1):
                    client.search(query)
            runs: list[LoadRun] = []
            for kind in workers:
                _progress(f"{clients} client {kind}, {ops} ops, {append_share:.0%} appends")
                run = run_load(
                    daemon,
                    workers=kind,
                    clients=clients,
                    ops=ops,
                    append_share=append_share,
                    seed=seed,
                )
                _progress(
                    f"{kind}: {run.searches.per_s:.0f} searches/s, search p50 "
                    f"{run.searches.p50:.1f} ms p99 {run.searches.p99:.1f} ms, "
                    f"{run.errors} errors, daemon {run.daemon_cores} cores "
                    f"(event loop {run.daemon_loop_cores})"
                )
                runs.append(run)
        _stop(daemon)
    memory = sampler.memory
    assert memory is not None
    mode = "keyword" if provider == "none" else "hybrid"
    return LoadResult(
        mode=mode if rerank is None else f"{mode}, reranker {rerank}",
        provider=provider,
        sections=sections,
        chunks=status.chunks,
        index_s=round(index_s, 2),
        vectors_s=vectors_s,
        runs=tuple(runs),
        daemon_peak_rss_mb=memory.daemon_peak_rss_mb,
        embed_worker_peak_rss_mb=memory.children_peak_rss_mb,
    )


# ---------------------------------------------------------------- reporting


def _mb(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


def _cores(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def render_rows(results: Sequence[LoadResult]) -> list[str]:
    """The table alone (header and one row per run), for the combined report."""
    lines = [
        "| search | chunks | clients | ops (appends) | searches/s | appends/s "
        "| search p50 / p99 ms | append p50 / p99 ms | errors | appends found "
        "| CPU cores: daemon (its event loop) / clients | daemon peak RSS MB "
        "| searches reranked / held back |",
        "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for result in results:
        for run in result.runs:
            rss = _mb(result.daemon_peak_rss_mb)
            if result.embed_worker_peak_rss_mb is not None:
                rss += f" (+{_mb(result.embed_worker_peak_rss_mb)} worker)"
            lines.append(
                f"| {result.mode} | {result.chunks:,} | {run.clients} {run.workers} "
                f"| {run.ops:,} ({run.appends.n}) | {run.searches.per_s:.0f} "
                f"| {run.appends.per_s:.1f} "
                f"| {run.searches.p50:.1f} / {run.searches.p99:.1f} "
                f"| {run.appends.p50:.1f} / {run.appends.p99:.1f} | {run.errors} "
                f"| {run.appends_found}/{run.appends_checked} "
                f"| {_cores(run.daemon_cores)} ({_cores(run.daemon_loop_cores)}) "
                f"/ {_cores(run.clients_cores)} | {rss} | {_reranked(run.rerank)} |"
            )
    return lines


def _reranked(counts: dict[str, int] | None) -> str:
    if counts is None:
        return "-"
    return f"{counts['reranked']:,} / {counts['held_back']:,}"


def render_table(results: Sequence[LoadResult], machine: dict[str, Any], command: str) -> str:
    load = " ".join(f"{x:.2f}" for x in machine["load_average"])
    lines = [
        f"`{command}`",
        "",
        f"openmemory {machine['openmemory']}, Python {machine['python']}, "
        f"{machine['cpu_count']} CPUs ({machine['cpu_model'] or 'unknown CPU'}), "
        f"load {load} at start, {machine['date']}",
        "",
        *render_rows(results),
        "",
        "Rates are over the wall time from the start barrier to the last reply; "
        "CPU cores = CPU seconds / wall seconds: the daemon's threads (its main thread, "
        "the trio event loop, in brackets; 1.0 would be one core saturated), clients summed. "
        "Peak RSS is the daemon's VmHWM over its life, indexing included.",
    ]
    return "\n".join(lines)


# ---------------------------------------------------------------- command line


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1: {text!r}")
    return value


def _share(text: str) -> float:
    value = float(text)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1: {text!r}")
    return value


def _workers(text: str) -> list[str]:
    kinds = [p.strip() for p in text.split(",") if p.strip()]
    unknown = [k for k in kinds if k not in WORKER_KINDS]
    if not kinds or unknown:
        raise argparse.ArgumentTypeError(f"choose from {','.join(WORKER_KINDS)}")
    return kinds


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m bench.load``; 0 ok, 1 failed or any op errored, 2 usage."""
    args_list, command = invocation("bench.load", argv)
    parser = argparse.ArgumentParser(
        prog="python -m bench.load",
        description="Concurrent clients searching and appending against one openmemoryd.",
    )
    parser.add_argument("--sections", type=_positive, default=DEFAULT_SECTIONS)
    parser.add_argument("--clients", type=_positive, default=DEFAULT_CLIENTS)
    parser.add_argument("--ops", type=_positive, default=DEFAULT_OPS)
    parser.add_argument("--append-share", type=_share, default=DEFAULT_APPEND_SHARE)
    parser.add_argument(
        "--workers",
        type=_workers,
        default=["processes"],
        help="processes (default), threads, or both comma-separated (run in turn)",
    )
    parser.add_argument("--provider", default="none", choices=("none", "auto", "local"))
    parser.add_argument(
        "--embed-nice",
        type=int,
        default=None,
        help="embed the corpus at this niceness, then serve the load with the defaults",
    )
    parser.add_argument(
        "--query-threads",
        type=int,
        default=None,
        help="threads for each query embedding (local model); default: the daemon's",
    )
    parser.add_argument(
        "--engine",
        default=None,
        choices=("auto", "onnxruntime", "numpy"),
        help="what runs the local model (default: the daemon's, auto)",
    )
    parser.add_argument(
        "--rerank",
        default=None,
        choices=("auto", "local", "none"),
        help="[search.rerank] provider (default: the daemon's, auto)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(args_list)

    machine = machine_info()
    try:
        result = measure(
            args.sections,
            clients=args.clients,
            ops=args.ops,
            append_share=args.append_share,
            workers=args.workers,
            provider=args.provider,
            seed=args.seed,
            embed_nice=args.embed_nice,
            query_threads=args.query_threads,
            engine=args.engine,
            rerank=args.rerank,
        )
    except (RuntimeError, OmemError, OSError) as exc:
        print(f"load: {exc}", file=sys.stderr)
        return 1
    publish(
        "load",
        lambda m: render_table([result], m, command),
        [asdict(result)],
        command=command,
        argv=args_list,
        machine=machine,
        json_path=args.json,
    )
    failed = [run for run in result.runs if run.errors or run.appends_found < run.appends_checked]
    for run in failed:
        print(
            f"load: {run.workers}: {run.errors} errors, {run.appends_found}/"
            f"{run.appends_checked} appends found; e.g. {list(run.error_samples)}",
            file=sys.stderr,
        )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
