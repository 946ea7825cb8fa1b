"""KIP-450 sliding windows (``SlidingDistinctAssigner``): worked examples and rules."""

from __future__ import annotations

from typing import Any
from unittest.mock import patch

import pytest

from windowing import MAX_TIMESTAMP, OutputTag
from windowing.assigners import HoppingEventTimeWindows
from windowing.assigners.sliding_distinct import SlidingDistinctAssigner
from windowing.engine import timeline_derived as sliding_derived
from windowing.engine.timeline_derived import _SMALL_RANGE
from windowing.functions import (
    Aggregate,
    AggregateFunction,
    ProcessWindowFunction,
    Reduce,
    ReduceFunction,
)
from windowing.plan import Strategy
from windowing.testing import WindowOperatorHarness
from windowing.triggers import CountTrigger, EventTimeTrigger, PurgingTrigger
from windowing.triggers.emit import OnWindowCloseTrigger, OnWindowUpdateTrigger

LATE = OutputTag("late")


class Collect(ProcessWindowFunction[Any, tuple[Any, ...], Any, Any]):
    def process(self, key: Any, context: Any, elements: Any) -> Any:
        yield tuple(sorted(elements))


def inclusive(results: Any) -> list[tuple[int, int, Any]]:
    """Results as ``(start, inclusive end, value)`` sorted."""
    return sorted((r.window.start, r.window.end - 1, r.value) for r in results)


def run(records: list[tuple[Any, int]], size: int = 10, **kwargs: Any) -> WindowOperatorHarness:
    h = WindowOperatorHarness(SlidingDistinctAssigner(size, grace=0), Collect(), **kwargs)
    for value, ts in records:
        h.process_element(value, ts, key="k")
    return h


def test_worked_example_seven_windows_for_four_records() -> None:
    for slicing in (None, True):  # Kafka's algorithm, and the record timeline
        h = run([("a", 105), ("b", 108), ("c", 112), ("d", 121)], slicing=slicing)
        h.process_watermark(MAX_TIMESTAMP)
        assert inclusive(h.extract_output()) == [
            (95, 105, ("a",)),
            (98, 108, ("a", "b")),
            (102, 112, ("a", "b", "c")),
            (106, 116, ("b", "c")),
            (109, 119, ("c",)),
            (111, 121, ("c", "d")),
            (113, 123, ("d",)),
        ]
        assert (h.num_state_entries(), h.num_event_time_timers(), h.num_keys()) == (0, 0, 0)


def test_records_before_size_share_kafkas_early_window() -> None:
    """Kafka's processEarly: window starts cannot be negative, so records with
    0 <= ts < size share the window [0; size] instead of having left windows of their own;
    their right windows are as usual."""
    h = run([("a", 5), ("b", 8), ("c", 12), ("d", 21)])
    h.process_watermark(MAX_TIMESTAMP)
    assert inclusive(h.extract_output()) == [
        (0, 10, ("a", "b")),
        (2, 12, ("a", "b", "c")),
        (6, 16, ("b", "c")),
        (9, 19, ("c",)),
        (11, 21, ("c", "d")),
        (13, 23, ("d",)),
    ]
    # the record timeline gives the KIP-450 definition itself: left windows [-5; 5], [-2; 8]
    timeline = run([("a", 5), ("b", 8), ("c", 12), ("d", 21)], slicing=True)
    timeline.process_watermark(MAX_TIMESTAMP)
    assert (-5, 5, ("a",)) in inclusive(timeline.extract_output())


def test_hopping_with_advance_one_needs_many_more_windows_for_the_same_records() -> None:
    h = WindowOperatorHarness(HoppingEventTimeWindows(10, 1), Collect())
    for value, ts in [("a", 5), ("b", 8), ("c", 12), ("d", 21)]:
        h.process_element(value, ts, key="k")
    h.process_watermark(MAX_TIMESTAMP)
    results = h.extract_output()
    assert len(results) == 26
    assert len({r.value for r in results}) == 7  # the same seven distinct sets, repeated


