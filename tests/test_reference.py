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
    still_apart,
)
from openmemoryd.text.scripts import main_script, script_shares


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


# A Chinese daily note with English lines: about half its words in each.
BILINGUAL = "周会改到下周一上午十点半\nStandup moved to Monday, ten thirty"


def test_a_note_half_in_the_querys_script_keeps_little_of_the_distance() -> None:
    by_script = {"latin": 0.79, "cjk": 0.75, "cyrillic": 0.76}
    english, chinese = Baseline(0.8, by_script, "latin"), Baseline(0.8, by_script, "cjk")
    whole = CROSS_SCRIPT_SHARE * 0.04
    # asked in English, its English half brings it part of the way
    assert 0.0 < english.gap(BILINGUAL) < whole / 2
    # asked in Chinese, its Chinese half brings it all the way
    assert chinese.gap(BILINGUAL) == 0.0
    # asked in Russian, it is all in other scripts: their gaps in their shares
    shares = script_shares(BILINGUAL)
    assert Baseline(0.8, by_script, "cyrillic").gap(BILINGUAL) == pytest.approx(
        CROSS_SCRIPT_SHARE * (0.01 * shares["cjk"] - 0.03 * shares["latin"])
    )


@pytest.mark.parametrize("script", ["latin", "cjk", "cyrillic"])
def test_what_a_note_keeps_of_the_distance_falls_as_its_share_in_the_querys_script_grows(
    script: str,
) -> None:
    kept = [still_apart(script, share / 10) for share in range(11)]
    assert kept[0] == 1.0
    assert kept[-1] == 0.0
    assert kept == sorted(kept, reverse=True)


def test_a_chinese_or_russian_query_is_near_a_note_a_fifth_in_its_language() -> None:
    # one line in eight: a sixth of a Chinese note's words, a ninth of a Russian one's
    assert still_apart("cjk", 0.16) < 0.2
    assert still_apart("cyrillic", 0.11) < 0.3
    assert still_apart("cjk", 0.4) == still_apart("cyrillic", 0.4) == 0.0
    # an English query comes closer about in proportion to the English words
    assert 0.6 < still_apart("latin", 0.14) < 0.9
    assert 0.1 < still_apart("latin", 0.67) < 0.3
