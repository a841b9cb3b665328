"""Whether a text an agent logs is worth remembering, and safe to keep.

The Python MCP memory server's write pipeline starts with a quality gate (too short, filler,
pure code, speculative) and a privacy filter. A memory is read back into
later prompts as if it were knowledge, so noise here costs every future
session: "Sure, I'll remember that!" or "maybe we should use Redis?" would
come back as facts.

Invariants:

* `check_quality` names the first rule that fails, in `QUALITY_RULES` order,
  or None; the rules are English, Chinese (Simplified and Traditional) and
  Russian, and they judge the text as given (code fences and line breaks
  intact). Russian patterns ignore case and use Unicode word boundaries,
  so "невозможно" (impossible) is not "возможно" (maybe);
* quality rules can be overridden by the caller (``force``); the safety
  rules of `check_safety` (an echo of recalled memories, a prompt injection,
  a secret that cannot be masked) never can;
* `check_safety` masks what `redact_secrets` recognises (tokens by their
  shape, credentials in URLs, ``PASSWORD=…`` assignments, a key said in
  words with a key-like value) and keeps the memory; a password or PIN said
  in words ("my password is hunter2", 密码是…, "мой пароль — hunter2"),
  which cannot be masked precisely, rejects it. The masked forms are
  returned so the reply can say so;
* `mask_secrets` is that masking alone, never a rejection: `append` keeps
  the caller's words and masks what it can (see `Engine.append`);
* everything is pure: no I/O, no state.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final, Literal

from openmemoryd.memory.safety_rules import contains_secret, looks_like_prompt_injection
from openmemoryd.text.redact import redact_secrets
from openmemoryd.text.scripts import count_cjk

__all__ = [
    "MIN_WEIGHT",
    "QUALITY_RULES",
    "GateRule",
    "Rejected",
    "Safe",
    "check_quality",
    "check_safety",
    "mask_secrets",
    "one_line",
    "text_weight",
]

GateRule = Literal[
    "too_short",
    "filler",
    "pure_code",
    "speculative",
    "question",
    "injected_memories",
    "prompt_injection",
    "secret",
]
QUALITY_RULES: Final[tuple[GateRule, ...]] = (
    "too_short",
    "filler",
    "pure_code",
    "speculative",
    "question",
)

# A CJK character carries about a word, so it weighs two: 我喜欢乌龙茶 (12)
# passes, 好的谢谢 (8) and "use uv" (6) do not.
MIN_WEIGHT: Final = 10


@dataclass(frozen=True, slots=True)
class Rejected:
    """The rule that stops the text, and a sentence saying why."""

    rule: GateRule
    detail: str


@dataclass(frozen=True, slots=True)
class Safe:
    """The text to keep, with secrets masked, and the masked forms."""

    text: str
    redactions: tuple[str, ...]


def one_line(text: str) -> str:
    """The text as one bullet line: whitespace runs collapsed, a leading
    list marker dropped (the bullet adds its own)."""
    line = " ".join(text.split())
    return _LIST_MARKER.sub("", line, count=1)


_LIST_MARKER: Final = re.compile(r"^(?:[-*+]|\d+[.)])\s+")


def text_weight(text: str) -> int:
    """Length with each CJK character counted twice (see `MIN_WEIGHT`)."""
    return len(one_line(text)) + count_cjk(text)


# ---------------------------------------------------------------- filler

_EN_FILLER: Final = re.compile(
    # single interjections count only when punctuation or the end follows:
    # "OK, noted" is filler, "OK Go is my favourite band" is not
    r"^(?:sure|ok|okay|great|yes|yeah|yep|alright|noted|understood|certainly|absolutely"
    r"|thanks|hi|hello|hey|well|hmm+|cool|perfect)(?=\s*(?:[,.!;:…]|$))"
    # phrases are filler wherever they open the text
    r"|^(?:of\s+course|got\s+it|thank\s+you|no\s+problem|sounds\s+good|will\s+do"
    r"|as\s+an\s+ai|let\s+me|here\s+is|here['’]s|great\s+question|good\s+question"
    r"|i['’]ll\s+remember|i\s+will\s+remember|i['’]ve\s+noted|happy\s+to\s+help)\b",
    re.IGNORECASE | re.ASCII,
)
_ZH_FILLER: Final = re.compile(
    r"^(?:好的|好吧|好啊|好滴|当然|當然|没问题|沒問題|收到|谢谢|謝謝|多谢|多謝|嗯+|哈哈+"
    r"|明白了|明白|你好|您好|让我|讓我|以下是|我来|我來|我会记住|我會記住|我记住了|我記住了)"
)
_RU_FILLER: Final = re.compile(
    # as in English, a single word only before punctuation or the end:
    # "Хорошо, запомню" is filler, "Хорошо работает кэш на стейджинге" is not
    r"^(?:хорошо|ок|окей|ладно|понял|поняла|поняли|понятно|ясно|конечно|отлично|принято"
    r"|супер|да|ага|угу|привет|здравствуйте|готово|записал|записала|запомнил|запомнила"
    r"|замечательно|прекрасно|давай|давайте)(?=\s*(?:[,.!;:…—–-]|$))"
    # phrases are filler wherever they open the text; "давайте" opens a
    # proposal ("давайте использовать Postgres") unless the agent offers itself
    r"|^(?:спасибо|без\s+проблем|с\s+удовольствием|(?:я\s+)?запомню|я\s+запомнил[аи]?"
    r"|я\s+записал[аи]?|(?:хороший|отличный)\s+вопрос|как\s+(?:ии|языковая\s+модель)"
    r"|давай(?:те)?\s+я|позвольте|сейчас\s+я|вот\s+что)\b",
    re.IGNORECASE,
)


def _filler(text: str) -> str | None:
    match = _EN_FILLER.match(text) or _ZH_FILLER.match(text) or _RU_FILLER.match(text)
    return match.group() if match else None


# ---------------------------------------------------------------- code

_FENCE: Final = re.compile(r"^[ \t]*(```|~~~)[^\n]*\n.*?^[ \t]*\1[ \t]*$", re.MULTILINE | re.DOTALL)
_INLINE_CODE: Final = re.compile(r"`[^`\n]+`")
_CODE_LINE: Final = re.compile(
    r"^\s*(?:"
    r"(?:def|class|import|return|const|let|var|function|fn|func|pub|package|async\s+def)\s"
    r"|from\s+\S+\s+import\s|#include\b|\$\s|>>>\s|//|/\*"
    r"|(?:if|for|while|switch)\s*\("
    r"|(?:SELECT|INSERT|UPDATE|DELETE|CREATE|ALTER|DROP)\s.*(?:;|\bFROM\b|\bTABLE\b)"
    r"|[\w.\[\]]+\s*(?:[-+*/|&]?=|:=)\s*\S.*"  # an assignment
    r")"
    r"|[;{}]\s*$|\)\s*:\s*$",
)
_WORD: Final = re.compile(r"[^\W\d_]{2,}")


def _pure_code(text: str) -> bool:
    """True when nothing but code is said: a fenced block or inline code
    with no prose around it, or lines that all read as code."""
    prose = _INLINE_CODE.sub(" ", _FENCE.sub(" ", text))
    if prose != text and not _says_something(prose):
        return True
    lines = [line for line in text.splitlines() if line.strip()]
    return bool(lines) and count_cjk(text) == 0 and all(_CODE_LINE.search(ln) for ln in lines)


def _says_something(prose: str) -> bool:
    return count_cjk(prose) >= 2 or len(_WORD.findall(prose)) >= 2


# ---------------------------------------------------------------- speculation

_EN_SPECULATIVE: Final = re.compile(
    r"\b(?:maybe|perhaps|possibly|probably|might|i\s+guess|i\s+suppose|not\s+sure|unsure"
    r"|could\s+be|i\s+wonder|it\s+seems|seems\s+like|apparently|presumably)\b",
    re.IGNORECASE | re.ASCII,
)
# 可能 but not 不可能 ("impossible" is a firm statement).
_ZH_SPECULATIVE: Final = re.compile(
    r"(?<!不)可能|也许|也許|或许|或許|大概|好像|似乎|说不定|說不定|不确定|不確定|我猜|估计|估計"
)
# "возможно" but not "невозможно" (impossible: firm, as 不可能); "может быть"
# and a leading "может," but not "может" alone ("сервис может держать 1000
# rps" is a capability); "стоит ли", not "стоит" (also "costs").
_RU_SPECULATIVE: Final = re.compile(
    r"\b(?:возможно|может\s+быть|наверное|наверно|вероятно|пожалуй|скорее\s+всего|кажется"
    r"|похоже|видимо|вроде\s+бы|предположительно|не\s+исключено|не\s+уверен[аы]?"
    r"|стоит\s+ли|мы\s+могли\s+бы|можно\s+было\s+бы|я\s+думаю|полагаю|предполагаю)\b"
    r"|^может\s*,",
    re.IGNORECASE,
)
_QUESTION: Final = re.compile(r"[?？]\s*$")


def check_quality(text: str) -> Rejected | None:
    """The first quality rule *text* fails, or None when it is worth keeping."""
    line = one_line(text)
    weight = text_weight(text)
    if weight < MIN_WEIGHT:
        return Rejected(
            "too_short",
            f"{len(line)} characters says too little (weight {weight}, "
            f"at least {MIN_WEIGHT}; a CJK character counts 2)",
        )
    opener = _filler(line)
    if opener is not None:
        return Rejected(
            "filler", f"opens with the filler {opener!r}: log the fact itself, without the reply"
        )
    if _pure_code(text.strip()):
        return Rejected(
            "pure_code", "only code: say what it is for (code belongs in the project, not memory)"
        )
    hedge = (
        _EN_SPECULATIVE.search(line) or _ZH_SPECULATIVE.search(line) or _RU_SPECULATIVE.search(line)
    )
    if hedge is not None:
        return Rejected("speculative", f"speculative ({hedge.group()!r}): log it once it is known")
    if _QUESTION.search(line):
        return Rejected("question", "a question, not something known")
    return None


def check_safety(text: str) -> Safe | Rejected:
    """The text with secrets masked, or why it must not be kept at all."""
    if "<relevant-memories>" in text.lower():
        return Rejected("injected_memories", "echoes a recalled <relevant-memories> block")
    phrase = looks_like_prompt_injection(text)
    if phrase is not None:
        return Rejected("prompt_injection", f"looks like a prompt injection: {phrase!r}")
    safe = mask_secrets(text)
    if contains_secret(safe.text):
        return Rejected(
            "secret", "holds a password, key or token that cannot be masked; nothing was kept"
        )
    return safe


def mask_secrets(text: str) -> Safe:
    """*text* with what `redact_secrets` recognises masked, and the masked
    forms (new ones only, each once, in order); the rest byte for byte."""
    masked = redact_secrets(text)
    return Safe(masked, _masked_forms(text, masked))


_MASKED: Final = re.compile(r"\S*(?:\u2026redacted\u2026|\u2026|\*\*\*)\S*")
# What a masked word is wrapped in or followed by as prose, not part of it.
_OPENERS: Final = "(\"'“‘«["
_CLOSERS: Final = ")\"'”’»].,;:!?。，；：！？"


def _masked_forms(before: str, after: str) -> tuple[str, ...]:
    """The masked words that are new in *after* (what the reply shows),
    without the brackets, quotes and punctuation of the sentence around
    them: "(key ghp_…);" reports ``ghp_…``."""
    if before == after:
        return ()
    old = {_bare(m) for m in _MASKED.findall(before)}
    return tuple(dict.fromkeys(m for m in map(_bare, _MASKED.findall(after)) if m not in old))


def _bare(word: str) -> str:
    return word.lstrip(_OPENERS).rstrip(_CLOSERS)
