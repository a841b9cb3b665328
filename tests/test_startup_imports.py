"""What a daemon start imports: only what every daemon needs.

Each `openmemoryd` start pays for its imports, and tests, service restarts
and `openmemoryd index` start it often. httpx (with its CLI's click, rich
and pygments when those are installed) is for remote services only, so the
daemon's entry points must not import it; the remote providers, the
reranker, the chat models and the doctor's secret check import it where
they use it.
"""

from __future__ import annotations

import subprocess
import sys

CHECK = """
import sys
import openmemoryd.cli  # noqa: F401  (the `openmemoryd` command, before it parses)
import openmemoryd.app  # noqa: F401
loaded = sorted(m for m in ("httpx", "openmemoryd.wizard") if m in sys.modules)
sys.exit(f"imported at start: {loaded}" if loaded else 0)
"""


def test_a_daemon_start_does_not_import_httpx_or_the_wizard() -> None:
    done = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
