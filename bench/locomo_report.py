"""LoCoMo's report: Markdown tables and compact JSON."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from bench.locomo_data import CATEGORIES
from bench.locomo_scoring import LIMIT, TOKEN_BUDGETS, RunResult


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
    reranked = [f"{r.method} ({r.layout}) {r.reranked:.1%}" for r in results if r.reranked]
    if reranked:
        lines += ["", "Searches a reranker re-ordered: " + ", ".join(reranked) + "."]
    sections = [f"{r.method} ({r.layout}) {r.section_chars_per_hit:.0f}" for r in results]
    lines += [
        "",
        "Characters a hit's section adds beside its location in the text output "
        "(not in chars/hit): " + ", ".join(sections) + ".",
    ]
    lines += [
        "",
        "Recall within a context budget (hits in rank order while their snippets fit), "
        "and all evidence in the top 10 by category:",
        "",
        "| method | layout | 3,000 chars any | 3,000 all | 6,000 chars any | 6,000 all "
        + "".join(f"| {name} all@10 " for name in CATEGORIES.values())
        + "|",
        "|---|---|" + "---:|" * (4 + len(CATEGORIES)),
    ]
    for r in results:
        o = r.overall
        shares = [o.b3000_any, o.b3000_all, o.b6000_any, o.b6000_all]
        shares += [s.r10_all for s in r.by_category.values()]
        lines.append(f"| {r.method} | {r.layout} | " + " | ".join(_f(c) for c in shares) + " |")
    lines += [
        "",
        "Asked of the daemon with a token budget (`search(max_tokens=T)`, no limit): "
        "recall of its answer, the characters (snippets, citations, sections) and hits it held, "
        "and the search's p50:",
        "",
        "| method | layout "
        + "".join(f"| {t:,} tokens any | all | chars | hits | p50 ms " for t in TOKEN_BUDGETS)
        + "|",
        "|---|---|" + "---:|" * (5 * len(TOKEN_BUDGETS)),
    ]
    for r in results:
        o = r.overall
        cells: list[str] = []
        if len(r.asked_p50_ms) != len(TOKEN_BUDGETS):  # a run that did not ask
            continue
        for index, tokens in enumerate(TOKEN_BUDGETS):
            cells += [_f(getattr(o, f"t{tokens}_any")), _f(getattr(o, f"t{tokens}_all"))]
            cells += [f"{r.asked_chars[index]:.0f}", f"{r.asked_hits[index]:.1f}"]
            cells.append(f"{r.asked_p50_ms[index]:.1f}")
        lines.append(f"| {r.method} | {r.layout} | " + " | ".join(cells) + " |")
    answered = [r for r in results if r.default_answered is not None]
    if answered:
        lines += [
            "",
            "Asked as an agent asks (`search(question, limit="
            f"{LIMIT})`, the default min_score): the share of questions answered at all, "
            "and of those whose answer shows an evidence turn:",
            "",
            "| method | layout | answered | answer holds evidence |",
            "|---|---|---:|---:|",
        ]
        for r in answered:
            pair = (r.default_answered, r.default_with_evidence)
            row = " | ".join("-" if share is None else _f(share) for share in pair)
            lines.append(f"| {r.method} | {r.layout} | {row} |")
    header = " | ".join(f"{name} (n={counts[name]})" for name in CATEGORIES.values())
    lines += [
        "",
        "R@5 any / all by category:",
        "",
        f"| method | layout | {header} | overall |",
        "|---|---|" + "---:|" * (len(CATEGORIES) + 1),
    ]
    for r in results:
        pairs = [f"{_f(s.r5_any)} / {_f(s.r5_all)}" for s in r.by_category.values()]
        pairs.append(f"{_f(r.overall.r5_any)} / {_f(r.overall.r5_all)}")
        lines.append(f"| {r.method} | {r.layout} | " + " | ".join(pairs) + " |")
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
