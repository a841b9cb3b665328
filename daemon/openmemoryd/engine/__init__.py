"""The per-workspace engine: store, indexer, search and memory operations."""

from __future__ import annotations

from openmemoryd.engine.engine import Engine
from openmemoryd.engine.hosts import ProgressFn
from openmemoryd.engine.opening import open_engine
from openmemoryd.engine.status_report import embedding_status, workspace_status

__all__ = ["Engine", "ProgressFn", "embedding_status", "open_engine", "workspace_status"]
