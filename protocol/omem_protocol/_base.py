"""The base of every wire type, and the limits and value types they share.

Schema-evolution rules, which keep old clients and new daemons talking (and
the reverse):

* a field added after a release always has a default;
* a field is never renamed, retyped or removed, and a tag is never reused;
* unknown fields are ignored (no ``forbid_unknown_fields`` on wire types).

Constraints declared with `msgspec.Meta` are enforced when the daemon decodes
a request, so out-of-range values come back as ``bad_request`` errors that
name the offending field.
"""

from __future__ import annotations

from typing import Annotated

import msgspec

# Limits that protect the daemon; a client sending more gets `bad_request`.
MAX_QUERY_CHARS = 8192
MAX_PATH_CHARS = 4096
MAX_APPEND_CHARS = 1_000_000
MAX_LOG_CHARS = 2000  # one memory, one bullet line
MAX_LIMIT = 100

NonNegInt = Annotated[int, msgspec.Meta(ge=0)]
LineNo = Annotated[int, msgspec.Meta(ge=1)]
Score = Annotated[float, msgspec.Meta(ge=0.0, le=1.0)]
SourceName = Annotated[str, msgspec.Meta(pattern=r"^[a-z][a-z0-9_-]{0,31}$")]
# What `sources` may name: the Markdown memory files, and agents' session transcripts.
KNOWN_SOURCES = ("memory", "sessions")
# The MCP bridge's tool profiles (`omem-client mcp --profile`); the first is
# the default. `openmemoryd init --mcp-profile` writes them into hosts' configs.
MCP_PROFILES = ("openmemory", "openclaw", "workany", "openclaw-memory")
AgentName = Annotated[str, msgspec.Meta(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")]
SessionId = Annotated[str, msgspec.Meta(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")]
MAX_TURNS = 1000
WirePath = Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_PATH_CHARS)]
WorkspaceName = Annotated[str, msgspec.Meta(pattern=r"^[a-z0-9][a-z0-9_-]{0,31}$")]
IsoDate = Annotated[str, msgspec.Meta(pattern=r"^\d{4}-\d{2}-\d{2}$")]

# session end and tasks
MAX_TASK_CHARS = 500
MAX_SESSION_ITEMS = 100
MAX_TASK_REFS = 100
SessionNote = Annotated[str, msgspec.Meta(max_length=MAX_QUERY_CHARS)]
TaskText = Annotated[str, msgspec.Meta(max_length=MAX_TASK_CHARS)]
MAX_COMPACT_MESSAGES = 10_000


class Msg(msgspec.Struct, tag_field="type", kw_only=True, frozen=True):
    """Base of every wire type.

    Subclasses repeat ``frozen=True``: msgspec inherits it anyway, but type
    checkers only see what each class statement says.
    """
