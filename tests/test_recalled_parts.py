"""Which memories of a hit `recall` quotes, and in what order, without a daemon.

Each memory of a hit is quoted on its own, with its own citation and number,
and `recall`'s limit counts them: they come best first, not in file order,
or "какой велосипед у пользователя" recalled the user's move to Kazan and,
with ``-n 1``, nothing about the bicycle.
"""

from __future__ import annotations

from openmemoryd.engine.agent_ops import _recalled_parts
from openmemoryd.search.budget import budget_terms

DAY = (
    "# 2026-11-20\n"
    "\n"
    "- Пользователь переехал в Казань.\n"
    "- У кошки аллергия на курицу.\n"
    "- У пользователя горный велосипед Merida, синий.\n"
    "- Встреча с командой в пятницу.\n"
)


def parts(snippet: str, query: str) -> list[tuple[int, int, str]]:
    return _recalled_parts(snippet, 1, budget_terms(query))


def test_the_memory_that_answers_comes_first() -> None:
    assert parts(DAY, "какой велосипед у пользователя") == [
        (5, 5, "- У пользователя горный велосипед Merida, синий."),
        (3, 3, "- Пользователь переехал в Казань."),
    ]


def test_a_word_most_memories_hold_counts_for_less() -> None:
    notes = (
        "- the user lives in Lisbon\n"
        "- the user drinks oolong\n"
        "- the bicycle is in the shed\n"
        "- the user rides a red bicycle\n"
    )
    # "user" is in three of them, "bicycle" in two: the one with both leads,
    # then the bicycle alone (1/2) ahead of the user alone (1/3)
    assert [p[0] for p in parts(notes, "user bicycle")] == [4, 3, 1, 2]


def test_ties_keep_file_order_and_no_match_gives_the_whole_hit() -> None:
    notes = "- tea on Monday\n- tea on Friday"  # a snippet ends without a line break
    assert [p[0] for p in parts(notes, "tea")] == [1, 2]
    assert parts(notes, "quantum chromodynamics") == [(1, 2, notes)]
    one = "- one memory about tea\n  with a line under it"
    assert parts(one, "tea") == [(1, 2, one)]
