"""Unit tests for windowing.windows: TimeWindow, GlobalWindow and TimestampedValue."""

from __future__ import annotations

import pickle

import pytest

from windowing import GLOBAL_WINDOW as EXPORTED_GLOBAL_WINDOW
from windowing.time import MAX_TIMESTAMP, MIN_TIMESTAMP
from windowing.windows import GLOBAL_WINDOW, GlobalWindow, TimestampedValue, TimeWindow

# --------------------------------------------------------------------------- TimeWindow basics


def test_time_window_fields() -> None:
    w = TimeWindow(3, 8)
    assert w.start == 3
    assert w.end == 8
    assert tuple(w) == (3, 8)


def test_time_window_keyword_construction() -> None:
    assert TimeWindow(start=-5, end=5) == TimeWindow(-5, 5)


@pytest.mark.parametrize(
    ("start", "end", "expected"),
    [
        (0, 10, 9),
        (0, 1, 0),
        (-10, 0, -1),
        (5_000, 10_000, 9_999),
        (0, MAX_TIMESTAMP + 1, MAX_TIMESTAMP),
        (MIN_TIMESTAMP, MIN_TIMESTAMP + 1, MIN_TIMESTAMP),
    ],
)
def test_time_window_max_timestamp_is_end_minus_one(start: int, end: int, expected: int) -> None:
    assert TimeWindow(start, end).max_timestamp() == expected


def test_time_window_repr() -> None:
    assert repr(TimeWindow(0, 10)) == "TimeWindow(start=0, end=10)"


def test_time_window_is_immutable() -> None:
    w = TimeWindow(0, 10)
    with pytest.raises(AttributeError):
        w.start = 5  # type: ignore[misc]


# --------------------------------------------------------------------------- contains


@pytest.mark.parametrize(
    ("timestamp", "expected"),
    [(-1, False), (0, True), (5, True), (9, True), (10, False), (11, False)],
)
def test_time_window_contains_is_half_open(timestamp: int, expected: bool) -> None:
    assert TimeWindow(0, 10).contains(timestamp) is expected


def test_time_window_contains_negative_range() -> None:
    w = TimeWindow(-10, 0)
    assert w.contains(-10)
    assert w.contains(-1)
    assert not w.contains(0)
    assert not w.contains(-11)


def test_time_window_contains_max_timestamp() -> None:
    w = TimeWindow(20, 30)
    assert w.contains(w.max_timestamp())
    assert not w.contains(w.end)


# --------------------------------------------------------------------------- intersects


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        (TimeWindow(0, 5), TimeWindow(5, 9), True),  # touching at the end
        (TimeWindow(5, 9), TimeWindow(0, 5), True),  # touching at the start
        (TimeWindow(0, 5), TimeWindow(6, 9), False),  # gap of one
        (TimeWindow(6, 9), TimeWindow(0, 5), False),
        (TimeWindow(0, 10), TimeWindow(3, 4), True),  # containment
        (TimeWindow(3, 4), TimeWindow(0, 10), True),
        (TimeWindow(0, 10), TimeWindow(5, 15), True),  # overlap
        (TimeWindow(0, 10), TimeWindow(0, 10), True),  # equal
        (TimeWindow(-10, -5), TimeWindow(-5, 0), True),
        (TimeWindow(-10, -6), TimeWindow(-5, 0), False),
    ],
)
def test_time_window_intersects(a: TimeWindow, b: TimeWindow, expected: bool) -> None:
    assert a.intersects(b) is expected
    assert b.intersects(a) is expected


# --------------------------------------------------------------------------- cover


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        (TimeWindow(0, 10), TimeWindow(5, 30), TimeWindow(0, 30)),
        (TimeWindow(0, 5), TimeWindow(5, 9), TimeWindow(0, 9)),
        (TimeWindow(0, 5), TimeWindow(20, 25), TimeWindow(0, 25)),  # disjoint: spans the gap
        (TimeWindow(0, 10), TimeWindow(3, 4), TimeWindow(0, 10)),
        (TimeWindow(-10, -5), TimeWindow(-3, 2), TimeWindow(-10, 2)),
        (TimeWindow(4, 4), TimeWindow(4, 4), TimeWindow(4, 4)),
    ],
)
def test_time_window_cover(a: TimeWindow, b: TimeWindow, expected: TimeWindow) -> None:
    assert a.cover(b) == expected
    assert b.cover(a) == expected
    assert type(a.cover(b)) is TimeWindow


