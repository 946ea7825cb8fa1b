"""The window operator against brute-force oracles, and its invariances.

Every property drives :class:`~windowing.testing.WindowOperatorHarness` and compares with an
oracle written without the operator's machinery (no timers, no merging-window set): scan the
windows of each element, union intervals, replay the watermark by hand.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from hypothesis import event, given, note
from hypothesis import strategies as st

from windowing.assigners import (
    EventTimeSessionWindows,
    HoppingEventTimeWindows,
    ProcessingTimeSessionWindows,
    TumblingEventTimeWindows,
    TumblingProcessingTimeWindows,
)
from windowing.functions import Aggregate, AggregateFunction, Process, ProcessWindowFunction, Reduce
from windowing.records import OutputTag, WindowResult
from windowing.testing import WindowOperatorHarness
from windowing.time import MAX_TIMESTAMP, MIN_TIMESTAMP
from windowing.windows import TimeWindow

LATE = OutputTag("late")
KEYS = ("a", "b", "c")

Element = tuple[str, int, int]  # (key, timestamp, value)


# ---------------------------------------------------------------------------- functions
class CountSumMinMax(AggregateFunction[int, tuple[int, int, int, int], tuple[int, ...]]):
    """(count, sum, min, max); ``merge`` is exercised by session windows."""

    def create_accumulator(self) -> tuple[int, int, int, int]:
        return (0, 0, 2**62, -(2**62))

    def add(self, value: int, acc: tuple[int, int, int, int]) -> tuple[int, int, int, int]:
        return (acc[0] + 1, acc[1] + value, min(acc[2], value), max(acc[3], value))

    def get_result(self, acc: tuple[int, int, int, int]) -> tuple[int, ...]:
        return acc

    def merge(
        self, a: tuple[int, int, int, int], b: tuple[int, int, int, int]
    ) -> tuple[int, int, int, int]:
        return (a[0] + b[0], a[1] + b[1], min(a[2], b[2]), max(a[3], b[3]))


class SortedValues(ProcessWindowFunction[int, tuple[int, ...], str, TimeWindow]):
    def process(self, key: str, context: Any, elements: Iterable[int]) -> Iterable[tuple[int, ...]]:
        yield tuple(sorted(elements))


def make_function(kind: str) -> Any:
    if kind == "reduce":
        return Reduce(lambda a, b: a + b)
    if kind == "aggregate":
        return Aggregate(CountSumMinMax())
    return Process(SortedValues())


def expected_value(kind: str, values: Sequence[int]) -> Any:
    """What each function kind emits for a window holding ``values`` (the oracle side)."""
    if kind == "reduce":
        return sum(values)
    if kind == "aggregate":
        return (len(values), sum(values), min(values), max(values))
    return tuple(sorted(values))


FUNCTION_KINDS = st.sampled_from(["reduce", "aggregate", "process"])


# ---------------------------------------------------------------------------- assigners
@st.composite
def event_time_assigners(draw: st.DrawFn) -> tuple[str, dict[str, int]]:
    family = draw(st.sampled_from(["tumbling", "hopping", "session"]))
    if family == "session":
        return family, {"gap": draw(st.integers(1, 12))}
    size = draw(st.integers(1, 15))
    slide = size if family == "tumbling" else draw(st.integers(1, 15))
    offset = draw(st.integers(-(slide - 1), slide - 1))
    return family, {"size": size, "slide": slide, "offset": offset}


def build_assigner(family: str, p: dict[str, int]) -> Any:
    if family == "tumbling":
        return TumblingEventTimeWindows(p["size"], p["offset"])
    if family == "hopping":
        return HoppingEventTimeWindows(p["size"], p["slide"], p["offset"])
    if family == "session":
        return EventTimeSessionWindows(p["gap"])
    if family == "proc_tumbling":
        return TumblingProcessingTimeWindows(p["size"])
    return ProcessingTimeSessionWindows(p["gap"])


def grid_windows(ts: int, size: int, slide: int, offset: int) -> list[TimeWindow]:
    """Scan candidate starts: ``s ≡ offset (mod slide)`` and ``s <= ts < s + size``."""
    return [
        TimeWindow(s, s + size)
        for s in range(ts - size - slide, ts + 1)
        if (s - offset) % slide == 0 and s <= ts < s + size
    ]


def oracle_windows_of(family: str, p: dict[str, int], ts: int) -> list[TimeWindow]:
    if family == "session":
        return [TimeWindow(ts, ts + p["gap"])]
    return grid_windows(ts, p["size"], p["slide"], p["offset"])


def sessions_oracle(timestamps: Iterable[int], gap: int) -> list[tuple[TimeWindow, list[int]]]:
    """Connected components of the intervals ``[ts, ts + gap)``; touching intervals connect."""
    components: list[tuple[TimeWindow, list[int]]] = []
    for ts in sorted(timestamps):
        if components and ts <= components[-1][0].end:  # starts at or before the current end
            window, members = components[-1]
            components[-1] = (TimeWindow(window.start, max(window.end, ts + gap)), [*members, ts])
        else:
            components.append((TimeWindow(ts, ts + gap), [ts]))
    return components


def oracle_results(
    family: str, p: dict[str, int], kind: str, elements: Sequence[Element]
) -> list[tuple[Any, ...]]:
    """Final results when the only watermark is ``MAX_TIMESTAMP``: one per (key, window)."""
    by_key: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for key, ts, value in elements:
        by_key[key].append((ts, value))
    out = []
    for key, items in by_key.items():
        if family == "session":
            value_of = defaultdict(list)
            for ts, value in items:
                value_of[ts].append(value)
            for window, members in sessions_oracle([ts for ts, _ in items], p["gap"]):
                values = [v for ts in sorted(set(members)) for v in value_of[ts]]
                out.append((key, window, expected_value(kind, values), window.end - 1))
            continue
        contents: dict[TimeWindow, list[int]] = defaultdict(list)
        for ts, value in items:
            for w in oracle_windows_of(family, p, ts):
                contents[w].append(value)
        for w, values in contents.items():
            out.append((key, w, expected_value(kind, values), w.end - 1))
    return sorted(out, key=repr)


def as_tuples(results: Iterable[WindowResult]) -> list[tuple[Any, ...]]:
    return sorted(((r.key, r.window, r.value, r.timestamp) for r in results), key=repr)


elements_lists = st.lists(
    st.tuples(st.sampled_from(KEYS), st.integers(-60, 60), st.integers(-5, 20)), max_size=25
)


def run_to_end(
    harness: WindowOperatorHarness, elements: Iterable[Element], batch: bool = False
) -> list[WindowResult]:
    """Feed ``elements`` one by one (or as one batch), then the final watermark."""
    if batch:
        harness.process_elements([(value, ts, key) for key, ts, value in elements])
    else:
        for key, ts, value in elements:
            harness.process_element(value, ts, key)
    harness.process_watermark(MAX_TIMESTAMP)
    return harness.extract_output()


# ---------------------------------------------------------------------------- properties
@given(
    st.integers(1, 12),
    st.lists(st.tuples(st.sampled_from(KEYS[:2]), st.integers(-50, 50)), max_size=25),
    st.sampled_from(["process", "reduce"]),
)
def test_sessions_are_connected_components(
    gap: int, items: list[tuple[str, int]], how: str
) -> None:
    """Any arrival order, one final watermark: sessions == components of ``[ts, ts + gap)``."""
    elements: list[tuple[str, int, Any]]
    if how == "process":
        h = WindowOperatorHarness(EventTimeSessionWindows(gap), Process(SortedValues()))
        elements = [(key, ts, ts) for key, ts in items]
    else:  # a reduce building the sorted tuple exercises merging of reduced contents
        h = WindowOperatorHarness(
            EventTimeSessionWindows(gap), Reduce(lambda a, b: tuple(sorted(a + b)))
        )
        elements = [(key, ts, (ts,)) for key, ts in items]
    results = run_to_end(h, elements)
    expected = []
    for key in {k for k, _ in items}:
        for window, members in sessions_oracle([ts for k, ts in items if k == key], gap):
            expected.append((key, window, tuple(sorted(members)), window.end - 1))
    assert as_tuples(results) == sorted(expected, key=repr)
    assert h.num_event_time_timers() == 0 and h.num_state_entries() == 0 and h.num_keys() == 0


@given(event_time_assigners(), FUNCTION_KINDS, st.data())
def test_final_results_do_not_depend_on_input_order(
    assigner: tuple[str, dict[str, int]], kind: str, data: st.DataObject
) -> None:
    """Tumbling, hopping and sessions, each with reduce, aggregate and process: with the final
    watermark only, every permutation of the input gives the oracle's results."""
    family, p = assigner
    elements = data.draw(elements_lists, label="elements")
    permuted = data.draw(st.permutations(elements), label="permuted")
    expected = oracle_results(family, p, kind, elements)
    # The permutation also goes through the batch entry point (the operator's fast path).
    for order, batch in ((elements, False), (permuted, True)):
        h = WindowOperatorHarness(build_assigner(family, p), make_function(kind))
        assert as_tuples(run_to_end(h, order, batch)) == expected
        assert h.num_event_time_timers() == 0 and h.num_state_entries() == 0


