"""A search over more than one workspace: global memory beside a project's.

People keep what is true everywhere (preferences, how they like to work) in
one workspace and each project's notes in another; an agent in a project
wants both. A search with scope ``global`` runs in the daemon's global
workspace (`search.global_workspace`, the top-level one by default) instead
of the connection's, and ``all`` in both: each workspace ranks its own
candidates with its own index, and the hits are merged by score (fused
scores are relevance estimates on one scale) and cut to the limit. Every
hit then names its workspace, so a follow-up `get` can be sent there.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from omem_protocol import SearchResult, SearchScope
from openmemoryd.engine import Engine
from openmemoryd.search import SearchQuery

__all__ = ["scoped_engines", "search_scoped"]


def scoped_engines(own: Engine, scope: SearchScope | None, global_engine: Engine) -> list[Engine]:
    """The engines a search with *scope* covers, the connection's first."""
    if scope == "global":
        return [global_engine]
    if scope == "all" and global_engine is not own:
        return [own, global_engine]
    return [own]


async def search_scoped(
    engines: Sequence[Engine], query: SearchQuery, *, fresh: bool, limit: int
) -> SearchResult:
    """Search each of *engines* and merge: best scores first, *limit* hits,
    each naming its workspace."""
    results = [(e.config.name, await e.search(query, fresh=fresh)) for e in engines]
    hits = sorted(
        (
            msgspec.structs.replace(hit, workspace=name)
            for name, result in results
            for hit in result.results
        ),
        key=lambda hit: -hit.score,  # stable: the connection's own first on ties
    )[:limit]
    first = results[0][1]
    replies = [result for _, result in results]
    best = [r.best_score for r in replies if r.best_score is not None]
    return msgspec.structs.replace(
        first,
        results=tuple(hits),
        mode=first.mode if len({r.mode for r in replies}) == 1 else "mixed",
        stale=any(r.stale for r in replies),
        degraded=any(r.degraded for r in replies),
        degraded_reason=next((r.degraded_reason for r in replies if r.degraded_reason), None),
        fallback=any(r.fallback for r in replies),
        threshold_relaxed=bool(hits) and any(r.threshold_relaxed for r in replies),
        empty_reason=None if hits else _empty_reason(replies),
        best_score=None if hits or not best else max(best),
        took_ms=round(sum(r.took_ms for r in replies), 3),
    )


def _empty_reason(replies: Sequence[SearchResult]) -> str | None:
    """Why nothing came back: "below_min_score" if anything came close
    anywhere (with `best_score`), else what the connection's own said."""
    if any(r.empty_reason == "below_min_score" for r in replies):
        return "below_min_score"
    return replies[0].empty_reason
