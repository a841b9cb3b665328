"""End to end with the real default embedder, the quantised vector path and
the keyword leg in halves forced on (``quantised_above = 0``,
``keyword_split_above = 0``), the paths of a million-chunk index: search by
meaning still works, through the real daemon and client, the index holds
the quantised companions, notes added or deleted after the daemon's first
searches (which loaded its in-memory copy of the sign bits) are found, or
gone, by meaning, and the keyword leg in halves ranks as the whole does."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import apsw

from conftest import Daemon, Env
from openmemoryd.store.quantised import CENTRE_MIN, bits_name
from test_e2e_semantic import NOTES, append_notes, paths, search, wait_for_vectors
from test_reload import wait_for_log

MORE = {
    "memory/garden.md": "The tomatoes in the back garden need watering every other day",
    "memory/car.md": "The car is due for its annual inspection in March",
    "memory/books.md": "Currently reading a history of the Byzantine empire",
    "memory/music.md": "Practising Chopin nocturnes on the piano on weekends",
    "memory/cat.md": "Mochi the cat gets half a pouch of wet food at 7pm",
}


def test_search_by_meaning_on_the_quantised_path(env: Env) -> None:
    env.write_config("[search]\nquantised_above = 0\nkeyword_split_above = 0\n")
    daemon = Daemon(env).start()
    try:
        notes = {**NOTES, **MORE}
        assert len(notes) >= CENTRE_MIN  # enough vectors for a centre: quantised, not exact
        append_notes(daemon, notes)
        wait_for_vectors(daemon)
        result = search(daemon, "what drink does Wei like")
        assert result["mode"] == "hybrid"
        assert "memory/tea.md" in paths(result)
        assert paths(search(daemon, "feeding the pet", "--min-score", "0"))[0] == "memory/cat.md"
        boat = "The sailing boat is moored at the marina in Kiel over the winter"
        assert daemon.cli("append", "--path", "memory/boat.md", boat).returncode == 0
        wait_for_vectors(daemon)
        yacht = search(daemon, "where is the yacht kept", "--min-score", "0")
        assert paths(yacht)[0] == "memory/boat.md"
        (env.workspace / "memory" / "cat.md").unlink()
        assert daemon.cli("sync").returncode == 0
        assert "memory/cat.md" not in paths(search(daemon, "feeding the pet", "--min-score", "0"))
        status = json.loads(daemon.cli("status", "--json").stdout)
        index = Path(status["index_path"])
        questions = ["what drink does Wei like", "feeding the pet", "boat marina winter", "tea"]
        halves = [search(daemon, q, "--min-score", "0")["results"] for q in questions]
        env.write_config("[search]\nquantised_above = 0\n")  # the leg in one piece
        assert daemon.proc is not None
        daemon.proc.send_signal(signal.SIGHUP)
        wait_for_log(daemon, "SIGHUP: applied search.keyword_split_above 0 -> 250000")
        whole = [search(daemon, q, "--min-score", "0")["results"] for q in questions]
        assert halves == whole
    finally:
        daemon.stop()
    conn = apsw.Connection(str(index), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        (active,) = conn.execute("SELECT value FROM meta WHERE key = 'vec_active'").fetchall()[0]
        table = json.loads(str(active))["table"]
        (rows,) = conn.execute(f"SELECT count(*) FROM {bits_name(table)}").fetchall()[0]
        assert rows == len(notes)  # one added, one deleted
    finally:
        conn.close()
