"""The built-in triggers' forms on columns against their per-row methods: for random windows
(rows in event-time order, any number, empty ones too), ``on_elements`` gives what
``on_element`` returns for each row as the rows arrive one by one with the watermark at
``MIN_TIMESTAMP``, and ``on_end_of_input`` the firings of each window's timers when the
watermark then jumps to ``MAX_TIMESTAMP``."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from hypothesis import assume, given
from hypothesis import strategies as st

from windowing import (
    MAX_TIMESTAMP,
    MIN_TIMESTAMP,
    CountEvictor,
    DeltaEvictor,
    EventTimeSessionWindows,
    HoppingEventTimeWindows,
    ProcessWindowFunction,
    TimeEvictor,
    TumblingEventTimeWindows,
)
from windowing.evictors.vectorized import Clocks, WindowRows
from windowing.testing import TriggerHarness, WindowOperatorHarness
from windowing.triggers import (
    ContinuousEventTimeTrigger,
    CountTrigger,
    DeltaTrigger,
    EventTimeTrigger,
    ProcessingTimeoutTrigger,
    PurgingTrigger,
    VectorizedTrigger,
)
from windowing.triggers.vectorized import (
    CODES,
    checked_end_firings,
    checked_results,
    evicting_firings,
    firings,
    on_sessions,
)
from windowing.windows import TimeWindow

SIZE = 100
GAP = 30


def _rise(old: int, new: int) -> float:
    return new - old


def _rise_columns(old: pa.Table, new: pa.Table) -> Any:
    return pc.subtract(new["x"], old["x"])


@st.composite
def triggers(draw: st.DrawFn) -> VectorizedTrigger[Any, Any]:
    kind = draw(st.sampled_from(["event", "count", "delta", "continuous"]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # counts below 1 fire on every row
        if kind == "event":
            trigger: Any = EventTimeTrigger()
        elif kind == "count":
            trigger = CountTrigger(draw(st.integers(0, 5)))
        elif kind == "delta":
            threshold = draw(st.sampled_from([-1, 0, 2, 7.5, float("nan")]))
            trigger = DeltaTrigger(threshold, _rise, _rise_columns)
        else:
            trigger = ContinuousEventTimeTrigger(draw(st.sampled_from([1, 7, 30, 99, 100, 250])))
    trigger = PurgingTrigger(trigger) if draw(st.booleans()) else trigger
    if kind != "delta" and draw(st.booleans()):  # never times out before the end of input
        reset, clear = draw(st.booleans()), draw(st.booleans())
        trigger = ProcessingTimeoutTrigger(trigger, draw(st.integers(1, 50)), reset, clear)
    return trigger


@st.composite
def windows(draw: st.DrawFn) -> list[tuple[TimeWindow, list[tuple[int, int]]]]:
    found = []
    for i in range(draw(st.integers(0, 5))):
        start = (i - 2) * SIZE  # negative times too (Java's % in the continuous trigger)
        stamps = sorted(draw(st.lists(st.integers(start, start + SIZE - 1), max_size=9)))
        found.append(
            (TimeWindow(start, start + SIZE), [(draw(st.integers(-9, 9)), t) for t in stamps])
        )
    return found


@given(triggers(), windows())
def test_forms_on_columns_give_what_the_per_row_methods_give(
    trigger: VectorizedTrigger[Any, Any], found: list[tuple[TimeWindow, list[tuple[int, int]]]]
) -> None:
    assert trigger.vectorized
    flat = [row for _, rows in found for row in rows]
    sizes = [len(rows) for _, rows in found]
    rows = WindowRows(
        np.concatenate(([0], np.cumsum(sizes))).astype(np.int64),
        np.array([t for _, t in flat], np.int64),
        np.array([w.start for w, _ in found], np.int64),
        np.array([w.end for w, _ in found], np.int64),
        pa.table({"x": pa.array([x for x, _ in flat], pa.int64())}),
    )
    codes = checked_results(trigger.on_elements(rows, Clocks(MIN_TIMESTAMP, 0)), rows, trigger)
    ends = trigger.on_end_of_input(rows, Clocks(MAX_TIMESTAMP, 0))
    end = checked_end_firings(ends, rows, trigger)
    expected_codes, expected_ends = [], []
    for i, (window, window_rows) in enumerate(found):
        harness = TriggerHarness(trigger)
        expected_codes += [CODES[harness.process_element(x, t, window)] for x, t in window_rows]
        expected_ends += [(i, CODES[r]) for _, r in harness.advance_watermark(MAX_TIMESTAMP)]
    assert codes.tolist() == expected_codes
    got_ends = sorted(zip(end.windows.tolist(), end.results.tolist(), strict=True))
    assert got_ends == sorted(expected_ends)


class Contents(ProcessWindowFunction):
    """The ids of a firing's rows, in order."""

    def process(self, key: Any, context: Any, elements: Any) -> Any:
        return [tuple(i for i, _ in elements)]


