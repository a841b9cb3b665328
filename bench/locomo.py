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
`` [shares photo: <caption>]`` when the turn shared an image). Layouts of
the same text: ``dated`` names the files ``memory/YYYY-MM-DD.md`` (daily
notes, which temporal decay ages by their name) and ``undated`` names them
``memory/locomo-YYYY-MM-DD.md`` (evergreen notes). A third, ``journal``
(only when ``--layouts`` names it), keeps the whole conversation in one
file, ``memory/locomo.md``, each day a ``## YYYY-MM-DD`` section with its
``### Session N`` headings: the days are in its headings alone, and a
chunk where one day ends and the next begins is about both. The root files
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
* budget any/all at 3,000 and 6,000 characters: the same, over the hits
  taken in rank order while their snippets fit in that many characters
  (what an agent pays to paste the results into its context);
* asked any/all at 750 and 1,500 tokens: two more searches of the question
  with ``max_tokens`` and no limit, whose answers the daemon packs itself
  (the best hits whole, later ones as their best line), scored over every
  hit they hold, with their characters (snippets, citations and the
  sections the text output names beside them), hits and
  ``took_ms`` (the question's embedding is cached by then);
* answered / answer holds evidence: one more search, ``limit=10`` and the
  default ``min_score``, as an agent sends it: the share of questions it
  answers at all, and of those whose answer shows an evidence turn (what the
  rules for saying nothing cost real questions);

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
        [--conversations 0,1,...] [--data PATH] [--chunk-tokens N [--chunk-overlap N]]
        [--embed-nice N] [--json PATH]

Progress goes to stderr; stdout is Markdown (command, machine, data sha256,
the overall table, the budget and category table, the asked-budget table,
the per-category R@5 table and the indexing table).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import asdict, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

import tomlkit

from bench.args import name_list, number_list
from bench.daemon import BenchDaemon, BenchDaemonError
from bench.locomo_data import (
    CATEGORIES,
    DEFAULT_DATA,
    LAYOUTS,
    Conversation,
    DataError,
    Question,
    file_name,
    load_locomo,
    render_day,
    sha256_file,
    split_evidence,
    write_workspace,
)
from bench.locomo_methods import METHODS, Method, unmet_needs
from bench.locomo_report import render_tables, to_json
from bench.locomo_scoring import (
    BUDGETS,
    KS,
    LIMIT,
    TOKEN_BUDGETS,
    Latency,
    Preparation,
    QueryOutcome,
    RunResult,
    Scores,
    budget_ranks,
    range_ids,
    rank_evidence,
    snippet_ids,
)
from bench.report import invocation, load_average, progress
from bench.search_latency import machine_info, percentile
from omem_client import Client, OmemError
from omem_protocol import SearchHit
from openmemoryd.search.budget import where

__all__ = [
    "BUDGETS",
    "CATEGORIES",
    "DEFAULT_DATA",
    "KS",
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
    "render_day",
    "render_tables",
    "snippet_ids",
    "split_evidence",
    "to_json",
    "write_workspace",
]

RESULTS_DIR: Final = Path(__file__).resolve().parent / "results"


def summarize(
    method: Method,
    layout: str,
    outcomes: Sequence[QueryOutcome],
    preparations: Sequence[Preparation],
) -> RunResult:
    """Aggregate one (method, layout) over conversations."""
    by_cat: dict[str, Scores] = {}
    for category, name in CATEGORIES.items():
        ours = [o for o in outcomes if o.category == category]
        by_cat[name] = Scores.of(
            [(o.first_rank, o.all_rank) for o in ours],
            [o.budgets for o in ours],
            [o.asked for o in ours],
        )
    took = [o.took_ms for o in outcomes]
    hits = sum(o.hits for o in outcomes)
    vector_times = [p.vectors_s for p in preparations if p.vectors_s is not None]
    fresh = [p.fresh_vectors for p in preparations if p.fresh_vectors is not None]
    return RunResult(
        method=method.name,
        layout=layout,
        description=method.description,
        config_toml=method.config_toml,
        overall=Scores.of(
            [(o.first_rank, o.all_rank) for o in outcomes],
            [o.budgets for o in outcomes],
            [o.asked for o in outcomes],
        ),
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
        section_chars_per_hit=(
            round(sum(o.section_chars for o in outcomes) / hits, 1) if hits else 0.0
        ),
        lexical_replies=sum(o.lexical for o in outcomes) if method.vectors else 0,
        snippet_mismatches=sum(o.mismatches for o in outcomes),
        chunks=sum(p.chunks for p in preparations),
        sync_s=round(sum(p.sync_ms for p in preparations) / 1000, 2),
        vectors_s=round(sum(vector_times), 1) if vector_times else None,
        fresh_vectors=sum(fresh) if fresh else None,
        preparations=list(preparations),
        asked_chars=[
            round(sum(o.asked_chars[i] for o in outcomes) / len(outcomes), 1) if outcomes else 0.0
            for i in range(len(TOKEN_BUDGETS))
        ],
        asked_hits=[
            round(sum(o.asked_hits[i] for o in outcomes) / len(outcomes), 2) if outcomes else 0.0
            for i in range(len(TOKEN_BUDGETS))
        ],
        asked_p50_ms=[
            round(percentile([o.asked_took_ms[i] for o in outcomes], 50), 2) if outcomes else 0.0
            for i in range(len(TOKEN_BUDGETS))
        ],
        default_answered=_share([o.answered for o in outcomes]),
        default_with_evidence=_share([o.answered_with_evidence for o in outcomes]),
        reranked=_share([o.reranked for o in outcomes]) or 0.0,
        queries=[
            (o.conversation, o.qa_index, o.category, o.first_rank, o.all_rank, o.took_ms)
            for o in outcomes
        ],
    )


def _share(flags: Sequence[bool | None]) -> float | None:
    """The share of true *flags*, or None when any was not measured."""
    if not flags or any(flag is None for flag in flags):
        return None
    return round(sum(1 for flag in flags if flag) / len(flags), 3)


# ---------------------------------------------------------------- running


_progress = progress()


def _ask(
    client: Client,
    conversation: Conversation,
    question: Question,
    turn_lines: Mapping[str, Mapping[int, str]],
) -> QueryOutcome:
    reply = client.search(question.question, limit=LIMIT, min_score=0.0)
    asked = [client.search(question.question, max_tokens=t, min_score=0.0) for t in TOKEN_BUDGETS]
    plain = client.search(question.question, limit=LIMIT)
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
        section_chars=sum(_section_chars(hit) for hit in reply.results),
        lexical=reply.mode != "hybrid" or reply.degraded,
        mismatches=mismatches,
        budgets=budget_ranks(
            per_hit, [len(hit.snippet) for hit in reply.results], question.evidence
        ),
        asked=tuple(
            rank_evidence([snippet_ids(h.snippet) for h in a.results], question.evidence)
            for a in asked
        ),
        asked_chars=tuple(sum(_shown_chars(h) for h in a.results) for a in asked),
        asked_hits=tuple(len(a.results) for a in asked),
        asked_took_ms=tuple(a.took_ms for a in asked),
        reranked=any(hit.rerank_score is not None for hit in reply.results),
        answered=bool(plain.results),
        answered_with_evidence=any(
            snippet_ids(hit.snippet).intersection(question.evidence) for hit in plain.results
        ),
    )


