"""The index database: schema, connections, reads and writes."""

from __future__ import annotations

from openmemoryd.store.db import (
    BUSY_TIMEOUT_MS,
    OpenedIndex,
    get_meta,
    load_vector_extension,
    open_index,
    open_reader,
    set_meta,
)
from openmemoryd.store.reads import (
    SKIPPED_NOTE,
    ChunkRecord,
    IndexedFile,
    RowidRange,
    SourceTotals,
    chunk_count,
    chunk_records,
    dated_chunks,
    file_mtimes,
    file_notes,
    highest_chunk_id,
    indexed_file,
    indexed_files,
    lexical_candidates,
    source_totals,
)
from openmemoryd.store.rows import InnerHeadings
from openmemoryd.store.schema import APPLICATION_ID, SCHEMA_VERSION
from openmemoryd.store.sessions import (
    SessionState,
    advance_session,
    session_state,
    session_states,
)
from openmemoryd.store.writes import (
    ChunkRow,
    FileState,
    count_access,
    delete_file,
    replace_file,
    replace_file_in_parts,
    touch_file,
)

__all__ = [
    "APPLICATION_ID",
    "BUSY_TIMEOUT_MS",
    "SCHEMA_VERSION",
    "SKIPPED_NOTE",
    "ChunkRecord",
    "ChunkRow",
    "FileState",
    "IndexedFile",
    "InnerHeadings",
    "OpenedIndex",
    "RowidRange",
    "SessionState",
    "SourceTotals",
    "advance_session",
    "chunk_count",
    "chunk_records",
    "count_access",
    "dated_chunks",
    "delete_file",
    "file_mtimes",
    "file_notes",
    "get_meta",
    "highest_chunk_id",
    "indexed_file",
    "indexed_files",
    "lexical_candidates",
    "load_vector_extension",
    "open_index",
    "open_reader",
    "replace_file",
    "replace_file_in_parts",
    "session_state",
    "session_states",
    "set_meta",
    "source_totals",
    "touch_file",
]
