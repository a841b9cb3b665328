"""The MCP tools' arguments: what the model may send, and what it reads about it.

Each tool's arguments are one msgspec Struct, which both generates the
``inputSchema`` the host shows the model and checks the arguments that come
back, so the two cannot disagree. Fields a caller leaves out stay UNSET and
reach the daemon as "use the config".
"""

from __future__ import annotations

from datetime import date
from typing import Annotated, Final, Literal, TypeVar

import msgspec
from msgspec import UNSET, Meta, UnsetType

from omem_protocol import (
    MAX_LIMIT,
    MAX_LOG_CHARS,
    MAX_QUERY_CHARS,
    MAX_SESSION_ITEMS,
    MAX_TASK_CHARS,
    MAX_TASK_REFS,
)

T = TypeVar("T")


# Fields left out by the caller stay UNSET, which the schema shows as simply
# optional (no `null` alternative) and the daemon reads as "use the config".
Limit = Annotated[int, Meta(ge=1, le=MAX_LIMIT)]
Score = Annotated[float, Meta(ge=0.0, le=1.0)]
Query = Annotated[str, Meta(min_length=1, description="What to look for, in any language.")]
# Named `date`, as HTTP and the CLI (`--date`) name it; `today`, its first
# name here, is still taken (`DATE_ALIASES`) but no longer shown.
Day = Annotated[
    date, Meta(description="Your today as YYYY-MM-DD, when it differs from this machine's.")
]
DATE_ALIASES: Final = {"today": "date"}


ScopeArg = Annotated[
    Literal["project", "global", "all"],
    Meta(
        description="project: this workspace's memory (default); global: the user-wide "
        "memory; all: both together (each hit names its workspace)."
    ),
]
TokenBudget = Annotated[
    int,
    Meta(
        ge=1,
        le=100_000,
        description="Token budget for the answer: the best hits whole, later ones as "
        "their best line, as many as fit.",
    ),
]


class _Args(msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True):
    """Base of the tools' arguments: a misspelt argument is an error the model can see,
    not a silently ignored wish."""


class StatusArgs(_Args, frozen=True):
    """memory_status takes no arguments."""


class SearchArgs(_Args, frozen=True):
    query: Query
    limit: Annotated[Limit, Meta(description="Maximum number of hits (default 6).")] | UnsetType = (
        UNSET
    )
    min_score: (
        Annotated[
            Score,
            Meta(
                description="Only hits scoring at least this, 0 to 1 (default 0.35; when nothing "
                "reaches the default, only hits holding every word of the query come back)."
            ),
        ]
        | UnsetType
    ) = UNSET
    sources: (
        Annotated[
            list[Literal["memory", "sessions"]],
            Meta(
                description="Only these sources: memory (the Markdown notes), sessions "
                "(transcripts of past agent conversations). Default: both."
            ),
        ]
        | UnsetType
    ) = UNSET
    agent: (
        Annotated[str, Meta(min_length=1, description="Only this agent's session transcripts.")]
        | UnsetType
    ) = UNSET
    fresh: Annotated[
        bool,
        Meta(
            description="First wait (~40 ms) until every change already made to the files is "
            "indexed; set it right after editing memory files yourself."
        ),
    ] = False
    max_tokens: TokenBudget | UnsetType = UNSET
    scope: ScopeArg | UnsetType = UNSET


class GetArgs(_Args, frozen=True):
    path: Annotated[
        str,
        Meta(
            min_length=1,
            description="Memory file relative to the workspace, e.g. MEMORY.md or "
            "memory/2026-11-23.md; or a hit's place, memory/2026-11-23.md:5-7 or "
            "memory/2026-11-23.md#L5-L7, for those lines alone (and no from_line, lines "
            "or to_line).",
        ),
    ]
    from_line: (
        Annotated[int, Meta(ge=1, description="First line to return, 1-based (default 1).")]
        | UnsetType
    ) = UNSET
    lines: (
        Annotated[int, Meta(ge=1, description="How many lines (default: to the end).")] | UnsetType
    ) = UNSET
    to_line: (
        Annotated[int, Meta(ge=1, description="Last line to return, instead of lines.")] | UnsetType
    ) = UNSET


class AppendArgs(_Args, frozen=True):
    text: Annotated[
        str, Meta(min_length=1, description="The note, in Markdown, as it should read.")
    ]
    path: (
        Annotated[
            str,
            Meta(
                min_length=1,
                description="Memory file to append to, e.g. PROJECT.md "
                "(default: today's memory/YYYY-MM-DD.md).",
            ),
        ]
        | UnsetType
    ) = UNSET


