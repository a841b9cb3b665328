"""Recall on personal notes in Russian, Chinese and English, through the real daemon.

LoCoMo is English chat logs; most of openmemory's users write in Chinese or
Russian, and what they keep is notes. No public evaluation set of personal
notes exists in those languages, so this part measures three small ones
kept in ``bench/multilingual/`` (``ru``, ``zh``, ``en``): each is one
fictional engineer's workspace as they would keep it (MEMORY.md, USER.md,
15-25 daily notes, topic notes under ``memory/notes/``; about 35 files and
360-380 lines), with 60 questions asked as a person asks them later, each
naming the exact lines that answer it. The questions are of five kinds:
``fact`` (one line), ``paraphrase`` (other words than the note's), ``date``
(a day or part of a month named), ``multi`` (lines in two or three files)
and ``person`` (what someone said or did). Each set was written, notes and
questions together, without looking at how search works or at the other
sets; they are small and written by us, so a figure here is a check on
one language's path through the pipeline, not a benchmark to compare with
other systems.

For each set and method (`bench.locomo_methods.METHODS`: the default, the
keyword leg alone, the vector leg alone) one `BenchDaemon` indexes the
workspace and embeds every chunk, then every question is searched twice:
``limit=10, min_score=0`` for the ranking (R@k any / all and MRR as in
`bench.locomo`, a hit holding an evidence line when the line lies in its
cited range; the characters a hit's snippet takes, and recall within
3,000 and 6,000 characters of snippets taken in rank order, as in
`bench.locomo`), and with the default ``min_score`` to count the questions that
get an answer at all (``answered``) and those whose answer holds evidence.
Sixteen queries about what no note is about, in the set's language, are
then searched with the default ``min_score``: ``unrelated answered`` counts
those that got anything, and should be zero. The first six (a proof of
Fermat's last theorem, ostrich farming, ``zzzqqq``, …) came with the sets;
the other ten (arctic terns, baroque opera, knitting, …) were written later,
before the reference passages of the no-match baseline were widened, and
on none of their topics, so they check that widening on queries it was not
chosen on.

People ask in another language than their notes' too: an agent working in
English searches a Chinese user's notes in English. Each set carries some
of its questions translated (``translated``: the Chinese and Russian sets'
in English, the English set's in Chinese and in Russian; each names the
question it translates, whose kind and evidence it keeps) and six
unrelated queries in that language. They are asked of the same daemon
after the set's own, and reported as their own rows ("zh, asked in en").
With ``--mixed`` the sets share one workspace instead, each under
``memory/<set>/`` (`moved`): one person's notes in several languages, where
the note that answers a question competes with notes in the question's own
language (rows "zh, mixed", "zh, mixed, asked in en"). With
``--interleaved`` they share the files themselves, merged line by line
(`interleaved`): notes kept in two or three languages at once, each chunk
holding lines of each.
Latency is each ranked reply's ``took_ms`` (query embedding included).

Run: ``python -m bench.multilingual [--sets ru,zh,en] [--methods calibrated,bm25,vector]
[--mixed | --interleaved] [--embed-nice N]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Final

from bench.args import name_list
from bench.daemon import BenchDaemon, BenchDaemonError
from bench.locomo import with_embed_nice
from bench.locomo_methods import METHODS, Method, unmet_needs
from bench.locomo_scoring import Scores, budget_ranks, rank_evidence
from bench.report import invocation, publish
from bench.search_latency import machine_info
from omem_client import Client, OmemError, SearchHit

DATA_DIR: Final = Path(__file__).parent / "multilingual"
SETS: Final = ("ru", "zh", "en")
DEFAULT_METHODS: Final = ("calibrated", "bm25", "vector")
KINDS: Final = ("fact", "paraphrase", "date", "multi", "person")
LIMIT: Final = 10
ROOT_FILES: Final = ("MEMORY.md", "USER.md", "PROJECT.md")


class DataError(ValueError):
    """An evaluation set that does not say what it claims (a line not in its file)."""


@dataclass(frozen=True, slots=True)
class EvalQuestion:
    text: str
    kind: str
    evidence: tuple[tuple[str, int], ...]  # (path, line number)


@dataclass(frozen=True, slots=True)
class Translated:
    """Some of a set's questions, and unrelated queries, asked in another language."""

    language: str
    questions: tuple[EvalQuestion, ...]
    unrelated: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class EvalSet:
    name: str
    files: Mapping[str, str]
    questions: tuple[EvalQuestion, ...]
    unrelated: tuple[str, ...] = ()  # queries nothing in the notes answers
    translated: tuple[Translated, ...] = ()


