"""What no memory may hold: a prompt injection, or a secret said in words.

Both auto-capture (`capture_rules`) and the `log` pipeline (`log_gate`) keep
text that is read back into later prompts as trusted context and surfaces in
search snippets. An instruction pasted there ("ignore all previous
instructions") would come back with the authority of a memory, and a password
would leak to every session that searches. These are OpenClaw's memory-lancedb
``looksLikePromptInjection`` patterns, widened, and the secrets that
`redact_secrets` cannot mask precisely because they are said in a sentence,
in English, Chinese (Simplified and Traditional) and Russian.

Invariants:

* `looks_like_prompt_injection` names the first phrase, in
  `_INJECTION_PATTERNS` order, that makes the text look like an instruction
  to the model; None otherwise;
* `contains_secret` is true for anything `redact_secrets` would mask (a key
  said in words with a key-like value included, which it masks) and for a
  password or PIN said in words with a value after it ("my password is
  hunter2", 密码是…, "пароль — hunter2"); a sentence about a password ("the
  password is stored in 1Password", 密码不对, "пароль не подходит") is not a
  secret. A masked value (``***``) still counts, so text that `redact_secrets`
  has already masked is recognised as having held a secret;
* English patterns ignore case and use ASCII word boundaries; Chinese has no
  word boundaries and its patterns use none; Russian patterns ignore case,
  use Unicode word boundaries (Cyrillic letters are word characters), match
  stems because Russian is inflected, and accept е wherever ё is written;
* pure: no I/O, no state, nothing but `re` and `openmemoryd.text.redact`.
"""

from __future__ import annotations

import re
from typing import Final

from openmemoryd.text.redact import redact_secrets

__all__ = ["contains_secret", "looks_like_prompt_injection"]


def _en_pattern(pattern: str) -> re.Pattern[str]:
    """An English pattern: any case, ASCII word boundaries."""
    return re.compile(pattern, re.IGNORECASE | re.ASCII)


def _zh_pattern(pattern: str) -> re.Pattern[str]:
    """A Chinese pattern (Latin letters in it still ignore case)."""
    return re.compile(pattern, re.IGNORECASE)


def _ru_pattern(pattern: str) -> re.Pattern[str]:
    """A Russian pattern: any case, Unicode word boundaries (not re.ASCII,
    under which Cyrillic letters would not be word characters)."""
    return re.compile(pattern, re.IGNORECASE)


# ---------------------------------------------------------------- prompt injection

# Russian for "all", "previous", "above" in "ignore all previous instructions",
# after an optional "твои", "эти"; at least one is needed, as in English:
# "забудь эти инструкции, они устарели" is not an injection.
_RU_OWNER: Final = r"(?:\s+(?:твои|ваши|свои|эти|те|мои))?"
_RU_EARLIER: Final = (
    r"(?:вс[её]|любые|предыдущ\w*|прошл\w*|вышеуказанн\w*|вышеизложенн\w*|вышеперечисленн\w*"
    r"|прежн\w*|предшествующ\w*|ранее\s+(?:данн|полученн)\w*)"
)
_RU_INSTRUCTIONS: Final = r"(?:инструкци|указани|правил|установк|промпт)\w*"
# The imperatives an injection speaks in; "не забудь предыдущие инструкции"
# (don't forget them) says the opposite, so "не" before one is excluded.
_RU_DROP: Final = (
    r"(?<!не\s)\b(?:(?:про)?игнорируй(?:те)?|забудь(?:те)?|отбрось(?:те)?"
    r"|не\s+обращай(?:те)?\s+внимани[ея]\s+на)"
)