def _shown_chars(hit: SearchHit) -> int:
    """What a packed answer's hit shows a reader, as the daemon's budget
    counts it: its snippet and the line saying where it is from."""
    return len(hit.snippet) + len(where(hit))


def _section_chars(hit: SearchHit) -> int:
    """What that line holds beyond the citation: `` · section``, if any."""
    return len(where(hit)) - len(hit.citation)


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


def with_chunking(method: Method, tokens: int, overlap: int | None = None) -> Method:
    """*method* on an index chunked to *tokens*, chunks overlapping by *overlap*
    (default a fifth of *tokens*, as the daemon's defaults are)."""
    overlap = tokens // 5 if overlap is None else overlap
    index = f"\n[index]\nchunk_tokens = {tokens}\nchunk_overlap = {overlap}\n"
    return replace(method, config_toml=method.config_toml + index)


def with_embed_nice(method: Method, nice: int) -> Method:
    """*method* with the local embedding worker at niceness *nice* (vector methods only),
    set in the method's own ``[embedding.local]`` table when it has one (a second
    table of that name would make the config unreadable)."""
    if not method.vectors:
        return method
    config: Any = tomlkit.parse(method.config_toml)
    embedding = config.setdefault("embedding", tomlkit.table())
    local = embedding.setdefault("local", tomlkit.table())
    local["nice"] = nice
    return replace(method, config_toml=tomlkit.dumps(config))


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


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m bench.locomo``; returns the exit code (0 ok, 1 failed, 2 usage or data)."""
    args_list, command = invocation("bench.locomo", argv)
    parser = argparse.ArgumentParser(
        prog="python -m bench.locomo",
        description="LoCoMo evidence retrieval through the real openmemoryd, per search method.",
    )
    parser.add_argument(
        "--methods",
        type=name_list(METHODS, "method"),
        default=[name for name, method in METHODS.items() if method.package is None],
        help="comma-separated; default all but those needing a package of their own:"
        f" {','.join(METHODS)}",
    )
    parser.add_argument(
        "--layouts",
        type=name_list(LAYOUTS, "layout"),
        default=None,
        help="dated,undated,journal; default: dated and undated for the default, bm25 and"
        " hybrid-0.5, dated for the rest",
    )
    parser.add_argument(
        "--conversations",
        type=number_list(int, at_least=0, what="conversation indices"),
        default=None,
        help="0-based indices; default all",
    )
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="locomo10.json")
    parser.add_argument(
        "--chunk-tokens",
        type=int,
        default=None,
        help="index every method with this chunk size (overlap 20%%); default: the daemon's",
    )
    parser.add_argument(
        "--chunk-overlap",
        type=int,
        default=None,
        help="tokens shared by neighbouring chunks, with --chunk-tokens; default a fifth of it",
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
    if args.chunk_overlap is not None and args.chunk_tokens is None:
        print("locomo: --chunk-overlap needs --chunk-tokens", file=sys.stderr)
        return 2

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
    wanted = (
        list(dict.fromkeys(args.conversations))  # each once, in the order given
        if args.conversations is not None
        else range(len(every))
    )
    missing = [i for i in wanted if i >= len(every)]
    if missing:
        print(f"locomo: the data has {len(every)} conversations; no {missing}", file=sys.stderr)
        return 2
    conversations = [every[i] for i in wanted]
    methods = [METHODS[name] for name in args.methods]
    unmet = unmet_needs(methods)
    for line in unmet:
        print(f"locomo: {line}", file=sys.stderr)
    if unmet:
        return 2
    if args.chunk_tokens is not None:
        methods = [with_chunking(m, args.chunk_tokens, args.chunk_overlap) for m in methods]
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
