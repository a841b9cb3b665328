"""Which kind of memory a logged text is, and where in the workspace it goes.

The Python MCP memory server routes a write by keywords to the file that holds its kind; our
workspace has those files already (docs/architecture.md):

=============  ============================================  ==========================
type           file and section                              for
=============  ============================================  ==========================
preference     ``MEMORY.md`` § User Preferences              how the user wants things
decision       ``MEMORY.md`` § Important Decisions           what was settled, and why
lesson         ``MEMORY.md`` § Lessons Learned               mistakes, gotchas, insights
fact           ``USER.md`` § Notes                           facts about the user
project        ``PROJECT.md`` § Goals / Constraints /        the project's context
               Overview (by keyword)
note           today's ``memory/YYYY-MM-DD.md``              everything else (decays)
=============  ============================================  ==========================

Invariants:

* `classify` tries the rules in `_RULES` order (lesson, decision, preference,
  fact, project) and names the keyword that decided; nothing matching is a
  ``note``. A decision that mentions a liking is still a decision;
* the keywords are English, Chinese and Russian. Russian patterns ignore
  case, use Unicode word boundaries and accept е for ё; Russian is inflected,
  so they match stems, narrowed where a stem has another sense ("решил
  задачу" solved a problem, "урок английского" is a class, "вывод команды" is
  output: none of them is a decision or a lesson);
* a given type is checked against `TYPES` (plus a few aliases the Python
  MCP memory server uses, such as ``instruction`` and ``pattern``); anything
  else is a `BadRequest` that lists the choices;
* pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, Literal, get_args

from openmemoryd.errors import BadRequest
from openmemoryd.workspace import SECTIONS

__all__ = [
    "ALIASES",
    "TYPES",
    "MemoryType",
    "Route",
    "Typed",
    "classify",
    "resolve_type",
    "route",
]

MemoryType = Literal["preference", "decision", "lesson", "fact", "project", "note"]
TYPES: Final[tuple[MemoryType, ...]] = get_args(MemoryType)
# The Python MCP memory server files instructions with preferences and patterns with lessons.
ALIASES: Final[dict[str, MemoryType]] = {
    "instruction": "preference",
    "pattern": "lesson",
    "user": "fact",
    "context": "project",
    "daily": "note",
    "journal": "note",
}


@dataclass(frozen=True, slots=True)
class Typed:
    """The memory's type and a sentence saying how it was chosen."""

    type: MemoryType
    reason: str


@dataclass(frozen=True, slots=True)
class Route:
    """Where a memory goes. `file` None is today's daily file; `section` is
    the heading to write under, `aliases` other headings that count as it."""

    file: str | None
    section: str | None
    aliases: tuple[str, ...] = ()
    reason: str = ""


def _en(pattern: str) -> Callable[[str], re.Match[str] | None]:
    return re.compile(pattern, re.IGNORECASE | re.ASCII).search


def _zh(pattern: str) -> Callable[[str], re.Match[str] | None]:
    return re.compile(pattern, re.IGNORECASE).search


def _ru(pattern: str) -> Callable[[str], re.Match[str] | None]:
    """Unicode word boundaries: under re.ASCII Cyrillic letters are not word
    characters, so no boundary would be found next to one."""
    return re.compile(pattern, re.IGNORECASE).search


_Finder = Callable[[str], re.Match[str] | None]