@st.composite
def lateness_scenarios(draw: st.DrawFn) -> tuple[Any, ...]:
    family = draw(st.sampled_from(["tumbling", "hopping"]))
    size = draw(st.integers(1, 12))
    slide = size if family == "tumbling" else draw(st.integers(1, 12))
    offset = draw(st.integers(-(slide - 1), slide - 1))
    delay = draw(st.integers(0, 15))
    lateness = draw(st.integers(0, 15))
    timestamps = draw(st.lists(st.integers(0, 80), max_size=30))
    return family, {"size": size, "slide": slide, "offset": offset}, delay, lateness, timestamps


@given(lateness_scenarios(), st.booleans())
def test_every_element_is_counted_or_late_never_both(
    scenario: tuple[Any, ...], batch: bool
) -> None:
    """Bounded out-of-orderness watermarks (max seen - delay after each element), allowed
    lateness L and a late side output.

    Oracle, per element with watermark ``wm`` at its arrival: a window ``w`` takes it iff
    ``w.max_timestamp() + L > wm``; the element is late iff ``ts + L <= wm`` and no window took it.
    Then: the last result of each window contains exactly the elements that window took
    (so every non-late element with a window is counted, once per window that took it), and the
    late side output holds exactly the late elements.
    """
    family, p, delay, lateness, timestamps = scenario
    note(f"{family} {p} delay={delay} L={lateness} timestamps={timestamps}")
    # Each element's value is a singleton set of its index; the reduce unions them, so a
    # window's last (accumulating) result names the elements it counted.
    h = WindowOperatorHarness(
        build_assigner(family, p),
        Reduce(lambda a, b: a | b),
        allowed_lateness=lateness,
        late_output_tag=LATE,
    )
    wm = MIN_TIMESTAMP
    expected_late: list[tuple[int, int, int]] = []
    expected_taken: dict[TimeWindow, set[int]] = defaultdict(set)
    max_seen = MIN_TIMESTAMP
    outputs: list[WindowResult] = []
    for i, ts in enumerate(timestamps):
        taken = [w for w in oracle_windows_of(family, p, ts) if w.max_timestamp() + lateness > wm]
        for w in taken:
            expected_taken[w].add(i)
        if not taken and ts + lateness <= wm:
            expected_late.append((i, ts, wm))
        if batch:  # the batch entry point (the operator's fast path for aligned windows)
            h.process_elements([(frozenset([i]), ts, "k")])
        else:
            h.process_element(frozenset([i]), ts, "k")
        max_seen = max(max_seen, ts)
        wm = max(wm, max_seen - delay)
        h.process_watermark(wm)
        outputs += h.extract_output()
    h.process_watermark(MAX_TIMESTAMP)
    outputs += h.extract_output()

    last: dict[TimeWindow, frozenset[int]] = {}
    for r in outputs:
        assert r.timestamp == r.window.max_timestamp()
        assert r.value > last.get(r.window, frozenset()), "a firing with nothing new"
        last[r.window] = r.value
    assert last == {w: frozenset(ids) for w, ids in expected_taken.items()}

    late = h.extract_late_elements()
    event(f"late elements: {min(len(late), 3)}+")
    event(f"late firings: {min(len(outputs) - len(last), 3)}+")
    assert [(next(iter(e.value)), e.timestamp, e.watermark) for e in late] == expected_late
    counted = set().union(*last.values()) if last else set()
    late_ids = {i for i, _, _ in expected_late}
    assert not counted & late_ids, "an element was both counted and late"
    for i, ts in enumerate(timestamps):
        if oracle_windows_of(family, p, ts):  # elements in a hopping gap have no window
            assert (i in counted) != (i in late_ids), f"element {i} (ts={ts}) unaccounted"
    assert h.metrics.num_late_records_side_output == len(expected_late)
    assert h.num_event_time_timers() == 0 and h.num_state_entries() == 0


