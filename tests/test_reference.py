"""The reference passages a query's no-match baseline is measured against."""

from __future__ import annotations

import unicodedata

from openmemoryd.embed.reference import NULL_TOP, REFERENCE_PASSAGES


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
