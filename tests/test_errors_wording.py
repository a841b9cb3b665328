"""A request that does not fit its method's parameters is refused in words a
person reads, naming the field, with msgspec's own wording kept beside it."""

from __future__ import annotations

import pytest

from openmemoryd.errors import invalid_request


@pytest.mark.parametrize(
    ("detail", "said"),
    [
        ("Expected `str` of length >= 1 - at `$.query`", "`query` must not be empty"),
        ("Expected `array` of length >= 1 - at `$.tasks`", "`tasks` must not be empty"),
        (
            "Expected `str` of length <= 8192 - at `$.query`",
            "`query` must be at most 8192 characters long",
        ),
        (
            "Expected `array` of length <= 20 - at `$.tasks`",
            "`tasks` must be at most 20 items long",
        ),
        ("Expected `int` >= 1 - at `$.limit`", "`limit` must be at least 1"),
        ("Expected `float` <= 1.0 - at `$.min_score`", "`min_score` must be at most 1.0"),
        ("Expected `int | null`, got `str` - at `$.limit`", "`limit` must be int, not str"),
        ("Object missing required field `query`", "`query` is required"),
    ],
)
def test_common_forms_are_said_plainly(detail: str, said: str) -> None:
    message = invalid_request(detail)
    assert message.startswith(f"invalid request: {said}")
    assert message.endswith(f"({detail})")  # msgspec's words kept


@pytest.mark.parametrize(
    "detail",
    ["Invalid enum value 'x' - at `$.action`", "JSON is malformed: trailing characters (byte 5)"],
)
def test_any_other_is_kept_whole(detail: str) -> None:
    assert invalid_request(detail) == f"invalid request: {detail}"