@given(event_time_assigners(), st.integers(0, 10), st.data())
def test_a_window_fires_again_only_with_new_elements(
    assigner: tuple[str, dict[str, int]], lateness: int, data: st.DataObject
) -> None:
    """Event-time trigger, accumulating: a window fires once when the watermark passes its end
    and then once per late element added. So with a reduce that unions element ids, each
    result of a window strictly grows. (A stray timer, e.g. one re-registered for a merged
    session already past the watermark, fires a window again with nothing new.)"""
    family, p = assigner
    steps = data.draw(
        st.lists(st.one_of(st.integers(0, 60), st.tuples(st.just("w"), st.integers(0, 70)))),
        label="steps",
    )
    h = WindowOperatorHarness(
        build_assigner(family, p), Reduce(lambda a, b: a | b), allowed_lateness=lateness
    )
    for i, step in enumerate(steps):
        if isinstance(step, tuple):
            h.process_watermark(step[1])
        else:
            h.process_element(frozenset([i]), step, "k")
    h.process_watermark(MAX_TIMESTAMP)
    previous: dict[TimeWindow, frozenset[int]] = {}
    for r in h.extract_output():
        assert r.value > previous.get(r.window, frozenset()), f"{r} fired with nothing new"
        previous[r.window] = r.value
    assert h.num_event_time_timers() == 0 and h.num_state_entries() == 0


