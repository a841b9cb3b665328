"""Memory operations on the Markdown files themselves: append and get."""

from __future__ import annotations

from openmemoryd.memory.append import Appended, append_block, normalize_block, target_path
from openmemoryd.memory.get import read_lines
from openmemoryd.memory.transcript import TurnsWritten, append_turns, turn_record

__all__ = [
    "Appended",
    "TurnsWritten",
    "append_block",
    "append_turns",
    "normalize_block",
    "read_lines",
    "target_path",
    "turn_record",
]
