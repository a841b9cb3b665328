"""Mask credentials in transcript text before it reaches the index.

Agents paste keys, tokens and passwords into conversations; once indexed,
any search could surface them in a snippet. `redact_secrets` follows
OpenClaw's default ``redactSensitiveText`` patterns (assignments, JSON
fields, CLI flags, Bearer tokens, PEM private keys, well-known token
prefixes, Telegram bot tokens), tightened where the original rewrites prose,
and adds what people actually type in a chat: "the password is hunter2",
"密码是 hunter2", "пароль: hunter2", and credentials in URL query strings.

Invariants:

* text in which no pattern matches is returned unchanged;
* only the secret itself is replaced; names, separators, quotes and the
  surrounding text are kept, so ``API_KEY=sk-…`` stays readable;
* a secret of at least `MIN_MASKED_LENGTH` characters becomes its first six
  and last four characters around U+2026, a shorter one becomes ``***``; a
  PEM block keeps its BEGIN and END markers around ``…redacted…``;
* all patterns form one regular expression scanned once, left to right, so
  the cost is linear in the text and a secret is never masked twice (the
  leftmost, then first-listed, pattern claims it);
* already-masked values are left alone, so redacting twice changes nothing.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["MIN_MASKED_LENGTH", "redact_secrets"]

# OpenClaw's DEFAULT_REDACT_MIN_LENGTH / KEEP_START / KEEP_END: a secret this
# long keeps enough of its ends to recognise which key it was, and too little
# of it to be useful.
MIN_MASKED_LENGTH: Final = 18
_KEEP_START: Final = 6
_KEEP_END: Final = 4
_ELLIPSIS: Final = "\u2026"
_SHORT_MASK: Final = "***"
_PEM_MASK: Final = f"{_ELLIPSIS}redacted{_ELLIPSIS}"

# Characters of an identifier such as API_KEY, x-api-key or accessToken.
_NAME_CHAR: Final = r"[A-Za-z0-9_-]"

# Names that mark the value after `=` or `:` as a secret: API_KEY,
# x-api-key, accessToken, client_secret, PASSWORD. A name is taken whole
# (the lookbehind) and only when an assignment follows (the lookahead, one
# cheap scan of the word), so the keyword search runs on few words and the
# whole pattern stays linear. Lowercase "key" alone is too common in prose
# and code ("the key: ...", "sort_key=...") to count; uppercase KEY is an
# environment variable name.
_SECRET_NAME: Final = (
    # Not right after an ellipsis either: "012345…KEY=" is the end of a
    # masked value, not a name, and must not be masked again.
    rf"(?<!{_NAME_CHAR})(?<!\u2026)"
    # A name has single hyphens only ("x-api-key"): "KEY-----sk-..." is a PEM
    # marker's dashes run into a token, not one long name.
    r"(?=[A-Za-z0-9_]+(?:-[A-Za-z0-9_]+)*\\?[\"']?[ \t]*[=:])"
    r"(?:[A-Za-z0-9_]|-(?!-))*?"
    r"(?:(?i:(?:api|secret|access|private|auth|client|encryption|signing|master)[_-]?key"
    r"|token|secret|passw(?:or)?d|passphrase|authorization|credentials?)|KEY)"
    rf"(?!{_NAME_CHAR})"
)


def _value(prefix: str) -> str:
    """A value: quoted (up to the closing quote) or a bare run.

    An auth scheme before it is skipped ("Authorization: Bearer abc" masks
    abc, not "Bearer"). Bare values stop where a value ends in code, URLs
    and prose, and never start with "=" (comparisons), "$" or "%" (a
    variable, not its content) or "*" (masked already). *prefix* keeps the
    group names of the two branches that use this apart.
    """
    return (
        r"(?>(?:(?i:bearer|basic|token)[ \t]+)?)"
        rf"(?:\\?[\"'](?P<{prefix}qval>[^\"'\\\n]+)"
        rf"|(?P<{prefix}val>(?![=$*%])[^\s\"'`\\,;&<>()\[\]{{}}]+))"
    )


_BRANCHES: Final = (
    # PEM private keys; an unterminated block (cut off by truncation or a
    # paste) is masked to the end of the text rather than left readable.
    r"(?P<pem_begin>-----BEGIN [A-Z0-9 ]*PRIVATE KEY[A-Z ]*-----)"
    r"(?P<pem_body>.*?)"
    r"(?:(?P<pem_end>-----END [A-Z0-9 ]*PRIVATE KEY[A-Z ]*-----)|\Z)",
    # CLI flags: --api-key VALUE, --token=VALUE.
    r"(?<![A-Za-z0-9-])--(?i:api[-_]?key|(?:auth[-_]?|access[-_]?)?token|secret"
    r"|client[-_]?secret|passw(?:or)?d)"
    r"(?:[ \t]+|=)(?!-)" + _value("f"),
    # Well-known token prefixes. The lookbehind keeps "task-..." or
    # "risk-..." from matching sk-; sk- also needs a digit or capital (see
    # _looks_random) because "sk-learn-..." is prose.
    r"(?<![A-Za-z0-9])(?P<tok>"
    r"sk-[A-Za-z0-9_-]{20,}"
    r"|gh[pousr]_[A-Za-z0-9]{20,}"
    r"|github_pat_[A-Za-z0-9_]{20,}"
    r"|xox[abprs]-[A-Za-z0-9-]{10,}"
    r"|xapp-[A-Za-z0-9-]{10,}"
    r"|gsk_[A-Za-z0-9_-]{10,}"
    r"|AIza[0-9A-Za-z_-]{20,}"
    r"|npm_[A-Za-z0-9]{20,}"
    r"|glpat-[A-Za-z0-9_-]{20,}"
    r"|(?:AKIA|ASIA)[0-9A-Z]{16}(?![A-Za-z0-9])"
    r")",
    # Telegram bot tokens, also inside https://api.telegram.org/bot<token>/.
    r"(?<![0-9])(?P<tg>[0-9]{8,10}:[A-Za-z0-9_-]{35})(?![A-Za-z0-9_-])",
    # Bearer tokens outside an assignment (curl -H, prose).
    r"(?<![A-Za-z0-9_-])(?i:bearer)[ \t]+(?P<bearer>[A-Za-z0-9._~+/-]+=*)",
    # Credentials in a URL's query: ?api_key=..., &token=..., &key=..., &sig=...
    r"(?<=[?&])(?i:key|api[_-]?key|apikey|access[_-]?token|auth|token|sig|signature"
    r"|secret|password|passwd|pwd)=(?P<uval>[^&#\s\"'<>]+)",
    # Prose: "the password is hunter2", "my passphrase was x", "pin: 1234".
    # Only a value of printable ASCII counts: a sentence goes on in words.
    r"(?<![A-Za-z0-9_-])(?i:pass(?:word|phrase|code)|pwd|pin(?:[ \t]+code)?)"
    r"(?:[ \t]+(?i:for|to|of)(?:[ \t]+[^\s]{1,40}){1,3}?)?"
    r"[ \t]+(?i:is|was|will[ \t]+be|=)[ \t]+(?P<pval>[!-~]+)",
    # 密码是 hunter2, 密碼：x, 口令为 x (a value in ASCII: "密码：不要写在这里" is prose).
    r"(?:密码|密碼|口令)[ \t]*(?:是|为|為|:|：|=)[ \t]*(?P<zval>[!-~]{2,})",
    # пароль: hunter2, пароль — hunter2, пароль это hunter2. A hyphen counts
    # only as a dash between spaces ("пароль от Wi-Fi — …" names no value),
    # and a length is no value ("пароль — 12 символов").
    r"(?<![А-Яа-яЁё])(?i:парол(?:ь|я|ем|е))(?:[ \t]+(?i:от|для|к)[ \t]+[^\s:]{1,40})?"
    r"[ \t]*(?:[:=：]|—|–|(?<=[ \t])-(?=[ \t])|это|будет|был)"
    r"[ \t]*(?P<rval>[!-~]{2,})(?![!-~])(?![ \t]+(?i:символ|знак|цифр|букв))",
    # KEY=value, password: value, "api_key": "value", apiKey = 'value'.
    _SECRET_NAME + r"\\?[\"']?[ \t]*[=:][ \t]*" + _value(""),
)
_PATTERN: Final = re.compile("|".join(_BRANCHES), re.DOTALL)

# Groups holding the secret, in the order the branches above define them.
_SECRET_GROUPS: Final = (
    "fqval",
    "fval",
    "tok",
    "tg",
    "bearer",
    "uval",
    "pval",
    "zval",
    "rval",
    "qval",
    "val",
)
_VALUE_GROUPS: Final = frozenset({"fqval", "fval", "pval", "zval", "rval", "uval", "qval", "val"})
_BARE_VALUE_GROUPS: Final = frozenset({"fval", "pval", "zval", "rval", "val"})
_SENTENCE_END: Final = ".,:!?"

# Assigned values that are words, types or placeholders, not secrets: they
# appear in prose ("each token: a unit") and code ("password: str = None").
_NOT_SECRETS: Final = frozenset(
    """
    a an the this that these those it its it's is are was be to of in on for
    and or not no yes we i you he she they my your our their here there what
    which when how if then see below above same following none null nil
    undefined true false required optional str string int integer bytes bool
    boolean number float any object dict list type env unset empty redacted
    stored saved kept set reset changed correct incorrect wrong expired invalid
    valid missing hidden encrypted managed written located somewhere too very
    also still now being required weak strong long short secure ok fine
    """.split()
)

# A bare Bearer word is common in prose ("Bearer of bad news"); outside an
# Authorization header only take what looks like a credential.
_MIN_LOOSE_BEARER: Final = 16


def redact_secrets(text: str) -> str:
    """*text* with every recognised secret masked, everything else kept."""
    if not text:
        return text
    return _PATTERN.sub(_replace, text)


def _mask(secret: str) -> str:
    """``first6…last4`` for a long secret, ``***`` for a short one."""
    if len(secret) < MIN_MASKED_LENGTH:
        return _SHORT_MASK
    return f"{secret[:_KEEP_START]}{_ELLIPSIS}{secret[-_KEEP_END:]}"


def _replace(match: re.Match[str]) -> str:
    if match.group("pem_begin") is not None:
        return _mask_pem(match)
    name = next(group for group in _SECRET_GROUPS if match.group(group) is not None)
    start, end = match.span(name)
    secret = match.group(name)
    if name in _BARE_VALUE_GROUPS:
        # "password: hunter2." -- the full stop ends the sentence, not the secret.
        trimmed = secret.rstrip(_SENTENCE_END)
        if trimmed:
            end -= len(secret) - len(trimmed)
            secret = trimmed
    if not _is_secret(name, secret):
        return match.group(0)
    whole, offset = match.group(0), match.start()
    return f"{whole[: start - offset]}{_mask(secret)}{whole[end - offset :]}"


def _is_secret(group: str, secret: str) -> bool:
    """False for matches that only look like secrets; why is per group."""
    if _ELLIPSIS in secret or secret.startswith("*"):
        return False  # masked already
    if group == "tok":
        return not secret.startswith("sk-") or _looks_random(secret[3:])
    if group == "bearer":
        return len(secret) >= _MIN_LOOSE_BEARER and any(c.isdigit() for c in secret)
    if group in _VALUE_GROUPS:
        word = secret.strip().lower()
        return bool(word) and word not in _NOT_SECRETS
    return True


def _looks_random(body: str) -> bool:
    """True for key material: generated keys mix in digits or capitals."""
    return any(c.isdigit() or c.isupper() for c in body)


def _mask_pem(match: re.Match[str]) -> str:
    """The markers kept, the key between them gone, the spacing as it was."""
    body = match.group("pem_body")
    lead = body[: len(body) - len(body.lstrip())]
    end = match.group("pem_end")
    if end is None:
        return f"{match.group('pem_begin')}{lead}{_PEM_MASK}"
    trail = body[len(body.rstrip()) :] if body.strip() else ""
    return f"{match.group('pem_begin')}{lead}{_PEM_MASK}{trail}{end}"