# Actions: ("e", key, ts, value), ("w", watermark), ("p", processing time).
actions_lists = st.lists(
    st.one_of(
        st.tuples(st.just("e"), st.sampled_from(KEYS), st.integers(-20, 80), st.integers(0, 9)),
        st.tuples(st.just("w"), st.integers(-20, 90)),
        st.tuples(st.just("p"), st.integers(0, 90)),
    ),
    max_size=30,
)


@st.composite
def any_assigners(draw: st.DrawFn) -> tuple[str, dict[str, int]]:
    family, p = draw(event_time_assigners())
    return draw(
        st.sampled_from(
            [
                (family, p),
                ("proc_tumbling", {"size": p.get("size", 5)}),
                ("proc_session", {"gap": p.get("gap", 5)}),
            ]
        )
    )


def drive(h: WindowOperatorHarness, actions: Iterable[tuple[Any, ...]]) -> list[list[Any]]:
    """Apply ``actions``; the outputs and late elements produced by each action."""
    produced = []
    for action in actions:
        if action[0] == "e":
            h.process_element(action[3], action[2], action[1])
        elif action[0] == "w":
            h.process_watermark(action[1])
        else:
            h.set_processing_time(action[1])
        produced.append([*h.extract_output(), *h.extract_late_elements()])
    return produced


def per_key(records: Iterable[Any]) -> dict[Any, list[Any]]:
    grouped: dict[Any, list[Any]] = defaultdict(list)
    for r in records:
        grouped[r.key].append(r)
    return dict(grouped)


@given(any_assigners(), FUNCTION_KINDS, st.integers(0, 10), actions_lists, st.data())
def test_snapshot_restore_continues_like_an_uninterrupted_run(
    assigner: tuple[str, dict[str, int]],
    kind: str,
    lateness: int,
    actions: list[tuple[Any, ...]],
    data: st.DataObject,
) -> None:
    family, p = assigner
    cut = data.draw(st.integers(0, len(actions)), label="cut")

    def make() -> WindowOperatorHarness:
        return WindowOperatorHarness(
            build_assigner(family, p),
            make_function(kind),
            allowed_lateness=lateness,
            late_output_tag=LATE,
        )

    reference = make()
    expected = [r for step in drive(reference, actions) for r in step]

    before = make()
    first = [r for step in drive(before, actions[:cut]) for r in step]
    snapshot = before.snapshot()
    before.process_element(99, 0, "a")  # the snapshot must not alias live state
    before.process_watermark(MAX_TIMESTAMP)
    after = make()
    after.restore(snapshot)
    second = [r for step in drive(after, actions[cut:]) for r in step]

    # Across keys the order of simultaneous timers is not specified; per key it is.
    assert per_key(first + second) == per_key(expected)
    assert after.watermark == reference.watermark
    for counter in ("num_event_time_timers", "num_processing_time_timers", "num_state_entries"):
        assert getattr(after, counter)() == getattr(reference, counter)(), counter


@given(event_time_assigners(), FUNCTION_KINDS, st.integers(0, 10), actions_lists)
def test_results_are_stamped_with_window_end_and_fire_in_time_order(
    assigner: tuple[str, dict[str, int]],
    kind: str,
    lateness: int,
    actions: list[tuple[Any, ...]],
) -> None:
    """Every result carries ``window.max_timestamp()``, never ahead of the watermark that
    fired it, and the results of one key in one watermark advance come in non-decreasing time
    order. (Across keys the operator does not promise a global time order.)"""
    family, p = assigner
    h = WindowOperatorHarness(
        build_assigner(family, p), make_function(kind), allowed_lateness=lateness
    )
    actions = [*actions, ("w", MAX_TIMESTAMP)]
    wm = MIN_TIMESTAMP
    for action, produced in zip(actions, drive(h, actions), strict=True):
        if action[0] == "w":
            wm = max(wm, action[1])
            for key, results in per_key(produced).items():
                stamps = [r.timestamp for r in results]
                assert stamps == sorted(stamps), f"watermark {wm}, key {key}: out of order"
        for r in produced:
            assert r.timestamp == r.window.max_timestamp()
            assert r.timestamp <= wm, f"{r} emitted before watermark {wm} reached it"
    assert h.num_event_time_timers() == 0 and h.num_state_entries() == 0
