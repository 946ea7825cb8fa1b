"""Differential tests: the operator's inlined fast paths against its generic path.

The operator inlines the built-in ``EventTimeTrigger`` (element and timer paths) and the
tumbling/hopping assigners (bulk element loop), and keeps hopping windows with a reduce or
aggregate as panes (``windowing.engine.panes``). A subclass of ``EventTimeTrigger`` has the same
behaviour but takes the generic path, so every observable result must be identical.
"""

from __future__ import annotations

import pickle
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from windowing import MAX_TIMESTAMP, MIN_TIMESTAMP, OutputTag
from windowing.assigners import (
    EventTimeSessionWindows,
    HoppingEventTimeWindows,
    SlidingDistinctAssigner,
    TumblingEventTimeWindows,
)
from windowing.functions import Aggregate, AggregateFunction, Process, ProcessWindowFunction, Reduce
from windowing.testing import WindowOperatorHarness
from windowing.triggers import EventTimeTrigger

LATE = OutputTag("late")


class GenericEventTimeTrigger(EventTimeTrigger):
    """Same behaviour as EventTimeTrigger, but not inlined by the operator."""


class CountAgg(AggregateFunction[int, list[int], tuple[int, int]]):
    def create_accumulator(self) -> list[int]:
        return [0, 0]

    def add(self, value: int, acc: list[int]) -> list[int]:
        acc[0] += 1  # mutating accumulator, as Flink allows
        acc[1] += value
        return acc

    def get_result(self, acc: list[int]) -> tuple[int, int]:
        return (acc[0], acc[1])

    def merge(self, a: list[int], b: list[int]) -> list[int]:
        a[0] += b[0]
        a[1] += b[1]
        return a


class NoneWhenEven(CountAgg):
    """A result of None makes a window empty (nothing emitted, Flink's rule)."""

    def get_result(self, acc: list[int]) -> Any:
        return None if acc[0] % 2 == 0 else (acc[0], acc[1])


class Collect(ProcessWindowFunction[int, tuple[int, ...], Any, Any]):
    def process(self, key: Any, context: Any, elements: Any) -> Any:
        yield (context.window().start, *elements)


FUNCTIONS = {
    "reduce": lambda: Reduce(lambda a, b: a * 31 + b),  # order-sensitive on purpose
    "reduce_max": lambda: Reduce(max),
    "aggregate": lambda: Aggregate(CountAgg()),
    "aggregate_none": lambda: Aggregate(NoneWhenEven()),
    "process": lambda: Process(Collect()),
}
ASSIGNERS = {
    "tumbling": lambda: TumblingEventTimeWindows(10, offset=3),
    "hopping": lambda: HoppingEventTimeWindows(10, 4, offset=-1),
    "hopping_gaps": lambda: HoppingEventTimeWindows(5, 7),
    "hopping_panes": lambda: HoppingEventTimeWindows(9, 6, offset=2),  # panes of 3
    "hopping_wide": lambda: HoppingEventTimeWindows(30, 5),
    "session": lambda: EventTimeSessionWindows(6),
}
# KIP-450 windows: their own differential tests are in test_sliding_properties.py.
ALL_ASSIGNERS = {**ASSIGNERS, "sliding_distinct": lambda: SlidingDistinctAssigner(8, grace=0)}

# Timestamps either anywhere or packed into a few windows, so that consecutive elements of a
# key often share windows (the bulk loop's window cache) or sit in the same slide.
timestamps = st.one_of(st.integers(-40, 120), st.integers(0, 12), st.integers(0, 40))
actions = st.lists(
    st.one_of(
        st.tuples(st.just("e"), st.sampled_from("ab"), timestamps),
        st.tuples(st.just("e"), st.sampled_from("ab"), timestamps),
        st.tuples(st.just("w"), st.integers(0, 30)),
    ),
    max_size=80,
)


