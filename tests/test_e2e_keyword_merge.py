"""End to end: the daemon merges its keyword index once indexing settles,
says so in `status`, and answers searches all along."""

from __future__ import annotations

import time

import pytest

from conftest import Daemon, Env

pytestmark = pytest.mark.e2e

MERGE_TIMEOUT_S = 60.0


def test_the_keyword_index_is_merged_after_indexing_settles(env: Env) -> None:
    env.write_config('[embedding]\nprovider = "none"\n')
    daemon = Daemon(env).start()
    try:
        memory = env.workspace / "memory"
        memory.mkdir(parents=True, exist_ok=True)
        for batch in range(6):  # one indexing pass each: FTS5 segments of their own
            for n in range(40):
                (memory / f"trip-{batch}-{n}.md").write_text(
                    f"# Trip {batch}.{n}\n\nsandpiper walk {n} by the lake, batch {batch}; "
                    f"湖边的水鸟 {n}\n"
                )
            daemon.cli("sync")
        deadline = time.monotonic() + MERGE_TIMEOUT_S
        with daemon.client() as client:
            while True:
                keywords = client.status().keyword_index
                assert keywords is not None
                assert client.search("sandpiper lake").results  # answers while merging
                if keywords.state == "merged" and "keyword index merged" in daemon.log():
                    break
                assert time.monotonic() < deadline, (keywords, daemon.log())
                time.sleep(0.2)
            assert keywords.segments == 1
            hits = client.search("sandpiper walk 7 batch 3", limit=3).results
            assert hits
            assert hits[0].path == "memory/trip-3-7.md"
        assert "Keywords:   1 segment (merged)" in daemon.cli("status").stdout
    finally:
        daemon.stop()
