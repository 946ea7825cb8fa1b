"""Bad configuration fails early with a ValueError naming the parameter and the value."""

from __future__ import annotations

from collections.abc import Iterable
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
    ProcessingTimeSessionWindows,
    TumblingEventTimeWindows,
    TumblingProcessingTimeWindows,
)
from windowing.evictors.base import Evictor
from windowing.functions import (
    AggregateFunction,
    Fold,
    FoldFunction,
    ProcessWindowFunction,
    Reduce,
    ReduceFunction,
    WindowFunction,
)
from windowing.operator import WindowOperator
from windowing.records import OutputTag
from windowing.state import ReducingStateDescriptor, StateTable
from windowing.testing import TriggerHarness, WindowOperatorHarness
from windowing.triggers import (
    CountTrigger,
    EventTimeTrigger,
    NeverTrigger,
    ProcessingTimeTrigger,
    PurgingTrigger,
    Trigger,
    TriggerResult,
)
from windowing.windows import GLOBAL_WINDOW

# --------------------------------------------------------------------------- helpers


class NonMergingTrigger(Trigger[Any, Any]):
    """A custom trigger that keeps the default can_merge() == False."""

    def on_element(self, element: Any, timestamp: Any, window: Any, ctx: Any) -> TriggerResult:
        return TriggerResult.CONTINUE

    def on_event_time(self, time: int, window: Any, ctx: Any) -> TriggerResult:
        return TriggerResult.CONTINUE

    def on_processing_time(self, time: int, window: Any, ctx: Any) -> TriggerResult:
        return TriggerResult.CONTINUE

    def clear(self, window: Any, ctx: Any) -> None:
        return None


class Sum(ReduceFunction[int]):
    def reduce(self, value1: int, value2: int) -> int:
        return value1 + value2


class Count(AggregateFunction[Any, int, int]):
    def create_accumulator(self) -> int:
        return 0

    def add(self, value: Any, accumulator: int) -> int:
        return accumulator + 1

    def get_result(self, accumulator: int) -> int:
        return accumulator

    def merge(self, a: int, b: int) -> int:
        return a + b


class Collect(ProcessWindowFunction[Any, Any, Any, Any]):
    def process(self, key: Any, context: Any, elements: Iterable[Any]) -> Iterable[Any]:
        yield list(elements)


class Legacy(WindowFunction[Any, Any, Any, Any]):
    def apply(self, key: Any, window: Any, elements: Iterable[Any]) -> Iterable[Any]:
        return [list(elements)]


class Append(FoldFunction[Any, list[Any]]):
    def fold(self, accumulator: list[Any], value: Any) -> list[Any]:
        return [*accumulator, value]


class KeepAll(Evictor[Any, Any]):
    def evict_before(self, elements: Any, window: Any, ctx: Any) -> Any:
        return elements

    def evict_after(self, elements: Any, window: Any, ctx: Any) -> Any:
        return elements


def add(a: int, b: int) -> int:
    return a + b


SESSION_ASSIGNERS = [
    EventTimeSessionWindows(10),
    ProcessingTimeSessionWindows(10),
    DynamicEventTimeSessionWindows(lambda e: 10),
    DynamicProcessingTimeSessionWindows(lambda e: 10),
]
SESSION_IDS = ["event", "processing", "dynamic-event", "dynamic-processing"]

# =========================================================================== assigners: size


@pytest.mark.parametrize("cls", [TumblingEventTimeWindows, TumblingProcessingTimeWindows])
@pytest.mark.parametrize("size", [0, -1, -5000, "0 seconds", "-1 second", timedelta(0)])
def test_tumbling_size_not_positive(cls: type, size: Any) -> None:
    with pytest.raises(ValueError, match=rf"{cls.__name__}: size must be > 0") as info:
        cls(size)
    assert f"got {size!r}" in str(info.value)


@pytest.mark.parametrize("cls", [HoppingEventTimeWindows, HoppingProcessingTimeWindows])
@pytest.mark.parametrize("size", [0, -1, "-10 s"])
def test_hopping_size_not_positive(cls: type, size: Any) -> None:
    with pytest.raises(ValueError, match=r"size must be > 0") as info:
        cls(size, 5)
    assert f"got {size!r}" in str(info.value)


@pytest.mark.parametrize("cls", [HoppingEventTimeWindows, HoppingProcessingTimeWindows])
@pytest.mark.parametrize("slide", [0, -1, timedelta(milliseconds=-3)])
def test_hopping_slide_not_positive(cls: type, slide: Any) -> None:
    with pytest.raises(ValueError, match=r"slide must be > 0") as info:
        cls(10, slide)
    assert f"got {slide!r}" in str(info.value)


