"""What reading a query's dates costs, for everyday questions and for the
longest queries the protocol accepts.

Every search reads the dates its query names before either leg runs
(`openmemoryd.search.dates.parse_query_dates`): some fifty patterns in
three languages, then the passes that join two dates into a span or read
"since". An everyday question costs a fraction of a millisecond. The
protocol accepts queries of up to `MAX_QUERY_CHARS` characters, and one
agent sending a date-word repeated to that length must not stall the
reader that serves it: each such query here is the same few date words
repeated to the limit, the kind of text that once made the passes compare
every mention with every other.

Run from the repository root::

    python -m bench.query_dates [--repeat 7] [--json PATH]

Medians of ``--repeat`` parses per query, in milliseconds; progress goes to
stderr, stdout is a Markdown table to paste.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import date
from pathlib import Path
from typing import Any, Final

from bench.report import invocation, progress, publish
from bench.search_latency import machine_info
from omem_protocol import MAX_QUERY_CHARS
from openmemoryd.search.dates import parse_query_dates

__all__ = ["EVERYDAY", "REPEATED", "DatesResult", "main", "measure", "render_table"]

TODAY: Final = date(2026, 11, 27)
EVERYDAY: Final = (
    "What did Nate do for Joanna on 25 May, 2022?",
    "Where was John between August 11 and August 15 2023?",
    "what happened in the last 3 days",
    "What did Wei decide on Wednesday?",
    "что изменилось с 3 марта",
    "что было на прошлой неделе",
    "2023年夏天去了哪里",
    "最近三天做了什么",
    "What did we eat over Christmas?",
    "что делали на майских",
    "国庆去哪了",
    "what did we do from Thanksgiving to Christmas",
    "что делали между Новым годом и Рождеством",
    "从元旦到春节做了什么",
    "How do I rotate the TLS certificate?",
)
# A date word or phrase, repeated to the protocol's limit.
REPEATED: Final = (
    "最近",
    "3月3日到",
    "上周",
    "3 March to 5 April ",
    "since 3 March ",
    "с 3 по 5 марта ",
    "on the Monday ",
    "in the summer ",
    "over Christmas ",
    "国庆",
    "from Thanksgiving to Christmas ",
    "从元旦到春节",
)


@dataclass(frozen=True, slots=True)
class DatesResult:
    """One query: its kind, a label, its length and the median parse time."""

    kind: str
    label: str
    chars: int
    ranges: int
    median_ms: float


def _repeated(unit: str) -> str:
    return (unit * (MAX_QUERY_CHARS // len(unit) + 1))[:MAX_QUERY_CHARS]


def _time(query: str, repeat: int) -> tuple[float, int]:
    times, found = [], 0
    for _ in range(repeat):
        started = time.perf_counter()
        found = len(parse_query_dates(query, TODAY).ranges)
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times), found


def measure(repeat: int) -> list[DatesResult]:
    """Every everyday question, then every repeated date word."""
    results = []
    for kind, label, query in (
        *(("everyday", q, q) for q in EVERYDAY),
        *(
            ("repeated", f"{u.strip()!r} × {MAX_QUERY_CHARS // len(u)}", _repeated(u))
            for u in REPEATED
        ),
    ):
        median, found = _time(query, repeat)
        _progress(f"{kind} {label[:40]}: {median:.2f} ms")
        results.append(DatesResult(kind, label, len(query), found, round(median, 3)))
    return results


def render_table(results: Sequence[DatesResult], machine: dict[str, Any], repeat: int) -> str:
    lines = [
        f"Reading a query's dates, median of {repeat} parses "
        f"(load {machine.get('load_average')} at the start):",
        "",
        "| query | kind | chars | ranges read | ms |",
        "|---|---|---:|---:|---:|",
    ]
    lines += [
        f"| {r.label} | {r.kind} | {r.chars} | {r.ranges} | {r.median_ms:.2f} |" for r in results
    ]
    return "\n".join(lines)


_progress = progress("query-dates")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.query_dates", description=__doc__)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error("--repeat must be 1 or more")
    machine = machine_info()
    results = measure(args.repeat)
    args_list, command = invocation("bench.query_dates", argv)
    publish(
        "query_dates",
        lambda m: render_table(results, m, args.repeat),
        [asdict(r) for r in results],
        command=command,
        argv=args_list,
        machine=machine,
        json_path=args.json,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
