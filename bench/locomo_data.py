"""LoCoMo's data and the workspaces the benchmark writes from it.

`load_locomo` reads ``locomo10.json`` (CC BY-NC 4.0, read where it lies,
never copied) into conversations and their usable questions, counting what
had to be skipped or repaired; `write_workspace` writes one conversation as
a user of openmemory would keep it (see `bench.locomo` for the layouts).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import Any, Final

from openmemoryd.workspace.paths import ROOT_FILES

DEFAULT_DATA: Final = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo10.json"

CATEGORIES: Final[Mapping[int, str]] = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
}
ADVERSARIAL: Final = 5
LAYOUTS: Final = ("dated", "undated", "journal")
# The layouts of one file a day, which the default methods run on.
NAMED_LAYOUTS: Final = ("dated", "undated")
JOURNAL_FILE: Final = "memory/locomo.md"
SESSION_TIME_FORMATS: Final = ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %B %Y")

_SESSION_KEY: Final = re.compile(r"^session_(\d+)$")
_EVIDENCE_SPLIT: Final = re.compile(r"[\s;,]+")


class DataError(ValueError):
    """The data file is missing or not shaped like locomo10.json."""


@dataclass(frozen=True, slots=True)
class Turn:
    dia_id: str
    speaker: str
    text: str
    caption: str | None


@dataclass(frozen=True, slots=True)
class Session:
    number: int
    date_time: str
    day: date
    turns: tuple[Turn, ...]


@dataclass(frozen=True, slots=True)
class Question:
    """A usable QA item; `qa_index` is its position in the sample's ``qa`` list."""

    qa_index: int
    question: str
    category: int
    evidence: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Conversation:
    """One sample, with what loading had to skip or repair counted."""

    index: int
    sample_id: str
    speaker_a: str
    speaker_b: str
    sessions: tuple[Session, ...]
    questions: tuple[Question, ...]
    skipped_adversarial: int
    skipped_no_evidence: int
    questions_with_dropped_ids: int
    dropped_ids: tuple[str, ...]

    @property
    def turns(self) -> int:
        return sum(len(s.turns) for s in self.sessions)


def split_evidence(raw: Iterable[object]) -> list[str]:
    """Evidence ids, one per item, with packed strings ("D8:6; D9:17") split apart."""
    ids: list[str] = []
    for item in raw:
        for part in _EVIDENCE_SPLIT.split(str(item)):
            if part and part not in ids:
                ids.append(part)
    return ids


def _one_line(text: str) -> str:
    """Whitespace runs (newlines included) to one space: one turn must stay one line."""
    return " ".join(text.split())


def _session_day(value: str, where: str) -> date:
    for fmt in SESSION_TIME_FORMATS:
        try:
            return datetime.strptime(value.strip(), fmt).date()
        except ValueError:
            continue
    raise DataError(f"{where}: unrecognised session date {value!r}")


def _parse_conversation(index: int, sample: Mapping[str, Any]) -> Conversation:
    where = f"sample {index}"
    conv = sample.get("conversation")
    qa = sample.get("qa")
    if not isinstance(conv, Mapping) or not isinstance(qa, list):
        raise DataError(f"{where}: expected 'conversation' and 'qa'")
    sessions: list[Session] = []
    for key, turns in conv.items():
        match = _SESSION_KEY.match(key)
        if match is None or not isinstance(turns, list) or not turns:
            continue
        number = int(match.group(1))
        date_time = str(conv.get(f"{key}_date_time", ""))
        parsed = tuple(
            Turn(
                dia_id=str(t["dia_id"]),
                speaker=_one_line(str(t["speaker"])),
                text=_one_line(str(t.get("text", ""))),
                caption=_one_line(str(t["blip_caption"])) if t.get("blip_caption") else None,
            )
            for t in turns
        )
        sessions.append(Session(number, date_time, _session_day(date_time, where), parsed))
    sessions.sort(key=lambda s: s.number)
    known = {t.dia_id for s in sessions for t in s.turns}

    questions: list[Question] = []
    adversarial = no_evidence = repaired = 0
    dropped: list[str] = []
    for qa_index, item in enumerate(qa):
        category = int(item.get("category", 0))
        if category == ADVERSARIAL:
            adversarial += 1
            continue
        if category not in CATEGORIES:
            raise DataError(f"{where}, qa {qa_index}: unknown category {category!r}")
        ids = split_evidence(item.get("evidence") or [])
        kept = tuple(i for i in ids if i in known)
        unknown = [i for i in ids if i not in known]
        if not kept:
            no_evidence += 1
            continue
        if unknown:
            repaired += 1
            dropped.extend(unknown)
        questions.append(Question(qa_index, str(item["question"]), category, kept))
    return Conversation(
        index=index,
        sample_id=str(sample.get("sample_id", index)),
        speaker_a=str(conv.get("speaker_a", "")),
        speaker_b=str(conv.get("speaker_b", "")),
        sessions=tuple(sessions),
        questions=tuple(questions),
        skipped_adversarial=adversarial,
        skipped_no_evidence=no_evidence,
        questions_with_dropped_ids=repaired,
        dropped_ids=tuple(dropped),
    )


