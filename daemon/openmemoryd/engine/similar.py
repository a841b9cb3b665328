"""How close a new memory is to the lines already remembered.

`capture` and `log` both refuse to write what is already there, and `log`
also spots a memory that says nearly the same thing with a different
detail. Both work per line (a bullet is one memory), on the lines of the
chunks a hybrid search finds for the new text.

Two measures, because neither is enough alone:

* **cosine** of the embedder's document vectors. Models compress it
  differently (multilingual-e5-small puts unrelated texts at 0.75–0.8 and
  near-paraphrases above 0.95), so it is rescaled between the embedder's
  ``score_floor`` and ``score_ceiling`` (e5: 0.75 → 0, 0.95 → 1), the same
  calibration search scores use; that is `Scored.semantic`;
* **lexical**: Dice overlap of the texts' terms (CJK bigrams included),
  which tells "I prefer dark mode" from "I prefer light mode" where e5
  cannot (cosine 0.986 for that pair).

Invariants: a line's compared text (`MemoryLine.content`) drops its list
marker, a ``[category]`` tag and a trailing reinforcement count, so a
counted or captured memory still matches its plain repetition; headings,
HTML comments and blank lines are not memories. Without an embedder, or
when it fails, only the lexical measure is given and the reason is said.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

import trio

from openmemoryd.embed import Embedder, EmbedsNow, Vectors
from openmemoryd.errors import BadRequest, Forbidden, NotFound
from openmemoryd.memory.sections import BULLET, memory_content, split_count
from openmemoryd.search import SearchQuery
from openmemoryd.text.terms import token_set

if TYPE_CHECKING:
    from openmemoryd.engine.engine import Engine

__all__ = [
    "BULLET",
    "MemoryLine",
    "Scored",
    "cosines_to",
    "embed_compared",
    "hit_lines",
    "lexical_similarity",
    "memory_content",
    "nearby_lines",
    "passages_now",
    "score_lines",
]

logger = logging.getLogger("openmemoryd.similar")

NEIGHBOUR_CHUNKS: Final = 5
# Lines embedded per call at most: keeps a log into a long MEMORY.md chunk
# to one small batch (the lexically closest are kept).
MAX_COMPARED_LINES: Final = 32

# Characters of a line (and of the new text) compared at most. A memory
# is a sentence or two; a line pasted whole from a document (800 KB once)
# took the embedder minutes, and every `log` after it waited for that.
MAX_COMPARED_CHARS: Final = 2000


@dataclass(frozen=True, slots=True)
class MemoryLine:
    """One remembered line: where it is, as written, and its compared text."""

    path: str
    number: int
    line: str
    content: str
    count: int


@dataclass(frozen=True, slots=True)
class Scored:
    """A line and how close it is: `lexical` always, `cosine` (raw) and
    `semantic` (rescaled to 0..1) when vectors were compared."""

    line: MemoryLine
    lexical: float
    cosine: float | None
    semantic: float | None


def lexical_similarity(a: str, b: str) -> float:
    """Dice overlap of the two texts' terms: 1.0 for the same words."""
    left, right = token_set(a), token_set(b)
    if not left or not right:
        return 0.0
    return 2 * len(left & right) / (len(left) + len(right))


async def hit_lines(engine: Engine, path: str, start: int, end: int) -> list[tuple[int, str]]:
    """The file's current lines of a hit (numbered), or none if it is gone."""
    try:
        got = await engine.get(path, start, end - start + 1)
    except (NotFound, Forbidden, BadRequest):
        return []
    return list(enumerate(got.text.split("\n"), got.from_line))


async def nearby_lines(engine: Engine, text: str) -> list[MemoryLine]:
    """The memory lines of the chunks a search for *text* finds, each once."""
    found = await engine.search(
        SearchQuery(
            text=text, limit=NEIGHBOUR_CHUNKS, sources=("memory",), min_score=0.0, for_reader=False
        )
    )
    lines: dict[tuple[str, int], MemoryLine] = {}
    for hit in found.results:
        for number, raw in await hit_lines(engine, hit.path, hit.start_line, hit.end_line):
            line = raw.rstrip("\r")  # a CRLF file's line, as `sections` sees it
            bare, count = split_count(line)
            content = memory_content(bare)
            if content and (hit.path, number) not in lines:
                lines[hit.path, number] = MemoryLine(hit.path, number, line, content, count)
    return list(lines.values())


async def cosines_to(engine: Engine, text: str, others: list[str]) -> list[float] | None:
    """Cosine of *text* to each of *others* as documents (the first
    `MAX_COMPARED_CHARS` of each); None without an embedder or when it fails
    (a provider outage must not block writing)."""
    if not others or engine.vectors is None:
        return None
    try:
        vectors = await embed_compared(engine.vectors.embedder, [text, *others])
    except Exception as exc:
        logger.warning("embedding for similarity failed (%s); comparing words only", exc)
        return None
    return [float(v) for v in vectors[1:] @ vectors[0]]


async def embed_compared(embedder: Embedder, texts: Sequence[str]) -> Vectors:
    """*texts* (the first `MAX_COMPARED_CHARS` of each) embedded as passages
    for a comparison a caller waits on (`passages_now`), in a worker thread."""
    capped = [text[:MAX_COMPARED_CHARS] for text in texts]
    return await trio.to_thread.run_sync(passages_now(embedder), capped)


def passages_now(embedder: Embedder) -> Callable[[Sequence[str]], Vectors]:
    """How to embed a few passages a caller waits on: in the daemon's own
    process where the provider can (`EmbedsNow`), not behind indexing."""
    if isinstance(embedder, EmbedsNow):
        return embedder.embed_documents_now
    return embedder.embed_documents


async def score_lines(
    engine: Engine, text: str, lines: list[MemoryLine]
) -> tuple[list[Scored], str | None]:
    """Every line scored against *text*, best first, and why vectors were
    not used (None when they were)."""
    text = text[:MAX_COMPARED_CHARS]
    lexical = {
        id(line): lexical_similarity(text, line.content[:MAX_COMPARED_CHARS]) for line in lines
    }
    kept = sorted(lines, key=lambda line: lexical[id(line)], reverse=True)[:MAX_COMPARED_LINES]
    if engine.vectors is None:
        return [Scored(line, lexical[id(line)], None, None) for line in kept], (
            "no embedding provider"
        )
    cosines = await cosines_to(engine, text, [line.content for line in kept]) if kept else []
    if cosines is None:
        scored = [Scored(line, lexical[id(line)], None, None) for line in kept]
        return scored, "the embedding provider failed"
    embedder = engine.vectors.embedder
    floor, ceiling = embedder.score_floor, embedder.score_ceiling
    scored = []
    for line, cosine in zip(kept, cosines, strict=True):
        semantic = min(1.0, max(0.0, (float(cosine) - floor) / max(ceiling - floor, 1e-6)))
        scored.append(Scored(line, lexical[id(line)], cosine, semantic))
    scored.sort(key=lambda s: (s.semantic or 0.0, s.lexical), reverse=True)
    return scored, None