# --------------------------------------------------------------------------- ordering, eq, hash


def test_time_window_ordering_by_start_then_end() -> None:
    windows = [TimeWindow(5, 10), TimeWindow(0, 20), TimeWindow(0, 10), TimeWindow(-5, 100)]
    assert sorted(windows) == [
        TimeWindow(-5, 100),
        TimeWindow(0, 10),
        TimeWindow(0, 20),
        TimeWindow(5, 10),
    ]
    assert TimeWindow(0, 10) < TimeWindow(0, 11)
    assert TimeWindow(0, 100) < TimeWindow(1, 2)
    assert max(windows) == TimeWindow(5, 10)


def test_time_window_equality_and_hash() -> None:
    a, b, c = TimeWindow(0, 10), TimeWindow(0, 10), TimeWindow(0, 11)
    assert a == b
    assert hash(a) == hash(b)
    assert a != c
    assert TimeWindow(1, 10) != a
    assert len({a, b, c}) == 2
    d = {a: "x"}
    assert d[TimeWindow(0, 10)] == "x"
    assert TimeWindow(0, 11) not in d


def test_time_window_pickle_round_trip() -> None:
    w = TimeWindow(-3, 7)
    back = pickle.loads(pickle.dumps(w))
    assert back == w
    assert type(back) is TimeWindow
    assert back.max_timestamp() == 6


# --------------------------------------------------------------------------- GlobalWindow


def test_global_window_instances_are_equal() -> None:
    assert GlobalWindow() == GlobalWindow()
    assert GlobalWindow() == GLOBAL_WINDOW
    assert hash(GlobalWindow()) == hash(GLOBAL_WINDOW)
    assert len({GlobalWindow(), GlobalWindow(), GLOBAL_WINDOW}) == 1


def test_global_window_max_timestamp_is_max() -> None:
    assert GLOBAL_WINDOW.max_timestamp() == MAX_TIMESTAMP
    assert GlobalWindow().max_timestamp() == 2**63 - 1


def test_global_window_repr() -> None:
    assert repr(GLOBAL_WINDOW) == "GlobalWindow()"


def test_global_window_is_not_a_time_window() -> None:
    assert TimeWindow(0, MAX_TIMESTAMP + 1) != GLOBAL_WINDOW
    assert not isinstance(GLOBAL_WINDOW, TimeWindow)


def test_global_window_exported_from_package() -> None:
    assert EXPORTED_GLOBAL_WINDOW is GLOBAL_WINDOW


def test_global_window_pickle_round_trip() -> None:
    back = pickle.loads(pickle.dumps(GLOBAL_WINDOW))
    assert back == GLOBAL_WINDOW
    assert type(back) is GlobalWindow
    assert back.max_timestamp() == MAX_TIMESTAMP


# --------------------------------------------------------------------------- TimestampedValue


def test_timestamped_value_fields() -> None:
    tv = TimestampedValue("a", 42)
    assert tv.value == "a"
    assert tv.timestamp == 42
    assert tv.has_timestamp() is True


def test_timestamped_value_zero_timestamp_counts_as_present() -> None:
    assert TimestampedValue("a", 0).has_timestamp() is True
    assert TimestampedValue("a", -1).has_timestamp() is True


def test_timestamped_value_without_timestamp() -> None:
    tv = TimestampedValue("a", None)
    assert tv.timestamp is None
    assert tv.has_timestamp() is False


def test_timestamped_value_equality() -> None:
    assert TimestampedValue(1, 2) == TimestampedValue(1, 2)
    assert TimestampedValue(1, 2) != TimestampedValue(1, 3)
    assert TimestampedValue(1, None) != TimestampedValue(1, 0)
    assert hash(TimestampedValue("x", 5)) == hash(TimestampedValue("x", 5))


def test_timestamped_value_repr() -> None:
    assert repr(TimestampedValue(2, 2)) == "TimestampedValue(value=2, timestamp=2)"
