"""Mask credentials in text before it is written, indexed or sent anywhere.

Agents paste keys, tokens and passwords into conversations and notes; once
kept, any search or primer could surface them. `redact_secrets` follows
OpenClaw's default ``redactSensitiveText`` patterns (assignments, JSON
fields, CLI flags, Bearer tokens, PEM private keys, well-known token
prefixes, Telegram bot tokens), tightened where the original rewrites prose,
widened to the credentials secret scanners such as gitleaks know by their
shape (Stripe, GitHub, GitLab, Slack, Google, AWS, JWTs, webhooks, …; our
own patterns), and adds what people actually type in a chat: "the password
is hunter2", "密码是 hunter2", "пароль: hunter2", "the API key is …",
"токен — …", passwords inside URLs (``postgres://user:pw@host``) and
credentials in URL query strings. A quoted password is taken to its closing
quote in the quotes of all three languages (“correct horse”, «…», 「…」), so
no word of a password with spaces stays; ``passcode`` and ``pwd`` name a
password as ``password`` does.

Invariants:

* text in which no pattern matches is returned unchanged;
* only the secret itself is replaced; names, separators, quotes and the
  surrounding text are kept, so ``API_KEY=…`` and a database URL stay
  readable. A password said in prose is masked with the quotes it was said
  in (``the password is "correct horse"`` → ``the password is ***``): they
  belong to the sentence, not to code that must stay readable;
* a mask reveals no character of the secret. A token of a known kind keeps
  only the prefix that names its kind (``sk_live_…``, ``ghp_…``,
  ``sk-proj-…``), which every such token shares, so a reader still sees
  which key it was; anything else (passwords, bare values) becomes ``***``;
  a PEM block keeps its BEGIN and END markers around ``…redacted…``;
* words that only introduce a value ("the token is", "ключ —") mask it only
  when it looks like key material (letters and digits, eight or more), so
  "the secret is to stir slowly" and "пароль — 12 символов" stay prose;
* all patterns form one regular expression scanned once, left to right, so
  the cost is linear in the text and a secret is never masked twice (the
  leftmost, then first-listed, pattern claims it);
* already-masked values are left alone, so redacting twice changes nothing.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["redact_secrets"]

_ELLIPSIS: Final = "\u2026"
_MASK: Final = "***"
_PEM_MASK: Final = f"{_ELLIPSIS}redacted{_ELLIPSIS}"

# Characters of an identifier such as API_KEY, x-api-key or accessToken.
_NAME_CHAR: Final = r"[A-Za-z0-9_-]"

# Names that mark the value after `=` or `:` as a secret: API_KEY,
# x-api-key, accessToken, client_secret, PASSWORD, AccountKey. A name is
# taken whole (the lookbehind) and only when an assignment follows (the
# lookahead, one cheap scan of the word), so the keyword search runs on few
# words and the whole pattern stays linear. Lowercase "key" alone is too
# common in prose and code ("the key: ...", "sort_key=...") to count;
# uppercase KEY is an environment variable name.
_SECRET_NAME: Final = (
    # Not right after an ellipsis either: "sk_live_…KEY=" is the end of a
    # masked value, not a name, and must not be masked again.
    rf"(?<!{_NAME_CHAR})(?<!\u2026)"
    # A name has single hyphens only ("x-api-key"): "KEY-----sk-..." is a PEM
    # marker's dashes run into a token, not one long name.
    r"(?=[A-Za-z0-9_]+(?:-[A-Za-z0-9_]+)*\\?[\"']?[ \t]*[=:])"
    r"(?:[A-Za-z0-9_]|-(?!-))*?"
    r"(?:(?i:(?:api|secret|access|private|auth|client|encryption|signing|master|account)"
    r"[_-]?key|token|secret|passw(?:or)?d|pass(?:phrase|code)|pwd|authorization|credentials?)"
    r"|KEY)"
    rf"(?!{_NAME_CHAR})"
)

# A quoted value, in the quotes English, Russian and Chinese write: the text
# between an opening quote and its own closing one, on one line. The length
# is bounded so that an opening quote never closed costs a short look ahead,
# not a scan to the end of the text (the scan stays linear).
_QUOTE_PAIRS: Final[tuple[tuple[str, str], ...]] = (
    ('"', '"'),
    ("'", "'"),
    ("“", "”"),
    ("‘", "’"),
    ("«", "»"),
    ("„", "“”"),
    ("「", "」"),
    ("『", "』"),
)
_MAX_QUOTED: Final = 100
# What follows an opening typographic quote, up to (not with) its closer.
_TYPOGRAPHIC_INSIDE: Final = "|".join(
    f"(?<={opening})[^{closing}\\n]{{1,{_MAX_QUOTED}}}+(?=[{closing}])"
    for opening, closing in _QUOTE_PAIRS[2:]
)
# A whole quoted value, its quotes included: what the prose branches mask.
_QUOTED: Final = (
    "(?:"
    + "|".join(
        f"{opening}[^{closing}\\n]{{1,{_MAX_QUOTED}}}+[{closing}]"
        for opening, closing in _QUOTE_PAIRS
    )
    + ")"
)


def _value(prefix: str) -> str:
    """A value: quoted (up to the closing quote) or a bare run.

    An auth scheme before it is skipped ("Authorization: Bearer abc" masks
    abc, not "Bearer"). Bare values stop at a space, a quote, a comma or a
    semicolon (connection strings), and never start with "=" (comparisons),
    "$" or "%" (a variable, not its content), "*" (masked already) or an
    opening bracket (a placeholder such as ``<token>``). "&" and brackets
    inside are kept, since passwords use them ("Tr0ub4dor&3"); a bracket
    that closes the code around the value is given back (`_trim`). Neither
    starts a PEM block: that is the PEM branch's, which masks the key's body
    too (``"private_key": "-----BEGIN …\\n…"`` in a service-account file).
    A value in typographic quotes (``password: “correct horse”``) is taken to
    its closing quote, as a value in ASCII quotes is: a bare run would stop
    at the first space and leave the rest of the password readable.
    *prefix* keeps the group names of the two branches that use this apart.
    """
    return (
        r"(?>(?:(?i:bearer|basic|token)[ \t]+)?)(?!\\?[\"']?-----BEGIN)"
        rf"(?:\\?[\"'](?P<{prefix}qval>[^\"'\\\n]+)"
        rf"|[“‘«„「『](?P<{prefix}cqval>{_TYPOGRAPHIC_INSIDE})"
        rf"|(?P<{prefix}val>(?![=$*%<(\[{{])[^\s\"'`\\,;]+))"
    )


# Tokens that say what they are: (the prefix naming the kind, which a mask
# keeps, and the rest, which it hides). Case matters, and each needs enough
# characters after its prefix that a word or identifier in prose ("sk-learn",
# "hf_hub_download", "secret_santa") is not one.
_TOKEN_KINDS: Final[tuple[tuple[str, str], ...]] = (
    # OpenAI, Anthropic, OpenRouter, DeepSeek…: sk- with the vendor's infix.
    (
        r"sk-(?:proj-|svcacct-|admin-|None-|or-v1-|ant-(?:api|admin|sid)\d\d-)?",
        r"[A-Za-z0-9_-]{20,}",
    ),
    # Stripe secret and restricted keys, webhook signing secrets (publishable
    # pk_ keys are public by design: they ship in web pages).
    (r"(?:sk|rk)_(?:live|test|prod)_", r"[A-Za-z0-9]{16,}"),
    (r"whsec_", r"[A-Za-z0-9+/=]{20,}"),
    # GitHub, GitLab.
    (r"gh[pousr]_", r"[A-Za-z0-9]{20,}"),
    (r"github_pat_", r"[A-Za-z0-9_]{20,}"),
    (r"gl(?:pat|dt|rt|ptt|cbt|ft|imt|oas|soat|agent)-", r"[A-Za-z0-9_-]{20,}"),
    (r"GR1348941", r"[A-Za-z0-9_-]{20,}"),
    # Slack tokens (webhook URLs are a branch of their own).
    (r"xox(?:e\.xox[bp]|[abposer])-", r"[A-Za-z0-9-]{10,}"),
    (r"xapp-", r"[A-Za-z0-9-]{10,}"),
    # Google API keys, OAuth client secrets and access tokens.
    (r"AIza", r"[0-9A-Za-z_-]{20,}"),
    (r"GOCSPX-", r"[A-Za-z0-9_-]{20,}"),
    (r"ya29\.", r"[A-Za-z0-9_-]{30,}"),
    # AWS access key IDs (the secret access key has no prefix: `_AWS_SECRET`).
    (r"(?:AKIA|ASIA|ABIA|ACCA)", r"[0-9A-Z]{16}(?![A-Za-z0-9])"),
    # Package registries and containers.
    (r"npm_", r"[A-Za-z0-9]{20,}"),
    (r"pypi-AgEIcHlwaS5vcmc", r"[A-Za-z0-9_-]{30,}"),
    (r"dckr_pat_", r"[A-Za-z0-9_-]{20,}"),
    # AI providers.
    (r"gsk_", r"[A-Za-z0-9_-]{10,}"),
    (r"hf_", r"[A-Za-z0-9]{30,}"),
    (r"r8_", r"[A-Za-z0-9]{30,}"),
    (r"lsv2_(?:pt|sk)_", r"[A-Za-z0-9_]{30,}"),
    # Hosting, infrastructure and SaaS with a prefix of their own.
    (r"do[opr]_v1_", r"[a-f0-9]{64}"),
    (r"shp(?:at|ss|ca|pa)_", r"[a-fA-F0-9]{32}"),
    (r"SG\.", r"[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}"),
    (r"SK", r"[0-9a-fA-F]{32}(?![A-Za-z0-9])"),
    (r"key-", r"[0-9a-f]{32}(?![A-Za-z0-9])"),
    (r"", r"[0-9a-f]{32}-us[0-9]{1,2}(?![A-Za-z0-9])"),
    (r"hv[sb]\.", r"[A-Za-z0-9_-]{24,}"),
    (r"dapi", r"[a-f0-9]{32}(?:-[0-9])?(?![A-Za-z0-9])"),
    (r"lin_api_", r"[A-Za-z0-9]{30,}"),
    (r"ntn_", r"[A-Za-z0-9]{30,}"),
    (r"PMAK-", r"[A-Za-z0-9-]{30,}"),
    (r"ATATT3", r"[A-Za-z0-9_=-]{50,}"),
    (r"sq0(?:atp|csp)-", r"[A-Za-z0-9_-]{20,}"),
    (r"HRKU-", r"[A-Za-z0-9_-]{30,}"),
    (r"gl(?:c|sa)_", r"[A-Za-z0-9_=+/-]{30,}"),
    (r"NRAK-", r"[A-Z0-9]{27}"),
    (r"sbp_", r"[a-f0-9]{40}"),
    (r"pul-", r"[a-f0-9]{40}"),
    (r"dp\.(?:pt|st|sa|ct)\.", r"[A-Za-z0-9]{40,}"),
    (r"AGE-SECRET-KEY-1", r"[0-9A-Z]{50,}"),
    # JSON Web Tokens: a header and a claims part, both JSON ("eyJ" is "{\"").
    (r"eyJ", r"[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]*"),
)
_TOKEN_KIND_PATTERNS: Final = tuple(
    re.compile(f"(?P<kind>{prefix}){rest}") for prefix, rest in _TOKEN_KINDS
)

# Password-ish words in prose ("pin" and "pin code" are PINs).
_EN_PASSWORD: Final = r"(?i:pass(?:word|phrase|code)|pwd|pin(?:[ \t]+code)?)"
# What a password's length or policy is said in: "is 12 characters long".
_EN_NOT_A_VALUE: Final = (
    r"(?![ \t]+(?i:char|letter|digit|symbol|word|long|minimum|max|or[ \t]+more|and[ \t]+up))"
)
# "api key", "access token", "secret", "the bot's token", "credentials".
_EN_KEY: Final = (
    r"(?i:(?:(?:api|access|secret|private|auth|license|licence|app|bot|client|signing"
    r"|encryption|master|deploy|personal[ \t]+access)[ \t_-]?)?(?:key|token)"
    r"|secret|credentials?)"
)
# Key material: the one value class the prose branches for keys accept.
_KEY_VALUE: Final = r"[A-Za-z0-9][A-Za-z0-9_./+=-]{7,}+"
# Russian separators: ":", "—", "–", a hyphen between spaces, "это".
_RU_SEPARATOR: Final = r"[ \t]*(?:[:=：]|—|–|(?<=[ \t])-(?=[ \t])|это|будет|был|была)[ \t]*"
_RU_FOR_WHAT: Final = r"(?:[ \t]+(?i:от|для|к|на)[ \t]+[^\s:]{1,40})?"

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
    # curl -u user:password, --user user:password (the user stays).
    r"(?<![A-Za-z0-9-])(?:-u|--user)[ \t]+[\"']?[^\s:\"'@/]{1,100}:"
    r"(?P<cpw>[^\s\"']{1,200})",
    # Well-known token prefixes. The lookbehind keeps "task-..." or
    # "risk-..." from matching sk-; sk- also needs a digit or capital (see
    # _looks_random) because "sk-learn-..." is prose.
    r"(?<![A-Za-z0-9])(?P<tok>"
    + "|".join(f"{prefix}{rest}" for prefix, rest in _TOKEN_KINDS)
    + r")",
    # A password in a URL, scheme://user:password@host: only the password
    # goes, the URL stays readable. A raw "@" in the password is taken up to
    # the last "@" before the host.
    r"(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]{1,20}://[^\s/?#:@\"'<>]{0,100}:"
    r"(?P<upw>[^\s/?#\"'<>]{1,200})@(?=[A-Za-z0-9\[])",
    # Webhook URLs are credentials whole: Slack's, Discord's. The host and
    # path prefix stay so a reader sees what it was.
    r"(?:hooks\.slack\.com/(?:services|workflows|triggers)/"
    r"|discord(?:app)?\.com/api/webhooks/[0-9]{5,30}/)(?P<hook>[A-Za-z0-9_/-]{16,})",
    # Telegram bot tokens, also inside https://api.telegram.org/bot<token>/.
    # The bot's id before the colon is public (every user of the bot sees
    # it); the part after it is the secret.
    r"(?<![0-9])[0-9]{8,10}:(?P<tg>[A-Za-z0-9_-]{35})(?![A-Za-z0-9_-])",
    # An AWS secret access key: 40 characters of base64 with no prefix of its
    # own, so it counts only near "aws" or "secret access key" (_is_secret).
    r"(?<![A-Za-z0-9/+=_-])(?P<aws>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=_-])",
    # Bearer tokens outside an assignment (curl -H, prose).
    r"(?<![A-Za-z0-9_-])(?i:bearer)[ \t]+(?P<bearer>[A-Za-z0-9._~+/-]+=*)",
    # Credentials in a URL's query: ?api_key=..., &token=..., &key=..., &sig=...
    r"(?<=[?&])(?i:key|api[_-]?key|apikey|access[_-]?token|auth|token|sig|signature"
    r"|secret|password|passwd|pwd)=(?P<uval>[^&#\s\"'<>]+)",
    # Prose: "the password is hunter2", "my passphrase was x", "pin is 1234".
    # Only a value of printable ASCII counts: a sentence goes on in words,
    # and a length is not a value ("the password is 12 characters long").
    # A quoted value is the password whole, spaces and all ("the password is
    # “correct horse”"), and goes with its quotes.
    r"(?<![A-Za-z0-9_-])" + _EN_PASSWORD + r"(?:[ \t]+(?i:for|to|of)(?:[ \t]+[^\s]{1,40}){1,3}?)?"
    r"[ \t]+(?i:is|was|will[ \t]+be|=):?[ \t]+(?P<pval>" + _QUOTED + r"|[!-~]++)" + _EN_NOT_A_VALUE,
    # PINs: "PIN: 4821", "pin code for the card is 4821", "пин-код карты — 4821",
    # "PIN码是123456". Digits only ("Pin: react 18.2" pins a version), and
    # not a version or a time ("pin: 2024.1", "pin: 1230:00").
    r"(?<![A-Za-z0-9_А-Яа-яЁё-])(?i:pin|пин)(?:[ \t-]?(?i:code|код)\w{0,2})?(?:码|碼)?"
    r"(?:[ \t]+[^\s\d:：=—–]{1,20}){0,3}?"
    r"[ \t]*(?:(?i:is|was|это)[ \t]|[:：=—–]|是|为|為|(?<=[ \t])-(?=[ \t]))[ \t]*"
    r"(?P<pin>[0-9]{4,12})(?![0-9]|[.,:][0-9])",
    # 密码是 hunter2, 密碼：x, 口令为 x (a value in ASCII or in quotes:
    # "密码：不要写在这里" is prose, and "密码为12位" is a length).
    r"(?:密码|密碼|口令)[ \t]*(?:是|为|為|:|：|=)[ \t]*(?P<zval>" + _QUOTED + r"|[!-~]{2,}+)"
    r"(?![ \t]*(?:位|个|個|字))",
    # пароль: hunter2, пароль — hunter2, пароль это hunter2, пароль: котик123.
    # A hyphen counts only as a dash between spaces ("пароль от Wi-Fi — …"
    # names no value), a Cyrillic value only with a digit in it ("пароль — в
    # заметках" is prose) or in quotes ("пароль: «правильная лошадь»"), and a
    # length is no value ("пароль — 12 символов").
    r"(?<![А-Яа-яЁё])(?i:парол(?:ь|я|ем|е))"
    + _RU_FOR_WHAT
    + _RU_SEPARATOR
    + r"(?P<rval>"
    + _QUOTED
    + r"|[\"'«„“]?(?:[!-~]{2,}+|(?=[\w!-~]*\d)[\w!-~]{2,}+))(?![\w!-~])"
    r"(?![ \t]+(?i:символ|знак|цифр|букв))",
    # KEY=value, password: value, "api_key": "value", apiKey = 'value'.
    _SECRET_NAME + r"\\?[\"']?[ \t]*[=:][ \t]*" + _value(""),
    # Keys said in words, in English ("the API key is …", "access token for
    # prod: …"), Russian ("токен — …", "ключ API: …") and Chinese ("密钥是…",
    # 令牌：…). After an assignment above, which claims "token: x" first.
    r"(?<![A-Za-z0-9_-])(?P<kname>"
    + _EN_KEY
    + r")(?:[ \t]+(?i:for|to|of|on)(?:[ \t]+[^\s]{1,40}){1,3}?)?"
    r"(?:[ \t]+(?i:is|was|will[ \t]+be|are)[ \t]+|[ \t]*[:：=][ \t]*|[ \t]+[—–-][ \t]+)"
    r"[\"'“‘]?(?P<kval>" + _KEY_VALUE + r")",
    r"(?<![А-Яа-яЁёA-Za-z])(?i:токен\w{0,3}|секрет\w{0,3}|(?:api|апи)[ \t_-]?ключ\w{0,3}"
    r"|ключ\w{0,3}(?:[ \t]+(?:api|апи|доступа))?|секретн\w{0,4}[ \t]+ключ\w{0,3})"
    + _RU_FOR_WHAT
    + _RU_SEPARATOR
    + r"[\"'«]?(?P<rkval>"
    + _KEY_VALUE
    + r")",
    r"(?:密钥|密鑰|秘钥|秘鑰|私钥|私鑰|令牌|(?i:token|api[ _-]?key))[ \t]*(?:是|为|為|:|：|=)[ \t]*"
    r"(?P<zkval>" + _KEY_VALUE + r")",
)
_PATTERN: Final = re.compile("|".join(_BRANCHES), re.DOTALL)

# Groups holding the secret, in the order the branches above define them,
# and how `_is_secret` judges each: "value" is a word that must not be a
# placeholder, "key" must also look like key material, the rest are
# credentials by their shape.
_SECRET_GROUPS: Final[dict[str, str]] = {
    "fqval": "value",
    "fcqval": "value",
    "fval": "value",
    "cpw": "value",
    "tok": "token",
    "upw": "value",
    "hook": "shape",
    "tg": "shape",
    "aws": "aws",
    "bearer": "bearer",
    "uval": "value",
    "pin": "shape",
    "pval": "value",
    "zval": "value",
    "rval": "value",
    "qval": "value",
    "cqval": "value",
    "val": "value",
    "kval": "key",
    "rkval": "key",
    "zkval": "key",
}
# Bare values run to the next space; a full stop or comma there ends the
# sentence, not the secret. "!" and "?" are kept in the mask: they are as
# likely the password's last character, and a mask must not reveal one.
_BARE_VALUE_GROUPS: Final = frozenset(
    {"fval", "cpw", "pval", "zval", "rval", "val", "kval", "rkval"}
)
_SENTENCE_END: Final = ".,:;"
# The groups of `_value`: what comes before them is a name and a separator.
_ASSIGNED_GROUPS: Final = frozenset({"fqval", "fcqval", "fval", "qval", "cqval", "val"})
_CLOSERS: Final = {")": "(", "]": "[", "}": "{", ">": "<"}
_OPENER: Final = re.compile(r"[(\[{<]")

# Assigned values that are words, types or placeholders, not secrets: they
# appear in prose ("each token: a unit", "the password is at least…") and
# code ("password: str = None"), and in examples (``user:password@host``).
_NOT_SECRETS: Final = frozenset(
    """
    a an the this that these those it its it's is are was be to of in on at for
    from by with under and or not no yes we i you he she they my your our their
    here there what which when how if then see below above same following none
    null nil undefined true false required optional str string int integer bytes
    bool boolean number float any object dict list type env unset empty redacted
    stored saved kept set reset changed correct incorrect wrong expired invalid
    valid missing hidden encrypted managed written located somewhere too very
    also still now being weak strong long short secure ok fine only just never
    always different unknown known lost forgotten temporary random unique simple
    easy hard complex case-sensitive password passwd pass pwd pw secret token key
    apikey api_key changeit example placeholder your_password your-password
    """.split()
)
# Placeholders: a variable or template ($DB_PASSWORD, ${X}, {{x}}, <token>,
# %(pw)s) or a run of one filler character (xxxx, ****, ....). "$ecr3t!" is
# a password, not a variable.
_PLACEHOLDER: Final = re.compile(
    r"\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|<[^<>]+>|\{\{[^{}]+\}\}|%\([A-Za-z_]+\)s|([xX*.•])\1*"
)
# Stripe's publishable keys are public by design (they ship in web pages),
# so "the publishable key is pk_live_…" is left readable.
_PUBLIC_KEY: Final = re.compile(r"pk_(?:live|test)_[A-Za-z0-9]+")
# A bare "key" names many things that are not credentials (a cache key, a
# sort key, a commit's hash as a dedupe key), so the value after it must be
# long and not lowercase hex.
_MIN_BARE_KEY: Final = 16
_HEX_DIGEST: Final = re.compile(r"[0-9a-f]+")
# An English word in -ed, -ing or -ly after "the password is" is the
# sentence going on ("is printed on the router", "is rotating").
_PROSE_WORD: Final = re.compile(r"[a-z]+(?:ed|ing|ly)")
# "pwd" names a password in config ("db_pwd=…") but, alone, also the shell's
# working directory (``PWD=/home/me`` and ``OLDPWD=~/src`` in ``env``, "pwd:
# /srv/app"): a path after it is the directory.
_WORKING_DIRECTORY: Final = re.compile(r"(?<![A-Za-z0-9_-])(?i:(?:old)?pwd)(?![A-Za-z0-9_-])")
# A directory: no "=" or ":" in it, so a value passed over as a path never
# holds another assignment that the scan would take up again (quadratic).
_PATH: Final = re.compile(r"[/~][^=:]*")

# A bare Bearer word is common in prose ("Bearer of bad news"); outside an
# Authorization header only take what looks like a credential.
_MIN_LOOSE_BEARER: Final = 16

# What marks a 40-character run as an AWS secret access key: one of these in
# the 100 characters before it ("aws_secret_access_key = …", "AWS secret: …").
_AWS_CONTEXT: Final = re.compile(
    r"(?<![A-Za-z])aws(?![a-z])|secret[ _-]?access|access[ _-]?key", re.IGNORECASE
)
_AWS_LOOKBACK: Final = 100


def redact_secrets(text: str) -> str:
    """*text* with every recognised secret masked, everything else kept.

    One left-to-right scan. A match that turns out not to be a secret ("the
    token is a unit", "токен: 123456789") gives back what followed its
    keyword, so a secret starting there ("…: 123456789:AAH…", "key:
    -----BEGIN …") is still found; the scan always moves forward.
    """
    if not text:
        return text
    pieces: list[str] = []
    done = 0
    scan = 0
    while (match := _PATTERN.search(text, scan)) is not None:
        replacement, start, end = _replace(match)
        if replacement is None:
            scan = start if start > match.start() else match.end()
            continue
        pieces.append(text[done:start])
        pieces.append(replacement)
        done = scan = end
    if not pieces:
        return text
    pieces.append(text[done:])
    return "".join(pieces)


def _mask(secret: str) -> str:
    """The prefix naming a known token's kind and an ellipsis, else ``***``.

    The prefix is shared by every token of that kind, so it tells a reader
    which key was here without narrowing down which one; nothing else of
    the secret is kept, not even its last characters, which for a password
    would be a real clue.
    """
    for pattern in _TOKEN_KIND_PATTERNS:
        match = pattern.fullmatch(secret)
        if match is not None and match.group("kind"):
            if secret.startswith("sk-") and not _looks_random(secret[3:]):
                break
            return f"{match.group('kind')}{_ELLIPSIS}"
    return _MASK


def _replace(match: re.Match[str]) -> tuple[str | None, int, int]:
    """What replaces the text from *start* to *end*, with the secret masked.

    None (and the secret's start) when the match holds no secret after all.
    """
    if match.group("pem_begin") is not None:
        return _mask_pem(match), match.start(), match.end()
    name = next(group for group in _SECRET_GROUPS if match.group(group) is not None)
    start, end = match.span(name)
    secret = match.group(name)
    if name in _BARE_VALUE_GROUPS:
        trimmed = _trim(secret)
        end -= len(secret) - len(trimmed)
        secret = trimmed
    # "sk_live_" right before "…" is what a mask kept, not a new secret.
    masked_before = match.string.startswith(_ELLIPSIS, end)
    if masked_before or not _is_secret(name, secret, match):
        return None, start, end
    # The words a prose branch skipped ("the password for <url> is …") may
    # hold a secret of their own; they are shorter than the match, so this
    # ends. An assignment skips only its name, separator and opening quote
    # (which, alone, would read as a bare value).
    before = match.string[match.start() : start]
    if name not in _ASSIGNED_GROUPS:
        before = redact_secrets(before)
    return f"{before}{_mask(secret)}", match.start(), end


def _trim(value: str) -> str:
    """A bare value without what ends the sentence or the code around it.

    "password: hunter2." -- the full stop ends the sentence, and in
    ``login(password=pw)`` the bracket closes the call; a bracket the value
    opened itself ("Tr0ub4(dor)") is the password's own.
    """
    while True:
        trimmed = value.rstrip(_SENTENCE_END)
        if trimmed and trimmed[-1] in _CLOSERS:
            opener = _CLOSERS[trimmed[-1]]
            if trimmed.count(opener) < trimmed.count(trimmed[-1]):
                trimmed = trimmed[:-1]
        if not trimmed or trimmed == value:
            return value
        value = trimmed


def _is_secret(group: str, secret: str, match: re.Match[str]) -> bool:
    """False for matches that only look like secrets; why is per group."""
    if _ELLIPSIS in secret or _MASK in secret or secret.startswith("*"):
        return False  # masked already, whole or in part ("API_KEY=***")
    kind = _SECRET_GROUPS[group]
    if kind == "token":
        return not secret.startswith("sk-") or _looks_random(secret[3:])
    if kind == "bearer":
        return len(secret) >= _MIN_LOOSE_BEARER and any(c.isdigit() for c in secret)
    if kind == "aws":
        before = match.string[max(0, match.start() - _AWS_LOOKBACK) : match.start()]
        return _mixes_classes(secret) and _AWS_CONTEXT.search(before) is not None
    if kind in ("value", "key"):
        quoted = _unquote(secret)
        if quoted is not None:
            secret = quoted
        word = secret.strip().lower()
        if not word or word in _NOT_SECRETS or _PLACEHOLDER.fullmatch(secret.strip()):
            return False
        if _PUBLIC_KEY.fullmatch(secret) or _is_code(secret):
            return False
        if group == "pval" and quoted is None and _PROSE_WORD.fullmatch(secret):
            return False
        if _PATH.fullmatch(secret) and _WORKING_DIRECTORY.search(
            match.string, match.start(), match.start(group)
        ):
            return False
        if kind == "value":
            return True
        bare_key = group == "kval" and match.group("kname").lower() == "key"
        if bare_key and (len(secret) < _MIN_BARE_KEY or _HEX_DIGEST.fullmatch(secret)):
            return False
        return _looks_like_key(secret)
    return True


def _unquote(value: str) -> str | None:
    """What a prose branch's quoted value holds, or None if it is bare."""
    for opening, closing in _QUOTE_PAIRS:
        if len(value) > 1 and value[0] == opening and value[-1] in closing:
            return value[1:-1]
    return None


def _is_code(value: str) -> bool:
    """A type or a call, not a password: ``Optional[str]``, ``os.getenv(…)``.

    Bare values run through brackets (passwords use them), so what comes
    before the first bracket is judged as a bare word would be.
    """
    head = _OPENER.split(value, maxsplit=1)[0]
    return head != value and (head.lower() in _NOT_SECRETS or "." in head)


def _looks_random(body: str) -> bool:
    """True for key material: generated keys mix in digits or capitals."""
    return any(c.isdigit() or c.isupper() for c in body)


def _looks_like_key(value: str) -> bool:
    """Letters with digits ("abc123def456"), or a long mixed-case run.

    What a key said in words must look like: "the secret is patience", "the
    token is a unit of text" and "ключ — под ковриком" are sentences.
    """
    letters = any(c.isalpha() for c in value)
    if letters and any(c.isdigit() for c in value):
        return True
    return len(value) >= 20 and any(c.isupper() for c in value) and any(c.islower() for c in value)


def _mixes_classes(value: str) -> bool:
    """Base64 key material has capitals, small letters and digits or ``/+``.

    A git commit hash (lowercase hex) or a word run together has not.
    """
    return (
        any(c.isupper() for c in value)
        and any(c.islower() for c in value)
        and any(c.isdigit() or c in "/+" for c in value)
    )


def _mask_pem(match: re.Match[str]) -> str:
    """The markers kept, the key between them gone, the spacing as it was."""
    body = match.group("pem_body")
    lead = body[: len(body) - len(body.lstrip())]
    end = match.group("pem_end")
    if end is None:
        return f"{match.group('pem_begin')}{lead}{_PEM_MASK}"
    trail = body[len(body.rstrip()) :] if body.strip() else ""
    return f"{match.group('pem_begin')}{lead}{_PEM_MASK}{trail}{end}"