def test_record_b_creates_its_left_window_and_the_previous_records_right_window() -> None:
    # seed 001: b's left window holds a and b; a's right window starts 1 ms after a.
    h = run([("a", 105), ("b", 108)], trigger=OnWindowUpdateTrigger())
    assert [(r.window.start, r.window.end - 1, r.value) for r in h.extract_output()] == [
        (95, 105, ("a",)),
        (106, 116, ("b",)),  # Kafka's order: the previous record's right window first,
        (98, 108, ("a", "b")),  # then the record's left window
    ]


def test_record_c_updates_existing_windows_that_contain_it() -> None:
    h = run([("a", 5), ("b", 8)], trigger=OnWindowUpdateTrigger())
    h.extract_output()
    h.process_element("c", 12, key="k")
    assert inclusive(h.extract_output()) == [
        (2, 12, ("a", "b", "c")),  # c's left window, from existing records
        (6, 16, ("b", "c")),  # a's right window, updated
        (9, 19, ("c",)),  # b's right window, created by c
    ]


def test_out_of_order_record_windows() -> None:
    h = run([("a", 20), ("b", 12)], trigger=OnWindowUpdateTrigger())
    results = inclusive(h.extract_output())
    assert results == [
        (2, 12, ("b",)),  # b's left window
        (10, 20, ("a",)),  # a's left window, first emitted when a arrived
        (10, 20, ("a", "b")),  # ... and updated by b
        (13, 23, ("a",)),  # b's own right window: created from a, does not contain b
    ]


def test_equal_timestamps_never_create_a_second_window() -> None:
    h = run([("a", 105), ("b", 105), ("c", 105)])
    h.process_watermark(MAX_TIMESTAMP)
    assert inclusive(h.extract_output()) == [(95, 105, ("a", "b", "c"))]


def test_records_more_than_size_plus_one_apart_share_no_window() -> None:
    h = run([("a", 100), ("b", 112)])
    h.process_watermark(MAX_TIMESTAMP)
    assert inclusive(h.extract_output()) == [(90, 100, ("a",)), (102, 112, ("b",))]
    h = run([("a", 100), ("b", 111)])  # 111 is in a's right window [101; 111]
    h.process_watermark(MAX_TIMESTAMP)
    assert inclusive(h.extract_output()) == [(90, 100, ("a",)), (101, 111, ("b",))]


def test_negative_timestamps_are_not_clamped() -> None:
    h = run([("a", -30), ("b", -25)])
    h.process_watermark(MAX_TIMESTAMP)
    assert inclusive(h.extract_output()) == [
        (-40, -30, ("a",)),
        (-35, -25, ("a", "b")),
        (-29, -19, ("b",)),
    ]


def test_default_trigger_fires_when_watermark_passes_the_window_end() -> None:
    h = run([("a", 105), ("b", 108)])
    h.process_watermark(107)
    assert inclusive(h.extract_output()) == [(95, 105, ("a",))]
    h.process_watermark(108)
    assert inclusive(h.extract_output()) == [(98, 108, ("a", "b"))]
    h.process_watermark(116)
    assert inclusive(h.extract_output()) == [(106, 116, ("b",))]


def test_on_window_close_fires_once_after_grace_with_final_contents() -> None:
    h = WindowOperatorHarness(
        SlidingDistinctAssigner(10, grace=5), Collect(), trigger=OnWindowCloseTrigger()
    )
    h.process_element("a", 105, key="k")
    h.process_watermark(109)  # past a's left window end, within grace
    # out of order, within grace: joins a's left window [95; 105]; b's own left window
    # [94; 104] is already closed (104 + 5 <= 109), and b creates its right window [105; 115]
    # holding a
    h.process_element("b", 104, key="k")
    assert h.extract_output() == []
    h.process_watermark(110)  # 105 + 5: [95; 105] closes
    assert inclusive(h.extract_output()) == [(95, 105, ("a", "b"))]
    h.process_watermark(MAX_TIMESTAMP)
    assert inclusive(h.extract_output()) == [(105, 115, ("a",))]
    assert (h.num_state_entries(), h.num_event_time_timers(), h.num_keys()) == (0, 0, 0)


