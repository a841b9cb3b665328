"""The reference passages a query's no-match baseline is measured against."""

from __future__ import annotations

import unicodedata

import pytest

from openmemoryd.embed.reference import (
    CROSS_SCRIPT_SHARE,
    NULL_TOP,
    REFERENCE_PASSAGES,
    REFERENCE_SCRIPTS,
    Baseline,
)
from openmemoryd.text.scripts import main_script


def _script(text: str) -> str:
    """The script of *text*'s letters (the first letter's, which tells our three apart)."""
    letter = next(ch for ch in text if ch.isalpha())
    name = unicodedata.name(letter)
    for script in ("CJK", "CYRILLIC", "LATIN"):
        if name.startswith(script):
            return script
    return name


def test_each_language_has_enough_passages_for_a_baseline_of_its_own() -> None:
    """The model puts a query near text of its own language, so its nearest
    passages come mostly from its language: with as few of them as the mean
    takes, every query in it would get one baseline whatever it asked (three
    Chinese passages once let any Chinese note answer a question about
    baroque opera)."""
    counts = {"CJK": 0, "CYRILLIC": 0, "LATIN": 0}
    for passage in REFERENCE_PASSAGES:
        script = _script(passage)
        if script in counts:
            counts[script] += 1
    assert all(count >= 3 * NULL_TOP for count in counts.values()), counts


def test_passages_are_distinct() -> None:
    assert len(set(REFERENCE_PASSAGES)) == len(REFERENCE_PASSAGES)


def test_every_passage_is_grouped_under_its_script() -> None:
    """Each script's baseline is the mean of its own passages' nearest."""
    grouped = sorted(row for rows in REFERENCE_SCRIPTS.values() for row in rows)
    assert grouped == list(range(len(REFERENCE_PASSAGES)))
    assert set(REFERENCE_SCRIPTS) == {"latin", "cjk", "cyrillic"}
    for script, rows in REFERENCE_SCRIPTS.items():
        assert len(rows) >= 3 * NULL_TOP, script
        assert {main_script(REFERENCE_PASSAGES[row]) for row in rows} == {script}


@pytest.mark.parametrize(
    ("query_script", "note", "gap"),
    [
        ("latin", "团子每年 9 月打疫苗，猫三联和狂犬", 0.04),
        ("latin", "Клиенты сутки видели старые цены после смены тарифа", 0.03),
        ("cjk", "Next dentist check-up is on the 14th of May", -0.04),
        ("cyrillic", "团子每年 9 月打疫苗，猫三联和狂犬", 0.01),
        ("latin", "Replaced the brake pads on the Skoda", 0.0),  # the query's own script
        ("latin", "192.168.1.10:8096", 0.0),  # no script to speak of
        (None, "团子每年 9 月打疫苗，猫三联和狂犬", 0.0),  # a query without one (zzzqqq)
    ],
)
def test_a_note_in_another_script_is_read_closer_by_the_querys_distance_to_it(
    query_script: str | None, note: str, gap: float
) -> None:
    by_script = {"latin": 0.79, "cjk": 0.75, "cyrillic": 0.76}
    own = Baseline(0.80, by_script, query_script)
    assert own.gap(note) == pytest.approx(CROSS_SCRIPT_SHARE * gap)


def test_a_script_without_passages_leaves_the_baseline_as_it_is() -> None:
    assert Baseline(0.8, {"latin": 0.79}, "latin").gap("团子每年 9 月打疫苗，猫三联和狂犬") == 0.0
