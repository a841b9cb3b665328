"""Template boilerplate: text in a memory file that is not memory.

The bootstrap files carry instructions for whoever fills them in:
``<!-- Add user preferences as you learn them -->``, empty fields such as
``- **Name:**``, and italic hints such as ``*Information about the person
you're helping.*``. They stay in the file after someone writes real notes
below them, and indexed they match every vague query ("what does the user
prefer?" finds the comment about preferences) and crowd real memories out
of `recall`. `mask_boilerplate` blanks them before chunking:

* HTML comments, on one line or several (invisible when the Markdown is
  rendered, so never what a person wrote for the agent to read back);
* list items that are a bold label and nothing else, in any script and with
  either colon (``- **Name:**``, ``- **姓名：**``, ``* **Имя:**``) — a field
  nobody filled in;
* lines that are exactly one of the shipped templates' italic hints.

Masking replaces the characters with nothing and keeps every line, so line
numbers, chunk boundaries and citations still point at the file as it is on
disk. A file with nothing left but headings and blank lines yields no chunks
(`has_memory`).
"""

from __future__ import annotations

import functools
import re
from typing import Final

from openmemoryd.workspace.layout import template_text
from openmemoryd.workspace.paths import ROOT_FILES

__all__ = ["has_memory", "mask_boilerplate"]

_COMMENT: Final = re.compile(r"<!--.*?(?:-->|\Z)", re.DOTALL)
_EMPTY_FIELD: Final = re.compile(r"^\s*[-*+]\s+\*\*[^*\n]+?(?:[:：]\s*\*\*|\*\*\s*[:：])\s*$")
_ITALIC_LINE: Final = re.compile(r"^\s*([*_])(?!\1)(.+)\1\s*$")
_HEADING_OR_RULE: Final = re.compile(r"^\s{0,3}(?:#{1,6}(?:\s.*)?|[-*_=](?:\s*[-*_=]){2,})\s*$")


@functools.cache
def _template_hints() -> frozenset[str]:
    hints: set[str] = set()
    for name in ROOT_FILES:
        for line in template_text(name).splitlines():
            if _ITALIC_LINE.match(line):
                hints.add(line.strip())
    return frozenset(hints)


def _blank_comment(match: re.Match[str]) -> str:
    # Keep the newlines so every later line keeps its number.
    return "\n" * match.group(0).count("\n")


def mask_boilerplate(text: str) -> str:
    """*text* with template boilerplate blanked; same number of lines."""
    if "<!--" in text:
        text = _COMMENT.sub(_blank_comment, text)
    hints = _template_hints()
    lines = text.split("\n")
    for index, line in enumerate(lines):
        bare = line.rstrip("\r")
        if _EMPTY_FIELD.match(bare) or bare.strip() in hints:
            lines[index] = line[len(bare) :]  # keep a CR of a CRLF line
    return "\n".join(lines)


def has_memory(text: str) -> bool:
    """True if *text* holds a line that is not blank, a heading or a rule."""
    return any(line.strip() and not _HEADING_OR_RULE.match(line) for line in text.splitlines())
