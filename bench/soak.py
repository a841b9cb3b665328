"""Soak: the real daemon under mixed work for a long time.

Not a CI test: ``python -m bench.soak --minutes 30``. Several clients append,
another thread rewrites the daily file the way editors do (read, change,
then either a temporary file renamed over it or, every other time, the file
truncated and written in place after a pause), searches and forgets run alongside, the embedding
config switches between keyword-only and ``--model`` (SIGHUP reload, so the
vectors are re-embedded in the background) and a full rebuild runs every
``--rebuild-every`` minutes. Reported: the daemon's RSS each minute and its
growth over the last ten minutes (goal: at most 5 %), p50/p99 search latency
per five minutes, every error, and a final consistency check: the index holds
as many chunks as a full rebuild from the Markdown makes, and every
acknowledged append is in its file or in the append journal.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.daemon import BenchDaemon, embedder_toml
from bench.procstat import rss_kb
from bench.report import invocation

KEYWORD_ONLY = embedder_toml("none")
# Journalled appends are kept this long after the file is seen stable.
SETTLE = "[sync]\njournal_settle_s = 30\n"
WORDS = "alpha beta gamma delta memory trio sqlite vector keyword budget deadline".split()


class Soak:
    """Shared state of one run: acknowledged lines, latencies, errors, RSS."""

    def __init__(self, daemon: BenchDaemon, minutes: float) -> None:
        self.daemon = daemon
        self.end = time.monotonic() + minutes * 60
        self.start = time.monotonic()
        self.lock = threading.Lock()
        self.acknowledged: list[tuple[str, str]] = []  # (path, line)
        self.forgotten: set[str] = set()
        self.latencies: list[tuple[float, float]] = []  # (elapsed s, ms)
        self.errors: list[str] = []
        self.rss: list[tuple[float, int]] = []

    def running(self) -> bool:
        return time.monotonic() < self.end

    def error(self, where: str, exc: BaseException) -> None:
        with self.lock:
            self.errors.append(f"{where}: {type(exc).__name__}: {exc}")

    def appender(self, number: int) -> None:
        count = 0
        with self.daemon.client() as client:
            while self.running():
                line = f"soak client {number} line {count} {random.choice(WORDS)}"
                try:
                    result = client.append(line)
                    with self.lock:
                        self.acknowledged.append((result.path, line))
                except Exception as exc:
                    self.error("append", exc)
                count += 1
                time.sleep(0.05)

    def rewriter(self) -> None:
        """A stale save every 2 s, based on a copy read 50 ms before it: by
        rename, or (odd ones) by truncating the file and writing the copy
        100 ms later, so appends also land in the emptied file."""
        k = 0
        while self.running():
            time.sleep(2.0)
            daily = sorted((self.daemon.workspace / "memory").glob("????-??-??.md"))
            if not daily:
                continue
            path = daily[-1]
            text = path.read_text("utf-8")
            time.sleep(0.05)
            saved = text + f"editor line {k}\n"
            if k % 2:
                with path.open("w", encoding="utf-8") as f:
                    time.sleep(0.1)
                    f.write(saved)
            else:
                temp = path.with_name(f".{path.name}.swp")
                temp.write_text(saved, "utf-8")
                os.replace(temp, path)
            k += 1

    def searcher(self) -> None:
        with self.daemon.client() as client:
            while self.running():
                started = time.perf_counter()
                try:
                    client.search(" ".join(random.sample(WORDS, 2)), limit=5)
                    ms = (time.perf_counter() - started) * 1000
                    with self.lock:
                        self.latencies.append((time.monotonic() - self.start, ms))
                except Exception as exc:
                    self.error("search", exc)
                time.sleep(0.1)

    def forgetter(self) -> None:
        with self.daemon.client() as client:
            while self.running():
                time.sleep(15.0)
                with self.lock:
                    if not self.acknowledged:
                        continue
                    _, line = random.choice(self.acknowledged)
                try:
                    if client.forget(text=line).removed:
                        with self.lock:
                            self.forgotten.add(line)
                except Exception as exc:
                    self.error("forget", exc)

    def maintainer(self, model: str | None, switch_s: float, rebuild_s: float) -> None:
        """RSS every minute, a model switch and a full rebuild now and then."""
        pid = self.daemon.pid
        assert pid is not None
        last_switch = last_rebuild = last_rss = time.monotonic()
        with_model = False
        while self.running():
            time.sleep(1.0)
            now = time.monotonic()
            if now - last_rss >= 60 or not self.rss:
                self.rss.append((now - self.start, rss_kb(pid) or 0))
                last_rss = now
            if model is not None and now - last_switch >= switch_s:
                with_model = not with_model
                embedder = embedder_toml(model) if with_model else KEYWORD_ONLY
                try:
                    self.daemon.reload_config(embedder + SETTLE)
                except Exception as exc:
                    self.error("model switch", exc)
                last_switch = now
            if now - last_rebuild >= rebuild_s:
                try:
                    self.daemon.sync(full=True)
                except Exception as exc:
                    self.error("rebuild", exc)
                last_rebuild = now
        self.rss.append((time.monotonic() - self.start, rss_kb(pid) or 0))


def consistency(soak: Soak) -> dict[str, object]:
    """Index vs a full rebuild; every acknowledged line present or journalled."""
    daemon = soak.daemon
    time.sleep(5.0)  # let the journal keeper see the last rewrite
    daemon.sync()
    status = daemon.status()
    chunks_before = status.chunks
    daemon.sync(full=True)
    chunks_after = daemon.status().chunks
    journal_path = daemon.state_dir / "journal" / "default.json"
    journalled = (
        {e["block"] for e in json.loads(journal_path.read_bytes())}
        if journal_path.exists()
        else set()
    )
    texts: dict[str, str] = {}
    lost = []
    for path, line in soak.acknowledged:
        if line in soak.forgotten:
            continue
        if path not in texts:
            file = daemon.workspace / path
            texts[path] = file.read_text("utf-8") if file.exists() else ""
        if f"{line}\n" not in texts[path] and line not in journalled:
            lost.append(line)
    return {
        "chunks_index": chunks_before,
        "chunks_rebuilt": chunks_after,
        "index_equals_rebuild": chunks_before == chunks_after,
        "acknowledged": len(soak.acknowledged),
        "forgotten": len(soak.forgotten),
        "lost": lost[:20],
        "lost_count": len(lost),
    }


def summarise(soak: Soak) -> dict[str, object]:
    windows: dict[int, list[float]] = {}
    for at, ms in soak.latencies:
        windows.setdefault(int(at // 300), []).append(ms)
    latency = [
        {
            "window_min": f"{w * 5}-{w * 5 + 5}",
            "searches": len(v),
            "p50_ms": round(statistics.median(v), 1),
            "p99_ms": round(sorted(v)[min(len(v) - 1, int(len(v) * 0.99))], 1),
        }
        for w, v in sorted(windows.items())
    ]
    last = [kb for at, kb in soak.rss if at >= soak.rss[-1][0] - 600]
    growth = (last[-1] - last[0]) / last[0] * 100 if last and last[0] else 0.0
    return {
        "rss_kb": [{"at_s": round(at), "kb": kb} for at, kb in soak.rss],
        "rss_growth_last_10_min_pct": round(growth, 2),
        "latency": latency,
        "errors": soak.errors[:50],
        "error_count": len(soak.errors),
    }


def markdown(command: str, report: dict[str, Any]) -> str:
    """The report as the Markdown a results page shows."""
    rss = report["rss_kb"]
    lines = [
        f"`{command}`",
        "",
        "| figure | value |",
        "|---|---:|",
        f"| minutes | {report['minutes']:g} |",
        f"| acknowledged appends | {report['acknowledged']} |",
        f"| lost | {report['lost_count']} |",
        f"| restored after stale rewrites (log lines) | {report['restored_log_lines']} |",
        f"| forgotten | {report['forgotten']} |",
        f"| errors | {report['error_count']} |",
        f"| index equals a full rebuild | {report['index_equals_rebuild']} |",
        f"| daemon RSS first / last (MB) | {rss[0]['kb'] / 1024:.0f} / "
        f"{rss[-1]['kb'] / 1024:.0f} |",
        f"| RSS growth, last 10 min | {report['rss_growth_last_10_min_pct']} % |",
        "",
        "| minutes | searches | p50 ms | p99 ms |",
        "|---|---:|---:|---:|",
    ]
    lines += [
        f"| {w['window_min']} | {w['searches']} | {w['p50_ms']} | {w['p99_ms']} |"
        for w in report["latency"]
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.soak", description=__doc__)
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--clients", type=int, default=3)
    parser.add_argument("--model", default=None, help="embedding provider to switch to (local)")
    parser.add_argument("--switch-minutes", type=float, default=5.0)
    parser.add_argument("--rebuild-every", type=float, default=7.0, help="minutes")
    parser.add_argument("--json", type=Path, default=None, help="also write the report here")
    args = parser.parse_args(argv)
    _, command = invocation("bench.soak", argv)
    with BenchDaemon(config_toml=KEYWORD_ONLY + SETTLE) as daemon:
        daemon.start()
        soak = Soak(daemon, args.minutes)
        threads = [
            threading.Thread(target=soak.appender, args=(n,)) for n in range(args.clients)
        ] + [
            threading.Thread(target=soak.rewriter),
            threading.Thread(target=soak.searcher),
            threading.Thread(target=soak.forgetter),
            threading.Thread(
                target=soak.maintainer,
                args=(args.model, args.switch_minutes * 60, args.rebuild_every * 60),
            ),
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        report = {"minutes": args.minutes, **summarise(soak), **consistency(soak)}
        report["restored_log_lines"] = daemon.log().count("restored ")
    if args.json is not None:
        document = {"command": command, "results": report}
        args.json.write_text(json.dumps(document, indent=2) + "\n")
    print(markdown(command, report))
    ok = (
        report["error_count"] == 0
        and report["lost_count"] == 0
        and report["index_equals_rebuild"] is True
    )
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
