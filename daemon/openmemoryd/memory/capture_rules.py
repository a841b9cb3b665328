"""Which messages of an agent conversation are durable facts worth remembering.

A captured message is recalled into the prompts of later sessions, so what
gets in must be the user's own words, short and stated as a fact. An echo of
recalled memories would feed on itself, a pasted instruction would come back
as trusted context, and a secret would surface in search snippets. These are
OpenClaw's memory-lancedb auto-capture rules (``shouldCapture``,
``detectCategory``, ``looksLikePromptInjection``) with English, Chinese (both
Simplified and Traditional) and Russian, where the original has English and
Czech. The prompt-injection and secret screens, which `log` shares, are in
`openmemoryd.memory.safety_rules`; they are re-exported here.

Invariants:

* `screen` yields exactly one `Candidate` or one `Rejection` per message, in
  input order; the rules run in a fixed order and the first one that fails
  gives the reason;
* the rules see, and a candidate carries, the normalised text: stripped, each
  whitespace run that holds a line break collapsed to one ``\\n`` and every
  other run to one space. Lines survive (the markdown rule needs them);
  indentation, blank lines and full-width spaces do not. Nothing else changes;
* lengths are code points of the normalised text (OpenClaw counts UTF-16
  units of the raw text), so ten Han characters, a real sentence, are enough;
* an emoji is counted as people see it: a ZWJ sequence, a flag, a keycap or
  an emoji with a skin tone is one. Symbols that show as text by default
  (©, ™, ↔, ☀ without U+FE0F) and CJK are not emoji;
* English patterns ignore case and use ASCII word boundaries, so "我prefer"
  still matches ``prefer``; Chinese has no word boundaries and its patterns
  use none; Russian patterns ignore case and use Unicode word boundaries
  (Cyrillic letters are word characters, so "неважно" is not "важно"). Russian
  is inflected, so they match stems ("предпочита…") narrowed where a stem
  has another sense, and accept е wherever ё is written;
* the first matching trigger in `_TRIGGERS` order names the match;
* all of this is pure: no I/O, no state, nothing but `re` and the screens of
  `openmemoryd.memory.safety_rules`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final, Literal

from openmemoryd.memory.safety_rules import contains_secret, looks_like_prompt_injection

__all__ = [
    "MAX_CHARS",
    "MAX_EMOJI",
    "MIN_CHARS",
    "Candidate",
    "Category",
    "RejectReason",
    "Rejection",
    "contains_secret",
    "detect_category",
    "looks_like_prompt_injection",
    "screen",
]

Category = Literal["preference", "decision", "entity", "fact", "other"]
RejectReason = Literal[
    "not_user",
    "too_short",
    "too_long",
    "injected_memories",
    "markup",
    "code_block",
    "markdown_summary",
    "emoji",
    "prompt_injection",
    "secret",
    "no_trigger",
    "empty",
]

# A markup tag anywhere (the auto-capture rule ``/<[^>]+>/``), narrowed to
# what is a tag: an opening, closing or comment tag, not "x < y > z" or "<3".
_TAG: Final = re.compile(r"<[A-Za-z/!?][^<>]*>")
# A fenced code block: code is not a durable fact about the user, even when
# it says "remember" (a line opening with ``` or ~~~).
_FENCE: Final = re.compile(r"^(?:```|~~~)", re.MULTILINE)

# OpenClaw's limits: 10 characters, captureMaxChars 500, "more than 3 emoji".
MIN_CHARS: Final = 10
MAX_CHARS: Final = 500
MAX_EMOJI: Final = 3


@dataclass(frozen=True, slots=True)
class Candidate:
    """A message that may be captured."""

    index: int
    text: str
    category: Category
    trigger: str


@dataclass(frozen=True, slots=True)
class Rejection:
    """A message that is not captured, and why."""

    index: int
    reason: RejectReason
    detail: str


_Check = Callable[[str], bool]


def _en_pattern(pattern: str) -> re.Pattern[str]:
    """An English pattern: any case, ASCII word boundaries."""
    return re.compile(pattern, re.IGNORECASE | re.ASCII)


def _zh_pattern(pattern: str) -> re.Pattern[str]:
    """A Chinese pattern (Latin letters in it still ignore case)."""
    return re.compile(pattern, re.IGNORECASE)


def _ru_pattern(pattern: str) -> re.Pattern[str]:
    """A Russian pattern: any case, Unicode word boundaries (under re.ASCII
    Cyrillic letters are not word characters, so no word boundary is found
    next to one)."""
    return re.compile(pattern, re.IGNORECASE)


def _found(pattern: re.Pattern[str]) -> _Check:
    return lambda text: pattern.search(text) is not None


def _en(pattern: str) -> _Check:
    return _found(_en_pattern(pattern))


def _zh(pattern: str) -> _Check:
    return _found(_zh_pattern(pattern))


def _ru(pattern: str) -> _Check:
    return _found(_ru_pattern(pattern))


def _any_of(*checks: _Check) -> _Check:
    return lambda text: any(check(text) for check in checks)


# ---------------------------------------------------------------- normalising

_WHITESPACE_RUN: Final = re.compile(r"\s+")
# What str.splitlines() splits on.
_LINE_BREAKS: Final = frozenset("\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029")


def _normalize(text: str) -> str:
    return _WHITESPACE_RUN.sub(_collapse, text).strip()


def _collapse(run: re.Match[str]) -> str:
    return "\n" if any(ch in _LINE_BREAKS for ch in run.group()) else " "


# ---------------------------------------------------------------- emoji

# Extended_Pictographic from Unicode 17.0 emoji-data.txt, as hex code points
# and ranges. Skin tones (1F3FB-1F3FF) and regional indicators are not in it.
_EXTENDED_PICTOGRAPHIC: Final = """
    a9 ae 203c 2049 2122 2139 2194-2199 21a9-21aa 231a-231b 2328 23cf 23e9-23f3 23f8-23fa
    24c2 25aa-25ab 25b6 25c0 25fb-25fe 2600-2604 260e 2611 2614-2615 2618 261d 2620
    2622-2623 2626 262a 262e-262f 2638-263a 2640 2642 2648-2653 265f-2660 2663 2665-2666
    2668 267b 267e-267f 2692-2697 2699 269b-269c 26a0-26a1 26a7 26aa-26ab 26b0-26b1
    26bd-26be 26c4-26c5 26c8 26ce-26cf 26d1 26d3-26d4 26e9-26ea 26f0-26f5 26f7-26fa 26fd
    2702 2705 2708-270d 270f 2712 2714 2716 271d 2721 2728 2733-2734 2744 2747 274c 274e
    2753-2755 2757 2763-2764 2795-2797 27a1 27b0 27bf 2934-2935 2b05-2b07 2b1b-2b1c 2b50
    2b55 3030 303d 3297 3299 1f004 1f02c-1f02f 1f094-1f09f 1f0af-1f0b0 1f0c0 1f0cf-1f0d0
    1f0f6-1f0ff 1f170-1f171 1f17e-1f17f 1f18e 1f191-1f19a 1f1ae-1f1e5 1f201-1f20f 1f21a
    1f22f 1f232-1f23a 1f23c-1f23f 1f249-1f25f 1f266-1f321 1f324-1f393 1f396-1f397
    1f399-1f39b 1f39e-1f3f0 1f3f3-1f3f5 1f3f7-1f3fa 1f400-1f4fd 1f4ff-1f53d 1f549-1f54e
    1f550-1f567 1f56f-1f570 1f573-1f57a 1f587 1f58a-1f58d 1f590 1f595-1f596 1f5a4-1f5a5
    1f5a8 1f5b1-1f5b2 1f5bc 1f5c2-1f5c4 1f5d1-1f5d3 1f5dc-1f5de 1f5e1 1f5e3 1f5e8 1f5ef
    1f5f3 1f5fa-1f64f 1f680-1f6c5 1f6cb-1f6d2 1f6d5-1f6e5 1f6e9 1f6eb-1f6f0 1f6f3-1f6ff
    1f7da-1f7ff 1f80c-1f80f 1f848-1f84f 1f85a-1f85f 1f888-1f88f 1f8ae-1f8af 1f8bc-1f8bf
    1f8c2-1f8cf 1f8d9-1f8ff 1f90c-1f93a 1f93c-1f945 1f947-1f9ff 1fa58-1fa5f 1fa6e-1faff
    1fc00-1fffd