_INJECTION_PATTERNS: Final = (
    # OpenClaw's six, widened where the original misses the usual wording
    # ("ignore all previous instructions", "don't follow", "</system>").
    _en_pattern(
        r"\b(?:ignore|disregard|forget)\s+(?:(?:the|your|these|those)\s+)*"
        r"(?:all|any|every|previous|above|prior|earlier|preceding)\s+"
        r"(?:(?:of|the|your|previous|above|prior|earlier|preceding|other)\s+)*instructions?\b"
    ),
    _en_pattern(
        r"\b(?:do\s+not|don['’]?t)\s+follow\s+(?:the\s+|your\s+|any\s+)?(?:system|developer)\b"
    ),
    _en_pattern(r"\bsystem\s+prompt"),
    _en_pattern(r"\bdeveloper\s+message"),
    _en_pattern(r"<\s*/?\s*(?:system|assistant|developer|tool|function|relevant-memories)\b"),
    _en_pattern(r"\b(?:run|execute|call|invoke)\b.{0,40}?\b(?:tool|command)\b"),
    # Chat-template tokens.
    _en_pattern(r"<\|(?:im_start|im_end|system|user|assistant|endoftext)\|>"),
    # The same in Chinese. Gaps stop at a sentence end, as "." above stops
    # at a line end.
    _zh_pattern(
        r"(?:忽略|无视|無視|忽视|忽視|不要理[会會]|忘[记記掉])[你我]?的?"
        r"(?:之前|以上|上面|上述|所有|全部|一切|前面|先前|此前|以前)[^。！？\n]{0,6}?"
        r"(?:指令|指示|[说說]明|[规規][则則]|提示|要求|[设設]定)"
    ),
    _zh_pattern(
        r"(?:不要|别|別|不必|无需|無需|不用)再?(?:遵循|遵守|[听聽]从|[听聽]從|服从|服從|理[会會])"
        r"[^。！？\n]{0,10}?(?:系[统統]|[开開][发發]者)"
    ),
    _zh_pattern(r"系[统統]提示"),
    _zh_pattern(r"[开開][发發]者(?:消息|[讯訊]息|指令)"),
    _zh_pattern(r"(?:[运運]行|[执執]行|[调調]用)[^。！？\n]{0,20}?(?:工具|命令)"),
    # The same in Russian ("я игнорирую все уведомления" is a statement,
    # not an order).
    _ru_pattern(rf"{_RU_DROP}{_RU_OWNER}(?:\s+{_RU_EARLIER})+\s+{_RU_INSTRUCTIONS}"),
    _ru_pattern(rf"{_RU_DROP}{_RU_OWNER}\s+{_RU_INSTRUCTIONS}\s+(?:выше|ранее)\b"),
    _ru_pattern(
        r"\bне\s+(?:следуй|подчиняйся|слушайся|слушай)(?:те)?\b"
        r"[^.!?\n]{0,20}?\b(?:систем|разработчик)\w*"
    ),
    _ru_pattern(r"\bсистемн\w*\s+(?:промпт|подсказк)\w*"),
    # "Сообщение разработчика", not "напиши сообщение разработчикам".
    _ru_pattern(r"\bсообщени\w*\s+разработчика\b"),
    # "Выполни команду", "запусти инструмент поиска"; not "запусти тесты"
    # and not "вместе с командой" (a team): only the object forms count.
    _ru_pattern(
        r"\b(?:выполни|запусти|вызови|исполни)(?:те)?\b[^.!?\n]{0,40}?"
        r"\b(?:команд[уы]|инструмент[аы]?)\b"
    ),
)


def looks_like_prompt_injection(text: str) -> str | None:
    """The phrase that makes *text* look like a prompt injection, or None."""
    for pattern in _INJECTION_PATTERNS:
        match = pattern.search(text)
        if match is not None:
            return match.group()
    return None


# ---------------------------------------------------------------- secrets

# "password is X" in prose, which `redact_secrets` leaves alone because it
# only masks assignments; X must look like a value, not the next word.
_PASSWORD_PHRASE: Final = re.compile(
    r"\b(?:password|passwd|passcode|passphrase|pwd)\s*(?:is|was|[:：=])\s*[\"'“‘]?"
    r"(?P<value>[^\s\"'”’]+)",
    re.IGNORECASE | re.ASCII,
)
_NOT_PASSWORDS: Final = frozenset(
    """
    a an the in on at not too very so stored saved kept written somewhere same different
    wrong correct incorrect weak strong long short secure required empty missing expired
    changed reset set my your our their his her its what which where how
    """.split()
)

