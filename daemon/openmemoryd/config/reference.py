"""The config reference, generated from the schema so it cannot drift.

Every key's meaning and limits live once, on the field (`sections.doc`); this
module walks `FileConfig` and renders them as the reference tables of docs/configuration.md
(between two marker comments) or as a JSON Schema for editors that validate
TOML (Taplo, Even Better TOML).

    python -m openmemoryd.config.reference              # print the Markdown
    python -m openmemoryd.config.reference --write docs/configuration.md
    python -m openmemoryd.config.reference --schema     # JSON Schema
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import msgspec
import msgspec.inspect as mi

from openmemoryd.config.model import FileConfig

BEGIN: Final = (
    "<!-- config-reference:begin"
    " (generated: python -m openmemoryd.config.reference --write docs/configuration.md) -->"
)
END: Final = "<!-- config-reference:end -->"


@dataclass(frozen=True, slots=True)
class Key:
    section: tuple[str, ...]  # the tables it may appear in; () for top-level keys
    name: str
    default: str
    allowed: str
    meaning: str


def keys() -> Iterator[Key]:
    """Every leaf key of the config file, in file order."""
    info = mi.type_info(FileConfig)
    assert isinstance(info, mi.StructType)
    yield from _walk(info, ())


def _walk(struct: mi.StructType, sections: tuple[str, ...]) -> Iterator[Key]:
    # Tables of one shape (the remote providers) are described once.
    nested: dict[type, tuple[mi.StructType, list[str]]] = {}
    for field in struct.fields:
        kind = field.type
        if isinstance(kind, mi.DictType) and isinstance(kind.value_type, mi.StructType):
            # a table of named tables: ``[workspaces.<name>]``
            kind = kind.value_type
            names = nested.setdefault(kind.cls, (kind, []))[1]
            names += [f"{field.encode_name}.<name>"]
            continue
        if isinstance(kind, mi.StructType):
            names = nested.setdefault(kind.cls, (kind, []))[1]
            names += [".".join(filter(None, (s, field.encode_name))) for s in sections or ("",)]
            continue
        meaning, kind = _unwrap(kind)
        if not meaning:
            raise ValueError(f"config key {sections} {field.encode_name} has no description")
        if field.required:
            default = "(required)"
        elif field.default_factory is msgspec.NODEFAULT:
            default = _toml(field.default)
        else:
            default = _toml(field.default_factory())
        yield Key(sections, field.encode_name, default, _allowed(kind), meaning)
    for child, names in nested.values():
        yield from _walk(child, tuple(names))


def _unwrap(kind: mi.Type) -> tuple[str, mi.Type]:
    if isinstance(kind, mi.Metadata):
        schema = kind.extra_json_schema or {}
        return str(schema.get("description", "")), kind.type
    return "", kind


def _allowed(kind: mi.Type) -> str:
    match kind:
        case mi.IntType() | mi.FloatType():
            return _range(kind)
        case mi.LiteralType():
            return " \\| ".join(f"`{v}`" for v in kind.values)
        case mi.StrType():
            return "string"
        case mi.BoolType():
            return "`true` \\| `false`"
        case mi.UnionType():
            return " or ".join(_allowed(t) for t in kind.types if not isinstance(t, mi.NoneType))
        case mi.VarTupleType() | mi.ListType():
            return "list of strings"
        case mi.DictType():
            return "table of strings"
    return type(kind).__name__


def _range(kind: mi.IntType | mi.FloatType) -> str:
    name = "integer" if isinstance(kind, mi.IntType) else "number"
    low = (
        f"≥ {_num(kind.ge)}"
        if kind.ge is not None
        else f"> {_num(kind.gt)}"
        if kind.gt is not None
        else ""
    )
    high = (
        f"≤ {_num(kind.le)}"
        if kind.le is not None
        else f"< {_num(kind.lt)}"
        if kind.lt is not None
        else ""
    )
    return ", ".join(filter(None, (name, low, high)))


def _num(value: float) -> str:
    return f"{value:,}".replace(",", "_") if isinstance(value, int) else f"{value:g}"


def _toml(value: Any) -> str:
    """The default as it would be written in the file (unset: not written)."""
    if value is None:
        return "(unset)"
    return "`" + _toml_value(value).replace("|", "\\|") + "`"


def _toml_value(value: Any) -> str:
    match value:
        case bool():
            return "true" if value else "false"
        case int():
            return _num(value)
        case float():
            return repr(value)
        case str():
            return msgspec.json.encode(value).decode()  # a JSON string is a TOML basic string
        case tuple() | list():
            return "[" + ", ".join(_toml_value(v) for v in value) + "]"
        case dict():
            return "{" + ", ".join(f"{k} = {_toml_value(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"no TOML form for {value!r}")


def render_markdown() -> str:
    """The reference tables, one per section."""
    out: list[str] = []
    current: tuple[str, ...] | None = None
    for key in keys():
        if key.section != current:
            current = key.section
            title = ", ".join(f"`[{name}]`" for name in key.section) or "Top level"
            out += [
                "",
                f"**{title}**",
                "",
                "| key | default | allowed | meaning |",
                "|---|---|---|---|",
            ]
        out.append(f"| `{key.name}` | {key.default} | {key.allowed} | {key.meaning} |")
    return "\n".join(out).strip() + "\n"


def json_schema() -> dict[str, Any]:
    schema: dict[str, Any] = msgspec.json.schema(FileConfig)
    schema["title"] = "openmemory config.toml"
    return schema


def splice(document: str, reference: str) -> str:
    """*document* with the text between the markers replaced by *reference*."""
    try:
        head, rest = document.split(BEGIN, 1)
        _, tail = rest.split(END, 1)
    except ValueError:
        raise ValueError(f"the markers {BEGIN!r} and {END!r} were not found") from None
    return f"{head}{BEGIN}\n\n{reference}\n{END}{tail}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m openmemoryd.config.reference")
    parser.add_argument("--write", type=Path, help="update the reference in this Markdown file")
    parser.add_argument("--schema", action="store_true", help="print a JSON Schema instead")
    args = parser.parse_args(argv)
    if args.schema:
        sys.stdout.write(msgspec.json.format(msgspec.json.encode(json_schema())).decode() + "\n")
        return 0
    reference = render_markdown()
    if args.write is None:
        sys.stdout.write(reference)
        return 0
    document = args.write.read_text("utf-8")
    updated = splice(document, reference)
    if updated != document:
        args.write.write_text(updated, "utf-8")
        print(f"updated the config reference in {args.write}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
