"""A conversation made ready for a summarising model, cut into stages that fit.

Invariants:

- Only ``user`` and ``assistant`` messages reach the model: system prompts,
  tool calls and tool results are context noise a summary should not repeat.
  Injected ``<relevant-memories>`` blocks (our own recall), agent reminders
  and model reasoning (``<think>``) are stripped, and secrets are masked
  (`text.redact`) before any text leaves the daemon.
- Token counts use `text.tokens.estimate_tokens` (a CJK character is one
  token, four other characters are one), plus `MESSAGE_OVERHEAD` per message
  for the chat format's role markers, so counts before and after compaction
  are comparable and Chinese conversations are not undercounted 4x.
- `split_stages` keeps the messages in order, never puts more than *budget*
  tokens in a stage (a message larger than that is cut into labelled parts
  at whitespace where possible), and never returns an empty stage.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

from openmemoryd.text.redact import redact_secrets
from openmemoryd.text.tokens import estimate_tokens

MESSAGE_OVERHEAD: Final = 4
SPOKEN_ROLES: Final = {"user": "User", "assistant": "Assistant"}
STAGE_SEPARATOR: Final = "\n\n"

_NOISE: Final = re.compile(
    r"<(relevant-memories|system-reminder|think|thinking)\b[^>]*>.*?</\1\s*>",
    re.DOTALL | re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class ChatLine:
    """One message as the model will read it: ``User: text``."""

    role: str
    text: str

    @property
    def rendered(self) -> str:
        return f"{SPOKEN_ROLES[self.role]}: {self.text}"


def message_tokens(text: str) -> int:
    """Tokens one message of *text* takes in a chat context."""
    return estimate_tokens(text) + MESSAGE_OVERHEAD


def conversation_tokens(texts: Iterable[str]) -> int:
    """Tokens a conversation of these message texts takes."""
    return sum(message_tokens(text) for text in texts)


def strip_noise(text: str) -> str:
    """*text* without injected memories, reminders and reasoning blocks."""
    return _NOISE.sub("", text).strip()


def prepare(messages: Sequence[tuple[str, str]]) -> tuple[list[ChatLine], int]:
    """The (role, text) messages worth summarising, cleaned; and how many were skipped."""
    lines: list[ChatLine] = []
    skipped = 0
    for role, text in messages:
        spoken = role.strip().lower()
        cleaned = redact_secrets(strip_noise(text)) if spoken in SPOKEN_ROLES else ""
        if not cleaned:
            skipped += 1
            continue
        lines.append(ChatLine(role=spoken, text=cleaned))
    return lines, skipped


def split_stages(lines: Sequence[ChatLine], budget: int) -> list[list[str]]:
    """The rendered messages in consecutive stages of at most *budget* tokens each."""
    if budget < 1:
        raise ValueError("a stage needs a positive token budget")
    pieces: list[str] = []
    for line in lines:
        rendered = line.rendered
        if estimate_tokens(rendered) <= budget:
            pieces.append(rendered)
            continue
        label = SPOKEN_ROLES[line.role]
        # Room for the "(part i/n)" label so a labelled part still fits.
        parts = cut_to_budget(line.text, max(1, budget - 16))
        pieces.extend(f"{label} (part {n}/{len(parts)}): {part}" for n, part in enumerate(parts, 1))
    stages: list[list[str]] = []
    current: list[str] = []
    used = 0
    separator = estimate_tokens(STAGE_SEPARATOR)
    for piece in pieces:
        cost = estimate_tokens(piece) + (separator if current else 0)
        if current and used + cost > budget:
            stages.append(current)
            current, used = [], 0
            cost = estimate_tokens(piece)
        current.append(piece)
        used += cost
    if current:
        stages.append(current)
    return stages


def cut_to_budget(text: str, budget: int) -> list[str]:
    """*text* in consecutive pieces of at most *budget* estimated tokens.

    Cuts at the last whitespace of a piece when it lies in the piece's second
    half (so words stay whole), else at the character that would overflow;
    CJK text has no spaces and is cut anywhere, which is fine for a summary.
    """
    pieces: list[str] = []
    start = 0
    while start < len(text):
        end = _fit(text, start, budget)
        if end < len(text):
            space = max(text.rfind(" ", start, end), text.rfind("\n", start, end))
            if space > start + (end - start) // 2:
                end = space + 1
        piece = text[start:end].strip()
        if piece:
            pieces.append(piece)
        start = end
    return pieces


def truncate_to_budget(text: str, budget: int) -> str:
    """*text*, cut to fit *budget* tokens with an ellipsis when it did not."""
    if estimate_tokens(text) <= budget:
        return text
    return cut_to_budget(text, max(1, budget - 1))[0] + " …"


def _fit(text: str, start: int, budget: int) -> int:
    """The end of the longest piece from *start* that fits *budget* (at least one char).

    Binary search over `estimate_tokens`, which grows with the end; a piece
    of *budget* tokens has at most ``4·budget + 3`` characters, which bounds
    the search, so cutting a huge message stays linear in its length.
    """
    lo, hi = start + 1, min(len(text), start + 4 * budget + 4)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if estimate_tokens(text[start:mid]) <= budget:
            lo = mid
        else:
            hi = mid - 1
    return lo
