"""Memory operations on the Markdown files themselves: append and get."""

from __future__ import annotations

from openmemoryd.memory.append import Appended, append_block, normalize_block, target_path
from openmemoryd.memory.get import read_lines

__all__ = ["Appended", "append_block", "normalize_block", "read_lines", "target_path"]
