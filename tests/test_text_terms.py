"""CJK-aware terms, Russian stems, stopwords, the OR query and its behaviour inside FTS5."""

from __future__ import annotations

from collections.abc import Iterator

import apsw
import pytest

from openmemoryd.search import bm25_score
from openmemoryd.text import (
    MAX_QUERY_TERMS,
    apostrophe_tails,
    estimate_tokens,
    fts_match_expression,
    index_terms,
    query_terms,
    token_set,
    words_by_script,
    words_of,
)


def test_cjk_runs_become_unigrams_and_bigrams() -> None:
    assert index_terms("缓存方案").split() == ["缓", "存", "方", "案", "缓存", "存方", "方案"]


def test_latin_is_lowercased_and_nfkc_normalised() -> None:
    assert index_terms("Redis ＲＥＤＩＳ v2") == "redis redis v2"


def test_mixed_script_words_split_at_the_script_boundary() -> None:
    assert index_terms("v2版本").split() == ["v2", "版", "本", "版本"]


def test_query_uses_bigrams_for_runs_and_the_unigram_for_a_lone_character() -> None:
    assert query_terms("缓存方案") == ["缓存", "存方", "方案"]
    assert query_terms("周会") == ["周会"]
    assert query_terms("茶") == ["茶"]


def test_stopwords_are_dropped_unless_nothing_else_remains() -> None:
    assert query_terms("what drink does Wei like?") == ["drink", "wei", "like"]
    assert query_terms("the a is") == ["the", "a", "is"]
    assert "讨论" in query_terms("之前讨论的那个方案")
    assert "那个" not in query_terms("之前讨论的那个方案")
    assert "之前" not in query_terms("之前讨论的那个方案")


def test_cjk_queries_split_at_multi_character_stopwords() -> None:
    # no bigram straddling 什么 (用什, 么编): no note on editors holds one
    assert query_terms("我用什么编辑器") == ["我用", "编辑", "辑器"]
    assert query_terms("为什么周五不能发布") == ["周五", "五不", "不能", "能发", "发布"]
    assert query_terms("我们决定改用 Postgres") == ["决定", "定改", "改用", "postgres"]
    # single-character stopwords stay inside the run: they are parts of words
    assert query_terms("现在的目的") == ["现在", "在的", "的目", "目的"]
    # a query of stopwords alone keeps them, as bigrams the index holds
    assert query_terms("为什么") == ["为什", "什么"]
    assert query_terms("什么") == ["什么"]


def test_russian_words_are_indexed_and_searched_by_their_stems() -> None:
    forms = ["встреча", "встречи", "встречу", "встречей", "Встречами"]
    assert {index_terms(form) for form in forms} == {"встреч"}
    assert {query_terms(form)[0] for form in forms} == {"встреч"}
    assert index_terms("Олегом") == query_terms("Олега")[0] == "олег"


def test_russian_yo_reads_as_ye() -> None:
    assert index_terms("зелёный чёрный") == index_terms("зеленый черный")
    assert query_terms("зелёного")[0] == index_terms("зелёный")


def test_other_cyrillic_alphabets_and_mixed_words_are_not_stemmed() -> None:
    """The Russian rules would cut a Ukrainian word wrongly; a word with
    digits or Latin letters in it is a name or a code, not a Russian word."""
    assert index_terms("Київ") == "київ"
    assert index_terms("ї") == "ї"
    assert index_terms("x5ракета") == "x5ракета"


def test_russian_stopwords_are_dropped_unless_nothing_else_remains() -> None:
    assert query_terms("Что я говорил о встрече с Олегом?") == ["говор", "встреч", "олег"]
    assert query_terms("Какой чай я люблю?") == ["ча", "любл"]
    assert query_terms("что это") == ["что", "эт"]
    assert query_terms("ещё раз про Ёлку") == ["раз", "елк"]


def test_query_terms_are_distinct_and_capped() -> None:
    assert query_terms("tea tea TEA") == ["tea"]
    many = " ".join(f"word{i}" for i in range(500))
    assert len(query_terms(many)) == MAX_QUERY_TERMS


def test_match_expression_is_an_or_of_quoted_terms() -> None:
    assert fts_match_expression(["hello", "world"]) == '"hello" OR "world"'
    assert fts_match_expression([]) is None


def test_token_set_includes_cjk_unigrams_and_bigrams() -> None:
    assert token_set("今天讨论") == {"今", "天", "讨", "论", "今天", "天讨", "讨论"}
    assert token_set("Hello World 123") == {"hello", "world", "123"}
    assert token_set("!@#$%^&*()") == frozenset()


def test_token_estimate_counts_cjk_per_character() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("abcd" * 100) == 100
    assert estimate_tokens("缓" * 100) == 100


