"""Snippets: the part of a chunk worth showing, with exact line numbers.

At the default sizes a chunk (175 estimated tokens) is never longer than
the snippet budget (700 characters), and the snippet is the whole chunk:
cutting one to the lines that match loses evidence more often than the
shorter hit saves (measured on LoCoMo, docs/recall.md). The exception is a
chunk of list items where the query's words all fall in one item: that
item and its neighbours are shown (`items`), since the other items of a
list of notes are about other things. A chunk larger than the budget (a bigger
``chunk_tokens`` or a smaller ``snippet_chars``) is cut; a plain prefix cut
would hide the line that matched whenever it sits in the chunk's second
half, so the snippet is a window of whole lines around the line matching
the most query terms. The reported line range is the
window's, so ``get path --from start --lines n`` returns the snippet's lines
and a citation points at what was shown.

Invariants: ``len(snippet) <= max_chars``; no visible character is split; the
snippet is verbatim text of the chunk (no ellipses added).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from openmemoryd.search.items import matching_item
from openmemoryd.text import count_cjk, safe_boundary, token_set, words_of
from openmemoryd.workspace.boilerplate import has_memory


@dataclass(frozen=True, slots=True)
class Snippet:
    """Lines *start_line*..*end_line* of a file, or with *cut* a window of one line."""

    text: str
    start_line: int
    end_line: int
    cut: bool = False


def make_snippet(
    text: str, first_line: int, terms: Sequence[str], max_chars: int, items: bool = True
) -> Snippet:
    """Choose the part of a chunk (starting at *first_line*) to show; with
    *items*, the list item every query word the chunk holds lies in, with
    its neighbours (`items.matching_item`), when that fits. Lines at its end
    that hold nothing to read are left out (`without_empty_end`)."""
    return without_empty_end(_chosen(text, first_line, terms, max_chars, items))


def without_empty_end(snippet: Snippet) -> Snippet:
    """*snippet* less its last lines while they hold nothing to read: blank
    lines, thematic breaks, and headings with nothing under them in the
    snippet: what the indexer counts as no memory (`has_memory`). A
    template's sections nobody filled in (``## Goals``, ``## Constraints``,
    its closing ``---``) would otherwise end a hit on PROJECT.md's one real
    line; the lines it shows are still one range, its citation exact. The
    first line always stays."""
    if snippet.cut:
        return snippet
    lines = snippet.text.split("\n")
    last = len(lines) - 1
    while last > 0 and not has_memory(lines[last]):
        last -= 1
    if last == len(lines) - 1:
        return snippet
    return Snippet("\n".join(lines[: last + 1]), snippet.start_line, snippet.start_line + last)


def _chosen(
    text: str, first_line: int, terms: Sequence[str], max_chars: int, items: bool
) -> Snippet:
    lines = text.split("\n")
    if items and terms:
        words = words_of(terms)
        found = matching_item(lines, lambda line: terms_in(line, words), min(2, len(words)))
        if found is not None:
            start, end = found
            shown = "\n".join(lines[start : end + 1])
            if len(shown) <= max_chars:
                return Snippet(shown, first_line + start, first_line + end)
    if len(text) <= max_chars:
        return Snippet(text, first_line, first_line + len(lines) - 1)
    best = best_line(lines, terms)[0] or 0
    if len(lines[best]) > max_chars:
        return Snippet(
            _cut_line(lines[best], terms, max_chars),
            first_line + best,
            first_line + best,
            cut=True,
        )

    def fits(start: int, end: int) -> bool:
        return sum(len(line) for line in lines[start : end + 1]) + end - start <= max_chars

    start, end = window_around(lines, best, fits)
    return Snippet("\n".join(lines[start : end + 1]), first_line + start, first_line + end)


def without_lines(snippet: Snippet, shown: AbstractSet[int]) -> Snippet | None:
    """*snippet* less the lines at either end that are in *shown* (and the blank
    lines left at its new ends); None when it has nothing else to show.

    Chunks overlap, so the next chunk of a file repeats the last lines of the
    one before; an answer that already showed those lines spends nothing on
    them twice. Only the ends are taken off, so what is left is still one
    range of lines with an exact citation; a snippet cut from inside one long
    line is returned as it is.
    """
    if snippet.cut:
        return snippet
    lines = snippet.text.split("\n")
    first, last = 0, len(lines) - 1
    while first <= last and snippet.start_line + first in shown:
        first += 1
    while last >= first and snippet.start_line + last in shown:
        last -= 1
    if first == 0 and last == len(lines) - 1:
        return snippet
    while first <= last and not lines[first].strip():
        first += 1
    while last >= first and not lines[last].strip():
        last -= 1
    if first > last:
        return None
    return Snippet(
        "\n".join(lines[first : last + 1]), snippet.start_line + first, snippet.start_line + last
    )


def line_matches(line: str, terms: Sequence[str]) -> int:
    """How many distinct query terms *line* contains (stems match by prefix)."""
    if not terms:
        return 0
    present = token_set(line)
    return sum(1 for term in terms if _has_term(term, present))


def holds_every(text: str, terms: Sequence[str]) -> bool:
    """Whether *text* holds every one of *terms* (as `line_matches` counts),
    a CJK bigram that only joins two words it holds excepted.

    Chinese is written without spaces, so the query 女儿过敏 ("daughter
    allergy") is searched as 女儿, 儿过 and 过敏; a note "我女儿…对花生过敏"
    holds both words, never the junction 儿过 between them, and must still
    count as holding the whole query. A bigram is such a junction when the
    text holds a query bigram ending in its first character and one starting
    with its second (`_joins_held`).

    A term can only match where its first four characters stand (see
    `best_line`), so a text missing one of those is answered without being
    tokenised: most candidates of a search miss a word.
    """
    if not terms:
        return True
    searchable = _searchable(text)
    absent = [term for term in terms if term[:4] not in searchable]
    if any(not _is_cjk_bigram(term) for term in absent):
        return False
    held = terms_in(text, terms)
    return all(term in held or _joins_held(term, held) for term in terms)


def _is_cjk_bigram(term: str) -> bool:
    return len(term) == 2 and count_cjk(term) == 2


def _joins_held(term: str, held: AbstractSet[str]) -> bool:
    """Whether CJK bigram *term* only joins two held bigrams: 儿过 between
    女儿 and 过敏."""
    if not _is_cjk_bigram(term):
        return False
    return any(h[1] == term[0] for h in held if _is_cjk_bigram(h)) and any(
        h[0] == term[1] for h in held if _is_cjk_bigram(h)
    )


def terms_in(text: str, terms: Sequence[str]) -> frozenset[str]:
    """Which of *terms* *text* holds (as `line_matches` counts them; a term
    whose first four characters it lacks is not looked for)."""
    searchable = _searchable(text)
    maybe = [term for term in terms if term[:4] in searchable]
    if not maybe:
        return frozenset()
    present = token_set(text)
    return frozenset(term for term in maybe if _has_term(term, present))


def _has_term(term: str, present: frozenset[str]) -> bool:
    if term in present:
        return True
    # FTS5 matched stems through the porter stemmer ("preferences" finds
    # "prefers"), so count a word sharing a long enough prefix as present.
    return len(term) >= 4 and any(_same_stem(term, word) for word in present)


def _same_stem(a: str, b: str) -> bool:
    if len(b) < 4 or a[:4] != b[:4]:
        return False
    common = 4
    limit = min(len(a), len(b))
    while common < limit and a[common] == b[common]:
        common += 1
    return common >= limit - 3


def best_line(lines: Sequence[str], terms: Sequence[str]) -> tuple[int | None, int]:
    """(index, matches) of the line holding the most query terms, the first
    on ties; with no match anywhere, the first non-blank line (index None
    when every line is blank).

    Exact matching (`line_matches`: words, stems, CJK bigrams) tokenises a
    line, about 15 ms a query over 80 candidates' lines. A term can only
    match a line holding its first four characters (its stem's prefix) as a
    substring, so that cheap count bounds each line's matches, lines are
    tried from the highest bound down, and the search stops once no bound
    left can beat (or, earlier in the text, tie) the best so far.
    """
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if not terms or first is None:
        return first, 0
    keys = [term[:4] for term in terms]
    # Russian stems read ё as е (`text.russian`), so the lines are read so too.
    normal = _searchable("\n".join(lines)).split("\n")
    if len(normal) != len(lines):  # no NFKC mapping makes a line break; just in case
        normal = [_searchable(line) for line in lines]
    bounded = sorted(
        (-bound, index)
        for index, line in enumerate(normal)
        if (bound := sum(1 for key in keys if key in line))
    )
    best, best_hits = first, 0
    for negative, index in bounded:
        bound = -negative
        if bound < best_hits:
            break  # the bounds only fall from here
        if bound == best_hits and index > best:
            continue  # at best a tie, later in the text
        hits = line_matches(lines[index], terms)
        if hits > best_hits or (hits == best_hits and hits and index < best):
            best, best_hits = index, hits
    return best, best_hits


def _searchable(text: str) -> str:
    return unicodedata.normalize("NFKC", text).lower().replace("ё", "е")


def window_around(
    lines: Sequence[str], center: int, fits: Callable[[int, int], bool]
) -> tuple[int, int]:
    """The lines *start*..*end* around *center* (which must fit alone): grown a
    line below, then one above, while ``fits(start, end)``; blank lines at
    its new ends are left out. Snippets measure in characters, token budgets
    in tokens and citations, so the caller says what fits."""
    start = end = center
    grew = True
    while grew:
        grew = False
        if end + 1 < len(lines) and fits(start, end + 1):
            end += 1
            grew = True
        if start > 0 and fits(start - 1, end):
            start -= 1
            grew = True
    while start < center and not lines[start].strip():
        start += 1
    while end > center and not lines[end].strip():
        end -= 1
    return start, end


def _cut_line(line: str, terms: Sequence[str], max_chars: int) -> str:
    """A *max_chars* window of one long line, placed a little before the first match."""
    lowered = line.lower().replace("ё", "е")  # as Russian stems read it, same length
    positions = [p for p in (lowered.find(term) for term in terms) if p >= 0]
    anchor = min(positions) if positions else 0
    start = safe_boundary(line, max(0, anchor - max_chars // 4))
    end = safe_boundary(line, start + max_chars)
    if end <= start:  # a single "character" of hundreds of combining marks
        end = start + max_chars
    return line[start:end]
