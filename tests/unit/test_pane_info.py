"""Pane info (``pane_info=True``): each result's firing number and timing, Beam's PaneInfo
rule on Flink's operator (windowing.engine.pane_info)."""

from __future__ import annotations

from typing import Any

import pytest

from windowing import MAX_TIMESTAMP, OutputTag, PaneInfo, Timing, WindowOperator
from windowing.assigners import (
    EventTimeSessionWindows,
    GlobalWindows,
    HoppingEventTimeWindows,
    SlidingDistinctAssigner,
    TumblingEventTimeWindows,
    TumblingProcessingTimeWindows,
)
from windowing.engine.encoding import decode_key_state, encode_key_state
from windowing.functions import Process, ProcessWindowFunction
from windowing.plan import Strategy
from windowing.testing import WindowOperatorHarness
from windowing.triggers import (
    ContinuousEventTimeTrigger,
    CountTrigger,
    EventTimeTrigger,
    PurgingTrigger,
)
from windowing.windows import TimeWindow

E, ON, L = Timing.EARLY, Timing.ON_TIME, Timing.LATE


def add(a: int, b: int) -> int:
    return a + b


def panes(op: Any) -> list[tuple[Any, Any, int, Timing]]:
    """(window, value, index, timing) of each result, taken out of the operator."""
    out = [(r.window, r.value, r.pane.index, r.pane.timing) for r in op.output]
    op.output.clear()
    return out


def test_without_pane_info_results_have_none_and_the_old_repr() -> None:
    op = WindowOperator(TumblingEventTimeWindows(10), add)
    op.process_element(1, 3, key="k")
    op.process_watermark(9)
    (r,) = op.output
    assert r.pane is None
    assert (
        repr(r) == "WindowResult(key='k', window=TimeWindow(start=0, end=10), value=1, timestamp=9)"
    )


def test_on_time_then_late_firings_within_the_lateness() -> None:
    op = WindowOperator(TumblingEventTimeWindows(10), add, allowed_lateness=20, pane_info=True)
    op.process_element(1, 3, key="k")
    op.process_element(1, 5, key="k")
    assert panes(op) == []
    op.process_watermark(9)  # reaches max timestamp 9: the on-time firing
    assert panes(op) == [(TimeWindow(0, 10), 2, 0, ON)]
    op.process_element(1, 4, key="k")  # late, within the lateness: fires again
    op.process_element(1, 6, key="k")
    assert panes(op) == [(TimeWindow(0, 10), 3, 1, L), (TimeWindow(0, 10), 4, 2, L)]
    # the cleanup time passes: the count goes with the window, the key is released
    op.process_watermark(29)
    assert op.keys() == []


def test_a_windows_first_firing_after_the_watermark_passed_it_is_late() -> None:
    op = WindowOperator(TumblingEventTimeWindows(10), add, allowed_lateness=20, pane_info=True)
    op.process_watermark(15)
    op.process_element(1, 3, key="k")  # [0, 10) never fired: its first pane is already LATE
    assert panes(op) == [(TimeWindow(0, 10), 1, 0, L)]


def test_early_firings_then_on_time_with_a_continuous_trigger() -> None:
    op = WindowOperator(
        TumblingEventTimeWindows(10),
        add,
        trigger=ContinuousEventTimeTrigger(3),
        pane_info=True,
    )
    for t in (0, 1, 2):
        op.process_element(1, t, key="k")
    op.process_watermark(3)  # the continuous timer at 3: early
    assert panes(op) == [(TimeWindow(0, 10), 3, 0, E)]
    op.process_element(1, 8, key="k")
    # one watermark step fires the timer at 6, then the window's end: early, then on time
    op.process_watermark(20)
    assert panes(op) == [(TimeWindow(0, 10), 4, 1, E), (TimeWindow(0, 10), 4, 2, ON)]


def test_count_windows_keep_counting_across_purges() -> None:
    """GlobalWindows with a purging count trigger: the key keeps nothing between firings
    but its pane count (a window without a cleanup time can fire again)."""
    op = WindowOperator(
        GlobalWindows(), add, trigger=PurgingTrigger(CountTrigger(2)), pane_info=True
    )
    for t in range(6):
        op.process_element(1, t, key="k")
    assert [(v, i, t) for _, v, i, t in panes(op)] == [(2, 0, E), (2, 1, E), (2, 2, E)]
    assert op.keys() == ["k"]


def test_sessions_merged_into_a_new_window_start_again() -> None:
    op = WindowOperator(EventTimeSessionWindows(5), add, allowed_lateness=100, pane_info=True)
    op.process_element(1, 0, key="k")
    op.process_watermark(10)  # [0, 5) fires on time
    op.process_element(1, 4, key="k")  # merges into [0, 9): a new window, already passed
    op.process_element(1, 1, key="k")  # inside [0, 9): the same window fires again
    assert panes(op) == [
        (TimeWindow(0, 5), 1, 0, ON),
        (TimeWindow(0, 9), 2, 0, L),
        (TimeWindow(0, 9), 3, 1, L),
    ]


def test_processing_time_windows_time_their_panes_on_the_processing_time() -> None:
    op = WindowOperator(
        TumblingProcessingTimeWindows(10),
        add,
        trigger=PurgingTrigger(CountTrigger(1)),
        pane_info=True,
    )
    op.advance_processing_time(2)
    op.process_element(1, None, key="k")
    assert panes(op) == [(TimeWindow(0, 10), 1, 0, E)]