def load_set(path: Path) -> EvalSet:
    """The set in *path*, each evidence line located (it must occur exactly once)."""
    raw = json.loads(path.read_text(encoding="utf-8"))
    files: dict[str, str] = raw["files"]
    outside = [name for name in files if name not in ROOT_FILES and not name.startswith("memory/")]
    if outside:  # the daemon would never index them, and their evidence never be found
        raise DataError(f"{path.name}: not memory files: {outside}")
    questions = []
    for number, item in enumerate(raw["questions"], start=1):
        evidence = []
        for ev in item["evidence"]:
            lines = files.get(ev["path"], "").split("\n")
            at = [n for n, line in enumerate(lines, start=1) if line == ev["line"]]
            if len(at) != 1:
                raise DataError(f"{path.name} question {number}: {ev['line']!r} occurs {len(at)}×")
            evidence.append((ev["path"], at[0]))
        if item["kind"] not in KINDS:
            raise DataError(f"{path.name} question {number}: unknown kind {item['kind']!r}")
        questions.append(EvalQuestion(item["q"], item["kind"], tuple(evidence)))
    translated = []
    for language, asked in raw.get("translated", {}).items():
        of = [item["of"] for item in asked["questions"]]
        missing = [n for n in of if not 0 <= n < len(questions)]
        if missing:
            raise DataError(f"{path.name} translated to {language}: no question {missing[0]}")
        translated.append(
            Translated(
                language,
                tuple(
                    EvalQuestion(item["q"], questions[n].kind, questions[n].evidence)
                    for item, n in zip(asked["questions"], of, strict=True)
                ),
                tuple(asked.get("unrelated", ())),
            )
        )
    return EvalSet(
        path.stem, files, tuple(questions), tuple(raw.get("unrelated", ())), tuple(translated)
    )


def moved(eval_set: EvalSet) -> EvalSet:
    """*eval_set* with its files, and its questions' evidence, under
    ``memory/<set>/``, so that several sets share one workspace (``--mixed``)."""

    def path_of(path: str) -> str:
        return f"memory/{eval_set.name}/{path.removeprefix('memory/')}"

    def questions(asked: Sequence[EvalQuestion]) -> tuple[EvalQuestion, ...]:
        return tuple(
            EvalQuestion(q.text, q.kind, tuple((path_of(p), n) for p, n in q.evidence))
            for q in asked
        )

    return EvalSet(
        eval_set.name,
        {path_of(path): text for path, text in eval_set.files.items()},
        questions(eval_set.questions),
        eval_set.unrelated,
        tuple(
            Translated(t.language, questions(t.questions), t.unrelated) for t in eval_set.translated
        ),
    )


