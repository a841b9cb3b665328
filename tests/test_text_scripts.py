"""The script a text is mostly written in, which decides the baseline a
note's vector match is measured against (embed.reference.Baseline)."""

from __future__ import annotations

import pytest

from openmemoryd.text.scripts import main_script, script_shares


@pytest.mark.parametrize(
    ("text", "script"),
    [
        ("Wei prefers oolong tea, never coffee", "latin"),
        ("Ein kurzer Bericht über das Wetter am Wochenende.", "latin"),
        ("魏决定下周把缓存方案换成 Redis", "cjk"),
        # a Chinese note keeps its English names: more Latin letters than
        # Han characters, but most of its words are Chinese
        ("NAS 的内网 IP 是 192.168.1.10，Jellyfin 开在 8096 端口", "cjk"),
        ("Встреча с Олегом перенесена, обсудим API v2 и Kafka", "cyrillic"),
        ("Pi-hole перестал запускаться после апдейта Proxmox", "cyrillic"),
        ("今日は会議がありません", "cjk"),
        ("- Replaced the brake pads on the Skoda — 180 EUR", "latin"),
    ],
)
def test_the_script_carrying_most_words(text: str, script: str) -> None:
    assert main_script(text) == script


@pytest.mark.parametrize("text", ["", "zzzqqq", "192.168.1.1:8096", "魏", "- [x] 42", "Ок"])
def test_too_few_letters_name_no_script(text: str) -> None:
    assert main_script(text) is None


def test_a_note_in_two_languages_is_in_both_by_their_words() -> None:
    # 9 Han characters (a token each) and 26 Latin letters (6.5 tokens)
    shares = script_shares("周会改到下周一上午\nStandup moved to Monday mornin")
    assert set(shares) == {"cjk", "latin"}
    assert shares["cjk"] == pytest.approx(9 / 15.5)
    assert sum(shares.values()) == pytest.approx(1.0)
    assert max(shares, key=shares.__getitem__) == main_script("周会改到下周一上午")


@pytest.mark.parametrize(
    ("text", "shares"),
    [
        ("Wei prefers oolong tea", {"latin": 1.0}),
        # its English names are words of Chinese lines
        (
            "- NAS 的内网 IP 是 192.168.1.10，Jellyfin 开在 8096 端口\n"
            "- 对账任务跑在 Flink 上，每天凌晨两点触发",
            {"cjk": 1.0},
        ),
        ("魏决定下周把缓存方案换成", {"cjk": 1.0}),
        ("zzzqqq", {}),
        ("192.168.1.10:8096", {}),
    ],
)
def test_a_note_in_one_script_is_all_in_it(text: str, shares: dict[str, float]) -> None:
    assert dict(script_shares(text)) == shares
