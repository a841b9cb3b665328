"""Whether two nearly identical memories say the same thing.

Word overlap cannot tell a repeat from a corrected fact when the sentence is
long and the change is one token: "我们决定 TLS 证书每 90 天轮换一次" and the
same with 30 share 0.96 of their terms (CJK bigrams swamp the one changed
number), "我喜欢用 Neovim 写代码，不喜欢 VS Code" and the same with Emacs
0.94, and the sentence with 不 dropped 0.94. A long English or Russian
sentence with a changed figure passes 0.92 just as well. Embeddings are no
help either: they place such pairs closer still.

So the tokens that carry a fact are compared on their own (`compare`):

* **numbers**: digits (90, 3.12, 2024-05-01, 10:30, k8s), English and
  Russian number words, runs of Chinese numerals (九十, 两);
* **names**: a Latin word in CJK or Cyrillic text (a product, a person, a
  code: Neovim, VS Code, Kafka), and a capitalised word in any text (Alice,
  TLS, Москва) that is not a function word;
* **negation**: not, never, n't, не, нет, 不, 没, 别, … counted in each text.

A detail one text states and the other lacks, a different number of
negations, or two names (or two numbers) in the opposite order ("Neovim over
Emacs" / "Emacs over Neovim") is a `Change`, and a pair with a change is
never the same memory. Case, spacing, punctuation, full-width forms and a
Russian word's ending (Москве / Москву) are not changes.

`Comparison.same_words` is the other direction: the texts have the same
words but for an article, a first-person pronoun or a particle one of them
leaves out ("我们决定 …" / "决定 …", "We decided …" / "Decided …"), which
word overlap puts below 0.92 in a short sentence. `same_skeleton` says the
texts differ only in their details ("I prefer Neovim" / "I prefer Emacs"):
one fact in two versions however few words surround it.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final, Literal

from openmemoryd.text.russian import RUSSIAN_STOPWORDS, is_russian_word, russian_stem
from openmemoryd.text.scripts import CJK_CLASS
from openmemoryd.text.terms import CJK_STOPWORDS, ENGLISH_STOPWORDS

__all__ = ["Change", "Comparison", "compare"]

Kind = Literal["number", "name"]

# A CJK run, or a word of any other script: letters and digits, digits joined
# across . , : / - (3.12, 2024-05-01, 10:30), an apostrophe tail kept (don't).
_TOKEN: Final = re.compile(
    f"(?P<cjk>[{CJK_CLASS}]+)"
    f"|(?P<word>(?:[^\\W_{CJK_CLASS}]|(?<=\\d)[.,:/-](?=\\d))+(?:['\u2019][^\\W\\d_{CJK_CLASS}]+)?)"
)
_LATIN: Final = re.compile("[a-z\u00e0-\u024f]")
_FOREIGN_SCRIPT: Final = re.compile(f"[{CJK_CLASS}\u0400-\u052f]")

NUMBER_WORDS: Final = frozenset(
    """
    two three four five six seven eight nine ten eleven twelve thirteen fourteen
    fifteen sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty
    seventy eighty ninety hundred thousand million billion dozen half twice
    два две двух трёх трех три четыре четырёх четырех пять пяти шесть шести семь
    семи восемь восьми девять девяти десять десяти двадцать двадцати тридцать
    тридцати сорок сорока пятьдесят сто ста тысяча тысячи тысяч миллион полтора
    """.split()
)
# "one", "один", "一" alone are left out: they are as often "the one I use",
# "一起", "一直" as a count, and a changed count still shows on the other side.
_CJK_NUMERALS: Final = re.compile("[〇零一二两三四五六七八九十百千万亿]+")

NEGATIONS: Final = frozenset(
    """
    not no never nothing none nobody nowhere neither nor without cannot dont
    doesnt didnt isnt arent wasnt werent wont cant shouldnt wouldnt couldnt
    не нет ни никогда ничего никто нигде никуда нельзя без
    """.split()
)
# 不 but not in 不过 (but), 不同 (different), 不错 (good) and the like; 别 as
# "don't", not in 别人 (others) or 特别 (special); 未 but not 未来 (future);
# 无 but not 无论 (whatever); 非 but not 非常 (very).
_CJK_NEGATION: Final = re.compile(
    "不(?![过同仅但断少错久论管])|没|勿|(?<![特区分类级性识告差个辨鉴派])别(?![人的处])"
    "|未(?!来)|无(?![论线])|非(?!常)"
)

# Words a restatement may leave out: articles, the speaker as subject, a
# conjunction, Chinese particles. One text's must be among the other's
# ("I prefer" / "prefer" is a repeat, "I prefer" / "we prefer" is not).
FILLERS: Final = frozenset(
    "a an the i we me us my our that я мы мне нам меня нас мой моя моё мое мои наш наша "
    "наше наши что".split()
)
_CJK_FILLER: Final = re.compile("我们|咱们|我|了|的")


@dataclass(frozen=True, slots=True)
class Change:
    """How two memories differ in what they state (see the module doc)."""

    old: tuple[str, ...] = ()
    new: tuple[str, ...] = ()
    negated: Literal["old", "new"] | None = None
    reordered: tuple[str, ...] = ()

    def __str__(self) -> str:
        parts = []
        if self.old and self.new:
            parts.append(f"{', '.join(self.old)} → {', '.join(self.new)}")
        elif self.new:
            parts.append(f"{', '.join(self.new)} (only in the new one)")
        elif self.old:
            parts.append(f"{', '.join(self.old)} (only in the old one)")
        if self.negated:
            parts.append(f"a negation (only in the {self.negated} one)")
        if self.reordered:
            parts.append(f"the order of {', '.join(self.reordered)}")
        return "; ".join(parts)


@dataclass(frozen=True, slots=True)
class Comparison:
    """What `compare` found: a changed detail, or the same words."""

    change: Change | None
    same_words: bool
    same_skeleton: bool


@dataclass(frozen=True, slots=True)
class _Detail:
    key: str
    surface: str
    kind: Kind


@dataclass(frozen=True, slots=True)
class _Read:
    """One text taken apart: its details in order, its negations, its words."""

    details: tuple[_Detail, ...]
    negations: int
    words: frozenset[str]
    skeleton: frozenset[str]  # the words less negations and CJK numerals
    fillers: frozenset[str]


def compare(old: str, new: str) -> Comparison:
    """How *new* relates to the remembered *old* (both one memory's text)."""
    a, b = _read(old), _read(new)
    change = _change(a, b)
    same_words = change is None and a.words == b.words and _nested(a.fillers, b.fillers)
    details = {d.key for d in (*a.details, *b.details)}
    skeleton = a.skeleton - details
    same_skeleton = (
        bool(skeleton) and skeleton == b.skeleton - details and _nested(a.fillers, b.fillers)
    )
    return Comparison(change, same_words, same_skeleton)


def _nested(left: frozenset[str], right: frozenset[str]) -> bool:
    return left <= right or right <= left


def _change(a: _Read, b: _Read) -> Change | None:
    keys_a = {d.key for d in a.details} | a.words
    keys_b = {d.key for d in b.details} | b.words
    old = _surfaces(d for d in a.details if d.key not in keys_b)
    new = _surfaces(d for d in b.details if d.key not in keys_a)
    negated: Literal["old", "new"] | None = None
    if a.negations != b.negations:
        negated = "new" if b.negations > a.negations else "old"
    reordered: list[str] = []
    for kind in ("number", "name"):
        common = {d.key for d in a.details if d.kind == kind} & {
            d.key for d in b.details if d.kind == kind
        }
        order_a = [d for d in _first(a.details) if d.key in common]
        order_b = [d.key for d in _first(b.details) if d.key in common]
        if [d.key for d in order_a] != order_b:
            reordered += [d.surface for d in order_a]
    if not (old or new or negated or reordered):
        return None
    return Change(old, new, negated, tuple(reordered))


def _first(details: Iterable[_Detail]) -> list[_Detail]:
    """Each detail at its first mention, in order."""
    first: dict[str, _Detail] = {}
    for detail in details:
        first.setdefault(detail.key, detail)
    return list(first.values())


def _surfaces(details: Iterable[_Detail]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(d.surface for d in _first(details)))


def _read(text: str) -> _Read:
    """*text*'s details, negations and words. The word after a number is its
    unit and left out of the skeleton: its form follows the number (1 day,
    90 days; 3 дня, 7 дней), so it differs whenever the number does."""
    text = unicodedata.normalize("NFKC", text)
    foreign = _FOREIGN_SCRIPT.search(text) is not None
    details: list[_Detail] = []
    negations = 0
    words: set[str] = set()
    skeleton: set[str] = set()
    fillers: set[str] = set()
    unit = False
    for match in _TOKEN.finditer(text):
        run = match.group("cjk")
        after_number, unit = unit, False
        if run is not None:
            negations += len(_CJK_NEGATION.findall(run))
            fillers.update(_CJK_FILLER.findall(run))
            kept = _CJK_FILLER.sub("", run)
            words.update(_cjk_terms(kept))
            for numeral in _CJK_NUMERALS.finditer(kept):
                if numeral.group() != "一":
                    details.append(_Detail(numeral.group(), numeral.group(), "number"))
            bare = _CJK_NEGATION.sub("", _CJK_NUMERALS.sub("", kept))
            skeleton.update(_cjk_terms(bare))
            continue
        surface = match.group("word")
        lower = surface.lower().replace("\u2019", "'")
        if lower.endswith("'s"):
            lower = lower[:-2]
        key = russian_stem(lower) if is_russian_word(lower) else lower
        if lower in FILLERS:
            fillers.add(lower)
            continue
        if lower in NEGATIONS or lower.endswith("n't"):
            negations += 1
            words.add(key)
            continue
        words.add(key)
        kind = _kind(surface, lower, foreign)
        if kind is not None:
            details.append(_Detail(key, surface, kind))
        unit = kind == "number"
        if not after_number:
            skeleton.add(key)
    return _Read(
        tuple(details), negations, frozenset(words), frozenset(skeleton), frozenset(fillers)
    )


def _kind(surface: str, lower: str, foreign: bool) -> Kind | None:
    """Whether a word (not a filler, not a negation) carries a fact."""
    if any(ch.isdigit() for ch in lower) or lower in NUMBER_WORDS:
        return "number"
    if foreign and _LATIN.search(lower):
        return "name"
    function_word = (
        lower in ENGLISH_STOPWORDS or lower in RUSSIAN_STOPWORDS or lower in CJK_STOPWORDS
    )
    if not function_word and surface != lower:
        return "name"
    return None


def _cjk_terms(run: str) -> set[str]:
    """Unigrams and bigrams of a CJK *run*, as the index takes them."""
    return {*run, *(run[i : i + 2] for i in range(len(run) - 1))}
