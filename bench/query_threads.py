"""Query embedding threads: search latency while the index embeds and after.

The local model embeds a search's query inside the daemon, with
``[embedding.local] query_threads`` BLAS threads, while passages are embedded
by a worker process at nice 10 with threads of its own. More threads make a
query faster on an idle machine; this measures whether they still do while
the worker is busy on the same cores, and what they cost in CPU.

For each setting of ``--threads`` (default ``1,2``), in turn and for
``--rounds`` rounds (ABAB, so a drift of the machine's load falls on both),
a daemon starts on a fresh ``--sections``-section workspace (`bench.corpus`)
with the default local model, and:

* **while embedding**: searches go one at a time, from the first vector on,
  until ``--queries`` are answered or every vector is in; only replies that
  embedded the query (mode ``hybrid``) count; every timed query is one the
  daemon has not seen (it keeps recent query vectors);
* **idle**: once every vector is in, ``--queries`` more, with the daemon's
  CPU time (utime + stime of every thread, from /proc) read before and
  after, per search.

Latency is the reply's ``took_ms`` (from the request entering the engine to
the result being built). Reported per setting: p50 and p95 of each phase
over all rounds, the searches made while embedding, the CPU per idle
search; and each p50 as a ratio to the first setting's.

Run from the repository root::

    python -m bench.query_threads [--threads 1,2] [--sections 600]
        [--queries 150] [--rounds 2] [--seed 0] [--json PATH]

Progress goes to stderr; stdout is a Markdown table to paste.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Final

from bench.corpus import generate_workspace, sample_queries
from bench.daemon import BenchDaemon, BenchDaemonError, embedder_toml
from bench.procstat import cpu_seconds
from bench.report import invocation, progress, publish
from bench.search_latency import machine_info, percentile
from omem_client import Client, OmemError

STATUS_EVERY_S: Final = 1.0
WARM: Final = 20  # untimed searches before the idle phase


@dataclass
class Setting:
    """Everything measured for one ``query_threads`` value, over all rounds."""

    threads: int
    embedding_ms: list[float] = field(default_factory=list)
    idle_ms: list[float] = field(default_factory=list)
    idle_cpu_ms: list[float] = field(default_factory=list)


_progress = progress()


def _timed(client: Client, query: str) -> float | None:
    """The in-daemon time of one search, None when it did not embed the query."""
    reply = client.search(query, min_score=0.0)
    return reply.took_ms if reply.mode == "hybrid" and not reply.degraded else None


def one_round(setting: Setting, sections: int, queries: int, seed: int) -> None:
    """One daemon's life: searches while it embeds the workspace, then idle."""
    config = embedder_toml("local", query_threads=setting.threads)
    # The daemon keeps recent query vectors: every timed search asks a query
    # it has not seen, or the idle phase would time a cache.
    unique = list(dict.fromkeys(sample_queries(8 * queries + 80, seed=seed + 1)))
    if len(unique) < 2 * queries + WARM:
        raise BenchDaemonError(f"only {len(unique)} distinct queries; ask for fewer")
    during_queries, warm = unique[:queries], unique[queries : queries + WARM]
    idle_queries = unique[queries + WARM : 2 * queries + WARM]
    with BenchDaemon(config_toml=config) as daemon:
        generate_workspace(daemon.workspace, sections, seed=seed)
        daemon.start()
        daemon.wait_indexed()
        pid = daemon.pid
        assert pid is not None
        with daemon.client() as client:
            during = 0
            checked = 0.0
            while during < queries:
                if time.monotonic() - checked > STATUS_EVERY_S:  # a status scans the workspace
                    checked = time.monotonic()
                    emb = daemon.status().embedding
                    if emb is None or (emb.total and emb.embedded >= emb.total):
                        break
                took = _timed(client, during_queries[during])
                if took is None:  # no vector yet: the search ran on keywords
                    time.sleep(0.2)
                    continue
                setting.embedding_ms.append(took)
                during += 1
            _progress(f"[threads {setting.threads}] {during} searches while embedding")
            daemon.wait_vectors()
            for query in warm:  # as an agent searching often is
                client.search(query, min_score=0.0)
            before = cpu_seconds(pid)
            idle = [t for q in idle_queries if (t := _timed(client, q)) is not None]
            after = cpu_seconds(pid)
            setting.idle_ms.extend(idle)
            if before is not None and after is not None and idle:
                setting.idle_cpu_ms.append((after - before) * 1000 / len(idle))
        code = daemon.stop()
        if code != 0:
            raise BenchDaemonError(f"openmemoryd exited with {code}:\n{daemon.log()}")


