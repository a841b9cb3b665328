"""openmemoryd: the daemon that owns the memory index and serves agents.

Layout (mirrors the architecture): `config`, `workspace` (which files are
memory), `text` (tokens and CJK-aware terms), `index` (chunking, indexing),
`store` (SQLite), `search`, `memory` (append, get), `engine` (one
workspace), `api` (RPC methods), `server` (socket), `app` (lifecycle),
`cli`.
"""

from __future__ import annotations

from omem_protocol import __version__

__all__ = ["__version__"]
