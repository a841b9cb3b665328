"""What a daemon start imports: only what every daemon needs.

Each `openmemoryd` start pays for its imports, and tests, service restarts
and `openmemoryd index` start it often. httpx (with its CLI's click, rich
and pygments when those are installed) is for remote services only, so the
daemon's entry points must not import it; the remote providers, the
reranker, the chat models and the doctor's secret check import it where
they use it. numpy, the local model's code and the sqlite-vec package
(whose ``__init__`` imports numpy) are for vectors only: a keyword-only
daemon never imports them, and one with vectors imports them when it
first uses them (~0.13 CPU-seconds of every start before).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from conftest import Daemon

CHECK = """
import sys
import openmemoryd.cli  # noqa: F401  (the `openmemoryd` command, before it parses)
import openmemoryd.app  # noqa: F401
LATER = ("httpx", "openmemoryd.wizard", "numpy", "sqlite_vec", "openmemoryd.embed.local")
loaded = sorted(m for m in LATER if m in sys.modules)
sys.exit(f"imported at start: {loaded}" if loaded else 0)
"""


def test_a_daemon_start_imports_no_remote_client_wizard_or_vector_code() -> None:
    done = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


@pytest.mark.e2e
def test_a_keyword_only_daemon_never_loads_numpy(daemon: Daemon) -> None:
    """Through a running daemon (keyword only, the tests' default): after a
    sync, searches and an append, numpy's compiled core is not mapped into
    the process."""
    (daemon.env.workspace / "memory").mkdir(exist_ok=True)
    (daemon.env.workspace / "memory" / "notes.md").write_text("# Notes\n\n- ferry timetable\n")
    with daemon.client() as client:
        client.sync()
        assert client.search("ferry").results
        client.append("the ferry leaves at nine", path="memory/notes.md")
        assert client.search("nine").results
    assert daemon.proc is not None
    maps = Path(f"/proc/{daemon.proc.pid}/maps")
    if not maps.exists():
        pytest.skip("no /proc here")
    assert "_multiarray_umath" not in maps.read_text()
