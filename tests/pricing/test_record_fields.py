"""The generic half of ``pricing.records``: how field types are written and read back, and
how bad input is reported (the record's own error, naming the record and the field)."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from pricing.errors import PricingError
from pricing.records import Record, to_plain


class Colour(enum.StrEnum):
    """A colour (an enum field)."""

    RED = "red"
    BLUE = "blue"


class SampleError(Exception):
    """The error the sample records raise."""


@dataclass(frozen=True)
class Inner(Record):
    """A nested record."""

    _error = SampleError

    name: str
    weight: float = 1.0


@dataclass(frozen=True)
class Outer(Record):
    """A record with one field of each kind the convention reads."""

    _error = SampleError

    count: int
    colour: Colour
    at: datetime
    path: Path
    inner: Inner
    inners: tuple[Inner, ...] = ()
    pair: tuple[int, str] = (0, "")
    names: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    maybe: float | None = None
    either: int | str = 0
    anything: Any = None


SAMPLE = Outer(3, Colour.BLUE, datetime(2024, 1, 2, 3, 4, 5, 6, tzinfo=UTC), Path("/a/b"),
               Inner("x", 2.5), (Inner("y"), Inner("z", 0.5)), (7, "seven"), ["n"], {"a": 1},
               1.5, "text", {"k": [1, "two", None]})


def test_every_field_type_writes_plain_values() -> None:
    assert SAMPLE.to_dict() == {
        "count": 3, "colour": "blue", "at": "2024-01-02T03:04:05.000006+00:00", "path": "/a/b",
        "inner": {"name": "x", "weight": 2.5},
        "inners": [{"name": "y", "weight": 1.0}, {"name": "z", "weight": 0.5}],
        "pair": [7, "seven"], "names": ["n"], "counts": {"a": 1}, "maybe": 1.5,
        "either": "text", "anything": {"k": [1, "two", None]},
    }


def test_every_field_type_reads_back() -> None:
    assert Outer.from_dict(SAMPLE.to_dict()) == SAMPLE
    assert Outer.from_json(SAMPLE.to_json()) == SAMPLE


def test_to_json_sorts_keys() -> None:
    assert Inner("x").to_json() == '{"name": "x", "weight": 1.0}'
    assert to_plain((Colour.RED, {1: Path("p")})) == ["red", {"1": "p"}]


def test_a_missing_key_with_a_default_takes_the_default() -> None:
    assert Inner.from_dict({"name": "x"}) == Inner("x")


def test_an_int_is_read_as_a_float_where_one_is_declared() -> None:
    inner = Inner.from_dict({"name": "x", "weight": 2})
    assert inner.weight == 2.0 and isinstance(inner.weight, float)


def test_the_record_name_defaults_to_the_class_name_in_words() -> None:
    assert Outer.record_name() == "outer"
    assert Record.record_name() == "record"


BASE = SAMPLE.to_dict()


@pytest.mark.parametrize(("data", "message"), [
    ([1, 2], "expected a JSON object, got list"),                   # not an object
    ({**BASE, "colour": "green"}, "colour 'green' is not one of red, blue"),  # unknown member
    ({**BASE, "extra": 1}, r"unknown keys \['extra'\]"),          # a key no field has
    ({k: v for k, v in BASE.items() if k != "count"}, "missing key 'count'"),  # required
    ({**BASE, "count": "3"}, "count: expected int, got '3'"),     # text for a number
    ({**BASE, "count": True}, "count: expected int, got True"),   # a bool is not an int
    ({**BASE, "count": 2.5}, "count: expected int, got 2.5"),     # nor a fraction
    ({**BASE, "at": "yesterday"}, "at: Invalid isoformat"),       # not ISO 8601
    ({**BASE, "inner": {"name": 5}}, "inner.name: expected str, got 5"),  # nested field
    ({**BASE, "inners": [{"name": "y", "colour": 1}]}, r"inners\[0\]: unknown keys"),
    ({**BASE, "pair": [1]}, "pair: expected 2 items, got 1"),     # fixed-length tuple
    ({**BASE, "maybe": "x"}, "maybe: expected float, got 'x'"),   # optional, wrong type
    ({**BASE, "counts": {"a": "1"}}, r"counts.a: expected int, got '1'"),
])
def test_bad_input_raises_the_records_error_naming_the_field(data: Any, message: str) -> None:
    with pytest.raises(SampleError, match=f"^outer: bad JSON \\(.*{message}"):
        Outer.from_dict(data)


def test_text_that_is_not_json_says_so() -> None:
    with pytest.raises(SampleError, match="^inner: not JSON"):
        Inner.from_json("{nope")


def test_a_record_without_its_own_error_raises_pricing_error() -> None:
    @dataclass(frozen=True)
    class Plain(Record):
        value: int

    with pytest.raises(PricingError, match="^plain: bad JSON"):
        Plain.from_dict({"value": "x"})
