"""End to end with the real default embedder, on workspaces of real size:
what the no-match baseline lets through, and what it costs real questions.

The honest-empty module's workspace holds a handful of one-line notes, where
an unrelated query has little to land on. The notes workspaces of
`bench.multilingual` (about 35 files of one engineer's notes in each of
Russian, Chinese and English, 60 questions each with the lines that answer
them) are where it showed: with sixteen reference passages, three of them
Chinese, six of ten Chinese queries about baroque opera, Icelandic sagas,
deep-sea fish and the like were answered from notes on payments and a NAS.
The ten queries checked here are the last ten of each set's unrelated
queries, written apart from the reference passages and on none of their
topics. The bounds are what the daemon does now (docs/recall.md, "A wider
baseline"); before the baseline was widened they were 3 and 6 of ten
answered (Russian, Chinese), with 59 and 60 real questions answered with
their evidence. The Russian and Chinese sets run here, the scripts the
baseline was thinnest in; `python -m bench.multilingual` measures all three
(the English set: at most 4 of ten, 58 real questions, against 6 and 57).
On the English set one query is checked too: the "s" of "Fermat's" is in
half its notes ("Biscuit's jab"), and such a match alone once answered it
with nine of them.

One person can write in two languages at once: the Chinese and English sets
merged line by line into the same files (`bench.multilingual.interleaved`)
put lines of both in every chunk. Read as Chinese, such a chunk was raised
by the whole distance between the scripts for an English query, and as
English for a Chinese one, so all ten Chinese queries and seven of the ten
English ones got answers; a chunk now keeps only what its lines in the
query's language leave of that distance (`embed.reference.still_apart`).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator, Mapping, Sequence

import pytest

from bench.multilingual import DATA_DIR, EvalSet, evidence_in, interleaved, load_set
from conftest import Daemon, isolated_env
from test_e2e_semantic import wait_for_vectors

pytestmark = pytest.mark.e2e

WRITTEN_APART = 10  # the last ten of a set's unrelated queries

# set: (most of the ten answered, fewest of the 60 questions answered with evidence)
BOUNDS = {"ru": (2, 59), "zh": (2, 60)}


@pytest.fixture(scope="module", params=sorted(BOUNDS))
def notes(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[EvalSet, Daemon]]:
    """One daemon a set, on its notes, every chunk embedded."""
    with _serving(request.param, tmp_path_factory) as served:
        yield served


@pytest.fixture(scope="module")
def english_notes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[EvalSet, Daemon]]:
    with _serving("en", tmp_path_factory) as served:
        yield served


@pytest.fixture(scope="module")
def bilingual_notes(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[list[EvalSet], Daemon]]:
    """The Chinese and English notes merged line by line, every chunk embedded."""
    sets = interleaved([load_set(DATA_DIR / f"{name}.json") for name in ("zh", "en")])
    with _serving("zh+en", tmp_path_factory, sets[0].files) as (_, daemon):
        yield sets, daemon


@contextlib.contextmanager
def _serving(
    name: str, tmp_path_factory: pytest.TempPathFactory, files: Mapping[str, str] | None = None
) -> Iterator[tuple[EvalSet, Daemon]]:
    eval_set = load_set(DATA_DIR / f"{name}.json") if files is None else EvalSet(name, files, ())
    root = tmp_path_factory.mktemp(f"notes-{name}")
    with isolated_env(root) as env:
        env.write_config("")  # the defaults, with the bundled local model
        for name, text in eval_set.files.items():
            path = env.workspace / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text if text.endswith("\n") else text + "\n", encoding="utf-8")
        daemon = Daemon(env).start()
        try:
            wait_for_vectors(daemon)
            yield eval_set, daemon
        finally:
            daemon.stop()


def test_few_unrelated_queries_are_answered_and_real_ones_keep_their_answers(
    notes: tuple[EvalSet, Daemon],
) -> None:
    eval_set, daemon = notes
    most_answered, fewest_held = BOUNDS[eval_set.name]
    answered, missed = _asked(daemon, eval_set)
    assert len(answered) <= most_answered, answered
    assert len(eval_set.questions) - len(missed) >= fewest_held, missed


# set: (most of its ten answered, fewest of its 60 questions answered with
# evidence) in the merged workspace; before a chunk's lines in the query's
# language counted, 10 and 7 of ten were answered, 58 and 46 questions
BILINGUAL_BOUNDS = {"zh": (4, 58), "en": (4, 48)}


def test_notes_written_in_two_languages_at_once_answer_few_unrelated_queries(
    bilingual_notes: tuple[list[EvalSet], Daemon],
) -> None:
    sets, daemon = bilingual_notes
    for eval_set in sets:
        most_answered, fewest_held = BILINGUAL_BOUNDS[eval_set.name]
        answered, missed = _asked(daemon, eval_set)
        assert len(answered) <= most_answered, (eval_set.name, answered)
        assert len(eval_set.questions) - len(missed) >= fewest_held, (eval_set.name, missed)


def _asked(daemon: Daemon, eval_set: EvalSet) -> tuple[list[tuple[str, list[str]]], list[str]]:
    """The last ten of *eval_set*'s unrelated queries that got an answer by
    default (with the files answering), and the questions whose default
    answer holds none of their evidence."""
    apart: Sequence[str] = eval_set.unrelated[-WRITTEN_APART:]
    assert len(apart) == WRITTEN_APART
    with daemon.client() as client:
        answered = [
            (query, [hit.path for hit in reply.results])
            for query in apart
            if (reply := client.search(query, limit=10)).results
        ]
        missed = [
            question.text
            for question in eval_set.questions
            if not any(
                evidence_in(hit, question.evidence)
                for hit in client.search(question.text, limit=10).results
            )
        ]
    return answered, missed


def test_what_an_apostrophe_leaves_is_no_match_on_its_own(
    english_notes: tuple[EvalSet, Daemon],
) -> None:
    _, daemon = english_notes
    with daemon.client() as client:
        reply = client.search("proof of Fermat's last theorem", limit=10)
    # "last" is a word of the query two notes hold ("last night", "Last day
    # before half-term"); no other note holds one
    assert len(reply.results) <= 2, [hit.path for hit in reply.results]
    for hit in reply.results:
        assert "last" in hit.snippet.lower(), hit.snippet


def test_a_question_naming_someone_in_latin_letters_finds_the_english_note(
    english_notes: tuple[EvalSet, Daemon],
) -> None:
    """A Chinese question keeps names in Latin letters ("Priya 对我演讲彩排的
    反馈是什么？"). Asked of notes kept in English, the note naming Priya
    holds part of the query only, and the model, comparing a Chinese
    question with English text, saw nothing in it: it was dropped, and the
    question got notes in other words instead. Holding every word the query
    has in the note's own script now counts (`text.terms.words_by_script`):
    16 of the 17 such questions are answered with their evidence, against 14
    (`python -m bench.multilingual --methods calibrated`), and no more
    unrelated Chinese queries are answered."""
    eval_set, daemon = english_notes
    (asked,) = [t for t in eval_set.translated if t.language == "zh"]
    named = [q for q in asked.questions if re.search("[A-Za-z]{2,}", q.text)]
    assert len(named) == 17
    with daemon.client() as client:
        missed = [
            q.text
            for q in named
            if not any(
                evidence_in(hit, q.evidence) for hit in client.search(q.text, limit=10).results
            )
        ]
        unrelated = [u for u in asked.unrelated if client.search(u, limit=10).results]
    assert not [q for q in missed if q.startswith(("Priya", "Tariq"))], missed
    assert len(missed) <= 2, missed
    assert len(unrelated) <= 1, unrelated