def _p(values: Sequence[float], pct: int) -> float | None:
    return round(percentile(values, pct), 1) if values else None


def summary(settings: Sequence[Setting]) -> list[dict[str, object]]:
    """One row per setting: p50/p95 per phase, searches, CPU, ratios to the first."""
    rows: list[dict[str, object]] = []
    base = settings[0] if settings else None
    for s in settings:
        row: dict[str, object] = {
            "threads": s.threads,
            "embedding_searches": len(s.embedding_ms),
            "embedding_p50_ms": _p(s.embedding_ms, 50),
            "embedding_p95_ms": _p(s.embedding_ms, 95),
            "idle_searches": len(s.idle_ms),
            "idle_p50_ms": _p(s.idle_ms, 50),
            "idle_p95_ms": _p(s.idle_ms, 95),
            "idle_cpu_ms_per_search": (
                round(statistics.median(s.idle_cpu_ms), 1) if s.idle_cpu_ms else None
            ),
        }
        for phase in ("embedding", "idle"):
            mine, theirs = getattr(s, f"{phase}_ms"), getattr(base, f"{phase}_ms", [])
            ratio = (
                round(statistics.median(mine) / statistics.median(theirs), 2)
                if mine and theirs
                else None
            )
            row[f"{phase}_p50_ratio"] = ratio
        rows.append(row)
    return rows


def render_table(
    rows: Sequence[dict[str, object]], machine: dict[str, object], command: str
) -> str:
    lines = [
        f"`{command}` on {machine.get('cpu_count')} CPUs, load {machine.get('load_average')}",
        "",
        "| query_threads | while embedding: searches | p50 | p95 | ratio | idle p50 | p95 "
        "| ratio | CPU a search |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['threads']} | {r['embedding_searches']} | {r['embedding_p50_ms']} ms "
            f"| {r['embedding_p95_ms']} ms | {r['embedding_p50_ratio']} | {r['idle_p50_ms']} ms "
            f"| {r['idle_p95_ms']} ms | {r['idle_p50_ratio']} | {r['idle_cpu_ms_per_search']} ms |"
        )
    return "\n".join(lines) + "\n"


def _threads(text: str) -> list[int]:
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a list of thread counts: {text!r}") from None
    if not values or any(v < 1 or v > 64 for v in values):
        raise argparse.ArgumentTypeError("thread counts are 1 to 64")
    return values


def main(argv: Sequence[str] | None = None) -> int:
    args_list, command = invocation("bench.query_threads", argv)
    parser = argparse.ArgumentParser(prog="python -m bench.query_threads", description=__doc__)
    parser.add_argument("--threads", type=_threads, default=[1, 2], help="settings, e.g. 1,2")
    parser.add_argument("--sections", type=int, default=600, help="workspace size")
    parser.add_argument("--queries", type=int, default=150, help="searches per phase and round")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(args_list)
    if args.sections < 1 or args.queries < 1 or args.rounds < 1:
        parser.error("--sections, --queries and --rounds must be at least 1")

    machine = machine_info()
    settings = [Setting(t) for t in args.threads]
    try:
        for round_no in range(args.rounds):
            for setting in settings:
                _progress(f"round {round_no + 1}: query_threads = {setting.threads}")
                one_round(setting, args.sections, args.queries, args.seed)
    except (RuntimeError, OmemError, OSError) as exc:
        print(f"query_threads: {exc}", file=sys.stderr)
        return 1
    rows = summary(settings)
    publish(
        "query-threads",
        lambda m: render_table(rows, m, command),
        [*rows, *({"threads": s.threads, **asdict(s)} for s in settings)],
        command=command,
        argv=args_list,
        machine=machine,
        json_path=args.json,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
