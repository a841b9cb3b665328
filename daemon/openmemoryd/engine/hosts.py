"""What the engine's parts need from the engine, and nothing more.

The sync, indexing and journal parts are built by `Engine` and work for
it, but each sees it only through one of these protocols (the rebuild's is
`rebuild.RebuildHost`, the vector indexer's `vectors.Lanes`): the
handful of attributes and calls it really uses (its configuration, the
writer and reader lanes, a progress field). So the parts depend on this
module, not on `engine.engine`, and the engine composes them without an
import circle; a test can drive a part with any object of the right shape.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeVar

from omem_protocol import SyncResult
from openmemoryd.config import Config
from openmemoryd.memory.append_journal import AppendJournal
from openmemoryd.workspace import MemoryPath, PathPolicy, SessionLocator

T = TypeVar("T")

# done, total, phase: how a long call reports where it is.
ProgressFn = Callable[[int, int, str], Awaitable[None]]


class IndexHost(Protocol):
    """What `FileSync` (files and transcripts → index) uses: the one writer
    connection, the pool of readers, and where files and transcripts are."""

    config: Config
    policy: PathPolicy
    sessions: SessionLocator | None

    async def write(self, fn: Callable[..., T], *args: Any) -> T: ...

    async def read(self, fn: Callable[..., T], *args: Any) -> T: ...

    def wake_vectors(self) -> None: ...

    def recheck_later(self, recheck: Mapping[str, float]) -> None: ...


class SyncHost(Protocol):
    """What `Syncer` (watcher, queue, periodic checks) uses."""

    config: Config
    sessions: SessionLocator | None

    def key_for_path(self, path: Path) -> str | None: ...

    def already_indexed(self, key: str, path: Path) -> bool: ...

    async def sync(
        self, *, full: bool = False, reason: str = "explicit", progress: ProgressFn | None = None
    ) -> SyncResult: ...

    async def changed_keys(self) -> frozenset[str]: ...

    async def apply_keys(self, keys: Iterable[str], *, reason: str) -> dict[str, float]: ...


class JournalHost(Protocol):
    """What the append journal's keeper uses."""

    config: Config
    policy: PathPolicy
    journal: AppendJournal

    async def edit_markdown(
        self, edit: Callable[..., T], *args: Any, paths: Sequence[MemoryPath], reason: str
    ) -> tuple[T, bool]: ...


class MergeHost(Protocol):
    """What the keyword index's merger (`keyword_merge.KeywordMerger`) uses:
    the two lanes, and whether files are being indexed right now."""

    async def write(self, fn: Callable[..., T], *args: Any) -> T: ...

    async def read(self, fn: Callable[..., T], *args: Any) -> T: ...

    def indexing_busy(self) -> bool: ...
