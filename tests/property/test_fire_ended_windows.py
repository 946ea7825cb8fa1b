"""``windowing.operator.fire_ended_windows``: a key's bounded input in timestamp order, fed chunk
by chunk with the windows no later element reaches fired after each chunk, gives exactly what
``process_to_end`` gives (the end of input firing everything): the same outputs in the same
order (with their panes), the same metrics, the same watermark seen by functions and
evictors, the same per-key state written by process functions; and the key keeps only its
open windows.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from windowing import MAX_TIMESTAMP, MIN_TIMESTAMP, OutputTag
from windowing.assigners import (
    DynamicEventTimeSessionWindows,
    EventTimeSessionWindows,
    GlobalWindows,
    HoppingEventTimeWindows,
    SlidingDistinctAssigner,
    TumblingEventTimeWindows,
)
from windowing.evictors import CountEvictor
from windowing.functions import Aggregate, AggregateFunction, Process, ProcessWindowFunction, Reduce
from windowing.operator import WindowOperator, fire_ended_windows, fires_ended_windows
from windowing.state import ValueStateDescriptor
from windowing.triggers import ContinuousEventTimeTrigger, CountTrigger, EventTimeTrigger

SIDE = OutputTag("side")


class Seen(ProcessWindowFunction[int, tuple[Any, ...], Any, Any]):
    """Everything a process function observes: the window, its elements in order, the
    watermark, and a per-key firing count kept in the key's global state."""

    FIRINGS = ValueStateDescriptor("firings", 0)

    def process(self, key: Any, context: Any, elements: Any) -> Any:
        firings = context.global_state().get_state(self.FIRINGS)
        firings.update(firings.value() + 1)
        context.output(SIDE, firings.value())
        window = context.window()
        yield (window.start, window.end, context.current_watermark(), firings.value(), *elements)


class CountSum(AggregateFunction[int, list[int], tuple[int, int]]):
    def create_accumulator(self) -> list[int]:
        return [0, 0]

    def add(self, value: int, acc: list[int]) -> list[int]:
        acc[0] += 1
        acc[1] += value
        return acc

    def get_result(self, acc: list[int]) -> tuple[int, int]:
        return (acc[0], acc[1])

    def merge(self, a: list[int], b: list[int]) -> list[int]:
        return [a[0] + b[0], a[1] + b[1]]


FUNCTIONS = {
    "reduce": lambda: Reduce(lambda a, b: a * 31 + b),  # order-sensitive on purpose
    "aggregate": lambda: Aggregate(CountSum()),
    "process": lambda: Process(Seen()),
    "reduce_process": lambda: Reduce(lambda a, b: a * 31 + b, window_function=Seen()),
}
ASSIGNERS = {
    "tumbling": lambda: TumblingEventTimeWindows(10, offset=3),
    "hopping": lambda: HoppingEventTimeWindows(10, 4, offset=-1),
    "session": lambda: EventTimeSessionWindows(6),
    "dynamic_session": lambda: DynamicEventTimeSessionWindows(lambda v: 1 + v % 7),
}


def run(
    assigner: Any,
    function: Any,
    stamps: list[int],
    chunks: list[int] | None,
    *,
    lateness: int = 0,
    evictor: Any = None,
    trigger: Any = None,
    pane_info: bool = False,
) -> tuple[Any, ...]:
    """The outputs of one key whose elements are ``stamps`` (sorted), as the end of input
    fires them (``chunks=None``), or fed in chunks of those sizes with the ended windows
    fired after each; also the most windows the key held between chunks."""
    op = WindowOperator(
        assigner,
        function,
        evictor=evictor,
        trigger=trigger,
        allowed_lateness=lateness,
        late_output_tag=OutputTag("late"),
        pane_info=pane_info,
    )
    elements = [(i % 13, t, "k") for i, t in enumerate(stamps)]
    held = 0
    if chunks is None:
        op.process_to_end("k", elements)
    else:
        at = 0
        for size in chunks:
            part = elements[at : at + size]
            at += size
            op.process_elements(part)
            if part:
                assert fire_ended_windows(op, "k", part[-1][1] - 2) is fires_ended_windows(op)
                assert op.watermark == MIN_TIMESTAMP
            held = max(held, len(list(op.iter_windows("k"))))
        op.process_elements(elements[at:])
        op.process_watermark(MAX_TIMESTAMP)
        op.advance_processing_time(MAX_TIMESTAMP)
    windows = len(list(op.iter_windows("k")))
    return op.output, op.side_outputs, op.metrics, windows, held


