"""`export` as the daemon runs it: the archive is built in a worker thread
(it reads every memory file) with the daemon's own path policy, so it holds
exactly the files the index is built from."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

import trio

from omem_protocol import ExportResult
from openmemoryd.memory.archive import export_archive

if TYPE_CHECKING:
    from openmemoryd.engine.engine import Engine


async def export(engine: Engine, output: str) -> ExportResult:
    started = time.perf_counter()
    done = await trio.to_thread.run_sync(
        lambda: export_archive(
            engine.policy, Path(output), max_file_bytes=engine.config.index.max_file_bytes
        )
    )
    return ExportResult(
        path=str(done.path),
        files=done.files,
        bytes=done.bytes,
        skipped=done.skipped,
        took_ms=round((time.perf_counter() - started) * 1000, 3),
    )
