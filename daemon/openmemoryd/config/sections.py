"""What every config section shares: strict decoding and documented fields."""

from __future__ import annotations

from typing import Any

import msgspec

__all__ = ["Section", "doc"]


class Section(msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True):
    """A config section: decoded strictly, so a typo'd key is an error with
    its location rather than silently ignored."""


def doc(description: str, **limits: Any) -> msgspec.Meta:
    """A field's meaning and limits: the config reference (docs/configuration.md) and
    `openmemoryd config-schema` are generated from these."""
    return msgspec.Meta(description=description, **limits)
