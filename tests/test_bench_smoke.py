"""The latency benchmark must keep running end to end, or its figures go stale unnoticed.

A tiny run (50 sections, a handful of searches and processes) goes through
the same `main` as the real one: a real daemon, the real ``omem-client``
and the real report. The assertions check shape and sanity, never speed,
so they hold on any machine.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.search_latency import main, percentile

SECTIONS = 50
QUERIES = 20
CLI_RUNS = 3
SUMMARY_KEYS = {"n", "p50", "p95", "min", "max"}


def test_percentile_matches_nearest_values() -> None:
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 50) == pytest.approx(50.5)
    assert percentile(values, 95) == pytest.approx(95.05)
    assert percentile([7.0], 95) == 7.0
    with pytest.raises(ValueError, match="no values"):
        percentile([], 50)


@pytest.mark.e2e
def test_tiny_run_reports_table_and_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "latency.json"
    argv = [
        "--sizes",
        str(SECTIONS),
        "--queries",
        str(QUERIES),
        "--cli-runs",
        str(CLI_RUNS),
        "--seed",
        "3",
        "--json",
        str(out),
    ]

    assert main(argv) == 0

    table = capsys.readouterr().out
    assert "| chunks | index s | in-daemon search p50 / p95 ms" in table
    assert "`python -c pass` p50 / p95 ms" in table
    rows = [line for line in table.splitlines() if line.startswith("| ") and "x |" in line]
    assert len(rows) == 1

    report = json.loads(out.read_text("utf-8"))
    assert report["benchmark"] == "search_latency"
    assert report["argv"] == argv
    assert report["command"].endswith("-m bench.search_latency " + " ".join(argv))
    machine = report["machine"]
    assert machine["cpu_count"] >= 1
    assert machine["python"].startswith("3.")
    assert len(machine["load_average"]) == 3
    assert machine["date"]
    assert report["settings"]["seed"] == 3

    (result,) = report["results"]
    assert result["sections"] == SECTIONS
    # Each section is about one chunk; title-only root files may add one each.
    assert SECTIONS <= result["chunks"] <= SECTIONS + 5
    assert result["files_indexed"] == result["files"]
    assert result["index_ms"] > 0
    for key, n in (
        ("search_took", QUERIES),
        ("search_round_trip", QUERIES),
        ("cli_wall", CLI_RUNS),
        ("python_wall", CLI_RUNS),
    ):
        summary = result[key]
        assert set(summary) == SUMMARY_KEYS, key
        assert summary["n"] == n, key
        assert 0 < summary["min"] <= summary["p50"] <= summary["p95"] <= summary["max"], key
    # The round trip contains the in-daemon time; a process contains a search.
    assert result["search_round_trip"]["p50"] >= result["search_took"]["p50"]
    assert result["cli_wall"]["p50"] > result["search_took"]["p50"]
    assert result["cli_over_python_p50"] > 0
    assert result["searches_without_results"] < QUERIES