def interleaved(sets: Sequence[EvalSet]) -> list[EvalSet]:
    """*sets* written line by line into the same files (``--interleaved``):
    one person who writes each day's note in two or three languages.

    Files are paired by kind: the root files by name (every set's USER.md
    becomes one USER.md), the notes under ``memory/`` in their sorted order
    (each set's first note with the others' first), each pair's lines taken
    in turn, one from each set. A merged file keeps the first set's name for
    its slot; one that would take a name another slot holds goes under
    ``memory/<set>/``. So every chunk holds lines of each language, which
    is where a match across scripts is hardest to judge. The first set
    returned carries all the files; each keeps its own questions, their
    evidence moved to where its lines now lie.
    """
    slots: dict[tuple[int, str], list[tuple[EvalSet, str]]] = {}
    for eval_set in sets:
        notes = sorted(name for name in eval_set.files if name not in ROOT_FILES)
        for name in eval_set.files:
            slot = (0, name) if name in ROOT_FILES else (1, f"{notes.index(name):04d}")
            slots.setdefault(slot, []).append((eval_set, name))
    files: dict[str, str] = {}
    where: dict[tuple[str, str, int], tuple[str, int]] = {}  # (set, path, line) → merged
    for members in slots.values():
        first_set, target = members[0]
        if target in files:
            target = f"memory/{first_set.name}/{target.removeprefix('memory/')}"
        columns = [(s.name, path, s.files[path].rstrip("\n").split("\n")) for s, path in members]
        merged: list[str] = []
        for row in range(max(len(lines) for _, _, lines in columns)):
            for set_name, path, lines in columns:
                if row < len(lines):
                    merged.append(lines[row])
                    where[(set_name, path, row + 1)] = (target, len(merged))
        files[target] = "\n".join(merged) + "\n"

    def questions(eval_set: EvalSet, asked: Sequence[EvalQuestion]) -> tuple[EvalQuestion, ...]:
        return tuple(
            EvalQuestion(q.text, q.kind, tuple(where[(eval_set.name, p, n)] for p, n in q.evidence))
            for q in asked
        )

    return [
        EvalSet(
            eval_set.name,
            files if number == 0 else {},
            questions(eval_set, eval_set.questions),
            eval_set.unrelated,
            tuple(
                Translated(t.language, questions(eval_set, t.questions), t.unrelated)
                for t in eval_set.translated
            ),
        )
        for number, eval_set in enumerate(sets)
    ]


def evidence_in(hit: SearchHit, evidence: Sequence[tuple[str, int]]) -> frozenset[tuple[str, int]]:
    """The evidence lines (path, line) that lie in *hit*'s cited range."""
    return frozenset(
        (path, line)
        for path, line in evidence
        if path == hit.path and hit.start_line <= line <= hit.end_line
    )


@dataclass(frozen=True, slots=True)
class Outcome:
    kind: str
    first_rank: int | None
    all_rank: int | None
    answered: bool  # any hit at the default min_score
    answered_with_evidence: bool
    took_ms: float
    # (first, all) ranks within each of `BUDGETS` characters of snippets
    budgets: tuple[tuple[int | None, int | None], ...]
    chars: tuple[int, ...]  # each ranked hit's snippet length


@dataclass(frozen=True, slots=True)
class Asked:
    """One language's questions on a set's notes, and how many hits each of
    its unrelated queries got; *language* None: the set's own."""

    language: str | None
    outcomes: list[Outcome]
    unrelated: list[int]


def run_set(eval_set: EvalSet, method: Method) -> list[Asked]:
    """Index *eval_set* under *method*'s config and ask every question; then
    the unrelated queries, with the default min_score: how many hits each got.
    The same again for each language the set has translations into."""
    (asked,) = run_sets([eval_set], method)
    return asked


def run_sets(sets: Sequence[EvalSet], method: Method) -> list[list[Asked]]:
    """`run_set` for each of *sets*, all their files in one workspace (their
    paths must not collide: see `moved`)."""
    with BenchDaemon() as daemon:
        for eval_set in sets:
            for name, text in eval_set.files.items():
                target = daemon.workspace / name
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(text if text.endswith("\n") else text + "\n", encoding="utf-8")
        daemon.write_config(method.config_toml)
        daemon.start()
        daemon.wait_indexed()
        if method.vectors:
            daemon.wait_vectors()
        with daemon.client() as client:
            client.search("warm-up")
            asked = [
                [_ask(client, None, s.questions, s.unrelated)]
                + [_ask(client, t.language, t.questions, t.unrelated) for t in s.translated]
                for s in sets
            ]
        code = daemon.stop()
        if code != 0:
            raise BenchDaemonError(f"openmemoryd exited with {code}:\n{daemon.log()}")
    return asked