def test_record_beyond_grace_goes_to_the_late_side_output_and_in_no_window() -> None:
    h = WindowOperatorHarness(SlidingDistinctAssigner(10, grace=2), Collect(), late_output_tag=LATE)
    h.process_element("a", 100, key="k")
    h.process_watermark(100)
    h.process_element("late", 80, key="k")  # every window containing 80 ends by 90 < 100 - 2
    assert [(e.value, e.timestamp, e.watermark) for e in h.extract_side_output(LATE)] == [
        ("late", 80, 100)
    ]
    h.process_watermark(MAX_TIMESTAMP)
    values = [v for r in h.extract_output() for v in r.value]
    assert "late" not in values


def test_late_record_may_still_create_its_right_window_without_being_in_it() -> None:
    h = WindowOperatorHarness(SlidingDistinctAssigner(10, grace=0), Collect(), late_output_tag=LATE)
    h.process_element("a", 15, key="k")
    h.process_watermark(16)  # fires and closes a's left window [5; 15]
    # 12 is only in closed windows ([2; 12], [5; 15]); its right window [13; 23] holds a
    h.process_element("b", 12, key="k")
    assert [e.value for e in h.extract_side_output(LATE)] == ["b"]
    h.process_watermark(MAX_TIMESTAMP)
    assert inclusive(h.extract_output()) == [(5, 15, ("a",)), (13, 23, ("a",))]


class SumCount(AggregateFunction[int, list[int], tuple[int, int]]):
    def create_accumulator(self) -> list[int]:
        return [0, 0]

    def add(self, value: int, acc: list[int]) -> list[int]:
        acc[0] += value
        acc[1] += 1
        return acc

    def get_result(self, acc: list[int]) -> tuple[int, int]:
        return (acc[0], acc[1])

    def merge(self, a: list[int], b: list[int]) -> list[int]:
        a[0] += b[0]
        a[1] += b[1]
        return a


class GenericEventTimeTrigger(EventTimeTrigger):
    """Same behaviour; windows keep materialised contents (the general path)."""


@pytest.mark.parametrize("function", [Reduce(lambda a, b: a + b), Aggregate(SumCount())])
@pytest.mark.parametrize("small_range", [0, _SMALL_RANGE])
def test_a_record_less_timestamp_inside_later_windows(function: Any, small_range: int) -> None:
    def run(trigger: Any) -> list[Any]:
        h = WindowOperatorHarness(
            SlidingDistinctAssigner(10, grace=0), function, trigger=trigger, slicing=True
        )
        h.process_element(100, 16, key="k")
        h.process_watermark(5)
        # 5 is in no open window, but its right window [6; 16] holds 16: a timestamp without
        # a record, inside the later windows [2; 12] and [4; 14]
        h.process_element(1000, 5, key="k")
        for value, ts in [(1, 8), (2, 12), (3, 14), (4, 17)]:
            h.process_element(value, ts, key="k")
        h.process_watermark(MAX_TIMESTAMP)
        return h.extract_output()

    with patch.object(sliding_derived, "_SMALL_RANGE", small_range):
        derived = run(EventTimeTrigger())
    assert derived == run(GenericEventTimeTrigger())
    sums = [(r.window.start, r.window.end - 1, r.value) for r in derived]
    if isinstance(function, Aggregate):
        sums = [(start, end, total) for start, end, (total, _) in sums]
    assert sums == [
        (-2, 8, 1),
        (2, 12, 3),  # 5 holds no record
        (4, 14, 6),
        (6, 16, 106),
        (7, 17, 110),
        (9, 19, 109),
        (13, 23, 107),
        (15, 25, 104),
        (17, 27, 4),
    ]


