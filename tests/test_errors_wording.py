"""A request that does not fit its method's parameters is refused in words a
person reads, naming the field, with msgspec's own wording kept beside it;
an empty field is said as a blank one is, alone ("query is empty")."""

from __future__ import annotations

import pytest

from omem_protocol import empty_field
from openmemoryd.errors import invalid_request


@pytest.mark.parametrize(
    ("detail", "said"),
    [
        ("Expected `str` of length >= 1 - at `$.query`", "query is empty"),
        ("Expected `str | null` of length >= 1 - at `$.text`", "text is empty"),
        ("Expected `array` of length >= 1 - at `$.turns`", "turns is empty"),
        ("Expected `str` of length >= 1 - at `$.turns[0].text`", "turns[0].text is empty"),
    ],
)
def test_an_empty_field_is_said_as_a_blank_one_without_msgspec_words(
    detail: str, said: str
) -> None:
    assert invalid_request(detail) == said
    assert empty_field(detail) == said


@pytest.mark.parametrize(
    "detail",
    [
        "Expected `str` of length >= 2 - at `$.query`",
        "Expected `str` of length <= 8192 - at `$.query`",
        "Expected `int` >= 1 - at `$.limit`",
    ],
)
def test_only_an_empty_field_is_said_so(detail: str) -> None:
    assert empty_field(detail) is None


@pytest.mark.parametrize(
    ("detail", "said"),
    [
        (
            "Expected `str` of length >= 2 - at `$.query`",
            "`query` must be at least 2 characters long",
        ),
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
