"""Search round trips over the HTTP API versus the Unix socket.

One keyword-only daemon (``[embedding] provider = "none"``, so the embedder
does not dominate) serves a synthetic workspace of ``--sections`` chunks
(`bench.corpus`) on its socket and, with ``[http]`` on, on a free 127.0.0.1
port. Measured, with `time.perf_counter_ns`, for the same ``--queries``
queries (`bench.corpus.sample_queries`, fixed by ``--seed``):

* **socket**: ``Client.search()`` on one connection (msgpack frames);
* **http keep-alive**: ``httpx.Client.post("/search")`` on one connection
  (JSON, hypercorn, the ASGI app, the same `Api.dispatch`);
* **curl process** and **omem-client process**: the wall time of one whole
  ``curl`` / ``omem-client search`` process per query, as a shell script
  pays it; the two alternate in ABBA order so a noisy machine hits both alike.

Socket and HTTP calls alternate too (one of each per query, order flipped
every query) after an untimed warm-up. Run from the repository root::

    python -m bench.http_latency [--sections 1000] [--queries 200] [--process-runs 30]

Progress goes to stderr; stdout is a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import shutil
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence

import httpx

from bench.corpus import generate_workspace, sample_queries
from bench.daemon import BenchDaemon


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _ms(start: int) -> float:
    return (time.perf_counter_ns() - start) / 1e6


def _summary(values: Sequence[float]) -> tuple[float, float]:
    p95 = statistics.quantiles(values, n=100, method="inclusive")[94]
    return statistics.median(values), p95


def measure(sections: int, queries: int, process_runs: int, seed: int) -> dict[str, list[float]]:
    port = _free_port()
    config = (
        f'[embedding]\nprovider = "none"\n\n[http]\nenabled = true\nlisten = "127.0.0.1:{port}"\n'
    )
    timings: dict[str, list[float]] = {
        "socket": [],
        "http keep-alive": [],
        "curl process": [],
        "omem-client process": [],
    }
    with BenchDaemon(config_toml=config) as daemon:
        generate_workspace(daemon.workspace, sections, seed=seed)
        daemon.start()
        daemon.wait_indexed()
        url = f"http://127.0.0.1:{port}"
        texts = sample_queries(queries, seed=seed)
        with daemon.client() as client, httpx.Client(base_url=url, timeout=60) as web:
            calls: dict[str, Callable[[str], object]] = {
                "socket": client.search,
                "http keep-alive": lambda q: (
                    web.post("/search", json={"query": q}).raise_for_status().json()
                ),
            }
            for text in texts[:20]:  # warm-up: caches, reader pool, connections
                for call in calls.values():
                    call(text)
            for i, text in enumerate(texts):
                order = list(calls) if i % 2 == 0 else list(reversed(calls))
                for name in order:
                    start = time.perf_counter_ns()
                    calls[name](text)
                    timings[name].append(_ms(start))
            print(f"{len(texts)} in-process round trips each", file=sys.stderr)
        if shutil.which("curl") is None:
            print("curl not found: skipping process timings", file=sys.stderr)
            return timings
        commands = {
            "curl process": lambda q: [
                "curl", "-sf", f"{url}/search", "-H", "content-type: application/json",
                "-d", json.dumps({"query": q}),
            ],
            "omem-client process": lambda q: [sys.executable, "-m", "omem_client", "search", q],
        }  # fmt: skip
        for i in range(process_runs):
            text = texts[i % len(texts)]
            order = list(commands) if i % 4 in (0, 3) else list(reversed(commands))
            for name in order:
                start = time.perf_counter_ns()
                subprocess.run(
                    commands[name](text), env=daemon.env, stdout=subprocess.DEVNULL, check=True
                )
                timings[name].append(_ms(start))
    return timings


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sections", type=int, default=1000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--process-runs", type=int, default=30)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    timings = measure(args.sections, args.queries, args.process_runs, args.seed)
    print(f"Search round trip, {args.sections} chunks, keyword-only (ms)\n")
    print("| path | runs | p50 | p95 |\n|---|---:|---:|---:|")
    for name, values in timings.items():
        if len(values) >= 2:
            p50, p95 = _summary(values)
            print(f"| {name} | {len(values)} | {p50:.2f} | {p95:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
