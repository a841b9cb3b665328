"""Russian words as search terms: their stems, and the words that carry no topic.

Russian inflects a noun for six cases and two numbers, an adjective for
gender too, a verb for person, tense and gender: a note saying
"встреча с Олегом перенесена" and a question about "встречу с Олегом" share
only the preposition. FTS5's porter stemmer stems ASCII words alone, so the
keyword leg, the ranking's strongest signal, matched Russian only where the
question happened to use the note's very form. Snowball's Russian stemmer
(the algorithm Lucene, Elasticsearch and PostgreSQL use for Russian) takes
the endings off: встреча, встречи, встречу, встречей all become ``встреч``,
and ё is read as е, as most people type it.

The stem is only what is indexed and matched; snippets and citations show
the text as written. Words with letters of other Cyrillic alphabets
(Ukrainian і, ї, є, ґ, Serbian ђ, …) are left as they are: the Russian
rules would cut them wrongly.
"""

from __future__ import annotations

import functools
import re
import threading
from typing import Final

_RUSSIAN_WORD: Final = re.compile("[а-яё]+")

# The stemmers Snowball generates keep their working state on the object, so
# each thread (indexing and search run in worker threads) gets its own.
_local = threading.local()

RUSSIAN_STOPWORDS: Final = frozenset(
    """
    а без более бы был была были было быть в вам вас весь во вот все всё всего
    всех вся вы где да даже для до его её ее ей ему если есть ещё еще же за здесь
    и из или им их к как какая какие каким какими каких каков какое какой каком
    какую когда кого кому ко который которая которое которые кто куда ли либо
    меж между меня мне мной моё мое моего моей моему моею моим моими моих мой
    мою моя мы на над нам нами нас наш наша наше нашего нашей наши не него нее
    неё ней нем нём нему нет ни них ним ними но ну о об обо он она они оно от ото
    перед по под почему при про с себе себя со так такая такие такой там тебе
    тебя тем теперь то тобой тогда того тоже той только том тот ту ты тут у уж
    уже чего чей чем что чтоб чтобы чья чьё чье чьи эта эти это этого этой этом
    этот эту я
    """.split()
)


def is_russian_word(word: str) -> bool:
    """True if lowercased *word* is written in Russian letters alone."""
    return _RUSSIAN_WORD.fullmatch(word) is not None


@functools.lru_cache(maxsize=65536)
def russian_stem(word: str) -> str:
    """The Snowball stem of lowercased Russian *word* (ё read as е)."""
    stemmer = getattr(_local, "stemmer", None)
    if stemmer is None:
        # Imported at the first Russian word: the package loads the stemmers
        # of all its thirty languages (11 ms of every daemon and CLI start).
        import snowballstemmer

        stemmer = _local.stemmer = snowballstemmer.stemmer("russian")
    stem: str = stemmer.stemWord(word.replace("ё", "е"))
    return stem or word
