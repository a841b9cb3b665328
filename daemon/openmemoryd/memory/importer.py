"""Importing memory: an export archive, or another tool's Markdown folder.

The rule is the one every write here follows: nothing already in the
workspace is ever overwritten or lost.

* A file the workspace lacks is created, and so is one that still holds
  its bootstrap template (a restore into a new workspace, which init laid
  out, gives back every file byte for byte).
* A file with the same bytes is left alone.
* A file that differs gets, appended under a provenance comment, the lines
  of the imported copy it does not already contain (daily logs and curated
  lists merge naturally; nothing is dropped on either side).

What "already contains" means is what makes importing an older export safe
(`plan_merge`): the workspace moved on since, and an import must not undo
that.

* A task (a ``- [ ]`` / ``- [x]`` line) is the task whatever its checkbox:
  the same text (case and spacing aside, the ``➕``/``✅`` dates peeled off,
  as `tasks_file` names a task) and the same added date, or no date to tell
  them apart. A task done since the export is not brought back open, nor an
  open task added twice (``tasks add`` refuses that too). The workspace's
  ``memory/TASKS.md`` counts for every file: another tool's MEMORY.md may
  list tasks inline.
* A line the workspace lacks that looks like an older version of a line it
  has now (most of its words in common with a line the imported copy does
  not have, i.e. one written or edited since) is held back and reported,
  not appended: appending it would put the outdated fact back next to its
  correction. ``all_lines`` appends it anyway.
* A line forgotten on purpose since (``forget``, ``tasks remove``: the
  daemon keeps a digest of each, `memory.forgotten`) is held back from the
  file it was forgotten from and reported, even from a file the workspace
  no longer has: someone who forgot a line, often for privacy, expects it to
  stay forgotten. ``include_forgotten`` brings such lines back (and the
  caller then drops their tombstones, `memory.forgotten.clear`).
* Only a line the workspace has lost otherwise (deleted by hand, or never
  had) is appended; that is how an export restores what was lost.

Where files go: ``MEMORY.md``, ``USER.md``, ``PROJECT.md`` and
``memory/**`` keep their place; any other Markdown of a folder (or an
archive's ``extra/`` files, which came from outside the exported workspace)
lands under ``memory/imported/<source>/``, so an import never writes outside
the workspace.

Archives are checked before anything is written: members must be plain
files with relative names and no ``..``, within the file size limit, and,
when the archive has our manifest, every file must match its SHA-256. A bad
archive is refused whole.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
import tarfile
from collections import defaultdict
from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass
from datetime import date
from difflib import SequenceMatcher
from pathlib import Path, PurePosixPath
from typing import Final, Literal

import msgspec

from openmemoryd.errors import BadRequest, NotFound, OmemdError
from openmemoryd.memory.append import append_block, open_locked
from openmemoryd.memory.archive import (
    EXTRA_PREFIX,
    FORMAT,
    FORMAT_VERSION,
    MANIFEST,
    WORKSPACE_PREFIX,
    Manifest,
)
from openmemoryd.memory.durable import fsync_dir, read_all, replace_file, write_all
from openmemoryd.memory.forgotten import line_digest
from openmemoryd.memory.tasks_file import TASKS_KEY, Task, TasksFile, normalize_key
from openmemoryd.text.scripts import CJK_CLASS
from openmemoryd.workspace import (
    MEMORY_DIR,
    ROOT_FILES,
    MemoryPath,
    PathPolicy,
    ignored_name,
    is_pristine_template,
    open_beneath,
    read_memory_file,
)

MAX_MEMBERS: Final = 100_000
IMPORTED_DIR: Final = "imported"
_LABEL_UNSAFE: Final = re.compile(r"[^A-Za-z0-9._-]+")

# Share of their words (`SequenceMatcher.ratio` over the word lists) two
# lines must have in common for the imported one to count as an older
# version of the workspace's. Anywhere in the file it takes most of them
# ("We deploy on Kubernetes" / "… on Nomad": 0.75; "Meeting with Bob on
# Monday" / "… Ann on Friday": 0.6, two facts); where the diff of the two
# files puts one in place of the other, half ("- Editor: vim" / "- Editor:
# helix"), since an edit in place is what an older version looks like.
SIMILAR: Final = 0.65
SIMILAR_IN_PLACE: Final = 0.5
# A run of lines the diff replaces counts as edited in place up to this
# many lines a side; a longer one is two files going separate ways, where
# only the stricter SIMILAR holds a line back.
MAX_IN_PLACE: Final = 8
# Line pairs compared anywhere in a file at most (about half a second in the
# worst case), else only edits in place are looked for: after an older
# export the differences are a handful of lines; thousands on each side are
# two unrelated files, and comparing every pair would take minutes.
MAX_PAIRS: Final = 100_000
# Words for the comparison: a run of letters or digits, or one CJK
# character (Chinese and Japanese put no spaces between words).
_WORD: Final = re.compile(f"[{CJK_CLASS}]|[^\\W_{CJK_CLASS}]+")
_MAYBE_TASK: Final = re.compile(r"^[ \t]*[-*+] \[[ xX]\] ", re.MULTILINE)
_MARKER: Final = re.compile(r"^(?:[-*+]|\d{1,9}[.)]|>|(?P<heading>#{1,6}))[ \t]+")

Action = Literal["create", "merge", "unchanged"]


@dataclass(frozen=True, slots=True)
class Incoming:
    origin: str  # where it came from, for the report
    target: str  # workspace key it goes to
    data: bytes


@dataclass(frozen=True, slots=True)
class HeldBack:
    """An imported line not appended: the workspace has a newer version of it."""

    line: str  # the imported line
    current: str  # the workspace's line it looks like an older version of
    current_line: int  # that line's number (1-based) in the workspace file


@dataclass(frozen=True, slots=True)
class Outcome:
    origin: str
    target: str
    action: Action
    lines_added: int
    held_back: tuple[HeldBack, ...] = ()
    # Imported lines not appended because they are not UTF-8 text (the
    # append path writes text); the source still has them.
    not_text: tuple[str, ...] = ()
    # Imported lines forgotten from this file since: held back, or, with
    # `include_forgotten`, written (then among `lines_added`).
    forgotten: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Merge:
    """What merging an imported copy into a workspace file adds and holds back."""

    added: tuple[str, ...]
    held_back: tuple[HeldBack, ...]
    # forgotten since (see the module docstring): held back, or among
    # `added` with *include_forgotten*
    forgotten: tuple[str, ...] = ()


def read_source(source: Path, *, max_file_bytes: int) -> list[Incoming]:
    """The Markdown files *source* (an archive or a folder) offers, mapped to
    their workspace keys; raises `BadRequest` for an unsafe or damaged archive."""
    try:
        st = os.stat(source)
    except OSError as exc:
        raise NotFound(f"cannot read {source}: {exc.strerror}") from exc
    label = _LABEL_UNSAFE.sub("-", source.name.split(".")[0]).strip("-") or "import"
    if stat.S_ISDIR(st.st_mode):
        return _from_folder(source, label, max_file_bytes)
    if stat.S_ISREG(st.st_mode) and tarfile.is_tarfile(source):
        return _from_archive(source, label, max_file_bytes)
    raise BadRequest(f"{source} is neither a directory nor a tar archive")


def apply_import(
    policy: PathPolicy,
    incoming: list[Incoming],
    *,
    dry_run: bool,
    today: date,
    max_file_bytes: int,
    all_lines: bool = False,
    forgotten: Mapping[str, Set[str]] | None = None,
    include_forgotten: bool = False,
) -> list[Outcome]:
    """Bring *incoming* into the workspace (or only say what would happen).

    With *all_lines*, lines that look like an older version of one the
    workspace has are appended too (see `plan_merge`). *forgotten* holds,
    per workspace file, the `line_digest` of each line forgotten from it:
    those are held back unless *include_forgotten*.
    """
    outcomes: list[Outcome] = []
    for item in incoming:
        mp = policy.resolve(item.target)
        gone = (forgotten or {}).get(mp.key, frozenset())
        rules = _Rules(all_lines, gone, include_forgotten)
        outcomes.append(_bring_in(policy, mp, item, dry_run, today, max_file_bytes, rules))
    return outcomes


@dataclass(frozen=True, slots=True)
class _Rules:
    all_lines: bool
    forgotten: Set[str]  # digests of the lines forgotten from the target file
    include_forgotten: bool


def _bring_in(
    policy: PathPolicy,
    mp: MemoryPath,
    item: Incoming,
    dry_run: bool,
    today: date,
    max_file_bytes: int,
    rules: _Rules,
) -> Outcome:
    try:
        existing, _ = read_memory_file(mp, max_file_bytes)
    except NotFound:
        data, gone = _without_forgotten(item.data, rules)
        if dry_run:
            return Outcome(item.origin, mp.key, "create", data.count(b"\n"), forgotten=gone)
        try:
            _create(mp, data)
            return Outcome(item.origin, mp.key, "create", data.count(b"\n"), forgotten=gone)
        except FileExistsError:  # created meanwhile: merge into it instead
            existing, _ = read_memory_file(mp, max_file_bytes)
    if existing == item.data:
        return Outcome(item.origin, mp.key, "unchanged", 0)
    if is_pristine_template(mp.key, existing):
        # a bootstrap file nobody wrote in (init, or the start of a restore
        # into a new workspace) is no memory to merge into: merged, an
        # export's MEMORY.md ended up under the template's empty sections,
        # its own title and headings lost
        data, gone = _without_forgotten(item.data, rules)
        if dry_run or _replace_template(mp, existing, data):
            return Outcome(item.origin, mp.key, "create", data.count(b"\n"), forgotten=gone)
        existing, _ = read_memory_file(mp, max_file_bytes)  # written meanwhile: merge
    imported = _text(item.data)
    tasks = _workspace_tasks(policy, mp, imported, max_file_bytes)
    merge = plan_merge(
        _text(existing),
        imported,
        all_lines=rules.all_lines,
        tasks_elsewhere=tasks,
        forgotten=rules.forgotten,
        include_forgotten=rules.include_forgotten,
    )
    # A byte that is not UTF-8 survives the comparison (surrogateescape) but
    # not the append, which writes text: such a line is reported, not written.
    missing = [line for line in merge.added if _encodable(line)]
    not_text = tuple(line for line in merge.added if not _encodable(line))
    action: Action = "merge" if missing else "unchanged"
    if missing and not dry_run:
        block = f"<!-- imported from {item.origin} on {today.isoformat()} -->\n" + "\n".join(
            missing
        )
        append_block(mp, block, max_file_bytes)
    return Outcome(
        item.origin, mp.key, action, len(missing), merge.held_back, not_text, merge.forgotten
    )


def _without_forgotten(data: bytes, rules: _Rules) -> tuple[bytes, tuple[str, ...]]:
    """*data* (a file the workspace lacks) without its forgotten lines, and
    those lines; *data* whole, with them, under *include_forgotten*. Every
    other byte is kept as it is."""
    if not rules.forgotten:
        return data, ()
    kept: list[bytes] = []
    gone: list[str] = []
    for raw in data.split(b"\n"):
        line = _text(raw).rstrip()
        if line.strip() and line_digest(line) in rules.forgotten:
            gone.append(line)
            if not rules.include_forgotten:
                continue
        kept.append(raw)
    return b"\n".join(kept), tuple(gone)


def plan_merge(
    existing: str,
    imported: str,
    *,
    all_lines: bool = False,
    tasks_elsewhere: Sequence[Task] = (),
    forgotten: Set[str] = frozenset(),
    include_forgotten: bool = False,
) -> Merge:
    """The lines of *imported* that merging it into *existing* appends, in
    its order, and those it holds back as older versions of lines *existing*
    has now (appended too with *all_lines*) or as forgotten since (their
    `line_digest` is in *forgotten*; appended too, whatever *all_lines*, with
    *include_forgotten*: asked for by name). See the module docstring.

    *tasks_elsewhere* (the workspace's ``memory/TASKS.md``) count as tasks
    *existing* has: another tool's MEMORY.md may list tasks inline, and one
    done here since is no more to come back there than in the task file.
    """
    mine = _lines(existing)
    theirs = _lines(imported)
    have = {line.key for line in mine}
    tasks: defaultdict[str, list[Task]] = defaultdict(list)
    for task in [*tasks_elsewhere, *(line.task for line in mine if line.task is not None)]:
        tasks[normalize_key(task.text)].append(task)
    candidates: list[_Line] = []
    for line in theirs:
        if line.key in have:
            continue
        if line.task is not None:
            same_text = tasks[normalize_key(line.task.text)]
            if any(_same_task(line.task, other) for other in same_text):
                continue
            same_text.append(line.task)  # the import's own repeats are added once
        have.add(line.key)
        candidates.append(line)
    gone = {line.number for line in candidates if forgotten and line_digest(line.text) in forgotten}
    others = [line for line in candidates if line.number not in gone]
    held: dict[int, HeldBack] = {} if all_lines else _older_versions(others, mine, theirs)
    added = [
        line.text
        for line in candidates
        if line.number not in held and (include_forgotten or line.number not in gone)
    ]
    return Merge(
        added=tuple(added),
        held_back=tuple(held[line.number] for line in others if line.number in held),
        forgotten=tuple(line.text for line in candidates if line.number in gone),
    )


def _workspace_tasks(
    policy: PathPolicy, mp: MemoryPath, imported: str, max_file_bytes: int
) -> list[Task]:
    """The tasks of the workspace's task file, when *imported* (going to *mp*,
    another file) has a task line at all; none when the file is missing or
    unreadable (the merge then judges by *mp*'s own lines, as before)."""
    if mp.key == TASKS_KEY or not _MAYBE_TASK.search(imported):
        return []
    try:
        data, _ = read_memory_file(policy.resolve(TASKS_KEY), max_file_bytes)
    except (OmemdError, OSError):
        return []
    return TasksFile(_text(data)).tasks()


@dataclass(frozen=True, slots=True)
class _Line:
    """A non-blank line of a file, as the merge compares it."""

    number: int  # 1-based, in its file
    text: str  # as written, trailing whitespace dropped
    key: str  # what an identical line shares: the text without its indent
    task: Task | None  # the task it is, if it is a checkbox line
    kind: str  # "task", "heading" or "text": only lines of one kind are versions
    words: tuple[str, ...]  # what its similarity is measured on; none: never a version


def _lines(text: str) -> list[_Line]:
    """*text*'s non-blank lines. Split at ``\\n`` only (``\\r`` dropped), as
    the daemon numbers lines: `str.splitlines` would also break at form
    feeds and U+2028, and append an imported line as two."""
    out: list[_Line] = []
    for number, raw in enumerate(text.split("\n"), 1):
        key = raw.strip()
        if not key:
            continue
        found = TasksFile(key).tasks() if key[0] in "-*+" else []
        task = found[0] if found else None
        if task is not None:
            kind, body = "task", task.text
        else:
            marker = _MARKER.match(key)
            kind = "heading" if marker and marker.group("heading") else "text"
            body = key[marker.end() :] if marker else key
        # An HTML comment (an earlier import's provenance line) is no fact
        # with versions: it is added when missing, never held back.
        words = () if key.startswith("<!--") else tuple(_WORD.findall(body.casefold()))
        out.append(_Line(number, raw.rstrip(), key, task, kind, words))
    return out


def _same_task(imported: Task, mine: Task) -> bool:
    """Whether *imported* is *mine* (their texts already match), whatever the checkboxes.

    The added date tells a task from one of the same text added again after
    it was done (as the task ids do); without a date on both, the text decides.
    An open task is never added next to an open one of the same text.
    """
    if imported.added is None or mine.added is None or imported.added == mine.added:
        return True
    return not imported.done and not mine.done


def _older_versions(
    candidates: list[_Line], mine: list[_Line], theirs: list[_Line]
) -> dict[int, HeldBack]:
    """The *candidates* (imported lines the workspace lacks) that look like
    an older version of a workspace line written since: keyed by their number.

    The workspace line must be one the imported copy does not have (not even
    as the same task in another state): a line both have is not an edit of
    anything, and a line the workspace lost with no newer version of it is
    exactly what an import should bring back.
    """
    their_keys = {line.key for line in theirs}
    their_tasks = {normalize_key(line.task.text) for line in theirs if line.task is not None}
    newer = {
        line.number: line
        for line in mine
        if line.words
        and line.key not in their_keys
        and (line.task is None or normalize_key(line.task.text) not in their_tasks)
    }
    pending = {line.number: line for line in candidates if line.words}
    if not newer or not pending:
        return {}
    held: dict[int, HeldBack] = {}
    # In place first: where the line diff of the two files has a few lines
    # replaced by a few others, an edit is the likely story.
    aligned = SequenceMatcher(None, [t.key for t in theirs], [m.key for m in mine], autojunk=False)
    for tag, i1, i2, j1, j2 in aligned.get_opcodes():
        if tag != "replace" or max(i2 - i1, j2 - j1) > MAX_IN_PLACE:
            continue
        olds = [pending[t.number] for t in theirs[i1:i2] if t.number in pending]
        news = [newer[m.number] for m in mine[j1:j2] if m.number in newer]
        _pair(olds, news, SIMILAR_IN_PLACE, held)
    rest = [line for number, line in pending.items() if number not in held]
    if len(rest) * len(newer) <= MAX_PAIRS:
        _pair(rest, list(newer.values()), SIMILAR, held)
    return held


def _pair(
    olds: list[_Line], news: list[_Line], threshold: float, held: dict[int, HeldBack]
) -> None:
    """Hold back each of *olds* whose closest line of *news* (of its kind)
    shares at least *threshold* of its words."""
    matcher: SequenceMatcher[str] = SequenceMatcher(autojunk=False)
    for old in olds:
        matcher.set_seq2(old.words)  # the side SequenceMatcher caches
        best: tuple[float, _Line] | None = None
        for new in news:
            if new.kind != old.kind:
                continue
            matcher.set_seq1(new.words)
            if matcher.real_quick_ratio() < threshold or matcher.quick_ratio() < threshold:
                continue
            ratio = matcher.ratio()
            if ratio >= threshold and (best is None or ratio > best[0]):
                best = (ratio, new)
        if best is not None:
            held[old.number] = HeldBack(old.text, best[1].text, best[1].number)


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="surrogateescape")


