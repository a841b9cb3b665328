"""bench.model_start: a daemon's first-search costs, measured in fresh interpreters."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import model_start


def test_a_fresh_interpreter_times_each_step_and_the_shipped_baseline_is_cheap() -> None:
    run = model_start.run_child("shipped")
    assert run["has_shipped"] is True
    for step in model_start.STEPS:
        assert run[f"{step}_ms"] >= 0.0
        assert run[f"{step}_cpu_ms"] >= 0.0
    # read from a 98 KB file, not 64 passages through the model
    assert run["baseline_cpu_ms"] < run["model_cpu_ms"] / 4


def test_runs_alternate_and_the_report_has_a_row_a_mode(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    order: list[str] = []

    def fake(mode: str) -> dict[str, object]:
        order.append(mode)
        times = {f"{s}_{k}": 1.0 for s in model_start.STEPS for k in ("ms", "cpu_ms")}
        return {"has_shipped": True, **times}

    monkeypatch.setattr(model_start, "run_child", fake)
    out = tmp_path / "r.json"
    assert model_start.main(["--runs", "2", "--json", str(out)]) == 0
    assert order == ["shipped", "shipped", "embedded", "embedded", "shipped"]  # a probe, ABBA
    table = capsys.readouterr().out
    assert "| shipped | 1 (1) | 1 (1) | 1 (1) | 3 |" in table
    assert "| embedded |" in table
    report = json.loads(out.read_text())
    assert set(report["results"]["medians"]) == {"shipped", "embedded"}
    assert all(len(runs) == 2 for runs in report["results"]["samples"].values())
