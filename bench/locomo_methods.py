"""The search configurations LoCoMo measures, each a complete daemon config.

Every ranking key is written explicitly, so a change of the built-in
defaults cannot relabel a method; the default configuration is the method
named ``calibrated``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from bench.daemon import embedder_toml
from bench.locomo_data import LAYOUTS, NAMED_LAYOUTS
from openmemoryd.embed.packaged import package_dir
from openmemoryd.search.rerank.local import INSTALL_COMMAND, WEIGHTS_PACKAGE


def _config(
    provider: str,
    *,
    vector_weight: float = 0.5,
    text_weight: float = 0.5,
    fusion: str = "weighted",
    mmr: bool = False,
    decay: bool = False,
    date_aware: bool = False,
    neighbours: bool = False,
    head_estimate: bool = False,
    snippet_chars: int = 700,
    candidate_multiplier: int = 4,
    trim_overlap: bool = False,
    item_snippets: bool = False,
    query_threads: int | None = None,
    engine: str | None = None,
    budget_whole_share: float = 0.7,
    rerank: tuple[int, float, float] | None = None,
) -> str:
    """A complete ranking config, so a method means the same whatever the defaults become.

    *rerank* is (top_n, weight, confident_at) of the local cross-encoder;
    None: no reranking.
    """
    reranking = (
        f'provider = "local"\ntop_n = {rerank[0]}\nweight = {rerank[1]}\n'
        f"confident_at = {rerank[2]}\ntimeout_s = 60\n"
        if rerank is not None
        else 'provider = "none"\n'
    )
    return (
        embedder_toml(provider, query_threads=query_threads, engine=engine)
        + f"\n[search]\nvector_weight = {vector_weight}\ntext_weight = {text_weight}\n"
        f"budget_whole_share = {budget_whole_share}\n"
        f'fusion = "{fusion}"\ndate_aware = {str(date_aware).lower()}\n'
        f"neighbours = {str(neighbours).lower()}\n"
        f"head_estimate = {str(head_estimate).lower()}\n"
        f"trim_overlap = {str(trim_overlap).lower()}\n"
        f"item_snippets = {str(item_snippets).lower()}\n"
        f"snippet_chars = {snippet_chars}\ncandidate_multiplier = {candidate_multiplier}\n\n"
        f"[search.mmr]\nenabled = {str(mmr).lower()}\nlambda = 0.7\n\n"
        f"[search.decay]\nenabled = {str(decay).lower()}\nhalf_life_days = 30.0\nfloor = 0.5\n"
        f"\n[search.rerank]\n{reranking}"
    )


# (top_n, weight, confident_at) of the local reranker as the default runs it.
DEFAULT_RERANK: Final = (10, 1.0, 0.45)


def _default(
    *,
    snippet_chars: int = 700,
    candidate_multiplier: int = 8,
    trim_overlap: bool = True,
    item_snippets: bool = True,
    query_threads: int | None = None,
    engine: str | None = None,
    budget_whole_share: float = 0.7,
    mmr: bool = False,
    rerank: tuple[int, float, float] | None = DEFAULT_RERANK,
    head_estimate: bool = True,
) -> str:
    """The default configuration: calibrated fusion with dates, neighbours and
    the second estimate of the first three, the local cross-encoder's order
    of the best ten where the fusion is unsure of an English question, hits
    trimmed of the lines a better hit shows, and a list item with its
    neighbours where the query's words all fall in it."""
    return _config(
        "local",
        mmr=mmr,
        rerank=rerank,
        fusion="calibrated",
        date_aware=True,
        neighbours=True,
        head_estimate=head_estimate,
        snippet_chars=snippet_chars,
        candidate_multiplier=candidate_multiplier,
        trim_overlap=trim_overlap,
        item_snippets=item_snippets,
        query_threads=query_threads,
        engine=engine,
        budget_whole_share=budget_whole_share,
    )


@dataclass(frozen=True, slots=True)
class Method:
    """One search configuration under test.

    `layouts` are those it may run on; `default_layouts` those a run without
    ``--layouts`` uses (both layouts of daily files only where the comparison
    says something: they hold the same text, so they can differ only by
    decay; the one-file journal only when asked for).
    """

    name: str
    description: str
    config_toml: str
    vectors: bool
    layouts: tuple[str, ...] = LAYOUTS
    default_layouts: tuple[str, ...] = ("dated",)
    # A package the method needs that is no dependency of ours (its weights),
    # and the command that installs it; such methods run only when named.
    package: str | None = None
    install: str = ""


# (top_n, weight, confident_at) of the local reranker's methods.
RERANK_SETTINGS: Final = (
    (10, 1.0, 1.0),
    (10, 0.7, 1.0),
    (3, 1.0, 1.0),
    (5, 1.0, 0.6),
    (10, 1.0, 0.6),
    (10, 1.0, 0.45),
    (5, 1.0, 0.45),
    (10, 1.0, 0.8),
)


def _rerank_name(top_n: int, weight: float, confident_at: float) -> str:
    unsure = "" if confident_at >= 1.0 else f"-unsure{confident_at}"
    return f"calibrated-rerank-{top_n}-{weight}{unsure}"


def _rerank_description(top_n: int, weight: float, confident_at: float) -> str:
    only = (
        ""
        if confident_at >= 1.0
        else f", only searches whose first estimate is below {confident_at}"
    )
    return (
        f"the default, its best {top_n} reranked by the local cross-encoder"
        f" (ms-marco-MiniLM-L-12-v2), blended at weight {weight}{only}"
    )


