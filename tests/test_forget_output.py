"""What `forget` prints about the memory it removed, without a daemon.

A line may hold up to a million characters, and the confirmation printed it
whole: 300 KB on the terminal, or in an agent's context through MCP. The
text output now quotes its start and says how much more there was; the
reply itself (``--json``, the MCP structured result) keeps every character.
"""

from __future__ import annotations

import json

import msgspec

from omem_client._render import QUOTED_CHARS, forget_lines, shortened
from omem_protocol import ForgetCandidate, ForgetResult


def test_a_short_text_is_quoted_whole() -> None:
    assert shortened("- [fact] deploys happen on Thursdays") == (
        "- [fact] deploys happen on Thursdays"
    )
    assert shortened("x" * QUOTED_CHARS) == "x" * QUOTED_CHARS


def test_a_long_text_shows_its_start_and_how_much_more() -> None:
    text = "Long line start " + "x" * 300_000
    shown = shortened(text)
    assert shown == text[:QUOTED_CHARS] + f"… ({len(text) - QUOTED_CHARS:,} more characters)"
    assert shown.endswith("… (299,816 more characters)")
    assert shortened("y" * (QUOTED_CHARS + 1)) == "y" * QUOTED_CHARS + "… (1 more character)"


def test_the_cut_never_splits_a_visible_character() -> None:
    # an accent and an emoji sequence that would straddle the cut
    accented = "a" * (QUOTED_CHARS - 1) + "e\u0301" + "z" * 50
    assert shortened(accented).startswith("a" * (QUOTED_CHARS - 1) + "… (")
    family = "a" * (QUOTED_CHARS - 2) + "👩\u200d👧" + "z" * 50
    assert shortened(family).startswith("a" * (QUOTED_CHARS - 2) + "… (")
    # a run of combining marks with no boundary in reach: cut where asked
    marks = "e" + "\u0301" * 400
    assert shortened(marks).startswith(marks[:QUOTED_CHARS] + "… (")


def test_forget_lines_shorten_the_removed_text_and_candidates_not_the_reply() -> None:
    long = "- " + "remember " * 40_000
    removed = ForgetResult(
        removed=("memory/2026-11-23.md#L5",), removed_text=(long,), candidates=(), reason="ok"
    )
    [line] = forget_lines(removed)
    assert line == f"Forgot memory/2026-11-23.md#L5: {shortened(long)}"
    assert len(line) < 300
    # what --json prints is the reply itself: every character of the line
    assert json.loads(msgspec.json.encode(removed))["removed_text"] == [long]

    listed = ForgetResult(
        removed=(),
        removed_text=(),
        candidates=(
            ForgetCandidate(citation="memory/a.md#L3", text=long, score=0.8),
            ForgetCandidate(citation="memory/a.md#L9", text="- remember the milk", score=0.7),
        ),
        reason="ambiguous",
    )
    lines = forget_lines(listed)
    assert lines[1] == f"  0.80 memory/a.md#L3 {shortened(long)}"
    assert lines[2] == "  0.70 memory/a.md#L9 - remember the milk"
    assert max(map(len, lines)) < 300
