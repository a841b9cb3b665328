"""The item of a Markdown list that a query's words all point to.

Notes are mostly lists of facts that have nothing to do with each other
("- Ordered a standing desk, 420 EUR" beside "- Rotated the Stripe keys"),
and a chunk holds a dozen of them. Shown whole, a hit for "standing desk
price" spends nearly 700 characters and cites sixteen lines to give one,
and its reader cannot tell which line answered. So when every query word
the chunk holds lies in one list item, two of them at least (or the
query's only one), and no heading or paragraph of the chunk holds one,
the hit is that item with the item before it and the one after it: the
neighbours are what a list written as a log or a conversation needs (the
answer to a question is the next item, its subject the one before), and
cost a line or two where the rest of the chunk costs ten.

Words spread over several items, or a match by meaning alone (no query word
in the chunk), keep the whole chunk: nothing then says which item answered.
Nor does one word of several: it is as often the place or person the
whole note is about ("Горно-Алтайск" in a note on a trip to the Altai,
asked what warm clothes to take) or a chance match ("Friday" in a day's
other item), while the answer is an item that shares no word with the
question.
A speaker's name on every line of a transcript is such a spread, so chat
logs mostly keep whole chunks: on LoCoMo's conversations the rule narrows
about one hit in eighty and moves no question, on notes a third of the
first hits (docs/recall.md, "Snippets of list items").
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Final

__all__ = ["list_items", "matching_item"]

# A list item starts with -, * or + or a number and . or ), after at most
# three spaces (CommonMark: four make it a code block or a continuation).
_ITEM: Final = re.compile(r" {0,3}(?:[-*+]|\d{1,9}[.)])(?:\s|$)")


def list_items(lines: Sequence[str]) -> list[tuple[int, int]]:
    """(first, last) line of each list item of *lines*, in order: its marker's
    line and the non-blank lines indented under it (continuations and
    sub-items)."""
    items: list[tuple[int, int]] = []
    index = 0
    while index < len(lines):
        if not _ITEM.match(lines[index]):
            index += 1
            continue
        last = index
        while (
            last + 1 < len(lines)
            and lines[last + 1].strip()
            and lines[last + 1][0].isspace()
            and not _ITEM.match(lines[last + 1])
        ):
            last += 1
        items.append((index, last))
        index = last + 1
    return items


def matching_item(
    lines: Sequence[str], terms_in: Callable[[str], frozenset[str]], needed: int
) -> tuple[int, int] | None:
    """The lines (first, last) of the one list item holding query terms
    (*terms_in* of a line: the terms it holds), at least *needed* of them,
    widened by the item before and the one after it in the same list; None
    when no line holds a term, more than one item does, a line outside every
    item (a heading, a paragraph) does, or the item holds fewer than
    *needed*."""
    items = list_items(lines)
    if not items:
        return None
    found = [terms_in(line) if line.strip() else frozenset[str]() for line in lines]
    holding = [
        position
        for position, (first, last) in enumerate(items)
        if any(found[i] for i in range(first, last + 1))
    ]
    if len(holding) != 1:
        return None
    position = holding[0]
    first, last = items[position]
    if len(frozenset[str]().union(*found[first : last + 1])) < needed:
        return None
    inside = {i for start, end in items for i in range(start, end + 1)}
    if any(found[i] for i in range(len(lines)) if i not in inside):
        return None
    if position > 0 and _same_list(lines, items[position - 1], items[position]):
        first = items[position - 1][0]
    if position + 1 < len(items) and _same_list(lines, items[position], items[position + 1]):
        last = items[position + 1][1]
    return first, last


def _same_list(lines: Sequence[str], before: tuple[int, int], after: tuple[int, int]) -> bool:
    """Whether only blank lines stand between two items (a heading or a
    paragraph between them ends one list and starts another)."""
    return all(not lines[i].strip() for i in range(before[1] + 1, after[0]))
