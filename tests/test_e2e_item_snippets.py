"""End to end with the real default embedder: a search of a list of notes
shows the item the question's words point to, with its neighbours, and
cites those lines; `get` of that citation gives them back; `recall` passes
them on; words spread over the list keep the whole chunk."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from conftest import Daemon, Env
from test_e2e_semantic import serving_with_vectors

pytestmark = pytest.mark.e2e

EN = [
    "# 2026-11-25",
    "",
    "## Work",
    "- Reviewed PR #111 for the billing service",
    "- Rotated the Stripe API keys after the leak report",
    "- Ordered a standing desk (Flexispot E7) for 420 EUR",
    "- Alice suggested we switch CI runners to ARM",
    "- Postgres vacuum on orders table took 40 minutes",
    "- Reviewed PR #114 for the billing service",
]
ZH = [
    "# 2026-11-21",
    "",
    "- 魏决定下周把缓存方案换成 Redis",
    "- 和老王吃饭，他推荐了一家杭州的茶馆",
    "- 买了新的机械键盘，花了 899 元",
    "- 周航的生日是三月十四号",
    "- 给猫打了三联疫苗",
]
RU = [
    "# 2026-11-22",
    "",
    "- Починил бэкап NAS: rsync падал из-за прав на /volume1/photos",
    "- Олег принёс зелёный чай на встречу",
    "- Заказал новую клавиатуру за 9 000 рублей",
    "- Позвонить маме в воскресенье",
    "- Продлил страховку на машину",
]
FILES = {"memory/2026-11-25.md": EN, "memory/2026-11-21.md": ZH, "memory/2026-11-22.md": RU}


@pytest.fixture(scope="module")
def notes(module_env: Env) -> Iterator[Daemon]:
    """One daemon for the module, default settings: the tests only read."""
    module_env.write_config("")
    (module_env.workspace / "memory").mkdir(parents=True)
    for path, lines in FILES.items():
        (module_env.workspace / path).write_text("\n".join(lines) + "\n", encoding="utf-8")
    with serving_with_vectors(module_env) as handle:
        yield handle


@pytest.mark.parametrize(
    ("query", "path", "first", "last"),
    [
        ("how much was the standing desk", "memory/2026-11-25.md", 5, 7),
        ("Stripe API keys", "memory/2026-11-25.md", 4, 6),
        ("机械键盘多少钱", "memory/2026-11-21.md", 4, 6),
        ("какой чай принёс Олег", "memory/2026-11-22.md", 3, 5),
    ],
)
def test_a_list_item_is_shown_with_its_neighbours_and_cited(
    notes: Daemon, query: str, path: str, first: int, last: int
) -> None:
    hit = notes.cli_json("search", query)["results"][0]
    assert (hit["path"], hit["start_line"], hit["end_line"]) == (path, first, last), hit
    lines = FILES[path]
    assert hit["snippet"] == "\n".join(lines[first - 1 : last])
    assert hit["citation"] == f"{path}#L{first}-L{last}"
    # the citation reads back exactly what the hit showed
    got = notes.cli_json("get", hit["citation"])
    assert got["text"].rstrip("\n") == hit["snippet"]


def test_words_spread_over_the_list_keep_the_whole_chunk(notes: Daemon) -> None:
    hit = notes.cli_json("search", "Stripe keys and the ARM runners")["results"][0]
    assert hit["path"] == "memory/2026-11-25.md"
    assert "Stripe" in hit["snippet"]
    assert "ARM" in hit["snippet"]
    assert "standing desk" in hit["snippet"]  # the items between them too


def test_recall_passes_the_item_on(notes: Daemon) -> None:
    reply = notes.cli_json("recall", "what did I pay for the standing desk")
    desk = [m for m in reply["memories"] if "standing desk" in m["text"]]
    assert desk, reply
    # the item itself, not its neighbours: recall quotes the memories that
    # hold the prompt's words
    assert desk[0]["citation"] == "memory/2026-11-25.md#L6"
    assert "billing" not in desk[0]["text"]  # the rest of the day's list is not in it