# Russian "lesson" is also a class at school ("урок английского", "уроки
# музыки по средам"), which is a note about the user's week, not an insight.
# So "урок" counts only as a lesson learned: "урок:", "урок на будущее", "урок
# усвоен", or with a verb or adjective that makes it one ("извлекли урок",
# "важный урок", "главный урок"). "Вывод" is the same ("вывод команды" is
# output): only "вывод:" or "сделали вывод"; "ошибка" is also any error
# ("ошибка 500 на стейджинге"): only "моя/наша/главная ошибка", "ошибкой было".
_RU_LESSON: Final = (
    r"\bурок\w*\s*[:—–]|\bурок\w*\s+(?:на\s+будущее|усвоен\w*)"
    r"|\b(?:извл[её]к\w*|извлечь|вынес\w*|вынести|усвоил\w*|получил\w*|важн\w+"
    r"|главн\w+|ценн\w+|горьк\w+|болезненн\w+|ж[её]стк\w+)\s+урок\w*"
    r"|\bвывод(?:ы)?\s*[:—–]|\bсдела\w*\s+вывод\w*"
    r"|\b(?:мо[яи]|наш[аи]|главн\w+|типичн\w+|частая|частые|грубая)\s+ошибк\w*"
    r"|\bошибкой\s+был\w*"
    r"|\bоказалось\b|\bоказывается\b|\bв\s+следующий\s+раз\b|\bвпредь\b"
    # "На будущее: …" opening a sentence, not "планы на будущее: …".
    r"|(?:^|(?<=[.!?]\s))на\s+будущее\b"
    r"|\bграбл\w*|\bкорень\s+проблемы\b|\bкорнев\w+\s+причин\w*"
)
# "Решили перейти", "решила не деплоить", "решили, что …", "решено",
# "решение: …"; not "решил задачу" (solved a problem, no infinitive after it:
# one ends in a vowel and -ть, a consonant and -ти, or -чь; so "решили эти
# задачи" is not one either) nor "решение задачи".
_RU_DECISION: Final = (
    r"\bреш(?:ил|ила|или)\s+(?:не\s+)?"
    r"(?:[а-яё]*[аеёиоуыэюя]ть(?:ся)?|[а-яё]*[бвгджзйклмнпрстфхцчшщ]ти(?:сь)?"
    r"|[а-яё]+чь(?:ся)?)\b"
    r"|\bреш(?:ил|ила|или)\s*,?\s+что\b|\bрешено\b"
    r"|\bрешени[еяю]\b(?!\s+(?:задач|проблем|уравнени|пример|баг|ошибк|вопрос|тест)\w*)"
    r"|\bвыбрали\b|\bвыбор\s+пал\b|\bбудем\s+(?:использовать|пользоваться|применять)\b"
    r"|\bиспользуем\b|\bдавай(?:те)?\s+использовать\b|\bостановились\s+на\b|\bдоговорились\b"
    # "Перешли на uv"; not the imperative "перешли на почту" (forward it).
    r"|\b(?:переш[её]л|перешла|перешло|перешли|переходим)\s+на\b"
    r"(?!\s+(?:почт|e-?mail|мейл|имейл|адрес|номер|телефон|ящик|мо[йюеи]\b|ты\b))"
)

_RULES: Final[tuple[tuple[MemoryType, tuple[_Finder, ...]], ...]] = (
    (
        "lesson",
        (
            _en(
                r"\b(?:lessons?|learn(?:ed|t)|mistakes?|gotchas?|turns?\s+out|next\s+time"
                r"|in\s+hindsight|root\s+cause|pitfalls?|the\s+fix\s+(?:is|was))\b"
            ),
            _zh(r"教[训訓]|学到|學到|踩坑|下次|原来|原來|吸取|经验|經驗|根本原因|坑"),
            _ru(_RU_LESSON),
        ),
    ),
    (
        "decision",
        (
            _en(
                r"\b(?:decided|decision|we(?:\s+will|['’]ll|\s+are\s+going\s+to)\s+use"
                r"|let['’]?s\s+use|going\s+with|(?:we\s+)?chose|chosen|switched\s+to"
                r"|settled\s+on|agreed\s+(?:on|to)|adopt(?:ed)?)\b"
            ),
            _zh(
                r"[决決]定|改用|[选選][择擇]了|[选選]用|采用|採用|我[们們](?:[将將]|[会會]|要)?用|定下"
            ),
            _ru(_RU_DECISION),
        ),
    ),
    (
        "preference",
        (
            _en(
                r"\b(?:prefers?|preferred|preferences?|likes?|loves?|hates?|dislikes?"
                r"|wants?|favou?rite|always|never|rather|don['’]?t\s+like)\b"
            ),
            _zh(r"喜[欢歡]|偏好|[讨討][厌厭]|想要|不要|[总總]是|从不|從不|永[远遠]不|最爱|最愛"),
            # "нравится", not "нрав" (temper); "любимый", not "любой" (any).
            _ru(
                r"\bпредпоч(?:ита\w*|[её]л|ла|ли|ло|тени\w*)|\b(?:не\s+)?(?:по)?нрав[ия]\w*"
                r"|\b(?:не\s+)?люб(?:лю|ишь|ит|им|ите|ят|ил|ила|или|им\w+)\b|\bобожа\w*"
                r"|\bненави[жд]\w*|\bхоч(?:у|ешь|ет)\b|\bхотим\b|\bвсегда\b|\bникогда\b"
            ),
        ),
    ),
    (
        "fact",
        (
            _en(
                r"\b(?:my\s+name|i\s+am|i['’]m|i\s+live|i\s+work|i\s+was\s+born|i\s+have"
                r"|my\s+(?:wife|husband|partner|kids?|children|sons?|daughters?|mom|mum"
                r"|mother|dad|father|parents|brothers?|sisters?|family|birthday|job|role"
                r"|timezone|time\s+zone|email|phone|address|company|team|manager|dog|cat)"
                r"|the\s+user(?:['’]s)?|user\s+is)\b"
            ),
            # "我女儿" and "我对花生过敏" say who the user is as "我的…是" does.
            _zh(
                r"我叫|我是|我住|我在.{0,12}工作|我的.{1,10}是|我今年|我来自|我來自|用[户戶]"
                r"|我(?:的)?(?:女儿|女兒|儿子|兒子|孩子|老婆|妻子|老公|丈夫|爱人|愛人|妈妈|媽媽"
                r"|爸爸|父母|哥哥|姐姐|弟弟|妹妹|家人|生日)|我对.{1,10}过敏|我對.{1,10}過敏"
            ),
            # "пользователь" is the user; "пользователи сервиса" are the
            # project's users, so the plural is left to the project rule.
            _ru(
                r"\bменя\s+зовут\b|\bя\s+(?:живу|работаю|родил\w*|из\b(?!-))"
                r"|\bмо(?:й|я|[её]|и)\s+(?:жена|муж|дети|реб[её]нок|сын|дочь|мама|мать|папа"
                r"|отец|родители|брат|сестра|семья|день\s+рождения"
                r"|почта|телефон|адрес|компания|команда|начальник|руководитель|собака|кошка|кот"
                r"|часовой\s+пояс|имя|должность|профессия)\b"
                r"|\bу\s+меня\s+(?:есть\b|аллерги)|\bпользовател(?:ь|ю|я|ем|е)\b"
            ),
        ),
    ),
    (
        "project",
        (
            _en(
                r"\b(?:project|repo|repository|codebase|this\s+app|service|deadline"
                r"|milestone|release|stack|staging|production|deploy(?:ed|s|ment)?|ci"
                r"|pipeline|roadmap|sprint|backend|frontend|api)\b"
            ),
            _zh(r"项目|項目|仓库|倉庫|代码库|代碼庫|截止|上线|上線|部署|里程碑|版本|后端|前端"),
            # "прод", "прода"; not "продукты" or "продажи".
            _ru(
                r"\bпроект\w*|\bрепозитори\w*|\bрепо\b|\bсервис\w*|\bдедлайн\w*|\bрелиз\w*"
                r"|\bстейджинг\w*|\bпрод(?:а|е|у|ом)?\b|\bпродакш[еэ]?н\w*|\b(?:за)?депло\w*"
                r"|\bпайплайн\w*|\bб[эе]кенд\w*|\bфронтенд\w*|\bспринт\w*|\bкодов\w+\s+баз\w*"
            ),
        ),
    ),
)

