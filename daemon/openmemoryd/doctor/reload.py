"""The doctor's word on the daemon's last config reload (SIGHUP).

A reload that fails changes nothing and the daemon serves on, so nothing
else shows it: the daemon's `status` carries it as an issue, and this check
turns that issue into a doctor line with its fix. Changes that loaded but
wait for a restart are reported the same way.
"""

from __future__ import annotations

from collections.abc import Iterable

from omem_protocol import DoctorCheck
from openmemoryd.config.reload import RELOAD_FAILED, RESTART_FIX, WAITS_FOR_RESTART, reload_fix
from openmemoryd.doctor.report import warn

NAME = "reload"


def reload_check(issues: Iterable[str], pid: int, *, file_loads: bool) -> DoctorCheck | None:
    """A warning for a failed reload or changes waiting for a restart, or None.

    *issues* are the daemon's status issues; *file_loads* whether the config
    file loads now (fixed since the failed reload: only the reload is left to
    do). A warning, not a failure: the daemon works; a broken file fails the
    config check.
    """
    issues = list(issues)
    failed = next((i for i in issues if i.startswith(RELOAD_FAILED)), None)
    waiting = next((i for i in issues if i.startswith(WAITS_FOR_RESTART)), None)
    if failed is not None:
        # "the config file did not load at <time>": the error itself is the
        # config check's, or stale once the file loads again.
        detail = failed.removesuffix(f"; {reload_fix(pid)}").split(": ", 1)[0]
        detail += (
            "; the file loads now, but the daemon still runs with the previous config"
            if file_loads
            else " (the error is the config check's); the daemon still runs with the "
            "previous config"
        )
        if waiting is not None:
            detail += f"; {waiting.removesuffix(f'; {RESTART_FIX}')}"
        reload = f"kill -HUP {pid} or systemctl --user reload openmemoryd"
        fix = (
            f"reload the daemon ({reload})"
            if file_loads
            else f"fix the file (the config check says what is wrong), then reload ({reload})"
        )
        if waiting is not None:
            fix += "; restart it for the changes that wait for a restart"
        return warn(NAME, detail, fix)
    if waiting is not None:
        return warn(NAME, waiting.removesuffix(f"; {RESTART_FIX}"), RESTART_FIX)
    return None
