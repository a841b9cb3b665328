"""What the model reads when the CLI's words would not do.

The tools return the CLI's rendering of the daemon's replies, but a model
has no shell and fewer options than the CLI: a log conflict must not offer
``force``, which no MCP tool takes; a hint must name a tool, not
``omem-client tasks --all``; an empty primer must say whether the files are
empty or the budget held nothing. Each profile supplies what its own tools
can do (`Profile.hints`, the *advice* of `log_answer`); what no tool can do
(`SHARED_HINTS`, and starting the daemon) is said as what to ask the user
to run.
"""

from __future__ import annotations

from collections.abc import Callable

import msgspec

from omem_client import _render
from omem_protocol import LogResult, Msg, PrimerResult

__all__ = [
    "CLI_ALL_TASKS",
    "CLI_FORGET",
    "CLI_GET",
    "CLI_INIT",
    "CLI_RESTORE",
    "CLI_RESTORE_TASKS",
    "CLI_STATUS",
    "CLI_SYNC",
    "CLI_TASK_IDS",
    "CLI_WATCHER_OFF",
    "HINTS",
    "REFUSALS",
    "SHARED_HINTS",
    "conflict_lead",
    "log_answer",
    "primer_answer",
]

# The hints the daemon and the CLI's rendering give as shell commands. An MCP
# agent has no shell: each profile says them with its own tools (`HINTS` here,
# the default profile's), or as something to ask the user.
CLI_TASK_IDS = "(see `omem-client tasks --all` for ids)"  # a task reference matched nothing
CLI_STATUS = "(see `omem-client status`)"  # written, but the index failed
CLI_SYNC = "add notes to the workspace or run `omem-client sync`"  # a search of an empty index
CLI_GET = " lines: omem-client get "  # the primer cut a file short
CLI_FORGET = "Forget one by its citation: omem-client forget PATH#Ln"  # forget found candidates

CLI_ALL_TASKS = "(--all shows the done ones too)"  # a listing of the open tasks
CLI_WATCHER_OFF = "(changes are found by the periodic check and `omem-client sync`)"  # status
CLI_RESTORE = "(omem-client restore re-adds them)"  # status: appends a rewrite removed
CLI_RESTORE_TASKS = "(omem-client restore makes them again)"  # status: task changes removed
# status, and a write's error: the workspace was deleted or moved under the daemon
CLI_INIT = "`openmemoryd init` creates an empty workspace there"

HINTS: tuple[tuple[str, str], ...] = (
    (CLI_TASK_IDS, '(memory_tasks with status "all" lists every task with its id)'),
    (CLI_ALL_TASKS, '(memory_tasks with status "all" shows the done ones too)'),
    (CLI_STATUS, "(memory_status says why)"),
    (CLI_SYNC, "add notes with memory_append, or ask the user to run `omem-client sync`"),
    (CLI_GET, " lines: memory_get with path "),
    (CLI_FORGET, "Ask the user which one they mean, then call memory_forget with its citation."),
    (
        CLI_WATCHER_OFF,
        "(changes are found by the periodic check; the user can run `omem-client sync` "
        "to index them at once)",
    ),
)

# Hints no profile has a tool for, said the same in every profile: what to
# ask the user to run.
SHARED_HINTS: tuple[tuple[str, str], ...] = (
    (CLI_RESTORE, "(ask the user to run `omem-client restore`, which re-adds them)"),
    (CLI_RESTORE_TASKS, "(ask the user to run `omem-client restore`, which makes them again)"),
    (CLI_INIT, "ask the user to run `openmemoryd init`, which creates an empty workspace there"),
)

# Codes with which the daemon refuses a request before acting on it: nothing
# changed, which a tool's `Tool.when_refused` may spell out.
REFUSALS = frozenset({"bad_request", "not_found", "forbidden", "too_large"})


def primer_answer(result: PrimerResult, ask_again: str) -> str:
    """The primer, or, when it is empty, why: no memories yet, or none that fit.

    "The memory files are empty" after a budget too small for anything made
    a model conclude it knew nothing about the user. *ask_again* says how
    to see more (``{budget}`` is the smallest budget that shows something).
    """
    lines = [result.text]
    if not result.text:
        # the daemon names, for each file left out for want of room, the budget that shows it
        needed = [n for n in map(_render.budget_showing, result.omitted) if n is not None]
        if needed:
            smallest = min(needed)
            lines = [
                f"Nothing fitted in a budget of {result.budget} tokens, but the memory files "
                f"are not empty: a budget of {smallest} tokens shows the first of them. "
                + ask_again.format(budget=smallest)
            ]
        else:
            lines = ["Nothing to start with: the memory files hold no memories yet."]
    if result.omitted:
        lines += ["", "Left out: " + "; ".join(result.omitted)]
    return "\n".join(lines)


# The daemon's conflict reason offers its own parameters, force among them;
# no MCP tool has force (a model may not override the gate), so it goes.
_DAEMON_OPTIONS = "; pass replace to swap that line for this one, or force to keep both"
# Word overlap from which the daemon alone calls two memories a conflict (its
# CONFLICT_AT): such a pair differs in a detail; below it, only in meaning.
_SAME_WORDING = 0.85
# How the daemon's conflict reason names the detail that changed
# ("…, differing in 90 → 30: a possible conflict …").
_CHANGED_DETAIL = ", differing in "


def log_answer(result: LogResult, advice: Callable[[LogResult], str]) -> tuple[str, Msg]:
    """A log's reply in a tool's words: after a conflict, *advice* says
    what this profile's tools can do about it (the CLI's flags they cannot)."""
    if result.status != "conflict":
        return "\n".join(_render.log_lines(result)), result
    reasons = tuple(reason.replace(_DAEMON_OPTIONS, "") for reason in result.reasons)
    result = msgspec.structs.replace(result, reasons=reasons)
    lines = _render.log_lines(result)[:-1]  # the last line names the CLI's flags
    return "\n".join([*lines, f"{conflict_lead(result)} {advice(result)}"]), result


def conflict_lead(result: LogResult) -> str:
    """What the conflict likely is, so the question put to the user fits it.

    Nearly the same words with a detail changed ("dark mode" / "light
    mode") are one memory in two versions, and so is a pair in which the
    daemon found a number, a name or a negation changed and nothing else
    ("I prefer Neovim" / "I prefer Emacs", a reason "differing in Neovim →
    Emacs"), however few of its words match. Two sentences close only in
    meaning (a missing .env file / missing migrations, both about a staging
    deploy) may well be two different facts.
    """
    similar = result.similar
    detail = any(_CHANGED_DETAIL in reason for reason in result.reasons)
    if detail or (similar is not None and similar.lexical >= _SAME_WORDING):
        return "The two differ in a detail: ask the user which version is right."
    return (
        "The two are close in meaning but not in wording, so they may be two different "
        "facts: ask the user whether the new one replaces the old one."
    )
