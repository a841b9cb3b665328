"""Tests for the Markdown chunker: unit cases plus property tests.

The properties re-derive source lines and token costs here rather than
calling the chunker's helpers, so a bug shared by both cannot hide.
"""

from __future__ import annotations

import unicodedata
from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from openmemoryd.config import IndexSettings, SearchSettings
from openmemoryd.index.chunker import Chunk, chunk_markdown, chunk_markdown_from
from openmemoryd.search.hits import heading_at
from openmemoryd.search.snippet import make_snippet
from openmemoryd.text.tokens import estimate_tokens
from openmemoryd.workspace.boilerplate import has_memory

ZWJ = "\u200d"


def source_lines(text: str) -> list[str]:
    lines = text.split("\n")
    if len(lines) > 1 and lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def cost(text: str) -> int:
    return sum(estimate_tokens(line) + 1 for line in text.split("\n"))


def glued(before: str, after: str) -> bool:
    """True if a cut between *before* and *after* splits a visible character."""
    return (
        before == ZWJ
        or after == ZWJ
        or unicodedata.combining(after) != 0
        or "\ufe00" <= after <= "\ufe0f"
        or "\U0001f3fb" <= after <= "\U0001f3ff"
    )


def is_piece(chunk: Chunk, lines: list[str]) -> bool:
    return chunk.text != "\n".join(lines[chunk.start_line - 1 : chunk.end_line])


def check_invariants(text: str, chunks: list[Chunk], max_tokens: int) -> dict[int, list[str]]:
    """Assert the chunker's guarantees; return the pieces of over-long lines by line."""
    lines = source_lines(text)
    covered: set[int] = set()
    pieces: dict[int, list[str]] = {}
    previous: Chunk | None = None
    for chunk in chunks:
        assert 1 <= chunk.start_line <= chunk.end_line <= len(lines)
        assert chunk.text.strip()
        assert cost(chunk.text) <= max_tokens
        if is_piece(chunk, lines):
            assert chunk.start_line == chunk.end_line
            assert chunk.text in lines[chunk.start_line - 1]
            pieces.setdefault(chunk.start_line, []).append(chunk.text)
        else:
            assert lines[chunk.start_line - 1].strip()
            assert lines[chunk.end_line - 1].strip()
        covered.update(range(chunk.start_line, chunk.end_line + 1))
        if previous is not None:
            assert previous.start_line <= chunk.start_line
            same_long_line = (
                is_piece(previous, lines)
                and is_piece(chunk, lines)
                and previous.start_line == chunk.start_line
            )
            assert same_long_line or chunk.end_line > previous.end_line
        previous = chunk
    for number, line in enumerate(lines, start=1):
        if line.strip():
            assert number in covered
    for number, parts in pieces.items():
        line = lines[number - 1]
        assert "".join("".join(parts).split()) == "".join(line.split())
    return pieces


def shared_lines(first: Chunk, second: Chunk) -> int:
    return max(0, first.end_line - second.start_line + 1)


# ---------------------------------------------------------------- units


def test_heading_paths_follow_nesting() -> None:
    body = " ".join(["word"] * 12)
    d_body = "\n".join(f"d line {i:02d} has some words" for i in range(20))
    text = f"# A\n\n{body}\n\n## B\n\n{body}\n\n### C\n\n{body}\n\n## D ##\n\n{d_body}\n"
    chunks = chunk_markdown(text, max_tokens=40, overlap_tokens=10)
    assert [(c.text.split("\n")[0], c.heading) for c in chunks[:4]] == [
        ("# A", "A"),
        ("## B", "A > B"),
        ("### C", "A > B > C"),
        ("## D ##", "A > D"),
    ]
    under_d = chunks[4:]
    assert under_d
    assert all(c.text.startswith("d line") for c in under_d)
    assert {c.heading for c in under_d} == {"A > D"}


def test_heading_title_keeps_hash_that_is_not_a_closing_sequence() -> None:
    chunks = chunk_markdown("# Notes on C#\n\ntext\n\n## Plans ###  \n\nmore", max_tokens=16)
    assert [c.heading for c in chunks] == ["Notes on C#", "Notes on C# > Plans"]


