"""Unit tests for the triggers, driven through TriggerHarness (after Flink's ``*TriggerTest``).

Every scenario ends with ``clear()`` of its windows and asserts that no timer and no state is
left behind.
"""

from __future__ import annotations

import operator
from typing import Any

import pytest

from windowing.state import (
    AggregatingStateDescriptor,
    ListStateDescriptor,
    MapStateDescriptor,
    ReducingStateDescriptor,
    ValueStateDescriptor,
)
from windowing.testing import TriggerHarness
from windowing.time import MAX_TIMESTAMP, MIN_TIMESTAMP
from windowing.triggers import (
    CountTrigger,
    EventTimeTrigger,
    NeverTrigger,
    ProcessingTimeTrigger,
    PurgingTrigger,
    Trigger,
    TriggerResult,
)
from windowing.windows import GLOBAL_WINDOW, TimeWindow

W = TimeWindow
CONTINUE = TriggerResult.CONTINUE
FIRE = TriggerResult.FIRE
PURGE = TriggerResult.PURGE
FIRE_AND_PURGE = TriggerResult.FIRE_AND_PURGE


def assert_clean(h: TriggerHarness, *windows: Any) -> None:
    """Clear ``windows`` and check that nothing is left."""
    for w in windows:
        h.clear(w)
    assert h.num_event_time_timers() == 0
    assert h.num_processing_time_timers() == 0
    assert h.num_state_entries() == 0


def names(fired: list[tuple[Any, TriggerResult]]) -> list[tuple[Any, str]]:
    return [(w, r.name) for w, r in fired]


# =========================================================================== TriggerResult


@pytest.mark.parametrize(
    ("result", "fire", "purge"),
    [
        (CONTINUE, False, False),
        (FIRE, True, False),
        (PURGE, False, True),
        (FIRE_AND_PURGE, True, True),
    ],
)
def test_trigger_result_flags(result: TriggerResult, fire: bool, purge: bool) -> None:
    assert result.is_fire() is fire
    assert result.is_purge() is purge


def test_trigger_results_are_distinct() -> None:
    assert len({CONTINUE, FIRE, PURGE, FIRE_AND_PURGE}) == 4


# =========================================================================== harness basics


def test_harness_starts_at_min_watermark_and_zero_processing_time() -> None:
    h = TriggerHarness(NeverTrigger())
    assert h.watermark == MIN_TIMESTAMP
    assert h.processing_time == 0


def test_harness_clocks_do_not_go_backwards() -> None:
    h = TriggerHarness(NeverTrigger())
    h.advance_watermark(5)
    h.advance_watermark(3)
    assert h.watermark == 5
    h.advance_processing_time(10)
    h.advance_processing_time(2)
    assert h.processing_time == 10


def test_harness_advance_with_no_timers_fires_nothing() -> None:
    h = TriggerHarness(EventTimeTrigger())
    assert h.advance_watermark(100) == []
    assert h.advance_processing_time(100) == []


# =========================================================================== EventTimeTrigger


def test_event_time_on_element_registers_timer_at_max_timestamp() -> None:
    h = TriggerHarness(EventTimeTrigger())
    assert h.process_element(1, 2, W(0, 2)) is CONTINUE
    assert h.process_element(1, 2, W(2, 4)) is CONTINUE
    assert h.num_event_time_timers() == 2
    assert h.num_event_time_timers(W(0, 2)) == 1
    assert h.num_event_time_timers(W(2, 4)) == 1
    assert h.num_processing_time_timers() == 0
    assert h.num_state_entries() == 0
    # Timer at max_timestamp (1): not yet at watermark 0, fires exactly at 1.
    assert h.advance_watermark(0) == []
    assert h.advance_watermark_for(1, W(0, 2)) is FIRE
    assert h.num_event_time_timers() == 1
    assert h.advance_watermark(2) == []
    assert h.advance_watermark_for(3, W(2, 4)) is FIRE
    assert_clean(h, W(0, 2), W(2, 4))


def test_event_time_duplicate_elements_register_one_timer() -> None:
    h = TriggerHarness(EventTimeTrigger())
    for ts in (0, 3, 9, 9):
        assert h.process_element("x", ts, W(0, 10)) is CONTINUE
    assert h.num_event_time_timers() == 1
    assert names(h.advance_watermark(9)) == [(W(0, 10), "FIRE")]
    assert h.advance_watermark(20) == []
    assert_clean(h, W(0, 10))


def test_event_time_does_not_fire_before_max_timestamp() -> None:
    h = TriggerHarness(EventTimeTrigger())
    h.process_element(1, 0, W(0, 5000))
    assert h.advance_watermark(4998) == []
    assert h.num_event_time_timers() == 1
    assert h.advance_watermark_for(4999, W(0, 5000)) is FIRE
    assert_clean(h, W(0, 5000))


def test_event_time_watermark_jump_fires_all_due_windows_in_time_order() -> None:
    h = TriggerHarness(EventTimeTrigger())
    h.process_element(1, 25, W(20, 30))
    h.process_element(1, 5, W(0, 10))
    h.process_element(1, 15, W(10, 20))
    assert names(h.advance_watermark(100)) == [
        (W(0, 10), "FIRE"),
        (W(10, 20), "FIRE"),
        (W(20, 30), "FIRE"),
    ]
    assert_clean(h, W(0, 10), W(10, 20), W(20, 30))


def test_event_time_late_element_fires_immediately() -> None:
    h = TriggerHarness(EventTimeTrigger())
    h.advance_watermark(2)
    assert h.process_element(1, 0, W(0, 2)) is FIRE  # max_timestamp 1 < watermark
    assert h.num_event_time_timers() == 0
    assert_clean(h, W(0, 2))


