"""The query-dates benchmark keeps running and reports every query: shape
and sanity, never speed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.query_dates import EVERYDAY, REPEATED, main
from omem_protocol import MAX_QUERY_CHARS


def test_a_run_reports_every_query(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "dates.json"
    assert main(["--repeat", "1", "--json", str(out)]) == 0
    results = json.loads(out.read_text())["results"]
    assert len(results) == len(EVERYDAY) + len(REPEATED)
    assert all(r["median_ms"] > 0 for r in results)
    # every everyday question names a date but the last, which names none
    named = [r["ranges"] > 0 for r in results[: len(EVERYDAY)]]
    assert named == [True] * (len(EVERYDAY) - 1) + [False]
    assert all(r["chars"] == MAX_QUERY_CHARS for r in results[len(EVERYDAY) :])
    assert "| '最近' × 4096 | repeated | 8192 |" in capsys.readouterr().out


def test_repeat_must_be_positive() -> None:
    with pytest.raises(SystemExit):
        main(["--repeat", "0"])
