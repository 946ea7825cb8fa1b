"""Unit tests for the window assigners (after Flink's ``*WindowsTest`` assigner tests)."""

from __future__ import annotations

from collections.abc import Collection
from datetime import timedelta
from typing import Any

import pytest

from windowing.assigners import (
    DynamicEventTimeSessionWindows,
    DynamicProcessingTimeSessionWindows,
    EventTimeSessionWindows,
    GlobalWindows,
    HoppingEventTimeWindows,
    HoppingProcessingTimeWindows,
    MergingWindowAssigner,
    ProcessingTimeSessionWindows,
    SlidingEventTimeWindows,
    SlidingProcessingTimeWindows,
    TumblingEventTimeWindows,
    TumblingProcessingTimeWindows,
    WindowAssigner,
    WindowAssignerContext,
    WindowStagger,
)
from windowing.assigners.base import merge_time_windows
from windowing.assigners.tumbling import window_start
from windowing.testing import WindowOperatorHarness
from windowing.time import MAX_TIMESTAMP
from windowing.triggers import (
    CountTrigger,
    EventTimeTrigger,
    NeverTrigger,
    ProcessingTimeTrigger,
    Trigger,
)
from windowing.windows import GLOBAL_WINDOW, TimeWindow

W = TimeWindow


class FakeClock:
    """A WindowAssignerContext with a settable processing time."""

    def __init__(self, now: int) -> None:
        self.now = now
        self.calls = 0

    def get_current_processing_time(self) -> int:
        self.calls += 1
        return self.now


class ExplodingContext:
    """A context that must not be consulted (event-time assigners ignore it)."""

    def get_current_processing_time(self) -> int:
        raise AssertionError("event-time assigners must not read processing time")


NO_CTX: Any = ExplodingContext()


def assign(assigner: WindowAssigner[Any, Any], ts: int | None, element: Any = "x") -> list[Any]:
    return list(assigner.assign_windows(element, ts, NO_CTX))


def assign_at(assigner: WindowAssigner[Any, Any], now: int, ts: int | None = None) -> list[Any]:
    return list(assigner.assign_windows("x", ts, FakeClock(now)))


