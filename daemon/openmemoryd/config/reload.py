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
import time
from collections.abc import Iterator, Sequence
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


RELOAD_FAILED: Final = "the config file did not load"
"""How the `status` issue of a failed reload begins (`doctor` picks it out)."""

WAITS_FOR_RESTART: Final = "config changes wait for a restart"
"""How the `status` issue of reloaded changes that need a restart begins."""


@dataclass(frozen=True, slots=True)
class ReloadState:
    """What the reloads so far leave for `status` to say.

    The log alone was not enough: a reload that failed, or changes that wait
    for a restart, went unnoticed by whoever ran ``kill -HUP`` and then
    looked at ``omem-client status``. A failure is reported until a reload
    succeeds; the changes that wait for a restart are those of the last
    config that loaded (a failed reload leaves them as they were, since the
    running config did not change either).
    """

    error: str | None = None  # why the last reload failed; None when it loaded
    failed_at: float = 0.0  # when, as time.time()
    waiting: tuple[str, ...] = ()  # loaded changes not applied until a restart

    def failed(self, error: str, at: float) -> ReloadState:
        return dataclasses.replace(self, error=error, failed_at=at)

    def loaded(self, waiting: Sequence[str]) -> ReloadState:
        return ReloadState(waiting=tuple(waiting))

    def issues(self, pid: int) -> tuple[str, ...]:
        """The `status` issues, each ending with what to do about it."""
        issues: list[str] = []
        if self.error is not None:
            when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.failed_at))
            issues.append(f"{RELOAD_FAILED} at {when}: {self.error}; {reload_fix(pid)}")
        if self.waiting:
            issues.append(f"{WAITS_FOR_RESTART}: {'; '.join(self.waiting)}; {RESTART_FIX}")
        return tuple(issues)


def reload_fix(pid: int) -> str:
    """What to do about a reload that failed, as its `status` issue ends."""
    return (
        "the daemon still runs with the previous config; fix the file and reload "
        f"(kill -HUP {pid} / systemctl --user reload openmemoryd)"
    )


RESTART_FIX: Final = (
    "restart openmemoryd to apply them (systemctl --user restart openmemoryd, "
    "or stop it and start it again)"
)
"""What to do about changes that wait for a restart, as their issue ends."""


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
