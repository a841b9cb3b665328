"""What a config reload (SIGHUP) may change in a running daemon.

Only settings read afresh on every request are applied: search defaults,
recall, capture, primer, flush, chat (`compact` builds its
chat client per call) and the log level. Everything else is fixed
when the daemon starts: paths and the socket (the instance locks and the
listener are bound to them), the index and embedding settings (a change
means a rebuild, which a restart does safely with the new index built beside
the old), the watcher and server limits. Those changes are reported as
needing a restart and are not applied, so a half-applied config can never
exist.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Final

import msgspec

from openmemoryd.config.model import Config

RELOADABLE: Final = frozenset(
    {"search", "recall", "capture", "primer", "flush", "log_level", "chat"}
)


@dataclass(frozen=True, slots=True)
class Change:
    key: str  # dotted, as in the file (``search.limit``)
    old: Any
    new: Any

    def __str__(self) -> str:
        return f"{self.key} {_shown(self.old)} -> {_shown(self.new)}"


def _shown(value: Any) -> str:
    """A value as the log shows it; None is a key the file leaves unset."""
    return "(unset)" if value is None else repr(value)


@dataclass(frozen=True, slots=True)
class Reload:
    config: Config  # the running config with the reloadable changes applied
    applied: tuple[Change, ...]
    needs_restart: tuple[Change, ...]


def plan_reload(running: Config, loaded: Config) -> Reload:
    """Split the differences between *running* and *loaded* into what can be
    applied now and what needs a restart; return the config to run with."""
    applied: list[Change] = []
    pending: list[Change] = []
    updates: dict[str, Any] = {}
    for field in dataclasses.fields(Config):
        old, new = getattr(running, field.name), getattr(loaded, field.name)
        if old == new:
            continue
        changes = list(_leaf_changes(field.name, old, new))
        if field.name in RELOADABLE:
            applied += changes
            updates[field.name] = new
        else:
            pending += changes
    return Reload(dataclasses.replace(running, **updates), tuple(applied), tuple(pending))


def _leaf_changes(key: str, old: Any, new: Any) -> Iterator[Change]:
    if isinstance(old, msgspec.Struct) and isinstance(new, msgspec.Struct):
        before, after = msgspec.to_builtins(old), msgspec.to_builtins(new)
        yield from _dict_changes(key, before, after)
    else:
        yield Change(key, _plain(old), _plain(new))


def _dict_changes(key: str, old: dict[str, Any], new: dict[str, Any]) -> Iterator[Change]:
    for name in sorted(old.keys() | new.keys()):
        before, after = old.get(name), new.get(name)
        if before == after:
            continue
        if isinstance(before, dict) and isinstance(after, dict) and name != "headers":
            yield from _dict_changes(f"{key}.{name}", before, after)
        elif "api_key" in name or name in ("headers", "token"):
            yield Change(f"{key}.{name}", "…", "…")  # secrets never reach the log
        else:
            yield Change(f"{key}.{name}", before, after)


def _plain(value: Any) -> Any:
    if isinstance(value, tuple):
        return [str(v) for v in value]
    return str(value) if not isinstance(value, int | float | str | bool | None) else value
