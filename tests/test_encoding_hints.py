"""Which encoding non-UTF-8 bytes look like, and the conversion hints built on it.

Every hint used to say ``iconv -f latin1 -t utf-8``: for a Russian (cp1251)
or Chinese (GBK) note that makes mojibake without an error, and the
doctor's version replaced the file in place. What must hold: an encoding is
named only when the bytes decode back to what was written in it (never a
wrong name, over a multilingual corpus); otherwise the hint has a
placeholder; a file's conversion keeps the original.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from omem_client._calls import unsendable_text
from omem_client._encodings import (
    ENCODING_PLACEHOLDER,
    convert_file_hint,
    convert_hint,
    guess_encoding,
)

CORPUS = Path(__file__).resolve().parent.parent / "bench" / "multilingual"

# Short notes as our users write them, in their languages.
NOTES = {
    "ru": [
        "Привет, мир! Сегодня я купил молоко и хлеб.",
        "Пользователь предпочитает тёмную тему во всех редакторах.",
        "Встреча в 15:00 с Иваном по проекту «Альфа».",
        "iPhone купил вчера — дорого",
        "Москва",
        "ПРИВЕТ МИР, КАК ДЕЛА У ВСЕХ",
    ],
    "uk": ["Привіт, світе! Я люблю їсти вареники з вишнями."],
    "zh": [
        "今天我们去公园散步，天气很好。",
        "用户喜欢在所有编辑器中使用深色模式。",
        "记住：周五前提交报告",
        "中文",
    ],
    "zh-hant": [
        "今天我們去公園散步，天氣很好。",
        "使用者喜歡在所有編輯器中使用深色模式。",
        "記住：週五前提交報告",
        "老王說資料庫備份腳本放在 /opt/backup，每天凌晨三點執行。",
        "會議改到下週三下午兩點，地點在三樓會議室。",
    ],
    "ja": ["今日はいい天気ですね。公園に行きましょう。", "ユーザーはダークモードを好みます。"],
    "ko": ["안녕하세요, 오늘 날씨가 좋네요.", "사용자는 어두운 테마를 선호합니다"],
    "fr": [
        "Café au lait, naïve crème brûlée à la française.",
        "Il est allé à Paris l'été dernier.",
    ],
    "de": ["Übergrößenträger müssen sich beeilen, sagte der Bär.", "Schöne Grüße aus München"],
    "es": ["¿Dónde está el baño? Mañana será otro día."],
    "en": ["He said “hello” — and left…", "It’s €5 – cheap"],
}
# The encodings each language's notes are really found in.
WRITTEN_IN = {
    "ru": ("cp1251", "koi8-r", "cp866"),
    "zh-hant": ("big5", "cp950"),
    "uk": ("cp1251",),
    "zh": ("gb18030", "gbk", "gb2312"),
    "ja": ("shift_jis", "cp932", "euc-jp"),
    "ko": ("euc-kr", "cp949"),
    "fr": ("latin1", "cp1252"),
    "de": ("latin1", "cp1252"),
    "es": ("latin1", "cp1252"),
    "en": ("cp1252", "latin1", "cp1251"),
}


def _strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def corpus() -> Iterator[tuple[str, str]]:
    """(language, text): the notes above and the multilingual benchmark's
    memories and questions (Russian, Chinese, English)."""
    for language, notes in NOTES.items():
        for note in notes:
            yield language, note
    for language in ("ru", "zh", "en"):
        with (CORPUS / f"{language}.json").open(encoding="utf-8") as f:
            for text in _strings(json.load(f)):
                yield language, text


def test_no_encoding_is_ever_named_wrongly_and_most_are_named() -> None:
    named: Counter[tuple[str, str]] = Counter()
    cases: Counter[tuple[str, str]] = Counter()
    for language, text in corpus():
        for encoding in WRITTEN_IN[language]:
            try:
                data = text.encode(encoding)
                data.decode("utf-8")
                continue  # unencodable, or plain ASCII: not a case
            except UnicodeEncodeError:
                continue
            except UnicodeDecodeError:
                pass
            cases[language, encoding] += 1
            guessed = guess_encoding(data)
            if guessed is not None:
                assert data.decode(guessed) == text, (encoding, guessed, text)
                named[language, encoding] += 1
    # Russian in cp1251 and Chinese in GBK, which the old hint made mojibake,
    # are named nearly always (the misses are a word or two)
    for common in (("ru", "cp1251"), ("zh", "gbk"), ("zh", "gb18030")):
        assert named[common] >= 0.9 * cases[common] > 100, common
    # KOI8-R needs 20 letters or more, which most notes have
    assert named["ru", "koi8-r"] >= 0.8 * cases["ru", "koi8-r"] > 80
    assert named["zh-hant", "big5"] == cases["zh-hant", "big5"] == 5


def test_koi8r_and_cp1251_are_told_apart_by_case_and_letter_frequencies() -> None:
    prose = (
        "Сегодня обсудили с Петровым перенос базы данных на новый сервер. "
        "Решили делать в субботу ночью, бэкап снимет Иван."
    )
    assert guess_encoding(prose.encode("koi8-r")) == "koi8-r"
    assert guess_encoding(prose.encode("cp1251")) == "cp1251"
    # a long all-capitals line: the letters, not the case, decide
    shout = "СРОЧНО ПОЗВОНИТЬ ИВАНУ ПРО СЕРВЕРНУЮ И ПАРОЛЬ ОТ РОУТЕРА"
    for encoding in ("koi8-r", "cp1251"):
        named = guess_encoding(shout.encode(encoding))
        assert named in (None, encoding), (encoding, named)


@pytest.mark.parametrize(
    ("text", "encoding", "named"),
    [
        ("Привет, мир! Сегодня я купил молоко и хлеб.", "cp1251", "cp1251"),
        ("Привіт, світе! Я люблю їсти вареники з вишнями.", "cp1251", "cp1251"),
        ("今天我们去公园散步，天气很好。", "gbk", "gb18030"),
        ("今日はいい天気ですね。公園に行きましょう。", "shift_jis", "shift_jis"),
        ("안녕하세요, 오늘 날씨가 좋네요.", "euc-kr", "euc-kr"),
        ("Café au lait, naïve crème brûlée.", "latin1", "latin1"),
        ("It’s “quoted” — here…", "cp1252", "cp1252"),
        ("café", "latin1", "latin1"),
        ("Привет", "utf-16", "utf-16"),  # with its byte order mark
        ("Привет, мир! Сегодня я купил молоко и хлеб.", "koi8-r", "koi8-r"),
        ("Ключ от серверной у Ивана, стойка три.", "koi8-r", "koi8-r"),
        ("今天我們去公園散步，天氣很好。", "big5", "big5"),
        ("老王說資料庫備份腳本放在 /opt/backup，每天凌晨三點執行。", "big5", "big5"),
        ("中文", "big5", "big5"),
        # Traditional characters saved as GBK are GBK
        ("使用者喜歡在所有編輯器中使用深色模式。", "gbk", "gb18030"),
    ],
)
def test_the_encoding_is_named_when_the_text_reads_like_it(
    text: str, encoding: str, named: str
) -> None:
    assert guess_encoding(text.encode(encoding)) == named


@pytest.mark.parametrize(
    "data",
    [
        b"\xe9",  # one byte: "é" or "й" or the half of something
        "中文".encode("gbk"),  # two characters: also lower-case koi8-r, and Big5 "笢恅"
        "ПРИВЕТ МИР, КАК ДЕЛА".encode("cp1251"),  # all capitals: koi8-r lower case too
        "Привет, мир! Сегодня.".encode("koi8-r"),  # too few letters to tell koi8-r by
        "Ключ".encode("koi8-r"),  # also Chinese in GBK
        # all capitals, either way round: the case tells nothing, and the
        # letters fit Russian equally badly read as the other code page
        "ВАЖНО: ПАРОЛЬ ОТ РОУТЕРА СМЕНИЛИ В ПЯТНИЦУ".encode("cp1251"),
        "ПРИВЕТ МИР, КАК ДЕЛА У ВСЕХ СЕГОДНЯ НА РАБОТЕ".encode("koi8-r"),
        bytes(range(0x80, 0x100)),  # not text
        b"caf\xe9\x00\x01",  # control characters
    ],
)
def test_nothing_is_named_when_the_bytes_could_be_several_things(data: bytes) -> None:
    assert guess_encoding(data) is None


def test_a_sample_cut_inside_a_character_is_still_named() -> None:
    data = "今天我们去公园散步，天气很好。".encode("gbk")[:-1]  # half of "。"
    assert guess_encoding(data) is None  # a whole text cannot end so
    assert guess_encoding(data, cut=True) == "gb18030"


# ---------------------------------------------------------------- the hints


def test_a_hint_names_the_encoding_or_says_what_to_put_in_its_place() -> None:
    assert convert_hint("cp1251") == (
        "it looks like cp1251; convert it to UTF-8 first (e.g. iconv -f cp1251 -t utf-8)"
    )
    unknown = convert_hint(None)
    assert "iconv -f ENCODING -t utf-8" in unknown
    assert "with its encoding in place of ENCODING" in unknown
    assert "cp1251 for Russian, gb18030 for Chinese" in unknown
    assert "latin1" not in convert_hint("gb18030")


def test_an_argument_in_cp1251_is_refused_naming_cp1251() -> None:
    text = "купил молоко и хлеб".encode("cp1251").decode("utf-8", "surrogateescape")
    with pytest.raises(UnicodeEncodeError) as exc:
        text.encode("utf-8")
    message = unsendable_text(exc.value)
    assert message.startswith("text holds the byte 0xEA (not UTF-8) at character 1 of 19")
    assert message.endswith(
        "it looks like cp1251; convert it to UTF-8 first (e.g. iconv -f cp1251 -t utf-8)"
    )
    lone = "\ud83d tea"  # a JSON escape cut in half: no bytes to guess from
    with pytest.raises(UnicodeEncodeError) as exc:
        lone.encode("utf-8")
    assert unsendable_text(exc.value).endswith("only valid Unicode can be sent")


def test_a_file_hint_never_converts_in_place_without_keeping_the_original() -> None:
    hint = convert_file_hint("memory/a b.md", "cp1251", where="in the workspace")
    assert hint == (
        "convert memory/a b.md to UTF-8 in the workspace (it looks like cp1251), keeping the "
        "original: iconv -f cp1251 -t utf-8 'memory/a b.md' > 'memory/a b.md.utf8' "
        "&& mv 'memory/a b.md' 'memory/a b.md.orig' && mv 'memory/a b.md.utf8' 'memory/a b.md'"
    )
    unknown = convert_file_hint("memory/x.md", None)
    assert f"iconv -f {ENCODING_PLACEHOLDER} -t utf-8 memory/x.md > memory/x.md.utf8" in unknown
    assert "mv memory/x.md memory/x.md.orig" in unknown


def _command(hint: str) -> str:
    return hint[hint.index("iconv ") :]


@pytest.mark.skipif(shutil.which("iconv") is None, reason="needs iconv")
def test_the_file_hint_run_as_given_converts_and_keeps_every_byte(tmp_path: Path) -> None:
    text = "# Заметки\n\n- Купить молоко и хлеб.\n"
    original = text.encode("cp1251")
    note = tmp_path / "memory" / "ru.md"
    note.parent.mkdir()
    note.write_bytes(original)
    hint = convert_file_hint("memory/ru.md", guess_encoding(original))
    subprocess.run(["sh", "-c", _command(hint)], cwd=tmp_path, check=True)
    assert note.read_text("utf-8") == text
    assert (tmp_path / "memory" / "ru.md.orig").read_bytes() == original

    # a conversion that fails (the wrong encoding put in) leaves the note as it was
    note.write_bytes(original)
    (tmp_path / "memory" / "ru.md.orig").unlink()
    wrong = _command(convert_file_hint("memory/ru.md", None)).replace(ENCODING_PLACEHOLDER, "utf-8")
    failed = subprocess.run(["sh", "-c", wrong], cwd=tmp_path, capture_output=True, check=False)
    assert failed.returncode != 0
    assert note.read_bytes() == original
    assert not (tmp_path / "memory" / "ru.md.orig").exists()
