"""What the daemon served under each citation, so that `forget` by a citation
that went stale cannot remove the wrong memory.

A citation (``MEMORY.md#L13``) names lines by number, and numbers move: when
another agent forgets line 12, or a person edits the file, what an agent was
shown at line 13 is now at line 12 and line 13 holds the next memory.
Forgetting by the old citation then removed that next memory, and said so as
if all was well.

So each workspace's engine keeps a `CitedLedger`: for the last `CAPACITY`
citations it gave out, the last few texts it served under each (a citation
can be served again after the file changed). `forget` by citation asks
`decide`:

* no record (typed by hand, or given before the daemon started): act on the
  lines as they are, as always;
* the lines still hold a text served under the citation: act on them;
* they do not, and one served text is now in exactly one other place of the
  file (lines shifted): act there, and the reply says where it was cited;
* otherwise refuse, nothing removed (`Changed`).

What is compared is each line's memory, not its bytes: a bullet marker, a
``[category]`` tag, a ``(×N)`` count, case and spacing aside
(`line_key`). A `log` reinforcement that bumps a count, or a person
re-indenting a bullet, leaves a citation good; any change of what a line
says makes it stale.

Where texts are noted: where replies go out. `note_reply` runs in
`Api.dispatch`, the one path of every transport (socket, HTTP, the MCP
bridge over the socket), for the replies that carry the text they cite:
search hits, forget's candidates, capture, log. Replies that do not carry
it are noted where they are built: append (its written block) and recall
(its parts, before their category and headings are stripped).

A search hit's snippet is its lines verbatim, except that one line may be
shown in part: a line longer than ``snippet_chars`` is cut to a window
(`search.snippet`), a line longer than a chunk is indexed in pieces (the
chunker), and a token budget cuts a line to a prefix ending in "…". Which
single-line snippet is whole is not known without reading the file, and a
search must not read files per hit, so a one-line hit is noted as possibly
a piece: it still holds when the line contains it and the line is long
enough to have been cut (`piece_floor`: at least ``min(snippet_chars,
chunk_tokens)`` characters, since a chunk's token estimate never exceeds one
token a character), or, for a budget's "…", when the line starts with it.
A short line must match whole. Multi-line snippets are always whole lines.

Cost: noting a reply hashes the text it already holds (a few hundred
characters a hit), with no read. A whole text is kept as a digest and a
short preview, a possible piece as its normalised text (at most a snippet),
so the ledger stays within a few megabytes. It lives in memory only: after
a restart every citation is unknown, which is today's behaviour.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

from omem_protocol import CaptureResult, ForgetResult, LogResult, SearchResult
from openmemoryd.memory.get import split_citation
from openmemoryd.memory.sections import memory_content, split_count
from openmemoryd.search.hits import citation

__all__ = [
    "CAPACITY",
    "Changed",
    "CitedLedger",
    "Held",
    "Moved",
    "Served",
    "Unknown",
    "decide",
    "line_key",
    "note_reply",
    "stale_message",
]

CAPACITY: Final = 4096  # citations remembered per workspace
TEXTS_PER_CITATION: Final = 4  # the newest texts served under one citation
PREVIEW_CHARS: Final = 120
ELLIPSIS: Final = "…"  # what a token budget ends a cut line with (`search.budget`)
_LOGGED: Final = frozenset({"written", "replaced"})  # a log reply whose text is its line


def _flat(text: str) -> str:
    return " ".join(text.casefold().split())


def line_key(line: str) -> str:
    """What one line says, as compared: its memory without bullet marker,
    category tag or count (`similar.memory_content`), case and spacing
    aside; a heading or other line that states no memory, as itself."""
    bare = split_count(line.rstrip("\r"))[0]
    return _flat(memory_content(bare) or bare)


def _digest(keys: Sequence[str]) -> bytes:
    joined = "\n".join(keys).encode("utf-8", "surrogatepass")
    return hashlib.blake2b(joined, digest_size=16).digest()


@dataclass(frozen=True, slots=True)
class Served:
    """One text served under a citation: how many lines, the digest of
    their memories, and for a one-line search snippet that may show only
    part of its line, that part (normalised)."""

    lines: int
    digest: bytes
    preview: str
    piece: str | None = None

    @classmethod
    def of(cls, text: str, *, may_be_piece: bool = False) -> Served:
        lines = text.split("\n")
        piece = _flat(text) if may_be_piece and len(lines) == 1 else None
        return cls(len(lines), _digest([line_key(line) for line in lines]), _preview(text), piece)

    def held_by(
        self, lines: Sequence[str], piece_floor: int, keys: Sequence[str] | None = None
    ) -> bool:
        """Whether *lines* (as many as were cited; *keys* their `line_key`s,
        when known) still say this text."""
        if len(lines) != self.lines:
            return False
        if _digest([line_key(line) for line in lines] if keys is None else keys) == self.digest:
            return True
        if self.piece is None or not self.piece:
            return False
        line = _flat(lines[0])
        if self.piece.endswith(ELLIPSIS):  # a budget's cut: a prefix (or part of a long line)
            core = self.piece[: -len(ELLIPSIS)].rstrip()
            return line.startswith(core) or (len(lines[0]) >= piece_floor and core in line)
        return len(lines[0]) >= piece_floor and self.piece in line


def _preview(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= PREVIEW_CHARS else flat[: PREVIEW_CHARS - 1] + ELLIPSIS


class CitedLedger:
    """The texts served under the last `CAPACITY` citations of one workspace
    (least recently served dropped first)."""

    def __init__(self, capacity: int = CAPACITY) -> None:
        self._capacity = capacity
        self._entries: OrderedDict[tuple[str, int, int], tuple[Served, ...]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def note(
        self, path: str, start: int, end: int, text: str, *, may_be_piece: bool = False
    ) -> None:
        """Remember that *text* was served as ``path#Lstart-Lend``; a text whose
        line count does not match the range is not a faithful copy, and is
        not noted."""
        if start < 1 or end < start or text.count("\n") != end - start:
            return
        served = Served.of(text, may_be_piece=may_be_piece)
        key = (path, start, end)
        old = tuple(s for s in self._entries.pop(key, ()) if s != served)
        self._entries[key] = (served, *old)[:TEXTS_PER_CITATION]
        while len(self._entries) > self._capacity:
            self._entries.popitem(last=False)

    def note_cited(self, cited: str, text: str) -> None:
        """`note` by a citation string (ignored when it is not one)."""
        split = split_citation(cited)
        if split is not None:
            self.note(*split, text)

    def served(self, path: str, start: int, end: int) -> tuple[Served, ...]:
        """The texts served as ``path#Lstart-Lend``, newest first (none: unknown)."""
        return self._entries.get((path, start, end), ())


