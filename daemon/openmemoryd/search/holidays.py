"""Holidays a query names: "over Christmas", "on New Year's Eve 2023", "last
Thanksgiving"; "на майских", "на Новый год", "на Пасху 2024"; 国庆, 去年春节,
2023年中秋节.

People date their lives by holidays more than by numbers: 国庆去哪玩了 and
"на майских ездили на дачу?" ask about days a daily note names by date
(``memory/2025-10-03.md``), and no word of the query is in it. A holiday is
read as the days people keep it:

* fixed ones by the calendar: Christmas 24-26 December (its Eve and Day
  alone when named so), New Year the night of 31 December into 1 January
  ("New Year 2024", "Новый 2024 год": into 2024), Valentine's Day, Halloween,
  the Fourth of July; Russian Christmas 7 January, the New Year holidays 1-8
  January, the May holidays (майские) 1-10 May, Victory Day 9 May; 元旦,
  五一 1-5 May, 清明 4-6 April, 国庆 1-7 October, 双十一;
* moving ones by their rule: Thanksgiving (the United States': the fourth
  Thursday of November, to Sunday), Easter (Good Friday to Easter Monday;
  Пасха, the Orthodox Sunday, by `dateutil.easter`), and the lunar ones by
  the Chinese calendar (`lunardate`): 春节 from 除夕 to 初六, 除夕, 元宵节,
  端午, 七夕, 中秋.

With a year ("Christmas 2023", 2023年春节, "на Пасху 2024 года") it is that
year's; "last Christmas", "в прошлый Новый год" the last one over before
today; "this Easter", 今年国庆 this year's; 去年春节, 前年中秋 the one of that
year. Without any, it is any year's, as "on 25 May" is: a fixed holiday on
its days in every year, a moving one on each of the last ten years' (or,
after "since" or before 以来, the last one only: "since Chinese New Year").

A holiday as a thing is not a date. In English a bare name needs a word
that makes it one: "on", "at", "over", "during", "around", "for",
"since", "after", "from" or "between" before it, a year after it, "last"
or "this" before it, "Day", "Eve", "holidays", "break" after it, or "to",
"and", "until" between it and another holiday read so ("between Christmas
and New Year" is the days from one to the other; "Christmas Eve dinner"
is a date, "Christmas tree", "New Year's resolutions" and "salt and Easter
eggs" are not). Russian names need "на", "в", "под", "с", "после" or "между" ("на
Новый год", "в Пасху", "после майских"), "и", "до" or "по" after another
holiday read so ("с Нового года до Рождества", "между Новым годом и
Рождеством"), or the words that say the holidays themselves ("майские
праздники", "новогодние каникулы"); "с Новым годом" is a greeting.
Chinese names are dates as they stand (国庆去哪了),
except the few that are ordinary words too: 十一 ("eleven") only as
十一假期 and the like, 清明 only as 清明节 or before 假期, 期间 and the like,
五一 not inside a longer number, and 国庆, a given name too (王国庆), after
another Han character only where that one leads to a time (过国庆, 这个国庆,
今年国庆).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import date, timedelta
from functools import lru_cache
from typing import Final

from dateutil.easter import EASTER_ORTHODOX, EASTER_WESTERN, easter
from lunardate import LunarDate

from openmemoryd.search.date_spans import since_cue
from openmemoryd.search.day_ranges import ZH_YEARS_BACK, DateRange

__all__ = ["holiday_mentions"]

# How many years a holiday named without one looks back (moving holidays
# are listed year by year; fixed ones match any year).
ANY_YEAR_SPAN: Final = 10


@dataclass(frozen=True, slots=True)
class _Holiday:
    """The days of a holiday in a given year; `fixed`: the same days every
    year (so a yearless mention is any year's)."""

    days: Callable[[int], DateRange]
    fixed: bool


def _on(
    month: int, day: int, last_month: int | None = None, last_day: int | None = None
) -> _Holiday:
    """From *month* *day* to *last_month* *last_day* (that day alone if unset), every year."""

    def days(year: int) -> DateRange:
        end = date(year, last_month or month, last_day or day)
        return DateRange(date(year, month, day), end)

    return _Holiday(days, fixed=True)


def _new_year(year: int) -> DateRange:
    """The night into *year*: its eve and its first day."""
    return DateRange(date(year - 1, 12, 31), date(year, 1, 1))


def _thanksgiving(year: int) -> DateRange:
    first = date(year, 11, 1)
    thursday = first + timedelta(days=(3 - first.weekday()) % 7 + 21)
    return DateRange(thursday, thursday + timedelta(days=3))


def _easter(year: int) -> DateRange:
    sunday = easter(year, EASTER_WESTERN)
    return DateRange(sunday - timedelta(days=2), sunday + timedelta(days=1))


def _orthodox_easter(year: int) -> DateRange:
    sunday = easter(year, EASTER_ORTHODOX)
    return DateRange(sunday, sunday)


def _lunar(month: int, day: int, *, before: int = 0, after: int = 0) -> _Holiday:
    """The lunar *month* and *day* of the lunar year that begins in *year*,
    from *before* days before it to *after* days after."""

    def days(year: int) -> DateRange:
        solar = LunarDate(year, month, day).to_solar_date()
        return DateRange(solar - timedelta(days=before), solar + timedelta(days=after))

    return _Holiday(days, fixed=False)


_HOLIDAYS: Final[dict[str, _Holiday]] = {
    "christmas": _on(12, 24, 12, 26),
    "christmas_eve": _on(12, 24),
    "christmas_day": _on(12, 25),
    "new_year": _Holiday(_new_year, fixed=True),
    "new_years_eve": _on(12, 31),
    "new_years_day": _on(1, 1),
    "valentine": _on(2, 14),
    "halloween": _on(10, 31),
    "independence": _on(7, 4),
    "thanksgiving": _Holiday(_thanksgiving, fixed=False),
    "easter": _Holiday(_easter, fixed=False),
    "orthodox_easter": _Holiday(_orthodox_easter, fixed=False),
    "orthodox_christmas": _on(1, 7),
    "ru_new_year_holidays": _on(1, 1, 1, 8),
    "ru_may_holidays": _on(5, 1, 5, 10),
    "victory_day": _on(5, 9),
    "spring_festival": _lunar(1, 1, before=1, after=6),
    "lunar_eve": _lunar(1, 1, before=1, after=-1),  # 除夕: the day before 初一 alone
    "lunar_new_year_day": _lunar(1, 1),
    "lantern": _lunar(1, 15),
    "dragon_boat": _lunar(5, 5),
    "qixi": _lunar(7, 7),
    "mid_autumn": _lunar(8, 15),
    "qingming": _on(4, 4, 4, 6),
    "labour_day_cn": _on(5, 1, 5, 5),
    "national_day_cn": _on(10, 1, 10, 7),
    "singles_day": _on(11, 11),
}

# Each name: its pattern, its holiday, and whether it is a date as it stands
# (else it needs a word before or a year after that makes it one).
_EN_NAMES: Final = (  # the longer names first: the first mention of a span wins
    (r"(?:chinese|lunar)\s+new\s+year|spring\s+festival", "spring_festival", True),
    (r"mid-?autumn\s+festival|moon\s+festival", "mid_autumn", True),
    (r"dragon\s+boat\s+festival", "dragon_boat", True),
    (r"christmas\s+eve", "christmas_eve", True),
    (r"christmas\s+day", "christmas_day", True),
    (r"(?:christmas|xmas)\s+(?:holidays?|break|vacation|weekend)", "christmas", True),
    (r"christmas|xmas", "christmas", False),
    (r"new\s+year(?:'|’)?s\s+eve", "new_years_eve", True),
    (r"new\s+year(?:'|’)?s\s+day", "new_years_day", True),
    (r"new\s+year(?:(?:'|’)?s)?", "new_year", False),
    (r"(?:st\.?\s+)?valentine(?:'|’)?s\s+day", "valentine", True),
    (r"halloween\s+night", "halloween", True),
    (r"halloween", "halloween", False),
    (r"thanksgiving\s+(?:day|weekend|break|holidays?)", "thanksgiving", True),
    (r"thanksgiving", "thanksgiving", False),
    (r"easter\s+(?:sunday|weekend|monday|holidays?|break)", "easter", True),
    (r"easter", "easter", False),
    (r"(?:the\s+)?fourth\s+of\s+july|independence\s+day", "independence", True),
)
_RU_NAMES: Final = (
    (r"(?:китайск|лунн)\w*\s+нов\w+\s+год\w*", "spring_festival", True),
    (r"новогодн\w*\s+(?:праздник\w*|каникул\w*)", "ru_new_year_holidays", True),
    (r"нов(?:ый|ого|ому|ым)\s+(?:(?P<inner>(?:19|20)\d\d)\s+)?год(?:а|у|ом)?", "new_year", False),
    (r"рождеств(?:о|а|у|ом|е)", "orthodox_christmas", False),
    (r"пасх(?:а|и|у|ой|е)", "orthodox_easter", False),
    (r"майск\w*\s+(?:праздник\w*|выходн\w*|каникул\w*)", "ru_may_holidays", True),
    (r"майск(?:ие|их|им)", "ru_may_holidays", False),
    (r"д(?:ень|ня|ню|нём|нем)\s+победы", "victory_day", True),
    (r"х[эе]ллоуин\w*", "halloween", False),
    (r"д(?:ень|ня|ню|нём|нем)\s+святого\s+валентина|валентинов\w*\s+д\w+", "valentine", True),
)
# 五一 and 十一 inside a longer number (二十五一, 五一班, 十一个) are not holidays
_NUMERALS: Final = r"\d一二三四五六七八九十百零〇两"
# 国庆 is a given name too (王国庆, 张国庆): after another Han character it is
# the holiday only after one that leads to a time (过, 在, 这个, 今年, 这次, 从 …)
_NOT_A_NAME: Final = r"(?:(?<![\u4e00-\u9fff])|(?<=[过在个的年次从到和等前后]))"
_ZH_NAMES: Final = (
    (r"大年初一|正月初一", "lunar_new_year_day"),
    (r"除夕|大年三十|年三十", "lunar_eve"),
    (r"春节|过年|农历新年", "spring_festival"),
    (r"元宵节", "lantern"),
    (r"清明节|清明(?=假期|小长假|期间|那天|的时候|时)", "qingming"),
    (rf"(?<![{_NUMERALS}第])五一(?![{_NUMERALS}班级路号届])", "labour_day_cn"),
    (r"劳动节", "labour_day_cn"),
    (r"端午节?", "dragon_boat"),
    (r"七夕节?", "qixi"),
    (r"中秋节?", "mid_autumn"),
    (
        rf"{_NOT_A_NAME}国庆节?|(?<![{_NUMERALS}第双])十一(?=假期|长假|黄金周|期间)",
        "national_day_cn",
    ),
    (r"元旦", "new_years_day"),
    (r"平安夜", "christmas_eve"),
    (r"圣诞节?", "christmas"),
    (r"跨年", "new_year"),
    (r"情人节", "valentine"),
    (r"万圣节", "halloween"),
    (r"双十一|双11", "singles_day"),
    (r"感恩节", "thanksgiving"),
    (r"复活节", "easter"),
)

_YEAR: Final = r"(?P<year>(?:19|20)\d\d)"
# "since" and "after" read as from the holiday to today, "from … to" and
# "between … and" as the days from one to the other (`date_spans`)
_EN_LEAD: Final = (
    r"(?P<lead>\b(?:on|at|over|during|around|for|since|after|from|between"
    r"|to|and|until|till|through)\s+(?:the\s+)?)?"
)
_EN_MOD: Final = r"(?:(?P<mod>last|this\s+past|this)\s+)?"
_RU_LEAD: Final = r"(?P<lead>(?<!\w)(?:на|в|во|под|с|со|после|между|и|до|по)\s+)?"
# Words that make a bare name a date only as the second end of a span
_SECOND_LEADS: Final = frozenset(("to", "and", "until", "till", "through", "и", "до", "по"))
_RU_MOD: Final = r"(?:(?P<mod>прошл\w*|эт(?:от|и|ой|у|их|ом))\s+)?"
_ZH_BEFORE: Final = rf"(?:{_YEAR}\s*年\s*的?\s*|(?P<back>今年|去年|前年)\s*的?\s*)?"


# Words (lower case) one of which each holiday's names hold: a query holding
# none of them is not matched against the holiday's patterns at all, which
# most queries would otherwise pay for at every character.
_STEMS: Final[dict[str, tuple[str, ...]]] = {
    "christmas": ("christmas", "xmas", "圣诞"),
    "christmas_eve": ("christmas", "平安夜"),
    "christmas_day": ("christmas",),
    "new_year": ("year", "нов", "跨年"),
    "new_years_eve": ("year",),
    "new_years_day": ("year", "元旦"),
    "valentine": ("valentine", "валентин", "情人节"),
    "halloween": ("halloween", "ллоуин", "万圣"),
    "independence": ("july", "independence"),
    "thanksgiving": ("thanksgiving", "感恩节"),
    "easter": ("easter", "复活节"),
    "orthodox_easter": ("пасх",),
    "orthodox_christmas": ("рождеств",),
    "ru_new_year_holidays": ("новогод",),
    "ru_may_holidays": ("майск",),
    "victory_day": ("побед",),
    "spring_festival": ("year", "festival", "нов", "春节", "过年", "农历"),
    "lunar_eve": ("除夕", "年三十"),
    "lunar_new_year_day": ("初一",),
    "lantern": ("元宵",),
    "dragon_boat": ("dragon", "端午"),
    "qixi": ("七夕",),
    "mid_autumn": ("autumn", "moon", "中秋"),
    "qingming": ("清明",),
    "labour_day_cn": ("五一", "劳动节"),
    "national_day_cn": ("国庆", "十一"),
    "singles_day": ("双十一", "双11"),
}


def _compile() -> tuple[tuple[re.Pattern[str], str, bool], ...]:
    patterns: list[tuple[str, re.RegexFlag, str, bool]] = []
    for name, key, alone in _EN_NAMES:
        text = rf"{_EN_LEAD}(?P<m>{_EN_MOD}\b(?:{name})\b(?:,?\s+(?:of\s+)?{_YEAR}\b)?)"
        patterns.append((text, re.IGNORECASE, key, alone))
    for name, key, alone in _RU_NAMES:
        text = (
            rf"{_RU_LEAD}(?P<m>{_RU_MOD}(?<!\w)(?P<ru>{name})(?!\w)"
            rf"(?:\s+{_YEAR}(?:\s*(?:г\.|года|год))?(?!\w))?)"
        )
        patterns.append((text, re.IGNORECASE, key, alone))
    for name, key in _ZH_NAMES:
        patterns.append((rf"(?P<m>{_ZH_BEFORE}(?:{name}))", re.NOFLAG, key, True))
    return tuple((re.compile(text, flags), key, alone) for text, flags, key, alone in patterns)


_PATTERNS: Final = _compile()


def holiday_mentions(query: str, today: date) -> Iterator[tuple[int, int, tuple[DateRange, ...]]]:
    """Each holiday *query* names: its span and the days it means on *today*."""
    lowered = query.lower()
    named = {key for key, stems in _STEMS.items() if any(stem in lowered for stem in stems)}
    if not named:
        return
    found: list[tuple[int, int, tuple[DateRange, ...]]] = []
    second: list[tuple[int, int, int, tuple[DateRange, ...]]] = []  # lead start, span, days
    for pattern, key, alone in _PATTERNS:
        if key not in named:
            continue
        holiday = _HOLIDAYS[key]
        for match in pattern.finditer(query):
            groups = match.groupdict()
            year, back = groups.get("year") or groups.get("inner"), groups.get("back")
            mod = (groups.get("mod") or "").lower()
            lead = (groups.get("lead") or "").strip().lower()
            if not (alone or lead or mod or year) or _greeting(lead, groups):
                continue
            start, end = match.span("m")
            # a fixed holiday's "since" is read with the other dates' (`date_spans`)
            since = not (holiday.fixed or year or back or mod) and since_cue(query, start, end)
            try:
                days = _days(key, year, back, mod, since, today)
            except (OverflowError, ValueError):  # past the calendars' ends
                continue
            if not days:
                continue
            if lead in _SECOND_LEADS and not (alone or mod or year):
                second.append((match.start("lead"), start, end, days))
            else:
                found.append((start, end, days))
    # "to New Year", "and New Year": a date only as the end of a span from one
    ends = {end for _, end, _ in found}
    for lead_start, start, end, days in second:
        if any(query[e:lead_start].isspace() or e == lead_start for e in ends):
            found.append((start, end, days))
    yield from found


def _greeting(lead: str, groups: dict[str, str | None]) -> bool:
    """ "С Новым годом", "с Пасхой", "с Рождеством": "с" and the holiday in
    the instrumental wish it, where "с Нового года" (the genitive) is since."""
    name = (groups.get("ru") or "").lower()
    return lead in ("с", "со") and _INSTRUMENTAL.search(name) is not None


_INSTRUMENTAL: Final = re.compile(r"(?:ом|ой|ым|ем|ём|ами|ими|ями)\b")


# The same holiday named over and over costs one reading.
@lru_cache(maxsize=256)
def _days(
    key: str, year: str | None, back: str | None, mod: str, since: bool, today: date
) -> tuple[DateRange, ...]:
    holiday = _HOLIDAYS[key]
    if year is not None:
        return (holiday.days(int(year)),)
    if back is not None:
        return (holiday.days(today.year - ZH_YEARS_BACK[back]),)
    if mod in ("this", "этот", "эти", "этой", "эту", "этих", "этом"):
        return (holiday.days(today.year),)
    if mod or since:  # "last", "this past", "прошлый", and "since": the last one over
        return (_last(holiday, today),)
    if holiday.fixed:
        return _any_year(holiday.days(2001 if key == "new_year" else 2000))
    first = today.year - ANY_YEAR_SPAN + 1
    every = (holiday.days(year) for year in range(first, today.year + 1))
    return tuple(days for days in every if days.start <= today)


def _last(holiday: _Holiday, today: date) -> DateRange:
    for year in (today.year, today.year - 1, today.year - 2):
        days = holiday.days(year)
        if days.end < today:
            return days
    raise ValueError("no such holiday before today")


def _any_year(days: DateRange) -> tuple[DateRange, ...]:
    """*days* (of a leap year, or crossing into one) in any year."""
    if days.start.year == days.end.year:
        return (DateRange(days.start, days.end, any_year=True),)
    return (
        DateRange(days.start.replace(year=2000), date(2000, 12, 31), any_year=True),
        DateRange(date(2000, 1, 1), days.end.replace(year=2000), any_year=True),
    )
