"""PNG plots of a `python -m bench` run: latency vs corpus size, recall by method.

Input is the combined report `bench.suite` writes (its ``parts`` hold each
benchmark's own JSON report), so a plot can be redrawn from a results file
without running anything::

    python -m bench.plots bench/results/2026-11-23.json

matplotlib is optional (``pip install -e '.[bench]'``): it is imported only
here, with the non-interactive Agg backend, and `matplotlib_available` lets
callers skip plotting when it is absent.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

__all__ = ["matplotlib_available", "plot_latency", "plot_recall", "plot_report"]

DPI: Final = 120


def matplotlib_available() -> bool:
    return importlib.util.find_spec("matplotlib") is not None


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_latency(latency: Mapping[str, Any], out: Path) -> Path:
    """Search latency (ms, log scale) against chunks (log scale), from a search_latency report."""
    plt = _pyplot()
    rows = sorted(latency["results"], key=lambda r: r["chunks"])
    chunks = [r["chunks"] for r in rows]
    series = [
        ("in-daemon search p50", [r["search_took"]["p50"] for r in rows], "o-"),
        ("in-daemon search p95", [r["search_took"]["p95"] for r in rows], "o--"),
        ("client round trip p50", [r["search_round_trip"]["p50"] for r in rows], "s-"),
        ("`omem-client search` process p50", [r["cli_wall"]["p50"] for r in rows], "^-"),
        ("`python -c pass` process p50", [r["python_wall"]["p50"] for r in rows], "v:"),
    ]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for label, values, style in series:
        ax.plot(chunks, values, style, label=label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("chunks in the index")
    ax.set_ylabel("milliseconds")
    mode = latency.get("machine", {}).get("search_mode", "keyword")
    ax.set_title(f"Search latency vs corpus size ({mode.split(' (')[0]} search)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=DPI)
    plt.close(fig)
    return out


def plot_recall(locomo: Mapping[str, Any], out: Path) -> Path:
    """R@1/5/10 (any evidence turn) and MRR per method, from a locomo report."""
    plt = _pyplot()
    results = [r for r in locomo["results"] if r["layout"] == "dated"] or list(locomo["results"])
    labels = [r["method"] for r in results]
    metrics = [("R@1", "r1_any"), ("R@5", "r5_any"), ("R@10", "r10_any"), ("MRR", "mrr")]
    width = 0.8 / len(metrics)
    fig, ax = plt.subplots(figsize=(max(6.0, 1.4 * len(labels) + 2), 4.5))
    for i, (name, key) in enumerate(metrics):
        xs = [j + (i - (len(metrics) - 1) / 2) * width for j in range(len(labels))]
        values = [r["overall"][key] for r in results]
        bars = ax.bar(xs, values, width, label=name)
        ax.bar_label(bars, fmt="%.2f", fontsize=7, padding=1)
    ax.set_xticks(range(len(labels)), labels)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("fraction of questions")
    n = results[0]["overall"]["n"] if results else 0
    ax.set_title(f"LoCoMo evidence retrieval by method (n={n} questions)")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=8, ncols=len(metrics), loc="upper left")
    fig.tight_layout()
    fig.savefig(out, dpi=DPI)
    plt.close(fig)
    return out


def plot_report(report: Mapping[str, Any], out_dir: Path, stem: str) -> list[Path]:
    """Every plot the combined *report* has data for, as ``<stem>-<name>.png`` in *out_dir*."""
    parts = report.get("parts", {})
    made: list[Path] = []
    latency = parts.get("latency", {}).get("report")
    if latency and latency.get("results"):
        made.append(plot_latency(latency, out_dir / f"{stem}-latency.png"))
    locomo = parts.get("locomo", {}).get("report")
    if locomo and locomo.get("results"):
        made.append(plot_recall(locomo, out_dir / f"{stem}-recall.png"))
    return made


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m bench.plots RESULTS.json``: redraw the plots next to the file."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print("usage: python -m bench.plots RESULTS.json", file=sys.stderr)
        return 2
    path = Path(args[0])
    if not matplotlib_available():
        print("plots: matplotlib is not installed (pip install -e '.[bench]')", file=sys.stderr)
        return 1
    report = json.loads(path.read_text("utf-8"))
    for made in plot_report(report, path.parent, path.stem):
        print(made)
    return 0


if __name__ == "__main__":
    sys.exit(main())