@pytest.mark.parametrize("cls", [EventTimeSessionWindows, ProcessingTimeSessionWindows])
@pytest.mark.parametrize("gap", [0, -1, "0 ms", timedelta(seconds=-1)])
def test_session_gap_not_positive(cls: type, gap: Any) -> None:
    with pytest.raises(ValueError, match=rf"{cls.__name__}: gap must be > 0") as info:
        cls(gap)
    assert f"got {gap!r}" in str(info.value)


@pytest.mark.parametrize("value", [True, 1.5, None, "ten seconds", [10]])
def test_tumbling_size_of_wrong_type(value: Any) -> None:
    with pytest.raises(ValueError, match=r"^size"):
        TumblingEventTimeWindows(value)


@pytest.mark.parametrize("value", [False, 2.0, "later"])
def test_hopping_slide_of_wrong_type(value: Any) -> None:
    with pytest.raises(ValueError, match=r"^slide"):
        HoppingEventTimeWindows(10, value)


@pytest.mark.parametrize("value", [True, 0.5, "x"])
def test_session_gap_of_wrong_type(value: Any) -> None:
    with pytest.raises(ValueError, match=r"^gap"):
        EventTimeSessionWindows(value)


@pytest.mark.parametrize("value", [True, 0.5, "soon"])
def test_offset_of_wrong_type(value: Any) -> None:
    with pytest.raises(ValueError, match=r"^offset"):
        TumblingEventTimeWindows(10, offset=value)


# =========================================================================== assigners: offset


@pytest.mark.parametrize("cls", [TumblingEventTimeWindows, TumblingProcessingTimeWindows])
@pytest.mark.parametrize("offset", [10, -10, 11, -11, 1_000, "10 ms", timedelta(milliseconds=-10)])
def test_tumbling_offset_out_of_range(cls: type, offset: Any) -> None:
    with pytest.raises(ValueError, match=r"abs\(offset\) must be < size \(10 ms\)") as info:
        cls(10, offset=offset)
    assert f"offset={offset!r}" in str(info.value)
    assert cls.__name__ in str(info.value)


@pytest.mark.parametrize("offset", [9, -9, 0])
def test_tumbling_offset_in_range(offset: int) -> None:
    assert TumblingEventTimeWindows(10, offset=offset).offset == offset


@pytest.mark.parametrize("cls", [HoppingEventTimeWindows, HoppingProcessingTimeWindows])
@pytest.mark.parametrize("offset", [5, -5, 7, -9])
def test_hopping_offset_must_be_within_slide(cls: type, offset: int) -> None:
    # abs(offset) < size is not enough: it must be < slide.
    with pytest.raises(ValueError, match=r"abs\(offset\) must be < slide \(5 ms\)") as info:
        cls(10, 5, offset=offset)
    assert f"offset={offset!r}" in str(info.value)


@pytest.mark.parametrize("offset", [4, -4])
def test_hopping_offset_in_range(offset: int) -> None:
    assert HoppingEventTimeWindows(10, 5, offset=offset).offset == offset


def test_hopping_offset_bounded_by_slide_when_slide_exceeds_size() -> None:
    assert HoppingEventTimeWindows(2, 10, offset=9).offset == 9
    with pytest.raises(ValueError, match=r"slide \(10 ms\), got offset=10"):
        HoppingEventTimeWindows(2, 10, offset=10)


@pytest.mark.parametrize(
    "cls", [DynamicEventTimeSessionWindows, DynamicProcessingTimeSessionWindows]
)
@pytest.mark.parametrize("extractor", [5, None, "5 seconds"])
def test_dynamic_session_extractor_must_be_callable(cls: type, extractor: Any) -> None:
    with pytest.raises(ValueError, match=r"gap_extractor must be callable") as info:
        cls(extractor)
    assert repr(extractor) in str(info.value)


# =========================================================================== operator


def test_operator_rejects_negative_allowed_lateness() -> None:
    with pytest.raises(ValueError, match=r"allowed_lateness must be >= 0, got -1$"):
        WindowOperator(TumblingEventTimeWindows(10), add, allowed_lateness=-1)


def test_operator_rejects_negative_allowed_lateness_string() -> None:
    with pytest.raises(ValueError, match=r"allowed_lateness must be >= 0, got '-5 seconds'"):
        WindowOperator(TumblingEventTimeWindows(10), add, allowed_lateness="-5 seconds")


@pytest.mark.parametrize("value", [True, 1.5, "whenever"])
def test_operator_rejects_allowed_lateness_of_wrong_type(value: Any) -> None:
    with pytest.raises(ValueError, match=r"allowed_lateness"):
        WindowOperator(TumblingEventTimeWindows(10), add, allowed_lateness=value)


