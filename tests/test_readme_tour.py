"""The README's five-minute tour, run as pasted, against a real daemon.

The block between ``<!-- tour -->`` and ``<!-- /tour -->`` is run by bash
with ``set -e`` in a throwaway home (config, state and runtime directories
of its own), with this interpreter's environment in place of the
``. .venv/bin/activate`` line. Every command must succeed, and the outputs
the comments promise must appear.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[1]


def tour() -> list[str]:
    readme = (ROOT / "README.md").read_text("utf-8")
    match = re.search(r"<!-- tour -->\n```sh\n(.*?)```\n<!-- /tour -->", readme, re.S)
    assert match is not None, "README has no tour block"
    return [line for line in match.group(1).splitlines() if line.strip()]


def test_the_tour_runs_as_pasted(tmp_path: Path) -> None:
    lines = tour()
    assert lines[0] == ". .venv/bin/activate"
    run_dir = tmp_path / "run"
    run_dir.mkdir(mode=0o700)
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENMEMORY")}
    env.update(
        HOME=str(tmp_path / "home"),
        XDG_CONFIG_HOME=str(tmp_path / "home" / ".config"),
        XDG_STATE_HOME=str(tmp_path / "home" / ".local" / "state"),
        XDG_RUNTIME_DIR=str(run_dir),
        PATH=str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", ""),
    )
    (tmp_path / "home").mkdir()
    script = "set -euo pipefail\n" + "\n".join(
        f"echo '>>> {line.split('#')[0].strip()}'\n{line}" for line in lines[1:]
    )
    try:
        result = subprocess.run(
            ["bash", "-c", script],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
    finally:  # never leave a daemon behind, whatever failed
        subprocess.run(
            [sys.executable, "-m", "openmemoryd", "stop"], env=env, capture_output=True, check=False
        )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    out = result.stdout
    step = {
        chunk.split("\n", 1)[0]: chunk.split("\n", 1)[1] if "\n" in chunk else ""
        for chunk in out.split(">>> ")[1:]
    }
    assert "openmemoryd started" in result.stderr + out
    assert "oolong" in step["omem-client search oolong"]
    assert "Redis" in step["omem-client search 缓存方案"]
    assert "No matches." in step['omem-client search "lattice quantum chromodynamics"']
    assert "stopped" in out + result.stderr