def test_event_time_element_when_watermark_equals_max_timestamp_fires() -> None:
    h = TriggerHarness(EventTimeTrigger())
    h.advance_watermark(9)
    assert h.process_element(1, 9, W(0, 10)) is FIRE
    assert h.num_event_time_timers() == 0
    # One millisecond before the end: a timer, no firing.
    assert h.process_element(1, 9, W(5, 11)) is CONTINUE
    assert h.num_event_time_timers(W(5, 11)) == 1
    assert h.advance_watermark_for(10, W(5, 11)) is FIRE
    assert_clean(h, W(0, 10), W(5, 11))


def test_event_time_on_event_time_fires_only_at_max_timestamp() -> None:
    h = TriggerHarness(EventTimeTrigger())
    assert h.invoke_on_event_time(9, W(0, 10)) is FIRE
    assert h.invoke_on_event_time(8, W(0, 10)) is CONTINUE
    assert h.invoke_on_event_time(10, W(0, 10)) is CONTINUE  # e.g. a cleanup timer
    assert h.invoke_on_event_time(1009, W(0, 10)) is CONTINUE
    assert_clean(h, W(0, 10))


def test_event_time_ignores_processing_time() -> None:
    h = TriggerHarness(EventTimeTrigger())
    h.process_element(1, 0, W(0, 10))
    assert h.invoke_on_processing_time(9, W(0, 10)) is CONTINUE
    assert h.advance_processing_time(1_000) == []
    assert h.num_event_time_timers() == 1
    assert_clean(h, W(0, 10))


def test_event_time_clear_deletes_timer() -> None:
    h = TriggerHarness(EventTimeTrigger())
    h.process_element(1, 0, W(0, 2))
    h.process_element(1, 2, W(2, 4))
    h.clear(W(2, 4))
    assert h.num_event_time_timers(W(2, 4)) == 0
    assert h.num_event_time_timers(W(0, 2)) == 1
    assert names(h.advance_watermark(10)) == [(W(0, 2), "FIRE")]
    assert_clean(h, W(0, 2))


def test_event_time_clear_then_register_again_fires_once() -> None:
    h = TriggerHarness(EventTimeTrigger())
    h.process_element(1, 0, W(0, 10))
    h.clear(W(0, 10))
    h.process_element(1, 0, W(0, 10))
    assert h.num_event_time_timers() == 1
    assert names(h.advance_watermark(9)) == [(W(0, 10), "FIRE")]
    assert_clean(h, W(0, 10))


def test_event_time_can_merge() -> None:
    assert EventTimeTrigger().can_merge() is True


def test_event_time_merging_registers_timer_for_merged_window() -> None:
    h = TriggerHarness(EventTimeTrigger(), is_merging=True)
    assert h.process_element(1, 0, W(0, 2)) is CONTINUE
    assert h.process_element(1, 2, W(2, 4)) is CONTINUE
    assert h.process_element(1, 4, W(4, 6)) is CONTINUE
    assert h.num_event_time_timers() == 3
    h.merge_windows(W(0, 4), [W(0, 2), W(2, 4)])
    assert h.num_event_time_timers() == 2
    assert h.num_event_time_timers(W(0, 2)) == 0
    assert h.num_event_time_timers(W(2, 4)) == 0
    assert h.num_event_time_timers(W(0, 4)) == 1
    assert h.num_event_time_timers(W(4, 6)) == 1
    assert h.advance_watermark(2) == []  # the old timer of W(0, 2) is gone
    assert h.advance_watermark_for(3, W(0, 4)) is FIRE
    assert h.advance_watermark_for(5, W(4, 6)) is FIRE
    assert_clean(h, W(0, 4), W(4, 6))


def test_event_time_merging_late_window_registers_no_timer() -> None:
    # The watermark is already past the merged window: the next element fires it, and a
    # timer here would fire it a second time.
    h = TriggerHarness(EventTimeTrigger(), is_merging=True)
    h.process_element(1, 0, W(0, 2))
    h.process_element(1, 2, W(2, 4))
    h.advance_watermark(1)  # fires W(0, 2)'s timer only
    h.advance_watermark(10)
    assert h.num_event_time_timers() == 0
    h.merge_windows(W(0, 4), [W(0, 2), W(2, 4)])
    assert h.num_event_time_timers() == 0
    assert h.process_element(1, 3, W(0, 4)) is FIRE
    assert_clean(h, W(0, 4))


def test_event_time_merging_at_watermark_equal_to_merged_max_registers_no_timer() -> None:
    h = TriggerHarness(EventTimeTrigger(), is_merging=True)
    h.advance_watermark(3)
    h.merge_windows(W(0, 4), [W(0, 2), W(2, 4)])
    assert h.num_event_time_timers() == 0
    assert_clean(h, W(0, 4))


def test_event_time_merging_one_before_merged_max_registers_timer() -> None:
    h = TriggerHarness(EventTimeTrigger(), is_merging=True)
    h.advance_watermark(2)
    h.merge_windows(W(0, 4), [W(0, 2), W(2, 4)])
    assert h.num_event_time_timers(W(0, 4)) == 1
    assert h.advance_watermark_for(3, W(0, 4)) is FIRE
    assert_clean(h, W(0, 4))


def test_event_time_window_ending_at_end_of_time() -> None:
    h = TriggerHarness(EventTimeTrigger())
    w = W(0, MAX_TIMESTAMP + 1)
    assert h.process_element(1, 0, w) is CONTINUE
    assert h.advance_watermark(MAX_TIMESTAMP - 1) == []
    assert h.advance_watermark_for(MAX_TIMESTAMP, w) is FIRE
    assert_clean(h, w)


