"""Dropping dead entries of the in-memory driver's heap of due keys changes nothing.

A key rescheduled at a time it already has an entry for leaves a dead duplicate in the heap
(long windows: the same next timer after every visit); ``windowing.due.compact`` drops them.
Runs with the heap compacted before every watermark and never compacted must emit the same
results in the same order.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from windowing import MAX_TIMESTAMP, OutputTag
from windowing.assigners import (
    EventTimeSessionWindows,
    HoppingEventTimeWindows,
    SlidingDistinctAssigner,
    TumblingEventTimeWindows,
)
from windowing.due import compact
from windowing.functions import AggregateFunction
from windowing.testing import WindowOperatorHarness

LATE = OutputTag("late")

ASSIGNERS = {
    "sliding": lambda: SlidingDistinctAssigner(40, grace=3),
    "sliding_short": lambda: SlidingDistinctAssigner(4, grace=0),
    "tumbling": lambda: TumblingEventTimeWindows(10),
    "hopping": lambda: HoppingEventTimeWindows(30, 5),
    "session": lambda: EventTimeSessionWindows(6),
}

steps_lists = st.lists(
    st.one_of(
        st.tuples(st.just("e"), st.sampled_from("abcdef"), st.integers(0, 200)),
        st.tuples(st.just("w"), st.just(""), st.integers(0, 12)),
    ),
    max_size=120,
)


def run(assigner: str, steps: list[tuple[str, str, int]], *, compact: bool) -> tuple[Any, ...]:
    h = WindowOperatorHarness(
        ASSIGNERS[assigner](), lambda a, b: a + b, allowed_lateness=3, late_output_tag=LATE
    )
    op = h.operator
    outputs: list[Any] = []
    wm = 0
    for i, (kind, key, x) in enumerate(steps):
        if kind == "e":
            h.process_elements([(i, wm + x // 4 if x % 3 else x, key)])
        else:
            wm += x
            op.scheduler.compact_at = -1 if compact else MAX_TIMESTAMP
            h.process_watermark(wm)
            outputs.append(h.extract_output())  # in emission order
    h.process_watermark(MAX_TIMESTAMP)
    outputs.append(h.extract_output())
    return outputs, h.extract_side_output(LATE), h.metrics, h.num_keys()


@given(assigner=st.sampled_from(sorted(ASSIGNERS)), steps=steps_lists)
def test_compacting_the_due_heap_keeps_the_order_of_visits(
    assigner: str, steps: list[tuple[str, str, int]]
) -> None:
    assert run(assigner, steps, compact=True) == run(assigner, steps, compact=False)


def test_compaction_keeps_the_first_entry_of_a_key_at_a_time() -> None:
    due = [(5, 1, "a"), (5, 2, "b"), (9, 3, "a"), (5, 4, "a"), (9, 5, "a"), (7, 6, "b")]
    compact(due)
    assert sorted(due) == [(5, 1, "a"), (5, 2, "b"), (7, 6, "b"), (9, 3, "a")]


class FailingSum(AggregateFunction[int, int, int]):
    """A sum whose result fails once for the total 14."""

    def __init__(self) -> None:
        self.armed = True

    def create_accumulator(self) -> int:
        return 0

    def add(self, value: int, acc: int) -> int:
        return acc + value

    def get_result(self, acc: int) -> int:
        if acc == 14 and self.armed:
            self.armed = False
            raise RuntimeError("boom")
        return acc

    def merge(self, a: int, b: int) -> int:
        return a + b


@pytest.mark.parametrize("assigner", sorted(ASSIGNERS))
def test_keys_not_visited_by_an_interrupted_drain_stay_due(assigner: str) -> None:
    h = WindowOperatorHarness(ASSIGNERS[assigner](), FailingSum())
    # key "b" fails while its windows are evaluated; "a" comes before it, "c" after it
    h.process_elements([(1, 1, "a"), (2, 2, "a"), (13, 3, "b"), (1, 4, "b"), (5, 5, "c")])
    h.process_elements([(6, 6, "c")])
    with pytest.raises(RuntimeError, match="boom"):
        h.process_watermark(100)
    first = {r.key for r in h.extract_output()}
    h.process_watermark(100)  # the keys not visited yet are still due
    second = {r.key for r in h.extract_output()}
    assert "a" in first
    assert "c" in second
    assert "c" not in first
