"""LoCoMo retrieval through the real daemon: how often search finds the evidence turns.

Data: LoCoMo (Maharana et al., ACL 2024), ``locomo10.json``: 10 long
two-person conversations with question/answer items whose ``evidence`` lists
the dialogue turns (``D<session>:<turn>``) that answer them. The file is
CC BY-NC 4.0 and is read where it lies (``--data``, default
``/work/shared/data/locomo10.json`` next to the repository); it is never
copied. Questions of category 5 (adversarial: no answer exists) are skipped.
Evidence strings that pack several ids (``"D8:6; D9:17"``) are split, ids
that name no turn of the conversation are dropped, and a question left with
no evidence is skipped; the report counts all three.

Workspace: each conversation becomes its own workspace, written as a user of
openmemory would keep a chat log: one Markdown file per session date titled
``# YYYY-MM-DD``, a ``## Session N — <date_time>`` heading per session, and
one line per turn, ``- [D1:3] Caroline: text`` (plus
`` [shares photo: <caption>]`` when the turn shared an image). Two layouts of
the same text: ``dated`` names the files ``memory/YYYY-MM-DD.md`` (daily
notes, which temporal decay ages by their name) and ``undated`` names them
``memory/locomo-YYYY-MM-DD.md`` (evergreen notes). The root files
``MEMORY.md``, ``USER.md`` and ``PROJECT.md`` are written empty so the
daemon adds no template text: the corpus is exactly the conversation.

Methods: each is a daemon config (`METHODS`; every ranking key is written
explicitly, so a change of the built-in defaults cannot relabel a method).
For every conversation one `BenchDaemon` (one state dir) runs each selected
(layout, method) in turn, restarting the real ``openmemoryd`` between them
with the new config or workspace. The index and its embedding cache carry
over, so each conversation's chunks are embedded once and the other layout
re-uses the cached vectors. Before a method with vectors is measured, every
chunk has its vector (``status.embedding``), so no answer comes from the
keyword fallback; replies that did anyway are counted (``lexical_replies``).

Queries and scoring: every question goes through `omem_client.Client.search`
with ``limit=10, min_score=0.0`` (an explicit 0, so ranking is evaluated, not
the threshold). A hit *contains* a turn if ``- [<dia_id>]`` starts one of the
lines its snippet shows (the snippet is exactly lines start..end of the
file; the ids are cross-checked against the lines written there and any
disagreement is counted as ``snippet_mismatches``). For k in 1, 5, 10:

* R@k any: at least one evidence id is in the top k hits;
* R@k all: every evidence id is in the union of the top k hits;
* MRR: mean of 1/rank of the first hit containing any evidence id (0 when
  none of the 10 does);

overall and per category (1 multi-hop, 2 temporal, 3 open-domain, 4
single-hop). Latency is the ``took_ms`` each reply carries (request into the
engine to result built, so query embedding included), p50 and p95 over every
measured question; one untimed warm-up search follows each start. Index
time is the ``took_ms`` of each start's sync, vector time the wall time from
spawning the daemon until every chunk had its vector; "fresh" vectors are
the growth of the embedding cache, so cached re-use is told apart from
embedding work.

Run from the repository root::

    python -m bench.locomo [--methods bm25,vector,...] [--layouts dated,undated]
        [--conversations 0,1,...] [--data PATH] [--chunk-tokens N] [--embed-nice N]
        [--json PATH]

Progress goes to stderr; stdout is Markdown (command, machine, data sha256,
the overall table, the per-category R@5 table and the indexing table).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import shlex
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any, Final

from bench.daemon import BenchDaemon, BenchDaemonError
from bench.report import load_average
from bench.search_latency import machine_info, percentile
from omem_client import Client, OmemError, SearchHit
from openmemoryd.workspace.paths import ROOT_FILES

__all__ = [
    "CATEGORIES",
    "DEFAULT_DATA",
    "LAYOUTS",
    "METHODS",
    "Conversation",
    "DataError",
    "Method",
    "Question",
    "RunResult",
    "Scores",
    "file_name",
    "load_locomo",
    "main",
    "rank_evidence",
    "render_tables",
    "snippet_ids",
    "split_evidence",
    "to_json",
    "write_workspace",
]

DEFAULT_DATA: Final = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo10.json"
RESULTS_DIR: Final = Path(__file__).resolve().parent / "results"

CATEGORIES: Final[Mapping[int, str]] = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
}
ADVERSARIAL: Final = 5
LIMIT: Final = 10
KS: Final = (1, 5, 10)
LAYOUTS: Final = ("dated", "undated")
SESSION_TIME_FORMATS: Final = ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %B %Y")

_SESSION_KEY: Final = re.compile(r"^session_(\d+)$")
_EVIDENCE_SPLIT: Final = re.compile(r"[\s;,]+")
# A turn line as `render_day` writes it; anchored so text quoting "[D1:2]"
# inside a turn cannot count.
_TURN_LINE: Final = re.compile(r"^- \[([^\]\s]+)\] ", re.MULTILINE)


class DataError(ValueError):
    """The data file is missing or not shaped like locomo10.json."""


# ---------------------------------------------------------------- methods


def _config(
    provider: str,
    *,
    vector_weight: float = 0.5,
    text_weight: float = 0.5,
    fusion: str = "weighted",
    mmr: bool = False,
    decay: bool = False,
) -> str:
    """A complete ranking config, so a method means the same whatever the defaults become."""
    return (
        f'[embedding]\nprovider = "{provider}"\n\n'
        f"[search]\nvector_weight = {vector_weight}\ntext_weight = {text_weight}\n"
        f'fusion = "{fusion}"\n\n'
        f"[search.mmr]\nenabled = {str(mmr).lower()}\nlambda = 0.7\n\n"
        f"[search.decay]\nenabled = {str(decay).lower()}\nhalf_life_days = 30.0\nfloor = 0.5\n"
    )


@dataclass(frozen=True, slots=True)
class Method:
    """One search configuration under test.

    `layouts` are those it may run on; `default_layouts` those a run without
    ``--layouts`` uses (both layouts only where the comparison says
    something: they hold the same text, so they can differ only by decay).
    """

    name: str
    description: str
    config_toml: str
    vectors: bool
    layouts: tuple[str, ...] = LAYOUTS
    default_layouts: tuple[str, ...] = ("dated",)


METHODS: Final[Mapping[str, Method]] = {
    m.name: m
    for m in (
        Method(
            "bm25",
            "keyword only (embedding provider none)",
            _config("none"),
            vectors=False,
            default_layouts=LAYOUTS,
        ),
        Method(
            "vector",
            "local e5 vectors only (weights 1.0/0.0)",
            _config("local", vector_weight=1.0, text_weight=0.0),
            vectors=True,
        ),
        Method(
            "hybrid-0.3",
            "weighted fusion 0.3 vector / 0.7 keyword",
            _config("local", vector_weight=0.3, text_weight=0.7),
            vectors=True,
        ),
        Method(
            "hybrid-0.5",
            "weighted fusion 0.5 vector / 0.5 keyword",
            _config("local"),
            vectors=True,
            default_layouts=LAYOUTS,
        ),
        Method(
            "hybrid-0.7",
            "weighted fusion 0.7 vector / 0.3 keyword",
            _config("local", vector_weight=0.7, text_weight=0.3),
            vectors=True,
        ),
        Method(
            "rrf",
            "reciprocal rank fusion (k 60)",
            _config("local", fusion="rrf"),
            vectors=True,
        ),
        Method(
            "hybrid-0.5-mmr",
            "0.5/0.5 then MMR (lambda 0.7)",
            _config("local", mmr=True),
            vectors=True,
        ),
        Method(
            "hybrid-0.5-decay",
            "0.5/0.5 with temporal decay (half-life 30 d, floor 0.5)",
            _config("local", decay=True),
            vectors=True,
            layouts=("dated",),
        ),
    )
}


# ---------------------------------------------------------------- data


@dataclass(frozen=True, slots=True)
class Turn:
    dia_id: str
    speaker: str
    text: str
    caption: str | None


@dataclass(frozen=True, slots=True)
class Session:
    number: int
    date_time: str
    day: date
    turns: tuple[Turn, ...]


@dataclass(frozen=True, slots=True)
class Question:
    """A usable QA item; `qa_index` is its position in the sample's ``qa`` list."""

    qa_index: int
    question: str
    category: int
    evidence: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Conversation:
    """One sample, with what loading had to skip or repair counted."""

    index: int
    sample_id: str
    speaker_a: str
    speaker_b: str
    sessions: tuple[Session, ...]
    questions: tuple[Question, ...]
    skipped_adversarial: int
    skipped_no_evidence: int
    questions_with_dropped_ids: int
    dropped_ids: tuple[str, ...]

    @property
    def turns(self) -> int:
        return sum(len(s.turns) for s in self.sessions)