def test_event_time_trigger_with_cleanup_timer_from_harness() -> None:
    # A cleanup timer (max_timestamp + allowed lateness) reaches the trigger as CONTINUE.
    h = TriggerHarness(EventTimeTrigger())
    h.process_element(1, 0, W(0, 10))
    h.register_event_time_timer(19, W(0, 10))
    assert h.num_event_time_timers(W(0, 10)) == 2
    assert h.advance_watermark_for(9, W(0, 10)) is FIRE
    assert h.advance_watermark_for(19, W(0, 10)) is CONTINUE
    assert_clean(h, W(0, 10))


# =========================================================================== ProcessingTimeTrigger


def test_processing_time_on_element_registers_timer() -> None:
    h = TriggerHarness(ProcessingTimeTrigger())
    assert h.process_element(1, None, W(0, 2)) is CONTINUE
    assert h.process_element(1, None, W(2, 4)) is CONTINUE
    assert h.num_processing_time_timers() == 2
    assert h.num_processing_time_timers(W(0, 2)) == 1
    assert h.num_event_time_timers() == 0
    assert h.num_state_entries() == 0
    assert h.advance_processing_time(0) == []
    assert h.advance_processing_time_for(1, W(0, 2)) is FIRE
    assert h.advance_processing_time(2) == []
    assert h.advance_processing_time_for(3, W(2, 4)) is FIRE
    assert_clean(h, W(0, 2), W(2, 4))


def test_processing_time_ignores_watermark_and_timestamp() -> None:
    h = TriggerHarness(ProcessingTimeTrigger())
    assert h.process_element(1, 1_000_000, W(0, 10)) is CONTINUE
    assert h.advance_watermark(1_000_000) == []
    assert h.invoke_on_event_time(9, W(0, 10)) is CONTINUE
    assert h.num_processing_time_timers() == 1
    assert_clean(h, W(0, 10))


def test_processing_time_element_after_window_end_fires_on_next_advance() -> None:
    h = TriggerHarness(ProcessingTimeTrigger())
    h.advance_processing_time(100)
    assert h.process_element(1, None, W(0, 10)) is CONTINUE
    assert h.num_processing_time_timers() == 1
    assert h.advance_processing_time_for(100, W(0, 10)) is FIRE
    assert_clean(h, W(0, 10))


def test_processing_time_on_processing_time_fires() -> None:
    h = TriggerHarness(ProcessingTimeTrigger())
    assert h.invoke_on_processing_time(9, W(0, 10)) is FIRE
    assert_clean(h, W(0, 10))


def test_processing_time_clear_deletes_timer() -> None:
    h = TriggerHarness(ProcessingTimeTrigger())
    h.process_element(1, None, W(0, 10))
    h.clear(W(0, 10))
    assert h.num_processing_time_timers() == 0
    assert h.advance_processing_time(100) == []
    assert_clean(h)


def test_processing_time_merging() -> None:
    h = TriggerHarness(ProcessingTimeTrigger(), is_merging=True)
    assert ProcessingTimeTrigger().can_merge() is True
    h.process_element(1, None, W(0, 2))
    h.process_element(1, None, W(2, 4))
    h.process_element(1, None, W(4, 6))
    h.merge_windows(W(0, 4), [W(0, 2), W(2, 4)])
    assert h.num_processing_time_timers() == 2
    assert h.num_processing_time_timers(W(0, 4)) == 1
    assert h.num_processing_time_timers(W(0, 2)) == 0
    assert h.advance_processing_time(2) == []
    assert h.advance_processing_time_for(3, W(0, 4)) is FIRE
    assert h.advance_processing_time_for(5, W(4, 6)) is FIRE
    assert_clean(h, W(0, 4), W(4, 6))


def test_processing_time_merging_past_window_registers_no_timer() -> None:
    h = TriggerHarness(ProcessingTimeTrigger(), is_merging=True)
    h.advance_processing_time(3)
    h.merge_windows(W(0, 4), [W(0, 2), W(2, 4)])
    assert h.num_processing_time_timers() == 0
    h.advance_processing_time(2)  # no effect: the clock never goes back
    assert h.processing_time == 3
    assert_clean(h, W(0, 4))


def test_processing_time_merging_before_window_end_registers_timer() -> None:
    h = TriggerHarness(ProcessingTimeTrigger(), is_merging=True)
    h.advance_processing_time(2)
    h.merge_windows(W(0, 4), [W(0, 2), W(2, 4)])
    assert h.num_processing_time_timers(W(0, 4)) == 1
    assert_clean(h, W(0, 4))


# =========================================================================== CountTrigger


def test_count_trigger_fires_every_n() -> None:
    h = TriggerHarness(CountTrigger(3))
    w = W(0, 10)
    results = [h.process_element(i, i, w) for i in range(7)]
    assert results == [CONTINUE, CONTINUE, FIRE, CONTINUE, CONTINUE, FIRE, CONTINUE]
    assert h.num_state_entries(w) == 1
    assert h.num_event_time_timers() == 0
    assert h.num_processing_time_timers() == 0
    assert_clean(h, w)


def test_count_trigger_clears_count_on_fire() -> None:
    h = TriggerHarness(CountTrigger(2))
    w = W(0, 10)
    h.process_element(1, 0, w)
    assert h.num_state_entries(w) == 1
    assert h.process_element(1, 0, w) is FIRE
    assert h.num_state_entries(w) == 0  # the count restarts
    assert h.process_element(1, 0, w) is CONTINUE
    assert h.num_state_entries(w) == 1
    assert_clean(h, w)


def test_count_trigger_of_one_fires_every_element() -> None:
    h = TriggerHarness(CountTrigger(1))
    for i in range(3):
        assert h.process_element(i, None, GLOBAL_WINDOW) is FIRE
        assert h.num_state_entries() == 0
    assert_clean(h, GLOBAL_WINDOW)