def test_chunk_starting_mid_section_gets_that_sections_path() -> None:
    text = "# Top\n\n## Sub\n\n" + "\n".join(f"item {i} of the list" for i in range(30))
    chunks = chunk_markdown(text, max_tokens=32, overlap_tokens=0)
    assert len(chunks) > 2
    assert chunks[0].heading == "Top"
    assert {c.heading for c in chunks[1:]} == {"Top > Sub"}


def test_a_chunk_records_the_headings_inside_it_with_their_paths() -> None:
    text = "# Notes\n\n## Lessons\n- one\n\nSetext\n------\ntwo\n\n```\n# not a heading\n```\n"
    (chunk,) = chunk_markdown(text, max_tokens=200)
    assert chunk.heading == "Notes"
    assert chunk.inner_headings == ((3, "Notes > Lessons"), (6, "Notes > Setext"))


def test_inner_headings_count_lines_from_where_chunking_started() -> None:
    chunks, _ = chunk_markdown_from(
        "## B\nb\n### C\nc", max_tokens=200, first_line=10, sections=((1, "A"),)
    )
    assert [(c.start_line, c.heading, c.inner_headings) for c in chunks] == [
        (10, "A > B", ((12, "A > B > C"),))
    ]


def test_a_piece_of_a_long_line_has_no_inner_headings() -> None:
    chunks = chunk_markdown("# T\n" + "word " * 400, max_tokens=40)
    assert all(c.inner_headings == () for c in chunks[1:])


def headings_of(text: str) -> list[tuple[str, str]]:
    """(first line, heading path) of every chunk, with a budget that keeps sections apart."""
    return [(c.text.split("\n")[0], c.heading) for c in chunk_markdown(text, max_tokens=16)]


def test_setext_headings_set_the_path() -> None:
    text = "Project\n=======\n\nintro\n\nDecisions\n---\n\nwe chose trio\n"
    assert headings_of(text) == [
        ("Project", "Project"),
        ("Decisions", "Project > Decisions"),
    ]


def test_setext_heading_is_a_section_boundary() -> None:
    text = "Old\n===\nold body here\n\nNew\n===\nnew body"
    chunks = chunk_markdown(text, max_tokens=20, overlap_tokens=8)
    assert [(c.start_line, c.end_line, c.heading) for c in chunks] == [
        (1, 3, "Old"),
        (5, 7, "New"),
    ]


def test_underline_takes_the_whole_paragraph_above_it() -> None:
    """CommonMark: the paragraph lines right above an underline are its text."""
    chunks = chunk_markdown("Old\n===\nold body\nNew\n===\nnew body", max_tokens=20)
    assert chunks[0].heading == "Old"
    assert chunk_markdown("Old\n===\nold body\nNew\n===\nx", max_tokens=16)[-1].heading == (
        "old body New"
    )


def test_multi_line_setext_heading_text_is_joined() -> None:
    assert headings_of("Long\ntitle\n---\nbody") == [("Long", "Long title")]


def test_dashes_after_a_blank_line_are_a_break_not_a_heading() -> None:
    text = "# Top\n\nsome prose\n\n---\n\nmore prose"
    assert {c.heading for c in chunk_markdown(text)} == {"Top"}


def test_dashes_under_a_list_item_or_heading_are_not_an_underline() -> None:
    assert {c.heading for c in chunk_markdown("# Top\n- item\n---\ntail")} == {"Top"}
    assert {c.heading for c in chunk_markdown("# Top\n---\ntail")} == {"Top"}


def test_yaml_front_matter_is_not_a_setext_heading() -> None:
    text = "---\ntitle: Daily\ntags: [a]\n---\n\nbody line\n"
    chunks = chunk_markdown(text)
    assert chunks == [Chunk(1, 6, text.rstrip("\n"), "")]