def split_evidence(raw: Iterable[object]) -> list[str]:
    """Evidence ids, one per item, with packed strings ("D8:6; D9:17") split apart."""
    ids: list[str] = []
    for item in raw:
        for part in _EVIDENCE_SPLIT.split(str(item)):
            if part and part not in ids:
                ids.append(part)
    return ids


def _one_line(text: str) -> str:
    """Whitespace runs (newlines included) to one space: one turn must stay one line."""
    return " ".join(text.split())


def _session_day(value: str, where: str) -> date:
    for fmt in SESSION_TIME_FORMATS:
        try:
            return datetime.strptime(value.strip(), fmt).date()
        except ValueError:
            continue
    raise DataError(f"{where}: unrecognised session date {value!r}")


def _parse_conversation(index: int, sample: Mapping[str, Any]) -> Conversation:
    where = f"sample {index}"
    conv = sample.get("conversation")
    qa = sample.get("qa")
    if not isinstance(conv, Mapping) or not isinstance(qa, list):
        raise DataError(f"{where}: expected 'conversation' and 'qa'")
    sessions: list[Session] = []
    for key, turns in conv.items():
        match = _SESSION_KEY.match(key)
        if match is None or not isinstance(turns, list) or not turns:
            continue
        number = int(match.group(1))
        date_time = str(conv.get(f"{key}_date_time", ""))
        parsed = tuple(
            Turn(
                dia_id=str(t["dia_id"]),
                speaker=_one_line(str(t["speaker"])),
                text=_one_line(str(t.get("text", ""))),
                caption=_one_line(str(t["blip_caption"])) if t.get("blip_caption") else None,
            )
            for t in turns
        )
        sessions.append(Session(number, date_time, _session_day(date_time, where), parsed))
    sessions.sort(key=lambda s: s.number)
    known = {t.dia_id for s in sessions for t in s.turns}

    questions: list[Question] = []
    adversarial = no_evidence = repaired = 0
    dropped: list[str] = []
    for qa_index, item in enumerate(qa):
        category = int(item.get("category", 0))
        if category == ADVERSARIAL:
            adversarial += 1
            continue
        if category not in CATEGORIES:
            raise DataError(f"{where}, qa {qa_index}: unknown category {category!r}")
        ids = split_evidence(item.get("evidence") or [])
        kept = tuple(i for i in ids if i in known)
        unknown = [i for i in ids if i not in known]
        if not kept:
            no_evidence += 1
            continue
        if unknown:
            repaired += 1
            dropped.extend(unknown)
        questions.append(Question(qa_index, str(item["question"]), category, kept))
    return Conversation(
        index=index,
        sample_id=str(sample.get("sample_id", index)),
        speaker_a=str(conv.get("speaker_a", "")),
        speaker_b=str(conv.get("speaker_b", "")),
        sessions=tuple(sessions),
        questions=tuple(questions),
        skipped_adversarial=adversarial,
        skipped_no_evidence=no_evidence,
        questions_with_dropped_ids=repaired,
        dropped_ids=tuple(dropped),
    )