def run(
    assigner: str,
    function: str,
    lateness: int,
    steps: list[Any],
    *,
    generic: bool,
    bulk: bool,
    base: int = 0,
) -> tuple[Any, ...]:
    harness = WindowOperatorHarness(
        ALL_ASSIGNERS[assigner](),
        FUNCTIONS[function](),
        trigger=GenericEventTimeTrigger() if generic else None,
        allowed_lateness=lateness,
        late_output_tag=LATE,
        # Slicing combines a window's elements pane by pane: only for order-insensitive
        # functions (see windowing/engine/panes.py).
        slicing=function != "reduce",
    )
    wm = base - 50
    pending: list[tuple[int, int, str]] = []

    def flush() -> None:
        if bulk:
            harness.process_elements(pending)
        else:
            for value, ts, key in pending:
                harness.process_element(value, ts, key)
        pending.clear()

    for i, step in enumerate(steps):
        if step[0] == "e":
            pending.append((i, base + step[2], step[1]))
        else:
            flush()
            wm += step[1]
            harness.process_watermark(wm)
    flush()
    mid = sorted(harness.extract_output())
    live = {k: list(harness.operator.iter_windows(k)) for k in "ab"}
    counters = (harness.num_state_entries(), harness.num_event_time_timers())
    harness.process_watermark(MAX_TIMESTAMP)
    return (
        mid,
        live,
        counters,
        sorted(harness.extract_output()),
        sorted(harness.extract_side_output(LATE)),
        harness.metrics,
        harness.num_state_entries(),
        harness.num_event_time_timers(),
    )


#: Where the scenarios happen: around 0, and within a few windows of both ends of time
#: (window ends clamped, cleanup times saturated, element-late sums wrapping).
BASES = [0, 0, MAX_TIMESTAMP - 130, MIN_TIMESTAMP + 60]