class RecallArgs(_Args, frozen=True):
    query: Annotated[
        str,
        Meta(
            min_length=1,
            description="The user's request or the topic, in any language (5 characters or more).",
        ),
    ]
    limit: (
        Annotated[Limit, Meta(description="How many memories at most (default 3).")] | UnsetType
    ) = UNSET
    min_score: (
        Annotated[Score, Meta(description="Only memories scoring at least this (default 0.3).")]
        | UnsetType
    ) = UNSET


class MessageArg(msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True):
    """One message of the conversation, its text as ``content`` or ``text``.

    Both names are taken, as the HTTP API and the CLI take them: chat APIs
    (and models copying them) send ``content``, the daemon's wire and HTTP
    callers send ``text``, and an agent moving from one surface to another
    was refused ("unknown field `text`"). Both are in the schema, so a host
    that checks arguments against it lets either through.
    """

    role: Annotated[
        str, Meta(min_length=1, description="user, assistant or system; only user messages count.")
    ]
    content: (
        Annotated[str, Meta(description="The message text, verbatim (or give it as text).")]
        | UnsetType
    ) = UNSET
    text: (
        Annotated[str, Meta(description="Another name for content: give one of the two.")]
        | UnsetType
    ) = UNSET

    def __post_init__(self) -> None:
        if self.content is UNSET and self.text is UNSET:
            raise ValueError("a message needs its text, as content or as text")
        if self.content is not UNSET and self.text is not UNSET:
            raise ValueError("give a message's content or its text, not both")

    @property
    def said(self) -> str:
        """The message's text, whichever name it came under."""
        said = self.text if isinstance(self.content, UnsetType) else self.content
        assert not isinstance(said, UnsetType)  # __post_init__ saw to that
        return said


class CaptureArgs(_Args, frozen=True):
    messages: Annotated[
        list[MessageArg],
        Meta(
            min_length=1,
            description="The messages to consider, e.g. the user's last message; only role "
            "'user' ones can become memories.",
        ),
    ]
    max_captures: (
        Annotated[int, Meta(ge=1, le=20, description="Write at most this many (default 3).")]
        | UnsetType
    ) = UNSET


class ForgetArgs(_Args, frozen=True):
    citation: (
        Annotated[
            str,
            Meta(
                min_length=1,
                description="Where the memory is: memory/2026-11-23.md#L5 or #L5-L7, as "
                "memory_recall and memory_capture cite it (a search hit's path:5-7 works too).",
            ),
        ]
        | UnsetType
    ) = UNSET
    text: (
        Annotated[str, Meta(min_length=1, description="The exact text of the line to forget.")]
        | UnsetType
    ) = UNSET
    query: (
        Annotated[
            str,
            Meta(
                min_length=1,
                description="What to forget, in words; removes only a single clear match.",
            ),
        ]
        | UnsetType
    ) = UNSET
    all: Annotated[
        bool, Meta(description="With text: forget every line saying it, not only a unique one.")
    ] = False

    def __post_init__(self) -> None:
        given = [v for v in (self.citation, self.text, self.query) if v is not UNSET]
        if len(given) != 1:
            raise ValueError("give exactly one of citation, text or query")


class PrimerArgs(_Args, frozen=True):
    budget: (
        Annotated[int, Meta(ge=50, le=200_000, description="Token budget (default 1000).")]
        | UnsetType
    ) = UNSET
    private: Annotated[
        bool,
        Meta(
            description="True only in a one-to-one conversation with the user: adds MEMORY.md, "
            "which must never reach a group conversation."
        ),
    ] = False
    date: Day | UnsetType = UNSET


class FlushCheckArgs(_Args, frozen=True):
    session: Annotated[
        str, Meta(min_length=1, description="Your session id (letters, digits, '.', '_', '-').")
    ]
    tokens: Annotated[int, Meta(ge=0, description="Tokens the conversation uses now.")]
    context_window: Annotated[int, Meta(ge=1, description="The model's context window, in tokens.")]
    compaction_count: (
        Annotated[
            int,
            Meta(
                ge=0, description="Compactions so far in this session; a new count is a new cycle."
            ),
        ]
        | UnsetType
    ) = UNSET
    agent: Annotated[str, Meta(min_length=1, description="Your agent name.")] | UnsetType = UNSET
    read_only: Annotated[
        bool, Meta(description="True when you cannot write to the memory workspace.")
    ] = False
    date: Day | UnsetType = UNSET