@pytest.mark.parametrize("value", [0, "1 minute", timedelta(seconds=3)])
def test_operator_accepts_allowed_lateness(value: Any) -> None:
    op = WindowOperator(TumblingEventTimeWindows(10), add, allowed_lateness=value)
    assert op.allowed_lateness >= 0


def test_operator_allowed_lateness_is_normalised() -> None:
    op = WindowOperator(TumblingEventTimeWindows(10), add, allowed_lateness="2 seconds")
    assert op.allowed_lateness == 2000


@pytest.mark.parametrize("assigner", SESSION_ASSIGNERS, ids=SESSION_IDS)
def test_session_windows_reject_non_merging_trigger(assigner: Any) -> None:
    with pytest.raises(ValueError, match=r"trigger NonMergingTrigger\(\) cannot merge") as info:
        WindowOperator(assigner, add, trigger=NonMergingTrigger())
    assert "can_merge()" in str(info.value)


def test_session_windows_reject_purging_of_non_merging_trigger() -> None:
    with pytest.raises(ValueError, match=r"cannot merge"):
        WindowOperator(
            EventTimeSessionWindows(10), add, trigger=PurgingTrigger(NonMergingTrigger())
        )


def test_non_merging_trigger_is_fine_without_sessions() -> None:
    op = WindowOperator(TumblingEventTimeWindows(10), add, trigger=NonMergingTrigger())
    assert isinstance(op.trigger, NonMergingTrigger)
    op2 = WindowOperator(GlobalWindows(), add, trigger=NonMergingTrigger())
    assert op2.is_merging is False


@pytest.mark.parametrize(
    "trigger",
    [
        EventTimeTrigger(),
        ProcessingTimeTrigger(),
        CountTrigger(3),
        NeverTrigger(),
        PurgingTrigger(CountTrigger(2)),
    ],
    ids=repr,
)
def test_session_windows_accept_merging_triggers(trigger: Trigger[Any, Any]) -> None:
    op = WindowOperator(EventTimeSessionWindows(10), add, trigger=trigger)
    assert op.is_merging
    assert op.trigger is trigger


@pytest.mark.parametrize("assigner", SESSION_ASSIGNERS, ids=SESSION_IDS)
def test_fold_rejected_with_sessions(assigner: Any) -> None:
    with pytest.raises(ValueError, match=r"fold cannot be used with the merging window assigner"):
        WindowOperator(assigner, Fold([], Append()))


def test_fold_allowed_without_sessions() -> None:
    op = WindowOperator(TumblingEventTimeWindows(10), Fold([], Append()))
    assert op.spec.kind == "fold"


@pytest.mark.parametrize(
    "function",
    [5, None, "sum", Sum, Count, Collect, Legacy, Append(), [add]],
    ids=lambda f: f.__name__ if isinstance(f, type) else type(f).__name__,
)
def test_operator_rejects_wrong_function(function: Any) -> None:
    with pytest.raises(ValueError, match=r"function"):
        WindowOperator(TumblingEventTimeWindows(10), function)


def test_operator_rejects_class_instead_of_instance_naming_it() -> None:
    with pytest.raises(ValueError, match=r"got ABCMeta <class '.*Sum'>"):
        WindowOperator(TumblingEventTimeWindows(10), Sum)


def test_operator_rejects_int_function_naming_value() -> None:
    with pytest.raises(ValueError, match=r"got int 5$"):
        WindowOperator(TumblingEventTimeWindows(10), 5)


@pytest.mark.parametrize("window_function", [Count(), Sum(), add, 5, Collect, "process"])
def test_operator_rejects_wrong_window_function(window_function: Any) -> None:
    with pytest.raises(ValueError, match=r"window_function must be a ProcessWindowFunction"):
        WindowOperator(TumblingEventTimeWindows(10), add, window_function=window_function)


def test_operator_rejects_aggregate_as_window_function_naming_it() -> None:
    with pytest.raises(ValueError, match=r"aggregate: window_function .* got Count"):
        WindowOperator(TumblingEventTimeWindows(10), Count(), window_function=Count())


def test_operator_rejects_window_function_for_process() -> None:
    with pytest.raises(ValueError, match=r"not incremental; window_function is not allowed"):
        WindowOperator(TumblingEventTimeWindows(10), Collect(), window_function=Collect())


@pytest.mark.parametrize("assigner", [5, None, TumblingEventTimeWindows, "tumbling"])
def test_operator_rejects_non_assigner(assigner: Any) -> None:
    with pytest.raises(ValueError, match=r"assigner must be a WindowAssigner"):
        WindowOperator(assigner, add)


