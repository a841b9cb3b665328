"""One search, from query text to the reply, on a read-only connection.

Stages: keyword leg (BM25) and vector leg (cosine, when an embedded query and
a matching vector table exist) → fusion (weighted sum, or RRF) → min_score →
rerank (`rerank.stage`: the best ``top_n`` scored by a cross-encoder, by
default the local English one where the fusion is unsure, blended with the
fused score; re-orders, never hides) → temporal
decay (optional, floored; after the threshold so it re-orders but never
hides) → MMR (optional) → limit → snippets. `rank_candidates` does the part
that reads the index, `finish_search` the rest, so the engine can await a
rerank service between them. Without a vector leg the keyword score is the
score.

Thresholding rules (OpenClaw PR #20994 is the bug they avoid):

* results are ranked by the fused score, but ``min_score`` is the bar for a
  result's *strongest evidence*: its vector score or its keyword score,
  whichever is higher. With weighted fusion a result found by one leg only
  can never score more than that leg's weight, so a bar on the fused score
  would hide exactly what hybrid search is for: matches by meaning with no
  shared word (an English question finding a Chinese note), and exact
  keywords the model misses;
* when nothing reaches the bar and the caller did not set ``min_score``
  explicitly, chunks holding *every* word of the query (the letters an
  apostrophe leaves aside: the "s" of "Wei's") are returned anyway
  and the reply says ``threshold_relaxed``: the default must never answer
  "nothing" when the memory holds an exact keyword match (BM25 scores of
  terms that occur in most notes of a small workspace are near zero). A
  chunk sharing only some of the words, or found by the vector leg alone
  with a weak score, is not evidence: an unrelated query ("lattice quantum
  chromodynamics" in a workspace of cooking notes) returns nothing, with
  ``below_min_score`` and the best score seen, rather than the least
  unrelated notes. ``search.relaxed_fallback = true`` brings back the old
  rule (any keyword hit, any vector score above the model's floor);
* a note of a day the query names ("what did I buy on 23 March?", "в
  начале августа", 上周; not a whole month or year) is evidence by its date
  alone: the day's file or heading answers the question even when it
  shares no word with it ("Bought climbing shoes") and the vector leg is
  not sure of it;
* an explicit ``min_score`` is honoured strictly, and an empty reply then
  says ``below_min_score`` with the best evidence seen;
* a reranker only re-orders what passed these rules: its blended score
  becomes the hit's ``score`` but is never compared with ``min_score``.

Chunks overlap, so a hit does not repeat the lines a better hit of the same
file already shows (``search.trim_overlap``): its snippet and citation start
after them, or end before them, and a hit with nothing else to show is left
out (the next candidate takes its place).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import date

import apsw

from omem_protocol import KNOWN_SOURCES, QueryDays, SearchExplain, SearchResult
from openmemoryd.config import SearchSettings
from openmemoryd.errors import BadRequest
from openmemoryd.search.calibrated import Described, fuse_calibrated
from openmemoryd.search.candidate import Candidate
from openmemoryd.search.dates import DateRange, QueryDates, memory_days, parse_query_dates
from openmemoryd.search.decay import apply_decay
from openmemoryd.search.evidence import relaxed_matches, strongest
from openmemoryd.search.fusion import fuse_rrf, fuse_weighted, normalize_weights
from openmemoryd.search.hits import to_hits
from openmemoryd.search.lexical import lexical_leg
from openmemoryd.search.mmr import mmr_rerank
from openmemoryd.search.salience import apply_salience
from openmemoryd.search.timeline import is_timeline_request, timeline_candidates
from openmemoryd.search.vector import VectorQuery, rescale, vector_leg
from openmemoryd.store import RowidRange, chunk_count, file_mtimes
from openmemoryd.store.vectors import distances
from openmemoryd.text import apostrophe_tails, query_terms, words_by_script, words_of

MAX_CANDIDATES = 200


@dataclass(frozen=True, slots=True)
class SearchQuery:
    """A validated search request; None means "use the configured default"."""

    text: str
    limit: int | None = None
    min_score: float | None = None
    sources: tuple[str, ...] | None = None
    explain: bool = False
    agent: str | None = None
    # An answer of at most this many tokens (`openmemoryd.search.budget`); without a
    # limit, the search then considers as many hits as it could show.
    max_tokens: int | None = None
    # Hits a reader (an agent, a person) will see: reranked when a reranker
    # is set, a query for days may take the timeline, and a note of a day
    # the query names passes min_score by its date. False for the
    # daemon's own look-ups (duplicates, forget), which use the set of hits
    # for their own matching: no rerank cost or latency, no shortcut.
    for_reader: bool = True


@dataclass(frozen=True, slots=True)
class SearchContext:
    """What the engine knows that the reply must report."""

    provider: str
    model: str | None
    stale: bool
    degraded: bool = False
    degraded_reason: str | None = None
    fallback: bool = False


@dataclass(frozen=True, slots=True)
class EarlyKeywords:
    """The keyword leg run ahead, while the query is being embedded.

    Its terms depend on whether the vector leg takes part (calibrated fusion
    takes the query's dates out of them), which is known only once the
    embedding is done; `rank_candidates` uses it only if its terms and pool
    are what it would have searched for, and runs the leg itself otherwise.
    """

    terms: list[str]
    pool: int
    candidates: list[Candidate]


def early_keywords(
    conn: apsw.Connection,
    query: SearchQuery,
    settings: SearchSettings,
    now: float = 0.0,
    part: RowidRange | None = None,
) -> EarlyKeywords | None:
    """The keyword leg as a search with a vector leg will run it; None for a
    query `rank_candidates` refuses (it says why). With *part*, the best of
    that range of chunk ids only (`merge_early` joins the parts)."""
    if (
        not settings.hybrid
        or not query.text.strip()
        or set(query.sources or ()) - set(KNOWN_SOURCES)
    ):
        return None
    pool = _pool(query, settings)
    calibrated = settings.fusion == "calibrated"
    dates = _query_dates(query.text, settings, now) if calibrated else QueryDates((), query.text)
    terms = query_terms(dates.rest)
    found = lexical_leg(conn, terms, pool, query.sources, query.agent, part)
    return EarlyKeywords(terms, pool, found)


def merge_early(parts: Sequence[EarlyKeywords | None]) -> EarlyKeywords | None:
    """The keyword leg from its parts over disjoint ranges of chunk ids: the
    best *pool* of their union is the best *pool* of the whole, since each
    part holds the best *pool* of its range (BM25 is the same in each: FTS5
    counts a term's rows over the whole index)."""
    if not parts or any(part is None for part in parts):
        return None
    found = [part for part in parts if part is not None]
    candidates = sorted(
        (c for part in found for c in part.candidates), key=lambda c: -(c.text_score or 0.0)
    )
    return EarlyKeywords(found[0].terms, found[0].pool, candidates[: found[0].pool])


@dataclass(frozen=True, slots=True)
class EarlyNearest:
    """The vector leg run ahead, as soon as the query is embedded, while the
    keyword leg may still be running (at 1M chunks it takes ~10x as long as
    the embedding); used only for this vector and pool."""

    vector: VectorQuery
    pool: int
    candidates: list[Candidate]


def early_nearest(
    conn: apsw.Connection, query: SearchQuery, settings: SearchSettings, vector: VectorQuery
) -> EarlyNearest | None:
    """The vector leg as `rank_candidates` will run it; None for a query it
    refuses (it says why)."""
    if not query.text.strip() or set(query.sources or ()) - set(KNOWN_SOURCES):
        return None
    pool = _pool(query, settings)
    found = vector_leg(conn, vector, pool, query.sources, query.agent, settings.quantised_above)
    return EarlyNearest(vector, pool, found)


def _pool(query: SearchQuery, settings: SearchSettings) -> int:
    """Candidates each leg returns."""
    limit = query.limit or settings.limit
    return min(MAX_CANDIDATES, max(1, limit * settings.candidate_multiplier))


@dataclass(frozen=True, slots=True)
class Ranked:
    """A search after fusion and thresholds: everything the index had to say.

    The stages after this one (rerank, decay, MMR, snippets) need no
    connection, so an asynchronous stage (a rerank service) can run between
    `rank_candidates` (on a reader) and `finish_search`.
    """

    chosen: list[Candidate]  # past min_score (or relaxed), in fused order
    terms: list[str]
    limit: int
    min_score: float
    relaxed: bool
    mode: str
    lexical_count: int
    nearest_count: int
    mtimes: dict[str, float]  # of the chosen files, when decay is on
    empty_reason: str | None  # set when nothing was chosen
    best: float | None
    # the candidates' scores are calibrated fusion's estimates (both legs ran)
    calibrated: bool = False
    # the days read from the query, and whether they went back to the
    # keyword query as words (no candidate was of those days), for --explain
    dates: tuple[DateRange, ...] = ()
    dates_as_words: bool = False


def run_search(
    conn: apsw.Connection,
    query: SearchQuery,
    settings: SearchSettings,
    context: SearchContext,
    vector: VectorQuery | None = None,
    now: float = 0.0,
    early: EarlyKeywords | None = None,
    nearest: EarlyNearest | None = None,
) -> SearchResult:
    """Run *query* on *conn*; `took_ms` is left 0 for the caller to fill."""
    ranked = rank_candidates(conn, query, settings, vector, now, early, nearest)
    return finish_search(ranked, query, settings, context, now)


def rank_candidates(
    conn: apsw.Connection,
    query: SearchQuery,
    settings: SearchSettings,
    vector: VectorQuery | None = None,
    now: float = 0.0,
    early: EarlyKeywords | None = None,
    early_vectors: EarlyNearest | None = None,
    observe: Callable[[Described], None] | None = None,
) -> Ranked:
    """The legs, fusion and thresholds of *query* on *conn*; *early* and
    *early_vectors*: the keyword and vector legs already run
    (`early_keywords`, `early_nearest`), each used if it fits; *observe*:
    shown calibrated fusion's candidates and features (`fuse_calibrated`)."""
    if not query.text.strip():
        raise BadRequest("query is empty")
    unknown = sorted(set(query.sources or ()) - set(KNOWN_SOURCES))
    if unknown:
        raise BadRequest(f"unknown source {', '.join(unknown)} (known: {', '.join(KNOWN_SOURCES)})")
    limit = query.limit or settings.limit
    min_score = settings.min_score if query.min_score is None else query.min_score
    if not query_terms(query.text):
        # Only punctuation or emoji ("🚀", "???"): nothing to search by. The
        # vector leg would still rank the chunks nearest such a query's
        # embedding, near the middle of the model's space, and none of them
        # answers it.
        return Ranked(
            chosen=[],
            terms=[],
            limit=limit,
            min_score=min_score,
            relaxed=False,
            mode="lexical" if vector is None else "hybrid" if settings.hybrid else "vector",
            lexical_count=0,
            nearest_count=0,
            mtimes={},
            empty_reason="no_terms",
            best=None,
        )
    # Dates leave the keyword query only where calibrated fusion can use
    # them as a ranking signal: dropped with nothing in their place, the
    # words "May" and "2022" still helped BM25 a little (docs/recall.md).
    calibrated = vector is not None and settings.fusion == "calibrated"
    dates = _query_dates(query.text, settings, now)
    if settings.timeline and query.for_reader and is_timeline_request(dates):
        return _timeline(conn, query, dates, limit, min_score)
    if not calibrated:
        dates = QueryDates((), query.text, query.text)
    terms = query_terms(dates.rest)
    pool = _pool(query, settings)

    # `hybrid = false` (OpenClaw's hybrid.enabled): the vector leg alone
    # while there is one; keywords still answer when there is not.
    keywords = settings.hybrid or vector is None
    if not keywords:
        lexical = []
    elif early is not None and early.terms == terms and early.pool == pool:
        lexical = early.candidates
    else:
        lexical = lexical_leg(conn, terms, pool, query.sources, query.agent)
    if vector is None:
        nearest = []
    elif (
        early_vectors is not None and early_vectors.vector == vector and early_vectors.pool == pool
    ):
        nearest = early_vectors.candidates
    else:
        nearest = vector_leg(
            conn, vector, pool, query.sources, query.agent, settings.quantised_above
        )
    read = dates.ranges
    if calibrated and keywords and dates.ranges and not _any_dated(dates, lexical, nearest):
        # No candidate is about the days the query names: read as a date they
        # would lift nothing, so their words go back to the keyword query.
        dates = QueryDates((), query.text, query.text)
        terms = query_terms(query.text)
        lexical = lexical_leg(conn, terms, pool, query.sources, query.agent)
    if vector is None:
        merged = lexical
    elif calibrated:
        merged = _fuse_calibrated(
            conn,
            lexical,
            nearest,
            vector,
            terms,
            dates,
            neighbours=settings.neighbours,
            head=settings.head_estimate,
            observe=observe,
        )
    else:
        merged = _fuse(lexical, nearest, settings)

    # Only a query naming days, not months, spends a date look-up a candidate.
    by_date = query.for_reader and dates.names_days
    # The words a note must hold to match the whole query: not what an
    # apostrophe leaves (the "s" of "Wei's").
    words = words_of(terms)
    parts = words_by_script(words)  # a mixed query: its words in each script
    # What the query's own apostrophes left ("s" of "Fermat's"; not the "d"
    # of "vitamin D"): a keyword match of those alone is no evidence.
    tails = apostrophe_tails(query.text).intersection(terms)
    real = [t for t in terms if t not in tails] if tails else []

    def evidence(candidate: Candidate) -> float:
        if by_date and dates.names_any(_days(candidate)):
            return 1.0  # a note of a day the query names ("on 23 March")
        return strongest(candidate, vector, words, real, parts)

    judged = {c.id: evidence(c) for c in merged}
    chosen = [c for c in merged if judged[c.id] >= min_score]
    relaxed = False
    if not chosen and query.min_score is None:
        chosen = relaxed_matches(
            merged, words, lambda c: judged[c.id], everything=settings.relaxed_fallback
        )
        relaxed = bool(chosen)
    # each hit says what it was judged by (`--explain`)
    chosen = [replace(c, evidence=round(judged[c.id], 6)) for c in chosen]
    mtimes: dict[str, float] = {}
    if settings.decay.enabled and chosen:
        mtimes = file_mtimes(conn, [c.path for c in chosen])

    empty_reason: str | None = None
    best: float | None = None
    if not chosen:
        if merged:
            empty_reason = "below_min_score"
            best = round(max(judged.values()), 6)
        elif chunk_count(conn) == 0:
            empty_reason = "index_empty"
        else:
            empty_reason = "no_match"
    return Ranked(
        chosen=chosen,
        terms=terms,
        limit=limit,
        min_score=min_score,
        relaxed=relaxed,
        mode="lexical" if vector is None else "hybrid" if keywords else "vector",
        lexical_count=len(lexical),
        nearest_count=len(nearest),
        mtimes=mtimes,
        empty_reason=empty_reason,
        best=best,
        calibrated=calibrated,
        dates=read,
        dates_as_words=bool(read) and not dates.ranges,
    )


def finish_search(
    ranked: Ranked,
    query: SearchQuery,
    settings: SearchSettings,
    context: SearchContext,
    now: float = 0.0,
    chosen: list[Candidate] | None = None,
) -> SearchResult:
    """Decay, MMR, the limit and snippets; *chosen* replaces `Ranked.chosen`
    (the same candidates, re-ordered by a reranker)."""
    chosen = ranked.chosen if chosen is None else chosen
    # A timeline's order is the days' order: no decay or diversity re-ordering.
    timeline = ranked.mode == "timeline"
    if settings.decay.enabled and chosen and not timeline:
        # After thresholding, so decay re-orders relevant memories and never
        # pushes an old one under min_score (docs/recall.md).
        mtimes = ranked.mtimes
        chosen = apply_decay(
            chosen,
            now=now,
            half_life_days=settings.decay.half_life_days,
            mtime_of=lambda c: c.msg_time if c.msg_time is not None else mtimes.get(c.path),
            floor=settings.decay.floor,
        )
    if settings.salience.enabled and chosen and not timeline:
        chosen = apply_salience(
            chosen,
            reinforcement_weight=settings.salience.reinforcement,
            access_weight=settings.salience.access,
        )
    if settings.mmr.enabled and len(chosen) > 1 and not timeline:
        chosen = mmr_rerank(chosen, lambda_=settings.mmr.lambda_)
    hits = to_hits(
        chosen,
        ranked.terms,
        ranked.limit,
        settings.snippet_chars,
        settings.trim_overlap,
        settings.item_snippets,
    )
    explain = _explain(settings, ranked) if query.explain else None
    return SearchResult(
        results=tuple(hits),
        mode=ranked.mode,
        provider=context.provider,
        model=context.model,
        degraded=context.degraded,
        degraded_reason=context.degraded_reason,
        fallback=context.fallback,
        stale=context.stale,
        empty_reason=None if hits else ranked.empty_reason,
        best_score=None if hits else ranked.best,
        min_score=ranked.min_score,
        threshold_relaxed=ranked.relaxed and bool(hits),
        took_ms=0.0,
        explain=explain,
    )


def _any_dated(dates: QueryDates, *legs: Sequence[Candidate]) -> bool:
    """Whether a candidate of *legs* is about a day *dates* names."""
    return any(dates.matches_any(_days(c)) for leg in legs for c in leg)


def _days(candidate: Candidate) -> tuple[date, ...]:
    """The days *candidate* is about (`dates.memory_days`)."""
    return memory_days(candidate.path, candidate.heading, candidate.inner_headings)


def _query_dates(text: str, settings: SearchSettings, now: float) -> QueryDates:
    """The dates *text* mentions (relative ones against the local day of *now*)."""
    if not settings.date_aware:
        return QueryDates((), text, text)
    today = date.fromtimestamp(now) if now > 0 else date.today()
    return parse_query_dates(text, today, south=settings.seasons == "south")


def _timeline(
    conn: apsw.Connection, query: SearchQuery, dates: QueryDates, limit: int, min_score: float
) -> Ranked:
    """A query for days and nothing else: their notes, newest first (`search.timeline`)."""
    chosen = timeline_candidates(conn, dates, query.sources, query.agent)
    return Ranked(
        chosen=chosen,
        terms=[],
        limit=limit,
        min_score=min_score,
        relaxed=False,
        mode="timeline",
        lexical_count=0,
        nearest_count=0,
        mtimes={},
        empty_reason=None if chosen else "nothing_dated",
        best=None,
        dates=dates.ranges,
    )


def _fuse_calibrated(
    conn: apsw.Connection,
    lexical: list[Candidate],
    nearest: list[Candidate],
    vector: VectorQuery,
    terms: list[str],
    dates: QueryDates,
    *,
    neighbours: bool,
    head: bool,
    observe: Callable[[Described], None] | None,
) -> list[Candidate]:
    found = {c.id for c in nearest}
    missing = [c.id for c in lexical if c.id not in found]
    scores = {
        chunk_id: rescale(1.0 - distance, vector.score_floor, vector.score_ceiling)
        for chunk_id, distance in distances(conn, vector.table, vector.vector, missing).items()
    }
    date_match = named_day = None
    if dates.ranges:

        def date_match(candidate: Candidate) -> bool:
            return dates.matches_any(_days(candidate))

    if dates.names_days:

        def named_day(candidate: Candidate) -> bool:
            return dates.names_any(_days(candidate))

    return fuse_calibrated(
        lexical,
        nearest,
        vector_scores=scores,
        terms=terms,
        date_match=date_match,
        neighbours=neighbours,
        head=head,
        observe=observe,
        vector_raise=vector.raises((*lexical, *nearest), scores),
        named_day=named_day,
    )


def _fuse(
    lexical: list[Candidate], nearest: list[Candidate], settings: SearchSettings
) -> list[Candidate]:
    if settings.fusion == "rrf":
        return fuse_rrf(lexical, nearest, k=settings.rrf_k)
    vector_weight, text_weight = normalize_weights(settings.vector_weight, settings.text_weight)
    return fuse_weighted(lexical, nearest, vector_weight=vector_weight, text_weight=text_weight)


def _explain(settings: SearchSettings, ranked: Ranked) -> SearchExplain:
    vector_weight, text_weight = normalize_weights(settings.vector_weight, settings.text_weight)
    return SearchExplain(
        vector_weight=vector_weight,
        text_weight=text_weight,
        fusion=settings.fusion,
        decay=settings.decay.enabled,
        half_life_days=settings.decay.half_life_days,
        decay_floor=settings.decay.floor,
        mmr=settings.mmr.enabled,
        mmr_lambda=settings.mmr.lambda_,
        lexical_candidates=ranked.lexical_count,
        vector_candidates=ranked.nearest_count,
        query_terms=tuple(ranked.terms),
        neighbours=settings.neighbours,
        head_estimate=settings.head_estimate,
        dates=tuple(
            QueryDays(start=_day(span.start, span.any_year), end=_day(span.end, span.any_year))
            for span in ranked.dates
        ),
        dates_as_words=ranked.dates_as_words,
    )


def _day(day: date, any_year: bool) -> str:
    """ISO 8601: ``2026-03-03``, or ``--03-03`` for any year's."""
    return day.strftime("--%m-%d") if any_year else day.isoformat()
