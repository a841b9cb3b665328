"""Reading a memory file's bytes as text, whatever it was saved in.

Notes are UTF-8, but people who write Chinese or Russian drop in files
saved as GBK (gb18030) or cp1251 by an older editor. Read as UTF-8 with
replacement, such a file became U+FFFD and stray letters: nothing in it
could be found by its words, and its mojibake embeds near the middle of a
model's space, so it answered every query that meant nothing ("🚀", "???").

So a file that is not UTF-8 is read in the one legacy encoding its bytes
look like, by the same detection the client's conversion hints use
(`omem_client._encodings.guess_encoding`: it names an encoding only when
exactly one plausible one reads like its language), and only if the whole
file then decodes strictly. Otherwise it is read as before, invalid bytes
replaced, and `blank_unreadable` blanks the lines that are mostly
replacement characters (no memory in them: the indexer leaves them out,
and its note names them). The file itself is never changed. Line ends are
the same bytes in every encoding tried here (no lead or trail byte of GBK, Big5,
Shift_JIS or EUC-KR is ``\\n``), so line numbers of the decoded text are
the file's line numbers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from omem_client._encodings import guess_encoding

__all__ = [
    "LEGACY_LOSSY_NOTE",
    "LOSSY_NOTE",
    "SAMPLE_BYTES",
    "NoteText",
    "blank_unreadable",
    "decode_note",
    "describe_spans",
    "editable_text",
    "encode_edited",
    "encoding_of_note",
    "is_utf8",
    "legacy_encoding",
    "read_as_note",
    "readable_text",
    "unreadable",
]

# Enough text to tell an encoding by; the whole file must then decode.
SAMPLE_BYTES: Final = 64 * 1024
REPLACEMENT: Final = "\ufffd"
# The note of a file whose invalid UTF-8 was replaced (`status` shows it).
LOSSY_NOTE: Final = "not UTF-8, nor clearly one other encoding: invalid bytes replaced with U+FFFD"
# The note such a file had before other encodings were tried: its index
# entry (mojibake, perhaps) is stale.
LEGACY_LOSSY_NOTE: Final = "invalid UTF-8 replaced with U+FFFD"
_READ_AS: Final = "not UTF-8: read as "
# Text with at least this share of U+FFFD among its letters, digits and
# U+FFFD is undecodable bytes, not words (GBK read as UTF-8: ~60%; a Latin-1
# note with a stray accent: a few %).
_UNREADABLE_SHARE: Final = 0.5


@dataclass(frozen=True, slots=True)
class NoteText:
    """A file's text (without a byte-order mark) and how it was read:
    *encoding* is the legacy encoding it was decoded from (None for UTF-8),
    *lossy* that invalid UTF-8 was replaced with U+FFFD."""

    text: str
    encoding: str | None = None
    lossy: bool = False

    @property
    def note(self) -> str | None:
        """What `status` says of the file: None for UTF-8."""
        if self.encoding is not None:
            return read_as_note(self.encoding)
        return LOSSY_NOTE if self.lossy else None


def read_as_note(encoding: str) -> str:
    """The note of a file read as *encoding*."""
    return f"{_READ_AS}{encoding}"


def encoding_of_note(note: str) -> str | None:
    """The encoding a file's *note* says it was read as, if any."""
    return note.removeprefix(_READ_AS).split(";")[0].strip() if note.startswith(_READ_AS) else None


def decode_note(data: bytes) -> NoteText:
    """*data* as text: UTF-8, else the one legacy encoding it clearly is,
    else UTF-8 with invalid bytes replaced."""
    try:
        return NoteText(data.decode("utf-8").removeprefix("\ufeff"))
    except UnicodeDecodeError:
        pass
    encoding = legacy_encoding(data)
    if encoding is not None:
        return NoteText(data.decode(encoding).removeprefix("\ufeff"), encoding)
    return NoteText(data.decode("utf-8", errors="replace").removeprefix("\ufeff"), lossy=True)


def readable_text(data: bytes) -> str:
    """*data* as every surface that shows a note to someone (`primer`, a
    section answer) shows it: decoded as the indexer decodes it, and, when
    no encoding reads it, with its `unreadable` lines blanked as the indexer
    leaves them out. What is shown is then what search finds and cites, on
    the same line numbers."""
    decoded = decode_note(data)
    return blank_unreadable(decoded.text)[0] if decoded.lossy else decoded.text


def is_utf8(data: bytes) -> bool:
    """Whether *data* is valid UTF-8 (a file the daemon may write UTF-8 into)."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def editable_text(data: bytes) -> tuple[str, str | None]:
    """*data* as text to edit line by line, and the encoding to write the
    edited text back in (None: UTF-8, bytes that are not kept as surrogate
    escapes).

    A file in one clear legacy encoding (`legacy_encoding`) is edited as its
    text, so `forget` finds a Russian line of a cp1251 note by what search
    showed, and written back in that encoding, so removing whole lines
    leaves every other byte as it was. Where the encoding does not read the
    file back byte for byte, the bytes pass through as escapes instead.
    """
    if is_utf8(data):
        return data.decode("utf-8"), None
    encoding = legacy_encoding(data)
    if encoding is not None:
        text = data.decode(encoding)
        if text.encode(encoding) == data:
            return text, encoding
    return data.decode("utf-8", errors="surrogateescape"), None


def encode_edited(text: str, encoding: str | None) -> bytes:
    """*text* edited from `editable_text`, as the bytes to write back."""
    if encoding is not None:
        return text.encode(encoding)
    return text.encode("utf-8", errors="surrogateescape")


def legacy_encoding(data: bytes) -> str | None:
    """The encoding *data* (not UTF-8) decodes from as text of one language,
    judged by its first `SAMPLE_BYTES` (judging a whole large file takes
    seconds), then held to a strict decode of all of it; None when unclear."""
    sample = data[:SAMPLE_BYTES]
    encoding = guess_encoding(sample, cut=len(data) > len(sample))
    if encoding is None:
        return None
    try:
        text = data.decode(encoding)
    except (UnicodeDecodeError, LookupError):
        return None
    return None if "\x00" in text or REPLACEMENT in text else encoding


def unreadable(text: str) -> bool:
    """Whether *text* is mostly replacement characters: bytes that were not
    text in any encoding found, with no memory in them."""
    replaced = text.count(REPLACEMENT)
    if not replaced:
        return False
    readable = sum(c.isalnum() for c in text)
    return replaced >= _UNREADABLE_SHARE * (replaced + readable)


def blank_unreadable(text: str) -> tuple[str, list[tuple[int, int]]]:
    """*text* with its `unreadable` lines made empty (so every other line
    keeps its number), and the 1-based line ranges blanked (two blanked
    lines with only empty ones between them make one range)."""
    lines = text.split("\n")
    spans: list[list[int]] = []
    for number, line in enumerate(lines, start=1):
        if not unreadable(line):
            continue
        lines[number - 1] = ""
        last = spans[-1][1] if spans else 0
        if spans and all(not lines[i].strip() for i in range(last, number - 1)):
            spans[-1][1] = number
        else:
            spans.append([number, number])
    if not spans:
        return text, []
    return "\n".join(lines), [(a, b) for a, b in spans]


def describe_spans(spans: list[tuple[int, int]]) -> str:
    """``1-3, 7`` for the line ranges *spans*."""
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in spans)
