"""The count `log` keeps on a line it saw again: ``- prefers oolong tea (×3)``.

Written by `memory.sections` and read back by salience ranking
(`search.salience`): one pattern, so the two cannot drift.
"""

from __future__ import annotations

from typing import Final

__all__ = ["COUNT_SUFFIX"]

# A line's trailing count: group 1 is N.
COUNT_SUFFIX: Final = r"[ \t]+\(×(\d+)\)[ \t]*$"
