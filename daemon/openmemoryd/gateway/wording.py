"""The HTTP API's errors, and the advice in its replies, in an HTTP caller's words.

`errors.invalid_request` turns msgspec's wording into a sentence, but it
sees only msgspec's message. Here the Params type is known, so two things
a curl user needs can be added on every HTTP route at once:

* a value outside a fixed set (``"scope": "galaxy"``) lists the values
  allowed, read from the field's type: msgspec says only "Invalid enum value";
* a field sent under its alias (``content`` for ``text``) is named as sent,
  and a missing field that has an alias says so, so the error does not send
  the caller to a name they did not use.

And advice the daemon gives as a shell command is said as the HTTP call
that does the same (`in_http_words`), in an error (``see `omem-client tasks
--all` for ids``) and in a successful reply alike (`reply_in_http_words`: a
status issue, a doctor check's fix, a primer's "more lines" marker): the
caller speaks HTTP, often from another language or machine, with no
``omem-client`` at hand. What only a person at the daemon's machine can do
(``openmemoryd init``) is said as that: ask the user to run it there. The
daemon's own messages keep their commands, so the CLI prints them as is.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from msgspec import inspect

from omem_protocol import Msg
from omem_protocol.advice import reword_advice
from openmemoryd.errors import invalid_request

__all__ = ["HTTP_HINTS", "allowed_values", "body_error", "in_http_words", "reply_in_http_words"]

_AT: Final = re.compile(r" - at `\$\.(?P<path>[^`]+)`$")
_ENUM: Final = re.compile(r"^Invalid enum value (?P<value>.+) - at `\$\.(?P<path>[^`]+)`$")
_MISSING: Final = re.compile(
    r"^Object missing required field `(?P<field>[^`]+)`(?: - at `\$\.(?P<at>[^`]+)`)?$"
)
_AT_DAEMON: Final = "on the machine where the daemon runs"
# (the daemon's words, the HTTP API's): each shell command the daemon's errors,
# status issues, doctor checks and primer markers name, as the request that
# does it, or, with no such request, as what to ask the user to run.
# tests/test_http_input.py checks that each is still said somewhere and that
# no command in those messages is left out, so a new or reworded hint cannot
# slip through. A longer phrase comes before any shorter one it holds.
HTTP_HINTS: Final = (
    # an error: a task reference matched nothing
    (
        "(see `omem-client tasks --all` for ids)",
        '(POST /tasks with {"status": "all"} lists every task with its id)',
    ),
    # status issues, and the doctor's appends check
    ("(omem-client restore re-adds them)", "(POST /restore re-adds them)"),
    ("(omem-client restore makes them again)", "(POST /restore makes them again)"),
    (
        "omem-client restore --dry-run shows them; omem-client restore re-adds them",
        'POST /restore with {"dry_run": true} shows them; POST /restore re-adds them',
    ),
    # the doctor's watcher, files and index checks
    ("changes are only indexed by `omem-client sync`", "changes are only indexed by POST /sync"),
    ("(`omem-client status` lists them all)", "(the issues of GET /status list them all)"),
    ("(`omem-client status` shows it)", "(GET /status shows it)"),
    ("run `omem-client sync`; files it skips", "call POST /sync; files it skips"),
    ("are listed by `omem-client status`", "are listed by GET /status"),
    ("was skipped in `omem-client status`", "was skipped in the issues of GET /status"),
    # a primer's marker where it left lines out
    (" lines: omem-client get ", " lines: GET /get with path "),
    # a workspace gone or incomplete: only someone at the machine can make one
    (
        "`openmemoryd init` creates an empty workspace there",
        f"ask the user to run `openmemoryd init` {_AT_DAEMON}, which creates an empty "
        "workspace there",
    ),
    (
        "`openmemoryd init` creates it now",
        f"ask the user to run `openmemoryd init` {_AT_DAEMON}, which creates it now",
    ),
    (
        "`openmemoryd init` creates it (and never overwrites anything)",
        f"ask the user to run `openmemoryd init` {_AT_DAEMON}, which creates it (and never "
        "overwrites anything)",
    ),
    (
        "`openmemoryd init` then creates the folder",
        f"then ask the user to run `openmemoryd init` {_AT_DAEMON}, which creates the folder",
    ),
    (
        "(`openmemoryd start`, or `systemctl --user start openmemoryd`)",
        "(ask the user to run `openmemoryd start`, or `systemctl --user start openmemoryd`, "
        f"{_AT_DAEMON})",
    ),
)
_STEP: Final = re.compile(r"\[\d+\]|[^.\[\]]+")
_SEQUENCES: Final = (inspect.ListType, inspect.VarTupleType, inspect.SetType, inspect.FrozenSetType)


def body_error(
    detail: str,
    params: type[Any],
    renamed: Mapping[str, str],
    aliases_at: Mapping[str, Mapping[str, str]],
) -> str:
    """The message for msgspec's *detail* about a body decoded as *params*.

    *renamed* maps a field's path (``messages[0].text``) to the path the
    caller sent (``messages[0].content``); *aliases_at* maps an object's path
    (``""`` for the body, ``messages[0]``) to its aliases (alias -> field)."""
    at = _AT.search(detail)
    if at is not None and at["path"] in renamed:
        detail = f"{detail[: at.start()]} - at `$.{renamed[at['path']]}`"
    enum = _ENUM.match(detail)
    if enum is not None:
        values = allowed_values(params, enum["path"])
        if values:
            choices = ", ".join(map(str, values))
            return f"invalid request: `{enum['path']}` must be one of: {choices} ({detail})"
    message = invalid_request(detail)
    missing = _MISSING.match(detail)
    if missing is not None:
        for alias, name in aliases_at.get(missing["at"] or "", {}).items():
            if name == missing["field"]:
                message += f"; {alias!r} is accepted for {name!r}"
    return message


def allowed_values(params: type[Any], path: str) -> tuple[Any, ...]:
    """The values a ``Literal`` (or Enum) field at *path* (``scope``,
    ``turns[0].role``) of *params* takes; empty if it is not one."""
    info: inspect.Type | None = inspect.type_info(params)
    for step in _STEP.findall(path):
        info = _step(_unwrap(info), step)
    found = _unwrap(info)
    if isinstance(found, inspect.LiteralType):
        return tuple(found.values)
    if isinstance(found, inspect.EnumType):
        return tuple(member.value for member in found.cls)
    return ()


def _step(info: inspect.Type | None, step: str) -> inspect.Type | None:
    """The type one step (``[3]`` or a field name) inside *info*."""
    if step.startswith("["):
        return info.item_type if isinstance(info, _SEQUENCES) else None
    if isinstance(info, inspect.StructType):
        return next((f.type for f in info.fields if f.encode_name == step), None)
    return None


def _unwrap(info: inspect.Type | None) -> inspect.Type | None:
    """*info* without its constraints and without ``| None``."""
    while True:
        if isinstance(info, inspect.Metadata):
            info = info.type
        elif isinstance(info, inspect.UnionType):
            rest = [t for t in info.types if not isinstance(t, inspect.NoneType)]
            if len(rest) != 1:
                return info
            info = rest[0]
        else:
            return info


def in_http_words(message: str) -> str:
    """*message* with each shell hint of `HTTP_HINTS` said as its HTTP request."""
    for cli, http in HTTP_HINTS:
        message = message.replace(cli, http)
    return message


def reply_in_http_words(result: Msg) -> Msg:
    """A successful reply with the advice in its fields (`reword_advice`:
    status issues, doctor checks, primer markers) said as HTTP requests;
    what the memory holds is left as written."""
    return reword_advice(result, in_http_words)