@pytest.mark.filterwarnings("ignore::windowing.errors.NullResultWarning")
@settings(max_examples=400)
@given(
    assigner=st.sampled_from(sorted(ASSIGNERS)),
    function=st.sampled_from(sorted(FUNCTIONS)),
    lateness=st.sampled_from([0, 1, 7, 25, 100, MAX_TIMESTAMP // 2, MAX_TIMESTAMP]),
    base=st.sampled_from(BASES),
    steps=actions,
)
@example(  # the pane layout cleaned up windows whose cleanup time saturates: Flink keeps them
    assigner="hopping",
    function="aggregate",
    lateness=100,
    base=MAX_TIMESTAMP - 130,
    steps=[("e", "a", 90)],
)
def test_fast_paths_match_generic_path(
    assigner: str, function: str, lateness: int, base: int, steps: list[Any]
) -> None:
    """Every path gives the generic path's outputs, late elements, metrics, live windows,
    state entries and timers, anywhere in the time range."""
    kw = {"base": base}
    reference = outcome(run, assigner, function, lateness, steps, generic=True, bulk=False, **kw)
    if isinstance(reference[0], str):
        # A session window that kept its state (below) merging into a window already past its
        # cleanup time: Flink's UnsupportedOperationException, on every path.
        assert function == "aggregate_none" and assigner == "session", reference
    fast = outcome(run, assigner, function, lateness, steps, generic=False, bulk=False, **kw)
    assert fast == reference
    bulk = outcome(run, assigner, function, lateness, steps, generic=False, bulk=True, **kw)
    assert bulk == reference
    # after the final watermark everything is cleaned up, except (as in Flink) a window whose
    # late firing found a None result: that skips registering its cleanup timer (and a
    # later merge with such a stale session window can raise Flink's "end timestamp ...
    # earlier than the current watermark by merging" error, in every path alike)
    # A window whose cleanup time saturates at the end of time is never cleaned up (Flink
    # registers no cleanup timer at Long.MAX_VALUE).
    saturated = base + 120 + 30 + lateness >= MAX_TIMESTAMP
    if function != "aggregate_none" and not saturated:
        assert reference[6] == 0 and reference[7] == 0


def outcome(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """``fn``'s result, or the type and message of the error it raised."""
    try:
        return fn(*args, **kwargs)
    except Exception as exc:
        return (type(exc).__name__, str(exc))


def test_session_bridge_merges_contents_in_fast_path() -> None:
    # [0, 6) and [8, 14) are separate sessions; an element at 4 ([4, 10)) bridges them.
    steps = [("e", "a", 0), ("e", "a", 8), ("e", "a", 4), ("w", 1), ("e", "a", 20)]
    for function in FUNCTIONS:
        reference = run("session", function, 0, steps, generic=True, bulk=False)
        assert run("session", function, 0, steps, generic=False, bulk=True) == reference
    final = run("session", "aggregate", 0, steps, generic=False, bulk=True)[3]
    assert [(r.window.start, r.window.end, r.value) for r in final] == [
        (0, 14, (3, 3)),  # the three elements (values 0, 1, 2) in one session
        (20, 26, (1, 4)),
    ]


def run_per_key(assigner: str, function: str, lateness: int, steps: list[Any]) -> tuple[Any, ...]:
    """The streaming runtime's use of the operator: each key's state loaded from (pickled)
    storage, its due timers fired, its elements added with ``process_key_elements``, stored
    again; keys without elements fired when their next timer is due."""
    from windowing.operator import WindowOperator

    op = WindowOperator(
        ALL_ASSIGNERS[assigner](),
        FUNCTIONS[function](),
        allowed_lateness=lateness,
        late_output_tag=LATE,
        slicing=function != "reduce",
    )
    store: dict[str, bytes] = {}
    pending: dict[str, list[tuple[int, int, str]]] = {}

    def visit(key: str, elements: list[tuple[int, int, str]]) -> None:
        ks = pickle.loads(store[key]) if key in store else op.new_key_state()
        op.fire_timers(key, ks)
        ks = op.process_key_elements(key, ks, elements)
        store[key] = pickle.dumps(ks)

    def flush() -> None:
        for key in sorted(set(store) | set(pending)):
            elements = pending.pop(key, [])
            due = None if key not in store else pickle.loads(store[key]).next_event_time()
            if elements or (due is not None and due <= op.watermark):
                visit(key, elements)

    for i, step in enumerate(steps):
        if step[0] == "e":
            pending.setdefault(step[1], []).append((i, step[2], step[1]))
        else:
            flush()
            op.set_clocks(
                watermark=max(op.watermark, -50 + sum(s[1] for s in steps[: i + 1] if s[0] == "w"))
            )
    flush()
    mid = sorted(op.output)
    op.output.clear()
    op.set_clocks(watermark=MAX_TIMESTAMP)
    flush()
    assert (
        not op.scheduler.evt_due and not op.scheduler.evt_sched
    )  # nothing left in the multi-key driver
    return mid, sorted(op.output), sorted(op.side_outputs.get(LATE, [])), op.metrics


@pytest.mark.filterwarnings("ignore::windowing.errors.NullResultWarning")
@settings(max_examples=200)
@given(
    assigner=st.sampled_from(sorted(ALL_ASSIGNERS)),
    function=st.sampled_from(sorted(FUNCTIONS)),
    lateness=st.sampled_from([0, 1, 7, 25]),
    steps=actions,
)
def test_per_key_runtime_matches_harness(
    assigner: str, function: str, lateness: int, steps: list[Any]
) -> None:
    # The same (built-in) trigger as the per-key run: sliding-distinct windows hand a process
    # function its elements in timeline order there, in arrival order with other triggers.
    reference = outcome(run, assigner, function, lateness, steps, generic=False, bulk=True)
    got = outcome(run_per_key, assigner, function, lateness, steps)
    if isinstance(reference[0], str):  # both raise the same error
        assert got == reference
    else:
        assert got == (reference[0], reference[3], reference[4], reference[5])


@example(
    function="reduce",
    windows="tumbling",
    size=1,
    offset=0,
    lateness=0,
    stamps=[MIN_TIMESTAMP, 5],  # late although no watermark exists yet
    in_order=True,
)
@example(
    function="aggregate",
    windows="session",
    size=1,
    offset=0,
    lateness=0,
    stamps=[None],
    in_order=False,
)
@settings(max_examples=300)
@given(
    function=st.sampled_from(["reduce", "reduce_max", "aggregate", "aggregate_none", "process"]),
    windows=st.sampled_from(["tumbling", "session"]),
    size=st.sampled_from([1, 3, 10]),
    offset=st.integers(-2, 2),
    lateness=st.sampled_from([0, 5]),
    stamps=st.lists(
        st.one_of(
            st.integers(-40, 120),
            st.integers(MAX_TIMESTAMP - 25, MAX_TIMESTAMP),  # window ends clamped
            st.integers(MIN_TIMESTAMP, MIN_TIMESTAMP + 12),  # late before any watermark
            st.none(),  # the assigner's error
        ),
        max_size=60,
    ),
    in_order=st.booleans(),
)
def test_process_to_end_matches_elements_then_end_of_input(
    function: str,
    windows: str,
    size: int,
    offset: int,
    lateness: int,
    stamps: list[int | None],
    in_order: bool,
) -> None:
    """The one-pass bounded replay (tumbling windows; session windows of ordered input)
    against the generic path: the same results in the same order, metrics and state left."""
    from windowing.operator import WindowOperator

    if in_order:
        stamps = sorted(stamps, key=lambda t: (t is None, t or 0))
    elements = [(i, ts, "k") for i, ts in enumerate(stamps)]
    offset = offset % size if size > 1 else 0

    def operator(trigger: Any) -> WindowOperator:
        return WindowOperator(
            TumblingEventTimeWindows(size, offset=offset)
            if windows == "tumbling"
            else EventTimeSessionWindows(size),
            FUNCTIONS[function](),
            trigger=trigger,
            allowed_lateness=lateness,
            late_output_tag=LATE,
        )

    fast = operator(None)
    generic = operator(GenericEventTimeTrigger())

    def to_end_generic() -> None:
        generic.process_elements(elements)
        generic.process_watermark(MAX_TIMESTAMP)
        generic.advance_processing_time(MAX_TIMESTAMP)

    failed = outcome(fast.process_to_end, "k", elements)
    assert failed == outcome(to_end_generic)
    if failed is not None:  # a None timestamp: the assigner's error on both paths
        assert None in stamps
        return
    assert fast.output == generic.output
    assert fast.metrics == generic.metrics
    assert fast.side_outputs == generic.side_outputs
    assert (fast.watermark, fast.processing_time) == (MAX_TIMESTAMP, MAX_TIMESTAMP)
    # Windows whose cleanup time saturates at the end of time keep their state (Flink).
    assert fast.keys() == generic.keys()
    assert list(fast.iter_windows("k")) == list(generic.iter_windows("k"))


def test_process_to_end_notes_errors_at_the_end_of_input() -> None:
    from windowing.operator import END_OF_INPUT_NOTE, WindowOperator

    class FailsOnTimer(GenericEventTimeTrigger):
        def on_event_time(self, time: int, window: Any, ctx: Any) -> Any:
            raise RuntimeError("timer")

    op = WindowOperator(TumblingEventTimeWindows(10), FUNCTIONS["reduce"](), trigger=FailsOnTimer())
    try:
        op.process_to_end("k", [(1, 3, "k")])
    except RuntimeError as exc:
        assert END_OF_INPUT_NOTE in exc.__notes__
    else:
        raise AssertionError("the trigger's error was not raised")


def test_every_strategy_is_driven_against_the_generic_operator() -> None:
    """The differential suites reach every strategy the planner can choose: this file
    (generic, aligned, sessions, panes: ``run`` above) and ``test_sliding_properties.py``
    (the KIP-450 timeline strategies against contents kept per window, and Kafka's algorithm
    through ``test_kafka_sliding_reference.py``)."""
    from windowing.plan import Strategy

    seen = set()
    for assigner in ASSIGNERS:
        for function in FUNCTIONS:
            for generic in (True, False):
                harness = WindowOperatorHarness(
                    ASSIGNERS[assigner](),
                    FUNCTIONS[function](),
                    trigger=GenericEventTimeTrigger() if generic else None,
                    slicing=function != "reduce",
                )
                seen.add(harness.plan.strategy)
    assert seen == {Strategy.GENERIC, Strategy.ALIGNED, Strategy.SESSIONS, Strategy.PANES}
    # test_sliding_properties.test_lazy_windows_match_materialised_windows: the reference is
    # the timeline with contents per window (a generic trigger), against the lazy ones.
    from windowing.triggers import OnWindowCloseTrigger

    sliding = SlidingDistinctAssigner(8, grace=0)
    kinds = {
        WindowOperatorHarness(sliding, fn, trigger=trigger, slicing=True).plan.strategy
        for fn in (Collect(), Reduce(lambda a, b: a + b))
        for trigger in (EventTimeTrigger(), OnWindowCloseTrigger(), GenericEventTimeTrigger())
    }
    assert kinds == {Strategy.TIMELINE, Strategy.TIMELINE_LAZY, Strategy.TIMELINE_DERIVED}
    assert WindowOperatorHarness(sliding, Collect()).plan.strategy is Strategy.KAFKA_SLIDING
    assert set(Strategy) == seen | kinds | {Strategy.KAFKA_SLIDING}
