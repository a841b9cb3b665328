"""`forget` by a citation that went stale, in an engine: the memory that was
cited is forgotten where it moved to, or nothing is removed; never the
memory that moved into the cited lines.

Dogfooding found it: MEMORY.md held three decisions at lines 12-14, one
agent held ``MEMORY.md#L13`` (TLS) from a search, another forgot line 12,
and the first one's ``forget MEMORY.md#L13`` removed the Kafka decision
that had moved up to line 13, exit 0.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from omem_protocol import ForgetParams, SearchParams
from openmemoryd.api import Api
from openmemoryd.daemon_info import DaemonInfo
from openmemoryd.engine import Engine, agent_ops
from openmemoryd.errors import Conflict

K8S = "- Мы решили перейти на Kubernetes для всех сервисов"
TLS = "- Мы решили включить TLS между всеми сервисами"
KAFKA = "- Мы решили перейти на Kafka вместо RabbitMQ"
HEAD = [
    "# MEMORY.md - Long-term Memory",
    "",
    "## Люди",
    "",
    "- Пользователь любит зелёный чай",
    "- Кошку зовут Манго",
    "",
    "## Проект",
    "",
    "- Репозиторий лежит в GitLab",
    "",
]  # lines 1-11: the decisions are lines 12-14


async def _memory_file(engine: Engine) -> Path:
    path = engine.config.workspace / "MEMORY.md"
    path.write_text("\n".join([*HEAD, K8S, TLS, KAFKA, ""]), "utf-8")
    await engine.sync()
    return path


async def _no_progress(done: int, total: int, phase: str) -> None:
    """Nothing to report to."""


async def test_a_stale_citation_forgets_what_it_cited_where_it_moved(engine: Engine) -> None:
    path = await _memory_file(engine)
    recalled = await agent_ops.recall(
        engine, "включить TLS между сервисами", limit=None, min_score=0.0, sources=None, agent=None
    )
    assert [m.citation for m in recalled.memories][:1] == ["MEMORY.md#L13"]  # agent 1

    other = await agent_ops.forget(  # agent 2, by a citation typed by hand
        engine, citation_="MEMORY.md#L12", text=None, query=None, all_=False
    )
    assert other.removed_text == (K8S,)

    stale = await agent_ops.forget(
        engine, citation_="MEMORY.md#L13", text=None, query=None, all_=False
    )
    assert stale.removed == ("MEMORY.md#L12",)
    assert stale.removed_text == (TLS,)
    assert stale.reason == "citation_moved"
    assert stale.cited_as == "MEMORY.md#L13"
    lines = path.read_text("utf-8").splitlines()
    assert lines[11:] == [KAFKA]  # the Kafka decision stays, now at line 12


async def test_a_citation_whose_lines_still_say_it_acts_as_always(engine: Engine) -> None:
    path = await _memory_file(engine)
    appended = await engine.append("- Деплой по пятницам запрещён", "MEMORY.md")
    path.write_text(path.read_text("utf-8").replace(KAFKA, f"{KAFKA} (×2)"), "utf-8")
    gone = await agent_ops.forget(
        engine, citation_=appended.citation, text=None, query=None, all_=False
    )
    assert gone.reason == "citation"
    assert gone.cited_as is None
    assert gone.removed == (appended.citation,)
    assert "пятницам" not in path.read_text("utf-8")


@pytest.mark.parametrize(
    "edit",
    [
        pytest.param(lambda text: text.replace(f"{TLS}\n", ""), id="removed-by-hand"),
        pytest.param(
            lambda text: text.replace(TLS, "- Мы решили включить TLS только снаружи"),
            id="edited-by-hand",
        ),
        pytest.param(
            lambda text: text.replace(TLS, KAFKA).replace(K8S, TLS) + TLS + "\n",
            id="now-in-two-places",
        ),
    ],
)
async def test_a_citation_whose_text_changed_is_refused(engine: Engine, edit: object) -> None:
    path = await _memory_file(engine)
    api = Api(engine, DaemonInfo(socket="/tmp/test.sock"))
    await api.dispatch(  # a search through the API notes what it cites
        SearchParams(query="включить TLS между сервисами", max_tokens=20), _no_progress
    )
    assert engine.cited.served("MEMORY.md", 13, 13), "the search cited line 13 alone"
    assert callable(edit)
    path.write_text(edit(path.read_text("utf-8")), "utf-8")
    before = path.read_bytes()

    with pytest.raises(Conflict) as refused:
        await api.dispatch(ForgetParams(citation="MEMORY.md#L13"), _no_progress)
    message = str(refused.value)
    assert message.startswith("MEMORY.md#L13 changed since it was cited")
    assert "включить TLS между всеми сервисами" in message  # what it said
    assert "Nothing was removed" in message
    assert path.read_bytes() == before


async def test_an_out_of_range_stale_citation_is_refused_not_reported_missing(
    engine: Engine,
) -> None:
    path = await _memory_file(engine)
    appended = await engine.append(TLS.replace("TLS", "mTLS"), "MEMORY.md")
    path.write_text("\n".join(HEAD) + "\n", "utf-8")  # a person cut the decisions
    with pytest.raises(Conflict, match="the file no longer has them"):
        await agent_ops.forget(
            engine, citation_=appended.citation, text=None, query=None, all_=False
        )
    assert path.read_text("utf-8") == "\n".join(HEAD) + "\n"
