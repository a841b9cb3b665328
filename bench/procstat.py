"""Memory and CPU of the daemon under test, and of the processes it starts, from /proc.

The daemon embeds passages in a child process (`openmemoryd.embed.local`),
so its own peak RSS is only part of the story: `ProcessSampler` polls
``/proc/<pid>/status`` of the daemon and of every descendant every
``interval`` seconds and keeps, per process, the last ``VmHWM`` (peak
resident set, which only grows, so the last reading before a process exits
is its peak, give or take what it grew in its final interval) and the last
CPU time (utime + stime from ``/proc/<pid>/stat``).

Linux only: elsewhere every figure is None, and the benchmarks say so rather
than fail.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Final

__all__ = [
    "ProcessPeak",
    "ProcessSampler",
    "SampledMemory",
    "children_of",
    "cpu_seconds",
    "main_thread_cpu_seconds",
    "peak_rss_kb",
    "rss_kb",
]

PROC: Final = Path("/proc")
CLOCK_TICKS: Final = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _status_kb(pid: int, field: str) -> int | None:
    try:
        with open(PROC / str(pid) / "status", encoding="ascii", errors="replace") as status:
            for line in status:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def peak_rss_kb(pid: int) -> int | None:
    """``VmHWM``: the most memory *pid* has had resident, in KiB (None: gone or not Linux)."""
    return _status_kb(pid, "VmHWM")


def rss_kb(pid: int) -> int | None:
    """``VmRSS``: what *pid* has resident now, in KiB."""
    return _status_kb(pid, "VmRSS")


def _stat_fields(pid: int) -> list[str] | None:
    return _stat_fields_path(PROC / str(pid) / "stat")


def _stat_fields_path(path: Path) -> list[str] | None:
    try:
        raw = path.read_text("ascii", errors="replace")
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: split after its last ")".
    return raw[raw.rfind(")") + 2 :].split()


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds *pid* has used (all its threads; not its children)."""
    fields = _stat_fields(pid)
    if fields is None or len(fields) < 13:
        return None
    # After the name: state(0) ppid(1) ... utime(11) stime(12).
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def main_thread_cpu_seconds(pid: int) -> float | None:
    """CPU seconds of *pid*'s main thread alone (for the daemon: the trio event loop)."""
    fields = _stat_fields_path(PROC / str(pid) / "task" / str(pid) / "stat")
    if fields is None or len(fields) < 13:
        return None
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def children_of(pid: int) -> list[int]:
    """Every live descendant of *pid* (found by parent id; empty when /proc is absent)."""
    parents: dict[int, int] = {}
    try:
        entries = list(PROC.iterdir())
    except OSError:
        return []
    for entry in entries:
        if not entry.name.isdigit():
            continue
        fields = _stat_fields(int(entry.name))
        if fields is not None and len(fields) > 1:
            parents[int(entry.name)] = int(fields[1])
    found: list[int] = []
    frontier = [pid]
    while frontier:
        parent = frontier.pop()
        kids = [child for child, ppid in parents.items() if ppid == parent]
        found += kids
        frontier += kids
    return found


def _command(pid: int) -> str:
    try:
        raw = (PROC / str(pid) / "cmdline").read_bytes()
    except OSError:
        return "?"
    return " ".join(part.decode("utf-8", "replace") for part in raw.split(b"\0") if part)


@dataclass(frozen=True, slots=True)
class ProcessPeak:
    """One process seen while sampling: its peak RSS and CPU time at the last reading."""

    pid: int
    command: str
    peak_rss_mb: float
    cpu_s: float


@dataclass(frozen=True, slots=True)
class SampledMemory:
    """What `ProcessSampler` saw: the daemon, and each process it started."""

    daemon_peak_rss_mb: float | None
    children: tuple[ProcessPeak, ...]

    @property
    def children_peak_rss_mb(self) -> float | None:
        """The largest peak of any one child (they run one at a time: a restarted
        embedding worker replaces the one before it)."""
        return max((c.peak_rss_mb for c in self.children), default=None)


class ProcessSampler:
    """A background thread polling the peak RSS of *pid* and its descendants.

    Use as a context manager around the part of a benchmark to watch; the
    result is `memory` after exit. Each poll lists /proc (a few ms), so the
    default interval keeps its cost to well under 1% of one core.
    """

    def __init__(self, pid: int, interval: float = 0.5) -> None:
        self._pid = pid
        self._interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="procstat", daemon=True)
        self._peaks: dict[int, tuple[str, int, float]] = {}
        self._daemon_kb: int | None = None
        self.memory: SampledMemory | None = None

    def __enter__(self) -> ProcessSampler:
        self._poll()
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._thread.join()
        self._poll()
        self.memory = self.snapshot()

    def snapshot(self) -> SampledMemory:
        children = tuple(
            ProcessPeak(pid, command, round(kb / 1024, 1), round(cpu, 2))
            for pid, (command, kb, cpu) in sorted(self._peaks.items())
        )
        daemon = None if self._daemon_kb is None else round(self._daemon_kb / 1024, 1)
        return SampledMemory(daemon_peak_rss_mb=daemon, children=children)

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            self._poll()

    def _poll(self) -> None:
        kb = peak_rss_kb(self._pid)
        if kb is not None:
            self._daemon_kb = max(kb, self._daemon_kb or 0)
        for child in children_of(self._pid):
            peak = peak_rss_kb(child)
            cpu = cpu_seconds(child)
            if peak is None or cpu is None:
                continue
            known = self._peaks.get(child)
            command = known[0] if known is not None else _command(child)
            self._peaks[child] = (command, max(peak, known[1] if known else 0), cpu)
