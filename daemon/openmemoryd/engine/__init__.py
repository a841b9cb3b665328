"""The per-workspace engine: store, indexer, search and memory operations."""

from __future__ import annotations

from openmemoryd.engine.engine import Engine, EngineStatus, ProgressFn, open_engine

__all__ = ["Engine", "EngineStatus", "ProgressFn", "open_engine"]
