"""Scoring LoCoMo replies: which hits hold evidence, recall at k and within budgets.

A hit *contains* a turn if ``- [<dia_id>]`` starts one of the lines its
snippet shows. Every figure follows from `rank_evidence`: the rank of the
first hit with any evidence id, and the smallest k whose top k hold all of
it; `budget_ranks` does the same over the hits that fit a context budget.
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final, TypeVar

from omem_client import SearchHit

LIMIT: Final = 10  # hits asked for per question
KS: Final = (1, 5, 10)
# Context budgets, in characters of snippet text: hits are taken in rank
# order while their snippets fit (the first that would overflow ends the
# list), which is what an agent pasting results into its prompt pays.
BUDGETS: Final = (3000, 6000)
# Token budgets asked of the daemon (`search(max_tokens=...)`): it packs the
# answer itself (the best hits whole, later ones as their best line). About
# 3,000 and 6,000 characters of LoCoMo's English, at 3.9 characters a token.
TOKEN_BUDGETS: Final = (750, 1500)  # `Scores` has a t<N>_any/_all pair for each
# A turn line as `render_day` writes it; anchored so text quoting "[D1:2]"
# inside a turn cannot count.
_TURN_LINE: Final = re.compile(r"^- \[([^\]\s]+)\] ", re.MULTILINE)


def snippet_ids(snippet: str) -> frozenset[str]:
    """The dia_ids of the turn lines a snippet shows."""
    return frozenset(_TURN_LINE.findall(snippet))


def range_ids(hit: SearchHit, turn_lines: Mapping[str, Mapping[int, str]]) -> frozenset[str]:
    """The dia_ids written on lines start..end of the hit's file."""
    lines = turn_lines.get(hit.path, {})
    return frozenset(
        dia for n in range(hit.start_line, hit.end_line + 1) if (dia := lines.get(n)) is not None
    )


Id = TypeVar("Id", bound=Hashable)  # a dia_id here, a (path, line) in bench.multilingual


def rank_evidence(
    hits: Sequence[frozenset[Id]], evidence: Iterable[Id]
) -> tuple[int | None, int | None]:
    """(rank of the first hit with any evidence id, smallest k whose top k hold all of it).

    Both are 1-based, None when the hits never get there. Every recall figure
    follows from these two: any@k is ``first <= k``, all@k is ``all <= k``.
    """
    wanted = frozenset(evidence)
    first: int | None = None
    seen: set[Id] = set()
    for rank, ids in enumerate(hits, start=1):
        found = ids & wanted
        if found and first is None:
            first = rank
        seen |= found
        if seen >= wanted:
            return first, rank
    return first, None


@dataclass(frozen=True, slots=True)
class Scores:
    """Recall and MRR over `n` questions; recall fractions are in [0, 1]."""

    n: int
    r1_any: float
    r1_all: float
    r5_any: float
    r5_all: float
    r10_any: float
    r10_all: float
    mrr: float
    b3000_any: float = 0.0
    b3000_all: float = 0.0
    b6000_any: float = 0.0
    b6000_all: float = 0.0
    t750_any: float = 0.0
    t750_all: float = 0.0
    t1500_any: float = 0.0
    t1500_all: float = 0.0

    @classmethod
    def of(
        cls,
        ranks: Sequence[tuple[int | None, int | None]],
        budgets: Sequence[Sequence[tuple[int | None, int | None]]] = (),
        asked: Sequence[Sequence[tuple[int | None, int | None]]] = (),
    ) -> Scores:
        """*ranks* per question; *budgets* per question, one (first, all) per
        `BUDGETS`; *asked* the same per `TOKEN_BUDGETS` (the daemon's answers)."""
        n = len(ranks)

        def frac(hits: int) -> float:
            return round(hits / n, 4) if n else 0.0

        def within(rank: int | None, k: int) -> bool:
            return rank is not None and rank <= k

        values: dict[str, float] = {}
        for k in KS:
            values[f"r{k}_any"] = frac(sum(within(first, k) for first, _ in ranks))
            values[f"r{k}_all"] = frac(sum(within(all_, k) for _, all_ in ranks))
        for index, budget in enumerate(BUDGETS):
            within_budget = [b[index] for b in budgets]
            if within_budget:
                values[f"b{budget}_any"] = frac(sum(f is not None for f, _ in within_budget))
                values[f"b{budget}_all"] = frac(sum(a is not None for _, a in within_budget))
        for index, tokens in enumerate(TOKEN_BUDGETS):
            answers = [a[index] for a in asked]
            if answers:
                values[f"t{tokens}_any"] = frac(sum(f is not None for f, _ in answers))
                values[f"t{tokens}_all"] = frac(sum(a is not None for _, a in answers))
        mrr = sum(1.0 / first for first, _ in ranks if first is not None)
        return cls(n=n, mrr=round(mrr / n, 4) if n else 0.0, **values)


