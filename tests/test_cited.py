"""The citation ledger (`engine.cited`): what is noted, and what `forget` by
a citation decides from it: act, act where the text moved, or refuse."""

from __future__ import annotations

from conftest import search_result
from omem_protocol import (
    CapturedMemory,
    CaptureResult,
    ForgetCandidate,
    ForgetResult,
    LogResult,
    LogSimilar,
    SearchHit,
)
from openmemoryd.engine.cited import (
    Changed,
    CitedLedger,
    Held,
    Moved,
    Served,
    Unknown,
    decide,
    line_key,
    note_reply,
    stale_message,
)

K8S = "- Мы решили перейти на Kubernetes для всех сервисов"
TLS = "- Мы решили включить TLS между всеми сервисами"
KAFKA = "- Мы решили перейти на Kafka вместо RabbitMQ"
FLOOR = 175  # min(snippet_chars, chunk_tokens) at the defaults


def _file(*middle: str) -> list[str]:
    return ["# MEMORY.md", "", "## Decisions", *middle, "", "## Other", "- tea, no sugar"]


def _hit(path: str, start: int, end: int, snippet: str, workspace: str | None = None) -> SearchHit:
    return SearchHit(
        path=path,
        start_line=start,
        end_line=end,
        snippet=snippet,
        score=1.0,
        text_score=1.0,
        vector_score=None,
        source="memory",
        citation=f"{path}#L{start}" if start == end else f"{path}#L{start}-L{end}",
        workspace=workspace,
    )


# ---------------------------------------------------------------- the ledger


def test_a_citation_never_served_is_unknown() -> None:
    ledger = CitedLedger()
    assert ledger.served("MEMORY.md", 5, 5) == ()
    assert decide((), _file(K8S, TLS, KAFKA), 5, 5, FLOOR) == Unknown()


def test_the_ledger_keeps_the_newest_texts_of_the_newest_citations() -> None:
    ledger = CitedLedger(capacity=2)
    ledger.note("a.md", 1, 1, "- one")
    ledger.note("a.md", 2, 2, "- two")
    ledger.served("a.md", 1, 1)  # reading is not serving: order stays
    ledger.note("a.md", 3, 3, "- three")
    assert ledger.served("a.md", 1, 1) == ()
    assert len(ledger) == 2
    for n in range(6):
        ledger.note("a.md", 2, 2, f"- two, version {n}")
    ledger.note("a.md", 2, 2, "- two, version 5")  # the same text again: moved first
    texts = ledger.served("a.md", 2, 2)
    assert len(texts) == 4
    assert texts[0] == Served.of("- two, version 5")
    assert Served.of("- two") not in texts


def test_a_text_whose_line_count_does_not_match_its_range_is_not_noted() -> None:
    ledger = CitedLedger()
    ledger.note("a.md", 4, 5, "- one line only")
    ledger.note("a.md", 0, 0, "- no line zero")
    ledger.note_cited("not a citation", "- text")
    assert len(ledger) == 0
    ledger.note_cited("a.md#L4-L5", "- one\n- two")
    assert ledger.served("a.md", 4, 5) == (Served.of("- one\n- two"),)


def test_a_line_is_compared_by_what_it_says() -> None:
    assert line_key("- [decision] Use  TLS (×3)") == line_key("* use tls")
    assert line_key("  1. Use TLS\r") == line_key("Use TLS")
    assert line_key("## Decisions") != line_key("## Other")
    assert line_key("- Use TLS") != line_key("- Use TLS 1.3")


# ---------------------------------------------------------------- the decision


def test_lines_still_saying_what_was_served_are_held() -> None:
    served = (Served.of(TLS),)
    assert decide(served, _file(K8S, TLS, KAFKA), 5, 5, FLOOR) == Held()
    # a count bumped by `log`, a re-indented bullet: still the same memory
    assert decide(served, _file(K8S, f"  {TLS} (×2)", KAFKA), 5, 5, FLOOR) == Held()


def test_any_text_served_under_the_citation_holds() -> None:
    served = (Served.of(KAFKA), Served.of(TLS))
    assert decide(served, _file(TLS, KAFKA), 5, 5, FLOOR) == Held()


def test_a_text_that_moved_once_is_found_where_it_is() -> None:
    served = (Served.of(TLS),)
    assert decide(served, _file(TLS, KAFKA), 5, 5, FLOOR) == Moved(4, 4)
    # a range moves as a whole, and down as well as up
    pair = (Served.of(f"{TLS}\n{KAFKA}"),)
    assert decide(pair, _file("- new one", K8S, TLS, KAFKA), 5, 6, FLOOR) == Moved(6, 7)
    # past the file's end now: found where it went
    assert decide(served, ["# MEMORY.md", TLS], 9, 9, FLOOR) == Moved(2, 2)


def test_a_text_that_is_gone_or_in_several_places_is_refused() -> None:
    served = (Served.of(TLS),)
    gone = decide(served, _file(K8S, "- TLS only for the public API", KAFKA), 5, 5, FLOOR)
    assert gone == Changed(served[0], ())
    twice = decide(served, _file(TLS, KAFKA, TLS), 5, 5, FLOOR)
    assert twice == Changed(served[0], ((4, 4), (6, 6)))


