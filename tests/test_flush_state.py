"""The flush decision: threshold arithmetic, once per cycle, persisted."""

from __future__ import annotations

from pathlib import Path

import pytest

from openmemoryd.memory.flush_state import KEEP_S, FlushTracker, flush_threshold

W = 200_000
T = flush_threshold(W, 20_000, 4_000)


def decide(tracker: FlushTracker, tokens: int, **kw: object) -> tuple[bool, str, int]:
    options: dict[str, object] = {"compaction_count": None, "blocked": None} | kw
    d = tracker.decide("coder/s1", tokens=tokens, threshold=T, **options)  # type: ignore[arg-type]
    return d.should_flush, d.reason, d.cycle


def test_threshold_is_window_minus_reserve_minus_soft() -> None:
    assert T == 176_000
    assert flush_threshold(16_000, 20_000, 4_000) == 0  # tiny windows flush at once


def test_once_per_cycle_and_a_new_cycle_after_compaction(tmp_path: Path) -> None:
    tracker = FlushTracker(tmp_path / "flush.json")
    assert decide(tracker, 175_999) == (False, "below_threshold", 0)
    assert decide(tracker, 176_000) == (True, "threshold_reached", 0)
    assert decide(tracker, 190_000) == (False, "already_flushed", 0)
    # the context was compacted: tokens fell back, a new cycle began
    assert decide(tracker, 40_000) == (False, "below_threshold", 1)
    assert decide(tracker, 120_000) == (False, "below_threshold", 1)
    assert decide(tracker, 180_000) == (True, "threshold_reached", 1)


def test_compaction_count_names_the_cycle(tmp_path: Path) -> None:
    tracker = FlushTracker(tmp_path / "flush.json")
    assert decide(tracker, 180_000, compaction_count=2) == (True, "threshold_reached", 2)
    assert decide(tracker, 185_000, compaction_count=2) == (False, "already_flushed", 2)
    assert decide(tracker, 185_000, compaction_count=3) == (True, "threshold_reached", 3)


def test_the_record_survives_a_restart_and_sessions_are_separate(tmp_path: Path) -> None:
    path = tmp_path / "state" / "flush.json"
    assert decide(FlushTracker(path), 180_000) == (True, "threshold_reached", 0)
    again = FlushTracker(path)
    assert decide(again, 181_000) == (False, "already_flushed", 0)
    other = again.decide(
        "coder/s2", tokens=180_000, threshold=T, compaction_count=None, blocked=None
    )
    assert other.should_flush
    assert path.stat().st_mode & 0o777 == 0o600


def test_blocked_never_flushes_nor_uses_up_the_cycle(tmp_path: Path) -> None:
    tracker = FlushTracker(tmp_path / "flush.json")
    assert decide(tracker, 180_000, blocked="read_only") == (False, "read_only", 0)
    assert decide(tracker, 180_000) == (True, "threshold_reached", 0)


def test_below_threshold_calls_do_not_write(tmp_path: Path) -> None:
    path = tmp_path / "flush.json"
    tracker = FlushTracker(path)
    for tokens in range(0, 170_000, 10_000):
        decide(tracker, tokens)
    assert not path.exists()


@pytest.mark.parametrize("damage", [b"{not json", b'{"sessions": {"caf\xe9": {}}}'])
def test_a_damaged_record_is_moved_aside(tmp_path: Path, damage: bytes) -> None:
    path = tmp_path / "flush.json"
    path.write_bytes(damage)  # the second: a Latin-1 byte inside a string
    assert decide(FlushTracker(path), 180_000) == (True, "threshold_reached", 0)
    assert [p.name.startswith("flush.json.corrupt-") for p in tmp_path.iterdir()].count(True) == 1


def test_idle_sessions_are_forgotten(tmp_path: Path) -> None:
    tracker = FlushTracker(tmp_path / "flush.json")
    tracker.decide("a/old", tokens=T, threshold=T, compaction_count=None, blocked=None, now=0.0)
    tracker.decide(
        "a/new", tokens=T, threshold=T, compaction_count=None, blocked=None, now=KEEP_S + 1
    )
    text = (tmp_path / "flush.json").read_text()
    assert "a/new" in text
    assert "a/old" not in text


def test_compact_closes_the_cycle_it_flushed(tmp_path: Path) -> None:
    tracker = FlushTracker(tmp_path / "flush.json")
    assert decide(tracker, 180_000) == (True, "threshold_reached", 0)
    assert tracker.compacted("coder/s1") == 1
    # a fresh cycle: the next crossing flushes again, even without a token dip
    assert decide(tracker, 181_000) == (True, "threshold_reached", 1)
    # an agent still counting the old cycle is told it already flushed there
    reloaded = FlushTracker(tmp_path / "flush.json")
    assert reloaded.compacted("coder/s1") == 2
    assert decide(reloaded, 181_000, compaction_count=1) == (False, "already_flushed", 1)
