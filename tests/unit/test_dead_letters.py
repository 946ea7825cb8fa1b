"""``on_error="dead_letter"`` in the operator and the harness: a failing firing emits nothing
and the operator goes on; a failing element is left out exactly (the same outputs as without
it); with ``"fail"`` errors propagate as before."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from windowing.assigners import (
    EventTimeSessionWindows,
    HoppingEventTimeWindows,
    SlidingDistinctAssigner,
    TumblingEventTimeWindows,
)
from windowing.errors import DeadLetter, ErrorPhase, ErrorPolicy
from windowing.evictors import Evictor
from windowing.functions import AggregateFunction, ProcessWindowFunction
from windowing.plan import Strategy
from windowing.records import OutputTag
from windowing.testing import WindowOperatorHarness
from windowing.triggers import CountTrigger, EventTimeTrigger, TriggerResult
from windowing.windows import TimeWindow

SEEN = OutputTag("seen")


class SumUnlessSeven(ProcessWindowFunction):
    def process(self, key: Any, context: Any, elements: Any) -> Any:
        values = list(elements)
        context.output(SEEN, len(values))
        yield len(values)
        if sum(values) % 7 == 0:
            msg = f"sum {sum(values)}"
            raise ValueError(msg)
        yield sum(values)


def test_policy_parsing() -> None:
    assert ErrorPolicy.of("fail") is ErrorPolicy.FAIL
    assert ErrorPolicy.of(ErrorPolicy.DEAD_LETTER) is ErrorPolicy.DEAD_LETTER
    with pytest.raises(ValueError, match="on_error must be one of 'fail', 'dead_letter', got 'x'"):
        ErrorPolicy.of("x")


@pytest.mark.parametrize(
    "assigner",
    [TumblingEventTimeWindows(10), HoppingEventTimeWindows(10, 5), EventTimeSessionWindows(3)],
    ids=["tumbling", "hopping", "sessions"],
)
def test_dead_letter_plan_is_the_generic_operator(assigner: Any) -> None:
    h = WindowOperatorHarness(assigner, lambda a, b: a + b, on_error="dead_letter")
    assert h.plan.strategy is Strategy.GENERIC
    assert not h.plan.direct_result
    assert "on_error='dead_letter'" in h.plan.reason
    sliding = WindowOperatorHarness(
        SlidingDistinctAssigner(10, grace=0), max, on_error="dead_letter"
    )
    assert sliding.plan.strategy is Strategy.KAFKA_SLIDING


def test_a_failing_firing_is_taken_back_and_dead_lettered() -> None:
    h = WindowOperatorHarness(
        TumblingEventTimeWindows(10), SumUnlessSeven(), on_error="dead_letter"
    )
    for v, t in [(3, 1), (4, 2), (5, 11), (1, 25)]:
        h.process_element(v, t, "k")
    h.process_watermark(100)
    out = [(r.window, r.value) for r in h.extract_output()]
    w1, w2 = TimeWindow(10, 20), TimeWindow(20, 30)
    assert out == [(w1, 1), (w1, 5), (w2, 1), (w2, 1)]  # the first window's outputs taken back
    assert len(h.extract_side_output(SEEN)) == 2  # the failed firing's output taken back
    (letter,) = h.extract_dead_letters()
    assert letter == DeadLetter(
        "k", ErrorPhase.WINDOW, "ValueError", "sum 7", window=TimeWindow(0, 10)
    )
    assert h.metrics.num_windows_fired == 2


def test_fail_policy_raises_with_notes() -> None:
    h = WindowOperatorHarness(TumblingEventTimeWindows(10), SumUnlessSeven())
    h.process_element(7, 1, "k")
    with pytest.raises(ValueError, match="sum 7") as info:
        h.process_watermark(100)
    assert (
        "while evaluating window TimeWindow(start=0, end=10) "
        "[1970-01-01T00:00:00.000Z, 1970-01-01T00:00:00.010Z) of key 'k'"
    ) in info.value.__notes__
    assert h.extract_dead_letters() == []


class RaisingTimerTrigger(EventTimeTrigger):
    def on_event_time(self, time: int, window: Any, ctx: Any) -> TriggerResult:
        if window.start == 0:
            msg = "bad timer"
            raise RuntimeError(msg)
        return super().on_event_time(time, window, ctx)


def test_a_trigger_timer_that_raises_continues_and_the_window_is_cleaned_up() -> None:
    h = WindowOperatorHarness(
        TumblingEventTimeWindows(10),
        lambda a, b: a + b,
        trigger=RaisingTimerTrigger(),
        allowed_lateness=5,
        on_error="dead_letter",
    )
    h.process_element(1, 1, "k")
    h.process_element(2, 12, "k")
    h.process_watermark(100)
    assert [(r.window, r.value) for r in h.extract_output()] == [(TimeWindow(10, 20), 2)]
    letters = h.extract_dead_letters()
    # the end-of-window timer and the cleanup timer (at 14) both reach the trigger
    assert [(d.phase, d.window, d.error_message) for d in letters] == [
        (ErrorPhase.WINDOW, TimeWindow(0, 10), "bad timer")
    ] * 2
    assert h.num_keys() == 0  # cleaned up all the same


class BadEvictor(Evictor):
    def evict_before(self, elements: Any, window: Any, ctx: Any) -> Any:
        if len(elements) > 1:
            msg = "too many"
            raise RuntimeError(msg)
        return elements

    def evict_after(self, elements: Any, window: Any, ctx: Any) -> Any:
        return elements


def test_an_evictor_that_raises_is_a_failed_firing() -> None:
    h = WindowOperatorHarness(
        TumblingEventTimeWindows(10),
        lambda a, b: a + b,
        evictor=BadEvictor(),
        on_error="dead_letter",
    )
    for v, t in [(1, 1), (2, 2), (5, 11)]:
        h.process_element(v, t, "k")
    h.process_watermark(100)
    assert [r.value for r in h.extract_output()] == [5]
    assert [d.error_message for d in h.extract_dead_letters()] == ["too many"]


class Total(AggregateFunction):
    """Raises on negative values (in ``add``: the element's own processing)."""

    def create_accumulator(self) -> list[int]:
        return []

    def add(self, value: int, acc: list[int]) -> list[int]:
        if value < 0:
            msg = f"negative {value}"
            raise ValueError(msg)
        return [*acc, value]  # order-sensitive result

    def get_result(self, acc: list[int]) -> tuple[int, ...]:
        return tuple(acc)

    def merge(self, a: list[int], b: list[int]) -> list[int]:
        return a + b


def _run(
    assigner: Any, elements: list[tuple[int, int, str]], policy: str, trigger: Any = None
) -> WindowOperatorHarness:
    h = WindowOperatorHarness(
        assigner,
        Total(),
        trigger=trigger,
        allowed_lateness=4,
        late_output_tag=OutputTag("late"),
        on_error=policy,
    )
    for i, (v, t, k) in enumerate(elements):
        h.process_element(v, t, k)
        if i % 3 == 2:
            h.process_watermark(t - 3)
    h.process_watermark(10**6)
    return h


@settings(max_examples=120, deadline=None)
@given(
    elements=st.lists(
        st.tuples(st.integers(-3, 9), st.integers(0, 60), st.sampled_from("ab")), max_size=25
    ),
    shape=st.sampled_from(["tumbling", "hopping", "sessions", "count"]),
)
def test_a_failing_element_is_left_out_exactly(
    elements: list[tuple[int, int, str]], shape: str
) -> None:
    assigner = {
        "tumbling": TumblingEventTimeWindows(10),
        "hopping": HoppingEventTimeWindows(10, 5),
        "sessions": EventTimeSessionWindows(4),
        "count": TumblingEventTimeWindows(20),
    }[shape]
    trigger = CountTrigger(2) if shape == "count" else None
    got = _run(assigner, elements, "dead_letter", trigger)
    letters = got.extract_dead_letters()
    assert all(d.phase is ErrorPhase.ELEMENT and d.error_class == "ValueError" for d in letters)
    failed = Counter((d.key, d.value, d.timestamp) for d in letters)
    negative = Counter((k, v, t) for v, t, k in elements if v < 0)
    assert failed <= negative
    # The reference: the same stream with the dead-lettered elements made harmless and sent
    # to a key of their own (the watermark schedule is unchanged); it must not raise.
    left = Counter(failed)
    kept = []
    for v, t, k in elements:
        if left[(k, v, t)]:
            left[(k, v, t)] -= 1
            kept.append((0, t, "zz"))
        else:
            kept.append((v, t, k))
    want = _run(assigner, kept, "fail", trigger)
    out = sorted((r.key, r.window, r.value) for r in got.extract_output())
    ref = sorted((r.key, r.window, r.value) for r in want.extract_output() if r.key != "zz")
    assert out == ref
    late = Counter((e.key, e.value, e.timestamp) for e in got.extract_late_elements())
    ref_late = Counter(
        (e.key, e.value, e.timestamp) for e in want.extract_late_elements() if e.key != "zz"
    )
    assert late == ref_late
    # a negative element that did not fail was late: added to no window, never aggregated
    assert negative - failed <= late