Note = Annotated[str, Meta(min_length=1, max_length=MAX_QUERY_CHARS)]
TaskRef = Annotated[str, Meta(min_length=1, max_length=MAX_TASK_CHARS)]


class SessionEndArgs(_Args, frozen=True):
    request: (
        Annotated[Note, Meta(description="What the user asked for in this session, briefly.")]
        | UnsetType
    ) = UNSET
    learned: Annotated[
        list[Note],
        Meta(
            max_length=MAX_SESSION_ITEMS,
            description="Things learned that later sessions should know, one per item.",
        ),
    ] = []
    completed: Annotated[
        list[Note],
        Meta(
            max_length=MAX_SESSION_ITEMS,
            description="What was done, one per item; an item that is exactly an open task's "
            "text marks that task done.",
        ),
    ] = []
    next_steps: Annotated[
        list[TaskRef],
        Meta(
            max_length=MAX_SESSION_ITEMS,
            description="What remains to do, one short line each; each becomes an open task "
            "(unless the same task is already open).",
        ),
    ] = []
    agent: Annotated[str, Meta(min_length=1, description="Your agent name.")] | UnsetType = UNSET
    session: Annotated[str, Meta(min_length=1, description="Your session id.")] | UnsetType = UNSET

    def __post_init__(self) -> None:
        if self.request is UNSET and not (self.learned or self.completed or self.next_steps):
            raise ValueError("give at least one of request, learned, completed or next_steps")


class TasksArgs(_Args, frozen=True):
    status: Annotated[
        Literal["open", "done", "all"],
        Meta(description="Which tasks to list: open (default), done or all."),
    ] = "open"


class UpdateTasksArgs(_Args, frozen=True):
    action: Annotated[
        Literal["add", "done", "reopen", "remove"],
        Meta(
            description="add new open tasks; mark tasks done; reopen done tasks; remove tasks "
            "from the list altogether."
        ),
    ]
    tasks: Annotated[
        list[TaskRef],
        Meta(
            min_length=1,
            max_length=MAX_TASK_REFS,
            description="For add: the new tasks' texts. Otherwise: task ids (as memory_tasks "
            "lists them) or texts (exact, or a part matching only one task).",
        ),
    ]


class LogArgs(_Args, frozen=True):
    content: Annotated[
        str,
        Meta(
            min_length=1,
            max_length=MAX_LOG_CHARS,
            description="One memory, stated as a fact in a sentence, e.g. 'The user prefers "
            "dark mode in every editor' or '我们决定用 Postgres 16'.",
        ),
    ]
    type: (
        Annotated[
            Literal["preference", "decision", "lesson", "fact", "project", "note"],
            Meta(
                description="preference, decision, lesson (MEMORY.md sections), fact (about "
                "the user: USER.md), project (PROJECT.md), note (today's daily file). "
                "Default: classified from the content."
            ),
        ]
        | UnsetType
    ) = UNSET
    replace: Annotated[
        bool,
        Meta(
            description="After a 'conflict' reply, and only if the user confirms the new "
            "version: swap the old memory's line for this one."
        ),
    ] = False
    dry_run: Annotated[
        bool, Meta(description="Only say where it would go and why; write nothing.")
    ] = False


class CompactArgs(_Args, frozen=True):
    session: Annotated[
        str, Meta(min_length=1, description="Your session id (letters, digits, '.', '_', '-').")
    ]
    messages: Annotated[
        list[MessageArg],
        Meta(min_length=1, description="The whole conversation so far, oldest first."),
    ]
    keep_last: (
        Annotated[int, Meta(ge=0, description="Recent messages to keep verbatim (default 5).")]
        | UnsetType
    ) = UNSET
    agent: Annotated[str, Meta(min_length=1, description="Your agent name.")] | UnsetType = UNSET


def given(value: T | UnsetType) -> T | None:
    """An argument's value, or None (the daemon's default) when the model left it out."""
    return None if isinstance(value, UnsetType) else value


class CompactCheckArgs(_Args, frozen=True):
    tokens: Annotated[int, Meta(ge=0, description="Tokens the conversation holds now.")]
    context_window: Annotated[int, Meta(ge=1, description="Your model's context window.")]
