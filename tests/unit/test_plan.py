"""The planner names one strategy per job (``windowing.plan``)."""

from __future__ import annotations

from typing import Any

import pytest

from windowing.assigners import (
    DynamicEventTimeSessionWindows,
    EventTimeSessionWindows,
    GlobalWindows,
    HoppingEventTimeWindows,
    SlidingDistinctAssigner,
    TumblingEventTimeWindows,
    TumblingProcessingTimeWindows,
    WindowStagger,
)
from windowing.evictors import CountEvictor
from windowing.functions import AggregateFunction, ProcessWindowFunction, ReduceFunction
from windowing.plan import Strategy
from windowing.testing import WindowOperatorHarness
from windowing.triggers import CountTrigger, EventTimeTrigger, OnWindowCloseTrigger


class Sum(ReduceFunction[int]):
    order_insensitive = True

    def reduce(self, a: int, b: int) -> int:
        return a + b


class Count(AggregateFunction[Any, int, int]):
    def create_accumulator(self) -> int:
        return 0

    def add(self, value: Any, acc: int) -> int:
        return acc + 1

    def get_result(self, acc: int) -> int:
        return acc

    def merge(self, a: int, b: int) -> int:
        return a + b


class Collect(ProcessWindowFunction[Any, Any, Any, Any]):
    def process(self, key: Any, context: Any, elements: Any) -> Any:
        return [list(elements)]


def add(a: int, b: int) -> int:
    return a + b


CASES = [
    ("tumbling reduce", TumblingEventTimeWindows(10), add, {}, Strategy.ALIGNED),
    (
        "tumbling staggered",
        TumblingEventTimeWindows(10, stagger=WindowStagger.RANDOM),
        add,
        {},
        Strategy.GENERIC,
    ),
    (
        "tumbling count trigger",
        TumblingEventTimeWindows(10),
        add,
        {"trigger": CountTrigger(2)},
        Strategy.GENERIC,
    ),
    (
        "tumbling evictor",
        TumblingEventTimeWindows(10),
        add,
        {"evictor": CountEvictor(2)},
        Strategy.GENERIC,
    ),
    ("tumbling processing time", TumblingProcessingTimeWindows(10), add, {}, Strategy.GENERIC),
    ("hopping undeclared reduce", HoppingEventTimeWindows(10, 2), add, {}, Strategy.ALIGNED),
    ("hopping declared reduce", HoppingEventTimeWindows(10, 2), Sum(), {}, Strategy.PANES),
    ("hopping opted in", HoppingEventTimeWindows(10, 2), add, {"slicing": True}, Strategy.PANES),
    (
        "hopping opted out",
        HoppingEventTimeWindows(10, 2),
        Sum(),
        {"slicing": False},
        Strategy.ALIGNED,
    ),
    (
        "hopping process",
        HoppingEventTimeWindows(10, 2),
        Collect(),
        {"slicing": True},
        Strategy.ALIGNED,
    ),
    ("sessions", EventTimeSessionWindows(5), Count(), {}, Strategy.SESSIONS),
    (
        "dynamic sessions",
        DynamicEventTimeSessionWindows(lambda e: 5),
        Count(),
        {},
        Strategy.GENERIC,
    ),
    ("global count", GlobalWindows(), add, {"trigger": CountTrigger(2)}, Strategy.GENERIC),
    ("kip-450", SlidingDistinctAssigner(10, grace=0), Sum(), {}, Strategy.KAFKA_SLIDING),
    (
        "kip-450 derived",
        SlidingDistinctAssigner(10, grace=0),
        Sum(),
        {"slicing": True},
        Strategy.TIMELINE_DERIVED,
    ),
    (
        "kip-450 lazy",
        SlidingDistinctAssigner(10, grace=0),
        Sum(),
        {"slicing": True, "window_function": Collect(), "trigger": OnWindowCloseTrigger()},
        Strategy.TIMELINE_LAZY,
    ),
    (
        "kip-450 custom trigger",
        SlidingDistinctAssigner(10, grace=0),
        Sum(),
        {"slicing": True, "trigger": CountTrigger(2)},
        Strategy.TIMELINE,
    ),
]


@pytest.mark.parametrize(
    ("assigner", "function", "kwargs", "strategy"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_planned_strategy(
    assigner: Any, function: Any, kwargs: dict[str, Any], strategy: Strategy
) -> None:
    h = WindowOperatorHarness(assigner, function, **kwargs)
    assert h.plan.strategy is strategy
    text = h.explain()
    assert text.startswith(f"strategy: {strategy.value}\n")
    assert h.plan.reason in text


def test_subclass_of_default_trigger_is_not_inlined() -> None:
    class Mine(EventTimeTrigger):
        pass

    h = WindowOperatorHarness(TumblingEventTimeWindows(10), add, trigger=Mine())
    assert h.plan.strategy is Strategy.GENERIC
    assert not h.plan.inline_event_timers
    assert "trigger Mine" in h.plan.reason


def test_plan_flags() -> None:
    tumbling = WindowOperatorHarness(TumblingEventTimeWindows(10), Count()).plan
    assert tumbling.direct_result and tumbling.one_pass_at_end and tumbling.inline_event_timers
    assert not tumbling.time_order and "arrival order" in str(tumbling)
    panes = WindowOperatorHarness(HoppingEventTimeWindows(10, 5), Sum()).plan
    assert panes.time_order and not panes.one_pass_at_end and "time order" in str(panes)
    windowed = WindowOperatorHarness(
        TumblingEventTimeWindows(10), Count(), window_function=Collect()
    ).plan
    assert not windowed.direct_result and not windowed.one_pass_at_end
