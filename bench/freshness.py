"""How soon a change to the files is searchable, and what ``--fresh`` costs.

Measured through a real daemon (its own temp dir, a `bench.corpus`
workspace of ``--sections`` sections, keyword search unless ``--provider``)
and the public client only:

* **edit → searchable (watcher)**: write a unique word into a note (new
  files and edits of existing ones alternate), then search for it every
  ``POLL_S`` until it is found. The daemon runs with ``search_check_s = 0``
  so searches never trigger a check of their own: what is measured is the
  watcher, its debounce (``--debounce-ms``, default the daemon's 1500) and the
  indexing. The figure users meet is "debounce plus this much".
* **append → searchable**: ``client.append`` then one search; the append
  indexes before it returns, so the search must find the word at once.
* **edit → ``search(fresh=True)``**: write, then one fresh search; its round
  trip (cookie written, seen by the watcher, queue drained, search) and
  whether it found the word (it must, every time).
* **fresh overhead**: on an idle index, ``search(fresh=True)`` vs a plain
  ``search`` of the same queries, alternating; the ratio and difference of
  medians is the price of the read-your-writes guarantee when nothing changed.

Run from the repository root::

    python -m bench.freshness [--sections 1000] [--edits 40] [--queries 200]
        [--debounce-ms 1500] [--provider none] [--json PATH]

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
from bench.daemon import BenchDaemon
from bench.report import invocation, progress, publish
from bench.search_latency import Summary, machine_info
from omem_client import Client, OmemError

__all__ = ["FreshnessResult", "main", "measure", "render_table"]

POLL_S: Final = 0.01
GIVE_UP_S: Final = 30.0
WARMUP: Final = 10


@dataclass(frozen=True, slots=True)
class FreshnessResult:
    """Milliseconds throughout."""

    sections: int
    chunks: int
    debounce_ms: int
    edit_to_searchable: Summary
    edit_not_found: int
    append_to_searchable: Summary
    append_not_found: int
    edit_to_fresh_result: Summary
    fresh_not_found: int
    fresh_stale: int
    plain_idle: Summary
    fresh_idle: Summary
    fresh_over_plain_p50: float
    fresh_minus_plain_p50_ms: float


_progress = progress("freshness")


def _word(rng: random.Random) -> str:
    """A token no corpus text contains (the corpus has no 'zq' pairs)."""
    return "zq" + "".join(rng.choice("bcdfghjklmnpqrstvwxz") for _ in range(10))


def _found(client: Client, word: str, **kw: Any) -> bool:
    return any(word in hit.snippet for hit in client.search(word, **kw).results)


def _edit(workspace: Path, i: int, word: str) -> None:
    """Alternate a new note and an edit (append a line) of the previous one."""
    note = workspace / "memory" / "bench-fresh" / f"note-{i // 2}.md"
    note.parent.mkdir(exist_ok=True)
    with note.open("a", encoding="utf-8") as out:
        out.write(f"- measured change {i}: {word}\n")


def _watch_latency(
    client: Client, workspace: Path, rng: random.Random, n: int
) -> tuple[list[float], int]:
    took: list[float] = []
    missed = 0
    for i in range(n):
        word = _word(rng)
        _edit(workspace, i, word)
        started = time.perf_counter()
        while not _found(client, word):
            if time.perf_counter() - started > GIVE_UP_S:
                missed += 1
                break
            time.sleep(POLL_S)
        else:
            took.append((time.perf_counter() - started) * 1000)
        # let the watcher's debounce for this file run out before the next edit
        time.sleep(0.2)
    return took, missed


def _append_latency(client: Client, rng: random.Random, n: int) -> tuple[list[float], int]:
    took: list[float] = []
    missed = 0
    for _ in range(n):
        word = _word(rng)
        started = time.perf_counter()
        client.append(f"appended for the freshness bench: {word}")
        if _found(client, word):
            took.append((time.perf_counter() - started) * 1000)
        else:
            missed += 1
    return took, missed


def _fresh_latency(
    client: Client, workspace: Path, rng: random.Random, n: int, offset: int
) -> tuple[list[float], int, int]:
    took: list[float] = []
    missed = stale = 0
    for i in range(n):
        word = _word(rng)
        _edit(workspace, offset + i, word)
        started = time.perf_counter()
        result = client.search(word, fresh=True)
        took.append((time.perf_counter() - started) * 1000)
        stale += result.stale
        missed += not any(word in hit.snippet for hit in result.results)
    return took, missed, stale


def _idle_overhead(client: Client, queries: Sequence[str]) -> tuple[list[float], list[float]]:
    plain: list[float] = []
    fresh: list[float] = []
    for i, query in enumerate(queries):
        # ABBA order, so a drift of the machine hits both kinds alike
        order = (False, True) if i % 2 == 0 else (True, False)
        for is_fresh in order:
            started = time.perf_counter()
            client.search(query, fresh=is_fresh)
            (fresh if is_fresh else plain).append((time.perf_counter() - started) * 1000)
    return plain, fresh


def measure(
    sections: int,
    *,
    edits: int,
    queries: int,
    debounce_ms: int,
    provider: str,
    seed: int,
) -> FreshnessResult:
    rng = random.Random(seed)
    config = (
        f'[embedding]\nprovider = "{provider}"\n'
        f"[sync]\nsearch_check_s = 0\ndebounce_ms = {debounce_ms}\n"
    )
    with BenchDaemon(config_toml=config) as daemon:
        generate_workspace(daemon.workspace, sections, seed=seed)
        daemon.start()
        status = daemon.wait_indexed()
        _progress(f"{status.chunks} chunks indexed")
        with daemon.client() as client:
            for query in sample_queries(WARMUP, seed=seed):
                client.search(query)
            _progress(f"edit -> searchable through the watcher, {edits} edits")
            watch, watch_missed = _watch_latency(client, daemon.workspace, rng, edits)
            _progress(f"append -> searchable, {edits} appends")
            appended, append_missed = _append_latency(client, rng, edits)
            _progress(f"edit -> fresh search, {edits} edits")
            fresh_edit, fresh_missed, stale = _fresh_latency(
                client, daemon.workspace, rng, edits, offset=edits + 2
            )
            _progress(f"fresh vs plain on an idle index, {queries} queries each")
            plain, fresh = _idle_overhead(client, sample_queries(queries, seed=seed + 1))
        plain_s, fresh_s = Summary.of_ms(plain), Summary.of_ms(fresh)
        return FreshnessResult(
            sections=sections,
            chunks=status.chunks,
            debounce_ms=debounce_ms,
            edit_to_searchable=Summary.of_ms(watch or [float("nan")]),
            edit_not_found=watch_missed,
            append_to_searchable=Summary.of_ms(appended or [float("nan")]),
            append_not_found=append_missed,
            edit_to_fresh_result=Summary.of_ms(fresh_edit),
            fresh_not_found=fresh_missed,
            fresh_stale=stale,
            plain_idle=plain_s,
            fresh_idle=fresh_s,
            fresh_over_plain_p50=round(fresh_s.p50 / plain_s.p50, 2),
            fresh_minus_plain_p50_ms=round(fresh_s.p50 - plain_s.p50, 3),
        )


def render_table(result: FreshnessResult, machine: dict[str, Any], command: str) -> str:
    def row(name: str, s: Summary, missed: str) -> str:
        return f"| {name} | {s.n} | {s.p50:.1f} | {s.p95:.1f} | {s.max:.1f} | {missed} |"

    r = result
    return "\n".join(
        [
            f"`{command}`",
            "",
            f"openmemory {machine['openmemory']}, Python {machine['python']}, "
            f"{machine['cpu_count']} CPUs, {r.chunks:,} chunks, debounce {r.debounce_ms} ms, "
            f"{machine['date']}",
            "",
            "| change → searchable | n | p50 ms | p95 ms | max ms | not found |",
            "|---|---:|---:|---:|---:|---:|",
            row("edit → plain search (watcher)", r.edit_to_searchable, str(r.edit_not_found)),
            row("append → search", r.append_to_searchable, str(r.append_not_found)),
            row(
                "edit → `search --fresh` returns",
                r.edit_to_fresh_result,
                f"{r.fresh_not_found} ({r.fresh_stale} stale)",
            ),
            row("idle: plain search", r.plain_idle, "-"),
            row("idle: `search --fresh`", r.fresh_idle, "-"),
            "",
            f"Fresh search on an idle index: {r.fresh_over_plain_p50:.1f}x a plain one "
            f"(+{r.fresh_minus_plain_p50_ms:.1f} ms at p50), the cookie round trip "
            "through the watcher.",
        ]
    )


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m bench.freshness``; returns the exit code."""
    args_list, command = invocation("bench.freshness", argv)
    parser = argparse.ArgumentParser(
        prog="python -m bench.freshness",
        description="Edit-to-searchable latency and the cost of fresh searches.",
    )
    parser.add_argument("--sections", type=int, default=1000)
    parser.add_argument("--edits", type=int, default=40)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--debounce-ms", type=int, default=1500)
    parser.add_argument("--provider", default="none", choices=("none", "auto", "local"))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(args_list)
    if min(args.sections, args.edits, args.queries) < 1:
        parser.error("--sections, --edits and --queries must be at least 1")

    machine = machine_info()
    try:
        result = measure(
            args.sections,
            edits=args.edits,
            queries=args.queries,
            debounce_ms=args.debounce_ms,
            provider=args.provider,
            seed=args.seed,
        )
    except (RuntimeError, OmemError, OSError) as exc:
        print(f"freshness: {exc}", file=sys.stderr)
        return 1
    publish(
        "freshness",
        lambda m: render_table(result, m, command),
        asdict(result),
        command=command,
        argv=args_list,
        machine=machine,
        json_path=args.json,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