def _ask(
    client: Client,
    language: str | None,
    questions: Sequence[EvalQuestion],
    unrelated: Sequence[str],
) -> Asked:
    outcomes = []
    for q in questions:
        ranked = client.search(q.text, limit=LIMIT, min_score=0.0)
        found = [evidence_in(h, q.evidence) for h in ranked.results]
        first, all_ = rank_evidence(found, q.evidence)
        chars = tuple(len(h.snippet) for h in ranked.results)
        plain = client.search(q.text, limit=LIMIT)
        shown = [evidence_in(h, q.evidence) for h in plain.results]
        outcomes.append(
            Outcome(
                q.kind,
                first,
                all_,
                answered=bool(plain.results),
                answered_with_evidence=any(shown),
                took_ms=ranked.took_ms,
                budgets=budget_ranks(found, chars, q.evidence),
                chars=chars,
            )
        )
    hits = [len(client.search(text, limit=LIMIT).results) for text in unrelated]
    return Asked(language, outcomes, hits)


def summarize(
    set_name: str,
    method: str,
    outcomes: Sequence[Outcome],
    unrelated: Sequence[int] = (),
    asked_in: str | None = None,
) -> dict[str, Any]:
    """The figures of one (set, method, language asked in; None: the set's
    own): overall, answered, per kind, latency, and how many unrelated
    queries got any answer (the right number is 0)."""
    scores = Scores.of(
        [(o.first_rank, o.all_rank) for o in outcomes], [o.budgets for o in outcomes]
    )
    n = len(outcomes)
    chars = [size for o in outcomes for size in o.chars]
    by_kind = {
        kind: Scores.of([(o.first_rank, o.all_rank) for o in outcomes if o.kind == kind])
        for kind in KINDS
    }
    return {
        "set": set_name,
        "method": method,
        "asked_in": asked_in,
        "questions": n,
        "r1_any": scores.r1_any,
        "r5_any": scores.r5_any,
        "r10_any": scores.r10_any,
        "r10_all": scores.r10_all,
        "mrr": scores.mrr,
        "b3000_any": scores.b3000_any,
        "b3000_all": scores.b3000_all,
        "b6000_any": scores.b6000_any,
        "b6000_all": scores.b6000_all,
        "chars_per_hit": round(statistics.fmean(chars)) if chars else 0,
        "answered": round(sum(o.answered for o in outcomes) / n, 4),
        "answered_with_evidence": round(sum(o.answered_with_evidence for o in outcomes) / n, 4),
        "all10_by_kind": {kind: s.r10_all for kind, s in by_kind.items() if s.n},
        "questions_by_kind": {kind: s.n for kind, s in by_kind.items() if s.n},
        "p50_ms": round(statistics.median(o.took_ms for o in outcomes), 1),
        "unrelated": len(unrelated),
        "unrelated_answered": sum(1 for hits in unrelated if hits),
        "unrelated_hits": list(unrelated),  # in the set's order of its unrelated queries
        "outcomes": [asdict(o) for o in outcomes],
    }


