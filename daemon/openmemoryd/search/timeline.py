"""The timeline path: "what happened yesterday?" answered by the notes of that day.

A query that names days and asks nothing else ("today", "what did I do
yesterday?", "recent notes", 最近做了什么, "что было на прошлой неделе")
has no keyword to match and no topic for the vector leg: ranked by either,
it returns whatever is nearest to the filler words. What it asks for is the
notes of those days, newest first, in reading order within a day — the
daily files, headings that carry the date, and session transcripts written
then. "Recently" means the last seven days (`search.relative_dates`).

A query with any word of its own ("what did Wei say about tea yesterday")
is not a timeline request: it goes through both legs as usual, with its
dates as a ranking signal.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from datetime import date, datetime, time, timedelta
from typing import Final

import apsw

from openmemoryd.search.candidate import Candidate
from openmemoryd.search.dates import QueryDates, memory_date, named_by_day
from openmemoryd.search.hits import heading_at, headings_within
from openmemoryd.store import dated_chunks

__all__ = ["day_sections", "is_timeline_request", "timeline_candidates"]

# Words that ask for "what is there" without naming a topic, in the three
# languages the date reader knows. Chinese has no spaces: its phrases are
# removed first, longest first, and nothing may be left.
_FILLER_WORDS: Final = frozenset(
    """
    what what's whats which did do does done doing i we you me us my our the a an any
    anything everything all is are was were be been has have had happen happened
    happening going on in at from of for during over around about so far up to new
    latest show
    list give tell summarize summarise summary recap notes note memory memories log
    logs journal entries entry events event work worked working stuff things please can
    could would remind change changed changes
    что чем я мы ты делал делала делали сделал сделала сделали было были был была
    произошло случилось происходило мои мой моя моё наши наш заметки записи запись
    память журнал покажи покажите расскажи расскажите список за в на о об про все всё
    новое нового новенького занимался занималась занимались итоги события работа
    работе работу работал работала работали пожалуйста напомни напомните можешь
    можете можно рассказать показать сводка сводку обзор резюме дела изменилось под
    изменения поменялось
    """.split()
)
_FILLER_ZH: Final = re.compile(
    "|".join(
        sorted(
            """做了什么 干了什么 发生了什么 有什么 什么 做了 干了 发生 记录 笔记 日志
            我们 的 了 我 都 有 吗 呢 事情 事 一下 看看 总结 回顾 工作上 工作 内容 显示
            列出 哪些 些 请问 请 帮我 提醒 可以 能 概括 汇总 变化 改了""".split(),
            key=len,
            reverse=True,
        )
    )
)
_WORD: Final = re.compile(r"[\w']+")


def is_timeline_request(dates: QueryDates) -> bool:
    """Whether the query names days and nothing but filler besides."""
    if not dates.ranges:
        return False
    rest = _FILLER_ZH.sub(" ", dates.remainder.lower())
    return all(word in _FILLER_WORDS for word in _WORD.findall(rest))


def timeline_candidates(
    conn: apsw.Connection,
    dates: QueryDates,
    sources: Sequence[str] | None,
    agent: str | None,
) -> list[Candidate]:
    """The notes of the query's days: newest day first, then by file and
    line (transcripts by the time of their messages). Scored 1.0: each is
    exactly what was asked for; their order is the answer's.

    A chunk of a journal kept in one file holds several days, a few lines
    under each day's heading: each of its days in range is listed on its
    own, as those lines only (`day_sections`), so the other days' lines
    are not shown as this day's and the days keep their order."""
    found: list[tuple[date, str, int, Candidate]] = []
    for chunk in dated_chunks(conn, sources, agent, _epoch_bounds(dates)):
        candidate = Candidate.found_by_date(chunk)
        sections = day_sections(candidate)
        if not sections and chunk.msg_time is not None:
            sections = [(datetime.fromtimestamp(chunk.msg_time).date(), candidate)]
        for day, section in sections:
            if any(r.contains(day, slack_days=0) for r in dates.ranges):
                found.append((day, section.path, section.start_line, section))
    # Newest day first; within a day, files and lines in reading order.
    found.sort(key=lambda item: (-item[0].toordinal(), item[1], item[2]))
    return [item[3] for item in found]


def day_sections(candidate: Candidate) -> list[tuple[date, Candidate]]:
    """*candidate*'s lines grouped by the day they are under (the file name's
    day, else the day in the heading path at each line), each group as a
    candidate of its own lines; lines under no day are left out. A chunk of
    one day is returned whole."""
    inner = candidate.inner_headings
    if not inner or named_by_day(candidate.path):
        day = memory_date(candidate.path, candidate.heading)
        return [] if day is None else [(day, candidate)]
    lines = candidate.text.split("\n")
    runs: list[tuple[date, int, int]] = []  # day, first and last index into lines
    for index in range(len(lines)):
        heading = heading_at(candidate.heading, inner, candidate.start_line + index)
        day = memory_date(candidate.path, heading)
        if day is None:
            continue
        if runs and runs[-1][0] == day and runs[-1][2] == index - 1:
            runs[-1] = (day, runs[-1][1], index)
        else:
            runs.append((day, index, index))
    sections: list[tuple[date, Candidate]] = []
    for day, first, last in runs:
        while first <= last and not lines[first].strip():
            first += 1
        while last >= first and not lines[last].strip():
            last -= 1
        if first <= last:
            sections.append((day, _lines_of(candidate, lines, first, last)))
    return sections


def _lines_of(candidate: Candidate, lines: list[str], first: int, last: int) -> Candidate:
    """*candidate* cut to *lines* [first, last] (indexes into its text)."""
    start, end = candidate.start_line + first, candidate.start_line + last
    return replace(
        candidate,
        text="\n".join(lines[first : last + 1]),
        start_line=start,
        end_line=end,
        heading=heading_at(candidate.heading, candidate.inner_headings, start),
        inner_headings=headings_within(candidate.inner_headings, start, end),
    )


def _epoch_bounds(dates: QueryDates) -> tuple[float, float] | None:
    """The local-time span of the query's ranges, for transcript messages;
    None when a range has no year ("in May": any May)."""
    if any(r.any_year for r in dates.ranges):
        return None
    start = min(r.start for r in dates.ranges)
    end = max(r.end for r in dates.ranges) + timedelta(days=1)
    return (
        datetime.combine(start, time()).timestamp(),
        datetime.combine(end, time()).timestamp(),
    )
