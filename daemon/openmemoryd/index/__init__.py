"""Indexing: Markdown chunking and bringing files into the index."""

from __future__ import annotations

from openmemoryd.index.chunker import CHUNKER_VERSION, Chunk, chunk_markdown
from openmemoryd.index.indexer import FileOutcome, index_file, sha256_hex

__all__ = ["CHUNKER_VERSION", "Chunk", "FileOutcome", "chunk_markdown", "index_file", "sha256_hex"]