_PROJECT_SECTIONS: Final[tuple[tuple[str, tuple[_Finder, ...]], ...]] = (
    (
        "Goals",
        (
            _en(r"\b(?:goals?|aims?|objectives?|achieve|target)\b"),
            _zh(r"目[标標]|旨在|达成|達成"),
            # "цель", "цели"; not "целый" (whole) or "целиком".
            _ru(
                r"\bцел(?:ь|и|ью|ей|ям|ями|ях)\b|\bдоби(?:ться|ваемся)\b|\bдостичь\b|\bстремимся\b"
            ),
        ),
    ),
    (
        "Constraints",
        (
            _en(r"\b(?:must|mustn['’]?t|cannot|can['’]?t|only|limits?|constraints?|requires?)\b"),
            _zh(r"必[须須]|不能|只能|限制|要求|不得"),
            _ru(
                r"\bдолж(?:ен|на|но|ны)\b|\bнельзя\b|\bтолько\b|\bограничени\w*"
                r"|\bтребу(?:ет|ется|ют|ются)\b|\bтребовани\w*|\bне\s+мо(?:жет|жем|гут)\b"
            ),
        ),
    ),
)


def resolve_type(given: str) -> Typed:
    """The type a caller named (an alias resolved); BadRequest for an unknown one."""
    name = given.strip().lower()
    if name in TYPES:
        return Typed(name, f"type {name} (given)")
    if name in ALIASES:
        return Typed(ALIASES[name], f"type {ALIASES[name]} (given as {name!r})")
    choices = ", ".join(TYPES)
    raise BadRequest(f"unknown memory type {given!r}; choose one of: {choices}")


def classify(text: str) -> Typed:
    """The type *text* reads as, with the keyword that decided it."""
    for kind, finders in _RULES:
        for find in finders:
            match = find(text)
            if match is not None:
                return Typed(kind, f"type {kind} (keyword {match.group()!r})")
    return Typed("note", "type note (no preference, decision, lesson, user or project keyword)")


def route(kind: MemoryType, text: str) -> Route:
    """Where a memory of *kind* saying *text* is written."""
    match kind:
        case "preference" | "decision" | "lesson":
            file, (section, *aliases) = SECTIONS[kind]
            return Route(file, section, tuple(aliases), f"{kind}s")
        case "fact":
            return Route("USER.md", "Notes", (), "facts about the user")
        case "project":
            for section, finders in _PROJECT_SECTIONS:
                for find in finders:
                    found = find(text)
                    if found is not None:
                        return Route("PROJECT.md", section, (), f"keyword {found.group()!r}")
            return Route("PROJECT.md", "Overview", (), "project context")
        case "note":
            return Route(None, None, (), "notes go to today's daily file")