# Russian: a name, what it is for ("пароль от почты", "PIN-код карты"), a
# separator (":", "—", "это") and a value. The value is ASCII (how passwords
# are typed, and ``***`` once masked) or holds a digit ("котик123"): after
# "пароль —" a Cyrillic word is nearly always the sentence going on ("пароль
# — в менеджере паролей", "пароль: не помню"). A small number before a word
# is a count ("пароль: 12 символов", "пароль был 2 недели назад").
_RU_FOR_WHAT: Final = (
    r"(?:\s+(?:(?:от|для|к|на|у)\s+)?[^\s:：=—–]{1,40}?(?:\s+[^\s:：=—–]{1,40}?)?)?"
)
_RU_SEPARATOR: Final = r"(?:\s*[:：=—–]\s*(?:это\s+)?|\s+-\s+(?:это\s+)?|\s+(?:это|был|была)\s+)"
_RU_VALUE: Final = (
    r"[\"'“«]?(?!\d{1,2}\s+[а-яё])"
    r"(?:(?=[!-~]*[A-Za-z0-9*])[!-~]{2,}|[^\s\"'”»,.;!?]*\d)"
)

_SECRET_PHRASES: Final = (
    _en_pattern(r"\bpin(?:\s*code)?\s*(?:is|was|[:：=])\s*\d{4,}"),
    # 密码是X, 密码：X -- but not 密码是什么, 密码不对, 密码已经改了.
    _zh_pattern(
        r"(?:密[码碼]|口令|PIN\s*[码碼])\s*(?:是|为|為|[:：=])\s*"
        r"(?!什[么麼]|多少|啥|哪|不|没|沒|已|被|在|要|[会會]|很|太|[错錯]|[对對]|正确|正確"
        r"|一[样樣]|同|和|跟|与|與)[^\s，。！？、,.!?]"
    ),
    # 银行卡PIN是123456: a PIN is digits ("Pin: react 18.2" pins a version).
    _zh_pattern(r"PIN\s*(?:是|为|為|[:：=])\s*\d{4,}"),
    # "my API key is …", "令牌是…": a value with a digit, eight characters or more.
    _zh_pattern(
        r"(?<![A-Za-z])(?:api[ _-]?key|access[ _-]?key|secret[ _-]?key|token|secret"
        r"|[密秘][钥鑰]|令牌)\s*(?:is|was|是|为|為|[:：=])\s*[\"'“‘]?"
        r"(?=[A-Za-z0-9_./+=-]*[0-9])[A-Za-z0-9_./+=-]{8,}"
    ),
    # "мой пароль — hunter2", "пароль от почты: qwerty123", "PIN-код: 4821";
    # not "забыл пароль от почты", "какой пароль у стейджинга?", "пароль не
    # подходит", "пароль сменил вчера": no separator and value.
    _ru_pattern(
        r"(?<!\w)(?:парол(?:ь|я|ю|ем|е)|(?:пин|pin)[\s-]?код(?:а|ом|у|е)?)(?![\w-])"
        rf"{_RU_FOR_WHAT}{_RU_SEPARATOR}{_RU_VALUE}"
    ),
    # A bare "пин" only with digits, as "pin" above: "пин — 4821".
    _ru_pattern(rf"(?<!\w)пин(?![\w-]){_RU_SEPARATOR}\d{{4,}}"),
    # "мой токен — abcd1234…", "API-ключ: …": a value with a digit, as above.
    _ru_pattern(
        r"(?<!\w)(?:токен\w*|(?:api|апи)[\s_-]?ключ\w*|ключ\w*\s+(?:api|апи|доступа)"
        rf"|секретн\w*\s+ключ\w*){_RU_FOR_WHAT}{_RU_SEPARATOR}[\"'“«]?"
        r"(?=[A-Za-z0-9_./+=-]*[0-9])[A-Za-z0-9_./+=-]{8,}"
    ),
)


def contains_secret(text: str) -> bool:
    """True if *text* holds a password, API key, token or private key."""
    if redact_secrets(text) != text or any(p.search(text) for p in _SECRET_PHRASES):
        return True
    return any(
        _is_password_value(match.group("value")) for match in _PASSWORD_PHRASE.finditer(text)
    )


def _is_password_value(value: str) -> bool:
    word = value.rstrip(".,;!?。，；！？").lower()
    return bool(word) and word not in _NOT_PASSWORDS