"""
# The BMP pictographs shown as emoji even without U+FE0F (Emoji_Presentation).
# Beyond the BMP nearly every pictograph is, so all of those count.
_BMP_EMOJI_PRESENTATION: Final = """
    231a-231b 23e9-23ec 23f0 23f3 25fd-25fe 2614-2615 2648-2653 267f 2693 26a1 26aa-26ab
    26bd-26be 26c4-26c5 26ce 26d4 26ea 26f2-26f3 26f5 26fa 26fd 2705 270a-270b 2728 274c
    274e 2753-2755 2757 2795-2797 27b0 27bf 2b1b-2b1c 2b50 2b55
"""


def _char_class(table: str) -> str:
    parts = []
    for item in table.split():
        first, _, last = item.partition("-")
        parts.append(rf"\U{int(first, 16):08x}" + (rf"-\U{int(last, 16):08x}" if last else ""))
    return "[" + "".join(parts) + "]"


_PICTOGRAPH: Final = _char_class(_EXTENDED_PICTOGRAPHIC)
_SKIN_TONE: Final = r"[\U0001f3fb-\U0001f3ff]"
_ONE_PICTOGRAPH: Final = rf"{_PICTOGRAPH}\ufe0f?{_SKIN_TONE}?"
_EMOJI_CLUSTER: Final = re.compile(
    r"[\U0001f1e6-\U0001f1ff]{1,2}"  # regional indicators: a pair is one flag
    r"|[0-9#*]\ufe0f?\u20e3"  # keycaps
    rf"|{_ONE_PICTOGRAPH}(?:\u200d{_ONE_PICTOGRAPH})*"  # ZWJ sequences are one emoji
)
_PRESENTED_IN_BMP: Final = re.compile(_char_class(_BMP_EMOJI_PRESENTATION))


def _count_emoji(text: str) -> int:
    return sum(1 for match in _EMOJI_CLUSTER.finditer(text) if _shows_as_emoji(match.group()))


def _shows_as_emoji(cluster: str) -> bool:
    """False for a lone text-style symbol such as © or ↔; FE0F, a skin tone,
    a ZWJ or a keycap mark makes the cluster longer than one code point."""
    first = cluster[0]
    return len(cluster) > 1 or ord(first) > 0xFFFF or _PRESENTED_IN_BMP.match(first) is not None


# ---------------------------------------------------------------- triggers and categories

# OpenClaw's `\+\d{10,}`, the same number written in groups (+1 415 555 0100,
# +44 (20) 7946 0958), and mainland Chinese mobile numbers (138 1234 5678),
# which are written without the country code. Bare local numbers such as
# 415-555-0100 are too easily dates or ids to count.
_PHONE_PLAIN: Final = re.compile(r"\+\d{10,}", re.ASCII)
_PHONE_GROUPED: Final = re.compile(
    r"\+\d{1,3}[ .-]?(?:\(\d{1,4}\)|\d{1,4})(?:[ .-]?\d{2,5}){1,4}(?!\d)", re.ASCII
)
_PHONE_CN_MOBILE: Final = re.compile(r"(?<!\d)1[3-9]\d(?:[ -]?\d{4}){2}(?!\d)", re.ASCII)
_PHONE_MIN_DIGITS: Final = 10
_EMAIL: Final = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}")


def _has_phone(text: str) -> bool:
    if _PHONE_PLAIN.search(text) or _PHONE_CN_MOBILE.search(text):
        return True
    return any(
        sum(ch.isdigit() for ch in match.group()) >= _PHONE_MIN_DIGITS
        for match in _PHONE_GROUPED.finditer(text)
    )


def _has_email(text: str) -> bool:
    return _EMAIL.search(text) is not None


# Adverbs allowed between "I" and the verb: "I really like", "I don't want".
_I_ADVERB: Final = r"(?:\s+(?:really|also|still|just|usually|definitely|do|don['’]?t|do\s+not))?"

# Russian words allowed between "я"/"мне" and the verb: "я очень хочу", "мне
# тоже нужно".
_RU_ADVERB: Final = (
    r"(?:\s+(?:очень|правда|действительно|тоже|также|вс[её]|ещ[её]|не|обычно|просто))*"
)
# "Решили перейти на Postgres", "решила не деплоить", "решили, что …": a
# decision is "решить" with an infinitive or "что". "Решил задачу" (solved a
# problem), "решил часть задач" and "решили эти баги" are not: what follows is
# no infinitive (one ends in a vowel and -ть, a consonant and -ти, or -чь).
_RU_DECIDED: Final = (
    r"\bреш(?:ил|ила|или)\s+(?:не\s+)?"
    r"(?:[а-яё]*[аеёиоуыэюя]ть(?:ся)?|[а-яё]*[бвгджзйклмнпрстфхцчшщ]ти(?:сь)?"
    r"|[а-яё]+чь(?:ся)?)\b"
    r"|\bреш(?:ил|ила|или)\s*,?\s+что\b"
)
_RU_WILL_USE: Final = r"\bбудем\s+(?:использовать|пользоваться|применять)\b"
# "Мы перешли на Postgres"; the same word is the imperative "forward"
# ("перешли на почту", "перешли на мой адрес"), and "перешли на ты" is manners.
_RU_SWITCHED: Final = (
    r"\b(?:переш[её]л|перешла|перешло|перешли|переходим)\s+на\b"
    r"(?!\s+(?:почт|e-?mail|мейл|имейл|адрес|номер|телефон|ящик|мо[йюеи]\b|ты\b))"
)

# "Мой день рождения 12 июля", "моя жена Аня", "мои дети Маша и Петя", "моя
# компания называется …": Russian says "my X is Y" without the "is", so the
# possessive, a noun of one or two words, and then a value (a number, a
# capitalised name, "называется"/"зовут") is the fact. A preposition, a
# negation or a particle is no part of the noun ("мой код в GitHub", "мой код
# не компилируется"), and a verb is no value ("мой кот спит на диване").
_RU_NOT_NOUN: Final = (
    r"(?:в|во|на|с|со|у|к|ко|о|об|обо|по|до|из|за|от|для|без|при|про|под|над|через"
    r"|и|а|но|или|не|ни|же|ли|бы|уже|ещ[её]|тоже|также|сейчас|опять|снова|вс[её]|это|тут|там)"
)
_RU_MY_VALUE: Final = (
    rf"\bмо(?:й|я|[её]|и)(?:\s+(?!{_RU_NOT_NOUN}\b)[а-яё]+){{1,2}}?"
    r"\s+(?:\d|(?-i:[A-ZА-ЯЁ])|называ|зовут)"  # a capital letter, whatever the pattern's case
)
_RU_BIRTHDAY: Final = r"\bд(?:ень|ня|не|н[её]м)\s+рождени[яе]\b"
# A habit said in the first person is a preference ("я всегда пью чай без
# сахара", "I never eat pork", "我从不喝咖啡"), as "I like" is; "the server
# always crashes" is not one. Russian drops the "я" as often as not, and then
# the verb's first-person ending (-у, -ю: "всегда пью", "никогда не ем") says
# who; "всегда сразу отвечает" is no "я".
_EN_HABIT: Final = r"\bI\s+(?:(?:really|also|still|just|almost)\s+)?(?:always|never|usually)\b"
_ZH_HABIT: Final = "我(?:[总總]是|一直|[从從][来來]?不|每[次天]都|通常|向[来來])"
_RU_HABIT: Final = (
    r"\bя(?:\s+[а-яё]+)?\s+(?:всегда|никогда|обычно)\b"
    r"|\b(?:всегда|никогда\s+не|обычно)\s+(?!(?:сразу|внизу|наверху|сбоку)\b)"
    r"(?:[а-яё]+(?:у|ю)(?:сь)?|ем)\b"
)

# OpenClaw's trigger groups in its order, each English trigger followed by
# the Chinese, then the Russian, ones that say the same. A longer trigger
# comes before one it contains (更喜欢 before 喜欢, "не люблю" before "люблю")
# so the name is the more specific one.
_TRIGGERS: Final[tuple[tuple[str, _Check], ...]] = (
    ("remember", _en(r"\bremember\b")),
    ("don't forget", _en(r"\bdon['’]?t\s+forget\b")),
    ("记住", _zh("[记記]住")),
    ("记得", _zh("[记記]得")),
    ("别忘了", _zh("[别別]忘[了记記]|不要忘[记記]")),
    # The imperatives only: "я запомнил" (I remembered) asks nothing.
    ("запомни", _ru(r"\bзапомни(?:те)?\b")),
    ("не забудь", _ru(r"\bне\s+(?:забудь|забывай)(?:те)?\b")),
    ("помни", _ru(r"\bпомни(?:те)?\b")),
    ("prefer", _en(r"\bprefer(?:s|red|ring)?\b")),
    ("preference", _en(r"\bpreferences?\b")),
    ("更喜欢", _zh("更喜[欢歡]")),
    ("不喜欢", _zh("不喜[欢歡]")),
    ("喜欢", _zh("喜[欢歡]")),
    ("偏好", _zh("偏好")),
    ("讨厌", _zh("[讨討][厌厭]")),
    ("предпочитаю", _ru(r"\bпредпоч(?:ита\w*|[её]л|ла|ли|ло)\b")),
    ("предпочтение", _ru(r"\bпредпочтени\w*")),
    # "нравится", "понравилось", not the noun "нрав" (temper) or "нравственный".
    ("не нравится", _ru(r"\bне\s+(?:по)?нрав[ия]\w*")),
    ("нравится", _ru(r"\b(?:по)?нрав[ия]\w*")),
    ("не люблю", _ru(r"\bне\s+люблю\b")),
    ("люблю", _ru(r"\b(?:люблю|обожаю)\b")),
    # "мой любимый редактор — Neovim": a favourite, as 最喜欢 is; not "любой" (any).
    ("любимый", _ru(r"\bлюбим(?:ый|ая|ое|ые|ого|ой|ую|ых|ым|ыми|ом)\b")),
    ("ненавижу", _ru(r"\bненави(?:жу|дим)\b")),
    ("decided", _en(r"\bdecided\b")),
    ("we will use", _en(r"\bwe(?:\s+will|['’]ll|\s+are\s+going\s+to)\s+use\b")),
    ("let's use", _en(r"\blet['’]?s\s+use\b")),
    ("will use", _en(r"\bwill\s+use\b")),
    ("决定", _zh("[决決]定")),
    ("我们将使用", _zh("我[们們](?:[将將]|[会會]|要)使用")),
    ("我们用", _zh("我[们們]用")),
    ("改用", _zh("改用")),
    ("решили", _ru(_RU_DECIDED)),
    ("решено", _ru(r"\bрешено\b")),
    ("будем использовать", _ru(_RU_WILL_USE)),
    ("давайте использовать", _ru(r"\bдавай(?:те)?\s+использовать\b")),
    ("перешли на", _ru(_RU_SWITCHED)),
    ("phone", _has_phone),
    ("email", _has_email),
    ("my … is", _en(r"\bmy\s+\w+\s+is\b")),
    ("is my", _en(r"\bis\s+my\b")),
    ("我的…是", _zh(r"我的[^，。！？,.!?\n]{1,10}?是")),
    ("是我的", _zh("是我的")),
    # Russian drops "is": "мой кот — Мисо", "моя жена это Аня"; "Мисо — мой кот".
    ("мой … —", _ru(r"\bмо(?:й|я|[её]|и)(?:\s+\w+){1,2}?(?:\s*[—–:]|\s+-\s|\s+это\b)")),
    ("— мой", _ru(r"(?:[—–]|\bэто)\s+мо(?:й|я|[её]|и)\b")),
    ("меня зовут", _ru(r"\bменя\s+зовут\b")),
    ("день рождения", _ru(_RU_BIRTHDAY)),
    ("мой …", _ru(_RU_MY_VALUE)),
    # "I prefer" is named by "prefer" above.
    *(
        (f"i {verb}", _en(rf"\bi{_I_ADVERB}\s+{verb}\b"))
        for verb in ("like", "hate", "love", "want", "need")
    ),
    ("我想要", _zh("我想要")),
    ("我需要", _zh("我需要")),
    ("我爱", _zh("我[爱愛]")),
    ("я хочу", _ru(rf"\bя{_RU_ADVERB}\s+хочу\b")),
    ("мне нужно", _ru(rf"\bмне{_RU_ADVERB}\s+нуж(?:но|ен|на|ны)\b")),
    ("always", _en(r"\balways\b")),
    ("never", _en(r"\bnever\b")),
    ("important", _en(r"\bimportant\b")),
    ("总是", _zh("[总總]是")),
    ("一直", _zh("一直")),
    ("从来不", _zh("[从從][来來]不")),
    ("从不", _zh("[从從]不")),
    ("永远不要", _zh("永[远遠]不要")),
    ("重要", _zh("重要")),
    ("всегда", _ru(r"\bвсегда\b")),
    ("никогда", _ru(r"\bникогда\b")),
    # "важно", "важный"; not "неважно" (it does not matter).
    ("важно", _ru(r"\bважн\w*")),
    # Who the user is and what must never be missed: a name, a home, an
    # allergy. "Меня зовут" and "my name is" are named above.
    ("我叫", _zh("我叫")),
    ("i live in", _en(r"\bi\s+live\s+in\b")),
    ("我住在", _zh("我住在")),
    ("я живу", _ru(r"\bя\s+живу\b")),
    ("allergic", _en(r"\ballergic\b|\ballerg(?:y|ies)\b")),
    ("过敏", _zh("[过過]敏")),
    ("аллергия", _ru(r"\bаллерги\w*")),
    # A lesson a mistake taught ("we stepped on a rake", 踩坑).
    ("lesson learned", _en(r"\blessons?\s+learned\b|\blearned\s+the\s+hard\s+way\b")),
    ("教训", _zh("[教][训訓]|踩[过過了]?坑")),
    ("на грабли", _ru(r"\bнаступ\w*\s+на\s+(?:те\s+же\s+)?грабли\b|\bурок\s+на\s+будущее\b")),
)

# detectCategory's order. Decision also takes the decision triggers the
# original lacks ("let's use", 我们将使用), and entity "name is"/名字是/"зовут",
# so "my name is Wei" is an entity rather than a fact.
_CATEGORIES: Final[tuple[tuple[Category, _Check], ...]] = (
    (
        "preference",
        _any_of(
            _en(r"\b(?:prefer\w*|likes?|liked|loves?|loved|hates?|hated|wants?|wanted)\b"),
            _en(_EN_HABIT),
            _zh("喜[欢歡]|偏好|[讨討][厌厭]|想要|不要"),
            _zh(_ZH_HABIT),
            _ru(
                r"\bпредпоч\w*|\b(?:по)?нрав[ия]\w*|\bобожа\w*|\bненави[жд]\w*"
                r"|\bлюб(?:лю|ишь|ит|им|ите|ят|ил|ила|или|им\w+)\b"  # not "любой" (any)
                r"|\bхоч(?:у|ешь|ет)\b|\bхот(?:им|ите|ят|ел|ела|ели)\b"
            ),
            _ru(_RU_HABIT),
        ),
    ),
    (
        "decision",
        _any_of(
            _en(r"\b(?:decided|will\s+use|we['’]ll\s+use|let['’]?s\s+use|going\s+with)\b"),
            _zh("[决決]定|改用|我[们們](?:(?:[将將]|[会會]|要)使)?用|[选選][择擇]了"),
            _ru(_RU_DECIDED),
            _ru(_RU_WILL_USE),
            _ru(_RU_SWITCHED),
            _ru(
                r"\bрешено\b|\bвыбрали\b|\bостановились\s+на\b|\bдоговорились\b"
                r"|\bдавай(?:те)?\s+использовать\b"
            ),
        ),
    ),
    (
        "entity",
        _any_of(
            _has_phone,
            _has_email,
            _en(r"\b(?:is\s+called|named|name\s+is)\b"),
            _zh("叫|名字是|[电電][话話]|[邮郵]箱|手[机機]号|手[机機]號"),
            # "почта", not "почти" (almost).
            _ru(
                r"\bзовут\b|\bназыва\w+|\bим(?:я|ени)\b|\bтелефон\w*"
                r"|\bпочт(?:а|ы|е|у|ой)\b|\bпочтов\w*|\b(?:e-?mail|и?мейл)\w*"
            ),
        ),
    ),
    (
        "fact",
        _any_of(
            _en(r"\b(?:is|are|has|have)\b"),
            _zh("是|有"),
            _ru(r"\b(?:является|являются|есть|это)\b|\bу\s+(?:меня|нас|него|не[её]|них|вас)\b"),
            # Russian leaves out "is": "мой день рождения 12 июля", "моя жена Аня".
            _ru(r"\bмо(?:й|я|[её]|и)\s+[а-яё]"),
            _ru(_RU_BIRTHDAY),
            # where the user lives, what they are allergic to
            _en(r"\blive\s+in\b|\ballergic\b|\ballerg(?:y|ies)\b"),
            _zh("我住在|[过過]敏"),
            _ru(r"\bживу\b|\bаллерги\w*"),
        ),
    ),
)


def detect_category(text: str) -> Category:
    """preference, decision, entity or fact by the first that matches; else other."""
    for category, check in _CATEGORIES:
        if check(text):
            return category
    return "other"


def _first_trigger(text: str) -> str | None:
    return next((name for name, check in _TRIGGERS if check(text)), None)


# ---------------------------------------------------------------- screening


def screen(
    messages: Sequence[tuple[str, str]],
    *,
    min_chars: int = MIN_CHARS,
    max_chars: int = MAX_CHARS,
) -> tuple[list[Candidate], list[Rejection]]:
    """messages are (role, text). Every message yields exactly one Candidate
    or one Rejection, in input order.

    The role must be exactly ``"user"``. Raises ValueError unless
    ``1 <= min_chars <= max_chars``.
    """
    if not 1 <= min_chars <= max_chars:
        raise ValueError(f"need 1 <= min_chars <= max_chars, got {min_chars} and {max_chars}")
    candidates: list[Candidate] = []
    rejections: list[Rejection] = []
    for index, (role, text) in enumerate(messages):
        outcome = _screen_one(index, role, text, min_chars, max_chars)
        if isinstance(outcome, Candidate):
            candidates.append(outcome)
        else:
            rejections.append(outcome)
    return candidates, rejections


def _screen_one(
    index: int, role: str, raw: str, min_chars: int, max_chars: int
) -> Candidate | Rejection:
    """The rules in order; the first that fails is the rejection."""

    def reject(reason: RejectReason, detail: str) -> Rejection:
        return Rejection(index=index, reason=reason, detail=detail)

    if role != "user":
        return reject("not_user", f"role {role!r}; only the user's own words are captured")
    text = _normalize(raw)
    if not text:
        return reject("empty", "no text")
    if len(text) < min_chars:
        return reject("too_short", f"{len(text)} characters; at least {min_chars}")
    if len(text) > max_chars:
        return reject("too_long", f"{len(text)} characters; at most {max_chars}")
    if "<relevant-memories>" in text.lower():
        return reject("injected_memories", "echoes recalled <relevant-memories>")
    if text.startswith("<") and "</" in text:
        return reject("markup", "starts with '<' and contains '</'")
    if "**" in text and "\n-" in text:
        return reject("markdown_summary", "bold text and a '-' list: a markdown summary")
    emoji = _count_emoji(text)
    if emoji > MAX_EMOJI:
        return reject("emoji", f"{emoji} emoji; at most {MAX_EMOJI}")
    phrase = looks_like_prompt_injection(text)
    if phrase is not None:
        return reject("prompt_injection", f"looks like a prompt injection: {phrase!r}")
    # After the injection check, so a <system> tag is named for what it tries to do.
    tag = _TAG.search(text)
    if tag is not None:
        return reject("markup", f"contains the markup tag {tag.group()[:40]!r}")
    if _FENCE.search(text):
        return reject("code_block", "contains a fenced code block")
    if contains_secret(text):
        return reject("secret", "contains a password, key or token")
    trigger = _first_trigger(text)
    if trigger is None:
        return reject("no_trigger", "no capture trigger such as 'remember', 'prefer' or '记住'")
    return Candidate(index=index, text=text, category=detect_category(text), trigger=trigger)
