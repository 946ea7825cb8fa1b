"""The harness's trace (``WindowOperatorHarness(..., trace=True)``, ``windowing.trace``): one
step per call with its clocks, results, lateness and windows; firings numbered per window and
classified early / on time / late by Beam's rule."""

from __future__ import annotations

import random
from typing import Any, NamedTuple

import pytest

from windowing import (
    AfterWatermark,
    CountTrigger,
    EventTimeSessionWindows,
    OutputTag,
    TimeWindow,
    TumblingEventTimeWindows,
    WindowResult,
)
from windowing.testing import WindowOperatorHarness
from windowing.time import MIN_TIMESTAMP
from windowing.trace import StepKind, Trace, TraceStep, pane_timing


def _add(a: int, b: int) -> int:
    return a + b


def test_each_call_is_a_step_with_its_clocks_results_and_windows() -> None:
    tag = OutputTag("late")
    h = WindowOperatorHarness(
        TumblingEventTimeWindows(10), _add, allowed_lateness=5, late_output_tag=tag, trace=True
    )
    h.process_element(1, 3, "k")
    h.process_element(2, 12, "k")
    h.set_processing_time(7)
    h.process_watermark(11)  # fires [0, 10)
    h.process_element(4, 5, "k")  # late, within lateness: fires [0, 10) again
    h.process_watermark(30)  # fires [10, 20), cleans up both
    h.process_element(8, 1, "k")  # too late: to the side output
    steps = h.trace.steps
    assert [s.kind for s in steps] == [
        StepKind.ELEMENT,
        StepKind.ELEMENT,
        StepKind.PROCESSING_TIME,
        StepKind.WATERMARK,
        StepKind.ELEMENT,
        StepKind.WATERMARK,
        StepKind.ELEMENT,
    ]
    assert [(s.watermark_before, s.watermark) for s in steps][2:4] == [
        (MIN_TIMESTAMP, MIN_TIMESTAMP),
        (MIN_TIMESTAMP, 11),
    ]
    assert (steps[2].processing_time_before, steps[2].processing_time) == (0, 7)
    assert [[r.value for r in s.results] for s in steps] == [[], [], [], [1], [5], [2], []]
    assert [s.late for s in steps] == [False] * 6 + [True]
    assert steps[0].windows == {"k": (TimeWindow(0, 10),)}
    assert steps[1].windows == {"k": (TimeWindow(0, 10), TimeWindow(10, 20))}
    assert steps[5].windows == {}  # all cleaned up
    # the outputs are still there for extract_output: the trace only looks
    assert [r.value for r in h.extract_output()] == [1, 5, 2]
    assert [e.value for e in h.extract_late_elements()] == [8]


def test_a_dropped_late_element_is_late_in_the_trace() -> None:
    h = WindowOperatorHarness(TumblingEventTimeWindows(10), _add, trace=True)
    h.process_watermark(20)
    h.process_element(1, 3, "k")
    assert h.trace.steps[-1].late
    assert h.metrics.num_late_records_dropped == 1


def test_merging_sessions_replace_their_windows_in_the_trace() -> None:
    h = WindowOperatorHarness(EventTimeSessionWindows(5), _add, trace=True)
    for ts in (1, 10, 6):  # 6 bridges [1, 6) and [10, 15)
        h.process_element(1, ts, "u")
    assert [s.windows["u"] for s in h.trace.steps] == [
        (TimeWindow(1, 6),),
        (TimeWindow(1, 6), TimeWindow(10, 15)),
        (TimeWindow(1, 15),),
    ]


