"""Unit tests for the continuous, delta and timeout triggers (after Flink's
``ContinuousEventTimeTriggerTest``, ``ContinuousProcessingTimeTriggerTest`` and
``ProcessingTimeoutTriggerTest``), through TriggerHarness and WindowOperatorHarness.

Every scenario ends by clearing its windows (or letting the operator clean them up) and
asserting that no timer and no state is left.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import timedelta
from typing import Any

import cloudpickle
import pytest

from windowing import triggers
from windowing.assigners import (
    EventTimeSessionWindows,
    GlobalWindows,
    ProcessingTimeSessionWindows,
    TumblingProcessingTimeWindows,
)
from windowing.functions import WindowFunction
from windowing.testing import TriggerHarness, WindowOperatorHarness
from windowing.time import MAX_TIMESTAMP
from windowing.triggers import (
    ContinuousEventTimeTrigger,
    ContinuousProcessingTimeTrigger,
    CountTrigger,
    DeltaTrigger,
    EventTimeTrigger,
    ProcessingTimeoutTrigger,
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
HOUR = 3_600_000


def assert_clean(h: TriggerHarness, *windows: Any) -> None:
    """Clear ``windows`` and check that nothing is left."""
    for w in windows:
        h.clear(w)
    assert h.num_event_time_timers() == 0
    assert h.num_processing_time_timers() == 0
    assert h.num_state_entries() == 0


def assert_operator_clean(h: WindowOperatorHarness) -> None:
    assert h.num_event_time_timers() == 0
    assert h.num_processing_time_timers() == 0
    assert h.num_state_entries() == 0
    assert h.num_keys() == 0


def names(fired: list[tuple[Any, TriggerResult]]) -> list[tuple[Any, str]]:
    return [(w, r.name) for w, r in fired]


class SumApply(WindowFunction[int, int, Any, Any]):
    def apply(self, key: Any, window: Any, elements: Iterable[int]) -> Iterable[int]:
        return [sum(elements)]


def outputs(h: WindowOperatorHarness) -> list[tuple[Any, int, int]]:
    return [(r.window, r.value, r.timestamp) for r in h.extract_output()]


# =========================================================================== continuous event


def test_continuous_event_time_handles_timer_calls_without_state() -> None:
    """testTriggerHandlesAllOnTimerCalls: a late element creates no state; a GC timer firing
    afterwards must not fail."""
    h = TriggerHarness(ContinuousEventTimeTrigger(5))
    h.advance_watermark(10)
    assert h.process_element(1, 0, W(0, 2)) is FIRE
    assert h.num_state_entries() == 0
    assert h.invoke_on_event_time(20, W(0, 2)) is CONTINUE
    assert_clean(h, W(0, 2))


def test_continuous_event_time_window_separation_and_firing() -> None:
    """testWindowSeparationAndFiring with today's cap: an interval longer than the window
    puts the fire time at the window end, the same timer as the end-of-window timer."""
    h = TriggerHarness(ContinuousEventTimeTrigger(HOUR))
    for _ in range(3):
        assert h.process_element(1, 0, W(0, 2)) is CONTINUE
    for _ in range(2):
        assert h.process_element(1, 2, W(2, 4)) is CONTINUE
    assert h.num_state_entries() == 2
    assert h.num_event_time_timers(W(0, 2)) == 1  # fire time min(0 + 1h, 1) == end == 1
    assert h.num_event_time_timers(W(2, 4)) == 1
    assert names(h.advance_watermark(2)) == [(W(0, 2), "FIRE")]
    assert h.num_event_time_timers() == 1
    assert names(h.advance_watermark(4)) == [(W(2, 4), "FIRE")]
    assert h.num_event_time_timers() == 0
    assert h.num_state_entries() == 2  # the fire times stay until clear
    assert_clean(h, W(0, 2), W(2, 4))


def test_continuous_event_time_late_element_fires_without_timer_or_state() -> None:
    """testLateElementTriggersImmediately."""
    h = TriggerHarness(ContinuousEventTimeTrigger(HOUR))
    h.advance_watermark(2)
    assert h.process_element(1, 0, W(0, 2)) is FIRE
    assert (h.num_state_entries(), h.num_event_time_timers()) == (0, 0)
    assert_clean(h)


def test_continuous_event_time_fires_every_interval_then_at_the_end() -> None:
    h = TriggerHarness(ContinuousEventTimeTrigger(4))
    w = W(0, 10)
    assert h.process_element("a", 1, w) is CONTINUE  # timers: 4 (interval), 9 (end)
    assert h.num_event_time_timers(w) == 2
    assert h.process_element("b", 2, w) is CONTINUE  # a pending fire time: nothing new
    assert h.num_event_time_timers(w) == 2
    assert h.advance_watermark(3) == []
    assert h.advance_watermark_for(4, w) is FIRE
    assert h.num_event_time_timers(w) == 2  # 8 and 9
    assert h.advance_watermark(7) == []
    assert h.advance_watermark_for(8, w) is FIRE  # next: min(12, 9) == 9, the end timer
    assert h.num_event_time_timers(w) == 1
    assert h.advance_watermark_for(9, w) is FIRE
    assert h.advance_watermark(100) == []
    assert_clean(h, w)


def test_continuous_event_time_first_fire_is_aligned_to_the_interval() -> None:
    h = TriggerHarness(ContinuousEventTimeTrigger(4))
    w = W(0, 100)
    h.process_element("a", 6, w)  # 6 - 6 % 4 + 4 == 8
    assert h.advance_watermark(7) == []
    assert h.advance_watermark_for(8, w) is FIRE
    h.process_element("b", 8, w)  # exactly on a boundary: the pending 12 stays
    assert h.advance_watermark(11) == []
    assert h.advance_watermark_for(12, w) is FIRE
    assert_clean(h, w)


def test_continuous_event_time_negative_timestamps_align_as_java() -> None:
    # Flink's Java trigger: -3 - (-3 % 4) + 4 == 4 with Java's truncating %
    # (a floor-mod would give -4 + 4 == 0).
    h = TriggerHarness(ContinuousEventTimeTrigger(4))
    w = W(-10, 10)
    h.process_element("a", -3, w)
    assert h.advance_watermark(3) == []
    assert h.advance_watermark_for(4, w) is FIRE
    assert h.advance_watermark_for(8, w) is FIRE
    assert h.advance_watermark_for(9, w) is FIRE
    assert_clean(h, w)


@pytest.mark.parametrize(
    ("ts", "first"), [(-8, -4), (-5, 0), (-4, 0), (-1, 4), (0, 4), (3, 4), (-12, -8)]
)
def test_continuous_event_time_first_firing_for_negative_times(ts: int, first: int) -> None:
    """Java: ts - ts % 4 + 4, with % truncated toward zero."""
    h = TriggerHarness(ContinuousEventTimeTrigger(4))
    w = W(-100, 100)
    h.process_element("a", ts, w)
    assert h.advance_watermark(first - 1) == []
    assert h.advance_watermark_for(first, w) is FIRE


def test_continuous_event_time_watermark_jump_fires_each_interval_once() -> None:
    h = TriggerHarness(ContinuousEventTimeTrigger(4))
    w = W(0, 10)
    h.process_element("a", 1, w)
    assert names(h.advance_watermark(100)) == [(w, "FIRE")] * 3  # at 4, 8 and 9
    assert_clean(h, w)


def test_continuous_event_time_on_global_window_fires_forever() -> None:
    h = TriggerHarness(ContinuousEventTimeTrigger(10))
    h.process_element("a", 5, GLOBAL_WINDOW)
    assert h.num_event_time_timers() == 2  # 10 and MAX_TIMESTAMP
    assert names(h.advance_watermark(35)) == [(GLOBAL_WINDOW, "FIRE")] * 3  # 10, 20, 30
    assert h.num_event_time_timers() == 2  # 40 and MAX_TIMESTAMP
    assert h.invoke_on_event_time(MAX_TIMESTAMP, GLOBAL_WINDOW) is FIRE
    assert_clean(h, GLOBAL_WINDOW)


def test_continuous_event_time_timer_other_than_fire_time_continues() -> None:
    h = TriggerHarness(ContinuousEventTimeTrigger(4))
    w = W(0, 10)
    h.process_element("a", 1, w)
    assert h.invoke_on_event_time(3, w) is CONTINUE
    assert h.invoke_on_processing_time(4, w) is CONTINUE
    assert_clean(h, w)


def test_continuous_event_time_clear_deletes_fire_time_and_end_timers() -> None:
    """testClear; unlike Flink, clear also deletes the end-of-window timer."""
    h = TriggerHarness(ContinuousEventTimeTrigger(5))
    h.process_element(1, 0, W(0, 20))  # 5 and 19
    h.process_element(1, 22, W(20, 40))  # 25 and 39
    assert h.num_event_time_timers() == 4
    h.clear(W(20, 40))
    assert h.num_event_time_timers(W(20, 40)) == 0
    assert h.num_state_entries() == 1
    assert h.num_event_time_timers(W(0, 20)) == 2
    assert_clean(h, W(0, 20))


def test_continuous_event_time_merging_keeps_the_earliest_fire_time() -> None:
    """testMergingWindows, with interval 5 inside the windows."""
    h = TriggerHarness(ContinuousEventTimeTrigger(5), is_merging=True)
    assert ContinuousEventTimeTrigger(5).can_merge()
    h.process_element(1, 7, W(7, 20))  # fire time 10
    h.process_element(1, 1, W(1, 12))  # fire time 5
    assert h.num_event_time_timers() == 4
    h.merge_windows(W(1, 20), [W(1, 12), W(7, 20)])
    assert h.num_state_entries() == 1
    assert h.num_event_time_timers(W(1, 20)) == 1
    # As in Flink, the fire-time timers of the merged-away windows stay (their fire times
    # were merged away before clear could see them); they fire into nothing.
    assert h.num_event_time_timers(W(1, 12)) == 1
    assert h.num_event_time_timers(W(7, 20)) == 1
    assert h.advance_watermark(4) == []
    assert names(h.advance_watermark(5)) == [(W(1, 12), "CONTINUE"), (W(1, 20), "FIRE")]
    assert names(h.advance_watermark(10)) == [(W(7, 20), "CONTINUE"), (W(1, 20), "FIRE")]
    assert h.advance_watermark_for(15, W(1, 20)) is FIRE
    # The periodic fire time is capped at the merged window's end: min(15 + 5, 19).
    assert h.advance_watermark_for(19, W(1, 20)) is FIRE
    assert_clean(h, W(1, 20))


def test_continuous_event_time_merging_without_state_registers_nothing() -> None:
    h = TriggerHarness(ContinuousEventTimeTrigger(5), is_merging=True)
    h.merge_windows(W(0, 20), [W(0, 10), W(5, 20)])
    assert (h.num_event_time_timers(), h.num_state_entries()) == (0, 0)
    assert_clean(h, W(0, 20))


def test_continuous_event_time_needs_timestamps() -> None:
    h = TriggerHarness(ContinuousEventTimeTrigger(5))
    with pytest.raises(ValueError, match="ContinuousEventTimeTrigger: element has no timestamp"):
        h.process_element(1, None, W(0, 10))
    assert_clean(h, W(0, 10))


def test_continuous_event_time_in_operator_with_session_windows() -> None:
    h = WindowOperatorHarness(
        EventTimeSessionWindows(10),
        SumApply(),
        trigger=ContinuousEventTimeTrigger(5),
    )
    for ts in (0, 4, 12):  # [0, 10) + [4, 14) + [12, 22) -> [0, 22)
        h.process_element(1, ts, key="k")
    h.process_watermark(4)
    assert outputs(h) == []
    h.process_watermark(5)
    assert outputs(h) == [(W(0, 22), 3, 21)]
    h.process_watermark(21)
    assert outputs(h) == [(W(0, 22), 3, 21)] * 4  # at 10, 15, 20 and the end 21
    assert_operator_clean(h)


# =========================================================================== continuous proc


def test_continuous_processing_time_fires_each_interval_until_the_window_end() -> None:
    h = TriggerHarness(ContinuousProcessingTimeTrigger(5))
    w = W(0, 12)
    h.advance_processing_time(2)
    assert h.process_element("a", 99, w) is CONTINUE  # event timestamps play no part
    assert h.process_element("b", None, w) is CONTINUE
    assert (h.num_processing_time_timers(w), h.num_state_entries(w)) == (1, 1)
    assert h.num_event_time_timers() == 0
    assert h.advance_processing_time(4) == []
    assert h.advance_processing_time_for(5, w) is FIRE
    assert h.advance_processing_time_for(10, w) is FIRE
    assert h.advance_processing_time_for(11, w) is FIRE  # capped at max_timestamp
    # The firing at the window end registers nothing more (no loop); as in Flink, the last
    # fire time stays in state until the window is cleared.
    assert (h.num_processing_time_timers(), h.num_state_entries()) == (0, 1)
    assert h.advance_processing_time(100) == []
    assert_clean(h, w)


def test_continuous_processing_time_element_after_window_end_fires_once() -> None:
    # An event-time window whose end processing time has long passed: the capped fire time
    # is in the past, so the next advance fires it once (Flink would fire it forever).
    h = TriggerHarness(ContinuousProcessingTimeTrigger(5))
    w = W(0, 10)
    h.advance_processing_time(1000)
    h.process_element("a", 3, w)
    assert names(h.advance_processing_time(1000)) == [(w, "FIRE")]
    assert h.advance_processing_time(2000) == []
    assert_clean(h, w)


def test_continuous_processing_time_unexpected_timers_continue() -> None:
    h = TriggerHarness(ContinuousProcessingTimeTrigger(5))
    w = W(0, 100)
    assert h.invoke_on_processing_time(5, w) is CONTINUE  # no state: Flink would NPE
    h.process_element("a", None, w)
    assert h.invoke_on_processing_time(4, w) is CONTINUE
    assert h.invoke_on_event_time(5, w) is CONTINUE
    assert_clean(h, w)


def test_continuous_processing_time_merging_registers_the_earliest_fire_time() -> None:
    h = TriggerHarness(ContinuousProcessingTimeTrigger(5), is_merging=True)
    h.advance_processing_time(6)
    h.process_element("a", None, W(0, 20))  # 10
    h.advance_processing_time(7)
    h.process_element("b", None, W(7, 30))  # 10 as well
    h.merge_windows(W(0, 30), [W(0, 20), W(7, 30)])
    assert h.num_processing_time_timers(W(0, 30)) == 1
    assert h.num_state_entries() == 1
    fired = h.advance_processing_time(10)  # the old windows' timers fire into nothing
    assert sorted(names(fired)) == [
        (W(0, 20), "CONTINUE"),
        (W(0, 30), "FIRE"),
        (W(7, 30), "CONTINUE"),
    ]
    assert h.advance_processing_time_for(15, W(0, 30)) is FIRE
    assert_clean(h, W(0, 30))


def _sum_harness(assigner: Any, trigger: Trigger[Any, Any]) -> WindowOperatorHarness:
    return WindowOperatorHarness(assigner, SumApply(), trigger=trigger)


def test_continuous_processing_time_window_firing() -> None:
    """ContinuousProcessingTimeTriggerTest.testWindowFiring: tumbling processing-time
    windows of 10 ms, interval 5 ms."""
    h = _sum_harness(TumblingProcessingTimeWindows(10), ContinuousProcessingTimeTrigger(5))
    h.set_processing_time(0)
    h.process_element(1)
    h.set_processing_time(2)
    h.process_element(2)
    h.set_processing_time(5)
    assert outputs(h) == [(W(0, 10), 3, 9)]
    h.set_processing_time(7)
    h.process_element(3)
    h.set_processing_time(9)
    assert outputs(h) == [(W(0, 10), 6, 9)]
    h.set_processing_time(10)
    h.process_element(3)
    h.set_processing_time(15)
    assert outputs(h) == [(W(10, 20), 3, 19)]
    h.set_processing_time(18)
    h.process_element(3)
    h.set_processing_time(20)
    assert outputs(h) == [(W(10, 20), 6, 19)]
    assert_operator_clean(h)


def test_continuous_processing_time_merging_windows() -> None:
    """ContinuousProcessingTimeTriggerTest.testMergingWindows: sessions with a 10 ms gap."""
    h = _sum_harness(ProcessingTimeSessionWindows(10), ContinuousProcessingTimeTrigger(5))
    h.set_processing_time(0)
    h.process_element(1)  # [0, 10)
    h.set_processing_time(2)
    h.process_element(2)  # [2, 12) -> [0, 12)
    h.set_processing_time(5)  # the merged timer still fires
    assert outputs(h) == [(W(0, 12), 3, 11)]
    h.set_processing_time(9)
    assert outputs(h) == []
    h.set_processing_time(10)
    assert outputs(h) == [(W(0, 12), 3, 11)]
    h.set_processing_time(15)  # the capped firing at 11, then cleanup
    assert outputs(h) == [(W(0, 12), 3, 11)]
    h.set_processing_time(100)
    assert outputs(h) == []
    assert_operator_clean(h)


# =========================================================================== validation


@pytest.mark.parametrize("cls", [ContinuousEventTimeTrigger, ContinuousProcessingTimeTrigger])
@pytest.mark.parametrize("bad", [0, -1, "-5 ms", timedelta(0), "often", 2.5, True])
def test_continuous_rejects_bad_interval(cls: Any, bad: Any) -> None:
    with pytest.raises(ValueError, match="interval"):
        cls(bad)


@pytest.mark.parametrize("cls", [ContinuousEventTimeTrigger, ContinuousProcessingTimeTrigger])
def test_continuous_interval_message_names_value(cls: Any) -> None:
    with pytest.raises(ValueError, match=rf"{cls.__name__}: interval must be > 0, got -5"):
        cls(-5)


@pytest.mark.parametrize(
    ("interval", "millis"), [("1 minute", 60_000), (timedelta(seconds=2), 2000), (7, 7)]
)
def test_continuous_interval_durations(interval: Any, millis: int) -> None:
    assert ContinuousEventTimeTrigger(interval).interval == millis
    assert ContinuousProcessingTimeTrigger(interval) == ContinuousProcessingTimeTrigger(millis)


# =========================================================================== delta trigger


def _rise(old: int, new: int) -> float:
    return new - old


def test_delta_trigger_first_element_is_the_reference() -> None:
    h = TriggerHarness(DeltaTrigger(10, _rise))
    w = W(0, 100)
    assert h.process_element(100, 0, w) is CONTINUE  # no reference yet: stored
    assert h.num_state_entries(w) == 1
    assert h.process_element(110, 1, w) is CONTINUE  # delta == threshold: not > 10
    assert h.process_element(111, 2, w) is FIRE  # 11 > 10; 111 becomes the reference
    assert h.process_element(121, 3, w) is CONTINUE  # 10 from 111
    assert h.process_element(50, 4, w) is CONTINUE  # non-firing elements do not move it
    assert h.process_element(122, 5, w) is FIRE
    assert_clean(h, w)


def test_delta_trigger_argument_order_is_last_then_new() -> None:
    calls: list[tuple[Any, Any]] = []

    def delta(old: Any, new: Any) -> float:
        calls.append((old, new))
        return 1.0 if new == "fire" else 0.0

    h = TriggerHarness(DeltaTrigger(0.5, delta))
    for element in ("a", "b", "fire", "c"):
        h.process_element(element, None, GLOBAL_WINDOW)
    assert calls == [("a", "b"), ("a", "fire"), ("fire", "c")]
    assert_clean(h, GLOBAL_WINDOW)


def test_delta_trigger_handles_none_elements() -> None:
    h = TriggerHarness(DeltaTrigger(0, lambda old, new: 0 if old == new else 1))
    assert h.process_element(None, None, GLOBAL_WINDOW) is CONTINUE  # None is a reference
    assert h.process_element(None, None, GLOBAL_WINDOW) is CONTINUE
    assert h.process_element(1, None, GLOBAL_WINDOW) is FIRE
    assert h.process_element(None, None, GLOBAL_WINDOW) is FIRE
    assert_clean(h, GLOBAL_WINDOW)


def test_delta_trigger_windows_are_separate_and_timers_ignored() -> None:
    h = TriggerHarness(DeltaTrigger(1, _rise))
    h.process_element(0, 0, W(0, 10))
    h.process_element(5, 0, W(10, 20))
    assert h.process_element(2, 0, W(0, 10)) is FIRE
    assert h.process_element(6, 0, W(10, 20)) is CONTINUE
    assert h.invoke_on_event_time(9, W(0, 10)) is CONTINUE
    assert h.invoke_on_processing_time(9, W(0, 10)) is CONTINUE
    assert not DeltaTrigger(1, _rise).can_merge()
    assert_clean(h, W(0, 10), W(10, 20))


def test_delta_trigger_in_operator() -> None:
    # Flink's TopSpeedWindowing shape: global windows, fire on a jump, purge what fired.
    h = WindowOperatorHarness(
        GlobalWindows(), lambda a, b: max(a, b), trigger=PurgingTrigger(DeltaTrigger(5, _rise))
    )
    for v in (1, 3, 7, 8, 12, 13):
        h.process_element(v, key="car")
    assert [r.value for r in h.extract_output()] == [7, 13]
    assert h.num_state_entries() == 1  # the reference element 13; nothing else
    assert h.num_event_time_timers() + h.num_processing_time_timers() == 0


@pytest.mark.parametrize(
    ("threshold", "function", "message"),
    [
        ("1", _rise, "threshold must be a number, got '1'"),
        (1, 42, "delta_function must be a callable"),
    ],
)
def test_delta_trigger_rejects_bad_configuration(
    threshold: Any, function: Any, message: str
) -> None:
    with pytest.raises(ValueError, match=f"DeltaTrigger: {message}"):
        DeltaTrigger(threshold, function)


def test_delta_trigger_with_a_nan_threshold_never_fires_as_flink() -> None:
    with pytest.warns(UserWarning, match="DeltaTrigger: threshold is NaN"):
        trigger = DeltaTrigger(float("nan"), _rise)
    h = TriggerHarness(trigger)
    assert {h.process_element(v, None, GLOBAL_WINDOW).name for v in (1, 50, -3)} == {"CONTINUE"}


# =========================================================================== timeout trigger


def test_timeout_fires_without_reset_timer() -> None:
    """testWindowFireWithoutResetTimer (our processing clock starts at 0, Flink's at
    Long.MIN_VALUE)."""
    h = TriggerHarness(
        ProcessingTimeoutTrigger(CountTrigger(3), timedelta(milliseconds=50), clear_on_timeout=True)
    )
    w = W(0, 2)
    assert h.process_element(1, None, w) is CONTINUE
    h.advance_processing_time(10)
    assert h.process_element(1, None, w) is CONTINUE  # no reset: the timeout stays at 50
    assert h.num_state_entries() == 2  # the timeout and the count
    assert h.num_processing_time_timers() == 1
    assert h.num_event_time_timers() == 0
    assert h.advance_processing_time(49) == []
    assert h.advance_processing_time_for(50, w) is FIRE
    assert (h.num_state_entries(), h.num_processing_time_timers()) == (0, 0)
    # The inner trigger works afresh.
    assert [h.process_element(1, None, w) for _ in range(3)] == [CONTINUE, CONTINUE, FIRE]
    assert_clean(h, w)


def test_timeout_fires_with_reset_timer() -> None:
    """testWindowFireWithResetTimer."""
    h = TriggerHarness(ProcessingTimeoutTrigger(CountTrigger(3), 50, True, True))
    w = W(0, 2)
    assert h.advance_processing_time(0) == []
    assert h.process_element(1, None, w) is CONTINUE  # timeout 50
    assert h.advance_processing_time(10) == []
    assert h.process_element(1, None, w) is CONTINUE  # reset: timeout 60
    assert (h.num_state_entries(), h.num_processing_time_timers()) == (2, 1)
    assert h.advance_processing_time(50) == []
    assert h.advance_processing_time_for(60, w) is FIRE
    assert (h.num_state_entries(), h.num_processing_time_timers()) == (0, 0)
    assert [h.process_element(1, t, w) for t in (0, 10, 20)] == [CONTINUE, CONTINUE, FIRE]
    assert_clean(h, w)


def test_timeout_without_clear_on_timeout() -> None:
    """testWindowFireWithoutClearOnTimeout: the inner state and the expired timeout stay."""
    h = TriggerHarness(ProcessingTimeoutTrigger(CountTrigger(3), 50, False, False))
    w = W(0, 2)
    h.process_element(1, None, w)
    h.process_element(1, None, w)
    assert h.advance_processing_time_for(50, w) is FIRE
    assert (h.num_state_entries(), h.num_processing_time_timers()) == (2, 0)
    # The recorded timeout is not renewed: no new timer ...
    h.advance_processing_time(60)
    assert h.process_element(1, None, w) is FIRE  # ... and the inner count (2) goes on
    assert_clean(h, w)


def test_timeout_purges_when_the_inner_trigger_purges() -> None:
    """testWindowPurgingWhenInnerTriggerIsPurging."""
    inner = PurgingTrigger(ProcessingTimeTrigger())
    h = TriggerHarness(ProcessingTimeoutTrigger(inner, 50, False, False))
    w = W(0, 200)
    h.process_element(1, None, w)
    h.process_element(1, None, w)
    assert h.num_state_entries() == 1  # only the timeout
    assert h.num_processing_time_timers() == 2  # the timeout and the window end
    assert h.advance_processing_time_for(50, w) is FIRE_AND_PURGE
    assert (h.num_state_entries(), h.num_processing_time_timers()) == (1, 1)
    assert_clean(h, w)


def test_timeout_inner_firing_on_element_clears_the_timeout() -> None:
    h = TriggerHarness(ProcessingTimeoutTrigger(CountTrigger(2), 50, clear_on_timeout=True))
    w = W(0, 2)
    h.process_element(1, None, w)
    assert h.num_processing_time_timers() == 1
    assert h.process_element(1, None, w) is FIRE
    assert (h.num_state_entries(), h.num_processing_time_timers()) == (0, 0)
    h.advance_processing_time(10)
    h.process_element(1, None, w)  # a new timeout from now: 60
    assert h.advance_processing_time(59) == []
    assert h.advance_processing_time_for(60, w) is FIRE
    assert_clean(h, w)


def test_timeout_other_timers_return_the_inner_answer() -> None:
    # Flink answers FIRE to every timer callback; a cleanup timer that is neither the timeout
    # nor an inner firing returns the inner trigger's CONTINUE here.
    h = TriggerHarness(ProcessingTimeoutTrigger(EventTimeTrigger(), 1000, clear_on_timeout=True))
    w = W(0, 10)
    h.process_element(1, 3, w)
    h.register_event_time_timer(19, w)  # a cleanup timer (allowed lateness 10)
    assert h.advance_watermark_for(9, w) is FIRE  # the inner trigger fires at the end
    assert h.num_processing_time_timers() == 0  # cleared with the firing
    assert h.advance_watermark_for(19, w) is CONTINUE
    assert_clean(h, w)


def test_timeout_in_operator_count_or_timeout() -> None:
    h = WindowOperatorHarness(
        GlobalWindows(),
        lambda a, b: a + b,
        trigger=PurgingTrigger(
            ProcessingTimeoutTrigger(CountTrigger(3), 100, clear_on_timeout=True)
        ),
    )
    h.set_processing_time(1000)
    for v in (1, 2, 3, 4):
        h.process_element(v, key="k")
    assert [r.value for r in h.extract_output()] == [6]
    h.set_processing_time(1099)
    assert h.extract_output() == []
    h.set_processing_time(1100)  # the timeout of element 4 (first after the firing)
    assert [r.value for r in h.extract_output()] == [4]
    assert_operator_clean(h)


def test_timeout_defaults_and_validation() -> None:
    t = ProcessingTimeoutTrigger(CountTrigger(2), "1 second")
    assert (t.timeout, t.reset_timer_on_new_record, t.clear_on_timeout) == (1000, False, False)
    assert not t.can_merge()
    # Flink accepts any timeout; at or below 0 it fires at the next processing-time advance
    with pytest.warns(UserWarning, match=r"ProcessingTimeoutTrigger: timeout=0 fires at the"):
        assert ProcessingTimeoutTrigger(CountTrigger(2), 0).timeout == 0
    with pytest.warns(UserWarning, match=r"timeout='-1 s'"):
        assert ProcessingTimeoutTrigger(CountTrigger(2), "-1 s").timeout == -1000
    with pytest.raises(ValueError, match=r"timeout: cannot parse duration 'soon'"):
        ProcessingTimeoutTrigger(CountTrigger(2), "soon")
    with pytest.raises(ValueError, match=r"inner must be a Trigger, got 'count'"):
        ProcessingTimeoutTrigger("count", 5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"clear_on_timeout must be a bool, got 0"):
        ProcessingTimeoutTrigger(CountTrigger(2), 5, False, 0)  # type: ignore[arg-type]


# =========================================================================== all of them

NEW_TRIGGERS = [
    pytest.param(ContinuousEventTimeTrigger(5), id="continuous-event"),
    pytest.param(ContinuousProcessingTimeTrigger(5), id="continuous-processing"),
    pytest.param(DeltaTrigger(2, _rise), id="delta"),
    pytest.param(ProcessingTimeoutTrigger(CountTrigger(2), 5, True, False), id="timeout"),
]


@pytest.mark.parametrize("trigger", NEW_TRIGGERS)
def test_triggers_survive_cloudpickle_and_keep_no_state(trigger: Trigger[Any, Any]) -> None:
    copy = cloudpickle.loads(cloudpickle.dumps(trigger))
    assert type(copy) is type(trigger)
    with pytest.raises(AttributeError):
        trigger.cache = {}  # type: ignore[attr-defined]
    # The copy behaves as the original on the same input.
    runs = []
    for t in (trigger, copy):
        h = TriggerHarness(t)
        results = [h.process_element(v, v, W(0, 100)) for v in (1, 2, 9)]
        results += [r for _, r in h.advance_watermark(99)]
        results += [r for _, r in h.advance_processing_time(99)]
        assert_clean(h, W(0, 100))
        runs.append(results)
    assert runs[0] == runs[1]
    assert FIRE in runs[0]


def test_reprs() -> None:
    assert repr(ContinuousEventTimeTrigger("1 s")) == "ContinuousEventTimeTrigger(interval=1000)"
    assert repr(ContinuousProcessingTimeTrigger(5)) == "ContinuousProcessingTimeTrigger(interval=5)"
    assert repr(ProcessingTimeoutTrigger(CountTrigger(3), 50)) == (
        "ProcessingTimeoutTrigger(inner=CountTrigger(max_count=3), timeout=50, "
        "reset_timer_on_new_record=False, clear_on_timeout=False)"
    )


def test_new_triggers_are_exported() -> None:
    assert {
        "ContinuousEventTimeTrigger",
        "ContinuousProcessingTimeTrigger",
        "DeltaTrigger",
        "ProcessingTimeoutTrigger",
    } <= set(triggers.__all__)


def test_purge_result_constant_is_distinct() -> None:
    assert PURGE.is_purge() and not PURGE.is_fire()