def _encodable(line: str) -> bool:
    try:
        line.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _replace_template(mp: MemoryPath, template: bytes, data: bytes) -> bool:
    """Give *mp* the content *data* if it still holds *template* (under its
    lock, atomically); False if someone wrote in it meanwhile."""
    fd = open_locked(mp)
    try:
        if read_all(fd) != template:
            return False
        replace_file(mp.absolute, data, mode=os.fstat(fd).st_mode & 0o777, tag="import")
    finally:
        os.close(fd)
    return True


def _create(mp: MemoryPath, data: bytes) -> None:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL
    fd = open_beneath(mp, flags, mode=0o600, make_dirs=mp.parts[0] == MEMORY_DIR)
    try:
        write_all(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    fsync_dir(mp.root.joinpath(*mp.parts[:-1]))


def _target(relative: str, label: str) -> str:
    """Where a file at *relative* in a foreign folder belongs."""
    parts = PurePosixPath(relative).parts
    if relative in ROOT_FILES or (len(parts) > 1 and parts[0] == MEMORY_DIR):
        return relative
    return "/".join((MEMORY_DIR, IMPORTED_DIR, label, *parts))


def _from_folder(root: Path, label: str, max_file_bytes: int) -> list[Incoming]:
    found: list[Incoming] = []
    for directory, dirs, files in os.walk(root):  # never follows symlinked dirs
        dirs[:] = sorted(d for d in dirs if not ignored_name(d))
        for name in sorted(files):
            path = Path(directory, name)
            if ignored_name(name) or not name.endswith(".md"):
                continue
            st = os.lstat(path)
            if not stat.S_ISREG(st.st_mode):
                continue  # symlinks, sockets, devices
            if st.st_size > max_file_bytes:
                raise BadRequest(f"{path} is over the {max_file_bytes}-byte file limit")
            relative = path.relative_to(root).as_posix()
            found.append(Incoming(relative, _target(relative, label), path.read_bytes()))
    return found


def _from_archive(source: Path, label: str, max_file_bytes: int) -> list[Incoming]:
    members: dict[str, bytes] = {}
    try:
        with tarfile.open(source, "r:*") as tar:
            for count, member in enumerate(tar, 1):
                if count > MAX_MEMBERS:
                    raise BadRequest(f"{source} has more than {MAX_MEMBERS} members")
                if member.isdir():
                    continue
                _check_member(member, max_file_bytes)
                extracted = tar.extractfile(member)
                assert extracted is not None  # a regular file, checked above
                members[member.name] = extracted.read()
    except (tarfile.TarError, EOFError, OSError) as exc:
        raise BadRequest(f"{source} is not a readable archive: {exc}") from exc
    manifest = members.pop(MANIFEST, None)
    if manifest is None:
        return [
            Incoming(name, _target(name, label), data)
            for name, data in sorted(members.items())
            if name.endswith(".md")
        ]
    return _verified(source, _manifest(source, manifest), members, label)


def _check_member(member: tarfile.TarInfo, max_file_bytes: int) -> None:
    name = member.name
    if not member.isreg():
        raise BadRequest(f"archive member {name!r} is not a regular file; refusing the archive")
    pure = PurePosixPath(name)
    if "\x00" in name or pure.is_absolute() or ".." in pure.parts:
        raise BadRequest(f"archive member {name!r} points outside; refusing the archive")
    if member.size > max_file_bytes:
        raise BadRequest(f"archive member {name!r} is over the {max_file_bytes}-byte file limit")


def _manifest(source: Path, raw: bytes) -> Manifest:
    try:
        manifest = msgspec.json.decode(raw, type=Manifest)
    except (msgspec.DecodeError, UnicodeDecodeError) as exc:  # msgspec's error for non-UTF-8
        raise BadRequest(f"{source}: damaged manifest: {exc}") from exc
    if manifest.format != FORMAT or manifest.version > FORMAT_VERSION:
        raise BadRequest(
            f"{source}: {manifest.format} version {manifest.version} is not an export "
            f"this version reads (up to {FORMAT} {FORMAT_VERSION})"
        )
    return manifest


def _verified(
    source: Path, manifest: Manifest, members: dict[str, bytes], label: str
) -> list[Incoming]:
    found: list[Incoming] = []
    for entry in manifest.files:
        data = members.pop(entry.name, None)
        if data is None:
            raise BadRequest(f"{source}: {entry.name} is in the manifest but not the archive")
        if hashlib.sha256(data).hexdigest() != entry.sha256:
            raise BadRequest(f"{source}: {entry.name} does not match its checksum")
        if entry.name.startswith(WORKSPACE_PREFIX):
            relative = entry.name.removeprefix(WORKSPACE_PREFIX)
            target = _target(relative, label)
        elif entry.name.startswith(EXTRA_PREFIX):
            relative = entry.name.removeprefix(EXTRA_PREFIX)
            target = "/".join((MEMORY_DIR, IMPORTED_DIR, "extra", relative))
        else:
            raise BadRequest(f"{source}: unexpected member {entry.name!r} in the manifest")
        found.append(Incoming(entry.name, target, data))
    if members:
        raise BadRequest(f"{source}: members not in the manifest: {', '.join(sorted(members))}")
    return found
