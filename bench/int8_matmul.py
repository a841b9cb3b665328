"""Could an int8 forward pass make the local embedder faster here?

The bundled multilingual-e5-small runs as float32 matrix products on
numpy's BLAS, near this CPU's float32 peak (docs/benchmarks.md). An int8
path pays only if int8 products run faster than float32 ones. This part
times, at the model's own shapes (a batch of ``--tokens`` token rows times
each of its weight matrices: the attention's query/key/value and output
projections and the two feed-forward ones), numpy's float32 product (BLAS)
against its int8 product with int32 accumulation (the arithmetic an int8
model needs), one BLAS thread, alternating the two so that noise falls on
both, median of ``--repeat`` runs of each; and the same product with int8
weights widened to float32 per call (int8 storage, float arithmetic), which
saves memory but not arithmetic.

Run from the repository root::

    python -m bench.int8_matmul [--tokens 512] [--repeat 7] [--json PATH]

Progress goes to stderr; stdout is a Markdown table to paste.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Final

import numpy as np
import numpy.typing as npt
from threadpoolctl import threadpool_limits

from bench.report import invocation, progress, publish
from bench.search_latency import machine_info

__all__ = ["SHAPES", "MatmulResult", "main", "measure", "render_table"]

# multilingual-e5-small: hidden 384, feed-forward 1536; per layer the fused
# query/key/value projection, the attention output and the two FFN matrices.
SHAPES: Final = (
    ("qkv", 384, 1152),
    ("attention out", 384, 384),
    ("ffn in", 384, 1536),
    ("ffn out", 1536, 384),
)


@dataclass(frozen=True, slots=True)
class MatmulResult:
    """One weight shape; milliseconds per product and GFLOP/s (2·m·k·n per product)."""

    name: str
    k: int
    n: int
    float32_ms: float
    int8_ms: float
    widened_ms: float
    float32_gflops: float
    int8_gops: float

    @property
    def int8_vs_float32(self) -> float:
        return self.int8_ms / self.float32_ms


def _timed(fn: Callable[[], object]) -> float:
    started = time.perf_counter()
    fn()
    return (time.perf_counter() - started) * 1000


def _products(
    rng: np.random.Generator, tokens: int, k: int, n: int
) -> dict[str, Callable[[], object]]:
    """The three products of a (tokens × k) batch by a (k × n) weight matrix."""
    x32: npt.NDArray[np.float32] = rng.standard_normal((tokens, k), dtype=np.float32)
    w32: npt.NDArray[np.float32] = rng.standard_normal((k, n), dtype=np.float32)
    x8 = rng.integers(-127, 128, (tokens, k), dtype=np.int8)
    w8 = rng.integers(-127, 128, (k, n), dtype=np.int8)
    scale = np.float32(0.01)
    return {
        "float32": lambda: x32 @ w32,
        "int8": lambda: np.matmul(x8, w8, dtype=np.int32),
        "widened": lambda: x32 @ (w8.astype(np.float32) * scale),
    }


def measure(tokens: int, repeat: int, seed: int = 0) -> list[MatmulResult]:
    """Time the three products for each of `SHAPES`, alternating them."""
    rng = np.random.default_rng(seed)
    results = []
    with threadpool_limits(1):
        for name, k, n in SHAPES:
            products = _products(rng, tokens, k, n)
            runs: dict[str, list[float]] = {label: [] for label in products}
            for run in products.values():  # warm-up
                run()
            for _ in range(repeat):
                for label, run in products.items():
                    runs[label].append(_timed(run))
            medians = {label: statistics.median(times) for label, times in runs.items()}
            ops = 2 * tokens * k * n
            results.append(
                MatmulResult(
                    name=name,
                    k=k,
                    n=n,
                    float32_ms=round(medians["float32"], 3),
                    int8_ms=round(medians["int8"], 3),
                    widened_ms=round(medians["widened"], 3),
                    float32_gflops=round(ops / medians["float32"] / 1e6, 1),
                    int8_gops=round(ops / medians["int8"] / 1e6, 2),
                )
            )
            _progress(f"{name}: float32 {medians['float32']:.2f} ms, int8 {medians['int8']:.2f} ms")
    return results


def render_table(results: Sequence[MatmulResult], machine: dict[str, Any], tokens: int) -> str:
    rows = [
        f"| product ({tokens} token rows) | float32 (BLAS) | int8 → int32 "
        "| int8 widened to float32 | int8 / float32 |",
        "|---|---:|---:|---:|---:|",
    ]
    for r in results:
        rows.append(
            f"| {r.name} ({r.k}×{r.n}) | {r.float32_ms:.2f} ms ({r.float32_gflops:g} GFLOP/s) "
            f"| {r.int8_ms:.2f} ms ({r.int8_gops:g} GOP/s) | {r.widened_ms:.2f} ms "
            f"| {r.int8_vs_float32:.1f}x |"
        )
    load = machine.get("load_average"), machine.get("load_average_end")
    rows += ["", f"One BLAS thread; medians; load average {load[0]} → {load[1]}."]
    return "\n".join(rows)


_progress = progress("int8-matmul")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.int8_matmul", description=__doc__)
    parser.add_argument("--tokens", type=int, default=512)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    if args.tokens < 1 or args.repeat < 1:
        parser.error("--tokens and --repeat must be 1 or more")
    machine = machine_info()
    results = measure(args.tokens, args.repeat)
    args_list, command = invocation("bench.int8_matmul", argv)
    publish(
        "int8_matmul",
        lambda m: render_table(results, m, args.tokens),
        [asdict(r) | {"int8_vs_float32": round(r.int8_vs_float32, 2)} for r in results],
        command=command,
        argv=args_list,
        machine=machine,
        json_path=args.json,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