@pytest.mark.parametrize(
    "comment",
    [
        "<!-- # hidden -->",
        "<!--\n# hidden\n-->",
        "  <!-- start\n## hidden\nHidden\n===\nend -->",
        "<!-- never closed\n# hidden\n\n# still hidden",
    ],
)
def test_comment_inside_a_section_keeps_its_path(comment: str) -> None:
    text = f"# Real\n\n{comment}\n\nafter"
    assert {c.heading for c in chunk_markdown(text)} == {"Real"}


def test_comment_interrupts_a_paragraph() -> None:
    text = "# Real\nprose\n<!--\n# hidden\n-->\n## Next\nbody"
    assert {c.heading for c in chunk_markdown(text, max_tokens=16)} == {"Real", "Real > Next"}


@pytest.mark.parametrize(
    "fence",
    [
        "```\n# code\nTitle\n===\n```",
        "~~~\n# code\n~~~",
        "````\n```\n# code\n```\n# still code\n````",
        "~~~~\n~~~\n# code\n~~~~",
        "```\n<!--\n```\n",
    ],
)
def test_nothing_inside_fenced_code_is_a_heading(fence: str) -> None:
    text = f"# Real\n\n{fence}\n\nafter"
    assert {c.heading for c in chunk_markdown(text)} == {"Real"}


FENCE = "```python\ndef f(x):\n    return x + 1\n\nprint(f(2))\n```"


@pytest.mark.parametrize("overlap", [0, 20])
def test_fence_that_fits_moves_whole_to_next_chunk(overlap: int) -> None:
    paragraph = "\n".join(f"prose line number {i}" for i in range(8))
    text = f"{paragraph}\n\n{FENCE}\n\nafter"
    assert cost(paragraph) + cost(FENCE) > 60 >= cost(FENCE)
    chunks = chunk_markdown(text, max_tokens=60, overlap_tokens=overlap)
    check_invariants(text, chunks, 60)
    holding = [c for c in chunks if "```" in c.text]
    assert len(holding) == 1
    assert FENCE in holding[0].text
    assert "```" not in chunks[0].text


def test_fence_larger_than_a_chunk_is_split() -> None:
    code = "\n".join(f"    value_{i} = compute({i})" for i in range(40))
    fence = f"```\n{code}\n```"
    text = f"intro\n\n{fence}\n"
    chunks = chunk_markdown(text, max_tokens=60, overlap_tokens=0)
    check_invariants(text, chunks, 60)
    with_code = [c for c in chunks if "compute(" in c.text]
    assert len(with_code) > 1
    assert "\n".join(c.text for c in chunks) == f"intro\n\n{fence}"


def test_hash_lines_inside_fence_are_not_headings() -> None:
    comments = "\n".join(f"# comment {i} about the script" for i in range(40))
    text = f"# Real\n\n```sh\n{comments}\n```\n\nafter"
    chunks = chunk_markdown(text, max_tokens=40, overlap_tokens=0)
    check_invariants(text, chunks, 40)
    assert len(chunks) > 3
    assert {c.heading for c in chunks} == {"Real"}


def test_unclosed_fence_runs_to_end_of_file() -> None:
    text = "~~~\n# not a heading\n\n# still code"
    assert chunk_markdown(text) == [Chunk(1, 4, text, "")]


def test_inline_triple_backticks_do_not_open_a_fence() -> None:
    text = "```a``` is inline\n\n# Heading\n\nbody"
    chunks = chunk_markdown(text, max_tokens=16, overlap_tokens=0)
    assert chunks[-1].heading == "Heading"


@pytest.mark.parametrize(
    "text",
    [
        "中" * 1000,
        "\n".join("记忆" * 25 for _ in range(20)),
    ],
    ids=["one-line", "many-lines"],
)
def test_cjk_counts_one_token_per_character(text: str) -> None:
    chunks = chunk_markdown(text, max_tokens=400)
    check_invariants(text, chunks, 400)
    assert len(chunks) >= 3


