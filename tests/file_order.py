"""The order in which pytest-xdist hands test files to its workers: longest first.

With ``--dist loadfile`` a file runs whole on one worker, and xdist by default
queues files by their number of tests, most first. The longest files here have
one to three tests (a benchmark run, the kill -9 loop, the 50 MB file), so they
were queued last, and the suite ended with one worker alone on them while the
other core idled for half a minute or more. Queuing files longest first (the
classic greedy schedule) leaves the short unit files for the end, where they
even out the two workers' finishing times.

`order_by_expected_duration` sorts the collected items by file, keeping each
file's own order of tests; ``--no-loadscope-reorder`` (in pyproject's addopts)
makes xdist queue the files in that order instead of by count. The expected
durations are measured, not computed: seconds of test time per file (setup,
call and teardown summed, from ``--durations=0``). Only their order matters,
and a stale figure only costs a less even finish, never a result. Files not
listed (each takes under about two seconds) follow, most tests first, as xdist
would have queued them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Protocol, TypeVar

# Seconds of test time per file, on a 2-core machine under load (2026-11-25).
EXPECTED_SECONDS: dict[str, float] = {
    "test_e2e_journal.py": 63,
    "test_reliability_crash.py": 47,
    "test_mcp_bridge.py": 41,
    "test_bench_suite.py": 38,
    "test_e2e_log.py": 35,
    "test_e2e_journal_saves.py": 35,
    "test_reliability_fuzz.py": 33,
    "test_bench_search_scale.py": 33,
    "test_reliability_bad_input.py": 32,
    "test_doctor.py": 31,
    "test_e2e_cli.py": 30,
    "test_e2e_unrelated_notes.py": 30,
    "test_e2e_redaction.py": 30,
    "test_async_client.py": 30,
    "test_e2e_one_shot.py": 29,
    "test_e2e_watch.py": 27,
    "test_e2e_compact.py": 26,
    "test_e5.py": 25,
    "test_e2e_agent_ops.py": 24,
    "test_e2e_method_table.py": 24,
    "test_e2e_honest_empty.py": 23,
    "test_reliability_runtime_faults.py": 22,
    "test_e2e_session_ops.py": 21,
    "test_e2e_workspace_gone.py": 21,
    "test_cli_conventions.py": 21,
    "test_e2e_log_semantic.py": 21,
    "test_reliability_load.py": 21,
    "test_e2e_daemon.py": 19,
    "test_e2e_semantic.py": 19,
    "test_minilm.py": 18,
    "test_e2e_tasks.py": 18,
    "test_e2e_http.py": 17,
    "test_e2e_mcp_profiles.py": 16,
    "test_reliability_corruption.py": 13,
    "test_init_cursor.py": 12,
    "test_e2e_batch.py": 12,
    "test_rebuild.py": 11,
    "test_watcher.py": 11,
    "test_e5_reference.py": 5,
    "test_readme_tour.py": 9,
    "test_indexer.py": 9,
    "test_wizard.py": 9,
    "test_e2e_other_user.py": 9,
    "test_e2e_quantised.py": 9,
    "test_index_stream.py": 8,
    "test_socket_activation.py": 8,
    "test_e2e_archive.py": 7,
    "test_bench_locomo.py": 7,
    "test_chunker.py": 7,
    "test_rerank_providers.py": 5,
    "test_e2e_workspaces.py": 5,
    "test_e2e_keyword_merge.py": 5,
    "test_e2e_head_estimate.py": 5,
    "test_e2e_crosslingual.py": 5,
    "test_embed_remote.py": 5,
    "test_reliability_provider.py": 5,
    "test_cli_lean.py": 5,
    "test_bench_smoke.py": 4.5,
    "test_search_budget.py": 4,
    "test_keyword_merge.py": 4,
    "test_bench_freshness.py": 4,
    "test_vectors.py": 3,
    "test_service_install.py": 3,
    "test_salience.py": 3,
    "test_embed_batch.py": 3,
}


class _Item(Protocol):
    @property
    def nodeid(self) -> str: ...


T = TypeVar("T", bound=_Item)


def _file_of(item: _Item) -> str:
    return item.nodeid.split("::", 1)[0]


def order_by_expected_duration(items: Iterable[T]) -> list[T]:
    """*items* grouped by file, the files longest first (see the module docstring)."""
    items = list(items)
    counts = Counter(_file_of(item) for item in items)
    first_seen: dict[str, int] = {}
    for item in items:
        first_seen.setdefault(_file_of(item), len(first_seen))

    def key(item: _Item) -> tuple[float, int, int]:
        path = _file_of(item)
        expected = EXPECTED_SECONDS.get(path.rsplit("/", 1)[-1], 0.0)
        return (-expected, -counts[path], first_seen[path])

    return sorted(items, key=key)