def test_purging_count_trigger_works_with_sliding_windows() -> None:
    h = WindowOperatorHarness(
        SlidingDistinctAssigner(10, grace=0),
        Collect(),
        trigger=PurgingTrigger(CountTrigger(2)),
    )
    # The count trigger counts on_element calls per window: one per record a window is
    # created by or receives.
    for value, ts in [("a", 101), ("b", 102), ("c", 103)]:
        h.process_element(value, ts, key="k")
    # [102; 112] (a's right window) was created by b and received c: fires and purges
    assert inclusive(h.extract_output()) == [(102, 112, ("b", "c"))]
    h.process_element("d", 103, key="k")
    assert inclusive(h.extract_output()) == [
        (93, 103, ("a", "b", "c", "d")),
        (103, 113, ("c", "d")),
    ]


@pytest.mark.parametrize(("slicing", "bound"), [(True, 20), (None, 40)])
def test_state_is_bounded_on_a_long_in_order_stream(slicing: bool | None, bound: int) -> None:
    """The timeline keeps records and windows of the last ~size ms; Kafka's window store
    keeps windows a later record may still fetch: those of the last ~3 * size ms."""
    h = WindowOperatorHarness(
        SlidingDistinctAssigner(10, grace=0), lambda a, b: a + b, slicing=slicing
    )
    peak = 0
    for ts in range(0, 5_000, 3):
        h.process_element(1, ts, key="k")
        h.process_watermark(ts)
        peak = max(peak, h.num_state_entries())
    assert peak < bound
    h.process_watermark(MAX_TIMESTAMP)
    assert (h.num_state_entries(), h.num_event_time_timers(), h.num_keys()) == (0, 0, 0)


def test_live_window_starts_are_forgotten_with_their_timestamps() -> None:
    h = WindowOperatorHarness(
        SlidingDistinctAssigner(10, grace=0), lambda a, b: a + b, slicing=True
    )
    for ts in range(0, 5_000, 3):
        h.process_elements([(1, ts, "k")])
        h.process_watermark(ts)
    timeline = h.operator.backend.get("k").timeline
    assert timeline is not None and len(timeline.live) <= 2 * len(timeline.stamps) + 2
    assert min(timeline.live) >= timeline.stamps[0] - 10  # none of a forgotten timestamp


def test_keys_due_at_the_same_time_fire_in_the_order_they_were_scheduled() -> None:
    h = WindowOperatorHarness(SlidingDistinctAssigner(10, grace=0), lambda a, b: a + b)
    h.process_elements([(1, 10, "z"), (1, 10, "x"), (1, 30, "y")])
    h.process_elements([(1, 10, "y")])  # y's timer moves to 10: y is scheduled last
    h.process_watermark(10)
    assert [r.key for r in h.extract_output()] == ["z", "x", "y"]


def test_a_timer_moved_earlier_by_an_out_of_order_record_fires_on_time() -> None:
    """The element path of an out-of-order record schedules the key through the operator's
    generic path; a watermark that no in-order record made due must still see it."""
    h = WindowOperatorHarness(SlidingDistinctAssigner(10, grace=0), lambda a, b: a + b)
    h.process_elements([(1, 300, "a")])
    h.process_watermark(0)  # nothing due before 300 now
    h.process_elements([(2, 400, "b"), (5, 150, "b")])  # 150: out of order for b
    h.process_watermark(200)
    assert [(r.key, r.window.start, r.window.end, r.value) for r in h.extract_output()] == [
        ("b", 140, 151, 5)
    ]
    h.process_watermark(199)  # lower: ignored
    h.process_watermark(250)
    assert h.extract_output() == []


