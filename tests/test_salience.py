"""Salience: reinforced and often-shown memories rank higher among relevant ones."""

from __future__ import annotations

import json
from dataclasses import replace

import apsw
import pytest

from conftest import KEYWORD_ONLY, Daemon, Env
from openmemoryd.search.candidate import Candidate
from openmemoryd.search.salience import apply_salience, reinforcement


def candidate(id: int, text: str, score: float, accessed: int = 0) -> Candidate:
    return Candidate(
        id, f"{id}.md", "memory", 1, 1, "", text, score, None, score, access_count=accessed
    )


def test_reinforcement_is_the_highest_count_on_a_line() -> None:
    assert reinforcement("- tea") == 1
    assert reinforcement("- tea (×3)\n- coffee (×12) \n- x (×2)") == 12
    assert reinforcement("a (×3) in the middle of a line") == 1


def test_salience_raises_towards_one_and_reorders_near_ties_only() -> None:
    plain = candidate(1, "- Priya drinks oolong tea", 0.62)
    logged = candidate(2, "- Wei drinks oolong tea (×3)", 0.60)
    shown = candidate(3, "- Marco drinks oolong tea", 0.58, accessed=20)
    far = candidate(4, "- someone mentioned tea once (×2)", 0.10)
    ranked = apply_salience(
        [plain, logged, shown, far], reinforcement_weight=0.5, access_weight=0.2
    )
    assert [c.id for c in ranked] == [2, 3, 1, 4]
    assert all(0.0 <= c.score < 1.0 for c in ranked)
    by_id = {c.id: c for c in ranked}
    assert by_id[1].score == plain.score  # said once, never shown: unchanged
    assert by_id[4].score < plain.score  # salience does not lift the irrelevant past the relevant


def test_no_weights_no_change() -> None:
    many = [candidate(i, f"- note {i} (×{i + 1})", 0.9 - i / 10, accessed=i) for i in range(5)]
    ranked = apply_salience(many, reinforcement_weight=0.0, access_weight=0.0)
    assert ranked == [replace(c, salience=1.0) for c in many]


@pytest.mark.e2e
def test_through_the_daemon_reinforced_notes_lead_and_shown_hits_are_counted(env: Env) -> None:
    env.write_config(KEYWORD_ONLY + "\n[search.salience]\nenabled = true\n")
    memory = env.workspace / "memory"
    memory.mkdir(parents=True, exist_ok=True)
    (memory / "a.md").write_text("# Tea\n\n- Priya drinks oolong tea\n")
    (memory / "b.md").write_text("# Tea\n\n- Wei drinks oolong tea every single morning (×4)\n")
    daemon = Daemon(env).start()
    try:
        for _ in range(3):
            reply = json.loads(daemon.cli("search", "drinks oolong tea", "--json").stdout)
            assert [h["path"] for h in reply["results"]][:2] == ["memory/b.md", "memory/a.md"]
    finally:
        daemon.stop()  # counts not yet flushed are written as the engine closes
    index = apsw.Connection(str(env.config().index_path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        counts = dict(index.execute("SELECT path, max(access_count) FROM chunks GROUP BY path"))
    finally:
        index.close()
    assert counts["memory/a.md"] == 3
    assert counts["memory/b.md"] == 3
