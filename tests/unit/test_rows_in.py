"""The rows a window took in (``WindowSummary.num_rows_in``, ``read_state``'s ``num_rows_in``)
and how its state holds them (``state_form``), counted by every strategy that keeps a
window's contents, whatever the contents are (an accumulator that is a list is not a list of
elements)."""

from __future__ import annotations

import random
from typing import Any

import pytest

from windowing.assigners import (
    EventTimeSessionWindows,
    HoppingEventTimeWindows,
    SlidingDistinctAssigner,
    TumblingEventTimeWindows,
)
from windowing.engine.encoding import decode_key_state, encode_key_state
from windowing.evictors import CountEvictor
from windowing.functions import AggregateFunction, ProcessWindowFunction
from windowing.operator import WindowOperator
from windowing.plan import StateForm, Strategy
from windowing.triggers import CountTrigger, EventTimeTrigger, PurgingTrigger
from windowing.windows import TimeWindow


class SumAndCount(AggregateFunction[int, list[int], tuple[int, int]]):
    """An accumulator that is a list of two numbers (not two elements)."""

    order_insensitive = True

    def create_accumulator(self) -> list[int]:
        return [0, 0]

    def add(self, value: int, acc: list[int]) -> list[int]:
        return [acc[0] + value, acc[1] + 1]

    def get_result(self, acc: list[int]) -> tuple[int, int]:
        return (acc[0], acc[1])

    def merge(self, a: list[int], b: list[int]) -> list[int]:
        return [a[0] + b[0], a[1] + b[1]]


class Collect(ProcessWindowFunction[int, list[int], Any, Any]):
    def process(self, key: Any, context: Any, elements: Any) -> Any:
        yield list(elements)


class GenericEventTimeTrigger(EventTimeTrigger):
    """The built-in trigger's behaviour on the generic (not inlined) path."""


def open_windows(op: WindowOperator) -> dict[tuple[Any, Any], Any]:
    """Every key's open windows: (key, window) -> summary."""
    found = {}
    for key, ks in op.backend.items():
        for s in op.window_summaries(ks):
            found[(key, s.window)] = s
    return found


def run(op: WindowOperator, elements: list[tuple[int, int, str]], watermark: int) -> None:
    op.process_elements(elements)
    op.process_watermark(watermark)


def test_an_accumulator_list_is_one_accumulator_that_took_in_its_rows() -> None:
    op = WindowOperator(TumblingEventTimeWindows(10), SumAndCount(), count_rows=True)
    run(op, [(v, t, "k") for v, t in [(1, 1), (2, 2), (3, 3), (4, 12)]], 5)
    got = {
        w: (s.state_form, s.num_rows_in, s.num_stored_elements)
        for (_, w), s in open_windows(op).items()
    }
    assert got == {
        TimeWindow(0, 10): (StateForm.ACCUMULATOR, 3, None),
        TimeWindow(10, 20): (StateForm.ACCUMULATOR, 1, None),
    }


def test_without_count_rows_nothing_is_counted() -> None:
    op = WindowOperator(TumblingEventTimeWindows(10), SumAndCount())
    run(op, [(1, 1, "k"), (2, 2, "k")], 0)
    (summary,) = open_windows(op).values()
    assert (summary.state_form, summary.num_rows_in) == (StateForm.ACCUMULATOR, None)
    assert op.backend.get("k").row_counts is None  # type: ignore[union-attr]


def test_an_evictor_keeps_fewer_elements_than_the_window_took_in() -> None:
    op = WindowOperator(
        TumblingEventTimeWindows(10),
        lambda a, b: a + b,
        evictor=CountEvictor(2),
        trigger=CountTrigger(2),
        count_rows=True,
    )
    run(op, [(v, v, "k") for v in range(1, 6)], 0)  # fired at 2 and 4, keeping 2 each time
    (summary,) = open_windows(op).values()
    assert summary.state_form is StateForm.ELEMENTS  # an evictor buffers the elements
    assert (summary.num_rows_in, summary.num_stored_elements) == (5, 3)