def test_count_trigger_counts_per_window() -> None:
    h = TriggerHarness(CountTrigger(2))
    assert h.process_element(1, 0, W(0, 2)) is CONTINUE
    assert h.process_element(1, 2, W(2, 4)) is CONTINUE
    assert h.num_state_entries() == 2
    assert h.num_state_entries(W(0, 2)) == 1
    assert h.process_element(1, 2, W(2, 4)) is FIRE
    assert h.num_state_entries(W(2, 4)) == 0
    assert h.num_state_entries(W(0, 2)) == 1
    assert h.process_element(1, 0, W(0, 2)) is FIRE
    assert_clean(h, W(0, 2), W(2, 4))


def test_count_trigger_ignores_timers() -> None:
    h = TriggerHarness(CountTrigger(2))
    h.process_element(1, 0, W(0, 2))
    assert h.invoke_on_event_time(1, W(0, 2)) is CONTINUE
    assert h.invoke_on_processing_time(1, W(0, 2)) is CONTINUE
    assert h.advance_watermark(100) == []
    assert h.num_state_entries(W(0, 2)) == 1  # timers do not reset the count
    assert h.process_element(1, 0, W(0, 2)) is FIRE
    assert_clean(h, W(0, 2))


def test_count_trigger_clear_removes_state() -> None:
    h = TriggerHarness(CountTrigger(3))
    h.process_element(1, 0, W(0, 2))
    h.process_element(1, 0, W(0, 2))
    h.clear(W(0, 2))
    assert h.num_state_entries() == 0
    # Counting starts from zero again.
    assert h.process_element(1, 0, W(0, 2)) is CONTINUE
    assert h.process_element(1, 0, W(0, 2)) is CONTINUE
    assert h.process_element(1, 0, W(0, 2)) is FIRE
    assert_clean(h, W(0, 2))


def test_count_trigger_merge_sums_counts() -> None:
    h = TriggerHarness(CountTrigger(3), is_merging=True)
    assert CountTrigger(3).can_merge() is True
    h.process_element(1, 0, W(0, 2))
    h.process_element(1, 2, W(2, 4))
    h.process_element(1, 4, W(4, 6))
    assert h.num_state_entries() == 3
    h.merge_windows(W(0, 4), [W(0, 2), W(2, 4)])
    assert h.num_state_entries() == 2
    assert h.num_state_entries(W(0, 4)) == 1
    assert h.num_state_entries(W(0, 2)) == 0
    assert h.num_state_entries(W(2, 4)) == 0
    assert h.process_element(1, 3, W(0, 4)) is FIRE  # 1 + 1 + 1
    assert h.process_element(1, 5, W(4, 6)) is CONTINUE  # 2 of 3
    assert_clean(h, W(0, 4), W(4, 6))


def test_count_trigger_merge_into_window_with_count() -> None:
    h = TriggerHarness(CountTrigger(5), is_merging=True)
    for _ in range(2):
        h.process_element(1, 0, W(0, 4))
    h.process_element(1, 4, W(4, 8))
    h.merge_windows(W(0, 8), [W(0, 4), W(4, 8)])
    assert h.num_state_entries() == 1
    assert h.process_element(1, 5, W(0, 8)) is CONTINUE  # 4
    assert h.process_element(1, 5, W(0, 8)) is FIRE  # 5
    assert_clean(h, W(0, 8))


def test_count_trigger_merged_count_beyond_max_fires_on_next_element() -> None:
    h = TriggerHarness(CountTrigger(3), is_merging=True)
    for w in (W(0, 2), W(2, 4)):
        h.process_element(1, 0, w)
        h.process_element(1, 0, w)
    h.merge_windows(W(0, 4), [W(0, 2), W(2, 4)])  # merged count 4 >= 3, but no firing yet
    assert h.process_element(1, 0, W(0, 4)) is FIRE
    assert h.num_state_entries() == 0
    assert_clean(h, W(0, 4))


def test_count_trigger_merge_of_windows_without_count() -> None:
    h = TriggerHarness(CountTrigger(2), is_merging=True)
    h.merge_windows(W(0, 4), [W(0, 2), W(2, 4)])
    assert h.num_state_entries() == 0
    assert_clean(h, W(0, 4))


def test_count_trigger_value_semantics() -> None:
    assert CountTrigger(3) == CountTrigger(3)
    assert CountTrigger(3) != CountTrigger(4)
    assert repr(CountTrigger(3)) == "CountTrigger(max_count=3)"


# =========================================================================== PurgingTrigger


def test_purging_count_trigger_fire_becomes_fire_and_purge() -> None:
    h = TriggerHarness(PurgingTrigger(CountTrigger(2)))
    w = W(0, 10)
    results = [h.process_element(i, 0, w) for i in range(4)]
    assert results == [CONTINUE, FIRE_AND_PURGE, CONTINUE, FIRE_AND_PURGE]
    assert_clean(h, w)


def test_purging_event_time_trigger() -> None:
    h = TriggerHarness(PurgingTrigger(EventTimeTrigger()))
    assert h.process_element(1, 0, W(0, 2)) is CONTINUE
    assert h.process_element(1, 2, W(2, 4)) is CONTINUE
    assert h.num_event_time_timers() == 2
    assert h.advance_watermark_for(1, W(0, 2)) is FIRE_AND_PURGE
    assert h.invoke_on_event_time(2, W(2, 4)) is CONTINUE
    assert h.advance_watermark_for(3, W(2, 4)) is FIRE_AND_PURGE
    # A late element fires (and purges) at once.
    assert h.process_element(1, 0, W(0, 2)) is FIRE_AND_PURGE
    assert_clean(h, W(0, 2), W(2, 4))


def test_purging_processing_time_trigger() -> None:
    h = TriggerHarness(PurgingTrigger(ProcessingTimeTrigger()))
    assert h.process_element(1, None, W(0, 2)) is CONTINUE
    assert h.num_processing_time_timers() == 1
    assert h.advance_processing_time_for(1, W(0, 2)) is FIRE_AND_PURGE
    assert h.invoke_on_event_time(1, W(0, 2)) is CONTINUE
    assert_clean(h, W(0, 2))


