"""Benchmarks that drive the real openmemoryd, and the synthetic data they need."""

from __future__ import annotations

__all__: list[str] = []