def _rise_pairs(old: tuple[int, int], new: tuple[int, int]) -> float:
    return new[1] - old[1]


@st.composite
def evictors(draw: st.DrawFn) -> tuple[Any, Any] | None:
    """An evictor on columns and the same for the operator's ``(id, x)`` elements, or
    ``None``."""
    kind = draw(st.sampled_from(["none", "count", "time", "delta"]))
    after = draw(st.booleans())
    if kind == "none":
        return None
    if kind == "count":
        evictor: Any = CountEvictor(draw(st.integers(1, 4)), after)
        return evictor, evictor
    if kind == "time":
        evictor = TimeEvictor(draw(st.integers(1, 60)), after)
        return evictor, evictor
    threshold = draw(st.sampled_from([0, 3, 8]))
    return (
        DeltaEvictor(threshold, _rise_pairs, after, _evict_columns),
        DeltaEvictor(threshold, _rise_pairs, after),
    )


def _evict_columns(old: pa.Table, new: pa.Table) -> Any:
    return pc.subtract(new["x"], old["x"])


@given(
    triggers(),
    st.lists(st.tuples(st.integers(-9, 9), st.integers(-150, 250)), max_size=25),
    st.sampled_from(["tumbling", "hopping", "sessions"]),
    evictors(),
)
def test_firings_evaluate_the_rows_the_window_operator_evaluates(
    trigger: Any, events: list[tuple[int, int]], shape: str, evicting: Any
) -> None:
    """Tumbling, hopping or session windows of one key, its rows in event-time order, then
    the end of input: each firing's rows (ids) are those the operator's window function gets,
    with an evictor too."""
    assume(shape != "sessions" or on_sessions(trigger))
    per_row = trigger
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # a NaN threshold
        nested = trigger.trigger if isinstance(trigger, PurgingTrigger) else trigger
        if isinstance(nested, DeltaTrigger):  # the operator's elements are (id, x) pairs
            per_row = DeltaTrigger(nested.threshold, _rise_pairs, _rise_columns)
            if nested is not trigger:
                per_row = PurgingTrigger(per_row)
    stamps = sorted(t for _, t in events)
    values = [x for x, _ in events]
    assigner: Any = {
        "tumbling": TumblingEventTimeWindows(SIZE),
        "hopping": HoppingEventTimeWindows(SIZE, SIZE // 2),
        "sessions": EventTimeSessionWindows(GAP),
    }[shape]
    evictor = None if evicting is None else evicting[1]
    harness = WindowOperatorHarness(assigner, Contents(), trigger=per_row, evictor=evictor)
    for i, (x, t) in enumerate(zip(values, stamps, strict=True)):
        harness.process_element((i, x), t, "k")
    harness.process_watermark(MAX_TIMESTAMP)
    expected = sorted((r.window.start, r.value) for r in harness.extract_output())

    # the windows' rows in replay order, as the batch replay groups them
    groups: dict[int, list[int]] = {}
    for i, t in enumerate(stamps):
        if shape == "sessions":  # a row within the gap of the one before joins its session
            joins = i and t - stamps[i - 1] <= GAP
            groups.setdefault(max(groups) if joins else t, []).append(i)
            continue
        for w in assigner.assign_windows(None, t, None):
            groups.setdefault(w.start, []).append(i)
    starts = sorted(groups)
    members = [i for s in starts for i in groups[s]]
    ends = [stamps[groups[s][-1]] + GAP if shape == "sessions" else s + SIZE for s in starts]
    rows = WindowRows(
        np.concatenate(([0], np.cumsum([len(groups[s]) for s in starts]))).astype(np.int64),
        np.array([stamps[i] for i in members], np.int64),
        np.array(starts, np.int64),
        np.array(ends, np.int64),
        pa.table({"x": pa.array([values[i] for i in members], pa.int64())}),
        shape == "sessions",
    )
    codes = checked_results(trigger.on_elements(rows, Clocks(MIN_TIMESTAMP, 0)), rows, trigger)
    end = checked_end_firings(
        trigger.on_end_of_input(rows, Clocks(MAX_TIMESTAMP, 0)), rows, trigger
    )
    if evicting is None:
        found = firings(rows, codes, end)
    else:
        clocks = (Clocks(MIN_TIMESTAMP, 0), Clocks(MAX_TIMESTAMP, 0))
        found = evicting_firings(rows, codes, end, evicting[0], clocks, 10**6)
        assert found is not None
    got = sorted(
        (starts[w], tuple(members[r] for r in found.rows()[lo:hi]))
        for w, lo, hi in zip(found.windows, found.offsets[:-1], found.offsets[1:], strict=True)
    )
    assert got == expected