class Scripted(Trigger[Any, Any]):
    """Returns the element as the result of on_element; timers return fixed results."""

    def on_element(self, element: Any, timestamp: Any, window: Any, ctx: Any) -> TriggerResult:
        return element  # type: ignore[no-any-return]

    def on_event_time(self, time: int, window: Any, ctx: Any) -> TriggerResult:
        return PURGE

    def on_processing_time(self, time: int, window: Any, ctx: Any) -> TriggerResult:
        return FIRE

    def clear(self, window: Any, ctx: Any) -> None:
        return None


@pytest.mark.parametrize(
    ("inner", "outer"),
    [
        (CONTINUE, CONTINUE),
        (FIRE, FIRE_AND_PURGE),
        (PURGE, PURGE),
        (FIRE_AND_PURGE, FIRE_AND_PURGE),
    ],
)
def test_purging_maps_each_result(inner: TriggerResult, outer: TriggerResult) -> None:
    h = TriggerHarness(PurgingTrigger(Scripted()))
    assert h.process_element(inner, 0, W(0, 1)) is outer
    assert_clean(h, W(0, 1))


def test_purging_maps_timer_results() -> None:
    h = TriggerHarness(PurgingTrigger(Scripted()))
    assert h.invoke_on_event_time(0, W(0, 1)) is PURGE
    assert h.invoke_on_processing_time(0, W(0, 1)) is FIRE_AND_PURGE
    assert_clean(h, W(0, 1))


def test_purging_delegates_can_merge() -> None:
    assert PurgingTrigger(CountTrigger(2)).can_merge() is True
    assert PurgingTrigger(EventTimeTrigger()).can_merge() is True
    assert PurgingTrigger(Scripted()).can_merge() is False


def test_purging_of_non_merging_trigger_cannot_merge() -> None:
    h = TriggerHarness(PurgingTrigger(Scripted()), is_merging=True)
    with pytest.raises(NotImplementedError, match=r"does not support merging"):
        h.merge_windows(W(0, 4), [W(0, 2), W(2, 4)])


def test_purging_delegates_merge() -> None:
    h = TriggerHarness(PurgingTrigger(CountTrigger(3)), is_merging=True)
    h.process_element(1, 0, W(0, 2))
    h.process_element(1, 2, W(2, 4))
    h.merge_windows(W(0, 4), [W(0, 2), W(2, 4)])
    assert h.num_state_entries() == 1
    assert h.num_state_entries(W(0, 4)) == 1
    assert h.process_element(1, 3, W(0, 4)) is FIRE_AND_PURGE
    assert_clean(h, W(0, 4))


def test_purging_delegates_merge_timers() -> None:
    h = TriggerHarness(PurgingTrigger(EventTimeTrigger()), is_merging=True)
    h.process_element(1, 0, W(0, 2))
    h.process_element(1, 2, W(2, 4))
    h.merge_windows(W(0, 4), [W(0, 2), W(2, 4)])
    assert h.num_event_time_timers() == 1
    assert h.advance_watermark_for(3, W(0, 4)) is FIRE_AND_PURGE
    assert_clean(h, W(0, 4))


def test_purging_delegates_clear() -> None:
    h = TriggerHarness(PurgingTrigger(CountTrigger(5)))
    h.process_element(1, 0, W(0, 2))
    assert h.num_state_entries() == 1
    h.clear(W(0, 2))
    assert h.num_state_entries() == 0
    h2 = TriggerHarness(PurgingTrigger(EventTimeTrigger()))
    h2.process_element(1, 0, W(0, 2))
    h2.clear(W(0, 2))
    assert h2.num_event_time_timers() == 0
    assert_clean(h, W(0, 2))
    assert_clean(h2, W(0, 2))


def test_purging_of_purging_is_still_fire_and_purge() -> None:
    h = TriggerHarness(PurgingTrigger(PurgingTrigger(CountTrigger(1))))
    assert h.process_element(1, None, GLOBAL_WINDOW) is FIRE_AND_PURGE
    assert_clean(h, GLOBAL_WINDOW)


def test_purging_value_semantics() -> None:
    assert PurgingTrigger(CountTrigger(2)) == PurgingTrigger(CountTrigger(2))
    assert PurgingTrigger(CountTrigger(2)) != PurgingTrigger(CountTrigger(3))
    expected = "PurgingTrigger(trigger=CountTrigger(max_count=2))"
    assert repr(PurgingTrigger(CountTrigger(2))) == expected


# =========================================================================== NeverTrigger


def test_never_trigger_never_fires() -> None:
    h = TriggerHarness(NeverTrigger())
    for i in range(5):
        assert h.process_element(i, i, GLOBAL_WINDOW) is CONTINUE
    assert h.invoke_on_event_time(MAX_TIMESTAMP, GLOBAL_WINDOW) is CONTINUE
    assert h.invoke_on_processing_time(MAX_TIMESTAMP, GLOBAL_WINDOW) is CONTINUE
    assert h.advance_watermark(MAX_TIMESTAMP) == []
    assert h.advance_processing_time(MAX_TIMESTAMP) == []
    assert h.num_event_time_timers() == 0
    assert h.num_state_entries() == 0
    assert_clean(h, GLOBAL_WINDOW)


def test_never_trigger_merges_as_noop() -> None:
    h = TriggerHarness(NeverTrigger(), is_merging=True)
    assert NeverTrigger().can_merge() is True
    h.process_element(1, 0, W(0, 2))
    h.merge_windows(W(0, 4), [W(0, 2), W(2, 4)])
    assert h.process_element(1, 0, W(0, 4)) is CONTINUE
    assert_clean(h, W(0, 4))


