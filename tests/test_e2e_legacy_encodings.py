"""End to end with the real default embedder: notes saved as GBK or cp1251
are found by their words, and nonsense never finds mojibake.

Read as UTF-8 with replacement, a GBK note was U+FFFD and stray letters;
its chunk sat near the middle of the model's space and answered "🚀🔥",
"？？？", "*" and "OR" (vector 0.549, evidence 0.479), while "老王", which it
holds, found nothing. Now such a file is read in its encoding, a file no
encoding reads has its undecodable lines left out, a query with nothing
searchable says ``no_terms``, and `status`, `doctor`, `get` and `append`
say per file what it is in. The files on disk are never changed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator

import pytest

from conftest import Daemon, Env
from test_e2e_semantic import serving_with_vectors

pytestmark = pytest.mark.e2e

GBK_KEY = "memory/gbk笔记.md"
GBK_TEXT = (
    "# 备份笔记\n\n"
    "老王说数据库备份脚本放在 /opt/backup，每天凌晨三点运行。\n"
    "如果备份失败，先检查磁盘空间，再看日志。\n"
)
RU_KEY = "memory/2026-10-15.md"
RU_TEXT = (
    "# 2026-10-15\n\n"
    "- Ключ от серверной у Ивана, стойка три.\n"
    "- Пароль от роутера сменили в пятницу.\n"
)
KOI8_KEY = "memory/koi8.md"
KOI8_TEXT = (
    "# Heron\n\nThe kingfisher nests by the old mill.\n\n## Сервер\n\n"
    "Ключ от серверной. Коммутатор стоит в подвале.\n"
)
# Russian in cp1251 beside Chinese in GBK: no one encoding reads it
MIXED_KEY = "memory/mixed.md"
MIXED = (
    b"# Heron\n\nThe kingfisher nests by the old mill.\n\n"
    + "## Сервер\n\nКлюч от серверной.\n".encode("cp1251")
)
NOTES = {
    "memory/2026-11-20.md": "- Wei switched the team's CI from Jenkins to GitHub Actions\n",
    "memory/notes/car.md": "# Car\n- Replaced the brake pads on the Skoda, 180 EUR.\n",
}
NONSENSE = ("🚀🔥", "？？？", "!!!", "*")


@pytest.fixture(scope="module")
def served(module_env: Env) -> Iterator[tuple[Daemon, dict[str, bytes]]]:
    env = module_env
    env.write_config("")  # the defaults, with the bundled local model
    ws = env.workspace
    (ws / "memory" / "notes").mkdir(parents=True)
    originals = {
        GBK_KEY: GBK_TEXT.encode("gbk"),
        RU_KEY: RU_TEXT.encode("cp1251"),
        KOI8_KEY: KOI8_TEXT.encode("koi8-r"),
        MIXED_KEY: MIXED + "老王说数据库备份脚本。\n".encode("gbk"),
    }
    for key, data in originals.items():
        (ws / key).write_bytes(data)
    for key, text in NOTES.items():
        (ws / key).write_text(text)
    with serving_with_vectors(env) as daemon:
        yield daemon, originals


def _search(daemon: Daemon, query: str) -> dict[str, object]:
    return daemon.cli_json("search", query)  # type: ignore[no-any-return]


def _hits(reply: dict[str, object]) -> list[dict[str, object]]:
    return reply["results"]  # type: ignore[return-value]


def test_legacy_notes_are_found_by_their_words(served: tuple[Daemon, dict[str, bytes]]) -> None:
    daemon, _ = served
    (hit, *_) = _hits(_search(daemon, "老王"))
    assert (hit["path"], hit["start_line"]) == (GBK_KEY, 1)
    assert "老王说数据库备份脚本" in str(hit["snippet"])
    # both Russian notes hold the word, one in cp1251, one in KOI8-R
    found = {str(h["path"]): str(h["snippet"]) for h in _hits(_search(daemon, "серверной"))}
    assert "Ключ от серверной у Ивана" in found[RU_KEY]
    assert "Ключ от серверной. Коммутатор" in found[KOI8_KEY]
    (hit, *_) = _hits(_search(daemon, "коммутатор"))
    assert hit["path"] == KOI8_KEY
    assert "Ключ от серверной. Коммутатор стоит в подвале." in str(hit["snippet"])
    # the readable lines of a file no encoding reads are still found
    hits = _hits(_search(daemon, "kingfisher"))
    assert MIXED_KEY in [h["path"] for h in hits]
    assert not any("\ufffd" in str(h["snippet"]) for h in hits)


def test_queries_with_nothing_to_search_by_return_nothing(
    served: tuple[Daemon, dict[str, bytes]],
) -> None:
    daemon, _ = served
    for query in NONSENSE:
        reply = _search(daemon, query)
        assert (reply["results"], reply["empty_reason"]) == ([], "no_terms"), (query, reply)
        shown = daemon.cli("search", query)
        assert shown.returncode == 0, shown.stderr
        assert shown.stdout.strip() == "No matches."
        assert "no searchable words" in shown.stderr
    # a word, but one no note is about: no mojibake comes back for it
    for query in ("OR", "whatever"):
        hits = _hits(_search(daemon, query))
        assert not any("\ufffd" in str(h["snippet"]) for h in hits), (query, hits)
        assert not any(h["path"] in (GBK_KEY, MIXED_KEY) for h in hits), (query, hits)


def test_status_and_doctor_name_each_file_s_encoding(
    served: tuple[Daemon, dict[str, bytes]],
) -> None:
    daemon, originals = served
    issues = daemon.cli_json("status")["issues"]
    assert f"{GBK_KEY}: not UTF-8: read as gb18030" in issues
    assert f"{RU_KEY}: not UTF-8: read as cp1251" in issues
    assert f"{KOI8_KEY}: not UTF-8: read as koi8-r" in issues
    assert (
        f"{MIXED_KEY}: not UTF-8, nor clearly one other encoding: invalid bytes replaced with "
        "U+FFFD; lines 5-8 not indexed (undecodable bytes)"
    ) in issues
    result = subprocess.run(
        [sys.executable, "-m", "openmemoryd", "doctor", "--json"],
        env=daemon.env.vars,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    checks = {c["name"]: c for c in json.loads(result.stdout)["checks"]}
    fix = str(checks["files"]["fix"])
    assert f"iconv -f gb18030 -t utf-8 {GBK_KEY} > {GBK_KEY}.utf8" in fix
    assert f"iconv -f cp1251 -t utf-8 {RU_KEY} > {RU_KEY}.utf8" in fix
    assert f"iconv -f koi8-r -t utf-8 {KOI8_KEY} > {KOI8_KEY}.utf8" in fix
    assert f"iconv -f ENCODING -t utf-8 {MIXED_KEY}" in fix  # no encoding clear
    for key, data in originals.items():
        assert (daemon.env.workspace / key).read_bytes() == data


def test_get_shows_the_decoded_text_and_says_how_it_was_read(
    served: tuple[Daemon, dict[str, bytes]],
) -> None:
    daemon, _ = served
    shown = daemon.cli("get", GBK_KEY)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout == GBK_TEXT
    assert f"note: {GBK_KEY}: not UTF-8: read as gb18030; the file is as it was" in shown.stderr
    cited = daemon.cli_json("get", f"{RU_KEY}:3-3")
    assert (cited["text"], cited["note"]) == (RU_TEXT.split("\n")[2], "not UTF-8: read as cp1251")
    assert daemon.cli_json("get", "memory/notes/car.md")["note"] is None


def test_append_refuses_to_mix_encodings_in_a_legacy_file(
    served: tuple[Daemon, dict[str, bytes]],
) -> None:
    daemon, originals = served
    refused = daemon.cli("append", "--path", GBK_KEY, "老王换了新的备份盘")
    assert refused.returncode != 0
    assert f"{GBK_KEY} is not UTF-8 (it is in gb18030)" in refused.stderr
    assert "convert the file to UTF-8 first" in refused.stderr
    assert (daemon.env.workspace / GBK_KEY).read_bytes() == originals[GBK_KEY]
    # ASCII is the same bytes in GBK: appended, and the file still reads as GBK
    added = daemon.cli("append", "--path", GBK_KEY, "backup disk replaced (sdb)")
    assert added.returncode == 0, added.stderr
    data = (daemon.env.workspace / GBK_KEY).read_bytes()
    assert data.startswith(originals[GBK_KEY])
    assert data.decode("gb18030").endswith("backup disk replaced (sdb)\n")
    (hit, *_) = _hits(_search(daemon, "老王"))
    assert hit["path"] == GBK_KEY


def test_primer_shows_a_gbk_daily_file_as_its_chinese(
    served: tuple[Daemon, dict[str, bytes]],
) -> None:
    daemon, _ = served
    day = "2026-11-23"
    text = f"# {day}\n\n- 老王说数据库备份脚本放在 /opt/backup，每天凌晨三点运行。\n"
    path = daemon.env.workspace / "memory" / f"{day}.md"
    path.write_bytes(text.encode("gbk"))
    shown = daemon.cli("primer", "--date", day)
    assert shown.returncode == 0, shown.stderr
    assert "- 老王说数据库备份脚本放在 /opt/backup，每天凌晨三点运行。" in shown.stdout
    assert "\ufffd" not in shown.stdout
    assert path.read_bytes() == text.encode("gbk")


def test_log_refuses_to_mix_encodings_in_a_legacy_file(
    served: tuple[Daemon, dict[str, bytes]],
) -> None:
    """`log` rewrites the file it files a memory in: a Russian line put into
    a USER.md saved as cp1251 went in as UTF-8, and the file was in two
    encodings at once. It is refused as `append` refuses it."""
    daemon, _ = served
    user = daemon.env.workspace / "USER.md"
    original = "# USER.md\n\n## Notes\n\n- Работаю в Казани.\n".encode("cp1251")
    user.write_bytes(original)
    daemon.cli("sync")
    refused = daemon.cli("log", "--force", "Меня зовут Иван, я живу в Казани")
    assert refused.returncode == 4, (refused.stdout, refused.stderr)
    assert "USER.md is not UTF-8 (it is in cp1251)" in refused.stderr
    assert user.read_bytes() == original


def test_forget_removes_a_line_of_a_legacy_file_and_keeps_its_encoding(
    served: tuple[Daemon, dict[str, bytes]],
) -> None:
    """forget compared the cited line, as search showed it, with the file
    read as UTF-8: a Russian line of a cp1251 note never matched, and the
    refusal said the file had changed. The file is now edited as its text
    and written back in cp1251, every other byte as it was."""
    daemon, originals = served
    line = "- Пароль от роутера сменили в пятницу."
    by_text = daemon.cli("forget", "--text", line)
    assert by_text.returncode == 0, (by_text.stdout, by_text.stderr)
    assert f"Forgot {RU_KEY}#L4" in by_text.stdout
    data = (daemon.env.workspace / RU_KEY).read_bytes()
    assert data == originals[RU_KEY].replace((line + "\n").encode("cp1251"), b"")
    assert data.decode("cp1251") == RU_TEXT.replace(line + "\n", "")
    # by citation, its line read as the file's encoding says
    assert daemon.cli("get", f"{RU_KEY}#L3").stdout.startswith("- Ключ от серверной")
    cited = daemon.cli("forget", f"{RU_KEY}#L3")
    assert cited.returncode == 0, (cited.stdout, cited.stderr)
    assert (daemon.env.workspace / RU_KEY).read_bytes().decode("cp1251") == "# 2026-10-15\n"
