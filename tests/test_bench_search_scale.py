"""The search-at-scale benchmark must keep running end to end with vectors:
a 500-chunk index, the real local model for queries, both vector paths."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.search_scale import main

pytestmark = pytest.mark.e2e


def test_a_tiny_run_measures_every_mode_on_both_paths(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "scale.json"
    argv = ["--sizes", "500", "--queries", "3", "--centres", "8", "--no-locomo"]
    argv += ["--compare-multipliers", "2,4"]
    assert main([*argv, "--cache", str(tmp_path / "cache"), "--json", str(out)]) == 0

    table = capsys.readouterr().out
    assert "| chunks | search | vector path |" in table
    assert "| chunks | candidate multiplier | hybrid quantised p50 by round | median |" in table
    report = json.loads(out.read_text("utf-8"))
    assert report["benchmark"] == "search_scale"
    (size,) = report["results"]["sizes"]
    runs = {(r["mode"], r["path"]) for r in size["runs"]}
    assert runs == {
        ("keyword", "-"),
        ("hybrid", "exact"),
        ("hybrid", "quantised"),
        ("vector", "exact"),
        ("vector", "quantised"),
    }
    assert all(r["empty"] < 5 for r in size["runs"])
    assert size["built"]["chunks"] >= 500
    assert 0.0 <= size["recall"]["recall"] <= 1.0
    assert sorted(size["multipliers"]) == ["2", "4"]  # JSON keys
    assert all(len(p50s) == 3 and min(p50s) > 0 for p50s in size["multipliers"].values())