def load_locomo(path: Path) -> list[Conversation]:
    """Every sample of a locomo10.json-shaped file, in file order."""
    try:
        data = json.loads(path.read_text("utf-8"))
    except FileNotFoundError:
        raise DataError(f"LoCoMo data not found at {path}") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DataError(f"cannot read LoCoMo data {path}: {exc}") from None
    if not isinstance(data, list):
        raise DataError(f"{path}: expected a JSON list of samples")
    try:
        return [_parse_conversation(i, sample) for i, sample in enumerate(data)]
    except (KeyError, TypeError, ValueError) as exc:
        if isinstance(exc, DataError):
            raise
        raise DataError(f"{path}: not shaped like locomo10.json ({exc!r})") from None


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as data:
        for block in iter(lambda: data.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


# ---------------------------------------------------------------- workspace


def file_name(day: date, layout: str) -> str:
    """The workspace key of a session day's file in *layout*."""
    if layout == "dated":
        return f"memory/{day.isoformat()}.md"
    if layout == "undated":
        return f"memory/locomo-{day.isoformat()}.md"
    raise ValueError(f"unknown layout {layout!r}")


def render_day(day: date, sessions: Sequence[Session]) -> tuple[str, dict[int, str]]:
    """One day's Markdown, and the 1-based line number of every turn's line."""
    lines = [f"# {day.isoformat()}"]
    where: dict[int, str] = {}
    for session in sessions:
        lines += ["", f"## Session {session.number} — {session.date_time}", ""]
        for turn in session.turns:
            line = f"- [{turn.dia_id}] {turn.speaker}: {turn.text}"
            if turn.caption:
                line += f" [shares photo: {turn.caption}]"
            lines.append(line)
            where[len(lines)] = turn.dia_id
    return "\n".join(lines) + "\n", where


@dataclass(frozen=True, slots=True)
class WrittenWorkspace:
    """What `write_workspace` wrote: file count, bytes, and every turn's line."""

    files: int
    bytes: int
    turn_lines: dict[str, dict[int, str]]


def write_workspace(conversation: Conversation, root: Path, layout: str) -> WrittenWorkspace:
    """Write *conversation* as a workspace at *root* (which must not hold memory files)."""
    by_day: dict[date, list[Session]] = defaultdict(list)
    for session in conversation.sessions:
        by_day[session.day].append(session)
    memory = root / "memory"
    memory.mkdir(parents=True, exist_ok=True)
    for name in ROOT_FILES:
        (root / name).write_text("", encoding="utf-8")
    turn_lines: dict[str, dict[int, str]] = {}
    size = 0
    for day in sorted(by_day):
        key = file_name(day, layout)
        text, where = render_day(day, by_day[day])
        data = text.encode("utf-8")
        (root / key).write_bytes(data)
        size += len(data)
        turn_lines[key] = where
    return WrittenWorkspace(len(turn_lines), size, turn_lines)


# ---------------------------------------------------------------- scoring


def snippet_ids(snippet: str) -> frozenset[str]:
    """The dia_ids of the turn lines a snippet shows."""
    return frozenset(_TURN_LINE.findall(snippet))


def range_ids(hit: SearchHit, turn_lines: Mapping[str, Mapping[int, str]]) -> frozenset[str]:
    """The dia_ids written on lines start..end of the hit's file."""
    lines = turn_lines.get(hit.path, {})
    return frozenset(
        dia for n in range(hit.start_line, hit.end_line + 1) if (dia := lines.get(n)) is not None
    )


def rank_evidence(
    hits: Sequence[frozenset[str]], evidence: Iterable[str]
) -> tuple[int | None, int | None]:
    """(rank of the first hit with any evidence id, smallest k whose top k hold all of it).

    Both are 1-based, None when the hits never get there. Every recall figure
    follows from these two: any@k is ``first <= k``, all@k is ``all <= k``.
    """
    wanted = frozenset(evidence)
    first: int | None = None
    seen: set[str] = set()
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

    @classmethod
    def of(cls, ranks: Sequence[tuple[int | None, int | None]]) -> Scores:
        n = len(ranks)

        def frac(hits: int) -> float:
            return round(hits / n, 4) if n else 0.0

        def within(rank: int | None, k: int) -> bool:
            return rank is not None and rank <= k

        values: dict[str, float] = {}
        for k in KS:
            values[f"r{k}_any"] = frac(sum(within(first, k) for first, _ in ranks))
            values[f"r{k}_all"] = frac(sum(within(all_, k) for _, all_ in ranks))
        mrr = sum(1.0 / first for first, _ in ranks if first is not None)
        return cls(n=n, mrr=round(mrr / n, 4) if n else 0.0, **values)


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
    # (conversation, qa_index, category, first_rank, all_rank, took_ms) per question.
    queries: list[tuple[int, int, int, int | None, int | None, float]] = field(default_factory=list)


def summarize(
    method: Method,
    layout: str,
    outcomes: Sequence[QueryOutcome],
    preparations: Sequence[Preparation],
) -> RunResult:
    """Aggregate one (method, layout) over conversations."""
    by_cat: dict[str, Scores] = {}
    for category, name in CATEGORIES.items():
        ranks = [(o.first_rank, o.all_rank) for o in outcomes if o.category == category]
        by_cat[name] = Scores.of(ranks)
    took = [o.took_ms for o in outcomes]
    hits = sum(o.hits for o in outcomes)
    vector_times = [p.vectors_s for p in preparations if p.vectors_s is not None]
    fresh = [p.fresh_vectors for p in preparations if p.fresh_vectors is not None]
    return RunResult(
        method=method.name,
        layout=layout,
        description=method.description,
        config_toml=method.config_toml,
        overall=Scores.of([(o.first_rank, o.all_rank) for o in outcomes]),
        by_category=by_cat,
        latency_ms=Latency(
            n=len(took),
            p50=round(percentile(took, 50), 2) if took else 0.0,
            p95=round(percentile(took, 95), 2) if took else 0.0,
            max=round(max(took), 2) if took else 0.0,
        ),
        hits_per_query=round(hits / len(outcomes), 2) if outcomes else 0.0,
        ids_per_hit=round(sum(o.ids for o in outcomes) / hits, 2) if hits else 0.0,
        chars_per_hit=round(sum(o.chars for o in outcomes) / hits, 1) if hits else 0.0,
        lexical_replies=sum(o.lexical for o in outcomes) if method.vectors else 0,
        snippet_mismatches=sum(o.mismatches for o in outcomes),
        chunks=sum(p.chunks for p in preparations),
        sync_s=round(sum(p.sync_ms for p in preparations) / 1000, 2),
        vectors_s=round(sum(vector_times), 1) if vector_times else None,
        fresh_vectors=sum(fresh) if fresh else None,
        preparations=list(preparations),
        queries=[
            (o.conversation, o.qa_index, o.category, o.first_rank, o.all_rank, o.took_ms)
            for o in outcomes
        ],
    )


# ---------------------------------------------------------------- running


def _progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _ask(
    client: Client,
    conversation: Conversation,
    question: Question,
    turn_lines: Mapping[str, Mapping[int, str]],
) -> QueryOutcome:
    reply = client.search(question.question, limit=LIMIT, min_score=0.0)
    per_hit: list[frozenset[str]] = []
    mismatches = 0
    for hit in reply.results:
        shown = snippet_ids(hit.snippet)
        mismatches += shown != range_ids(hit, turn_lines)
        per_hit.append(shown)
    first, all_ = rank_evidence(per_hit, question.evidence)
    return QueryOutcome(
        conversation=conversation.index,
        qa_index=question.qa_index,
        category=question.category,
        first_rank=first,
        all_rank=all_,
        took_ms=reply.took_ms,
        hits=len(reply.results),
        ids=sum(len(ids) for ids in per_hit),
        chars=sum(len(hit.snippet) for hit in reply.results),
        lexical=reply.mode != "hybrid" or reply.degraded,
        mismatches=mismatches,
    )


def _prepare(daemon: BenchDaemon, conversation: Conversation, method: Method) -> Preparation:
    """Start the daemon and wait until the index (and every vector) is complete."""
    spawned = time.perf_counter()
    start_s = daemon.start()
    status = daemon.wait_indexed()
    assert status.last_sync is not None  # wait_indexed returns only after a sync
    sync_ms = status.last_sync.took_ms
    vectors_s: float | None = None
    fresh: int | None = None
    if method.vectors:
        before = status.embedding.cache_entries if status.embedding is not None else 0
        status = daemon.wait_vectors()
        vectors_s = round(time.perf_counter() - spawned, 2)
        after = status.embedding.cache_entries if status.embedding is not None else 0
        fresh = max(0, after - before)
    return Preparation(
        conversation=conversation.index,
        start_s=round(start_s, 3),
        sync_ms=sync_ms,
        files_indexed=status.files_indexed,
        chunks=status.chunks,
        vectors_s=vectors_s,
        fresh_vectors=fresh,
    )


def run_conversation(
    conversation: Conversation, plan: Sequence[tuple[str, Sequence[Method]]]
) -> dict[tuple[str, str], tuple[list[QueryOutcome], Preparation]]:
    """Every (layout, method) of *plan* on one conversation, sharing one state dir.

    Within a layout, keyword-only methods run first and the vector ones
    after, so the first vector method pays for the embeddings and the rest
    find them done.
    """
    out: dict[tuple[str, str], tuple[list[QueryOutcome], Preparation]] = {}
    with BenchDaemon() as daemon:
        for layout, methods in plan:
            root = daemon.root / f"ws-{layout}"
            written = write_workspace(conversation, root, layout)
            daemon.use_workspace(root)
            for method in sorted(methods, key=lambda m: m.vectors):
                daemon.write_config(method.config_toml)
                started = time.perf_counter()
                prep = _prepare(daemon, conversation, method)
                outcomes: list[QueryOutcome] = []
                with daemon.client() as client:
                    client.search(f"{conversation.speaker_a} {conversation.speaker_b}")
                    for question in conversation.questions:
                        outcomes.append(_ask(client, conversation, question, written.turn_lines))
                code = daemon.stop()
                if code != 0:
                    raise BenchDaemonError(f"openmemoryd exited with {code}:\n{daemon.log()}")
                scores = Scores.of([(o.first_rank, o.all_rank) for o in outcomes])
                _progress(
                    f"[conv {conversation.index}] {layout:<7} {method.name:<16} "
                    f"{len(outcomes)} q, {prep.chunks} chunks, R@5 any {scores.r5_any:.3f}, "
                    f"MRR {scores.mrr:.3f}, "
                    + (f"vectors {prep.vectors_s:.1f} s " if prep.vectors_s is not None else "")
                    + f"({time.perf_counter() - started:.1f} s)"
                )
                out[(layout, method.name)] = (outcomes, prep)
    return out


def with_chunking(method: Method, tokens: int) -> Method:
    """*method* on an index chunked to *tokens* (overlap a fifth of that)."""
    index = f"\n[index]\nchunk_tokens = {tokens}\nchunk_overlap = {tokens // 5}\n"
    return replace(method, config_toml=method.config_toml + index)


def with_embed_nice(method: Method, nice: int) -> Method:
    """*method* with the local embedding worker at niceness *nice* (vector methods only)."""
    if not method.vectors:
        return method
    return replace(method, config_toml=method.config_toml + f"\n[embedding.local]\nnice = {nice}\n")


def build_plan(
    methods: Sequence[Method], layouts: Sequence[str] | None
) -> list[tuple[str, list[Method]]]:
    """(layout, methods) in run order: layouts in `LAYOUTS` order, methods as given.

    Without explicit *layouts* each method uses its default ones; with them,
    each method runs on those it supports (decay only makes sense dated).
    """
    plan: list[tuple[str, list[Method]]] = []
    for layout in LAYOUTS:
        chosen = [
            m
            for m in methods
            if layout in m.layouts
            and (layout in m.default_layouts if layouts is None else layout in layouts)
        ]
        if chosen:
            plan.append((layout, chosen))
    return plan


# ---------------------------------------------------------------- reporting


def _f(value: float) -> str:
    return f"{value:.3f}"


def render_tables(
    results: Sequence[RunResult],
    machine: Mapping[str, Any],
    command: str,
    data: Mapping[str, Any],
) -> str:
    """Markdown: context lines, the overall table, R@5 by category, and indexing."""
    load = " ".join(f"{x:.2f}" for x in machine["load_average"])
    counts = data["questions_by_category"]
    lines = [
        f"`{command}`",
        "",
        f"openmemory {machine['openmemory']}, Python {machine['python']}, "
        f"{machine['cpu_count']} CPUs ({machine['cpu_model'] or 'unknown CPU'}), "
        f"load {load} at start, {machine['date']}; wall time {data['wall_s']:.0f} s",
        "",
        f"Data: `{data['path']}` sha256 `{data['sha256']}`; conversations "
        f"{','.join(str(c) for c in data['conversations'])}; {data['questions']} questions "
        f"({', '.join(f'{name} {counts[name]}' for name in CATEGORIES.values())}); skipped "
        f"{data['skipped_adversarial']} adversarial and {data['skipped_no_evidence']} with no "
        f"known evidence id; {data['questions_with_dropped_ids']} questions lost unknown ids "
        f"({', '.join(repr(i) for i in data['dropped_ids']) or 'none'}).",
        "",
        "| method | layout | n | R@1 any | R@1 all | R@5 any | R@5 all | R@10 any | R@10 all "
        "| MRR | p50 ms | p95 ms | ids/hit | chars/hit |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        o = r.overall
        lines.append(
            f"| {r.method} | {r.layout} | {o.n} | {_f(o.r1_any)} | {_f(o.r1_all)} "
            f"| {_f(o.r5_any)} | {_f(o.r5_all)} | {_f(o.r10_any)} | {_f(o.r10_all)} "
            f"| {_f(o.mrr)} | {r.latency_ms.p50:.1f} | {r.latency_ms.p95:.1f} "
            f"| {r.ids_per_hit:.1f} | {r.chars_per_hit:.0f} |"
        )
    header = " | ".join(f"{name} (n={counts[name]})" for name in CATEGORIES.values())
    lines += [
        "",
        "R@5 any / all by category:",
        "",
        f"| method | layout | {header} | overall |",
        "|---|---|" + "---:|" * (len(CATEGORIES) + 1),
    ]
    for r in results:
        cells = [f"{_f(s.r5_any)} / {_f(s.r5_all)}" for s in r.by_category.values()]
        cells.append(f"{_f(r.overall.r5_any)} / {_f(r.overall.r5_all)}")
        lines.append(f"| {r.method} | {r.layout} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "Indexing, summed over conversations (sync: each start's sync, fresh files only on "
        "a layout's first run; vectors: spawn until every chunk had a vector; fresh: vectors "
        "computed, not taken from the cache):",
        "",
        "| method | layout | chunks | sync s | vectors s | fresh vectors | fresh chunks/s "
        "| keyword-fallback replies | snippet/range mismatches |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        vec = "-" if r.vectors_s is None else f"{r.vectors_s:.1f}"
        fresh = "-" if r.fresh_vectors is None else str(r.fresh_vectors)
        rate = "-"
        if r.fresh_vectors and r.vectors_s:
            rate = f"{r.fresh_vectors / r.vectors_s:.2f}"
        lines.append(
            f"| {r.method} | {r.layout} | {r.chunks} | {r.sync_s:.2f} | {vec} | {fresh} "
            f"| {rate} | {r.lexical_replies} | {r.snippet_mismatches} |"
        )
    lines += [
        "",
        f"Every question: `Client.search(question, limit={LIMIT}, min_score=0.0)`; a hit "
        "contains a turn when its snippet shows the turn's `- [Dn:m]` line. "
        "Latency is the reply's took_ms.",
    ]
    return "\n".join(lines)


def to_json(value: object, depth: int = 0) -> str:
    """Indented JSON with every list of scalars on one line.

    A full run records about 14,000 per-question rows; one line each keeps
    the file a third the size and lets a reader diff two runs row by row.
    """
    pad = " " * (depth + 1)
    if isinstance(value, Mapping) and value:
        items = [
            f"{pad}{json.dumps(str(k), ensure_ascii=False)}: {to_json(v, depth + 1)}"
            for k, v in value.items()
        ]
        return "{\n" + ",\n".join(items) + "\n" + " " * depth + "}"
    if isinstance(value, list | tuple) and value:
        if all(not isinstance(v, Mapping | list | tuple) for v in value):
            return json.dumps(value, ensure_ascii=False)
        items = [pad + to_json(v, depth + 1) for v in value]
        return "[\n" + ",\n".join(items) + "\n" + " " * depth + "]"
    return json.dumps(value, ensure_ascii=False)


def _data_summary(
    path: Path, digest: str, conversations: Sequence[Conversation], wall_s: float
) -> dict[str, Any]:
    by_cat = {
        name: sum(1 for c in conversations for q in c.questions if q.category == category)
        for category, name in CATEGORIES.items()
    }
    return {
        "path": str(path),
        "sha256": digest,
        "conversations": [c.index for c in conversations],
        "sample_ids": [c.sample_id for c in conversations],
        "sessions": sum(len(c.sessions) for c in conversations),
        "turns": sum(c.turns for c in conversations),
        "questions": sum(len(c.questions) for c in conversations),
        "questions_by_category": by_cat,
        "skipped_adversarial": sum(c.skipped_adversarial for c in conversations),
        "skipped_no_evidence": sum(c.skipped_no_evidence for c in conversations),
        "questions_with_dropped_ids": sum(c.questions_with_dropped_ids for c in conversations),
        "dropped_ids": [i for c in conversations for i in c.dropped_ids],
        "wall_s": round(wall_s, 1),
    }


# ---------------------------------------------------------------- command line


def _names(text: str, allowed: Iterable[str], what: str) -> list[str]:
    valid = list(allowed)
    names = [p.strip() for p in text.split(",") if p.strip()]
    if not names:
        raise argparse.ArgumentTypeError(f"give at least one {what}")
    unknown = [n for n in names if n not in valid]
    if unknown:
        raise argparse.ArgumentTypeError(
            f"unknown {what} {', '.join(unknown)}; choose from {', '.join(valid)}"
        )
    return list(dict.fromkeys(names))


def _indices(text: str) -> list[int]:
    try:
        values = [int(p) for p in text.split(",") if p.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a list of integers: {text!r}") from None
    if not values or any(v < 0 for v in values):
        raise argparse.ArgumentTypeError("give conversation indices (0-based), e.g. 0,1")
    return list(dict.fromkeys(values))


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m bench.locomo``; returns the exit code (0 ok, 1 failed, 2 usage or data)."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(
        prog="python -m bench.locomo",
        description="LoCoMo evidence retrieval through the real openmemoryd, per search method.",
    )
    parser.add_argument(
        "--methods",
        type=lambda t: _names(t, METHODS, "method"),
        default=list(METHODS),
        help=f"comma-separated, default all: {','.join(METHODS)}",
    )
    parser.add_argument(
        "--layouts",
        type=lambda t: _names(t, LAYOUTS, "layout"),
        default=None,
        help="dated,undated; default: both for bm25 and hybrid-0.5, dated for the rest",
    )
    parser.add_argument(
        "--conversations", type=_indices, default=None, help="0-based indices; default all"
    )
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="locomo10.json")
    parser.add_argument(
        "--chunk-tokens",
        type=int,
        default=None,
        help="index every method with this chunk size (overlap 20%%); default: the daemon's",
    )
    parser.add_argument(
        "--embed-nice",
        type=int,
        default=None,
        help="niceness of the embedding worker; default: the daemon's (10)",
    )
    parser.add_argument(
        "--json",
        type=Path,
        default=None,
        help="results file; default bench/results/<UTC date>-locomo.json",
    )
    args = parser.parse_args(args_list)

    command = shlex.join([sys.executable, "-m", "bench.locomo", *args_list])
    data_path: Path = args.data
    if not data_path.is_file():
        print(
            f"locomo: LoCoMo data not found at {data_path}. It is CC BY-NC 4.0 and is not "
            "shipped with openmemory: put snap-research/LoCoMo's data/locomo10.json there "
            "or pass --data PATH.",
            file=sys.stderr,
        )
        return 2
    try:
        every = load_locomo(data_path)
    except DataError as exc:
        print(f"locomo: {exc}", file=sys.stderr)
        return 2
    wanted = args.conversations if args.conversations is not None else range(len(every))
    missing = [i for i in wanted if i >= len(every)]
    if missing:
        print(f"locomo: the data has {len(every)} conversations; no {missing}", file=sys.stderr)
        return 2
    conversations = [every[i] for i in wanted]
    methods = [METHODS[name] for name in args.methods]
    if args.chunk_tokens is not None:
        methods = [with_chunking(m, args.chunk_tokens) for m in methods]
    if args.embed_nice is not None:
        methods = [with_embed_nice(m, args.embed_nice) for m in methods]
    plan = build_plan(methods, args.layouts)
    if not plan:
        print("locomo: no (method, layout) pair to run", file=sys.stderr)
        return 2

    machine = machine_info()
    digest = sha256_file(data_path)
    started = time.perf_counter()
    _progress(
        f"locomo: {len(conversations)} conversations, "
        + "; ".join(f"{layout}: {','.join(m.name for m in ms)}" for layout, ms in plan)
    )
    outcomes: dict[tuple[str, str], list[QueryOutcome]] = defaultdict(list)
    preparations: dict[tuple[str, str], list[Preparation]] = defaultdict(list)
    try:
        for conversation in conversations:
            for key, (found, prep) in run_conversation(conversation, plan).items():
                outcomes[key].extend(found)
                preparations[key].append(prep)
    # BenchDaemonError is a RuntimeError; OmemError covers a daemon dying mid-run.
    except (RuntimeError, OmemError, OSError, subprocess.TimeoutExpired) as exc:
        print(f"locomo: {exc}", file=sys.stderr)
        return 1
    wall_s = time.perf_counter() - started
    machine["load_average_end"] = load_average()

    results = [
        summarize(
            method, layout, outcomes[(layout, method.name)], preparations[(layout, method.name)]
        )
        for method in methods
        for layout in LAYOUTS
        if (layout, method.name) in outcomes
    ]
    data = _data_summary(data_path, digest, conversations, wall_s)
    print(render_tables(results, machine, command, data))
    for r in results:
        if r.lexical_replies:
            _progress(f"warning: {r.method}/{r.layout}: {r.lexical_replies} keyword-only replies")

    out: Path = args.json or RESULTS_DIR / f"{datetime.now(UTC).date().isoformat()}-locomo.json"
    report = {
        "benchmark": "locomo",
        "command": command,
        "argv": args_list,
        "machine": machine,
        "data": data,
        "settings": {
            "limit": LIMIT,
            "min_score": 0.0,
            "methods": {m.name: m.config_toml for m in methods},
            "plan": [[layout, [m.name for m in ms]] for layout, ms in plan],
            "queries_columns": [
                "conversation",
                "qa_index",
                "category",
                "first_rank",
                "all_rank",
                "took_ms",
            ],
        },
        "results": [asdict(r) for r in results],
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(to_json(report) + "\n", encoding="utf-8")
    _progress(f"wrote {out} ({wall_s:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
