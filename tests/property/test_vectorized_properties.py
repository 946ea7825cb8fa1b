"""Differential tests: a VectorizedAggregateFunction on the window operator (through its
adapter) gives the results of the equivalent per-row AggregateFunction, whatever the
assigner, trigger, evictor, lateness and the batches its rows are split into."""

from __future__ import annotations

from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from windowing import (
    MAX_TIMESTAMP,
    AggregateFunction,
    ContinuousEventTimeTrigger,
    CountEvictor,
    CountTrigger,
    EventTimeSessionWindows,
    HoppingEventTimeWindows,
    OutputTag,
    PurgingTrigger,
    TumblingEventTimeWindows,
    VectorizedAggregateFunction,
)
from windowing.functions import vectorized as vec
from windowing.testing import WindowOperatorHarness

LATE = OutputTag("late")

Acc = tuple[int, int, Any, Any]  # count, sum, first, last


class RowStats(AggregateFunction[Any, Acc, Acc]):
    """Count, sum, first and last ``x``: first and last make it order-sensitive."""

    def create_accumulator(self) -> Acc:
        return (0, 0, None, None)

    def add(self, value: Any, acc: Acc) -> Acc:
        x = value["x"]
        return (acc[0] + 1, acc[1] + x, x if acc[0] == 0 else acc[2], x)

    def merge(self, a: Acc, b: Acc) -> Acc:
        if not b[0]:
            return a
        if not a[0]:
            return b
        return (a[0] + b[0], a[1] + b[1], a[2], b[3])

    def get_result(self, acc: Acc) -> Acc:
        return acc


class BatchStats(VectorizedAggregateFunction[Acc, Acc]):
    batch_format = "numpy"

    def create_accumulator(self) -> Acc:
        return (0, 0, None, None)

    def add_batch(self, batch: Any, acc: Acc) -> Acc:
        x = batch["x"]
        part = (len(x), int(x.sum()), int(x[0]), int(x[-1]))
        return self.merge(acc, part)

    def merge(self, a: Acc, b: Acc) -> Acc:
        return RowStats.merge(RowStats(), a, b)

    def get_result(self, acc: Acc) -> Acc:
        return acc


class RowSums(RowStats):
    order_insensitive = True

    def get_result(self, acc: Acc) -> Acc:
        return (acc[0], acc[1], None, None)


class BatchSums(BatchStats):
    order_insensitive = True
    batch_format = "arrow"

    def add_batch(self, batch: Any, acc: Acc) -> Acc:
        x = batch.column("x").to_pylist()
        return self.merge(acc, (len(x), sum(x), x[0], x[-1]))

    def get_result(self, acc: Acc) -> Acc:
        return (acc[0], acc[1], None, None)


ASSIGNERS = {
    "tumbling": lambda: TumblingEventTimeWindows(10, offset=3),
    "hopping": lambda: HoppingEventTimeWindows(10, 4),
    "session": lambda: EventTimeSessionWindows(6),
}
TRIGGERS = {
    "default": lambda: None,
    "count": lambda: CountTrigger(3),
    "purging_count": lambda: PurgingTrigger(CountTrigger(2)),
    "continuous": lambda: ContinuousEventTimeTrigger(5),
}
PAIRS = {"ordered": (RowStats, BatchStats), "insensitive": (RowSums, BatchSums)}

# Mostly elements, close in time (sessions merge, windows get several rows before they
# fire), and a watermark that moves in small steps (firings, late firings, late rows).
timestamps = st.one_of(st.integers(-40, 120), st.integers(0, 30))
element = st.tuples(st.just("e"), st.sampled_from("ab"), timestamps)
drawn = st.lists(
    st.one_of(element, element, element, st.tuples(st.just("w"), st.integers(0, 12))),
    max_size=60,
)


@st.composite
def spread(draw: Any) -> list[Any]:
    """Steps with times spread evenly (hypothesis draws small numbers more often, which
    seldom bridge two sessions)."""
    rnd = draw(st.randoms(use_true_random=False))
    steps: list[Any] = []
    for _ in range(rnd.randint(0, 60)):
        if rnd.random() < 0.8:
            steps.append(("e", rnd.choice("ab"), rnd.randint(-40, 120)))
        else:
            steps.append(("w", rnd.randint(0, 12)))
    return steps


actions = st.one_of(drawn, spread())


def run(function: Any, assigner: str, trigger: str, evict: bool, lateness: int, steps: Any) -> Any:
    h = WindowOperatorHarness(
        ASSIGNERS[assigner](),
        function,
        trigger=TRIGGERS[trigger](),
        evictor=CountEvictor(2) if evict else None,
        allowed_lateness=lateness,
        late_output_tag=LATE,
    )
    wm = -50
    for i, step in enumerate(steps):
        if step[0] == "e":
            h.process_element({"x": i}, step[2], step[1])
        else:
            wm += step[1]
            h.process_watermark(wm)
    h.process_watermark(MAX_TIMESTAMP)
    out = sorted(
        (r.key, r.window.start, r.window.end, tuple(r.value), r.timestamp)
        for r in h.extract_output()
    )
    late = sorted((e.key, e.timestamp, e.value["x"]) for e in h.extract_side_output(LATE))
    return out, late, h.metrics, h.num_state_entries(), h.num_event_time_timers()


@settings(max_examples=150)
@example(  # a row bridging two sessions: their accumulators merge, rows pending in both
    pair="ordered",
    assigner="session",
    trigger="default",
    evict=False,
    lateness=0,
    pending=65_536,
    steps=[("e", "a", 1), ("e", "a", 10), ("e", "a", 5)],
)
@given(
    pair=st.sampled_from(sorted(PAIRS)),
    assigner=st.sampled_from(sorted(ASSIGNERS)),
    trigger=st.sampled_from(sorted(TRIGGERS)),
    evict=st.booleans(),
    lateness=st.sampled_from([0, 7, 25]),
    pending=st.sampled_from([1, 2, 65_536]),
    steps=actions,
)
def test_vectorized_gives_the_per_row_results(
    pair: str,
    assigner: str,
    trigger: str,
    evict: bool,
    lateness: int,
    pending: int,
    steps: Any,
) -> None:
    """Results, late rows, metrics and what is left in state are the per-row function's,
    however many rows the adapter holds before it adds them (``pending``)."""
    per_row, batched = PAIRS[pair]
    reference = run(per_row(), assigner, trigger, evict, lateness, steps)
    saved = vec.MAX_PENDING_ROWS
    vec.MAX_PENDING_ROWS = pending
    try:
        assert run(batched(), assigner, trigger, evict, lateness, steps) == reference
    finally:
        vec.MAX_PENDING_ROWS = saved
