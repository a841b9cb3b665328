"""End to end: capture keeps who the user is, in three languages.

A Chinese user's "我叫王磊，我住在杭州，我对花生过敏。" was skipped as
``no_trigger`` while "Меня зовут Алексей" was captured, and a lesson a
mistake taught (教训, 踩坑) was skipped though `log` knows those words
(found by dogfooding). An allergy is the fact an agent must not miss.
"""

from __future__ import annotations

from datetime import date

import pytest

from conftest import Daemon

pytestmark = pytest.mark.e2e


def test_a_name_a_home_an_allergy_and_a_lesson_are_captured(daemon: Daemon) -> None:
    said = [
        "我叫王磊，我住在杭州，我对花生过敏。",
        "教训：上线前一定要先跑 migration dry-run，上次踩坑了。",
        "I live in Lisbon and I'm allergic to penicillin",
        "У меня аллергия на арахис, живу в Казани",
        "Наступили на грабли: без dry-run миграции не выкатываем",
        "what is the weather like today in Lisbon?",
    ]
    with daemon.client() as client:
        messages = [{"role": "user", "content": text} for text in said]
        result = client.capture(messages, max_captures=10)
    assert [(c.index, c.category) for c in result.captured] == [
        (0, "entity"),
        (1, "other"),
        (2, "fact"),
        (3, "fact"),
        (4, "other"),
    ]
    assert [(r.index, r.reason) for r in result.rejected] == [(5, "no_trigger")]
    text = (daemon.env.workspace / "memory" / f"{date.today().isoformat()}.md").read_text("utf-8")
    assert "- [entity] 我叫王磊，我住在杭州，我对花生过敏。" in text
    assert "- [fact] У меня аллергия на арахис, живу в Казани" in text
    with daemon.client() as client:
        hit = client.search("花生过敏").results[0]
    assert "花生过敏" in hit.snippet