def test_a_one_line_snippet_may_be_part_of_a_long_line() -> None:
    long_line = "- " + "заметка о проекте " * 40 + "и TLS в конце"
    window = long_line[300:500]  # a snippet cut to a window, or a chunk's piece
    served = (Served.of(window, may_be_piece=True),)
    assert decide(served, ["# x", long_line], 2, 2, FLOOR) == Held()
    assert decide(served, ["# x", "- short", long_line], 2, 2, FLOOR) == Moved(3, 3)
    # a short line was never shown in part: it must match whole
    short = (Served.of("- Use TLS", may_be_piece=True),)
    assert isinstance(decide(short, ["# x", "- Use TLS 1.3 now"], 2, 2, FLOOR), Changed)
    # the same piece noted as whole text does not match a longer line
    assert isinstance(decide((Served.of(window),), ["# x", long_line], 2, 2, FLOOR), Changed)


def test_a_budget_cut_is_a_prefix_of_its_line() -> None:
    served = (Served.of("- Мы решили включить…", may_be_piece=True),)
    assert decide(served, _file(K8S, TLS, KAFKA), 5, 5, FLOOR) == Held()
    assert decide(served, _file(TLS, KAFKA), 5, 5, FLOOR) == Moved(4, 4)


def test_the_refusal_says_what_changed_and_what_to_do() -> None:
    served = Served.of(TLS)
    message = stale_message("MEMORY.md#L13", Changed(served, ()), KAFKA)
    assert "MEMORY.md#L13 changed since it was cited" in message
    assert "TLS" in message
    assert "Kafka" in message
    assert "Nothing was removed" in message
    assert "forget by query" in message
    several = stale_message("MEMORY.md#L13", Changed(served, ((4, 4), (6, 7))), None)
    assert "several places (MEMORY.md#L4, MEMORY.md#L6-L7)" in several
    assert "the file no longer has them" in several


# ---------------------------------------------------------------- noting replies


def test_replies_note_what_they_cite() -> None:
    mine, other = CitedLedger(), CitedLedger()
    ledgers = {None: mine, "other": other}
    note_reply(
        search_result(
            [
                _hit("MEMORY.md", 5, 6, f"{TLS}\n{KAFKA}"),
                _hit("MEMORY.md", 9, 9, "- part of a longer li"),
                _hit("notes.md", 2, 2, "- elsewhere", workspace="other"),
                _hit("gone.md", 2, 2, "- unknown workspace", workspace="missing"),
            ]
        ),
        ledgers.get,
    )
    assert mine.served("MEMORY.md", 5, 6) == (Served.of(f"{TLS}\n{KAFKA}"),)
    assert mine.served("MEMORY.md", 9, 9)[0].piece is not None
    assert other.served("notes.md", 2, 2) == (Served.of("- elsewhere", may_be_piece=True),)

    note_reply(
        ForgetResult(
            removed=(),
            removed_text=(),
            candidates=(ForgetCandidate(citation="MEMORY.md#L4", text=K8S, score=0.8),),
            reason="no_clear_match",
        ),
        ledgers.get,
    )
    note_reply(
        CaptureResult(
            captured=(
                CapturedMemory(
                    index=0,
                    text="likes tea",
                    category="preference",
                    trigger="t",
                    citation="d.md#L3",
                ),
            ),
            rejected=(),
            path="d.md",
            took_ms=1.0,
        ),
        ledgers.get,
    )
    similar = LogSimilar(
        citation="MEMORY.md#L7",
        path="MEMORY.md",
        line=7,
        text="old fact",
        similarity=0.9,
        lexical=0.9,
    )
    logged = LogResult(
        status="written",
        memory_type="fact",
        text="new fact",
        reasons=(),
        path="MEMORY.md",
        line=8,
        citation="MEMORY.md#L8",
        similar=similar,
    )
    note_reply(logged, ledgers.get)
    note_reply(LogResult(status="conflict", memory_type="fact", text="x", reasons=()), ledgers.get)
    assert mine.served("MEMORY.md", 4, 4) == (Served.of(K8S),)
    captured = mine.served("d.md", 3, 3)
    assert decide(captured, ["#", "", "- [preference] likes tea"], 3, 3, 1) == Held()
    assert mine.served("MEMORY.md", 7, 7) == (Served.of("old fact"),)
    assert decide(mine.served("MEMORY.md", 8, 8), ["x"] * 7 + ["- new fact"], 8, 8, 1) == Held()


def test_a_dry_run_log_notes_no_line_it_did_not_write() -> None:
    ledger = CitedLedger()
    dry = LogResult(
        status="written",
        memory_type="fact",
        text="not written",
        reasons=(),
        path="MEMORY.md",
        line=3,
        citation="MEMORY.md#L3",
        dry_run=True,
    )
    note_reply(dry, lambda _: ledger)
    assert len(ledger) == 0
