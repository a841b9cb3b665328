"""Terms for the lexical index and for queries, correct for CJK text.

FTS5's ``unicode61`` tokenizer treats a run of Han characters as one token,
so "我们讨论了缓存方案" is a single term and a search for 缓存方案 never
matches it (OpenClaw #110500). We segment text ourselves before FTS5 sees it:

* Latin and other spaced scripts: runs of letters and digits, lowercased
  after NFKC (so full-width ＡＢＣ and ABC are the same term); Russian words
  as their Snowball stems (`text.russian`: встречу and встреча are one term);
* CJK runs: every character (unigram) and every adjacent pair (bigram) in the
  indexed text; the query uses bigrams, or the unigram for a lone character,
  of its runs split at multi-character stopwords (什么, 我们).
  A two-character query such as 周会 is one bigram and matches exactly.

The index stores the space-joined terms, and ``porter unicode61`` then only
splits on the spaces we put in (and stems English words; it leaves any word
with a non-ASCII letter as it is, hence the Russian stems here). Queries are built as
an OR of quoted terms, ranked by BM25, so a note matching more of the query
ranks higher and a note matching some of it is still found (the AND-joined
queries of OpenClaw #15226 and #83384 returned nothing).

Invariant: `index_terms` and `query_terms` segment identically; changing
either changes `TERMS_VERSION`, which makes the index rebuild its FTS table.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterator, Sequence
from typing import Final

from openmemoryd.text.russian import RUSSIAN_STOPWORDS, is_russian_word, russian_stem
from openmemoryd.text.scripts import CJK_CLASS

TERMS_VERSION: Final = "cjk-bigram-1+ru-snowball"

# Earlier versions whose terms differ from this one's only in text holding
# these letters: an index built by one re-derives those chunks alone (a
# large English index upgrades in a scan, not a rebuild).
_CHANGED_SINCE: Final = {"cjk-bigram-1": re.compile("[а-яёА-ЯЁ]")}

# Cap on distinct query terms: keeps a pasted paragraph from building an FTS
# query with thousands of OR branches.
MAX_QUERY_TERMS: Final = 64

_RUN_RE: Final = re.compile(f"(?P<cjk>[{CJK_CLASS}]+)|(?P<word>[^\\W_{CJK_CLASS}]+)")

ENGLISH_STOPWORDS: Final = frozenset(
    """
    a about above after again all also am an and any are as at be because been
    before being below between both but by can could did do does doing down
    during each few for from further had has have having he her here hers him
    his how i if in into is it its itself just me more most my no nor not now
    of off on once only or other our ours out over own same she should so some
    such than that the their theirs them then there these they this those
    through to too under until up very was we were what when where which while
    who whom why will with would you your yours thing things
    """.split()
)

# What is left of "Wei's", "don't", "I'd", "we'll", "they're", "I've", "I'm"
# once the apostrophe splits them. They stay query terms (as stopwords they
# cost LoCoMo's first hit 0.002, docs/recall.md), but no note must hold
# them: "Wei's favourite tea" matches "Wei: oolong is her favourite tea" by
# all its words.
CONTRACTION_TAILS: Final = frozenset("s t d ll re ve m".split())


def words_of(terms: Sequence[str]) -> list[str]:
    """*terms* less the `CONTRACTION_TAILS`: the words a note must hold to
    match the whole query (all of *terms* when they are nothing else)."""
    return [term for term in terms if term not in CONTRACTION_TAILS] or list(terms)


# An apostrophe (straight or typographic) after a letter, and a tail.
_APOSTROPHE_TAIL: Final = re.compile(r"(?<=\w)['\u2019](s|t|d|ll|re|ve|m)\b", re.IGNORECASE)


def apostrophe_tails(text: str) -> frozenset[str]:
    """The `CONTRACTION_TAILS` *text* has after an apostrophe: {"s"} for
    "Fermat's theorem", nothing for "vitamin D" (a "d" that is a word)."""
    return frozenset(match.group(1).lower() for match in _APOSTROPHE_TAIL.finditer(text))


CJK_STOPWORDS: Final = frozenset(
    """
    的 了 着 吗 呢 吧 啊 呀 么 和 与 及 或 是 在 也 就 都 而 被 把 让 给 我 你 他 她 它
    我们 你们 他们 她们 它们 这个 那个 这些 那些 这里 那里 什么 怎么 怎样 为什么
    之前 之后 以前 以后 一个 一些 有没 没有 是不 不是 可以 还是 就是 但是 如果 因为 所以
    """.split()
)


# The stopwords of more than one character, longest first: a query's CJK
# run is split at them before its bigrams are taken (`query_terms`).
_CJK_STOP_SPLIT: Final = re.compile(
    "(" + "|".join(sorted((w for w in CJK_STOPWORDS if len(w) > 1), key=len, reverse=True)) + ")"
)


def _runs(text: str) -> Iterator[tuple[bool, str]]:
    """Yield (is_cjk, run) for each term-bearing run of NFKC-normalised text."""
    for match in _RUN_RE.finditer(unicodedata.normalize("NFKC", text)):
        cjk = match.group("cjk")
        if cjk is not None:
            yield True, cjk
        else:
            yield False, match.group("word").lower()


def _word_term(word: str) -> str:
    """The term a lowercased word is indexed and searched by."""
    if word.isascii():  # most words: no regex, no call into the stemmer
        return word
    return russian_stem(word) if is_russian_word(word) else word


def _is_stopword(word: str) -> bool:
    return word in ENGLISH_STOPWORDS or word in CJK_STOPWORDS or word in RUSSIAN_STOPWORDS


def _bigrams(run: str) -> Iterator[str]:
    for i in range(len(run) - 1):
        yield run[i : i + 2]


def index_terms(text: str) -> str:
    """The text FTS5 indexes for *text*: its terms joined by spaces."""
    out: list[str] = []
    for cjk, run in _runs(text):
        if cjk:
            out.extend(run)
            out.extend(_bigrams(run))
        else:
            out.append(_word_term(run))
    return " ".join(out)


def query_terms(query: str) -> list[str]:
    """Distinct search terms of *query*, in order, stopwords dropped.

    A CJK run is first split at the stopwords of two characters or more
    (什么, 我们, 为什么): 我用什么编辑器 ("what editor do I use") is
    searched as 我用, 编辑 and 辑器, without the bigrams 用什 and 么编 that
    straddle 什么 and that no note on editors holds. Single-character
    stopwords (的, 在, 是) are left in place, as they are also parts of
    words (目的, 现在, 但是).

    If every term is a stopword the stopwords are kept: a query of only
    common words still means something to the person who typed it.
    """
    runs = list(_runs(query))
    content = [word for word in _query_words(runs, split=True) if not _is_stopword(word)]
    terms = (_word_term(word) for word in (content or _query_words(runs, split=False)))
    return list(dict.fromkeys(terms))[:MAX_QUERY_TERMS]


def _query_words(runs: Sequence[tuple[bool, str]], *, split: bool) -> list[str]:
    """The distinct words of a query's *runs*: a CJK run as its bigrams, or
    with *split* as its multi-character stopwords and the bigrams of the
    pieces between them."""
    words: list[str] = []
    for cjk, run in runs:
        if not cjk:
            words.append(run)
            continue
        for piece in filter(None, _CJK_STOP_SPLIT.split(run) if split else (run,)):
            if split and piece in CJK_STOPWORDS:
                words.append(piece)
            else:
                words.extend(_bigrams(piece) if len(piece) > 1 else (piece,))
    return list(dict.fromkeys(words))


# The script a query term is written in (`words_by_script`); a term of
# digits alone has none.
_TERM_SCRIPTS: Final = (
    ("cjk", re.compile(f"[{CJK_CLASS}]")),
    ("cyrillic", re.compile("[\u0400-\u052f]")),
    ("latin", re.compile("[A-Za-z\u00c0-\u024f]")),
)


def words_by_script(words: Sequence[str]) -> list[list[str]]:
    """*words* (query terms) split by the script each is written in, when
    they are in more than one; else none.

    A person who writes Chinese asks "Priya 对我演讲彩排的反馈是什么" of a
    note kept in English: the note holds Priya and none of the Chinese
    words, so it holds only part of the query, and the model, comparing a
    Chinese question with English text, may see no evidence in it either.
    Yet in the note's own language it holds every word the query has: a
    name, a product, an error code kept in Latin letters is most of what a
    mixed query asks in that script. Terms of digits alone ("8096", "2024")
    belong to every part, as words of none. A script whose terms are single
    characters makes no part: the "D" of "витамин D в анализах" is in
    every other note, as is a lone Han character.
    """
    parts: dict[str, list[str]] = {}
    neutral: list[str] = []
    for word in words:
        script = next((name for name, letter in _TERM_SCRIPTS if letter.search(word)), None)
        if script is None:
            neutral.append(word)
        else:
            parts.setdefault(script, []).append(word)
    if len(parts) < 2:
        return []
    return [[*part, *neutral] for part in parts.values() if max(map(len, part)) > 1]


def terms_changed_since(version: str | None) -> Callable[[str], bool] | None:
    """Whether a text's terms differ between *version* and `TERMS_VERSION`,
    as a test of the text; None when any text's may (re-derive them all)."""
    pattern = _CHANGED_SINCE.get(version or "")
    if pattern is None:
        return None
    return lambda text: pattern.search(text) is not None


def fts_match_expression(terms: list[str]) -> str | None:
    """An FTS5 MATCH expression that ORs *terms*; None when there are none.

    Each term is a double-quoted string, so FTS5 operators (AND, NEAR, *, ^,
    column filters) inside user input are inert.
    """
    if not terms:
        return None
    return " OR ".join('"' + term.replace('"', '""') + '"' for term in terms)


def token_set(text: str) -> frozenset[str]:
    """Terms of *text* as a set, CJK unigrams and bigrams included.

    Used to compare texts (MMR diversity, snippet placement); matches the
    token rules of OpenClaw's MMR with CJK support.
    """
    return frozenset(index_terms(text).split())
