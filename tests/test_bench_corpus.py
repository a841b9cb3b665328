"""The benchmark corpus is only useful if its sizes and needles can be trusted.

Latency numbers are reported per chunk count, so a section that drifts out of
the chunk-sized band, or a needle that appears twice, silently skews every
benchmark built on top.
"""

from __future__ import annotations

import json
import re
from datetime import date, timedelta
from typing import TYPE_CHECKING

import pytest

from bench.corpus import (
    CHINESE_SECTION_SHARE,
    NEWEST_DAY,
    PREAMBLE_MAX_TOKENS,
    SECTION_MAX_TOKENS,
    SECTION_MIN_TOKENS,
    CorpusStats,
    generate_workspace,
    main,
    sample_queries,
)
from openmemoryd.text.scripts import count_cjk
from openmemoryd.text.terms import query_terms, token_set
from openmemoryd.text.tokens import estimate_tokens

if TYPE_CHECKING:
    from pathlib import Path

SIZE = 2000
DAILY_RE = re.compile(r"^memory/(\d{4}-\d{2}-\d{2})\.md$")


def read_tree(root: Path) -> dict[str, str]:
    return {
        path.relative_to(root).as_posix(): path.read_text("utf-8")
        for path in sorted(root.rglob("*.md"))
    }


def split_sections(text: str) -> tuple[str, list[str]]:
    """(preamble, sections): each section runs from a ``## `` line to the next."""
    preamble: list[str] = []
    sections: list[list[str]] = []
    for line in text.splitlines(keepends=True):
        if line.startswith("## "):
            sections.append([line])
        elif sections:
            sections[-1].append(line)
        else:
            preamble.append(line)
    return "".join(preamble), ["".join(lines) for lines in sections]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[CorpusStats, dict[str, str]]:
    root = tmp_path_factory.mktemp("corpus") / "ws"
    stats = generate_workspace(root, SIZE, seed=7, needles=30)
    return stats, read_tree(root)


def test_same_seed_gives_identical_bytes(tmp_path: Path) -> None:
    first = generate_workspace(tmp_path / "a", 300, seed=3)
    second = generate_workspace(tmp_path / "b", 300, seed=3)
    assert first == second
    files_a = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*.md"))
    files_b = sorted(p.relative_to(tmp_path / "b") for p in (tmp_path / "b").rglob("*.md"))
    assert files_a == files_b
    for rel in files_a:
        assert (tmp_path / "a" / rel).read_bytes() == (tmp_path / "b" / rel).read_bytes()


def test_different_seed_differs(tmp_path: Path) -> None:
    generate_workspace(tmp_path / "a", 300, seed=1)
    generate_workspace(tmp_path / "b", 300, seed=2)
    assert read_tree(tmp_path / "a") != read_tree(tmp_path / "b")


@pytest.mark.parametrize("size", [0, 1, 2, 3, 4, 13, 14, 29, 30, 151, 1000])
def test_exact_section_count_and_stats(tmp_path: Path, size: int) -> None:
    stats = generate_workspace(tmp_path / "ws", size, needles=min(size, 5))
    tree = read_tree(tmp_path / "ws")
    headings = sum(len(split_sections(text)[1]) for text in tree.values())
    assert headings == stats.sections == size
    assert stats.files == len(tree)
    assert stats.bytes == sum(len(text.encode("utf-8")) for text in tree.values())
    assert {"MEMORY.md", "USER.md", "PROJECT.md"} <= tree.keys()


def test_every_section_fits_one_chunk(corpus: tuple[CorpusStats, dict[str, str]]) -> None:
    _, tree = corpus
    costs: list[int] = []
    for path, text in tree.items():
        preamble, sections = split_sections(text)
        assert estimate_tokens(preamble) <= PREAMBLE_MAX_TOKENS, path
        costs += [estimate_tokens(section) for section in sections]
    assert len(costs) == SIZE
    assert min(costs) >= SECTION_MIN_TOKENS
    assert max(costs) <= SECTION_MAX_TOKENS
    # The band is used, not just one size: chunk sizes vary in real memory too.
    assert max(costs) - min(costs) > (SECTION_MAX_TOKENS - SECTION_MIN_TOKENS) // 2


def test_only_titles_and_headings_start_with_hash(
    corpus: tuple[CorpusStats, dict[str, str]],
) -> None:
    _, tree = corpus
    for path, text in tree.items():
        lines = text.splitlines()
        assert lines[0].startswith("# "), path
        assert all(line.startswith("## ") for line in lines[1:] if line.startswith("#")), path
        assert text.count("```") % 2 == 0, path
        assert text.endswith("\n"), path
        assert not text.endswith("\n\n"), path


def test_layout_of_daily_and_topic_files(corpus: tuple[CorpusStats, dict[str, str]]) -> None:
    _, tree = corpus
    days = sorted(
        (date.fromisoformat(m.group(1)) for m in map(DAILY_RE.match, tree) if m), reverse=True
    )
    assert days[0] == NEWEST_DAY
    assert days == [NEWEST_DAY - timedelta(days=i) for i in range(len(days))]
    for day in days:
        text = tree[f"memory/{day.isoformat()}.md"]
        assert text.startswith(f"# {day.isoformat()}\n")
        _, sections = split_sections(text)
        assert 3 <= len(sections) <= 12
        times = [section[3:8] for section in sections]
        assert all(re.fullmatch(r"\d\d:\d\d", t) for t in times)
        assert times == sorted(times)
    topics = [path for path in tree if path.startswith("memory/projects/")]
    assert 1 <= len(topics) <= 6
    other = set(tree) - set(topics) - {"MEMORY.md", "USER.md", "PROJECT.md"}
    assert all(DAILY_RE.match(path) for path in other)