# ---------------------------------------------------------------- against real FTS5


@pytest.fixture
def fts() -> Iterator[apsw.Connection]:
    conn = apsw.Connection(":memory:")
    conn.execute(
        "CREATE VIRTUAL TABLE t USING fts5(body, content='', contentless_delete=1, "
        "tokenize='porter unicode61 remove_diacritics 2')"
    )
    docs = {
        1: "我们讨论了缓存方案，决定用 Redis 做二级缓存。",
        2: "每周一上午开周会，会后更新项目文档。",
        3: "Wei prefers oolong tea in the afternoon.",
        4: "The deployment uses Postgres and Redis.",
        5: "会议纪要：周三讨论部署。",
        6: "Встреча с Олегом перенесена на пятницу.",
        7: "Купил зелёный чай в магазине у дома.",
    }
    for rowid, text in docs.items():
        conn.execute("INSERT INTO t(rowid, body) VALUES (?, ?)", (rowid, index_terms(text)))
    yield conn
    conn.close()


def search(conn: apsw.Connection, query: str) -> list[int]:
    match = fts_match_expression(query_terms(query))
    if match is None:
        return []
    rows = conn.execute("SELECT rowid FROM t WHERE t MATCH ? ORDER BY rank", (match,))
    return [row[0] for row in rows]


def test_chinese_phrase_without_spaces_is_found(fts: apsw.Connection) -> None:
    """OpenClaw #110500: a CJK run used to be a single token, so this failed."""
    assert search(fts, "缓存方案")[0] == 1


def test_two_character_query_matches_exactly(fts: apsw.Connection) -> None:
    assert search(fts, "周会") == [2]


def test_or_semantics_find_partial_matches(fts: apsw.Connection) -> None:
    """OpenClaw #15226 / #83384: AND-joined queries returned nothing here."""
    assert search(fts, "oolong coffee") == [3]
    assert 1 in search(fts, "缓存方案 不存在的词")


def test_more_matching_terms_rank_higher(fts: apsw.Connection) -> None:
    assert search(fts, "Redis 缓存")[0] == 1


def test_mixed_chinese_english_query(fts: apsw.Connection) -> None:
    assert search(fts, "Redis 二级缓存")[0] == 1


def test_stemming_matches_inflections(fts: apsw.Connection) -> None:
    assert search(fts, "preferring") == [3]


def test_russian_inflections_match_inside_fts5(fts: apsw.Connection) -> None:
    """FTS5's porter stemmer leaves Cyrillic alone; the stems come from us."""
    assert search(fts, "Когда встречу с Олегом перенесли?") == [6]
    assert search(fts, "где я покупал зеленый чай") == [7]
    assert search(fts, "пятницы") == [6]


def test_fts_syntax_in_user_input_is_inert(fts: apsw.Connection) -> None:
    for hostile in ['" OR 1', "NEAR(tea coffee)", "body:tea", "tea*", "^tea", "(tea"]:
        assert search(fts, hostile) in ([3], [])  # never a syntax error


def test_bm25_scores_keep_the_rank_order() -> None:
    """OpenClaw #5767: negative ranks were clamped, so every hit scored 1.0."""
    assert bm25_score(-4.2) > bm25_score(-2.1) > bm25_score(-0.5) > bm25_score(0.0) == 0.0
    assert bm25_score(-100.0) == pytest.approx(100 / 101)
    assert bm25_score(float("nan")) == 0.0


def test_apostrophe_tails_are_what_an_apostrophe_left() -> None:
    assert apostrophe_tails("proof of Fermat's last theorem") == {"s"}
    assert apostrophe_tails("I couldn’t find Wei's notes, we'll see") == {"t", "s", "ll"}
    assert apostrophe_tails("витамин D в анализах") == frozenset()
    assert apostrophe_tails("the 'd' key, rock 'n' roll") == frozenset()


def test_a_mixed_query_is_split_by_script() -> None:
    def parts(query: str) -> list[list[str]]:
        return words_by_script(words_of(query_terms(query)))

    assert parts("乌龙茶 Nomad") == [["乌龙", "龙茶"], ["nomad"]]
    assert parts("Jellyfin 开在哪个端口 8096") == [
        ["jellyfin", "8096"],
        ["开在", "在哪", "哪个", "个端", "端口", "8096"],
    ]
    assert parts("Nomad проект") == [["nomad"], ["проект"]]
    # one script (digits are none): no parts
    assert parts("какой IP у Home Assistant") == []
    assert parts("deploy pipeline 2024") == []
    assert parts("深圳 2024") == []
    # a script of single letters makes no part of its own
    assert parts("X 光片在哪里拍的") == [["光片", "片在", "在哪", "哪里", "里拍", "拍的"]]
