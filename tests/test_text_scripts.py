"""The script a text is mostly written in, which decides the baseline a
note's vector match is measured against (embed.reference.Baseline)."""

from __future__ import annotations

import pytest

from openmemoryd.text.scripts import main_script


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
