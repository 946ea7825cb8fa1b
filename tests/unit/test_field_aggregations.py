"""Flink's built-in window aggregations (sum, min, max, min_by, max_by) as reduce functions."""

from __future__ import annotations

import dataclasses
from collections import namedtuple
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from windowing.assigners import TumblingEventTimeWindows
from windowing.functions import AggregationType, FieldAggregation
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


def test_floats_follow_javas_double_order() -> None:
    """NaN above every number, -0.0 below 0.0 (Flink's ComparableAggregator compares with
    Double.compareTo), whatever the order of the elements."""
    nan = float("nan")
    for values in ([nan, 1.0, 2.0], [1.0, nan, 2.0], [2.0, 1.0, nan]):
        records = [{"v": v} for v in values]
        lowest = records[0]
        highest = records[0]
        for r in records[1:]:
            lowest = FieldAggregation(MIN, "v").reduce(lowest, r)
            highest = FieldAggregation(MAX, "v").reduce(highest, r)
        assert lowest["v"] == 1.0
        assert highest["v"] != highest["v"]  # NaN
    smaller = FieldAggregation(MIN, "v").reduce({"v": 0.0}, {"v": -0.0})
    assert str(smaller["v"]) == "-0.0"
    assert FieldAggregation(MAX_BY, "v").reduce({"v": -0.0}, {"v": 0.0}) == {"v": 0.0}


def test_min_and_max_ties_take_the_later_value_as_flink() -> None:
    from decimal import Decimal

    got = FieldAggregation(MIN, "v").reduce({"v": Decimal("1.0"), "k": 1}, {"v": Decimal("1.00")})
    assert str(got["v"]) == "1.00" and got["k"] == 1


def test_fields_named_like_tuple_methods() -> None:
    Counted = namedtuple("Counted", "index count")
    got = FieldAggregation(SUM, "count").reduce(Counted(1, 2), Counted(5, 7))
    assert got == Counted(1, 9)
    assert FieldAggregation(MAX_BY, "index").reduce(Counted(1, 2), Counted(5, 7)) == (5, 7)


def test_record_types_are_kept() -> None:
    import collections

    import numpy as np

    ordered = FieldAggregation(SUM, "v").reduce(
        collections.OrderedDict(a=1, v=2), collections.OrderedDict(a=9, v=5)
    )
    assert type(ordered) is collections.OrderedDict and ordered == {"a": 1, "v": 7}
    default = FieldAggregation(SUM, "v").reduce(
        collections.defaultdict(list, v=1), collections.defaultdict(list, v=2)
    )
    assert isinstance(default, collections.defaultdict) and default.default_factory is list
    array = FieldAggregation(SUM, 1).reduce(np.array([1, 2]), np.array([3, 4]))
    assert array.tolist() == [1, 6]

    @dataclasses.dataclass
    class Derived:
        qty: int
        price: int
        total: int = 0

        def __post_init__(self) -> None:
            self.total = self.qty * self.price

    summed = FieldAggregation(SUM, "total").reduce(Derived(1, 2), Derived(1, 3))
    assert summed.total == 5  # __post_init__ does not run again

    @dataclasses.dataclass(frozen=True)
    class Hidden:
        k: str
        v: int = dataclasses.field(init=False, default=0)

    first = Hidden("a")
    object.__setattr__(first, "v", 2)
    second = Hidden("b")
    object.__setattr__(second, "v", 5)
    got = FieldAggregation(SUM, "v").reduce(first, second)
    assert (got.k, got.v, first.v) == ("a", 7, 2)


def test_a_stream_of_plain_values() -> None:
    assert FieldAggregation(SUM, 0).reduce(2, 5) == 7
    assert FieldAggregation(MAX, "*").reduce(2.5, 1.0) == 2.5
    assert FieldAggregation(MIN_BY, 0).reduce(3, 1) == 1


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


def test_pickles_after_use_with_a_local_record_class() -> None:
    import pickle

    Local = namedtuple("Local", "k v")  # not importable: pickle cannot write the class
    fn = FieldAggregation(SUM, "v")
    assert fn.reduce(Local("a", 1), Local("b", 2)) == Local("a", 3)
    restored = pickle.loads(pickle.dumps(fn))
    assert restored == fn
    assert restored.reduce(Local("a", 1), Local("b", 2)) == Local("a", 3)
