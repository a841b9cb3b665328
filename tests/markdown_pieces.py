"""Lines that exercise every rule of the chunker and the boilerplate mask,
for property tests that build Markdown files from them."""

from __future__ import annotations

PIECES = (
    "# Day",
    "## Meeting",
    "### Notes",
    "- a note about the heron count",
    "plain prose with several words in it",
    "",
    "",
    "```",
    "~~~",
    "code line",
    "Title",
    "-----",
    "=====",
    "<!--",
    "-->",
    "<!-- one line -->",
    "-->## D",
    "- **Name:**",
    "> quote",
    "long " * 40,
    "中文的句子，包含一些词语。" * 4,
    "Привет, встреча в пятницу.",
    "---",
)
