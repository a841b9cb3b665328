"""A hit on a list of notes shows the item the query's words point to, with
its neighbours, not the whole chunk; words spread over a chunk keep it whole."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from openmemoryd.search.candidate import Candidate
from openmemoryd.search.hits import to_hits
from openmemoryd.search.items import list_items, matching_item
from openmemoryd.search.snippet import make_snippet, terms_in
from openmemoryd.text import query_terms

WORK = [
    "# 2026-11-25",
    "",
    "## Work",
    "- Reviewed PR #111 for the billing service",
    "- Rotated the Stripe API keys after the leak report",
    "- Ordered a standing desk (Flexispot E7) for 420 EUR",
    "- Alice suggested we switch CI runners to ARM",
    "- Postgres vacuum on orders table took 40 minutes",
    "",
    "## Home",
    "- Fixed the dishwasher drain hose",
    "- Tomás's birthday is on March 14",
]


def _snippet(lines: list[str], query: str, first_line: int = 1, max_chars: int = 700) -> str:
    made = make_snippet("\n".join(lines), first_line, query_terms(query), max_chars)
    shown = lines[made.start_line - first_line : made.end_line - first_line + 1]
    assert made.text == "\n".join(shown), "a snippet is the exact lines it cites"
    return made.text


def test_items_are_found_with_their_continuations_and_sub_items() -> None:
    lines = [
        "# Notes",
        "- one",
        "  continued",
        "    - a sub-item",
        "* two",
        "+ three",
        "",
        "1. four",
        "2) five",
        "paragraph",
        "-not an item",
        "    - indented four spaces: a continuation, not an item",
    ]
    assert list_items(lines) == [(1, 3), (4, 4), (5, 5), (7, 7), (8, 8)]


def test_the_one_item_holding_the_words_is_shown_with_its_neighbours() -> None:
    assert _snippet(WORK, "standing desk price") == "\n".join(WORK[4:7])
    made = make_snippet("\n".join(WORK), 10, query_terms("standing desk price"), 700)
    assert (made.start_line, made.end_line) == (14, 16)


def test_the_first_and_last_items_of_a_list_have_one_neighbour() -> None:
    assert _snippet(WORK, "Tomás birthday") == "\n".join(WORK[10:12])
    assert _snippet(WORK, "billing PR") == "\n".join(WORK[3:5])


def test_neighbours_stay_within_the_item_s_own_list() -> None:
    # the vacuum is the Work list's last item: the Home list after its
    # heading is another list
    assert _snippet(WORK, "postgres vacuum") == "\n".join(WORK[6:8])


def test_words_in_several_items_keep_the_whole_chunk() -> None:
    assert _snippet(WORK, "Stripe keys and the standing desk") == "\n".join(WORK)


def test_a_word_in_a_heading_or_a_paragraph_keeps_the_whole_chunk() -> None:
    assert _snippet(WORK, "home dishwasher") == "\n".join(WORK)  # "Home" is a heading
    lines = ["Long talk with Anna about the roadmap.", "- ship the sync API", "- mobile later"]
    assert _snippet(lines, "Anna mobile") == "\n".join(lines)


def test_one_word_of_several_keeps_the_whole_chunk() -> None:
    # the place the note is about, in another item than the answer
    altai = [
        "- Перелёт Екатеринбург — Горно-Алтайск через Новосибирск",
        "- Стоимость тура 96 000 ₽ на двоих",
        "- Взять: треккинговые ботинки, термобельё, пуховку",
    ]
    assert _snippet(altai, "Какую тёплую одежду брать на Алтай?") == "\n".join(altai)
    # a chance match of a day's name beside a day's note
    day = ["- terraform apply broke the DNS", "- Marcus: no more Friday applies", "- Postmortem"]
    assert _snippet(day, "what went wrong on Friday") == "\n".join(day)
    # but a query of one word is narrowed to it
    assert _snippet(WORK, "Flexispot") == "\n".join(WORK[4:7])


def test_a_match_by_meaning_alone_keeps_the_whole_chunk() -> None:
    assert _snippet(WORK, "furniture purchases") == "\n".join(WORK)


def test_a_chunk_without_a_list_is_unchanged() -> None:
    lines = ["Decided to move billing to Postgres 16.", "Anna agrees.", "Review in May."]
    assert _snippet(lines, "Anna") == "\n".join(lines)


def test_a_transcript_naming_its_speakers_on_every_line_stays_whole() -> None:
    lines = [
        "- Caroline: I went to a support group yesterday.",
        "- Melanie: What happened there, Caroline?",
        "- Caroline: It was powerful.",
    ]
    assert _snippet(lines, "What did Caroline do yesterday") == "\n".join(lines)


def test_chinese_and_russian_items() -> None:
    zh = [
        "# 2026-11-21",
        "- 魏决定下周把缓存方案换成 Redis",
        "- 和老王吃饭，他推荐了一家杭州的茶馆",
        "- 买了新的机械键盘，花了 899 元",
        "- 周航的生日是三月十四号",
    ]
    # each pair of characters is a term: 机械, 械键 and 键盘 are three
    assert _snippet(zh, "机械键盘多少钱") == "\n".join(zh[2:5])
    # one word of a question (键盘 of 键盘多少钱) is not enough
    assert _snippet(zh, "键盘多少钱") == "\n".join(zh)
    ru = [
        "# 2026-11-22",
        "- Починил бэкап NAS: rsync падал из-за прав",
        "- Олег принёс зелёный чай на встречу",
        "- Заказал новую клавиатуру за 9 000 рублей",
        "- Позвонить маме в воскресенье",
    ]
    # stems and ё: "зеленого чая" finds "зелёный чай"
    assert _snippet(ru, "какой чай принес Олег") == "\n".join(ru[1:4])
    assert _snippet(ru, "зеленого чая") == "\n".join(ru[1:4])


def test_an_item_range_longer_than_the_budget_falls_back_to_a_window() -> None:
    lines = ["- " + "filler words " * 8 for _ in range(4)]
    lines[2] = "- the needle " + "x" * 300
    made = make_snippet("\n".join(lines), 1, ["needle"], 200)
    assert "needle" in made.text
    assert len(made.text) <= 200


def test_items_can_be_turned_off() -> None:
    made = make_snippet("\n".join(WORK), 1, query_terms("standing desk"), 700, items=False)
    assert made.text == "\n".join(WORK)


def test_matching_item_reads_each_line_through_the_callers_test() -> None:
    asked: list[str] = []

    def found(line: str) -> frozenset[str]:
        asked.append(line)
        return frozenset(word for word in ("standing", "desk") if word in line)

    assert matching_item(WORK, found, 2) == (4, 6)
    assert "## Work" in asked  # lines outside items are asked too
    assert matching_item(WORK, found, 3) is None


def _candidate(id_: int, path: str, start: int, text: str, score: float) -> Candidate:
    end = start + text.count("\n")
    return Candidate(id_, path, "memory", start, end, "", text, score, None, score)


def test_hits_of_a_list_cite_the_item_and_a_later_hit_is_not_hidden_by_it() -> None:
    text = "\n".join(WORK)
    candidates = [
        _candidate(1, "memory/2026-11-25.md", 1, text, 0.9),
        _candidate(2, "memory/2026-11-26.md", 1, "- desk arrived\n- assembled it", 0.5),
    ]
    hits = to_hits(candidates, query_terms("standing desk"), 10, 700)
    assert [(h.path, h.start_line, h.end_line) for h in hits] == [
        ("memory/2026-11-25.md", 5, 7),
        ("memory/2026-11-26.md", 1, 2),  # one item: its list is all of it
    ]
    assert hits[0].citation == "memory/2026-11-25.md#L5-L7"
    whole = to_hits(candidates, query_terms("standing desk"), 10, 700, item_snippets=False)
    assert (whole[0].start_line, whole[0].end_line) == (1, 12)


_LINE = st.one_of(
    st.sampled_from(["", "# heading", "## sub", "paragraph text", "  continued"]),
    st.builds(
        lambda m, w: f"{m} {w}",
        st.sampled_from(["-", "*", "1.", "   -"]),
        st.sampled_from(["desk", "tea", "keys", "чай", "键盘", "nothing"]),
    ),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_LINE, min_size=1, max_size=20), st.sampled_from(["desk", "tea чай", "键盘", "x"]))
def test_any_list_gives_exact_lines_within_budget(lines: list[str], query: str) -> None:
    terms = query_terms(query)
    made = make_snippet("\n".join(lines), 5, terms, 120)
    assert len(made.text) <= 120
    if not made.cut:
        assert made.text == "\n".join(lines[made.start_line - 5 : made.end_line - 5 + 1])
    found = matching_item(lines, lambda line: terms_in(line, terms), 1) if terms else None
    if found is not None:
        first, last = found
        assert 0 <= first <= last < len(lines)
        held = [i for i, line in enumerate(lines) if terms_in(line, terms)]
        assert held
        assert all(first <= i <= last for i in held)
