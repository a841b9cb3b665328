"""The `log` pipeline on an in-process engine: routing, dedupe, replace, dry run.

The fake embedder's vectors are hashed bags of words (score floor 0, ceiling
1), so "dark mode" against "light mode" is a possible conflict by both
measures, and the same sentence again is a reinforcement.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import date

import pytest
import trio

from conftest import Env
from fake_embedder import FakeEmbedder
from omem_protocol import LogParams, LogResult
from openmemoryd.config import SyncSettings
from openmemoryd.embed import EmbeddingError
from openmemoryd.embed.registry import Choice
from openmemoryd.engine import Engine, open_engine
from openmemoryd.engine.log_ops import log
from openmemoryd.errors import BadRequest
from openmemoryd.search import SearchQuery
from openmemoryd.workspace import init_workspace, template_text

DARK = "I prefer dark mode in every editor"
LIGHT = "I prefer light mode in every editor"


@asynccontextmanager
async def engine_with(env: Env, embedder: FakeEmbedder | None) -> AsyncIterator[Engine]:
    config = env.config(sync=SyncSettings(watch="off", interval_minutes=0))
    init_workspace(config.workspace)
    choice = Choice(embedder, "test") if embedder is not None else None
    async with open_engine(config, choice=choice) as engine:
        yield engine


async def log_text(engine: Engine, text: str, **options: object) -> LogResult:
    return await log(engine, LogParams(text=text, **options))  # type: ignore[arg-type]


def memory_md(env: Env) -> str:
    return (env.workspace / "MEMORY.md").read_text("utf-8")


async def test_written_reinforced_conflict_replaced(env: Env) -> None:
    async with engine_with(env, FakeEmbedder()) as engine:
        first = await log_text(engine, DARK)
        assert first.status == "written"
        assert first.memory_type == "preference"
        assert (first.path, first.section) == ("MEMORY.md", "User Preferences")
        assert first.similarity_method == "vector+lexical"
        assert any("keyword 'prefer'" in r for r in first.reasons)
        assert any("MEMORY.md § User Preferences" in r for r in first.reasons)
        lines = memory_md(env).splitlines()
        assert first.line is not None
        assert lines[first.line - 1] == f"- {DARK}"
        assert first.citation == f"MEMORY.md#L{first.line}"
        found = await engine.search(SearchQuery("dark mode editor", sources=("memory",)))
        assert found.results[0].path == "MEMORY.md"

        again = await log_text(engine, "i prefer  dark mode in every editor.")
        assert again.status == "reinforced"
        assert again.citation == first.citation
        assert again.similar is not None
        assert again.similar.similarity >= 0.92
        assert again.similar.lexical == 1.0
        assert memory_md(env).splitlines()[first.line - 1] == f"- {DARK} (×2)"
        third = await log_text(engine, DARK)
        assert third.status == "reinforced"
        assert third.similar is not None
        assert third.similar.count == 2  # what it was; the file now says ×3
        assert memory_md(env).splitlines()[first.line - 1] == f"- {DARK} (×3)"
        assert memory_md(env).count("dark mode") == 1

        before = memory_md(env)
        conflict = await log_text(engine, LIGHT)
        assert conflict.status == "conflict"
        assert conflict.similar is not None
        assert conflict.similar.citation == first.citation
        assert conflict.similar.text == DARK
        assert 0.85 <= conflict.similar.lexical < 0.92
        assert conflict.line is None
        assert conflict.citation is None
        assert any("pass replace" in r for r in conflict.reasons)
        assert memory_md(env) == before

        replaced = await log_text(engine, LIGHT, replace=True)
        assert replaced.status == "replaced"
        assert replaced.citation == first.citation
        after = memory_md(env)
        assert after.splitlines()[first.line - 1] == f"- {LIGHT}"
        assert after.replace(LIGHT, DARK + " (×3)") == before
        gone = await engine.search(SearchQuery("dark", sources=("memory",)))
        assert not any("dark" in hit.snippet for hit in gone.results)


async def test_force_keeps_a_conflict_alongside_and_dry_run_writes_nothing(env: Env) -> None:
    async with engine_with(env, FakeEmbedder()) as engine:
        await log_text(engine, DARK)
        before = memory_md(env)
        dry = await log_text(engine, LIGHT, replace=True, dry_run=True)
        assert (dry.status, dry.dry_run) == ("replaced", True)
        dry_new = await log_text(engine, "We decided to use Postgres 16 for staging", dry_run=True)
        assert (dry_new.status, dry_new.path, dry_new.line) == ("written", "MEMORY.md", None)
        assert dry_new.section == "Important Decisions"
        assert memory_md(env) == before
        kept = await log_text(engine, LIGHT, force=True)
        assert kept.status == "written"
        assert kept.similar is not None  # the conflict it was written alongside
        assert any("written alongside" in r for r in kept.reasons)
        text = memory_md(env)
        assert f"- {DARK}\n- {LIGHT}\n" in text


async def test_without_vectors_words_decide_and_the_reply_says_so(env: Env) -> None:
    async with engine_with(env, None) as engine:
        first = await log_text(engine, DARK)
        assert first.status == "written"
        assert first.similarity_method == "lexical"
        assert any("word overlap only (no embedding provider)" in r for r in first.reasons)
        assert (await log_text(engine, DARK)).status == "reinforced"
        conflict = await log_text(engine, LIGHT)
        assert conflict.status == "conflict"
        assert conflict.similar is not None
        assert conflict.similar.cosine is None


async def test_a_failing_embedder_falls_back_to_words(env: Env) -> None:
    embedder = FakeEmbedder()
    async with engine_with(env, embedder) as engine:
        await log_text(engine, DARK)
        embedder.fail_documents = EmbeddingError("down", retryable=True)
        again = await log_text(engine, DARK)
        assert again.status == "reinforced"
        assert again.similarity_method == "lexical"
        assert any("the embedding provider failed" in r for r in again.reasons)


async def test_each_type_reaches_its_file(env: Env) -> None:
    async with engine_with(env, None) as engine:
        fact = await log_text(engine, "My name is Wei and I live in Lisbon")
        assert (fact.path, fact.section) == ("USER.md", "Notes")
        user = (env.workspace / "USER.md").read_text("utf-8")
        assert fact.line is not None
        assert user.splitlines()[fact.line - 1] == "- My name is Wei and I live in Lisbon"
        assert user.splitlines()[fact.line - 3] == "## Notes"
        project = await log_text(engine, "The service must run without network access")
        assert (project.path, project.section) == ("PROJECT.md", "Constraints")
        note = await log_text(engine, "Caroline went hiking in the Alps last summer")
        daily = f"memory/{date.today().isoformat()}.md"
        assert (note.path, note.section, note.memory_type) == (daily, None, "note")
        text = (env.workspace / daily).read_text("utf-8")
        assert note.line is not None
        assert text.splitlines()[note.line - 1] == "- Caroline went hiking in the Alps last summer"
        given = await log_text(
            engine, "Caroline's birthday is on the 3rd of May", memory_type="lesson"
        )
        assert (given.path, given.section) == ("MEMORY.md", "Lessons Learned")
        assert "type lesson (given)" in given.reasons


async def test_rejections_write_nothing_and_name_the_rule(env: Env) -> None:
    async with engine_with(env, None) as engine:
        before = memory_md(env)
        for text, rule in [
            ("好的", "too_short"),
            ("Sure, I will remember that you prefer dark mode", "filler"),
            ("也许我们应该换成 Redis", "speculative"),
            ("my password is hunter2 for the router", "secret"),
        ]:
            result = await log_text(engine, text)
            assert (result.status, result.rule) == ("rejected", rule), text
            assert result.path is None
            assert any(f"rule {rule}" in r for r in result.reasons)
        # force skips quality rules, never privacy
        forced = await log_text(engine, "也许我们应该换成 Redis", force=True)
        assert forced.status == "written"
        secret = await log_text(engine, "my password is hunter2 for the router", force=True)
        assert (secret.rule, secret.text) == ("secret", "")
        filler = await log_text(engine, "Sure, my password is hunter2 for the router")
        assert (filler.rule, filler.text) == ("filler", "")  # never echoed back
        assert memory_md(env) == before
        daily = env.workspace / "memory" / f"{date.today().isoformat()}.md"
        assert "hunter2" not in daily.read_text("utf-8")
        assert forced.path == f"memory/{daily.name}"


async def test_a_maskable_secret_is_written_redacted(env: Env) -> None:
    async with engine_with(env, None) as engine:
        token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2"
        result = await log_text(engine, f"We decided the CI bot uses token {token} for releases")
        assert result.status == "written"
        assert result.redactions
        assert token not in memory_md(env)
        assert result.text in memory_md(env)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"text": "   "}, "nothing to log: text is empty"),
        ({"text": "x" * 2001}, "one memory is at most 2000"),
        ({"text": DARK, "memory_type": "mood"}, "unknown memory type 'mood'"),
    ],
)
async def test_bad_input_is_a_clear_error(
    env: Env, options: dict[str, object], message: str
) -> None:
    async with engine_with(env, None) as engine:
        with pytest.raises(BadRequest, match=message):
            await log(engine, LogParams(**options))  # type: ignore[arg-type]


async def test_a_missing_memory_file_starts_from_the_template(env: Env) -> None:
    async with engine_with(env, None) as engine:
        await trio.Path(env.workspace / "MEMORY.md").unlink()
        result = await log_text(engine, "We decided to ship weekly on Tuesdays")
        text = memory_md(env)
        assert text.startswith(template_text("MEMORY.md").split("\n")[0])
        assert result.line is not None
        assert text.splitlines()[result.line - 2].startswith("<!-- Record decisions")


async def test_a_crlf_file_is_reinforced_and_keeps_its_line_ends(env: Env) -> None:
    async with engine_with(env, None) as engine:
        crlf = "# MEMORY\r\n\r\n## User Preferences\r\n- I prefer dark mode in every editor\r\n"
        await trio.Path(env.workspace / "MEMORY.md").write_bytes(crlf.encode())
        await engine.sync()
        again = await log_text(engine, DARK)
        assert (again.status, again.line) == ("reinforced", 4)
        written = await log_text(engine, "I prefer tabs over spaces in Python code")
        assert written.line == 5
        data = await trio.Path(env.workspace / "MEMORY.md").read_bytes()
        assert (
            data
            == crlf.replace(
                "editor\r\n", "editor (×2)\r\n- I prefer tabs over spaces in Python code\r\n"
            ).encode()
        )


async def test_identical_logs_at_once_make_one_memory_counted_twice(env: Env) -> None:
    async with engine_with(env, FakeEmbedder()) as engine:
        results: list[LogResult] = []

        async def one() -> None:
            results.append(await log_text(engine, DARK))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(one)
            nursery.start_soon(one)
        assert sorted(r.status for r in results) == ["reinforced", "written"]
        assert f"- {DARK} (×2)\n" in memory_md(env)
        assert memory_md(env).count(DARK) == 1