def test_firings_are_numbered_per_window_and_classified() -> None:
    h = WindowOperatorHarness(
        TumblingEventTimeWindows(10),
        _add,
        trigger=AfterWatermark(early=CountTrigger(2)),
        allowed_lateness=10,
        trace=True,
    )
    h.process_element(1, 1, "a")
    h.process_element(1, 2, "a")  # early (count 2)
    h.process_element(1, 11, "b")
    h.process_watermark(9)  # on time: the watermark reaches max_timestamp 9
    h.process_element(1, 3, "a")  # late firing
    h.process_element(1, 4, "a")  # late again
    h.process_watermark(100)
    got = [(f.result.key, f.result.window.start, f.pane_index, f.timing) for f in h.trace.firings()]
    assert got == [
        ("a", 0, 0, "EARLY"),
        ("a", 0, 1, "ON_TIME"),
        ("a", 0, 2, "LATE"),
        ("a", 0, 3, "LATE"),
        ("b", 10, 0, "ON_TIME"),
    ]
    assert [f.step for f in h.trace.firings("b")] == [6]
    assert h.trace.keys() == ["a", "b"]


def test_pane_timing_follows_beams_rule() -> None:
    assert pane_timing(0, 0, 9, final=False) == "EARLY"
    assert pane_timing(0, 9, 9, final=False) == "ON_TIME"  # reached exactly
    assert pane_timing(8, 100, 9, final=False) == "ON_TIME"
    assert pane_timing(9, 9, 9, final=False) == "LATE"  # already there before the step
    assert pane_timing(0, 5, 9, final=True) == "LATE"  # after a final pane, even if below


def test_processing_time_windows_are_timed_on_processing_time() -> None:
    from windowing import TumblingProcessingTimeWindows

    h = WindowOperatorHarness(TumblingProcessingTimeWindows(10), _add, trace=True)
    h.process_element(1, None, "k")
    h.set_processing_time(20)
    assert [f.timing for f in h.trace.firings()] == ["ON_TIME"]
    assert not h.trace.event_time


class _PanedResult(NamedTuple):
    key: Any
    window: Any
    value: Any
    timestamp: int
    pane: Any


class _Pane(NamedTuple):
    index: int
    timing: Any


def _step(*results: Any) -> TraceStep:
    return TraceStep(StepKind.WATERMARK, None, None, None, 0, 100, 0, 0, results, False, {})


def test_a_results_own_pane_info_wins_over_the_rule() -> None:
    class Timing:  # an enum member's shape: .name
        name = "EARLY"

    window = TimeWindow(0, 10)
    trace = Trace(steps=[_step(_PanedResult("k", window, 1, 9, _Pane(4, Timing())))])
    (firing,) = trace.firings()
    assert (firing.pane_index, firing.timing) == (4, "EARLY")  # the rule would say ON_TIME
    bad = Trace(steps=[_step(_PanedResult("k", window, 1, 9, _Pane(0, "SOON")))])
    with pytest.raises(ValueError, match=r"pane timing must be one of .* got 'SOON'"):
        bad.firings()
    plain = Trace(steps=[_step(WindowResult("k", window, 1, 9))])
    assert [f.timing for f in plain.firings()] == ["ON_TIME"]


def test_tracing_changes_no_result() -> None:
    rng = random.Random(7)
    elements = [(rng.randint(0, 9), rng.randint(-30, 60), rng.choice("ab")) for _ in range(300)]

    def run(trace: bool) -> tuple[list[Any], list[Any]]:
        tag = OutputTag("late")
        h = WindowOperatorHarness(
            EventTimeSessionWindows(4), _add, allowed_lateness=3, late_output_tag=tag, trace=trace
        )
        for i in range(0, len(elements), 20):
            h.process_elements(elements[i : i + 20])
            h.process_watermark(max(ts for _, ts, _ in elements[: i + 20]) - 8)
        h.process_watermark(1_000)
        return h.extract_output(), h.extract_late_elements()

    assert run(True) == run(False)
    traced = WindowOperatorHarness(EventTimeSessionWindows(4), _add, trace=True)
    traced.process_elements(elements[:5])
    assert [s.kind for s in traced.trace.steps] == [StepKind.ELEMENT] * 5


def test_a_harness_without_a_trace_says_how_to_get_one() -> None:
    h = WindowOperatorHarness(TumblingEventTimeWindows(10), _add)
    with pytest.raises(ValueError, match=r"trace=True"):
        _ = h.trace
    with pytest.raises(ValueError, match="trace must be a bool, got int 1"):
        WindowOperatorHarness(TumblingEventTimeWindows(10), _add, trace=1)  # type: ignore[arg-type]