def test_trigger_reprs() -> None:
    assert repr(EventTimeTrigger()) == "EventTimeTrigger()"
    assert repr(NeverTrigger()) == "NeverTrigger()"
    assert repr(ProcessingTimeTrigger()) == "ProcessingTimeTrigger()"


def test_default_trigger_cannot_merge() -> None:
    t = Scripted()
    assert t.can_merge() is False
    with pytest.raises(NotImplementedError):
        t.on_merge(W(0, 1), None)  # type: ignore[arg-type]


# =========================================================================== custom triggers


class DeltaTrigger(Trigger[Any, Any]):
    """Fires when an element differs from the last fired-on value by >= threshold (ValueState)."""

    LAST = ValueStateDescriptor("last")

    def __init__(self, threshold: int) -> None:
        self.threshold = threshold

    def on_element(self, element: Any, timestamp: Any, window: Any, ctx: Any) -> TriggerResult:
        last = ctx.get_partitioned_state(self.LAST)
        if last.value() is None:
            last.update(element)
            return CONTINUE
        if abs(element - last.value()) >= self.threshold:
            last.update(element)
            return FIRE
        return CONTINUE

    def on_event_time(self, time: int, window: Any, ctx: Any) -> TriggerResult:
        return CONTINUE

    def on_processing_time(self, time: int, window: Any, ctx: Any) -> TriggerResult:
        return CONTINUE

    def clear(self, window: Any, ctx: Any) -> None:
        ctx.get_partitioned_state(self.LAST).clear()


def test_custom_value_state_trigger() -> None:
    h = TriggerHarness(DeltaTrigger(10))
    w = W(0, 100)
    assert h.process_element(5, 0, w) is CONTINUE
    assert h.num_state_entries(w) == 1
    assert h.process_element(14, 1, w) is CONTINUE
    assert h.process_element(15, 2, w) is FIRE
    assert h.process_element(20, 3, w) is CONTINUE
    assert h.process_element(4, 4, w) is FIRE
    assert h.process_element(100, 0, W(100, 200)) is CONTINUE  # other window: its own state
    assert h.num_state_entries() == 2
    assert_clean(h, w, W(100, 200))


class FlushMarkerTrigger(Trigger[Any, Any]):
    """Keeps elements in ListState; fires (and forgets them) on the element "flush".

    What was flushed is appended to ``flushed`` so that tests can inspect it.
    """

    SEEN = ListStateDescriptor("seen")

    def __init__(self) -> None:
        self.flushed: list[list[Any]] = []

    def on_element(self, element: Any, timestamp: Any, window: Any, ctx: Any) -> TriggerResult:
        seen = ctx.get_partitioned_state(self.SEEN)
        if element == "flush":
            if not seen.get():
                return CONTINUE
            self.flushed.append(seen.get())
            seen.clear()
            return FIRE
        seen.add(element)
        return CONTINUE

    def on_event_time(self, time: int, window: Any, ctx: Any) -> TriggerResult:
        return CONTINUE

    def on_processing_time(self, time: int, window: Any, ctx: Any) -> TriggerResult:
        return CONTINUE

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window: Any, ctx: Any) -> None:
        ctx.merge_partitioned_state(self.SEEN)

    def clear(self, window: Any, ctx: Any) -> None:
        ctx.get_partitioned_state(self.SEEN).clear()


def test_custom_list_state_trigger() -> None:
    trigger = FlushMarkerTrigger()
    h = TriggerHarness(trigger)
    w = W(0, 10)
    assert h.process_element("flush", 0, w) is CONTINUE  # nothing to flush
    assert h.num_state_entries() == 0
    assert h.process_element("a", 0, w) is CONTINUE
    assert h.process_element("b", 0, w) is CONTINUE
    assert h.process_element("z", 0, W(10, 20)) is CONTINUE
    assert h.num_state_entries(w) == 1
    assert h.process_element("flush", 0, w) is FIRE
    assert trigger.flushed == [["a", "b"]]
    assert h.num_state_entries(w) == 0
    h.process_element("c", 0, w)
    assert_clean(h, w, W(10, 20))


def test_custom_list_state_trigger_merges_lists() -> None:
    trigger = FlushMarkerTrigger()
    h = TriggerHarness(trigger, is_merging=True)
    h.process_element("t", 0, W(0, 4))
    h.process_element("a", 0, W(0, 2))
    h.process_element("b", 2, W(2, 4))
    h.merge_windows(W(0, 4), [W(0, 2), W(2, 4)])
    assert h.num_state_entries() == 1
    assert h.num_state_entries(W(0, 4)) == 1
    assert h.process_element("flush", 3, W(0, 4)) is FIRE
    assert trigger.flushed == [["t", "a", "b"]]
    assert_clean(h, W(0, 4))


class DistinctTrigger(Trigger[Any, Any]):
    """Fires once ``n`` distinct elements were seen since the last firing (MapState)."""

    SEEN = MapStateDescriptor("distinct")

    def __init__(self, n: int) -> None:
        self.n = n

    def on_element(self, element: Any, timestamp: Any, window: Any, ctx: Any) -> TriggerResult:
        seen = ctx.get_partitioned_state(self.SEEN)
        seen.put(element, (seen.get(element) or 0) + 1)
        if len(list(seen.keys())) >= self.n:
            for k in seen.keys():  # noqa: SIM118 - MapState is not iterable
                seen.remove(k)
            return FIRE
        return CONTINUE

    def on_event_time(self, time: int, window: Any, ctx: Any) -> TriggerResult:
        return CONTINUE

    def on_processing_time(self, time: int, window: Any, ctx: Any) -> TriggerResult:
        return CONTINUE

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window: Any, ctx: Any) -> None:
        ctx.merge_partitioned_state(self.SEEN)  # map state is not mergeable

    def clear(self, window: Any, ctx: Any) -> None:
        ctx.get_partitioned_state(self.SEEN).clear()


