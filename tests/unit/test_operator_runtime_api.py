"""The few methods a runtime drives a window operator by when it runs keys one at a time
(the batch replay, the streaming processor): clocks set, outputs taken or dropped, counters
put back."""

from __future__ import annotations

import pytest

from windowing.assigners import (
    EventTimeSessionWindows,
    HoppingEventTimeWindows,
    SlidingDistinctAssigner,
    TumblingEventTimeWindows,
)
from windowing.operator import OperatorMetrics, WindowOperator
from windowing.plan import Strategy
from windowing.time import MAX_TIMESTAMP, MIN_TIMESTAMP
from windowing.triggers import CountTrigger, OnWindowCloseTrigger


def _operator() -> WindowOperator:
    return WindowOperator(TumblingEventTimeWindows(10), lambda a, b: a + b)


def test_set_clocks_sets_what_it_is_given_and_fires_nothing() -> None:
    op = _operator()
    op.process_elements([(1, 1, "k"), (2, 5, "k")])
    op.set_clocks(watermark=20)
    assert (op.watermark, op.processing_time, op.output) == (20, 0, [])
    op.set_clocks(processing_time=7)
    assert (op.watermark, op.processing_time) == (20, 7)
    op.fire_timers("k", op.key_state("k"))  # the runtime fires the key's due timers itself
    assert [r.value for r in op.take_output()] == [3]
    assert op.output == []


def test_clear_outputs_and_rewind_outputs() -> None:
    op = _operator()
    op.process_elements([(1, 1, "k")])
    op.set_clocks(watermark=20)
    op.fire_timers("k", op.key_state("k"))
    mark = op.output_mark()
    assert mark.results == 1 and op.metrics.num_windows_fired == 1
    op.process_elements([(5, 25, "j")])
    op.set_clocks(watermark=40)
    op.fire_timers("j", op.key_state("j"))
    assert len(op.output) == 2 and op.metrics.num_windows_fired == 2
    op.rewind_outputs(mark)  # as if the second key's element had never arrived
    assert [r.key for r in op.output] == ["k"] and op.metrics.num_windows_fired == 1
    op.clear_outputs()
    assert op.output == [] and op.metrics.num_windows_fired == 1  # counters kept
    op.clear_outputs(metrics=OperatorMetrics())
    assert op.metrics == OperatorMetrics()
    op.set_clocks(watermark=MIN_TIMESTAMP, processing_time=0)
    assert (op.watermark, op.processing_time) == (MIN_TIMESTAMP, 0)


@pytest.mark.parametrize(
    "field",
    ["watermark", "processing_time", "output", "side_outputs", "metrics", "dead_letters"],
)
def test_the_clocks_and_outputs_are_read_only_outside_the_engine(field: str) -> None:
    """A runtime moves the clocks and takes the outputs through the driving methods: the
    operator's fields are views of its engine's, and assigning one fails."""
    op = _operator()
    with pytest.raises(AttributeError):
        setattr(op, field, getattr(op, field))


def _strategies() -> list[WindowOperator]:
    add = lambda a, b: a + b  # noqa: E731
    return [
        WindowOperator(TumblingEventTimeWindows(10), add),  # aligned
        WindowOperator(TumblingEventTimeWindows(10), add, trigger=CountTrigger(2)),  # generic
        WindowOperator(HoppingEventTimeWindows(10, 2), add, slicing=True),  # panes
        WindowOperator(EventTimeSessionWindows(5), add),  # sessions
        WindowOperator(SlidingDistinctAssigner(10, grace=0), add),  # Kafka's
        WindowOperator(SlidingDistinctAssigner(10, grace=0), add, slicing=True),  # timeline
    ]


def test_strategies_run_on_the_engine_not_the_operator() -> None:
    """Every strategy holds the operator's engine (the job, the clocks, the outputs and the
    shared services) and nothing of the operator; clocks moved by the operator are the
    engine's, and results a strategy emits are the operator's outputs."""
    plans = set()
    for op in _strategies():
        strategy = op.strategy
        plans.add(op.plan.strategy)
        assert strategy.engine is op.engine
        assert not any(value is op for value in vars(strategy).values())
        op.process_elements([(1, 1, "k"), (2, 3, "k")])
        op.process_watermark(MAX_TIMESTAMP)
        assert op.engine.clocks.watermark == op.watermark == MAX_TIMESTAMP
        assert op.output is op.engine.outputs.output and op.output
    assert len(plans) == 6


def test_the_derived_timelines_order_their_keys_in_the_scheduler() -> None:
    """The derived timelines' one timer per key is visited in the scheduler's own key order,
    set when the engine is built (never patched into a shared service afterwards)."""
    add = lambda a, b: a + b  # noqa: E731
    derived = WindowOperator(
        SlidingDistinctAssigner(10, grace=0), add, slicing=True, trigger=OnWindowCloseTrigger()
    )
    assert derived.plan.strategy is Strategy.TIMELINE_DERIVED
    assert derived.scheduler.in_order
    assert not WindowOperator(SlidingDistinctAssigner(10, grace=0), add).scheduler.in_order
    derived.process_elements([(1, 1, "a"), (2, 30, "b"), (3, 2, "a")])
    derived.process_watermark(100)
    assert [(r.key, r.value) for r in derived.output][:2] == [("a", 1), ("a", 4)]