def brute_force_hopping(ts: int, size: int, slide: int, offset: int) -> set[TimeWindow]:
    """Every aligned window ``[k * slide + offset, ... + size)`` containing ``ts``."""
    out = set()
    for k in range((ts - size) // slide - 2, ts // slide + 3):
        start = k * slide + offset
        if start <= ts < start + size:
            out.add(W(start, start + size))
    return out


# =========================================================================== window_start


@pytest.mark.parametrize(
    ("ts", "offset", "size", "expected"),
    [
        (0, 0, 10, 0),
        (9, 0, 10, 0),
        (10, 0, 10, 10),
        (-1, 0, 10, -10),
        (-10, 0, 10, -10),
        (-11, 0, 10, -20),
        (3, 2, 10, 2),
        (1, 2, 10, -8),
        (1, -2, 10, -2),
        (8, -2, 10, 8),
        (7, -2, 10, -2),
    ],
)
def test_window_start_floor_mod(ts: int, offset: int, size: int, expected: int) -> None:
    assert window_start(ts, offset, size) == expected


# =========================================================================== tumbling


@pytest.mark.parametrize(
    ("ts", "expected"),
    [
        (0, W(0, 5000)),
        (1, W(0, 5000)),
        (4999, W(0, 5000)),
        (5000, W(5000, 10000)),
        (9999, W(5000, 10000)),
        (-1, W(-5000, 0)),
        (-4999, W(-5000, 0)),
        (-5000, W(-5000, 0)),
        (-5001, W(-10000, -5000)),
        (1_700_000_000_123, W(1_700_000_000_000, 1_700_000_005_000)),
    ],
)
def test_tumbling_event_time_assignment(ts: int, expected: TimeWindow) -> None:
    assert assign(TumblingEventTimeWindows(5000), ts) == [expected]


@pytest.mark.parametrize(
    ("ts", "expected"),
    [
        (100, W(100, 5100)),
        (5099, W(100, 5100)),
        (5100, W(5100, 10100)),
        (0, W(-4900, 100)),
        (99, W(-4900, 100)),
        (-4900, W(-4900, 100)),
        (-4901, W(-9900, -4900)),
    ],
)
def test_tumbling_event_time_positive_offset(ts: int, expected: TimeWindow) -> None:
    assert assign(TumblingEventTimeWindows(5000, offset=100), ts) == [expected]


@pytest.mark.parametrize(
    ("ts", "expected"),
    [
        (0, W(-100, 4900)),
        (-100, W(-100, 4900)),
        (4899, W(-100, 4900)),
        (4900, W(4900, 9900)),
        (-101, W(-5100, -100)),
    ],
)
def test_tumbling_event_time_negative_offset(ts: int, expected: TimeWindow) -> None:
    assert assign(TumblingEventTimeWindows(5000, offset=-100), ts) == [expected]


def test_tumbling_day_windows_with_timezone_offset() -> None:
    # UTC+8 days: a day starts at 16:00 UTC of the previous day.
    a = TumblingEventTimeWindows("1 day", offset="-8 hours")
    hour = 3_600_000
    assert a.size == 24 * hour
    assert a.offset == -8 * hour
    assert assign(a, 0) == [W(-8 * hour, 16 * hour)]
    assert assign(a, 16 * hour - 1) == [W(-8 * hour, 16 * hour)]
    assert assign(a, 16 * hour) == [W(16 * hour, 40 * hour)]


@pytest.mark.parametrize("offset", [-6, -3, 0, 1, 6])
def test_tumbling_invariants(offset: int) -> None:
    a = TumblingEventTimeWindows(7, offset=offset)
    for ts in range(-25, 26):
        windows = assign(a, ts)
        assert len(windows) == 1
        (w,) = windows
        assert w.contains(ts)
        assert w.end - w.start == 7
        assert (w.start - offset) % 7 == 0


def test_tumbling_accepts_durations() -> None:
    a = TumblingEventTimeWindows("5 seconds", offset=timedelta(milliseconds=250))
    assert (a.size, a.offset) == (5000, 250)
    assert assign(a, 250) == [W(250, 5250)]
    assert TumblingEventTimeWindows(timedelta(minutes=1)).size == 60_000


def test_tumbling_returns_time_windows() -> None:
    (w,) = assign(TumblingEventTimeWindows(10), 3)
    assert type(w) is TimeWindow


def test_tumbling_element_is_ignored() -> None:
    a = TumblingEventTimeWindows(10)
    assert assign(a, 3, element=None) == assign(a, 3, element={"big": [1, 2, 3]})


def test_tumbling_event_time_requires_timestamp() -> None:
    with pytest.raises(ValueError, match=r"TumblingEventTimeWindows: element has no timestamp"):
        assign(TumblingEventTimeWindows(10), None)


def test_tumbling_clamps_at_max_timestamp() -> None:
    (w,) = assign(TumblingEventTimeWindows(10), MAX_TIMESTAMP)
    assert w.start == MAX_TIMESTAMP - MAX_TIMESTAMP % 10
    assert w.contains(MAX_TIMESTAMP)
    assert w.max_timestamp() == MAX_TIMESTAMP
    assert w.end == MAX_TIMESTAMP + 1


def test_tumbling_window_ending_exactly_at_max_plus_one_is_unchanged() -> None:
    # A window whose natural end is MAX + 1 needs no clamping.
    size = 2**32
    start = MAX_TIMESTAMP + 1 - size
    (w,) = assign(TumblingEventTimeWindows(size), MAX_TIMESTAMP)
    assert w == W(start, MAX_TIMESTAMP + 1)
    (w2,) = assign(TumblingEventTimeWindows(size), start - 1)
    assert w2 == W(start - size, start)


class FixedClock:
    def __init__(self, now: int) -> None:
        self.now = now

    def get_current_processing_time(self) -> int:
        return self.now


def test_tumbling_natural_stagger_starts_windows_at_the_first_processing_time() -> None:
    """Flink's NATURAL stagger: now - window_start(now), added to the offset, drawn once."""
    a = TumblingEventTimeWindows(10, 2, WindowStagger.NATURAL)
    (w,) = a.assign_windows(None, 100, FixedClock(1_007))  # shift 7: offset (2 + 7) % 10
    assert w == W(99, 109)
    (w2,) = a.assign_windows(None, 100, FixedClock(5_003))  # drawn once: still 9
    assert w2 == W(99, 109)
    assert a == TumblingEventTimeWindows(10, 2, WindowStagger.NATURAL)  # the draw is no field
    assert "NATURAL" in repr(a)


def test_tumbling_stagger_offset_wraps_with_java_remainder() -> None:
    # offset -3, shift 8: (-3 + 8) % 10 == 5; windows start at 5 mod 10
    a = TumblingEventTimeWindows(10, -3, WindowStagger.NATURAL)
    (w,) = a.assign_windows(None, 0, FixedClock(18))
    assert w == W(-5, 5)


def test_tumbling_random_stagger_is_one_shift_in_the_window() -> None:
    shifts = set()
    for _ in range(50):
        a = TumblingEventTimeWindows(1_000, 0, WindowStagger.RANDOM)
        starts = {
            a.assign_windows(None, t, FixedClock(0))[0].start % 1_000 for t in range(0, 5_000, 7)
        }
        assert len(starts) == 1  # every window of this assigner has the same shift
        shifts |= starts
    assert all(0 <= s < 1_000 for s in shifts) and len(shifts) > 1


def test_tumbling_aligned_stagger_is_the_default() -> None:
    a = TumblingEventTimeWindows(10, 4)
    assert a.stagger is WindowStagger.ALIGNED
    assert a.assign_windows(None, 3, FixedClock(999))[0] == W(-6, 4)
    with pytest.raises(ValueError, match="stagger must be a WindowStagger, got 'random'"):
        TumblingEventTimeWindows(10, 0, "random")  # type: ignore[arg-type]


def test_staggered_operator_fires_shifted_windows() -> None:
    """The operator's generic path (no inlined aligned loop) uses the staggered grid."""
    h = WindowOperatorHarness(
        TumblingProcessingTimeWindows(10, 0, WindowStagger.NATURAL), lambda a, b: a + b
    )
    h.set_processing_time(3)
    h.process_element(1, key="k")  # shift 3: window [3, 13)
    h.process_element(2, key="k")
    h.set_processing_time(12)
    assert [(r.window, r.value) for r in h.extract_output()] == [(W(3, 13), 3)]
    e = WindowOperatorHarness(
        TumblingEventTimeWindows(10, 0, WindowStagger.NATURAL), lambda a, b: a + b
    )
    e.set_processing_time(4)
    e.process_element(1, 5, key="k")
    e.process_watermark(13)
    assert [(r.window, r.value) for r in e.extract_output()] == [(W(4, 14), 1)]


def test_tumbling_processing_time_uses_clock() -> None:
    a = TumblingProcessingTimeWindows(5000)
    assert assign_at(a, 0) == [W(0, 5000)]
    assert assign_at(a, 4999) == [W(0, 5000)]
    assert assign_at(a, 5000) == [W(5000, 10000)]
    assert assign_at(a, -1) == [W(-5000, 0)]


def test_tumbling_processing_time_ignores_element_timestamp() -> None:
    a = TumblingProcessingTimeWindows(5000)
    assert assign_at(a, 7000, ts=1) == [W(5000, 10000)]
    assert assign_at(a, 7000, ts=None) == [W(5000, 10000)]


def test_tumbling_processing_time_reads_clock_once_per_element() -> None:
    clock = FakeClock(12)
    TumblingProcessingTimeWindows(10).assign_windows("x", None, clock)
    assert clock.calls == 1


def test_tumbling_processing_time_with_offset() -> None:
    a = TumblingProcessingTimeWindows(5000, offset=100)
    assert assign_at(a, 100) == [W(100, 5100)]
    assert assign_at(a, 99) == [W(-4900, 100)]
    b = TumblingProcessingTimeWindows(5000, offset=-100)
    assert assign_at(b, 4900) == [W(4900, 9900)]


def test_tumbling_processing_time_clamps_at_max() -> None:
    (w,) = assign_at(TumblingProcessingTimeWindows(1000), MAX_TIMESTAMP - 1)
    assert w.max_timestamp() == MAX_TIMESTAMP
    assert w.contains(MAX_TIMESTAMP - 1)


# =========================================================================== hopping


def test_hopping_assignment_at_zero_latest_start_first() -> None:
    a = HoppingEventTimeWindows(5000, 1000)
    assert assign(a, 0) == [
        W(0, 5000),
        W(-1000, 4000),
        W(-2000, 3000),
        W(-3000, 2000),
        W(-4000, 1000),
    ]


def test_hopping_assignment_at_size_minus_one() -> None:
    a = HoppingEventTimeWindows(5000, 1000)
    assert assign(a, 4999) == [
        W(4000, 9000),
        W(3000, 8000),
        W(2000, 7000),
        W(1000, 6000),
        W(0, 5000),
    ]


def test_hopping_assignment_at_size() -> None:
    a = HoppingEventTimeWindows(5000, 1000)
    assert assign(a, 5000) == [
        W(5000, 10000),
        W(4000, 9000),
        W(3000, 8000),
        W(2000, 7000),
        W(1000, 6000),
    ]


@pytest.mark.parametrize(
    ("ts", "starts"),
    [
        (-1, [-1000, -2000, -3000, -4000, -5000]),
        (-5000, [-5000, -6000, -7000, -8000, -9000]),
        (-5001, [-6000, -7000, -8000, -9000, -10000]),
    ],
)
def test_hopping_negative_timestamps(ts: int, starts: list[int]) -> None:
    a = HoppingEventTimeWindows(5000, 1000)
    assert assign(a, ts) == [W(s, s + 5000) for s in starts]


def test_hopping_positive_offset() -> None:
    a = HoppingEventTimeWindows(5000, 1000, offset=100)
    assert assign(a, 100) == [W(s, s + 5000) for s in (100, -900, -1900, -2900, -3900)]
    assert assign(a, 5099) == [W(s, s + 5000) for s in (4100, 3100, 2100, 1100, 100)]
    assert assign(a, 5100) == [W(s, s + 5000) for s in (5100, 4100, 3100, 2100, 1100)]
    assert assign(a, 99)[0] == W(-900, 4100)


def test_hopping_negative_offset() -> None:
    a = HoppingEventTimeWindows(5000, 1000, offset=-100)
    assert assign(a, 0) == [W(s, s + 5000) for s in (-100, -1100, -2100, -3100, -4100)]
    assert assign(a, 900) == [W(s, s + 5000) for s in (900, -100, -1100, -2100, -3100)]


def test_hopping_slide_equal_to_size_is_tumbling() -> None:
    hop = HoppingEventTimeWindows(10, 10)
    tumble = TumblingEventTimeWindows(10)
    for ts in range(-25, 26):
        assert assign(hop, ts) == assign(tumble, ts)
        assert len(assign(hop, ts)) == 1


def test_hopping_slide_greater_than_size_leaves_gaps() -> None:
    a = HoppingEventTimeWindows(1000, 5000)
    assert assign(a, 0) == [W(0, 1000)]
    assert assign(a, 999) == [W(0, 1000)]
    assert assign(a, 1000) == []
    assert assign(a, 4999) == []
    assert assign(a, 5000) == [W(5000, 6000)]
    assert assign(a, -1) == []
    assert assign(a, -4000) == []
    assert assign(a, -4001) == [W(-5000, -4000)]
    assert assign(a, -5000) == [W(-5000, -4000)]


def test_hopping_gap_with_offset() -> None:
    a = HoppingEventTimeWindows(2, 10, offset=3)
    assert assign(a, 2) == []
    assert assign(a, 3) == [W(3, 5)]
    assert assign(a, 4) == [W(3, 5)]
    assert assign(a, 5) == []
    assert assign(a, -7) == [W(-7, -5)]


def test_hopping_non_divisible_slide() -> None:
    a = HoppingEventTimeWindows(10, 3)
    assert assign(a, 0) == [W(0, 10), W(-3, 7), W(-6, 4), W(-9, 1)]
    assert assign(a, 1) == [W(0, 10), W(-3, 7), W(-6, 4)]


@pytest.mark.parametrize(
    ("size", "slide", "offset"),
    [(10, 3, 0), (10, 3, 2), (10, 3, -2), (6, 2, 1), (5, 5, 0), (3, 7, 0), (3, 7, -6), (1, 1, 0)],
)
def test_hopping_matches_brute_force(size: int, slide: int, offset: int) -> None:
    a = HoppingEventTimeWindows(size, slide, offset=offset)
    for ts in range(-30, 31):
        windows = assign(a, ts)
        assert set(windows) == brute_force_hopping(ts, size, slide, offset), ts
        assert len(windows) == len(set(windows))
        starts = [w.start for w in windows]
        assert starts == sorted(starts, reverse=True)
        assert len(windows) <= -(-size // slide)


def test_hopping_returns_ceil_size_over_slide_windows_when_divisible() -> None:
    a = HoppingEventTimeWindows(12, 4)
    for ts in range(-20, 20):
        assert len(assign(a, ts)) == 3


def test_hopping_requires_timestamp() -> None:
    with pytest.raises(ValueError, match=r"HoppingEventTimeWindows: element has no timestamp"):
        assign(HoppingEventTimeWindows(10, 5), None)


def test_hopping_clamps_at_max_timestamp() -> None:
    windows = assign(HoppingEventTimeWindows(10, 5), MAX_TIMESTAMP)
    assert len(windows) == 2
    for w in windows:
        assert w.max_timestamp() <= MAX_TIMESTAMP
        assert w.contains(MAX_TIMESTAMP)
    assert windows[0].start > windows[1].start


def test_hopping_accepts_durations() -> None:
    a = HoppingEventTimeWindows("1 minute", "10 seconds", offset=timedelta(seconds=1))
    assert (a.size, a.slide, a.offset) == (60_000, 10_000, 1_000)
    assert len(assign(a, 0)) == 6


def test_sliding_is_flink_name_for_hopping() -> None:
    assert SlidingEventTimeWindows is HoppingEventTimeWindows
    assert SlidingProcessingTimeWindows is HoppingProcessingTimeWindows


def test_hopping_processing_time_uses_clock() -> None:
    a = HoppingProcessingTimeWindows(5000, 1000)
    assert assign_at(a, 0) == [W(s, s + 5000) for s in (0, -1000, -2000, -3000, -4000)]
    assert assign_at(a, 5000, ts=1) == [W(s, s + 5000) for s in (5000, 4000, 3000, 2000, 1000)]


def test_hopping_processing_time_with_offset_and_gaps() -> None:
    a = HoppingProcessingTimeWindows(1000, 5000, offset=100)
    assert assign_at(a, 100) == [W(100, 1100)]
    assert assign_at(a, 1100) == []
    assert assign_at(a, 99) == []


def test_hopping_processing_time_clamps_at_max() -> None:
    windows = assign_at(HoppingProcessingTimeWindows(10, 5), MAX_TIMESTAMP)
    assert windows
    assert all(w.max_timestamp() <= MAX_TIMESTAMP for w in windows)


# =========================================================================== sessions


@pytest.mark.parametrize("ts", [0, 1, 4999, 5000, -1, -5000, -5001])
def test_event_time_session_window_per_element(ts: int) -> None:
    assert assign(EventTimeSessionWindows(5000), ts) == [W(ts, ts + 5000)]


def test_event_time_session_accepts_durations() -> None:
    assert EventTimeSessionWindows("5 seconds").gap == 5000
    assert EventTimeSessionWindows(timedelta(minutes=1)).gap == 60_000


def test_event_time_session_requires_timestamp() -> None:
    with pytest.raises(ValueError, match=r"EventTimeSessionWindows: element has no timestamp"):
        assign(EventTimeSessionWindows(10), None)


def test_event_time_session_clamps_at_max() -> None:
    (w,) = assign(EventTimeSessionWindows(10), MAX_TIMESTAMP - 3)
    assert w == W(MAX_TIMESTAMP - 3, MAX_TIMESTAMP + 1)
    assert w.max_timestamp() == MAX_TIMESTAMP


def test_processing_time_session_uses_clock() -> None:
    a = ProcessingTimeSessionWindows(5000)
    assert assign_at(a, 0) == [W(0, 5000)]
    assert assign_at(a, 4999, ts=1) == [W(4999, 9999)]
    (w,) = assign_at(a, MAX_TIMESTAMP)
    assert w.max_timestamp() == MAX_TIMESTAMP


def test_dynamic_event_time_session_int_gap() -> None:
    a = DynamicEventTimeSessionWindows(lambda e: e["gap"])
    assert assign(a, 10, element={"gap": 7}) == [W(10, 17)]
    assert assign(a, -10, element={"gap": 1}) == [W(-10, -9)]


def test_dynamic_event_time_session_timedelta_and_string_gap() -> None:
    a = DynamicEventTimeSessionWindows(lambda e: e)
    assert assign(a, 0, element=timedelta(seconds=2)) == [W(0, 2000)]
    assert assign(a, 0, element="3 ms") == [W(0, 3)]


def test_dynamic_gap_extractor_receives_element() -> None:
    seen: list[Any] = []

    def extractor(element: Any) -> int:
        seen.append(element)
        return 5

    a = DynamicEventTimeSessionWindows(extractor)
    assign(a, 1, element="first")
    assign(a, 2, element="second")
    assert seen == ["first", "second"]


@pytest.mark.parametrize("gap", [0, -1, -5000, timedelta(0), timedelta(seconds=-1), "-1 second"])
def test_dynamic_gap_not_positive_raises_naming_value(gap: Any) -> None:
    a = DynamicEventTimeSessionWindows(lambda e: gap)
    with pytest.raises(ValueError, match=r"gap must be > 0") as info:
        assign(a, 5, element="elem")
    assert repr(gap) in str(info.value)
    assert "'elem'" in str(info.value)


@pytest.mark.parametrize("gap", [0, -3, timedelta(0)])
def test_dynamic_processing_gap_not_positive_raises(gap: Any) -> None:
    a = DynamicProcessingTimeSessionWindows(lambda e: gap)
    with pytest.raises(ValueError, match=r"gap must be > 0") as info:
        assign_at(a, 100)
    assert repr(gap) in str(info.value)


@pytest.mark.parametrize("gap", [1.5, None, True, "soon"])
def test_dynamic_gap_of_wrong_type_raises(gap: Any) -> None:
    a = DynamicEventTimeSessionWindows(lambda e: gap)
    with pytest.raises(ValueError, match=r"session gap"):
        assign(a, 5)


def test_dynamic_event_time_session_requires_timestamp() -> None:
    a = DynamicEventTimeSessionWindows(lambda e: 5)
    with pytest.raises(ValueError, match=r"DynamicEventTimeSessionWindows: element has no"):
        assign(a, None)


def test_dynamic_processing_time_session_uses_clock() -> None:
    a = DynamicProcessingTimeSessionWindows(lambda e: e)
    assert list(a.assign_windows(30, None, FakeClock(100))) == [W(100, 130)]
    assert list(a.assign_windows("1 second", 5, FakeClock(0))) == [W(0, 1000)]


def test_dynamic_session_clamps_at_max() -> None:
    (w,) = assign(DynamicEventTimeSessionWindows(lambda e: 100), MAX_TIMESTAMP - 1)
    assert w.max_timestamp() == MAX_TIMESTAMP
    (w2,) = list(
        DynamicProcessingTimeSessionWindows(lambda e: 100).assign_windows(
            "x", None, FakeClock(MAX_TIMESTAMP)
        )
    )
    assert w2.max_timestamp() == MAX_TIMESTAMP


def test_with_dynamic_gap_factories() -> None:
    def extractor(e: Any) -> int:
        return 3

    a = EventTimeSessionWindows.with_dynamic_gap(extractor)
    assert isinstance(a, DynamicEventTimeSessionWindows)
    assert a.gap_extractor is extractor
    assert assign(a, 1) == [W(1, 4)]
    b = ProcessingTimeSessionWindows.with_dynamic_gap(extractor)
    assert isinstance(b, DynamicProcessingTimeSessionWindows)
    assert list(b.assign_windows("x", None, FakeClock(10))) == [W(10, 13)]


# =========================================================================== merge_windows


def _as_sets(merges: Any) -> set[tuple[frozenset[TimeWindow], TimeWindow]]:
    return {(frozenset(group), result) for group, result in merges}


def test_merge_consecutive_touching_windows() -> None:
    a = EventTimeSessionWindows(5000)
    merges = a.merge_windows([W(0, 1), W(1, 2), W(2, 3), W(4, 5), W(5, 6)])
    assert _as_sets(merges) == {
        (frozenset({W(0, 1), W(1, 2), W(2, 3)}), W(0, 3)),
        (frozenset({W(4, 5), W(5, 6)}), W(4, 6)),
    }


def test_merge_covering_windows() -> None:
    a = EventTimeSessionWindows(5000)
    merges = a.merge_windows([W(1, 1), W(0, 2), W(4, 7), W(5, 6)])
    assert _as_sets(merges) == {
        (frozenset({W(1, 1), W(0, 2)}), W(0, 2)),
        (frozenset({W(4, 7), W(5, 6)}), W(4, 7)),
    }


def test_merge_single_window_is_no_merge() -> None:
    assert list(EventTimeSessionWindows(10).merge_windows([W(0, 2)])) == []


def test_merge_no_windows() -> None:
    assert list(EventTimeSessionWindows(10).merge_windows([])) == []


def test_merge_disjoint_windows_do_not_merge() -> None:
    assert list(EventTimeSessionWindows(10).merge_windows([W(0, 5), W(6, 9), W(20, 30)])) == []


def test_merge_is_order_independent() -> None:
    windows = [W(20, 25), W(3, 8), W(8, 13), W(30, 40), W(12, 14), W(38, 45)]
    expected = {
        (frozenset({W(3, 8), W(8, 13), W(12, 14)}), W(3, 14)),
        (frozenset({W(30, 40), W(38, 45)}), W(30, 45)),
    }
    a = EventTimeSessionWindows(5)
    assert _as_sets(a.merge_windows(windows)) == expected
    assert _as_sets(a.merge_windows(list(reversed(windows)))) == expected


def test_merge_chain_through_cover() -> None:
    # (0, 10) reaches (9, 12) which reaches (12, 20): all merge transitively.
    merges = merge_time_windows([W(12, 20), W(0, 10), W(9, 12)])
    assert _as_sets(merges) == {(frozenset({W(0, 10), W(9, 12), W(12, 20)}), W(0, 20))}


def test_merge_through_wide_window() -> None:
    # The wide window bridges two windows that do not touch each other.
    merges = merge_time_windows([W(0, 2), W(1, 50), W(40, 41)])
    assert _as_sets(merges) == {(frozenset({W(0, 2), W(1, 50), W(40, 41)}), W(0, 50))}


def test_merge_negative_windows() -> None:
    merges = merge_time_windows([W(-10, -5), W(-5, 0), W(1, 2)])
    assert _as_sets(merges) == {(frozenset({W(-10, -5), W(-5, 0)}), W(-10, 0))}


@pytest.mark.parametrize(
    "assigner",
    [
        EventTimeSessionWindows(10),
        ProcessingTimeSessionWindows(10),
        DynamicEventTimeSessionWindows(lambda e: 10),
        DynamicProcessingTimeSessionWindows(lambda e: 10),
    ],
    ids=["event", "processing", "dynamic-event", "dynamic-processing"],
)
def test_all_session_assigners_merge(assigner: MergingWindowAssigner[Any, Any]) -> None:
    merges = assigner.merge_windows([W(0, 10), W(10, 20), W(21, 30)])
    assert _as_sets(merges) == {(frozenset({W(0, 10), W(10, 20)}), W(0, 20))}


def test_merge_result_groups_have_two_or_more_windows() -> None:
    merges = merge_time_windows([W(i * 3, i * 3 + 2) for i in range(10)] + [W(100, 101)])
    assert merges == []
    merges = merge_time_windows([W(0, 3), W(3, 6), W(100, 101), W(101, 102)])
    assert all(len(group) >= 2 for group, _ in merges)
    for group, result in merges:
        assert result.start == min(w.start for w in group)
        assert result.end == max(w.end for w in group)


# =========================================================================== global windows


def test_global_windows_assigns_global_window() -> None:
    a = GlobalWindows()
    assert assign(a, 5) == [GLOBAL_WINDOW]
    assert assign(a, None) == [GLOBAL_WINDOW]
    assert assign(a, -(2**63)) == [GLOBAL_WINDOW]
    assert list(a.assign_windows("x", None, None)) == [GLOBAL_WINDOW]  # type: ignore[arg-type]


def test_global_windows_equality_and_repr() -> None:
    assert GlobalWindows() == GlobalWindows()
    assert repr(GlobalWindows()) == "GlobalWindows()"


# =========================================================================== defaults


@pytest.mark.parametrize(
    ("assigner", "trigger_type", "event_time", "merging"),
    [
        (TumblingEventTimeWindows(10), EventTimeTrigger, True, False),
        (TumblingProcessingTimeWindows(10), ProcessingTimeTrigger, False, False),
        (HoppingEventTimeWindows(10, 5), EventTimeTrigger, True, False),
        (HoppingProcessingTimeWindows(10, 5), ProcessingTimeTrigger, False, False),
        (EventTimeSessionWindows(10), EventTimeTrigger, True, True),
        (ProcessingTimeSessionWindows(10), ProcessingTimeTrigger, False, True),
        (DynamicEventTimeSessionWindows(lambda e: 1), EventTimeTrigger, True, True),
        (DynamicProcessingTimeSessionWindows(lambda e: 1), ProcessingTimeTrigger, False, True),
        (GlobalWindows(), NeverTrigger, False, False),
    ],
    ids=lambda v: type(v).__name__ if isinstance(v, WindowAssigner) else None,
)
def test_default_trigger_and_time_domain(
    assigner: WindowAssigner[Any, Any], trigger_type: type, event_time: bool, merging: bool
) -> None:
    trigger = assigner.get_default_trigger()
    assert type(trigger) is trigger_type
    assert assigner.is_event_time() is event_time
    assert isinstance(assigner, MergingWindowAssigner) is merging
    assert isinstance(assigner, WindowAssigner)
    if merging:
        assert trigger.can_merge()


# =========================================================================== value semantics


def test_assigners_normalise_durations_for_equality() -> None:
    assert TumblingEventTimeWindows("10 seconds") == TumblingEventTimeWindows(10_000)
    assert TumblingEventTimeWindows(10, 1) != TumblingEventTimeWindows(10, 2)
    assert HoppingEventTimeWindows("1 minute", "30 s") == HoppingEventTimeWindows(60_000, 30_000)
    assert EventTimeSessionWindows(timedelta(seconds=1)) == EventTimeSessionWindows("1 second")
    assert TumblingEventTimeWindows(10) != TumblingProcessingTimeWindows(10)


def test_assigner_reprs() -> None:
    assert repr(TumblingEventTimeWindows("1 s")) == "TumblingEventTimeWindows(size=1000, offset=0)"
    assert repr(HoppingProcessingTimeWindows(10, 5, -1)) == (
        "HoppingProcessingTimeWindows(size=10, slide=5, offset=-1)"
    )
    assert repr(EventTimeSessionWindows(7)) == "EventTimeSessionWindows(gap=7)"


def test_assigners_are_immutable() -> None:
    a = TumblingEventTimeWindows(10)
    with pytest.raises(AttributeError):
        a.size = 20  # type: ignore[misc]


# =========================================================================== custom assigners


class ParityWindows(WindowAssigner[int, TimeWindow]):
    """Even values go to 10 ms tumbling windows, odd values to one window [0, 100)."""

    def assign_windows(
        self, element: int, timestamp: int | None, context: WindowAssignerContext
    ) -> Collection[TimeWindow]:
        assert timestamp is not None
        if element < 0:
            return []
        if element % 2 == 0:
            start = timestamp - timestamp % 10
            return [TimeWindow(start, start + 10)]
        return [TimeWindow(0, 100)]

    def get_default_trigger(self) -> Trigger[int, TimeWindow]:
        return EventTimeTrigger()

    def is_event_time(self) -> bool:
        return True


def test_custom_assigner_repr() -> None:
    assert repr(ParityWindows()) == "ParityWindows()"


def test_custom_assigner_in_operator_harness() -> None:
    h = WindowOperatorHarness(ParityWindows(), lambda a, b: a + b)
    h.process_element(2, timestamp=1, key="k")
    h.process_element(4, timestamp=9, key="k")
    h.process_element(1, timestamp=3, key="k")
    h.process_element(6, timestamp=12, key="k")
    h.process_element(3, timestamp=50, key="k")
    h.process_watermark(9)
    assert [(r.key, r.window, r.value, r.timestamp) for r in h.extract_output()] == [
        ("k", W(0, 10), 6, 9),
    ]
    h.process_watermark(99)
    out = sorted((r.window, r.value) for r in h.extract_output())
    assert out == [(W(0, 100), 4), (W(10, 20), 6)]
    assert h.num_state_entries() == 0
    assert h.num_event_time_timers() == 0


def test_custom_assigner_returning_no_window_counts_element() -> None:
    h = WindowOperatorHarness(ParityWindows(), lambda a, b: a + b)
    h.process_element(-2, timestamp=1, key="k")
    assert h.metrics.num_records_in_no_window == 1
    assert h.metrics.num_elements == 1
    h.process_watermark(1000)
    assert h.extract_output() == []
    assert h.num_keys() == 0


def test_custom_assigner_with_count_trigger() -> None:
    h = WindowOperatorHarness(ParityWindows(), lambda a, b: a + b, trigger=CountTrigger(2))
    for v, ts in [(1, 0), (3, 1), (5, 2)]:
        h.process_element(v, timestamp=ts, key="k")
    assert [(r.window, r.value) for r in h.extract_output()] == [(W(0, 100), 4)]


def test_processing_time_assigner_in_operator_harness() -> None:
    h = WindowOperatorHarness(TumblingProcessingTimeWindows(10), lambda a, b: a + b)
    h.set_processing_time(3)
    h.process_element(1, key="k")
    h.process_element(2, key="k")
    h.set_processing_time(12)
    h.process_element(5, key="k")
    h.set_processing_time(9)
    assert [(r.window, r.value) for r in h.extract_output()] == [(W(0, 10), 3)]
    h.set_processing_time(19)
    assert [(r.window, r.value) for r in h.extract_output()] == [(W(10, 20), 5)]
    assert h.num_state_entries() == 0
    assert h.num_processing_time_timers() == 0


def test_dynamic_session_window_inside_existing_session() -> None:
    h = WindowOperatorHarness(
        DynamicEventTimeSessionWindows(lambda e: e[1]), lambda a, b: (a[0] + b[0], 0)
    )
    h.process_element((1, 10), 0, "k")  # [0, 10)
    h.process_element((2, 3), 2, "k")  # [2, 5) lies inside [0, 10)
    h.process_element((4, 1), 9, "k")  # [9, 10) too
    h.process_watermark(100)
    assert [(r.window, r.value[0]) for r in h.extract_output()] == [(W(0, 10), 7)]
    assert h.num_state_entries() == 0
    assert h.num_event_time_timers() == 0


def test_session_windows_in_operator_harness_merge_touching() -> None:
    h = WindowOperatorHarness(EventTimeSessionWindows(5), lambda a, b: a + b)
    h.process_element(1, 0, "k")  # [0, 5)
    h.process_element(2, 5, "k")  # [5, 10) touches: merges to [0, 10)
    h.process_element(4, 11, "k")  # [11, 16) does not touch
    h.process_watermark(100)
    assert sorted((r.window, r.value) for r in h.extract_output()) == [
        (W(0, 10), 3),
        (W(11, 16), 4),
    ]
    assert h.num_keys() == 0


def test_hopping_event_time_windows_bound_size_over_slide_as_flink() -> None:
    """Flink 2.3's SlidingEventTimeWindows rejects size / slide > 10,000,000 (each element
    would be copied into that many windows); its processing-time twin does not."""
    assert HoppingEventTimeWindows(10_000_000, 1).size == 10_000_000
    with pytest.raises(ValueError, match=r"size / slide must be <= 10,000,000 \(as in Flink\)"):
        HoppingEventTimeWindows(10_000_001, 1)
    assert HoppingProcessingTimeWindows(10_000_001, 1).slide == 1