def budget_ranks(
    hits: Sequence[frozenset[Id]], sizes: Sequence[int], evidence: Iterable[Id]
) -> tuple[tuple[int | None, int | None], ...]:
    """`rank_evidence` over the hits that fit each of `BUDGETS` (by snippet size)."""
    out = []
    for budget in BUDGETS:
        used, kept = 0, []
        for ids, size in zip(hits, sizes, strict=True):
            if used + size > budget:
                break
            used += size
            kept.append(ids)
        out.append(rank_evidence(kept, evidence))
    return tuple(out)


@dataclass(frozen=True, slots=True)
class QueryOutcome:
    """One question under one method: where the evidence ranked, and the reply's cost."""

    conversation: int
    qa_index: int
    category: int
    first_rank: int | None
    all_rank: int | None
    took_ms: float
    hits: int
    ids: int
    chars: int
    lexical: bool
    mismatches: int
    # what the text output prints beside the hits: " · " and each section
    section_chars: int = 0
    budgets: tuple[tuple[int | None, int | None], ...] = ()
    # per `TOKEN_BUDGETS`: the daemon's packed answer's (first, all) ranks,
    # its characters (snippets, citations, sections), its hits and its took_ms
    asked: tuple[tuple[int | None, int | None], ...] = ()
    asked_chars: tuple[int, ...] = ()
    asked_hits: tuple[int, ...] = ()
    asked_took_ms: tuple[float, ...] = ()
    # the search as an agent sends it, without min_score: did it answer, and
    # did the answer show an evidence turn (None: not asked)
    answered: bool | None = None
    answered_with_evidence: bool | None = None
    # the reply's hits carry a reranker's scores (a reranker ran for it)
    reranked: bool = False


@dataclass(frozen=True, slots=True)
class Preparation:
    """One daemon start for one conversation: index and vector readiness."""

    conversation: int
    start_s: float
    sync_ms: float
    files_indexed: int
    chunks: int
    vectors_s: float | None
    fresh_vectors: int | None


@dataclass(frozen=True, slots=True)
class Latency:
    n: int
    p50: float
    p95: float
    max: float


@dataclass
class RunResult:
    """One method on one layout over every selected conversation."""

    method: str
    layout: str
    description: str
    config_toml: str
    overall: Scores
    by_category: dict[str, Scores]
    latency_ms: Latency
    hits_per_query: float
    ids_per_hit: float
    chars_per_hit: float
    lexical_replies: int
    snippet_mismatches: int
    chunks: int
    sync_s: float
    vectors_s: float | None
    fresh_vectors: int | None
    preparations: list[Preparation] = field(default_factory=list)
    # per `TOKEN_BUDGETS`: mean characters (snippets, citations, sections), hits and
    # median search time of the daemon's packed answers
    asked_chars: list[float] = field(default_factory=list)
    asked_hits: list[float] = field(default_factory=list)
    asked_p50_ms: list[float] = field(default_factory=list)
    # shares of the questions whose search at the default min_score answered,
    # and whose answer showed an evidence turn (None: not asked)
    default_answered: float | None = None
    default_with_evidence: float | None = None
    # the share of the questions whose search a reranker re-ordered
    reranked: float = 0.0
    # characters a hit of the text output prints beside its location (its section)
    section_chars_per_hit: float = 0.0
    # (conversation, qa_index, category, first_rank, all_rank, took_ms) per question.
    queries: list[tuple[int, int, int, int | None, int | None, float]] = field(default_factory=list)
