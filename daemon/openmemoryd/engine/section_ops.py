"""Answering "my preferences" or "open tasks" from the section itself.

A query that names a kind of lasting memory and nothing else
(`search.asked`) is answered by reading that kind's section of its file
(`workspace.SECTIONS`: MEMORY.md's User Preferences, Important Decisions
and Lessons Learned, USER.md, PROJECT.md, the open tasks of
memory/TASKS.md) as it is on disk now: its lines in order, in snippets of
at most ``snippet_chars`` cut at line ends, each citing its exact lines,
template boilerplate left out, `mode` ``section``. An empty or missing
section is no answer: the query then goes through the usual search. A
file saved in a legacy encoding (cp1251, GBK) is read as the indexer reads
it (`workspace.decoding.readable_text`), so a section answer never shows
mojibake where a search would have cited the words.
"""

from __future__ import annotations

import trio

from omem_protocol import SearchHit, SearchResult
from openmemoryd.config import SearchSettings
from openmemoryd.errors import OmemdError
from openmemoryd.memory.sections import section_body
from openmemoryd.search import SearchQuery, citation
from openmemoryd.search.asked import asked_section
from openmemoryd.workspace import SECTIONS, PathPolicy, read_memory_file
from openmemoryd.workspace.boilerplate import has_memory, mask_boilerplate
from openmemoryd.workspace.decoding import readable_text

__all__ = ["section_answer", "section_hits"]


async def section_answer(
    query: SearchQuery,
    settings: SearchSettings,
    policy: PathPolicy,
    max_bytes: int,
    *,
    provider: str,
    model: str | None,
    stale: bool,
) -> SearchResult | None:
    """The reply to *query* from the section it names, or None (`section_hits`)."""
    hits = await section_hits(query, settings, policy, max_bytes)
    if hits is None:
        return None
    return SearchResult(
        results=tuple(hits),
        mode="section",
        provider=provider,
        model=model,
        degraded=False,
        degraded_reason=None,
        fallback=False,
        stale=stale,
        empty_reason=None,
        best_score=None,
        min_score=settings.min_score,
        threshold_relaxed=False,
        took_ms=0.0,
        explain=None,
    )


async def section_hits(
    query: SearchQuery, settings: SearchSettings, policy: PathPolicy, max_bytes: int
) -> list[SearchHit] | None:
    """The hits of the section *query* asks for by name, or None when it
    asks for none, is narrowed to transcripts, or the section holds nothing."""
    if not (settings.sections and query.for_reader) or query.agent is not None:
        return None
    if query.sources and "memory" not in query.sources:
        return None
    kind = asked_section(query.text)
    if kind is None:
        return None
    key, titles = SECTIONS[kind]
    hits = await trio.to_thread.run_sync(
        read_section, policy, key, titles, settings.snippet_chars, max_bytes
    )
    return hits[: query.limit or settings.limit] or None


def read_section(
    policy: PathPolicy, key: str, titles: tuple[str, ...], snippet_chars: int, max_bytes: int
) -> list[SearchHit]:
    """The section *titles* of *key* (the whole file without titles) in
    snippets of whole lines, boilerplate left out; [] if there is none."""
    try:
        data, _ = read_memory_file(policy.resolve(key), max_bytes)
    except OmemdError:  # missing, too large, not allowed: no such section here
        return []
    if b"\x00" in data:
        return []
    lines = mask_boilerplate(readable_text(data)).split("\n")
    found = section_body(lines, titles) if titles else ("", 1, len(lines))
    if found is None:
        return []
    heading, body_first, body_last = found
    hits = []
    for first, last in _windows(lines, body_first, body_last, snippet_chars):
        snippet = "\n".join(lines[first - 1 : last])
        if not has_memory(snippet):
            continue
        hits.append(
            SearchHit(
                path=key,
                start_line=first,
                end_line=last,
                snippet=snippet,
                score=1.0,
                text_score=None,
                vector_score=None,
                source="memory",
                citation=citation(key, first, last),
                heading=heading,
            )
        )
    return hits


def _windows(lines: list[str], first: int, last: int, limit: int) -> list[tuple[int, int]]:
    """Runs of lines *first*..*last* (1-based) of at most *limit* characters,
    cut at line ends, blank lines trimmed off both ends of each."""
    runs: list[tuple[int, int]] = []
    start, size = None, 0
    for number in range(first, last + 1):
        line = lines[number - 1]
        blank = not line.strip()
        if start is None:
            if not blank:
                start, size = number, len(line)
            continue
        if size + 1 + len(line) > limit:
            runs.append((start, number - 1))
            start, size = (None, 0) if blank else (number, len(line))
            continue
        size += 1 + len(line)
    if start is not None:
        runs.append((start, last))
    return [_trimmed(lines, a, b) for a, b in runs]


def _trimmed(lines: list[str], first: int, last: int) -> tuple[int, int]:
    while last > first and not lines[last - 1].strip():
        last -= 1
    return first, last