def test_custom_map_state_trigger() -> None:
    h = TriggerHarness(DistinctTrigger(3))
    w = W(0, 10)
    assert [h.process_element(e, 0, w) for e in "aabab"] == [CONTINUE] * 5
    assert h.num_state_entries(w) == 1
    assert h.process_element("c", 0, w) is FIRE
    assert h.num_state_entries() == 0  # removing the last key removes the entry
    assert h.process_element("a", 0, w) is CONTINUE
    assert_clean(h, w)


def test_custom_trigger_merging_map_state_raises() -> None:
    h = TriggerHarness(DistinctTrigger(3), is_merging=True)
    h.process_element("a", 0, W(0, 2))
    h.process_element("b", 2, W(2, 4))
    with pytest.raises(ValueError, match=r"'distinct' \(MapStateDescriptor\) is not mergeable"):
        h.merge_windows(W(0, 4), [W(0, 2), W(2, 4)])
    assert_clean(h, W(0, 2), W(2, 4), W(0, 4))


class Mean:
    """A duck-typed aggregate function: running mean."""

    def create_accumulator(self) -> tuple[int, int]:
        return (0, 0)

    def add(self, value: int, acc: tuple[int, int]) -> tuple[int, int]:
        return (acc[0] + value, acc[1] + 1)

    def get_result(self, acc: tuple[int, int]) -> float:
        return acc[0] / acc[1]

    def merge(self, a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
        return (a[0] + b[0], a[1] + b[1])


class MeanAboveTrigger(Trigger[Any, Any]):
    """Fires when the running mean reaches ``limit`` (AggregatingState); also at window end."""

    MEAN = AggregatingStateDescriptor("mean", Mean())

    def __init__(self, limit: float) -> None:
        self.limit = limit

    def on_element(self, element: Any, timestamp: Any, window: Any, ctx: Any) -> TriggerResult:
        mean = ctx.get_partitioned_state(self.MEAN)
        mean.add(element)
        ctx.register_event_time_timer(window.max_timestamp())
        return FIRE if mean.get() >= self.limit else CONTINUE

    def on_event_time(self, time: int, window: Any, ctx: Any) -> TriggerResult:
        return FIRE_AND_PURGE if time == window.max_timestamp() else CONTINUE

    def on_processing_time(self, time: int, window: Any, ctx: Any) -> TriggerResult:
        return CONTINUE

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window: Any, ctx: Any) -> None:
        ctx.merge_partitioned_state(self.MEAN)
        ctx.register_event_time_timer(window.max_timestamp())

    def clear(self, window: Any, ctx: Any) -> None:
        ctx.get_partitioned_state(self.MEAN).clear()
        ctx.delete_event_time_timer(window.max_timestamp())


def test_custom_aggregating_state_trigger() -> None:
    h = TriggerHarness(MeanAboveTrigger(5))
    w = W(0, 10)
    assert h.process_element(2, 0, w) is CONTINUE
    assert h.process_element(4, 1, w) is CONTINUE  # mean 3
    assert h.process_element(12, 2, w) is FIRE  # mean 6
    assert h.num_state_entries(w) == 1
    assert h.num_event_time_timers(w) == 1
    assert h.advance_watermark_for(9, w) is FIRE_AND_PURGE
    assert_clean(h, w)


def test_custom_aggregating_state_trigger_merges_accumulators() -> None:
    h = TriggerHarness(MeanAboveTrigger(5), is_merging=True)
    h.process_element(1, 0, W(0, 2))
    h.process_element(7, 2, W(2, 4))  # mean of that window alone is 7: fires
    h.merge_windows(W(0, 4), [W(0, 2), W(2, 4)])
    assert h.num_state_entries() == 1
    assert h.num_event_time_timers() == 1
    assert h.num_event_time_timers(W(0, 4)) == 1
    assert h.process_element(4, 3, W(0, 4)) is CONTINUE  # (1 + 7 + 4) / 3 = 4
    assert h.process_element(8, 3, W(0, 4)) is FIRE  # 20 / 4 = 5
    assert_clean(h, W(0, 4))


class EarlyFiringTrigger(Trigger[Any, Any]):
    """Fires at window end (event time) and early every ``interval`` of processing time."""

    NEXT = ValueStateDescriptor("next-early-firing")

    def __init__(self, interval: int) -> None:
        self.interval = interval

    def on_element(self, element: Any, timestamp: Any, window: Any, ctx: Any) -> TriggerResult:
        ctx.register_event_time_timer(window.max_timestamp())
        nxt = ctx.get_partitioned_state(self.NEXT)
        if nxt.value() is None:
            t = ctx.get_current_processing_time() + self.interval
            nxt.update(t)
            ctx.register_processing_time_timer(t)
        return CONTINUE

    def on_event_time(self, time: int, window: Any, ctx: Any) -> TriggerResult:
        return FIRE if time == window.max_timestamp() else CONTINUE

    def on_processing_time(self, time: int, window: Any, ctx: Any) -> TriggerResult:
        ctx.get_partitioned_state(self.NEXT).clear()
        return FIRE

    def clear(self, window: Any, ctx: Any) -> None:
        ctx.delete_event_time_timer(window.max_timestamp())
        nxt = ctx.get_partitioned_state(self.NEXT)
        if nxt.value() is not None:
            ctx.delete_processing_time_timer(nxt.value())
        nxt.clear()


