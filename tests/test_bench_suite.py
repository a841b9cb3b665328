"""``python -m bench --quick`` must keep running every part, or the harness rots unnoticed.

One quick suite run (tiny corpora, a tiny LoCoMo-shaped file, keyword search
only, so no model is loaded; a few seconds) goes through the same `main` as
the full run: real daemons, the real client, client processes for the load
part. Only bookkeeping and correctness are asserted (every part ran, no op
failed, appended notes are found, the files are written), never speed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bench.load_clients import APPEND, SEARCH, plan_ops
from bench.procstat import children_of, cpu_seconds, peak_rss_kb
from bench.report import progress
from bench.suite import OPT_IN, QUICK, main
from test_bench_locomo import TINY

LINUX = sys.platform.startswith("linux")


def test_plan_ops_is_exact_deterministic_and_even() -> None:
    plans = plan_ops(103, 4, 0.1, seed=5)
    assert [len(p) for p in plans] == [26, 26, 26, 25]
    ops = [op for plan in plans for op in plan]
    assert sum(kind == APPEND for kind, _ in ops) == 10
    assert sum(kind == SEARCH for kind, _ in ops) == 93
    assert plan_ops(103, 4, 0.1, seed=5) == plans
    assert plan_ops(103, 4, 0.1, seed=6) != plans
    appended = [text for kind, text in ops if kind == APPEND]
    assert len(set(appended)) == len(appended)  # each append is findable on its own


@pytest.mark.skipif(not LINUX, reason="reads /proc")
def test_progress_goes_to_stderr_after_the_parts_label(capsys: pytest.CaptureFixture[str]) -> None:
    progress("freshness")("writing the workspace")
    progress()("conv 0 done")
    out, err = capsys.readouterr()
    assert out == ""  # stdout is the report's
    assert err == "[freshness] writing the workspace\nconv 0 done\n"


def test_procstat_sees_a_child_process() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        assert child.pid in children_of(os.getpid())
        assert (peak_rss_kb(child.pid) or 0) > 0
        assert (cpu_seconds(os.getpid()) or 0.0) > 0.0
    finally:
        child.kill()
        child.wait()
    assert peak_rss_kb(child.pid) is None


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, Path]:
    root = tmp_path_factory.mktemp("suite")
    data = root / "locomo-tiny.json"
    data.write_text(json.dumps(TINY), encoding="utf-8")
    out = root / "results"
    code = main(["--quick", "--out", str(out), "--locomo-data", str(data)])
    return code, out


def _report(out: Path) -> dict[str, Any]:
    (path,) = [p for p in out.glob("*.json") if not p.name.endswith("-locomo.json")]
    report: dict[str, Any] = json.loads(path.read_text("utf-8"))
    return report


@pytest.mark.e2e
def test_quick_suite_runs_every_part(quick_run: tuple[int, Path]) -> None:
    code, out = quick_run
    assert code == 0
    report = _report(out)
    assert report["command"].endswith(
        "-m bench --quick --out "
        + str(out)
        + " --locomo-data "
        + str(out.parent / "locomo-tiny.json")
    )
    assert report["settings"]["quick"] is True
    assert report["machine"]["cpu_count"] >= 1
    assert len(report["machine"]["load_average_end"]) == 3
    assert report["git"].keys() == {"commit", "describe", "dirty"}
    assert report["wall_s"] > 0

    parts = report["parts"]
    assert set(parts) == set(QUICK) - OPT_IN  # the soak runs only when asked for
    for name, part in parts.items():
        assert part["exit_code"] == 0, name
        assert part["command"].startswith("python -m bench."), name
        assert part["report"]["results"], name

    (load,) = parts["load"]["report"]["results"]
    (run,) = load["runs"]
    assert run["errors"] == 0
    assert run["appends_found"] == run["appends_checked"] > 0
    assert run["searches"]["n"] + run["appends"]["n"] == run["ops"]
    assert run["workers"] == "processes"

    runs = parts["indexing"]["report"]["results"]["runs"]
    assert [r["embeddings_computed"] for r in runs] == [None, None]
    assert all(r["chunks"] >= 60 and r["chunks_per_s"] > 0 for r in runs)

    (grown,) = parts["index-memory"]["report"]["results"]
    assert grown["chunks"] > 100
    assert grown["file_mb"] == pytest.approx(0.2, abs=0.01)

    sizes = parts["append"]["report"]["results"]
    assert [r["lines"] for r in sizes] == [20, 200]
    assert all(r["p50_ms"] > 0 and r["samples"] == 3 for r in sizes)

    products = parts["int8"]["report"]["results"]
    assert [r["name"] for r in products] == ["qkv", "attention out", "ffn in", "ffn out"]
    assert all(r["float32_ms"] > 0 and r["int8_ms"] > 0 for r in products)

    # LoCoMo's per-question rows live in their own file, not in the summary.
    locomo = parts["locomo"]
    assert (out / locomo["details"]).is_file()
    assert "queries" not in locomo["report"]["results"][0]
    assert locomo["report"]["results"][0]["overall"]["n"] == 2  # conversation 0 of TINY


@pytest.mark.e2e
def test_quick_suite_writes_markdown_without_plots(quick_run: tuple[int, Path]) -> None:
    _, out = quick_run
    (md,) = out.glob("*.md")
    text = md.read_text("utf-8")
    for heading in ("## Retrieval quality (LoCoMo)", "## Search latency", "## Freshness"):
        assert heading in text
    assert "## Throughput under load (keyword search)" in text
    assert "## Indexing" in text
    assert "`python -m bench.load --sections 60 --clients 4 --ops 40`" in text
    assert "--json" not in text  # each part's temp results path is not shown
    assert not list(out.glob("*.png"))


@pytest.mark.e2e
def test_plots_from_the_quick_report(quick_run: tuple[int, Path], tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    from bench.plots import plot_report

    _, out = quick_run
    made = plot_report(_report(out), tmp_path, "quick")
    assert sorted(p.name for p in made) == ["quick-latency.png", "quick-recall.png"]
    for png in made:
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