@pytest.mark.parametrize("trigger", [5, "count", CountTrigger, lambda *a: TriggerResult.FIRE])
def test_operator_rejects_non_trigger(trigger: Any) -> None:
    with pytest.raises(ValueError, match=r"trigger must be a Trigger"):
        WindowOperator(TumblingEventTimeWindows(10), add, trigger=trigger)


@pytest.mark.parametrize("evictor", [5, KeepAll, "count"])
def test_operator_rejects_non_evictor(evictor: Any) -> None:
    with pytest.raises(ValueError, match=r"evictor must be an Evictor"):
        WindowOperator(TumblingEventTimeWindows(10), add, evictor=evictor)


def test_operator_accepts_evictor() -> None:
    op = WindowOperator(TumblingEventTimeWindows(10), add, evictor=KeepAll())
    assert isinstance(op.evictor, KeepAll)


@pytest.mark.parametrize("tag", ["late", 5, OutputTag])
def test_operator_rejects_non_output_tag(tag: Any) -> None:
    with pytest.raises(ValueError, match=r"late_output_tag must be an OutputTag"):
        WindowOperator(TumblingEventTimeWindows(10), add, late_output_tag=tag)


def test_operator_harness_passes_validation_through() -> None:
    with pytest.raises(ValueError, match=r"allowed_lateness must be >= 0"):
        WindowOperatorHarness(TumblingEventTimeWindows(10), add, allowed_lateness=-1)
    with pytest.raises(ValueError, match=r"cannot merge"):
        WindowOperatorHarness(EventTimeSessionWindows(10), add, trigger=NonMergingTrigger())


# =========================================================================== triggers


@pytest.mark.parametrize("count", [0, -1, -100])
def test_count_trigger_below_one_fires_on_every_element_as_flink(count: int) -> None:
    with pytest.warns(UserWarning, match=rf"CountTrigger: max_count={count} fires on every"):
        trigger = CountTrigger(count)
    h = TriggerHarness(trigger)
    assert [h.process_element(v, None, GLOBAL_WINDOW).name for v in "abc"] == ["FIRE"] * 3


@pytest.mark.parametrize("count", [True, False, 1.0, 2.5, "3", None])
def test_count_trigger_not_an_int(count: Any) -> None:
    with pytest.raises(ValueError, match=r"max_count must be an int") as info:
        CountTrigger(count)
    assert repr(count) in str(info.value)


@pytest.mark.parametrize("inner", [None, 5, "count", CountTrigger, NonMergingTrigger, add])
def test_purging_trigger_needs_trigger(inner: Any) -> None:
    with pytest.raises(ValueError, match=r"trigger must be a Trigger") as info:
        PurgingTrigger(inner)
    assert repr(inner) in str(info.value)


@pytest.mark.parametrize("trigger", [None, 5, CountTrigger, "event-time"])
def test_trigger_harness_needs_trigger(trigger: Any) -> None:
    with pytest.raises(ValueError, match=r"trigger must be a Trigger"):
        TriggerHarness(trigger)


# =========================================================================== records / state


@pytest.mark.parametrize("name", ["", None, 5, b"late"])
def test_output_tag_needs_non_empty_str(name: Any) -> None:
    with pytest.raises(ValueError, match=r"OutputTag name must be a non-empty str") as info:
        OutputTag(name)
    assert repr(name) in str(info.value)


def test_output_tag_valid() -> None:
    assert OutputTag("late").name == "late"
    assert OutputTag("late") == OutputTag("late")
    assert hash(OutputTag("late")) == hash(OutputTag("late"))


@pytest.mark.parametrize("fn", [5, None, "sum", object()])
def test_reducing_state_descriptor_non_callable(fn: Any) -> None:
    with pytest.raises(ValueError, match=r"ReducingStateDescriptor\('total'\)") as info:
        ReducingStateDescriptor("total", fn)  # checked when the descriptor is built
    assert "reduce_function must be callable" in str(info.value)
    assert repr(fn) in str(info.value)


def test_reducing_state_descriptor_non_callable_via_reducer() -> None:
    with pytest.raises(ValueError, match=r"got 42$"):
        ReducingStateDescriptor("total", 42)


def test_state_table_rejects_non_descriptor() -> None:
    class Fake:
        name = "x"

    with pytest.raises(ValueError, match=r"descriptor must be a state descriptor"):
        StateTable().state(Fake(), "ns")


# =========================================================================== function specs


def test_reduce_spec_rejects_class() -> None:
    with pytest.raises(ValueError, match=r"reduce: function must be a .*got ABCMeta <class"):
        Reduce(Sum)


def test_fold_spec_rejects_non_callable() -> None:
    with pytest.raises(ValueError, match=r"fold: function must be a FoldFunction .*got int 3"):
        Fold([], 3)