@pytest.mark.parametrize("close", [False, True])
def test_windows_ending_at_the_end_of_time(close: bool) -> None:
    """A window ending at MAX_TIMESTAMP fires at the final watermark with EventTimeTrigger
    (its timer is due then); with OnWindowCloseTrigger its cleanup time saturates at the end
    of time and it never fires, as on the per-window path."""
    trigger = OnWindowCloseTrigger() if close else None
    h = WindowOperatorHarness(
        SlidingDistinctAssigner(2, grace=0), lambda a, b: a + b, trigger=trigger
    )
    h.process_elements(
        [(1, MAX_TIMESTAMP - 5, "k"), (2, MAX_TIMESTAMP, "k"), (4, MAX_TIMESTAMP, "j")]
    )
    h.process_watermark(MAX_TIMESTAMP)
    got = sorted((r.key, r.window.end - MAX_TIMESTAMP, r.value) for r in h.extract_output())
    ending_at_the_end = [("j", 1, 4), ("k", 1, 2)]
    assert got == ([("k", -4, 1)] if close else sorted([("k", -4, 1), *ending_at_the_end]))


@pytest.mark.parametrize("slicing", [False, True])
def test_open_windows_past_the_end_of_time_are_listed_as_they_fire(slicing: bool) -> None:
    """A right window reaching past the end of time ends there (the assigner clamps it): the
    open windows listed (``iter_windows``: the state reader, the open-windows gauge) are the
    windows that fire, in Kafka's window store as on the timeline."""
    h = WindowOperatorHarness(
        SlidingDistinctAssigner(8, grace=0), lambda a, b: a + b, slicing=slicing
    )
    h.process_watermark(MAX_TIMESTAMP - 8)
    h.process_elements([(1, MAX_TIMESTAMP - 7, "k"), (2, MAX_TIMESTAMP - 8, "k")])
    listed = {(w.start, w.end) for w in h.operator.iter_windows("k")}
    h.process_watermark(MAX_TIMESTAMP)
    fired = {(r.window.start, r.window.end) for r in h.extract_output()}
    end = MAX_TIMESTAMP + 1
    assert listed == {(MAX_TIMESTAMP - 15, MAX_TIMESTAMP - 6), (MAX_TIMESTAMP - 7, end)}
    assert (MAX_TIMESTAMP - 7, end) in fired


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"size": -1, "grace": 0}, r"size must be >= 0, got -1"),
        ({"size": -5, "grace": 0}, r"size must be >= 0, got -5"),
        ({"size": 10, "grace": -1}, r"grace must be >= 0, got -1"),
    ],
)
def test_bad_configuration(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        SlidingDistinctAssigner(**kwargs)


def test_grace_and_a_different_allowed_lateness_conflict() -> None:
    with pytest.raises(ValueError, match=r"allowed_lateness=3 differs from the grace 5 ms"):
        WindowOperatorHarness(SlidingDistinctAssigner(10, grace=5), Collect(), allowed_lateness=3)


def test_grace_is_the_allowed_lateness() -> None:
    h = WindowOperatorHarness(SlidingDistinctAssigner(10, grace=5), Collect())
    assert h.operator.allowed_lateness == 5
    h = WindowOperatorHarness(SlidingDistinctAssigner(10, grace=0), Collect(), allowed_lateness=4)
    assert h.operator.allowed_lateness == 4


@pytest.mark.parametrize("trigger", [None, OnWindowCloseTrigger(), OnWindowUpdateTrigger()])
def test_record_dropped_at_kafkas_close_boundary(trigger: Any) -> None:
    # Kafka (KStreamSlidingWindowAggregate.process) drops a record when
    # ts + 1 + size <= stream time - grace; the watermark here is stream time - 1. Record a
    # (ts 10, size 10, grace 5, stream time 26) is dropped: its right window [11;21], which
    # would hold b, is never created.
    h = WindowOperatorHarness(
        SlidingDistinctAssigner(10, grace=5),
        lambda x, y: x + "+" + y,
        trigger=trigger,
        late_output_tag=LATE,
    )
    stream_time = None
    for value, ts in [("b", 12), ("c", 26), ("a", 10), ("d", 100)]:
        h.process_element(value, ts, key="k")
        stream_time = ts if stream_time is None else max(stream_time, ts)
        h.process_watermark(stream_time - 1)
    h.process_watermark(MAX_TIMESTAMP)
    windows = {(s, e) for s, e, _ in inclusive(h.extract_output())}
    assert (11, 21) not in windows
    assert {(2, 12), (16, 26)} <= windows
    assert [e.value for e in h.extract_side_output(LATE)] == ["a"]
    # One millisecond later (a at 11) Kafka keeps the record: it is in no open window itself
    # (so it is a late record here too), but its right window [12;22] holding b is created.
    h2 = WindowOperatorHarness(
        SlidingDistinctAssigner(10, grace=5),
        lambda x, y: x + "+" + y,
        trigger=trigger,
        late_output_tag=LATE,
    )
    for value, ts in [("b", 12), ("c", 26), ("a", 11)]:
        h2.process_element(value, ts, key="k")
        h2.process_watermark(25)
    h2.process_watermark(MAX_TIMESTAMP)
    assert (12, 22, "b") in inclusive(h2.extract_output())
    assert [e.value for e in h2.extract_side_output(LATE)] == ["a"]


@pytest.mark.parametrize("trigger", [None, OnWindowCloseTrigger()])
def test_slicing_false_combines_in_arrival_order(trigger: Any) -> None:
    # Window [41;44] holds a (44) and then b (41). The timeline layout combines in time
    # order (b+a); slicing=False keeps per-window contents updated in arrival order (a+b),
    # as Kafka's aggregator and OnWindowUpdateTrigger's eager layout do.
    def final(slicing: bool) -> dict[tuple[int, int], Any]:
        h = WindowOperatorHarness(
            SlidingDistinctAssigner(3, grace=2),
            lambda x, y: x + "+" + y,
            trigger=trigger,
            slicing=slicing,
        )
        stream_time = 0
        for value, ts in [("a", 44), ("b", 41)]:
            h.process_element(value, ts, key="k")
            stream_time = max(stream_time, ts)
            h.process_watermark(stream_time - 1)
        h.process_watermark(MAX_TIMESTAMP)
        return {(s, e): v for s, e, v in inclusive(h.extract_output())}

    assert final(True)[(41, 44)] == "b+a"
    assert final(False)[(41, 44)] == "a+b"
    assert final(None)[(41, 44)] == "a+b"  # the default: arrival order, as Kafka


def test_default_is_kafkas_algorithm_even_for_declared_functions() -> None:
    """The timeline's windows are KIP-450's definition, not Kafka's algorithm (early
    records, closed windows): only an explicit slicing=True uses it."""

    class Sum(ReduceFunction[int]):
        order_insensitive = True

        def reduce(self, a: int, b: int) -> int:
            return a + b

    for function in (Sum(), lambda a, b: a + b):
        h = WindowOperatorHarness(SlidingDistinctAssigner(3, grace=0), function)
        assert not h.operator.slicing and h.plan.strategy is Strategy.KAFKA_SLIDING
    opted_in = WindowOperatorHarness(SlidingDistinctAssigner(3, grace=0), Sum(), slicing=True)
    assert opted_in.plan.strategy is Strategy.TIMELINE_DERIVED


def test_size_zero_groups_equal_timestamps() -> None:
    # Kafka accepts a time difference of 0 (SlidingWindows rejects only negatives): windows
    # [t;t] of the records with timestamp t, and right windows [t+1;t+1] that exist only when
    # a record has timestamp t + 1.
    h = run([("a", 5), ("b", 5), ("c", 6), ("d", 9)], size=0)
    h.process_watermark(MAX_TIMESTAMP)
    assert inclusive(h.extract_output()) == [
        (5, 5, ("a", "b")),
        (6, 6, ("c",)),
        (9, 9, ("d",)),
    ]