def test_a_purge_starts_the_count_over() -> None:
    op = WindowOperator(
        TumblingEventTimeWindows(100),
        SumAndCount(),
        trigger=PurgingTrigger(CountTrigger(3)),
        count_rows=True,
    )
    run(op, [(v, v, "k") for v in range(1, 5)], 0)  # fired and purged at the third
    assert [s.num_rows_in for s in open_windows(op).values()] == [1]
    run(op, [(v, v, "k") for v in range(5, 9)], 0)  # purged again at the sixth
    assert [s.num_rows_in for s in open_windows(op).values()] == [2]


# The same input through a reduce (one accumulator) and a process function (the elements):
# a window took in as many rows as the process function's window keeps, on every strategy.
ASSIGNERS = {
    "tumbling": (lambda: TumblingEventTimeWindows(10), None, Strategy.ALIGNED),
    "hopping": (lambda: HoppingEventTimeWindows(20, 5), False, Strategy.ALIGNED),
    "panes": (lambda: HoppingEventTimeWindows(20, 5), True, Strategy.PANES),
    "sessions": (lambda: EventTimeSessionWindows(4), None, Strategy.SESSIONS),
    "generic": (lambda: TumblingEventTimeWindows(10), "generic", Strategy.GENERIC),
    "generic-sessions": (lambda: EventTimeSessionWindows(4), "generic", Strategy.GENERIC),
}


@pytest.mark.parametrize("name", sorted(ASSIGNERS))
@pytest.mark.parametrize("seed", range(5))
def test_an_accumulator_took_in_the_rows_a_process_function_keeps(name: str, seed: int) -> None:
    make, option, strategy = ASSIGNERS[name]
    rng = random.Random(seed)
    # out of order, with late rows (allowed lateness 6) and sessions that merge
    elements = [(i, rng.randrange(0, 60), rng.choice("ab")) for i in range(80)]
    ops = []
    for fn in (SumAndCount(), Collect()):
        trigger = GenericEventTimeTrigger() if option == "generic" else None
        slicing = option if isinstance(option, bool) else None
        if option is True and isinstance(fn, Collect):
            slicing = None  # panes are for incremental functions: the elements per window
        op = WindowOperator(
            make(), fn, trigger=trigger, allowed_lateness=6, slicing=slicing, count_rows=True
        )
        for start in range(0, 80, 10):  # watermarks between the elements: late firings
            run(op, elements[start : start + 10], elements[start][1] - 12)
        ops.append(op)
    assert ops[0].plan.strategy is strategy
    reduced, buffered = (open_windows(op) for op in ops)
    assert reduced.keys() == buffered.keys() and reduced
    for where, summary in reduced.items():
        assert summary.state_form is StateForm.ACCUMULATOR
        assert summary.num_stored_elements is None
        assert summary.num_rows_in == buffered[where].num_stored_elements, where
        assert buffered[where].num_rows_in == buffered[where].num_stored_elements, where


def test_kip450_windows_are_not_counted() -> None:
    op = WindowOperator(SlidingDistinctAssigner(10, grace=5), SumAndCount(), count_rows=True)
    run(op, [(1, 1, "k"), (2, 4, "k")], 0)
    assert {s.num_rows_in for s in open_windows(op).values()} == {None}


def test_counts_are_kept_with_the_state_and_unknown_for_an_earlier_state() -> None:
    op = WindowOperator(EventTimeSessionWindows(4), SumAndCount(), count_rows=True)
    run(op, [(1, 1, "k"), (2, 2, "k"), (3, 20, "k")], 0)
    ks = op.backend.get("k")
    assert ks is not None
    restored = decode_key_state(encode_key_state(ks))
    assert [(s.window, s.num_rows_in) for s in op.window_summaries(restored)] == [
        (TimeWindow(1, 6), 2),
        (TimeWindow(20, 24), 1),
    ]
    # a state written without counts (an earlier version): its windows' rows are unknown,
    # a window that starts afterwards is counted
    ks.row_counts = None
    earlier = decode_key_state(encode_key_state(ks))
    assert earlier.row_counts is None
    op.backend.put("k", earlier)
    run(op, [(4, 3, "k"), (5, 40, "k")], 0)
    assert [(s.window, s.num_rows_in) for s in op.window_summaries(earlier)] == [
        (TimeWindow(1, 7), None),
        (TimeWindow(20, 24), None),
        (TimeWindow(40, 44), 1),
    ]
    # merging a counted session into an uncounted one leaves it uncounted
    run(op, [(6, 23, "k")], 0)
    assert [s.num_rows_in for s in op.window_summaries(earlier)][1] is None
