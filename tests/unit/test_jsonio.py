"""``lunora_jobs.jsonio``: orjson on the hot path, with the standard library's results."""

from __future__ import annotations

import dataclasses
import datetime
import enum
import json
import math
import uuid
from collections import OrderedDict
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lunora_jobs import jsonio

SCALARS = (st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
           | st.text())
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(), inner, max_size=5),
    max_leaves=30,
)


@given(VALUES)
def test_what_it_writes_reads_back_as_json_would(value: Any) -> None:
    text = jsonio.dumps(value)
    assert json.loads(text) == json.loads(json.dumps(value))
    assert jsonio.loads(text) == json.loads(text)


@given(VALUES)
def test_it_reads_what_json_writes_as_json_does(value: Any) -> None:
    text = json.dumps(value)
    assert jsonio.loads(text) == json.loads(text)
    assert jsonio.loads(text.encode()) == json.loads(text)  # psycopg hands it bytes


def test_compact_and_non_ascii_kept_as_the_store_wrote_it() -> None:
    value = {"a": [1, 2.5, None, True], "é": "ü"}
    assert jsonio.dumps(value) == json.dumps(value, separators=(",", ":"), ensure_ascii=False)


@pytest.mark.parametrize("text", [
    "NaN", "[Infinity, -Infinity]", str(2**70), str(2**64), str(-(2**63) - 1), "[1e19, -9223372036854775808]",
    '{"n": 1e400}',
    '"\\ud800"', '"\ud800"', '{"a": 1, "a": 2}', '{"id": "12345678901234567890123"}',
])
def test_documents_only_json_reads_are_read_by_json(text: str) -> None:
    got, want = jsonio.loads(text), json.loads(text)
    assert repr(got) == repr(want)  # NaN != NaN: compare what was read


def test_invalid_json_raises_jsons_error() -> None:
    with pytest.raises(json.JSONDecodeError):
        jsonio.loads("{nope")


class Kind(enum.StrEnum):
    A = "a"


@dataclasses.dataclass
class Point:
    x: int


def test_values_orjson_would_write_differently_go_to_json() -> None:
    for value in ({1: "int key", None: "none key"}, 2**70, Kind.A, OrderedDict(b=1, a=2), [Kind.A]):
        assert jsonio.dumps(value) == json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    for value in (Point(1), datetime.date(2026, 1, 2)):
        with pytest.raises(TypeError):
            jsonio.dumps(value)
        assert jsonio.dumps(value, default=str) == json.dumps(str(value))


def test_what_differs_from_json_on_purpose() -> None:
    assert jsonio.dumps([math.nan, math.inf]) == "[null,null]"  # json writes NaN, which is not JSON
    key = uuid.UUID(int=7)
    assert jsonio.dumps(key) == json.dumps(str(key))
