"""The client stays light: no daemon runtime on import, a quick --help."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = (
    "anyio",
    "trio",
    "apsw",
    "sqlite_vec",
    "watchfiles",
    "numpy",
    "openmemoryd",
    "httpx",
    "mcp",
    "pydantic",
)


def loaded_modules(code: str) -> set[str]:
    script = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    ).stdout
    return {name.split(".")[0] for name in json.loads(out.strip().splitlines()[-1])}


@pytest.mark.parametrize(
    "code",
    [
        "import omem_client",
        "from omem_client import Client",
        "import omem_client.cli",
        "import omem_protocol",
    ],
)
def test_importing_the_client_loads_no_daemon_runtime(code: str) -> None:
    assert loaded_modules(code).isdisjoint(HEAVY)


def test_the_protocol_needs_only_msgspec_and_the_standard_library() -> None:
    baseline = loaded_modules("import msgspec, msgspec.msgpack, msgspec.toml")
    added = loaded_modules("import omem_protocol") - baseline - set(sys.stdlib_module_names)
    assert added == {"omem_protocol"}


def test_client_help_lists_every_command() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "omem_client", "--help"], capture_output=True, text=True, check=True
    )
    for command in ("search", "recall", "capture", "forget", "primer", "flush-check"):
        assert command in result.stdout
