"""`text.facts`: which nearly identical memories state a changed fact, in Chinese, English, Russian.

Word overlap puts each changed pair here at 0.94 or more when the sentence
is long enough; only the details tell them apart.
"""

from __future__ import annotations

import pytest

from openmemoryd.engine.similar import lexical_similarity
from openmemoryd.text.facts import Change, compare

TLS_ZH = "我们决定 TLS 证书每 90 天轮换一次"
EDITOR_ZH = "我喜欢用 Neovim 写代码，不喜欢 VS Code"
TLS_EN = "We decided to rotate the TLS certificates of the staging cluster every 90 days"
KAFKA_RU = "Мы решили хранить логи Kafka в кластере стейджинга 7 дней"


@pytest.mark.parametrize(
    ("old", "new", "described"),
    [
        # a changed number
        (TLS_ZH, "我们决定 TLS 证书每 30 天轮换一次", "90 → 30"),
        ("证书每九十天轮换一次", "证书每三十天轮换一次", "九十 → 三十"),
        ("证书每 90 天轮换一次", "证书每 ９０ 天轮换两次", "两 (only in the new one)"),
        (TLS_EN, TLS_EN.replace("90", "30"), "90 → 30"),
        ("Upgrade the runners to Python 3.12", "Upgrade the runners to Python 3.13", "3.12 → 3.13"),
        ("The release is on 2024-05-01", "The release is on 2024-05-08", "2024-05-01 → 2024-05-08"),
        ("We keep backups for seven days", "We keep backups for three days", "seven → three"),
        (KAFKA_RU, KAFKA_RU.replace("7 дней", "3 дня"), "7 → 3"),
        ("Храним логи семь дней", "Храним логи три дня", "семь → три"),
        # a changed name, product or code
        (EDITOR_ZH, "我喜欢用 Emacs 写代码，不喜欢 VS Code", "Neovim → Emacs"),
        ("I prefer Neovim", "I prefer Emacs", "Neovim → Emacs"),
        ("Alice owns the staging deploy", "Bob owns the staging deploy", "Alice → Bob"),
        (
            "Деплой делает Олег из команды платформы",
            "Деплой делает Игорь из команды платформы",
            "Олег → Игорь",
        ),
        ("Мы храним логи в Kafka", "Мы храним логи в Redpanda", "Kafka → Redpanda"),
        ("部署前先跑 k8s 的冒烟测试", "部署前先跑 k3s 的冒烟测试", "k8s → k3s"),
        # a negation flipped
        (EDITOR_ZH, "我喜欢用 Neovim 写代码，喜欢 VS Code", "a negation (only in the old one)"),
        ("周五别部署到生产环境", "周五部署到生产环境", "a negation (only in the old one)"),
        (
            "I like coffee in the morning",
            "I don't like coffee in the morning",
            "a negation (only in the new one)",
        ),
        ("We never deploy on Fridays", "We deploy on Fridays", "a negation (only in the old one)"),
        ("Я люблю кофе по утрам", "Я не люблю кофе по утрам", "a negation (only in the new one)"),
        # two details swapped
        ("I prefer Neovim over Emacs", "I prefer Emacs over Neovim", "the order of Neovim, Emacs"),
        ("Standup moves from 9 to 10", "Standup moves from 10 to 9", "the order of 9, 10"),
    ],
)
def test_a_changed_detail_is_named(old: str, new: str, described: str) -> None:
    compared = compare(old, new)
    assert compared.change is not None
    assert str(compared.change) == described
    assert not compared.same_words


def test_the_changes_word_overlap_cannot_see() -> None:
    # Why the details are compared at all: overlap calls these repeats.
    for old, new in [
        (TLS_ZH, "我们决定 TLS 证书每 30 天轮换一次"),
        (EDITOR_ZH, "我喜欢用 Emacs 写代码，不喜欢 VS Code"),
        (EDITOR_ZH, "我喜欢用 Neovim 写代码，喜欢 VS Code"),
        (TLS_EN, TLS_EN.replace("90", "30")),
    ]:
        assert lexical_similarity(old, new) >= 0.92
        assert compare(old, new).change is not None


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (TLS_ZH, TLS_ZH),
        (TLS_ZH, "我们决定：TLS证书每90天轮换一次。"),  # spacing and punctuation
        (TLS_ZH, "决定 TLS 证书每 90 天轮换一次"),  # the subject left out
        (TLS_ZH, "我们决定 ＴＬＳ 证书每 ９０ 天轮换一次"),  # full-width forms
        ("我决定了用 Neovim", "决定用 Neovim"),  # a particle
        (EDITOR_ZH, "我喜欢用 neovim 写代码, 不喜欢 vs code"),
        ("I prefer dark mode in every editor", "i prefer  dark mode in every editor."),
        (TLS_EN, "Decided to rotate the TLS certificates of the staging cluster every 90 days!"),
        ("Upgrade the runners to Python 3.12", "upgrade the runners to python 3.12."),
        ("Wei's favourite tea is oolong", "Wei’s favourite tea is oolong"),
        (KAFKA_RU, "Решили хранить логи Kafka в кластере стейджинга 7 дней."),
        ("Встреча с Олегом в Москве", "встреча с Олегом в Москве"),
    ],
)
def test_a_true_repeat_has_the_same_words(old: str, new: str) -> None:
    compared = compare(old, new)
    assert compared.change is None
    assert compared.same_words


def test_a_different_filler_or_an_inflected_name_is_no_change() -> None:
    # "I" / "we" are not one left out: not the same words, though no detail changed.
    swapped = compare("I prefer dark mode", "We prefer dark mode")
    assert (swapped.change, swapped.same_words) == (None, False)
    assert compare("我们决定用 Neovim", "他们决定用 Neovim").same_words is False
    # A Russian name's case ending is the same name.
    assert (
        compare("Встреча с Олегом в Москве", "Встречу с Олегом перенесли в Москву").change is None
    )
    # Words that contain 不, 别, 非, 一 without negating or counting anything.
    assert compare("两个方案不同", "两个方案完全不同").change is None
    assert compare("这个特别重要", "这个非常重要").change is None
    assert compare("我们一直用 Neovim", "一直用 Neovim").change is None


def test_details_alone_differing_is_one_fact_in_two_versions() -> None:
    assert compare("I prefer Neovim", "I prefer Emacs").same_skeleton
    assert compare(TLS_ZH, "我们决定 TLS 证书每 30 天轮换一次").same_skeleton
    assert compare("I like coffee", "I don't like coffee").same_skeleton
    assert compare("Я не люблю кофе", "Я люблю кофе").same_skeleton
    # the unit after a number takes the number's form: still one fact
    assert compare(KAFKA_RU, KAFKA_RU.replace("7 дней", "3 дня")).same_skeleton
    assert compare("Rotate the keys every 90 days", "Rotate the keys every 1 day").same_skeleton
    # the same number with another unit: no detail changed, overlap decides
    assert compare("Храним логи 7 дней", "Храним логи 7 недель").change is None
    # other words changed too: not just a detail
    assert not compare("I prefer Neovim", "I install Emacs").same_skeleton
    # nothing around the details to go by
    assert not compare("Kafka", "Redis").same_skeleton


def test_a_change_reads_as_one_phrase() -> None:
    assert str(Change(old=("Neovim",), new=("Emacs", "Vim"))) == "Neovim → Emacs, Vim"
    assert str(Change(old=("2024",), negated="new")) == (
        "2024 (only in the old one); a negation (only in the new one)"
    )
