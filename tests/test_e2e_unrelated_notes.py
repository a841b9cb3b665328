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
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest

from bench.multilingual import DATA_DIR, EvalSet, evidence_in, load_set
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


@contextlib.contextmanager
def _serving(
    name: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[EvalSet, Daemon]]:
    eval_set = load_set(DATA_DIR / f"{name}.json")
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
    apart = eval_set.unrelated[-WRITTEN_APART:]
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
    assert len(answered) <= most_answered, answered
    assert len(eval_set.questions) - len(missed) >= fewest_held, missed


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
