"""Indexing: Markdown chunking and bringing files into the index."""

from __future__ import annotations

from openmemoryd.index.chunker import CHUNKER_VERSION, Chunk, chunk_markdown
from openmemoryd.index.indexer import FileOutcome, index_file, sha256_hex
from openmemoryd.index.resume import Grown
from openmemoryd.index.sessions import SessionOutcome, index_session
from openmemoryd.index.transcripts import (
    MAX_MESSAGE_CHARS,
    Message,
    ParsedSlice,
    Rendered,
    map_lines,
    message_time,
    parse_transcript,
    render,
)

__all__ = [
    "CHUNKER_VERSION",
    "MAX_MESSAGE_CHARS",
    "Chunk",
    "FileOutcome",
    "Grown",
    "Message",
    "ParsedSlice",
    "Rendered",
    "SessionOutcome",
    "chunk_markdown",
    "index_file",
    "index_session",
    "map_lines",
    "message_time",
    "parse_transcript",
    "render",
    "sha256_hex",
]
