"""Deterministic synthetic memory workspaces for search benchmarks.

A benchmark needs a workspace whose size in chunks is known in advance, whose
text looks like what agents really write (English, Chinese and both mixed in
one line, bullets, decisions, code), and in which some facts can be found by
exactly one keyword search. Everything is drawn from the word and phrase pools
below with one seeded ``random.Random``; there is no external data.

Layout: ``MEMORY.md``, ``USER.md`` and ``PROJECT.md`` (up to 5 sections each),
up to 6 topic files ``memory/projects/<name>.md`` (6-15 dated sections each),
and daily files ``memory/YYYY-MM-DD.md`` on consecutive days back from
`NEWEST_DAY`, each titled ``# YYYY-MM-DD`` with 3-12 ``## HH:MM <topic>``
sections in time order. Daily files hold everything the others do not.

Invariants:

* Same ``(sections, seed, needles)`` gives byte-identical files; no set or
  dict iteration order, clock or environment feeds the output.
* ``CorpusStats.sections`` equals the number of ``## `` heading lines written,
  which equals the ``sections`` argument.
* Every section (its ``## `` line up to the line before the next ``## `` line
  or the end of the file) costs between `SECTION_MIN_TOKENS` and
  `SECTION_MAX_TOKENS` per `estimate_tokens`. The daemon packs up to 175
  tokens a chunk (its default; a line's break costs one more) and flushes
  before a heading once a chunk holds 50, so each section becomes about one
  chunk.
* The text before a file's first section (its ``#`` title) costs at most
  `PREAMBLE_MAX_TOKENS`, so title plus first section still fits one chunk.
* Only titles and section headings start with ``#``; code blocks never do, so
  no chunker can mistake a shell comment for a heading.
* Each needle's rare token (an invented Latin word, or two Han characters
  that no pool contains) occurs in exactly one file, on the needle's line.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from datetime import date, timedelta
from pathlib import Path
from typing import Final

from bench import corpus_pools as pools
from openmemoryd.text.tokens import estimate_tokens

__all__ = [
    "CHINESE_SECTION_SHARE",
    "NEWEST_DAY",
    "PREAMBLE_MAX_TOKENS",
    "SECTION_MAX_TOKENS",
    "SECTION_MIN_TOKENS",
    "CorpusStats",
    "Needle",
    "generate_workspace",
    "main",
    "sample_queries",
]

SECTION_MIN_TOKENS: Final = 65
SECTION_MAX_TOKENS: Final = 150
PREAMBLE_MAX_TOKENS: Final = 20
CHINESE_SECTION_SHARE: Final = 0.3
NEWEST_DAY: Final = date(2026, 11, 1)

# Sections are filled towards a random target and never past _HARD_MAX. Each
# piece (heading or block, with the blank line after it) is estimated alone;
# the sum of those estimates is never below the estimate of the joined text
# and at most one token per piece above it, so with pieces of >= ~10 tokens a
# section lands inside [SECTION_MIN_TOKENS, SECTION_MAX_TOKENS] without ever
# estimating the whole section.
_TARGET_LOW: Final = 85
_TARGET_HIGH: Final = 135
_HARD_MAX: Final = 145

_DAILY_MIN_SECTIONS: Final = 3
_DAILY_MAX_SECTIONS: Final = 12
_ROOT_MAX_SECTIONS: Final = 5
_TOPIC_MAX_FILES: Final = 6


def _emitted_text() -> str:
    """Every literal the generator can emit, lowercased, to vet rare tokens against."""
    every: tuple[tuple[str, ...], ...] = (
        pools.EN_PEOPLE, pools.CN_PEOPLE, pools.TOOLS, pools.PROJECTS, pools.EN_TOPICS,
        pools.CN_TOPICS, pools.EN_PREFS, pools.CN_PREFS, pools.EN_DAYS, pools.CN_DAYS,
        pools.MONTHS, pools.EN_STATUS, pools.CN_STATUS, pools.ROLES, pools.MODULES,
        pools.FUNCTIONS, pools.REGIONS, pools.EN_SENTENCES, pools.CN_SENTENCES,
        pools.EN_DECISIONS, pools.CN_DECISIONS, pools.EN_TASKS, pools.CN_TASKS,
        pools.BASH_LINES, pools.PYTHON_SNIPPETS, pools.JSON_SNIPPETS, pools.EN_QUERIES,
        pools.CN_QUERIES, pools.MIXED_QUERIES, pools.EN_TOPIC_HEADINGS, pools.CN_TOPIC_HEADINGS,
        pools.FENCES,
        (pools.TOPIC_PREAMBLE, pools.EN_META, pools.CN_META, pools.EN_DECISION, pools.CN_DECISION),
        tuple(pools.PREAMBLES.values()),
        tuple(h for pair in pools.ROOT_HEADINGS.values() for pool in pair for h in pool),
        tuple(text for pair in pools.EN_NEEDLES + pools.CN_NEEDLES for text in pair),
    )  # fmt: skip
    return "\n".join(text for pool in every for text in pool).lower()


_EMITTED_TEXT: Final = _emitted_text()

# ---------------------------------------------------------------- fillers

_Filler = Callable[[random.Random], str]
_DATE_LOW: Final = date(2024, 1, 1).toordinal()
_DATE_HIGH: Final = NEWEST_DAY.toordinal()


def _date(rng: random.Random) -> str:
    return date.fromordinal(rng.randint(_DATE_LOW, _DATE_HIGH)).isoformat()


def _host(rng: random.Random) -> str:
    return f"{rng.choice(pools.PROJECTS)}-{rng.choice(pools.ROLES)}-{rng.randint(1, 40):02d}"


def _time(rng: random.Random) -> str:
    return f"{rng.randint(7, 22):02d}:{rng.choice(('00', '15', '30', '45'))}"


def _version(rng: random.Random) -> str:
    return f"v{rng.randint(0, 4)}.{rng.randint(0, 24)}.{rng.randint(0, 40)}"


def _pick(pool: Sequence[str]) -> _Filler:
    return lambda rng: rng.choice(pool)


def _number(low: int, high: int) -> _Filler:
    return lambda rng: str(rng.randint(low, high))


_FILLERS: Final[dict[str, _Filler]] = {
    "p": _pick(pools.EN_PEOPLE),
    "p2": _pick(pools.EN_PEOPLE),
    "cp": _pick(pools.CN_PEOPLE),
    "cp2": _pick(pools.CN_PEOPLE),
    "tool": _pick(pools.TOOLS),
    "tool2": _pick(pools.TOOLS),
    "proj": _pick(pools.PROJECTS),
    "t": _pick(pools.EN_TOPICS),
    "ct": _pick(pools.CN_TOPICS),
    "ct2": _pick(pools.CN_TOPICS),
    "pref": _pick(pools.EN_PREFS),
    "pref2": _pick(pools.EN_PREFS),
    "cpref": _pick(pools.CN_PREFS),
    "cpref2": _pick(pools.CN_PREFS),
    "day": _pick(pools.EN_DAYS),
    "cday": _pick(pools.CN_DAYS),
    "monthname": _pick(pools.MONTHS),
    "status": _pick(pools.EN_STATUS),
    "cstatus": _pick(pools.CN_STATUS),
    "mod": _pick(pools.MODULES),
    "fn": _pick(pools.FUNCTIONS),
    "region": _pick(pools.REGIONS),
    "n": _number(2, 40),
    "n2": _number(1, 12),
    "small": _number(1, 9),
    "ms": _number(40, 900),
    "ms2": _number(8, 300),
    "pct": _number(3, 99),
    "k": _number(2, 80),
    "month": _number(1, 12),
    "dom": _number(1, 28),
    "ticket": _number(100, 9999),
    "num": _number(1000, 9999),
    "date": _date,
    "host": _host,
    "host2": _host,
    "time": _time,
    "ver": _version,
}


class _Slots(dict[str, str]):
    """Placeholder values drawn lazily, so a template costs only the draws it uses."""

    __slots__ = ("_rng",)

    def __init__(self, rng: random.Random, **fixed: str) -> None:
        super().__init__(fixed)
        self._rng = rng

    def __missing__(self, key: str) -> str:
        make = _FILLERS[key]
        value = make(self._rng)
        # "{tool} ... {tool2}" should name two tools; a few redraws make that
        # almost certain without looping forever on tiny pools.
        base = self.get(key[:-1]) if key.endswith("2") else None
        for _ in range(3):
            if value != base:
                break
            value = make(self._rng)
        self[key] = value
        return value


def _fill(rng: random.Random, template: str) -> str:
    return template.format_map(_Slots(rng))


# ---------------------------------------------------------------- blocks


def _sentence(rng: random.Random, chinese: bool) -> str:
    return _fill(rng, rng.choice(pools.CN_SENTENCES if chinese else pools.EN_SENTENCES))


def _paragraph(rng: random.Random, chinese: bool) -> str:
    glue = "" if chinese else " "
    return glue.join(_sentence(rng, chinese) for _ in range(rng.randint(1, 3)))


def _bullets(rng: random.Random, chinese: bool) -> str:
    # Distinct templates: a list repeating one canned line reads as generated.
    templates = rng.sample(pools.CN_SENTENCES if chinese else pools.EN_SENTENCES, rng.randint(2, 5))
    return "\n".join("- " + _fill(rng, template) for template in templates)


def _checklist(rng: random.Random, chinese: bool) -> str:
    templates = rng.sample(pools.CN_TASKS if chinese else pools.EN_TASKS, rng.randint(2, 4))
    return "\n".join(
        rng.choice(("- [ ] ", "- [x] ")) + _fill(rng, template) for template in templates
    )


def _decision(rng: random.Random, chinese: bool) -> str:
    if chinese:
        return pools.CN_DECISION + _fill(rng, rng.choice(pools.CN_DECISIONS))
    return pools.EN_DECISION + _fill(rng, rng.choice(pools.EN_DECISIONS))


def _meta(rng: random.Random, chinese: bool) -> str:
    return _fill(rng, pools.CN_META if chinese else pools.EN_META)


def _code(rng: random.Random, chinese: bool) -> str:
    roll = rng.random()
    if roll < 0.45:
        lines = [_fill(rng, rng.choice(pools.BASH_LINES)) for _ in range(rng.randint(2, 4))]
        return "```bash\n" + "\n".join(lines) + "\n```"
    if roll < 0.75:
        return "```python\n" + _fill(rng, rng.choice(pools.PYTHON_SNIPPETS)) + "\n```"
    return "```json\n" + _fill(rng, rng.choice(pools.JSON_SNIPPETS)) + "\n```"


# Cumulative weights: Chinese notes carry fewer code blocks, as they do in practice.
_Block = Callable[[random.Random, bool], str]
_EN_BLOCKS: Final[tuple[tuple[float, _Block], ...]] = (
    (0.30, _paragraph), (0.60, _bullets), (0.68, _checklist), (0.78, _decision),
    (0.85, _meta), (1.0, _code),
)  # fmt: skip
_CN_BLOCKS: Final[tuple[tuple[float, _Block], ...]] = (
    (0.33, _paragraph), (0.66, _bullets), (0.75, _checklist), (0.86, _decision),
    (0.93, _meta), (1.0, _code),
)  # fmt: skip


def _block(rng: random.Random, chinese: bool) -> str:
    roll = rng.random()
    for bound, make in _CN_BLOCKS if chinese else _EN_BLOCKS:
        if roll < bound:
            return make(rng, chinese)
    return _paragraph(rng, chinese)


def _section(rng: random.Random, heading: str, chinese: bool, needle: str | None) -> str:
    """One ``##`` section sized for one chunk, ending in a blank line.

    The needle goes in as its own paragraph so its line is exactly the text
    the benchmark looks for.
    """
    head = f"## {heading}\n\n"
    total = estimate_tokens(head)
    blocks: list[str] = []
    if needle is not None:
        total += estimate_tokens(needle + "\n\n")
    target = rng.randint(_TARGET_LOW, _TARGET_HIGH)
    while total < target:
        block = _block(rng, chinese)
        cost = estimate_tokens(block + "\n\n")
        if total + cost > _HARD_MAX:
            block = _sentence(rng, chinese)
            cost = estimate_tokens(block + "\n\n")
            if total + cost > _HARD_MAX:
                break
        blocks.append(block)
        total += cost
    if needle is not None:
        blocks.insert(rng.randint(0, len(blocks)), needle)
    return head + "\n\n".join(blocks) + "\n\n"


# ---------------------------------------------------------------- files


@dataclass(frozen=True, slots=True)
class Needle:
    """A fact planted once, for recall checks: searching `query` must find `path`."""

    query: str
    path: str
    text: str


@dataclass(frozen=True, slots=True)
class CorpusStats:
    """What was written; `sections` is the expected chunk count."""

    files: int
    sections: int
    bytes: int
    needles: tuple[Needle, ...]


@dataclass(frozen=True, slots=True)
class _FilePlan:
    path: str
    kind: str  # "MEMORY", "USER", "PROJECT", "daily" or "topic"
    label: str  # the daily date or topic project name
    sections: int


def _plan_files(rng: random.Random, sections: int) -> list[_FilePlan]:
    """Split `sections` over files; daily files get 3-12 each and take the bulk."""
    budget = sections
    per_root = min(_ROOT_MAX_SECTIONS, budget // 30)
    root_counts = [per_root] * 3
    budget -= 3 * per_root
    topic_names = rng.sample(pools.PROJECTS, min(_TOPIC_MAX_FILES, budget // 150))
    topic_counts = [rng.randint(6, 15) for _ in topic_names]
    budget -= sum(topic_counts)
    daily_counts: list[int] = []
    while budget >= _DAILY_MIN_SECTIONS:
        if budget <= _DAILY_MAX_SECTIONS:
            count = budget
        else:
            # Never leave 1-2 sections over: a daily file needs at least 3.
            count = rng.randint(
                _DAILY_MIN_SECTIONS, min(_DAILY_MAX_SECTIONS, budget - _DAILY_MIN_SECTIONS)
            )
        daily_counts.append(count)
        budget -= count
    root_counts[0] += budget  # the 0-2 left over in a tiny corpus
    plans = [
        _FilePlan(name, name.removesuffix(".md"), "", count)
        for name, count in zip(("MEMORY.md", "USER.md", "PROJECT.md"), root_counts, strict=True)
    ]
    plans += [
        _FilePlan(f"memory/projects/{name}.md", "topic", name, count)
        for name, count in zip(topic_names, topic_counts, strict=True)
    ]
    for back, count in enumerate(daily_counts):
        day = (NEWEST_DAY - timedelta(days=back)).isoformat()
        plans.append(_FilePlan(f"memory/{day}.md", "daily", day, count))
    return plans


def _preamble(plan: _FilePlan) -> str:
    if plan.kind == "daily":
        return f"# {plan.label}\n\n"
    if plan.kind == "topic":
        return pools.TOPIC_PREAMBLE.format(name=plan.label)
    return pools.PREAMBLES[plan.kind]


def _topic_heading(rng: random.Random, chinese: bool) -> str:
    return _fill(rng, rng.choice(pools.CN_TOPIC_HEADINGS if chinese else pools.EN_TOPIC_HEADINGS))


def _headings(rng: random.Random, plan: _FilePlan, languages: Sequence[bool]) -> list[str]:
    if plan.kind == "daily":
        minutes = sorted(rng.sample(range(7 * 60, 24 * 60), len(languages)))
        return [
            f"{m // 60:02d}:{m % 60:02d} {_topic_heading(rng, chinese)}"
            for m, chinese in zip(minutes, languages, strict=True)
        ]
    if plan.kind == "topic":
        dates = sorted(_date(rng) for _ in languages)
        return [
            f"{day} {_topic_heading(rng, chinese)}"
            for day, chinese in zip(dates, languages, strict=True)
        ]
    english, chinese_pool = pools.ROOT_HEADINGS[plan.kind]
    return [_fill(rng, rng.choice(chinese_pool if c else english)) for c in languages]


def _rare_names(rng: random.Random, count: int, forbidden: str) -> list[str]:
    """Invented capitalised words found in no pool, so each names one file."""
    names: list[str] = []
    seen: set[str] = set()
    attempts = 0
    while len(names) < count:
        attempts += 1
        if attempts > 50 * count + 1000:
            raise ValueError(f"cannot invent {count} distinct rare names")
        word = (
            rng.choice(pools.NAME_ONSETS)
            + rng.choice(pools.NAME_VOWELS)
            + rng.choice(pools.NAME_MIDDLES)
            + rng.choice(pools.NAME_VOWELS)
            + rng.choice(pools.NAME_ENDINGS)
        )
        if word in seen or word in forbidden:
            continue
        seen.add(word)
        names.append(word.capitalize())
    return names


def _rare_han_pairs(rng: random.Random, count: int, forbidden: str) -> list[str]:
    """Two-character names from Han characters no pool uses.

    Disjoint pairs come first so a small needle set shares not even a unigram;
    beyond that, ordered pairs stay distinct, which keeps each bigram unique.
    """
    chars = [ch for ch in dict.fromkeys(pools.RARE_HAN_CANDIDATES) if ch not in forbidden]
    rng.shuffle(chars)
    pairs = [chars[i] + chars[i + 1] for i in range(0, len(chars) - 1, 2)]
    if count > len(pairs):
        used = set(pairs)
        extra = [a + b for a in chars for b in chars if a != b and a + b not in used]
        rng.shuffle(extra)
        pairs += extra
    if count > len(pairs):
        raise ValueError(f"at most {len(pairs)} Chinese needles are possible")
    return pairs[:count]


def _make_needles(rng: random.Random, count: int) -> list[tuple[str, str]]:
    """(line, query) pairs; every third one is Chinese."""
    forbidden = _EMITTED_TEXT
    chinese_count = round(count / 3)
    is_chinese = [i % 3 == 2 for i in range(count)]
    # round() may give one more than every-third; flip the last English slot if so.
    shortfall = chinese_count - sum(is_chinese)
    for i in range(count - 1, -1, -1):
        if shortfall <= 0:
            break
        if not is_chinese[i]:
            is_chinese[i] = True
            shortfall -= 1
    english = iter(_rare_names(rng, count - chinese_count, forbidden))
    chinese = iter(_rare_han_pairs(rng, chinese_count, forbidden))
    made: list[tuple[str, str]] = []
    for cn in is_chinese:
        name = next(chinese) if cn else next(english)
        line, query = rng.choice(pools.CN_NEEDLES if cn else pools.EN_NEEDLES)
        slots = _Slots(rng, N=name)
        made.append((line.format_map(slots), query.format_map(slots)))
    return made


def _prepare_root(root: Path, with_topics: bool) -> None:
    if root.exists() or root.is_symlink():
        if not root.is_dir() or any(root.iterdir()):
            raise FileExistsError(f"benchmark workspace must be empty or absent: {root}")
    else:
        root.mkdir(parents=True)
    (root / "memory").mkdir()
    if with_topics:
        (root / "memory" / "projects").mkdir()


def generate_workspace(
    root: Path, sections: int, *, seed: int = 0, needles: int = 20
) -> CorpusStats:
    """Write a synthetic workspace of exactly `sections` chunk-sized sections into `root`.

    Refuses a non-empty `root` so a typo can never mix synthetic notes into
    someone's real memory. A section holds at most one needle, so `needles`
    is capped at `sections` (the stats list what was planted).
    """
    if sections < 0:
        raise ValueError("sections must be >= 0")
    if needles < 0:
        raise ValueError("needles must be >= 0")
    needles = min(needles, sections)
    rng = random.Random(seed)
    plans = _plan_files(rng, sections)
    planted = _make_needles(rng, needles)
    needle_at = {spot: i for i, spot in enumerate(rng.sample(range(sections), needles))}
    _prepare_root(root, any(plan.kind == "topic" for plan in plans))

    found: list[Needle | None] = [None] * needles
    index = 0
    total_bytes = 0
    for plan in plans:
        languages = [rng.random() < CHINESE_SECTION_SHARE for _ in range(plan.sections)]
        parts = [_preamble(plan)]
        for heading, chinese in zip(_headings(rng, plan, languages), languages, strict=True):
            slot = needle_at.get(index)
            needle_line = None
            if slot is not None:
                needle_line, query = planted[slot]
                found[slot] = Needle(query=query, path=plan.path, text=needle_line)
            parts.append(_section(rng, heading, chinese, needle_line))
            index += 1
        data = "".join(parts).rstrip("\n").encode("utf-8") + b"\n"
        (root / plan.path).write_bytes(data)
        total_bytes += len(data)
    return CorpusStats(
        files=len(plans),
        sections=index,
        bytes=total_bytes,
        needles=tuple(n for n in found if n is not None),
    )


def sample_queries(count: int, *, seed: int = 0) -> list[str]:
    """Queries a user might type, from the corpus vocabulary (half English, 30% Chinese)."""
    rng = random.Random(f"openmemory-bench-queries:{seed}")
    queries: list[str] = []
    for _ in range(count):
        roll = rng.random()
        pool = (
            pools.EN_QUERIES
            if roll < 0.5
            else pools.CN_QUERIES
            if roll < 0.8
            else pools.MIXED_QUERIES
        )
        queries.append(_fill(rng, rng.choice(pool)))
    return queries


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m bench.corpus ROOT --sections N [--seed S] [--needles K]``."""
    parser = argparse.ArgumentParser(
        prog="python -m bench.corpus", description="Write a synthetic memory workspace."
    )
    parser.add_argument("root", type=Path)
    parser.add_argument("--sections", type=int, required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--needles", type=int, default=20)
    args = parser.parse_args(argv)
    try:
        stats = generate_workspace(args.root, args.sections, seed=args.seed, needles=args.needles)
    except (FileExistsError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    json.dump(asdict(stats), sys.stdout, ensure_ascii=False, indent=2)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