def render(results: Sequence[Mapping[str, Any]], machine: Mapping[str, Any], command: str) -> str:
    """Markdown: one row per (set, method), then all@10 by kind."""
    out = [
        f"`{command}`",
        "",
        f"Notes in Russian, Chinese and English; load {machine.get('load_average')} at the start, "
        f"{machine.get('load_average_end')} at the end.",
        "",
        "| set | method | questions | R@1 | R@5 | R@10 any / all | MRR "
        "| 3,000 chars any / all | 6,000 chars any / all | chars a hit "
        "| answered (default min_score) | answer holds evidence | unrelated answered | p50 |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        out.append(
            f"| {_label(r)} | {r['method']} | {r['questions']} | {r['r1_any']:.3f} "
            f"| {r['r5_any']:.3f} | {r['r10_any']:.3f} / {r['r10_all']:.3f} | {r['mrr']:.3f} "
            f"| {r['b3000_any']:.3f} / {r['b3000_all']:.3f} "
            f"| {r['b6000_any']:.3f} / {r['b6000_all']:.3f} | {r['chars_per_hit']} "
            f"| {r['answered']:.3f} | {r['answered_with_evidence']:.3f} "
            f"| {r['unrelated_answered']} of {r['unrelated']} | {r['p50_ms']} ms |"
        )
    out += ["", "| set | method | " + " | ".join(KINDS) + " |", "|---|---|" + "---:|" * len(KINDS)]
    for r in results:
        cells = [
            f"{r['all10_by_kind'][k]:.3f} ({r['questions_by_kind'][k]})"
            if k in r["all10_by_kind"]
            else "—"
            for k in KINDS
        ]
        out.append(f"| {_label(r)} | {r['method']} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def _niced(method: Method, nice: int | None) -> Method:
    return method if nice is None else with_embed_nice(method, nice)


def _record(results: list[dict[str, Any]], label: str, method: str, asked: list[Asked]) -> None:
    for one in asked:
        results.append(summarize(label, method, one.outcomes, one.unrelated, one.language))
        print(f"[{_label(results[-1])}] {method}: R@10 {results[-1]['r10_any']}", file=sys.stderr)


def _label(result: Mapping[str, Any]) -> str:
    asked_in = result.get("asked_in")
    return f"{result['set']}, asked in {asked_in}" if asked_in else str(result["set"])


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m bench.multilingual``; 0 ok, 1 a daemon failed, 2 usage or data."""
    args_list, command = invocation("bench.multilingual", argv)
    parser = argparse.ArgumentParser(prog="python -m bench.multilingual", description=__doc__)
    parser.add_argument("--sets", type=name_list(SETS, "set"), default=list(SETS))
    parser.add_argument("--methods", type=name_list(METHODS, "method"), default=DEFAULT_METHODS)
    parser.add_argument("--data", type=Path, default=DATA_DIR, help="folder of <set>.json")
    parser.add_argument(
        "--embed-nice", type=int, default=None, help="the embedding worker's niceness (10)"
    )
    together = parser.add_mutually_exclusive_group()
    together.add_argument(
        "--mixed", action="store_true", help="the sets in one workspace, each under memory/<set>/"
    )
    together.add_argument(
        "--interleaved",
        action="store_true",
        help="the sets' notes merged line by line into the same files",
    )
    parser.add_argument("--json", type=Path, default=None, help="write the results here")
    args = parser.parse_args(args_list)
    unmet = unmet_needs([METHODS[name] for name in args.methods])
    for line in unmet:
        print(f"multilingual: {line}", file=sys.stderr)
    if unmet:
        return 2
    try:
        sets = [load_set(args.data / f"{name}.json") for name in args.sets]
    except (OSError, KeyError, TypeError, ValueError) as exc:
        print(f"multilingual: {exc}", file=sys.stderr)
        return 2
    machine = machine_info()
    results: list[dict[str, Any]] = []
    try:
        if args.mixed or args.interleaved:
            how = "interleaved" if args.interleaved else "mixed"
            shared = interleaved(sets) if args.interleaved else [moved(s) for s in sets]
            for name in args.methods:
                method = _niced(METHODS[name], args.embed_nice)
                together = run_sets(shared, method)
                for eval_set, asked in zip(sets, together, strict=True):
                    _record(results, f"{eval_set.name}, {how}", name, asked)
        else:
            for eval_set in sets:
                for name in args.methods:
                    method = _niced(METHODS[name], args.embed_nice)
                    _record(results, eval_set.name, name, run_set(eval_set, method))
    except (RuntimeError, OmemError, OSError, subprocess.TimeoutExpired) as exc:
        print(f"multilingual: {exc}", file=sys.stderr)
        return 1
    publish(
        "multilingual",
        lambda m: render(results, m, command),
        results,
        command=command,
        argv=args_list,
        machine=machine,
        json_path=args.json,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
