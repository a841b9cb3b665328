"""End to end: a search says the index may lag the files only when it does.

Agents append and then search. The append is indexed before it returns,
but the watcher also reports the write, and that event waited in the sync
queue for the debounce (1.5 s), during which every search answered
`stale`: "(the index is being updated; results may lag the files)" after
each of an agent's own appends. A change someone else makes is still
reported until it is indexed.
"""

from __future__ import annotations

import time

import pytest

from conftest import Daemon

pytestmark = pytest.mark.e2e


def test_the_daemons_own_append_leaves_no_search_stale(daemon: Daemon) -> None:
    with daemon.client() as client:
        client.sync()
        for n in range(3):
            done = client.append(f"zebra crossing note {n}", path="memory/zz.md")
            assert done.indexed
            time.sleep(0.5)  # the watcher has seen the write by now
            result = client.search("zebra crossing")
            assert not result.stale, n
            assert any(hit.path == "memory/zz.md" for hit in result.results)
    cli = daemon.cli("search", "zebra crossing")
    assert "being updated" not in cli.stderr


def test_a_change_by_someone_else_is_stale_until_indexed(daemon: Daemon) -> None:
    path = daemon.env.workspace / "memory" / "yy.md"
    with daemon.client() as client:
        client.append("yak shaving note", path="memory/yy.md")
        time.sleep(0.5)
        with path.open("a", encoding="utf-8") as f:  # a person's edit
            f.write("\nyak grooming note\n")
        time.sleep(0.5)  # seen by the watcher, still within the debounce
        assert client.search("yak").stale
        assert any(
            "grooming" in h.snippet for h in client.search("yak grooming", fresh=True).results
        )
