"""Indexing throughput: cold, keyword-only and with the default embedder, then warm.

Each phase runs the real daemon in its own temp dir on a `bench.corpus`
workspace and reads progress only through ``omem-client status``:

1. **keyword cold** (``--keyword-sections``, ``[embedding] provider =
   "none"``): the startup sync of a fresh workspace; chunks/s is the status
   chunk count over the sync's own ``took_ms``. Then ``sync --full`` re-chunks
   and rewrites every file of the same index (**keyword re-index**).
2. **embedder cold** (``--vector-sections``, ``provider = "local"``, the
   bundled multilingual-e5-small that ``auto`` picks by default): from
   spawning the daemon until every chunk has a vector and the embedder is
   idle (``status.embedding.embedded == total``); chunks/s is chunks over
   that wall time, model loading included. The embedded count is sampled
   every ``POLL_S``, and the steady rate (first vector to last) is reported
   too. ``status.embedding.cache_entries`` before and after gives the
   embeddings computed.
3. **warm re-index**: the same state dir, a freshly started daemon (so its
   peak RSS is its own), then ``sync --full``: every chunk is deleted and
   re-inserted, so every chunk needs its vector again, and each must come
   from the embedding cache. Embeddings computed = growth of
   ``cache_entries`` (exact while the corpus is below
   ``[embedding] cache_max_entries``, 50,000 by default: a computed
   embedding always adds its text hash to the cache and nothing is pruned);
   it must be 0, and the embedding worker process must never start.

Peak RSS: VmHWM of the daemon over each daemon's life, and of its embedding
worker (a child process), sampled from /proc (`bench.procstat`).

Run from the repository root::

    python -m bench.indexing [--keyword-sections 10000] [--vector-sections 1500]
        [--skip-vectors] [--embed-nice N] [--seed 0] [--json PATH]

Progress goes to stderr; stdout is a Markdown table to paste. Exit code 1
if the warm re-index computed any embedding.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Final

from bench.corpus import generate_workspace
from bench.daemon import BenchDaemon, BenchDaemonError, embedder_toml
from bench.procstat import ProcessSampler, SampledMemory
from bench.report import invocation, progress, publish
from bench.search_latency import machine_info
from omem_client import OmemError, StatusResult

__all__ = ["IndexRun", "IndexingResult", "main", "measure", "render_rows", "render_table"]

DEFAULT_KEYWORD_SECTIONS: Final = 10_000
DEFAULT_VECTOR_SECTIONS: Final = 1_500
POLL_S: Final = 1.0
VECTORS_TIMEOUT_S: Final = 3600.0


@dataclass(frozen=True, slots=True)
class IndexRun:
    """One indexing pass. `seconds` is what `chunks_per_s` divides by; `what` says which span."""

    name: str
    what: str
    chunks: int
    seconds: float
    chunks_per_s: float
    embeddings_computed: int | None
    daemon_peak_rss_mb: float | None
    worker_peak_rss_mb: float | None
    steady_chunks_per_s: float | None = None


@dataclass(frozen=True, slots=True)
class IndexingResult:
    keyword_sections: int
    vector_sections: int | None
    embed_nice: int | None
    runs: tuple[IndexRun, ...]
    # (seconds since spawn, embedded, total) during the cold embedder run.
    vector_progress: tuple[tuple[float, int, int], ...]
    warm_worker_started: bool | None


_progress = progress("indexing")


def _rate(chunks: int, seconds: float) -> float:
    return round(chunks / seconds, 1) if seconds > 0 else 0.0


def _cache(status: StatusResult) -> int:
    return status.embedding.cache_entries if status.embedding is not None else 0


def _peaks(memory: SampledMemory | None) -> tuple[float | None, float | None]:
    if memory is None:
        return None, None
    return memory.daemon_peak_rss_mb, memory.children_peak_rss_mb


def _wait_vectors(
    daemon: BenchDaemon, spawned: float, samples: list[tuple[float, int, int]]
) -> StatusResult:
    """Poll until every chunk has a vector, recording (t, embedded, total) on the way."""
    deadline = time.perf_counter() + VECTORS_TIMEOUT_S
    while True:
        status = daemon.status()
        emb = status.embedding
        if emb is None or emb.state == "off":
            raise BenchDaemonError(f"vector search is off: {emb}")
        samples.append((round(time.perf_counter() - spawned, 2), emb.embedded, emb.total))
        if emb.total and emb.embedded == emb.total and emb.state == "idle":
            return status
        if time.perf_counter() > deadline:
            raise BenchDaemonError(f"vectors incomplete after {VECTORS_TIMEOUT_S:.0f} s: {emb}")
        time.sleep(POLL_S)


def _steady_rate(samples: Sequence[tuple[float, int, int]]) -> float | None:
    """Chunks/s from the first sample with a vector to the last, model load excluded."""
    started = next((s for s in samples if s[1] > 0), None)
    if started is None or samples[-1][0] <= started[0]:
        return None
    return round((samples[-1][1] - started[1]) / (samples[-1][0] - started[0]), 2)


def _stop(daemon: BenchDaemon) -> None:
    code = daemon.stop()
    if code != 0:
        raise BenchDaemonError(f"openmemoryd exited with {code}:\n{daemon.log()}")


def measure_keyword(sections: int, seed: int) -> list[IndexRun]:
    """Cold index and ``sync --full`` with keyword search only."""
    with BenchDaemon(config_toml=embedder_toml("none")) as daemon:
        generate_workspace(daemon.workspace, sections, seed=seed)
        daemon.start()
        assert daemon.pid is not None
        with ProcessSampler(daemon.pid) as sampler:
            status = daemon.wait_indexed()
            assert status.last_sync is not None
            cold_s = status.last_sync.took_ms / 1000
            _progress(f"keyword cold: {status.chunks} chunks in {cold_s:.2f} s; sync --full")
            full = daemon.sync(full=True)
            memory_mid = sampler.snapshot()
        _stop(daemon)
    cold_rss, _ = _peaks(memory_mid)
    full_rss, _ = _peaks(sampler.memory)
    return [
        IndexRun(
            name="cold index, keyword only",
            what="the startup sync's took_ms",
            chunks=status.chunks,
            seconds=round(cold_s, 2),
            chunks_per_s=_rate(status.chunks, cold_s),
            embeddings_computed=None,
            daemon_peak_rss_mb=cold_rss,
            worker_peak_rss_mb=None,
        ),
        IndexRun(
            name="re-index (`sync --full`), keyword only",
            what="the sync's took_ms",
            chunks=full.chunks,
            seconds=round(full.took_ms / 1000, 2),
            chunks_per_s=_rate(full.chunks, full.took_ms / 1000),
            embeddings_computed=None,
            daemon_peak_rss_mb=full_rss,
            worker_peak_rss_mb=None,
        ),
    ]


def measure_vectors(
    sections: int, seed: int, nice: int | None = None
) -> tuple[list[IndexRun], list[tuple[float, int, int]], bool]:
    """Cold index with the local embedder, then a warm ``sync --full`` in a restarted daemon."""
    samples: list[tuple[float, int, int]] = []
    with BenchDaemon(config_toml=embedder_toml("local", nice=nice)) as daemon:
        generate_workspace(daemon.workspace, sections, seed=seed)
        spawned = time.perf_counter()
        daemon.start()
        assert daemon.pid is not None
        with ProcessSampler(daemon.pid) as cold_sampler:
            indexed = daemon.wait_indexed()
            cache_before = _cache(indexed)
            _progress(f"embedder cold: {indexed.chunks} chunks; waiting for every vector")
            status = _wait_vectors(daemon, spawned, samples)
            cold_s = time.perf_counter() - spawned
        cold_computed = _cache(status) - cache_before
        _stop(daemon)
        _progress(
            f"embedder cold: {status.chunks} vectors in {cold_s:.1f} s "
            f"({status.chunks / cold_s:.1f} chunks/s); warm re-index"
        )

        daemon.start()
        assert daemon.pid is not None
        with ProcessSampler(daemon.pid) as warm_sampler:
            daemon.wait_indexed()
            before = daemon.wait_vectors()
            started = time.perf_counter()
            full = daemon.sync(full=True)
            warm_samples: list[tuple[float, int, int]] = []
            after = _wait_vectors(daemon, started, warm_samples)
            warm_s = time.perf_counter() - started
        _stop(daemon)
    warm_computed = _cache(after) - _cache(before)
    cold_memory, warm_memory = cold_sampler.memory, warm_sampler.memory
    assert cold_memory is not None
    assert warm_memory is not None
    cold_rss, cold_worker = _peaks(cold_memory)
    warm_rss, warm_worker = _peaks(warm_memory)
    runs = [
        IndexRun(
            name="cold index, default embedder (local e5), until every vector",
            what="spawn to the last vector, model load included",
            chunks=status.chunks,
            seconds=round(cold_s, 1),
            chunks_per_s=_rate(status.chunks, cold_s),
            embeddings_computed=cold_computed,
            daemon_peak_rss_mb=cold_rss,
            worker_peak_rss_mb=cold_worker,
            steady_chunks_per_s=_steady_rate(samples),
        ),
        IndexRun(
            name="re-index (`sync --full`), warm embedding cache, until every vector",
            what="sync --full sent to the last vector",
            chunks=full.chunks,
            seconds=round(warm_s, 2),
            chunks_per_s=_rate(full.chunks, warm_s),
            embeddings_computed=warm_computed,
            daemon_peak_rss_mb=warm_rss,
            worker_peak_rss_mb=warm_worker,
        ),
    ]
    return runs, samples, bool(warm_memory.children)


def measure(
    keyword_sections: int, vector_sections: int | None, seed: int, *, nice: int | None = None
) -> IndexingResult:
    runs = measure_keyword(keyword_sections, seed)
    samples: list[tuple[float, int, int]] = []
    worker_started: bool | None = None
    if vector_sections:
        vector_runs, samples, worker_started = measure_vectors(vector_sections, seed, nice)
        runs += vector_runs
    return IndexingResult(
        keyword_sections=keyword_sections,
        vector_sections=vector_sections,
        embed_nice=nice,
        runs=tuple(runs),
        vector_progress=tuple(samples),
        warm_worker_started=worker_started,
    )


# ---------------------------------------------------------------- reporting


def _opt(value: float | None, fmt: str = ",.0f") -> str:
    return "-" if value is None else format(value, fmt)


def render_rows(result: IndexingResult) -> list[str]:
    lines = [
        "| pass | chunks | s | chunks/s | embeddings computed | daemon peak RSS MB "
        "| embedding worker peak RSS MB |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for run in result.runs:
        rate = f"{run.chunks_per_s:,.1f}"
        if run.steady_chunks_per_s is not None:
            rate += f" ({run.steady_chunks_per_s:.1f} steady)"
        lines.append(
            f"| {run.name} | {run.chunks:,} | {run.seconds:,.2f} | {rate} "
            f"| {_opt(run.embeddings_computed, 'd')} | {_opt(run.daemon_peak_rss_mb)} "
            f"| {_opt(run.worker_peak_rss_mb) if run.embeddings_computed is not None else '-'} |"
        )
    return lines


def render_table(result: IndexingResult, machine: dict[str, Any], command: str) -> str:
    load = " ".join(f"{x:.2f}" for x in machine["load_average"])
    notes = [
        "Seconds: keyword passes are the daemon's own sync took_ms; embedder passes are wall "
        "time until `status` shows every chunk with a vector (steady: from the first vector "
        "on, model load excluded). Embeddings computed = growth of the embedding cache.",
    ]
    if result.vector_sections:
        nice = "10 (the default)" if result.embed_nice is None else str(result.embed_nice)
        notes.append(f"The embedding worker ran at nice {nice}.")
    if result.warm_worker_started is not None:
        notes.append(
            "Warm re-index: the embedding worker process "
            + ("started (it should not have)." if result.warm_worker_started else "never started.")
        )
    return "\n".join(
        [
            f"`{command}`",
            "",
            f"openmemory {machine['openmemory']}, Python {machine['python']}, "
            f"{machine['cpu_count']} CPUs ({machine['cpu_model'] or 'unknown CPU'}), "
            f"load {load} at start, {machine['date']}",
            "",
            *render_rows(result),
            "",
            *notes,
        ]
    )


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m bench.indexing``; 0 ok, 1 failed (or the warm pass embedded), 2 usage."""
    args_list, command = invocation("bench.indexing", argv)
    parser = argparse.ArgumentParser(
        prog="python -m bench.indexing",
        description="Cold and warm indexing throughput of openmemoryd on a synthetic workspace.",
    )
    parser.add_argument("--keyword-sections", type=int, default=DEFAULT_KEYWORD_SECTIONS)
    parser.add_argument("--vector-sections", type=int, default=DEFAULT_VECTOR_SECTIONS)
    parser.add_argument(
        "--skip-vectors", action="store_true", help="keyword passes only (no model is loaded)"
    )
    parser.add_argument(
        "--embed-nice",
        type=int,
        default=None,
        help="niceness of the embedding worker; default: the daemon's (10)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(args_list)
    if args.keyword_sections < 1 or args.vector_sections < 1:
        parser.error("section counts must be at least 1")

    machine = machine_info()
    try:
        result = measure(
            args.keyword_sections,
            None if args.skip_vectors else args.vector_sections,
            args.seed,
            nice=args.embed_nice,
        )
    except (RuntimeError, OmemError, OSError) as exc:
        print(f"indexing: {exc}", file=sys.stderr)
        return 1
    publish(
        "indexing",
        lambda m: render_table(result, m, command),
        asdict(result),
        command=command,
        argv=args_list,
        machine=machine,
        json_path=args.json,
    )
    warm = [r for r in result.runs if "warm" in r.name]
    if any(r.embeddings_computed for r in warm) or result.warm_worker_started:
        print("indexing: the warm re-index computed embeddings", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
