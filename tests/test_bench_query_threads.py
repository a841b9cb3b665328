"""bench.query_threads: its arguments, its summary, and a tiny run through a real daemon."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from bench.query_threads import Setting, _threads, main, summary


def test_thread_lists_are_parsed_and_bounded() -> None:
    assert _threads("1,2") == [1, 2]
    for bad in ("", "0", "1,x", "65"):
        with pytest.raises(argparse.ArgumentTypeError):
            _threads(bad)


def test_summary_gives_percentiles_and_ratios_to_the_first_setting() -> None:
    one = Setting(1, embedding_ms=[30.0, 40.0, 50.0], idle_ms=[20.0, 20.0], idle_cpu_ms=[21.0])
    two = Setting(2, embedding_ms=[15.0, 20.0, 25.0], idle_ms=[10.0, 10.0], idle_cpu_ms=[25.0])
    first, second = summary([one, two])
    assert first["embedding_p50_ms"] == 40.0
    assert first["embedding_p50_ratio"] == 1.0
    assert second["embedding_p50_ratio"] == 0.5
    assert second["idle_p50_ratio"] == 0.5
    assert second["idle_cpu_ms_per_search"] == 25.0
    assert summary([Setting(1)])[0]["idle_p50_ms"] is None  # nothing measured, nothing claimed


@pytest.mark.e2e
def test_a_tiny_run_measures_both_settings_through_the_daemon(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "q.json"
    args = ["--threads", "1,2", "--sections", "3", "--queries", "3", "--rounds", "1"]
    assert main([*args, "--json", str(out)]) == 0
    assert "| query_threads |" in capsys.readouterr().out
    results = json.loads(out.read_text("utf-8"))["results"]
    rows = [r for r in results if "idle_p50_ms" in r]
    assert [r["threads"] for r in rows] == [1, 2]
    assert all(r["idle_searches"] == 3 and r["idle_p50_ms"] > 0 for r in rows)
