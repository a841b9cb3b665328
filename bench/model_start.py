"""What the default model costs a daemon before its first search is answered.

A daemon with the bundled e5 model loads it twice, once for queries and once
in its embedding worker, and needs the reference passages' vectors (the
no-match baseline, `openmemoryd.embed.reference`) before a search can say
whether a match by meaning counts. Each run here is a fresh interpreter, as
a daemon's start is, timing (wall and process CPU):

* **import**: the local provider's modules (numpy and the engine included);
* **model**: the first query, which loads and verifies the weights, builds
  the tokenizer and the engine's session;
* **baseline**: the first reference baseline, from the vectors shipped with
  the package (``shipped``) or by embedding the passages (``embedded``: a
  daemon whose passages have no matching file, and every daemon before the
  vectors shipped).

After one untimed run, the two kinds alternate (ABBA), ``--runs`` of each;
the table gives medians. A tree without shipped vectors (an older commit on ``PYTHONPATH``)
is measured as ``embedded`` only. Run from the repository root::

    python -m bench.model_start [--runs 7] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from bench.report import invocation, publish
from bench.search_latency import machine_info

MODES: Final = ("shipped", "embedded")

# The child: one fresh interpreter, one mode. It prints one JSON line.
_CHILD: Final = r"""
import dataclasses, json, resource, sys, time

def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime

marks = [(time.perf_counter(), cpu())]
from openmemoryd.config import LocalSettings
from openmemoryd.embed.local.models import DEFAULT_MODEL
from openmemoryd.embed.local.provider import LocalEmbedder
marks.append((time.perf_counter(), cpu()))
model = DEFAULT_MODEL
has_shipped = hasattr(model, "shipped_reference")
if sys.argv[1] == "embedded" and has_shipped:
    model = dataclasses.replace(model, shipped_reference=lambda: None)
embedder = LocalEmbedder(LocalSettings(), model=model)
vector = embedder.embed_query("what did we decide about the cache?")
marks.append((time.perf_counter(), cpu()))
embedder.null_cosine(vector)
marks.append((time.perf_counter(), cpu()))
steps = ("import", "model", "baseline")
print(json.dumps({
    "has_shipped": has_shipped,
    **{f"{s}_ms": (marks[i + 1][0] - marks[i][0]) * 1000 for i, s in enumerate(steps)},
    **{f"{s}_cpu_ms": (marks[i + 1][1] - marks[i][1]) * 1000 for i, s in enumerate(steps)},
}))
"""

STEPS: Final = ("import", "model", "baseline")


def run_child(mode: str) -> dict[str, Any]:
    """One fresh interpreter measuring *mode*; its JSON line."""
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, mode], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"the {mode} run failed:\n{done.stderr}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def measure(runs: int) -> dict[str, list[dict[str, Any]]]:
    """``runs`` children of each mode, alternating ABBA."""
    # A first, untimed run warms the page cache and tells whether the tree ships vectors.
    modes = MODES if run_child("shipped")["has_shipped"] else ("embedded",)
    samples: dict[str, list[dict[str, Any]]] = {mode: [] for mode in modes}
    for index in range(runs * len(modes)):
        order = modes if (index // len(modes)) % 2 == 0 else modes[::-1]
        mode = order[index % len(modes)]
        samples[mode].append(run_child(mode))
    return samples


def medians(samples: Sequence[dict[str, Any]]) -> dict[str, float]:
    keys = [f"{s}_{kind}" for s in STEPS for kind in ("ms", "cpu_ms")]
    return {key: round(statistics.median(s[key] for s in samples), 1) for key in keys}


def render(summary: dict[str, dict[str, float]], command: str, machine: dict[str, Any]) -> str:
    lines = [
        f"`{command}`",
        "",
        f"load {machine['load_average']} -> {machine['load_average_end']}",
        "",
        "| baseline from | import ms (CPU) | first query: model ms (CPU) "
        "| first baseline ms (CPU) | total CPU ms |",
        "|---|---:|---:|---:|---:|",
    ]
    for mode, m in summary.items():
        cells = [f"{m[f'{s}_ms']:.0f} ({m[f'{s}_cpu_ms']:.0f})" for s in STEPS]
        total = sum(m[f"{s}_cpu_ms"] for s in STEPS)
        lines.append(f"| {mode} | " + " | ".join(cells) + f" | {total:.0f} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.model_start", description=__doc__)
    parser.add_argument("--runs", type=int, default=7, help="fresh interpreters per mode")
    parser.add_argument("--json", type=Path, help="also write the samples and medians here")
    args_list, command = invocation("bench.model_start", argv)
    args = parser.parse_args(args_list)
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    machine = machine_info()
    samples = measure(args.runs)
    summary = {mode: medians(runs) for mode, runs in samples.items()}
    publish(
        "model_start",
        lambda m: render(summary, command, m),
        {"medians": summary, "samples": samples},
        command=command,
        argv=args_list,
        machine=machine,
        json_path=args.json,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