def test_custom_trigger_with_both_timer_kinds() -> None:
    h = TriggerHarness(EarlyFiringTrigger(100))
    w = W(0, 1_000)
    h.advance_processing_time(50)
    assert h.process_element(1, 0, w) is CONTINUE
    assert h.process_element(1, 0, w) is CONTINUE
    assert h.num_event_time_timers(w) == 1
    assert h.num_processing_time_timers(w) == 1
    assert h.num_state_entries(w) == 1
    assert h.advance_processing_time(149) == []
    assert h.advance_processing_time_for(150, w) is FIRE
    assert h.num_state_entries(w) == 0
    h.process_element(1, 0, w)  # schedules the next early firing at 250
    assert h.num_processing_time_timers(w) == 1
    assert h.advance_watermark_for(999, w) is FIRE
    assert_clean(h, w)
    assert h.advance_processing_time(10_000) == []


def test_custom_trigger_reads_clocks_through_context() -> None:
    seen: list[tuple[int, int]] = []

    class Spy(Scripted):
        def on_element(self, element: Any, timestamp: Any, window: Any, ctx: Any) -> TriggerResult:
            seen.append((ctx.get_current_watermark(), ctx.get_current_processing_time()))
            return CONTINUE

    h = TriggerHarness(Spy())
    h.process_element(1, 0, W(0, 1))
    h.advance_watermark(42)
    h.advance_processing_time(7)
    h.process_element(1, 0, W(0, 1))
    assert seen == [(MIN_TIMESTAMP, 0), (42, 7)]
    assert_clean(h, W(0, 1))


def test_trigger_state_is_scoped_per_window() -> None:
    count = ReducingStateDescriptor("count", operator.add)

    class SumAtLeastFive(Scripted):
        def on_element(self, element: Any, timestamp: Any, window: Any, ctx: Any) -> TriggerResult:
            total = ctx.get_partitioned_state(count)
            total.add(element)
            return FIRE if total.get() >= 5 else CONTINUE

        def clear(self, window: Any, ctx: Any) -> None:
            ctx.get_partitioned_state(count).clear()

    h = TriggerHarness(SumAtLeastFive())
    assert h.process_element(1, 0, W(0, 1)) is CONTINUE
    assert h.process_element(4, 0, W(1, 2)) is CONTINUE
    assert h.process_element(3, 0, W(0, 1)) is CONTINUE  # 4 in this window, not 8
    assert h.process_element(1, 0, W(1, 2)) is FIRE  # 5
    assert h.process_element(1, 0, W(0, 1)) is FIRE  # 5
    assert h.num_state_entries() == 2
    assert_clean(h, W(0, 1), W(1, 2))


# =========================================================================== harness helpers


def test_advance_watermark_for_requires_a_firing() -> None:
    h = TriggerHarness(EventTimeTrigger())
    h.process_element(1, 0, W(0, 10))
    with pytest.raises(AssertionError, match=r"expected exactly one firing.*got \[\]"):
        h.advance_watermark_for(5, W(0, 10))
    assert h.num_event_time_timers() == 1
    assert_clean(h, W(0, 10))


def test_advance_watermark_for_rejects_two_firings() -> None:
    h = TriggerHarness(EventTimeTrigger())
    h.process_element(1, 0, W(0, 2))
    h.process_element(1, 2, W(2, 4))
    with pytest.raises(AssertionError, match=r"expected exactly one firing"):
        h.advance_watermark_for(10, W(0, 2))
    assert h.num_event_time_timers() == 0  # both timers did fire
    assert_clean(h, W(0, 2), W(2, 4))


def test_advance_watermark_for_rejects_firing_of_other_window() -> None:
    h = TriggerHarness(EventTimeTrigger())
    h.process_element(1, 0, W(0, 2))
    with pytest.raises(AssertionError, match=r"of window TimeWindow\(start=2, end=4\)"):
        h.advance_watermark_for(1, W(2, 4))
    assert_clean(h, W(0, 2))


def test_advance_processing_time_for_requires_exactly_one_firing() -> None:
    h = TriggerHarness(ProcessingTimeTrigger())
    with pytest.raises(AssertionError, match=r"expected exactly one firing"):
        h.advance_processing_time_for(5, W(0, 10))
    h.process_element(1, None, W(0, 2))
    h.process_element(1, None, W(0, 3))
    with pytest.raises(AssertionError, match=r"expected exactly one firing"):
        h.advance_processing_time_for(5, W(0, 2))
    assert_clean(h, W(0, 2), W(0, 3))


def test_invoke_on_event_time_needs_no_timer() -> None:
    h = TriggerHarness(EventTimeTrigger())
    assert h.invoke_on_event_time(3, W(0, 4)) is FIRE
    assert h.num_event_time_timers() == 0
    assert h.watermark == MIN_TIMESTAMP  # invoking does not move the watermark
    assert_clean(h, W(0, 4))


def test_register_event_time_timer_helper() -> None:
    h = TriggerHarness(NeverTrigger())
    h.register_event_time_timer(10, W(0, 5))
    h.register_event_time_timer(10, W(0, 5))  # deduplicated
    h.register_event_time_timer(7, W(5, 10))
    assert h.num_event_time_timers() == 2
    assert h.num_event_time_timers(W(0, 5)) == 1
    assert names(h.advance_watermark(10)) == [(W(5, 10), "CONTINUE"), (W(0, 5), "CONTINUE")]
    assert_clean(h)


def test_register_event_time_timer_fires_event_time_trigger_at_max_timestamp() -> None:
    h = TriggerHarness(EventTimeTrigger())
    h.register_event_time_timer(4, W(0, 5))
    assert h.advance_watermark_for(4, W(0, 5)) is FIRE
    assert_clean(h, W(0, 5))


def test_clear_of_unknown_window_is_harmless() -> None:
    for trigger in (EventTimeTrigger(), ProcessingTimeTrigger(), CountTrigger(2), NeverTrigger()):
        h = TriggerHarness(trigger)
        assert_clean(h, W(0, 10), GLOBAL_WINDOW)