class TwoOutputs(ProcessWindowFunction[int, int, Any, Any]):
    def process(self, key: Any, context: Any, elements: Any) -> Any:
        total = sum(elements)
        return [total, -total]


class Nothing(ProcessWindowFunction[int, int, Any, Any]):
    def process(self, key: Any, context: Any, elements: Any) -> Any:
        return [] if len(list(elements)) == 1 else [len(list(elements))]


def test_the_outputs_of_one_firing_share_its_pane() -> None:
    op = WindowOperator(
        TumblingEventTimeWindows(10), Process(TwoOutputs()), allowed_lateness=5, pane_info=True
    )
    op.process_element(2, 1, key="k")
    op.process_watermark(9)
    op.process_element(3, 2, key="k")
    assert panes(op) == [
        (TimeWindow(0, 10), 2, 0, ON),
        (TimeWindow(0, 10), -2, 0, ON),
        (TimeWindow(0, 10), 5, 1, L),
        (TimeWindow(0, 10), -5, 1, L),
    ]


def test_a_firing_without_output_still_counts() -> None:
    op = WindowOperator(
        TumblingEventTimeWindows(10), Process(Nothing()), allowed_lateness=5, pane_info=True
    )
    op.process_element(2, 1, key="k")
    op.process_watermark(9)  # fires, emits nothing: pane 0
    op.process_element(3, 2, key="k")
    assert panes(op) == [(TimeWindow(0, 10), 2, 1, L)]
    assert op.metrics.num_windows_fired == 2


@pytest.mark.parametrize(
    ("assigner", "strategy"),
    [
        (TumblingEventTimeWindows(10), Strategy.ALIGNED),
        (HoppingEventTimeWindows(10, 5), Strategy.ALIGNED),  # not panes: counted per window
        (EventTimeSessionWindows(4), Strategy.SESSIONS),
        (SlidingDistinctAssigner(10, grace=7), Strategy.KAFKA_SLIDING),
    ],
)
def test_every_strategy_counts_like_the_generic_operator(assigner: Any, strategy: Strategy) -> None:
    class Generic(EventTimeTrigger):
        """Not inlined: the generic operator."""

    def run(trigger: Any) -> tuple[Strategy, list[Any]]:
        h = WindowOperatorHarness(
            assigner, add, trigger=trigger, allowed_lateness=7, pane_info=True
        )
        for i, (t, wm) in enumerate(
            [(3, 0), (5, 4), (12, 11), (4, 16), (1, 16), (30, 40), (25, 40)]
        ):
            h.process_element(i, t, "k")
            h.process_watermark(wm)
        h.process_watermark(MAX_TIMESTAMP)
        return h.plan.strategy, [(r.window, r.value, r.pane) for r in h.extract_output()]

    fast, expected = run(None), run(Generic())
    assert fast[0] is strategy
    assert fast[1] == expected[1]
    assert {p.timing for _, _, p in expected[1]} >= {ON, L}


def test_pane_info_picks_no_shared_panes() -> None:
    h = WindowOperatorHarness(HoppingEventTimeWindows(10, 5), add, pane_info=True)
    assert h.plan.strategy is Strategy.ALIGNED
    assert WindowOperatorHarness(
        HoppingEventTimeWindows(10, 5), add, slicing=True
    ).plan.strategy is (Strategy.PANES)


def test_batch_end_of_input_fires_on_time() -> None:
    """A key's bounded input, then the end of input (the one-pass path): every window on
    time."""
    op = WindowOperator(TumblingEventTimeWindows(10), add, pane_info=True)
    op.process_to_end("k", [(1, 3, "k"), (1, 15, "k"), (1, 12, "k")])
    assert panes(op) == [(TimeWindow(0, 10), 1, 0, ON), (TimeWindow(10, 20), 2, 0, ON)]


def test_counts_survive_a_snapshot_and_the_state_encoding() -> None:
    def operator() -> WindowOperator:
        return WindowOperator(
            TumblingEventTimeWindows(10), add, allowed_lateness=50, pane_info=True
        )

    op = operator()
    op.process_element(1, 3, key="k")
    op.process_watermark(9)
    op.process_element(1, 4, key="k")
    restored = operator()
    restored.restore(op.snapshot())
    restored.process_element(1, 5, key="k")
    assert panes(restored) == [(TimeWindow(0, 10), 3, 2, L)]
    ks = op.backend.get("k")
    assert ks is not None and decode_key_state(encode_key_state(ks)).panes == ks.panes


def test_pane_info_must_be_a_bool() -> None:
    with pytest.raises(ValueError, match="pane_info must be a bool, got str 'yes'"):
        WindowOperator(TumblingEventTimeWindows(10), add, pane_info="yes")  # type: ignore[arg-type]


def test_late_side_output_rows_carry_no_pane() -> None:
    late = OutputTag("late")
    op = WindowOperator(TumblingEventTimeWindows(10), add, late_output_tag=late, pane_info=True)
    op.process_watermark(20)
    op.process_element(1, 3, key="k")
    assert op.output == []
    assert len(op.side_outputs[late]) == 1


def test_pane_info_is_exported() -> None:
    assert PaneInfo(0, Timing.LATE).timing is L