METHODS: Final[Mapping[str, Method]] = {
    m.name: m
    for m in (
        Method(
            "calibrated",
            "calibrated fusion with dates and neighbours, the local cross-encoder where"
            " it is unsure, overlap trimmed (the default)",
            _default(),
            vectors=True,
            default_layouts=NAMED_LAYOUTS,
        ),
        Method(
            "calibrated-norerank",
            "the default without the local cross-encoder (search.rerank.provider = none)",
            _default(rerank=None),
            vectors=True,
            default_layouts=NAMED_LAYOUTS,
        ),
        Method(
            "calibrated-nohead",
            "the default, but the first three keep the order of the first estimate"
            " (head_estimate = false)",
            _default(head_estimate=False),
            vectors=True,
        ),
        Method(
            "calibrated-repeats",
            "the default, but a hit shows its whole chunk even where a better hit showed its lines",
            _default(trim_overlap=False),
            vectors=True,
        ),
        Method(
            "calibrated-wholechunks",
            "the default, but a hit shows its whole chunk even where the query's words all"
            " fall in one list item (item_snippets = false)",
            _default(item_snippets=False),
            vectors=True,
        ),
        Method(
            "calibrated-budget-whole",
            "the default, but a token budget shows whole hits while any fits"
            " (budget_whole_share = 1.0; later ones as their best line)",
            _default(budget_whole_share=1.0),
            vectors=True,
        ),
        Method(
            "calibrated-budget-0.5",
            "the default, but a token budget shows whole hits while they fill half of it"
            " (budget_whole_share = 0.5)",
            _default(budget_whole_share=0.5),
            vectors=True,
        ),
        Method(
            "calibrated-budget-0.9",
            "the default, but a token budget shows whole hits while they fill 90 % of it"
            " (budget_whole_share = 0.9)",
            _default(budget_whole_share=0.9),
            vectors=True,
        ),
        Method(
            "calibrated-mmr",
            "the default with MMR diversity re-ranking (lambda 0.7) after fusion",
            _default(mmr=True),
            vectors=True,
        ),
        *(
            Method(
                _rerank_name(*settings),
                _rerank_description(*settings),
                _default(rerank=settings),
                vectors=True,
                package=WEIGHTS_PACKAGE,
                install=INSTALL_COMMAND,
            )
            for settings in RERANK_SETTINGS
        ),
        Method(
            "calibrated-qthreads2",
            "the default with two BLAS threads for each query's embedding (one by default)",
            _default(query_threads=2),
            vectors=True,
        ),
        Method(
            "calibrated-numpy",
            "the default with the model run by numpy instead of ONNX Runtime (the same vectors)",
            _default(engine="numpy"),
            vectors=True,
        ),
        Method(
            "calibrated-snippets-400",
            "the default with 400-character snippets (more hits in a budget)",
            _default(snippet_chars=400),
            vectors=True,
        ),
        Method(
            "calibrated-snippets-800",
            "800-character snippets: whole chunks up to 200 tokens (--chunk-tokens 200)",
            _default(snippet_chars=800),
            vectors=True,
        ),
        Method(
            "calibrated-pool4",
            "the default with 4 x limit candidates a leg (40 at limit 10), the previous default",
            _default(candidate_multiplier=4),
            vectors=True,
        ),
        Method(
            "calibrated-pool16",
            "the default with 16 x limit candidates from each leg (160 at limit 10)",
            _default(candidate_multiplier=16),
            vectors=True,
        ),
        Method(
            "calibrated-noneighbours",
            "calibrated fusion with dates, neighbouring chunks not raised",
            _config("local", fusion="calibrated", date_aware=True),
            vectors=True,
        ),
        Method(
            "calibrated-nodates",
            "calibrated fusion, neither query dates nor neighbours",
            _config("local", fusion="calibrated"),
            vectors=True,
        ),
        Method(
            "bm25",
            "keyword only (embedding provider none)",
            _config("none"),
            vectors=False,
            default_layouts=NAMED_LAYOUTS,
        ),
        Method(
            "vector",
            "local e5 vectors only (weights 1.0/0.0)",
            _config("local", vector_weight=1.0, text_weight=0.0),
            vectors=True,
        ),
        Method(
            "hybrid-0.3",
            "weighted fusion 0.3 vector / 0.7 keyword",
            _config("local", vector_weight=0.3, text_weight=0.7),
            vectors=True,
        ),
        Method(
            "hybrid-0.5",
            "weighted fusion 0.5 vector / 0.5 keyword",
            _config("local"),
            vectors=True,
            default_layouts=NAMED_LAYOUTS,
        ),
        Method(
            "hybrid-0.7",
            "weighted fusion 0.7 vector / 0.3 keyword",
            _config("local", vector_weight=0.7, text_weight=0.3),
            vectors=True,
        ),
        Method(
            "rrf",
            "reciprocal rank fusion (k 60)",
            _config("local", fusion="rrf"),
            vectors=True,
        ),
        Method(
            "hybrid-0.5-mmr",
            "0.5/0.5 then MMR (lambda 0.7)",
            _config("local", mmr=True),
            vectors=True,
        ),
        Method(
            "hybrid-0.5-decay",
            "0.5/0.5 with temporal decay (half-life 30 d, floor 0.5)",
            _config("local", decay=True),
            vectors=True,
            layouts=("dated",),
        ),
    )
}


def unmet_needs(methods: Sequence[Method]) -> list[str]:
    """What installs the packages *methods* need and this machine lacks, one line a method."""
    return [
        f"{m.name} needs `{m.install}`"
        for m in methods
        if m.package is not None and package_dir(m.package) is None
    ]
