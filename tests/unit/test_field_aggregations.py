"""Flink's built-in window aggregations (sum, min, max, min_by, max_by) as reduce functions."""

from __future__ import annotations

import dataclasses
from collections import namedtuple
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assigners import TumblingEventTimeWindows
from functions import AggregationType, FieldAggregation
from windowing.testing import WindowOperatorHarness
from windowing.time import MAX_TIMESTAMP

SUM, MIN, MAX = AggregationType.SUM, AggregationType.MIN, AggregationType.MAX
MIN_BY, MAX_BY = AggregationType.MIN_BY, AggregationType.MAX_BY

Sale = namedtuple("Sale", "shop amount")


@dataclasses.dataclass(frozen=True)
class Reading:
    sensor: str
    value: float | None


class Plain:
    def __init__(self, name: str, n: int) -> None:
        self.name, self.n = name, n


def test_sum_keeps_the_first_records_other_fields() -> None:
    total = FieldAggregation(SUM, "amount")
    assert total.reduce(Sale("a", 2), Sale("b", 5)) == Sale("a", 7)


def test_min_and_max_replace_only_the_field() -> None:
    a, b = Sale("a", 4), Sale("b", 1)
    assert FieldAggregation(MIN, "amount").reduce(a, b) == Sale("a", 1)
    assert FieldAggregation(MAX, "amount").reduce(a, b) == Sale("a", 4)
    assert FieldAggregation(MAX, "amount").reduce(a, b) is a  # unchanged: value1 itself


def test_min_by_and_max_by_pick_whole_records() -> None:
    a, b = Sale("a", 4), Sale("b", 1)
    assert FieldAggregation(MIN_BY, "amount").reduce(a, b) is b
    assert FieldAggregation(MAX_BY, "amount").reduce(a, b) is a


@pytest.mark.parametrize("kind", [MIN_BY, MAX_BY])
def test_ties_keep_the_first_or_the_last(kind: AggregationType) -> None:
    a, b = Sale("a", 3), Sale("b", 3)
    assert FieldAggregation(kind, "amount").reduce(a, b) is a
    assert FieldAggregation(kind, "amount", first=False).reduce(a, b) is b


def test_nulls_are_skipped() -> None:
    none, two = Sale("n", None), Sale("t", 2)
    assert FieldAggregation(SUM, "amount").reduce(none, two) == Sale("n", 2)
    assert FieldAggregation(SUM, "amount").reduce(two, none) is two
    assert FieldAggregation(SUM, "amount").reduce(none, none) == Sale("n", None)
    assert FieldAggregation(MIN, "amount").reduce(none, two) == Sale("n", 2)
    assert FieldAggregation(MAX, "amount").reduce(two, none) is two
    assert FieldAggregation(MIN_BY, "amount").reduce(none, two) is two
    assert FieldAggregation(MAX_BY, "amount").reduce(two, none) is two
    assert FieldAggregation(MAX_BY, "amount", first=False).reduce(none, none) is none


def test_record_shapes() -> None:
    assert FieldAggregation(SUM, "n").reduce({"n": 1, "k": "a"}, {"n": 2, "k": "b"}) == {
        "n": 3,
        "k": "a",
    }
    assert FieldAggregation(SUM, 1).reduce(("a", 1), ("b", 2)) == ("a", 3)
    assert FieldAggregation(SUM, 0).reduce([1, "a"], [2, "b"]) == [3, "a"]
    got = FieldAggregation(MAX, "value").reduce(Reading("s", 1.5), Reading("t", 2.5))
    assert got == Reading("s", 2.5)
    first = Plain("x", 1)
    summed = FieldAggregation(SUM, "n").reduce(first, Plain("y", 5))
    assert (summed.name, summed.n, first.n) == ("x", 6, 1)  # a copy: the first is unchanged


def test_arguments_are_not_modified() -> None:
    a, b = {"n": 1}, {"n": 2}
    FieldAggregation(SUM, "n").reduce(a, b)
    assert a == {"n": 1} and b == {"n": 2}


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"aggregation": "sum", "field": "n"}, "aggregation must be an AggregationType"),
        ({"aggregation": SUM, "field": ""}, "non-empty field name"),
        ({"aggregation": SUM, "field": -1}, "position must be >= 0, got -1"),
        ({"aggregation": SUM, "field": 1.5}, "field must be a field name or position"),
        ({"aggregation": SUM, "field": True}, "field must be a field name or position"),
        ({"aggregation": MIN_BY, "field": "n", "first": 1}, "first must be a bool"),
    ],
)
def test_bad_parameters(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        FieldAggregation(**kwargs)


def test_missing_field_names_the_field_and_the_record() -> None:
    with pytest.raises(ValueError, match=r"sum: the element \{'m': 1\} has no field 'n'"):
        FieldAggregation(SUM, "n").reduce({"m": 1}, {"m": 2})


# ------------------------------------------------------------------ in the window operator
def oracle(kind: AggregationType, first: bool, records: list[tuple[str, int | None]]) -> Any:
    """The aggregation of one window's records, in the order they were added."""
    values = [v for _, v in records if v is not None]
    if kind is SUM:
        return (records[0][0], sum(values) if values else None)
    if kind in (MIN, MAX):
        pick = min if kind is MIN else max
        return (records[0][0], pick(values) if values else None)
    best = None
    for record in records:
        v = record[1]
        if v is None:
            continue
        if best is None:
            best = record
            continue
        better = v < best[1] if kind is MIN_BY else v > best[1]
        if better or (not first and v == best[1]):
            best = record
    return best if best is not None else records[0]


@settings(max_examples=150)
@given(
    kind=st.sampled_from(list(AggregationType)),
    first=st.booleans(),
    events=st.lists(
        st.tuples(st.integers(-30, 60), st.one_of(st.none(), st.integers(-5, 5))),
        min_size=1,
        max_size=40,
    ),
)
def test_tumbling_windows_match_the_oracle(
    kind: AggregationType, first: bool, events: list[tuple[int, int | None]]
) -> None:
    harness = WindowOperatorHarness(
        TumblingEventTimeWindows(10), FieldAggregation(kind, 1, first), slicing=False
    )
    for i, (ts, v) in enumerate(events):
        harness.process_element((f"r{i}", v), ts, "k")
    harness.process_watermark(MAX_TIMESTAMP)
    got = {r.window.start: r.value for r in harness.extract_output()}
    expected: dict[int, list[tuple[str, int | None]]] = {}
    for i, (ts, v) in enumerate(events):
        expected.setdefault(ts - ts % 10, []).append((f"r{i}", v))
    assert got == {start: oracle(kind, first, rs) for start, rs in expected.items()}
