"""Files on disk against files in the index, per source.

One definition for `status` and for `openmemoryd doctor` (which counts
without a running engine), so the two never disagree about what "not yet
indexed" means: a memory file is one Markdown file, a session is one
transcript, and a source appears as soon as either side has it. A file the
indexer skipped (binary, too large) has its row, so it counts as indexed
(the index is in step with the disk) and again as skipped (its text is not
searchable), which is what `status` and `doctor` show apart.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from omem_protocol import SourceCounts
from openmemoryd.store import SourceTotals
from openmemoryd.workspace import Scan, SessionFile


def count_sources(
    scan: Scan, sessions: Mapping[str, SessionFile], totals: Sequence[SourceTotals]
) -> tuple[SourceCounts, ...]:
    """Per-source counts, sorted by source name."""
    on_disk = Counter(f.source for f in scan.files.values())
    if sessions:
        on_disk["sessions"] = len(sessions)
    by_source = {t.source: t for t in totals}
    none = SourceTotals("", 0, 0)
    return tuple(
        SourceCounts(
            source=name,
            files_on_disk=on_disk.get(name, 0),
            files_indexed=by_source.get(name, none).files,
            chunks=by_source.get(name, none).chunks,
            files_skipped=by_source.get(name, none).skipped,
        )
        for name in sorted(set(on_disk) | set(by_source))
    )