stamps_st = st.lists(st.integers(-60, 200), min_size=1, max_size=60).map(sorted)
chunks_st = st.lists(st.integers(1, 9), min_size=1, max_size=30)


@pytest.mark.parametrize("function", sorted(FUNCTIONS))
@pytest.mark.parametrize("assigner", sorted(ASSIGNERS))
@given(
    stamps=stamps_st,
    chunks=chunks_st,
    lateness=st.sampled_from([0, 7]),
    pane_info=st.booleans(),
)
def test_firing_ended_windows_early_equals_firing_them_at_the_end(
    assigner: str,
    function: str,
    stamps: list[int],
    chunks: list[int],
    lateness: int,
    pane_info: bool,
) -> None:
    options = {"lateness": lateness, "pane_info": pane_info}
    want = run(ASSIGNERS[assigner](), FUNCTIONS[function](), stamps, None, **options)
    got = run(ASSIGNERS[assigner](), FUNCTIONS[function](), stamps, chunks, **options)
    assert got[:4] == want[:4]
    if function in ("process", "reduce_process"):
        assert all(r.value[2] == MAX_TIMESTAMP for r in got[0])  # as at the end of input


@given(stamps=stamps_st, chunks=chunks_st)
def test_an_evictor_sees_what_it_sees_at_the_end(stamps: list[int], chunks: list[int]) -> None:
    assigner = TumblingEventTimeWindows(10)
    want = run(assigner, Process(Seen()), stamps, None, evictor=CountEvictor(2))
    got = run(assigner, Process(Seen()), stamps, chunks, evictor=CountEvictor(2))
    assert got[:4] == want[:4]


def test_the_key_keeps_its_open_windows_only() -> None:
    stamps = list(range(0, 1_000, 3))
    _, _, _, _, held = run(TumblingEventTimeWindows(10), Process(Seen()), stamps, [7] * 200)
    assert held <= 2  # without firing early it would hold all 100 windows
    _, _, _, _, held = run(EventTimeSessionWindows(2), Process(Seen()), stamps, [7] * 200)
    assert held <= 4


@pytest.mark.parametrize(
    ("assigner", "trigger"),
    [
        (TumblingEventTimeWindows(10), CountTrigger(3)),  # a trigger of its own timers
        (TumblingEventTimeWindows(10), ContinuousEventTimeTrigger(4)),
        (GlobalWindows(), None),
        (SlidingDistinctAssigner(10, grace=0), None),
    ],
)
def test_other_triggers_and_assigners_fire_nothing_early(assigner: Any, trigger: Any) -> None:
    op = WindowOperator(assigner, Process(Seen()), trigger=trigger)
    op.process_elements([(1, t, "k") for t in range(0, 50, 2)])
    before = len(op.output)
    assert not fires_ended_windows(op)
    assert fire_ended_windows(op, "k", 40) is False
    assert len(op.output) == before


def test_nothing_fires_once_a_watermark_exists() -> None:
    op = WindowOperator(TumblingEventTimeWindows(10), Process(Seen()), trigger=EventTimeTrigger())
    op.process_elements([(1, t, "k") for t in range(0, 50, 2)])
    op.process_watermark(5)
    assert fire_ended_windows(op, "k", 40) is False
    assert op.output == []