def test_openclaw_long_line_regression() -> None:
    line = "a" * (1600 * 3 + 25)
    chunks = chunk_markdown(line, max_tokens=400, overlap_tokens=0)
    assert len(chunks) > 1
    assert all(len(c.text) <= 1600 for c in chunks)
    assert all(c.start_line == c.end_line == 1 for c in chunks)
    assert "".join(c.text for c in chunks) == line


def test_long_line_is_cut_after_a_space_in_its_second_half() -> None:
    line = " ".join(f"word{i:03d}" for i in range(400))
    chunks = chunk_markdown(line, max_tokens=50)
    assert len(chunks) > 1
    assert "".join(c.text for c in chunks) == line
    assert all(c.text.endswith(" ") for c in chunks[:-1])


def test_whitespace_only_pieces_of_a_long_line_are_dropped() -> None:
    line = "start" + " " * 3000 + "end"
    chunks = chunk_markdown(line, max_tokens=100)
    check_invariants(line, chunks, 100)
    assert [c.text.strip() for c in chunks] == ["start", "end"]


def test_long_line_mid_paragraph_gets_its_own_chunks() -> None:
    text = "before\n" + "z" * 500 + "\nafter"
    chunks = chunk_markdown(text, max_tokens=40, overlap_tokens=10)
    check_invariants(text, chunks, 40)
    assert chunks[0] == Chunk(1, 1, "before", "")
    assert chunks[-1] == Chunk(3, 3, "after", "")
    assert {c.start_line for c in chunks[1:-1]} == {2}


def test_overlap_within_a_split_paragraph() -> None:
    text = "\n".join(f"line {i:02d} of the list" for i in range(60))
    chunks = chunk_markdown(text, max_tokens=50, overlap_tokens=15)
    check_invariants(text, chunks, 50)
    lines = source_lines(text)
    assert len(chunks) > 3
    for first, second in pairwise(chunks):
        shared = shared_lines(first, second)
        assert shared > 0
        carried = lines[second.start_line - 1 : first.end_line]
        assert second.text.split("\n")[:shared] == carried
        assert cost("\n".join(carried)) <= 15


def test_no_overlap_when_overlap_is_zero() -> None:
    text = "\n".join(f"line {i:02d} of the list" for i in range(60))
    chunks = chunk_markdown(text, max_tokens=50, overlap_tokens=0)
    assert len(chunks) > 3
    for first, second in pairwise(chunks):
        assert second.start_line == first.end_line + 1


def test_no_overlap_across_a_heading() -> None:
    body = "\n".join(f"fact {i} about this section" for i in range(10))
    text = f"# S1\n{body}\n\n# S2\n{body}"
    chunks = chunk_markdown(text, max_tokens=100, overlap_tokens=40)
    check_invariants(text, chunks, 100)
    starts = [i for i, c in enumerate(chunks) if c.text.startswith("# S2")]
    assert starts == [1]
    assert shared_lines(chunks[0], chunks[1]) == 0
    assert chunks[1].heading == "S2"


def test_overlap_is_dropped_from_the_front_until_the_next_block_fits() -> None:
    first = "\n".join(f"line {i:02d} text" for i in range(10))
    second = "\n".join(f"other {i:02d} text" for i in range(11))
    text = f"{first}\n\n{second}"
    chunks = chunk_markdown(text, max_tokens=60, overlap_tokens=30)
    check_invariants(text, chunks, 60)
    assert chunks == [
        Chunk(1, 10, first, ""),
        Chunk(10, 22, f"line 09 text\n\n{second}", ""),
    ]


def test_heading_that_does_not_fit_starts_a_chunk_without_overlap() -> None:
    title = "# " + " ".join(["long"] * 45)
    text = f"# A\nx\n{title}\nbody"
    assert cost(f"# A\nx\n{title}") > 60 >= cost(f"x\n{title}")
    chunks = chunk_markdown(text, max_tokens=60, overlap_tokens=30)
    assert chunks[0] == Chunk(1, 2, "# A\nx", "A")
    assert chunks[1].start_line == 3