# ---------------------------------------------------------------- the decision


@dataclass(frozen=True, slots=True)
class Unknown:
    """The citation was never served (or was forgotten by the ledger)."""


@dataclass(frozen=True, slots=True)
class Held:
    """The cited lines still say what was served."""


@dataclass(frozen=True, slots=True)
class Moved:
    """What was served is now at *start*..*end*, and nowhere else."""

    start: int
    end: int


@dataclass(frozen=True, slots=True)
class Changed:
    """The cited lines say something else; what was served is at *places*
    (none: gone; several: which one is meant is unknown)."""

    served: Served
    places: tuple[tuple[int, int], ...]


Decision = Unknown | Held | Moved | Changed


def decide(
    served: Sequence[Served], file_lines: Sequence[str], start: int, end: int, piece_floor: int
) -> Decision:
    """What `forget` of lines *start*..*end* of a file now holding
    *file_lines* should do, given the texts *served* under that citation."""
    if not served:
        return Unknown()
    cited = list(file_lines[start - 1 : end]) if end <= len(file_lines) else []
    if any(s.held_by(cited, piece_floor) for s in served):
        return Held()
    keys = [line_key(line) for line in file_lines]  # once: a file is scanned per text
    places: set[tuple[int, int]] = set()
    for s in served:
        for first in range(len(file_lines) - s.lines + 1):
            last = first + s.lines
            if s.held_by(file_lines[first:last], piece_floor, keys[first:last]):
                places.add((first + 1, last))
    if len(places) == 1:
        first, last = places.pop()
        return Moved(first, last)
    return Changed(served[0], tuple(sorted(places)))


def stale_message(cited: str, decision: Changed, now: str | None) -> str:
    """Why a forget by *cited* was refused, for a person or a model: what
    it was, what the lines hold *now* (None: past the file's end), what to
    do instead."""
    path = cited.partition("#")[0]
    held = f"they now hold “{_preview(now)}”" if now is not None else "the file no longer has them"
    if not decision.places:
        where = "that text is no longer in the file"
    else:
        spots = ", ".join(citation(path, a, b) for a, b in decision.places)
        where = f"that text is now in several places ({spots})"
    return (
        f"{cited} changed since it was cited: it said “{decision.served.preview}”, {held}, "
        f"and {where}. Nothing was removed. Search again for a current citation, "
        "or forget by query or by text."
    )


# ---------------------------------------------------------------- noting replies


def note_reply(reply: object, ledger_for: Callable[[str | None], CitedLedger | None]) -> None:
    """Note every citation *reply* gives with the text it gives with it;
    *ledger_for* maps a hit's workspace (None: the request's) to its ledger."""
    if isinstance(reply, SearchResult):
        for hit in reply.results:
            ledger = ledger_for(hit.workspace)
            if ledger is not None:
                one = hit.start_line == hit.end_line
                ledger.note(hit.path, hit.start_line, hit.end_line, hit.snippet, may_be_piece=one)
        return
    ledger = ledger_for(None)
    if ledger is None:
        return
    if isinstance(reply, ForgetResult):
        for candidate in reply.candidates:
            ledger.note_cited(candidate.citation, candidate.text)
    elif isinstance(reply, CaptureResult):
        for captured in reply.captured:
            ledger.note_cited(captured.citation, f"- [{captured.category}] {captured.text}")
    elif isinstance(reply, LogResult):
        if reply.similar is not None:
            ledger.note_cited(reply.similar.citation, reply.similar.text)
        if reply.citation is not None and reply.status in _LOGGED and not reply.dry_run:
            ledger.note_cited(reply.citation, reply.text)
