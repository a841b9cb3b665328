"""Merging the searches of several workspaces (`api.scope`)."""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from omem_protocol import SearchHit, SearchResult
from openmemoryd.api.scope import scoped_engines, search_scoped
from openmemoryd.search import SearchQuery


def hit(path: str, score: float) -> SearchHit:
    return SearchHit(path, 1, 1, "x", score, score, None, "memory", f"{path}#L1")


def result(*hits: SearchHit, **fields: Any) -> SearchResult:
    base: dict[str, Any] = {
        "results": hits,
        "mode": "hybrid",
        "provider": "local",
        "model": "e5",
        "degraded": False,
        "degraded_reason": None,
        "fallback": False,
        "stale": False,
        "empty_reason": None,
        "best_score": None,
        "min_score": 0.35,
        "threshold_relaxed": False,
        "took_ms": 2.0,
        "explain": None,
    }
    base.update(fields)
    return SearchResult(**base)


@dataclass
class FakeEngine:
    name: str
    reply: SearchResult

    @property
    def config(self) -> Any:
        return SimpleNamespace(name=self.name)

    async def search(self, query: SearchQuery, *, fresh: bool = False) -> SearchResult:
        return self.reply


def test_scopes_pick_the_engines() -> None:
    own, home = object(), object()
    assert scoped_engines(own, None, home) == [own]  # type: ignore[arg-type]
    assert scoped_engines(own, "project", home) == [own]  # type: ignore[arg-type]
    assert scoped_engines(own, "global", home) == [home]  # type: ignore[arg-type]
    assert scoped_engines(own, "all", home) == [own, home]  # type: ignore[arg-type]
    assert scoped_engines(home, "all", home) == [home]  # type: ignore[arg-type]


async def test_hits_merge_by_score_and_name_their_workspace() -> None:
    work = FakeEngine("work", result(hit("a.md", 0.9), hit("b.md", 0.5), took_ms=3.0))
    home = FakeEngine("default", result(hit("c.md", 0.7), hit("d.md", 0.6), stale=True))
    merged = await search_scoped([work, home], SearchQuery("q"), fresh=False, limit=3)  # type: ignore[list-item]
    assert [(h.workspace, h.path) for h in merged.results] == [
        ("work", "a.md"),
        ("default", "c.md"),
        ("default", "d.md"),
    ]
    assert merged.stale
    assert merged.took_ms == 5.0


async def test_nothing_anywhere_says_how_close_the_nearest_came() -> None:
    work = FakeEngine("work", result(empty_reason="no_match"))
    home = FakeEngine("default", result(empty_reason="below_min_score", best_score=0.2))
    merged = await search_scoped([work, home], SearchQuery("q"), fresh=False, limit=5)  # type: ignore[list-item]
    assert (merged.results, merged.empty_reason, merged.best_score) == ((), "below_min_score", 0.2)