def load_locomo(path: Path) -> list[Conversation]:
    """Every sample of a locomo10.json-shaped file, in file order."""
    try:
        data = json.loads(path.read_text("utf-8"))
    except FileNotFoundError:
        raise DataError(f"LoCoMo data not found at {path}") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DataError(f"cannot read LoCoMo data {path}: {exc}") from None
    if not isinstance(data, list):
        raise DataError(f"{path}: expected a JSON list of samples")
    try:
        return [_parse_conversation(i, sample) for i, sample in enumerate(data)]
    except (KeyError, TypeError, ValueError) as exc:
        if isinstance(exc, DataError):
            raise
        raise DataError(f"{path}: not shaped like locomo10.json ({exc!r})") from None


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as data:
        for block in iter(lambda: data.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


# ---------------------------------------------------------------- workspace


def file_name(day: date, layout: str) -> str:
    """The workspace key of a session day's file in *layout*."""
    if layout == "dated":
        return f"memory/{day.isoformat()}.md"
    if layout == "undated":
        return f"memory/locomo-{day.isoformat()}.md"
    if layout == "journal":
        return JOURNAL_FILE
    raise ValueError(f"unknown layout {layout!r}")


def render_day(
    day: date, sessions: Sequence[Session], *, level: int = 1
) -> tuple[str, dict[int, str]]:
    """One day's Markdown, its title a heading of *level*, and the 1-based
    line number of every turn's line."""
    lines = [f"{'#' * level} {day.isoformat()}"]
    where: dict[int, str] = {}
    for session in sessions:
        lines += ["", f"{'#' * (level + 1)} Session {session.number} — {session.date_time}", ""]
        for turn in session.turns:
            line = f"- [{turn.dia_id}] {turn.speaker}: {turn.text}"
            if turn.caption:
                line += f" [shares photo: {turn.caption}]"
            lines.append(line)
            where[len(lines)] = turn.dia_id
    return "\n".join(lines) + "\n", where


def render_journal(
    conversation: Conversation, by_day: Mapping[date, Sequence[Session]]
) -> tuple[str, dict[int, str]]:
    """The whole conversation as one file, oldest day first, each day a
    ``## YYYY-MM-DD`` section (a journal kept in one file: the days are
    only in its headings), and the line number of every turn's line."""
    text = f"# Chat log: {conversation.speaker_a} and {conversation.speaker_b}\n"
    where: dict[int, str] = {}
    for day in sorted(by_day):
        before = text.count("\n") + 1  # the blank line before the day's heading
        part, lines = render_day(day, by_day[day], level=2)
        text += "\n" + part
        where.update({before + number: dia_id for number, dia_id in lines.items()})
    return text, where


@dataclass(frozen=True, slots=True)
class WrittenWorkspace:
    """What `write_workspace` wrote: file count, bytes, and every turn's line."""

    files: int
    bytes: int
    turn_lines: dict[str, dict[int, str]]


def write_workspace(conversation: Conversation, root: Path, layout: str) -> WrittenWorkspace:
    """Write *conversation* as a workspace at *root* (which must not hold memory files)."""
    by_day: dict[date, list[Session]] = defaultdict(list)
    for session in conversation.sessions:
        by_day[session.day].append(session)
    memory = root / "memory"
    memory.mkdir(parents=True, exist_ok=True)
    for name in ROOT_FILES:
        (root / name).write_text("", encoding="utf-8")
    turn_lines: dict[str, dict[int, str]] = {}
    size = 0
    files = (
        [(JOURNAL_FILE, render_journal(conversation, by_day))]
        if layout == "journal"
        else [(file_name(day, layout), render_day(day, by_day[day])) for day in sorted(by_day)]
    )
    for key, (text, where) in files:
        data = text.encode("utf-8")
        (root / key).write_bytes(data)
        size += len(data)
        turn_lines[key] = where
    return WrittenWorkspace(len(turn_lines), size, turn_lines)