def test_needles_are_planted_once_in_their_file(
    corpus: tuple[CorpusStats, dict[str, str]],
) -> None:
    stats, tree = corpus
    assert len(stats.needles) == 30
    assert len({needle.text for needle in stats.needles}) == 30
    for needle in stats.needles:
        assert "\n" not in needle.text
        assert tree[needle.path].splitlines().count(needle.text) == 1
        assert sum(text.count(needle.text) for text in tree.values()) == 1
        # The rare token: some query word that only the needle's file contains.
        unique = [
            word
            for word in needle.query.split()
            if [path for path, text in tree.items() if word in text] == [needle.path]
        ]
        assert unique, needle
        assert needle.text.count(unique[0]) == 1
    chinese = sum(count_cjk(needle.query) > 0 for needle in stats.needles)
    assert chinese == 10


def test_chinese_share_of_sections(corpus: tuple[CorpusStats, dict[str, str]]) -> None:
    _, tree = corpus
    sections = [s for text in tree.values() for s in split_sections(text)[1]]
    mainly_chinese = [s for s in sections if 2 * count_cjk(s) > estimate_tokens(s)]
    share = len(mainly_chinese) / len(sections)
    assert abs(share - CHINESE_SECTION_SHARE) < 0.05
    # English sections still mention Chinese names and topics within a line.
    english = [s for s in sections if s not in mainly_chinese]
    mixed = sum(1 for s in english if count_cjk(s) > 0)
    assert mixed > len(english) / 4


def test_content_is_varied_markdown(corpus: tuple[CorpusStats, dict[str, str]]) -> None:
    _, tree = corpus
    text = "".join(tree.values())
    for marker in ("\n- ", "- [ ] ", "- [x] ", "```bash\n", "```python\n", "```json\n"):
        assert marker in text
    assert "**Decision:**" in text
    assert "**决定：**" in text
    assert re.search(r"## \d\d:\d\d [^\n]*[A-Za-z]+ [^\n]*[\u4e00-\u9fff]", text)


@pytest.mark.parametrize("content", ["file", "dir"])
def test_non_empty_root_is_refused(tmp_path: Path, content: str) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    if content == "file":
        (root / "MEMORY.md").write_text("# mine\n", "utf-8")
    else:
        (root / "memory").mkdir()
    with pytest.raises(FileExistsError):
        generate_workspace(root, 10)
    assert [p.name for p in root.iterdir()] == ["MEMORY.md" if content == "file" else "memory"]


def test_root_that_is_a_file_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.write_text("not a directory", "utf-8")
    with pytest.raises(FileExistsError):
        generate_workspace(root, 10)


def test_empty_or_missing_root_is_used(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    assert generate_workspace(tmp_path / "empty", 10, needles=2).sections == 10
    assert generate_workspace(tmp_path / "a" / "b" / "c", 10, needles=2).sections == 10


@pytest.mark.parametrize(("sections", "needles"), [(-1, 0), (5, -1)])
def test_bad_sizes_are_rejected(tmp_path: Path, sections: int, needles: int) -> None:
    with pytest.raises(ValueError, match="must be"):
        generate_workspace(tmp_path / "ws", sections, needles=needles)
    assert not (tmp_path / "ws").exists()


def test_needles_are_capped_at_one_per_section(tmp_path: Path) -> None:
    stats = generate_workspace(tmp_path / "ws", 4, needles=20)
    assert len(stats.needles) == 4
    assert len({needle.path for needle in stats.needles}) <= 4


def test_sample_queries_are_deterministic_and_short() -> None:
    queries = sample_queries(500, seed=4)
    assert queries == sample_queries(500, seed=4)
    assert queries != sample_queries(500, seed=5)
    assert sample_queries(10, seed=4) == queries[:10]
    assert all(1 <= len(query.split()) <= 6 for query in queries)
    chinese_only = sum(1 for q in queries if count_cjk(q) and not re.search("[A-Za-z]", q))
    english_only = sum(1 for q in queries if not count_cjk(q))
    mixed = len(queries) - chinese_only - english_only
    assert chinese_only > 75
    assert english_only > 150
    assert mixed > 50


def test_sample_queries_use_corpus_vocabulary(
    corpus: tuple[CorpusStats, dict[str, str]],
) -> None:
    _, tree = corpus
    vocabulary = token_set("".join(tree.values()))
    for query in sample_queries(200, seed=1):
        terms = query_terms(query)
        assert any(term in vocabulary for term in terms), query


def test_cli_prints_stats_as_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "ws"
    assert main([str(root), "--sections", "40", "--seed", "9"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["sections"] == 40
    assert printed["files"] == len(read_tree(root))
    assert len(printed["needles"]) == 20
    assert set(printed["needles"][0]) == {"query", "path", "text"}
    assert main([str(root), "--sections", "40"]) == 2
    assert "must be empty" in capsys.readouterr().err