def test_overlap_is_clamped_to_half_the_budget() -> None:
    text = "\n".join(f"line {i:02d} of the list" for i in range(60))
    chunks = chunk_markdown(text, max_tokens=40, overlap_tokens=1000)
    check_invariants(text, chunks, 40)
    lines = source_lines(text)
    for first, second in pairwise(chunks):
        carried = lines[second.start_line - 1 : first.end_line]
        assert cost("\n".join(carried)) <= 20
    assert chunk_markdown(text, max_tokens=40, overlap_tokens=-5) == chunk_markdown(
        text, max_tokens=40, overlap_tokens=0
    )


def test_trailing_heading_moves_to_the_chunk_with_its_body() -> None:
    body = "\n".join(f"body line {i:02d} here" for i in range(16))
    text = f"# A\nshort\n\n## B\n\n{body}"
    assert cost(f"## B\n\n{body}") <= 100 < cost(text)
    chunks = chunk_markdown(text, max_tokens=100, overlap_tokens=0)
    assert chunks == [
        Chunk(1, 2, "# A\nshort", "A"),
        Chunk(4, 21, f"## B\n\n{body}", "A > B"),
    ]


def test_small_sections_merge_and_large_ones_start_fresh() -> None:
    three = "\n".join(f"three {i} text" for i in range(8))
    text = f"# One\nx\n# Two\ny\n# Three\n{three}\n# Four\nlast"
    chunks = chunk_markdown(text, max_tokens=60, overlap_tokens=0)
    assert chunks == [
        Chunk(1, 13, f"# One\nx\n# Two\ny\n# Three\n{three}", "One", ((3, "Two"), (5, "Three"))),
        Chunk(14, 15, "# Four\nlast", "Four"),
    ]


def test_crlf_gives_the_same_chunks_as_lf() -> None:
    lf = (
        "# 项目\n\n决定使用缓存。\n\n```\ncode\n```\n\n## Notes\n"
        + "\n".join(f"note {i} 记录" for i in range(40))
        + "\n"
    )
    crlf = lf.replace("\n", "\r\n")
    chunks = chunk_markdown(crlf, max_tokens=40)
    assert chunks == chunk_markdown(lf, max_tokens=40)
    assert all("\r" not in c.text for c in chunks)
    assert len(chunks) > 2


@pytest.mark.parametrize("max_tokens", [16, 17, 23, 40])
def test_emoji_sequences_and_accents_are_never_split(max_tokens: int) -> None:
    unit = f"👩{ZWJ}👩{ZWJ}👧{ZWJ}👦e\u0301👍🏽✈\ufe0fa\u0308\u0323"
    line = unit * 200
    chunks = chunk_markdown(line, max_tokens=max_tokens)
    check_invariants(line, chunks, max_tokens)
    assert len(chunks) > 10
    assert "".join(c.text for c in chunks) == line
    for first, second in pairwise(chunks):
        assert not glued(first.text[-1], second.text[0])


@pytest.mark.parametrize("text", ["", "\n", "   \n\t\n", "\r\n\r\n", " "])
def test_blank_input_gives_no_chunks(text: str) -> None:
    assert chunk_markdown(text) == []


def test_blank_edges_are_trimmed_and_lines_keep_their_numbers() -> None:
    assert chunk_markdown("\n\n\nhello\r\n\n") == [Chunk(4, 4, "hello", "")]


@pytest.mark.parametrize("max_tokens", [-1, 0, 8, 15])
def test_tiny_budget_is_rejected(max_tokens: int) -> None:
    with pytest.raises(ValueError, match="max_tokens"):
        chunk_markdown("text", max_tokens=max_tokens)


