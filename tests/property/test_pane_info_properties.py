"""Pane info against a brute-force oracle: each result's pane index is the number of earlier
firings of its (key, window), and its timing follows Beam's rule on the watermark before and
after the step that fired it (windowing.engine.pane_info)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from windowing import MAX_TIMESTAMP, OutputTag, Timing
from windowing.assigners import (
    EventTimeSessionWindows,
    GlobalWindows,
    HoppingEventTimeWindows,
    SlidingDistinctAssigner,
    TumblingEventTimeWindows,
)
from windowing.functions import Process, ProcessWindowFunction, Reduce
from windowing.testing import WindowOperatorHarness
from windowing.triggers import AnyOf, CountTrigger, EventTimeTrigger, PurgingTrigger

LATE = OutputTag("late")


class Generic(EventTimeTrigger):
    """EventTimeTrigger, not inlined: Flink's operator element by element."""


class Last(ProcessWindowFunction[int, tuple[int, int], Any, Any]):
    def process(self, key: Any, context: Any, elements: Any) -> Any:
        values = list(elements)
        yield (len(values), values[-1])


ASSIGNERS = {
    "tumbling": lambda: TumblingEventTimeWindows(10, offset=3),
    "hopping": lambda: HoppingEventTimeWindows(10, 4),
    "session": lambda: EventTimeSessionWindows(6),
    "sliding_distinct": lambda: SlidingDistinctAssigner(8, grace=0),
    "global": GlobalWindows,
}
TRIGGERS = {
    "default": lambda: None,
    "generic": Generic,
    "count": lambda: CountTrigger(2),
    "count_or_end": lambda: AnyOf(CountTrigger(3), EventTimeTrigger()),
    "purging_count": lambda: PurgingTrigger(CountTrigger(2)),
}
FUNCTIONS = {"reduce": lambda: Reduce(lambda a, b: a + b), "process": lambda: Process(Last())}

steps = st.lists(
    st.one_of(
        st.tuples(st.just("e"), st.sampled_from("ab"), st.integers(-20, 60)),
        st.tuples(st.just("w"), st.integers(0, 25)),
    ),
    max_size=60,
)


def run(
    assigner: str, trigger: str, function: str, lateness: int, plan: list[Any]
) -> tuple[list[Any], list[Any]]:
    """The results with their panes, and the oracle's panes for them."""
    if assigner == "global" and trigger in ("default", "generic"):
        trigger = "purging_count"  # a global window fires only by count
    if assigner == "sliding_distinct":
        lateness = 0  # its grace is the lateness
    harness = WindowOperatorHarness(
        ASSIGNERS[assigner](),
        FUNCTIONS[function](),
        trigger=TRIGGERS[trigger](),
        allowed_lateness=lateness,
        late_output_tag=LATE,
        pane_info=True,
    )
    watermark = -30
    got: list[Any] = []
    oracle: list[Any] = []
    fired: dict[tuple[Any, Any], int] = {}  # (key, window) -> firings so far
    settled: set[tuple[Any, Any]] = set()  # windows with an ON_TIME or LATE pane

    def collect(before: int, now: int, timer_step: bool) -> None:
        for r in harness.extract_output():
            got.append((r.key, r.window, r.value, r.pane))
            ident = (r.key, r.window)
            index = fired.get(ident, 0)
            fired[ident] = index + 1
            max_ts = r.window.max_timestamp()
            # a timer step's firings here are end-of-window timers: at the max timestamp
            at = min(now, max_ts) if timer_step else now
            if ident in settled or max_ts <= before:
                timing = Timing.LATE
            elif max_ts > at:
                timing = Timing.EARLY
            else:
                timing = Timing.ON_TIME
            if timing is not Timing.EARLY:
                settled.add(ident)
            oracle.append((r.key, r.window, r.value, (index, timing)))

    # an element's firing is timed on the window's own clock: global windows are
    # processing-time windows (Flink), and the processing time stays at 0 here
    element_clock = (lambda: 0) if assigner == "global" else (lambda: watermark)
    for i, step in enumerate(plan):
        if step[0] == "e":
            harness.process_element(i, step[2], step[1])
            collect(element_clock(), element_clock(), False)
        else:
            before, watermark = watermark, watermark + step[1]
            harness.process_watermark(watermark)
            collect(before, watermark, True)
    harness.process_watermark(MAX_TIMESTAMP)
    collect(watermark, MAX_TIMESTAMP, True)
    return got, oracle


@settings(max_examples=300)
@given(
    assigner=st.sampled_from(sorted(ASSIGNERS)),
    trigger=st.sampled_from(sorted(TRIGGERS)),
    function=st.sampled_from(sorted(FUNCTIONS)),
    lateness=st.sampled_from([0, 5, 30]),
    plan=steps,
)
def test_panes_match_the_oracle(
    assigner: str, trigger: str, function: str, lateness: int, plan: list[Any]
) -> None:
    got, oracle = run(assigner, trigger, function, lateness, plan)
    assert [(k, w, v, (p.index, p.timing)) for k, w, v, p in got] == oracle


@settings(max_examples=150)
@given(
    assigner=st.sampled_from(["tumbling", "hopping", "session"]),
    function=st.sampled_from(sorted(FUNCTIONS)),
    lateness=st.sampled_from([0, 5, 30]),
    plan=steps,
)
def test_fast_strategies_give_the_generic_operators_panes(
    assigner: str, function: str, lateness: int, plan: list[Any]
) -> None:
    fast, _ = run(assigner, "default", function, lateness, plan)
    generic, _ = run(assigner, "generic", function, lateness, plan)
    assert fast == generic
