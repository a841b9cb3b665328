"""The freshness benchmark must keep running, or its figures go stale unnoticed.

A tiny run through the same `main` as the real one (a real daemon, watcher
and client). Only shape and correctness are asserted, never speed: every
change must be found, and no fresh search may come back stale.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.freshness import main

pytestmark = pytest.mark.e2e


def test_tiny_run_finds_every_change(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "fresh.json"
    argv = ["--sections", "20", "--edits", "3", "--queries", "6", "--debounce-ms", "100"]
    assert main([*argv, "--json", str(out)]) == 0

    table = capsys.readouterr().out
    assert "| edit → plain search (watcher) | 3 |" in table
    assert "| idle: `search --fresh` | 6 |" in table

    result = json.loads(out.read_text("utf-8"))["results"]
    assert result["edit_not_found"] == 0
    assert result["append_not_found"] == 0
    assert result["fresh_not_found"] == 0
    assert result["fresh_stale"] == 0
    # the watcher path waits out the debounce; an append does not
    assert result["edit_to_searchable"]["min"] >= 100
    assert result["append_to_searchable"]["p50"] < result["edit_to_searchable"]["p50"]