def test_one_megabyte_file() -> None:
    """A quadratic packer would take minutes here; a linear one, well under a second."""
    section = (
        "## Meeting notes\n\n"
        + "\n".join(f"- point {i}: we agreed on the cache layout" for i in range(12))
        + "\n\n```python\n# not a heading\nprint('hello')\n```\n\n"
        + "我们讨论了缓存方案，决定使用本地索引。" * 8
        + "\n\n"
    )
    text = "# Journal\n\n" + section * (1_000_000 // len(section)) + "x" * 50_000 + "\n"
    assert len(text.encode()) > 1_000_000
    chunks = chunk_markdown(text)
    check_invariants(text, chunks, 400)
    assert len(chunks) > 1000


def heading_of(text: str, word: str) -> str:
    """The heading path of the (small) chunk holding *word*."""
    chunks = chunk_markdown(text, max_tokens=16, overlap_tokens=0)
    return next(c.heading for c in chunks if word in c.text)


def test_setext_headings_start_sections() -> None:
    text = "Project X\n=========\n\nintro\n\nDecisions\n---------\nuse postgres\n"
    chunks = chunk_markdown(text, max_tokens=16, overlap_tokens=0)
    assert [(c.heading, c.text.split("\n")[-1]) for c in chunks] == [
        ("Project X", "intro"),
        ("Project X > Decisions", "use postgres"),
    ]


def test_a_multi_line_setext_heading_takes_every_line_above_its_underline() -> None:
    chunks = chunk_markdown("Long title\nsecond line\n===\nbody\n", max_tokens=400)
    assert chunks[0].heading == "Long title second line"


@pytest.mark.parametrize(
    "text",
    [
        "intro\n\n---\n\nafter a thematic break\n",
        "- a list item\n---\nafter\n",
        "> a quote\n---\nafter\n",
        "| a | table |\n---\nafter\n",
        "---\ntitle: Trip\ndate: 2024-05-01\n---\n\nafter\n",
    ],
)
def test_dashes_that_are_not_setext_underlines(text: str) -> None:
    assert heading_of(text, "after") == ""


def test_front_matter_is_not_a_heading_and_is_kept() -> None:
    text = "---\ntitle: Trip\n---\n# Day one\n\nwalked\n"
    chunks = chunk_markdown(text, max_tokens=400)
    assert chunks[0].start_line == 1
    assert "title: Trip" in chunks[0].text
    assert heading_of(text, "walked") == "Day one"


@pytest.mark.parametrize(
    "text",
    [
        "<!--\n# not a heading\n## nor this\n-->\nbody\n",
        "body0 <!-- starts here\n# still inside\n-->\nbody\n",
        "<!-- open\n\n# inside, after a blank line\n\n-->\nbody\n",
        "<!-- never closed\n# inside to the end\n\nbody\n",
    ],
)
def test_nothing_inside_an_html_comment_is_a_heading(text: str) -> None:
    assert heading_of(text, "body") == ""


def test_a_heading_after_a_closed_comment_counts() -> None:
    assert heading_of("<!-- note -->\n# Real\n\nbody\n", "body") == "Real"


def test_a_comment_marker_inside_code_opens_nothing() -> None:
    assert heading_of("```html\n<!-- in code\n```\n# Real\n\nbody\n", "body") == "Real"


def test_a_setext_underline_inside_a_fence_is_code() -> None:
    assert heading_of("```\ntitle\n=====\n```\nbody\n", "body") == ""


# ---------------------------------------------------------------- properties

WORDS = st.sampled_from(
    [
        "alpha",
        "beta",
        "memory",
        "x",
        "中文",
        "記憶",
        "한국어",
        "かな",
        f"👩{ZWJ}👩{ZWJ}👧",
        "e\u0301",
        "👍🏽",
        "✈\ufe0f",
        "C#",
        "`code`",
        "-",
        "*",
        "1.",
        "#",
    ]
)
PROSE = st.lists(WORDS, min_size=1, max_size=12).map(" ".join)
HEADING = st.builds(
    lambda indent, level, title, closing: f"{indent}{'#' * level} {title}{closing}",
    st.sampled_from(["", " ", "   "]),
    st.integers(1, 7),
    PROSE,
    st.sampled_from(["", " #", " ###", "#"]),
)
FENCE_LINE = st.sampled_from(["```", "```python", "~~~", "````", "   ```", "~~~~ ", "```a`b"])
BLANK = st.sampled_from(["", "   ", "\t"])
LONG = st.one_of(
    st.builds(lambda words, n: " ".join([words] * n), PROSE, st.integers(10, 200)),
    st.builds("".join, st.lists(WORDS, min_size=50, max_size=400)),
)
SETEXT = st.sampled_from(["===", "---", "  ---  ", "  ------", "=", "- - -", "***"])
COMMENT = st.sampled_from(
    ["<!--", "-->", "<!-- # x -->", "   <!-- a", "text <!-- a", "b -->", "b --> text"]
)
LINE = st.one_of(PROSE, PROSE, PROSE, HEADING, FENCE_LINE, BLANK, BLANK, LONG, SETEXT, COMMENT)
PARAGRAPH = st.lists(PROSE, min_size=1, max_size=15)
FENCED = st.builds(
    lambda fence, body, closed: [fence, *body, fence.strip()] if closed else [fence, *body],
    FENCE_LINE,
    st.lists(st.one_of(PROSE, HEADING, BLANK), max_size=15),
    st.booleans(),
)
# Whole blocks make sizes near the budget likely; single lines make odd mixes.
UNDERLINED = st.builds(lambda text, line: [*text, line], PARAGRAPH, SETEXT)
BLOCK = st.one_of(
    PARAGRAPH,
    PARAGRAPH,
    FENCED,
    UNDERLINED,
    HEADING.map(lambda h: [h]),
    LINE.map(lambda x: [x]),
)


@st.composite
def markdown(draw: st.DrawFn) -> str:
    blocks = draw(st.lists(BLOCK, max_size=20))
    if draw(st.booleans()):
        blocks.insert(0, ["---", *draw(PARAGRAPH), draw(st.sampled_from(["---", "..."]))])
    separator = draw(st.lists(st.sampled_from([[], [""], ["", " "]]), min_size=1, max_size=3))
    lines: list[str] = []
    for i, block in enumerate(blocks):
        lines += block + separator[i % len(separator)]
    newline = draw(st.sampled_from(["\n", "\r\n"]))
    ending = draw(st.sampled_from(["", newline]))
    return newline.join(lines) + ending


BUDGETS = st.integers(16, 120)
OVERLAPS = st.integers(-10, 120)


@settings(max_examples=300, deadline=None)
@given(text=markdown(), max_tokens=BUDGETS, overlap=OVERLAPS)
def test_markdown_properties(text: str, max_tokens: int, overlap: int) -> None:
    chunks = chunk_markdown(text, max_tokens=max_tokens, overlap_tokens=overlap)
    pieces = check_invariants(text, chunks, max_tokens)
    lines = source_lines(text)
    for number, parts in pieces.items():
        assert "".join(parts) == lines[number - 1]
        for left, right in pairwise(parts):
            assert not glued(left[-1], right[0])
    clamped = min(max(overlap, 0), max_tokens // 2)
    for first, second in pairwise(chunks):
        shared = shared_lines(first, second)
        if shared and not is_piece(second, lines):
            assert cost("\n".join(lines[second.start_line - 1 : first.end_line])) <= clamped


@settings(max_examples=200, deadline=None)
@given(text=markdown(), budgets=st.lists(BUDGETS, min_size=2, max_size=2), overlap=OVERLAPS)
def test_every_line_has_one_heading_path_whatever_the_chunking(
    text: str, budgets: list[int], overlap: int
) -> None:
    """A line's section, read from whichever chunk holds it (its heading and
    the headings inside it), is the same in chunkings of any size."""
    seen: dict[int, str] = {}
    for max_tokens in budgets:
        for chunk in chunk_markdown(text, max_tokens=max_tokens, overlap_tokens=overlap):
            lines = [at for at, _ in chunk.inner_headings]
            assert lines == sorted(lines)
            assert all(chunk.start_line < at <= chunk.end_line for at in lines)
            for line in range(chunk.start_line, chunk.end_line + 1):
                path = heading_at(chunk.heading, chunk.inner_headings, line)
                assert seen.setdefault(line, path) == path, line


@settings(max_examples=200, deadline=None)
@given(text=st.text(), max_tokens=BUDGETS, overlap=OVERLAPS)
def test_arbitrary_text_properties(text: str, max_tokens: int, overlap: int) -> None:
    chunks = chunk_markdown(text, max_tokens=max_tokens, overlap_tokens=overlap)
    check_invariants(text, chunks, max_tokens)


@settings(max_examples=100, deadline=None)
@given(text=markdown(), max_tokens=BUDGETS, overlap=OVERLAPS)
def test_crlf_property(text: str, max_tokens: int, overlap: int) -> None:
    lf = text.replace("\r\n", "\n")
    crlf = lf.replace("\n", "\r\n")
    assert chunk_markdown(crlf, max_tokens=max_tokens, overlap_tokens=overlap) == chunk_markdown(
        lf, max_tokens=max_tokens, overlap_tokens=overlap
    )


def rejoin(text: str, chunks: list[Chunk]) -> str:
    """The file rebuilt from the chunks' lines.

    Only what no chunk holds comes from *text*: the lines no chunk covers
    (which must be blank) and the line terminators, CRs included.
    """
    lines = source_lines(text)
    rebuilt: list[str | None] = [None] * len(lines)
    pieces: dict[int, list[str]] = {}
    for chunk in chunks:
        if is_piece(chunk, lines):
            pieces.setdefault(chunk.start_line - 1, []).append(chunk.text)
            continue
        for offset, line in enumerate(chunk.text.split("\n")):
            index = chunk.start_line - 1 + offset
            assert rebuilt[index] in (None, line)
            rebuilt[index] = line
    for index, parts in pieces.items():
        rebuilt[index] = "".join(parts)
    terminators = [line[len(line.rstrip("\r\n")) :] for line in text.splitlines(keepends=True)]
    out: list[str] = []
    for index, line in enumerate(rebuilt):
        if line is None:
            line = lines[index]
            assert not line.strip()
        out.append(line + (terminators[index] if index < len(terminators) else ""))
    return "".join(out)


@settings(max_examples=300, deadline=None)
@given(text=markdown(), max_tokens=BUDGETS, overlap=OVERLAPS)
def test_chunks_joined_reproduce_the_file(text: str, max_tokens: int, overlap: int) -> None:
    assert rejoin(text, chunk_markdown(text, max_tokens=max_tokens, overlap_tokens=overlap)) == text


@pytest.mark.parametrize(
    "text",
    ["", "\n", "a", "a\r\nb", "a\r\n\r\n\r\nb\r\n", "中文\n\n  \n記憶", "T\r\n===\r\nx"],
)
def test_rejoin_examples(text: str) -> None:
    assert rejoin(text, chunk_markdown(text, max_tokens=16)) == text


@settings(max_examples=150, deadline=None)
@given(text=st.one_of(markdown(), st.text()))
def test_at_the_default_size_a_hit_shows_its_whole_chunk(text: str) -> None:
    """Default chunks fit the default snippet, so the budget cuts no evidence
    from a hit (docs/recall.md measures what cutting cost); a list item the
    query's words all fall in is shown alone by design, not by the budget
    (tests/test_snippet_items.py), so that choice is off here."""
    index, limit = IndexSettings(), SearchSettings().snippet_chars
    for chunk in chunk_markdown(
        text, max_tokens=index.chunk_tokens, overlap_tokens=index.chunk_overlap
    ):
        assert len(chunk.text) <= limit
        shown = make_snippet(chunk.text, chunk.start_line, ["x"], limit, items=False)
        # the whole chunk, less only lines at its end with nothing to read
        # (blank, a heading with nothing under it, a rule: no memory, as the
        # indexer counts it)
        lines = chunk.text.split("\n")
        kept = shown.end_line - shown.start_line + 1
        assert shown.start_line == chunk.start_line
        assert shown.text == "\n".join(lines[:kept])
        assert not any(has_memory(line) for line in lines[kept:]), lines[kept:]
