"""KIP-450 sliding windows against a brute-force enumeration of Kafka's definition."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise
from typing import Any
from unittest.mock import patch

from hypothesis import example, given
from hypothesis import strategies as st

from windowing import MAX_TIMESTAMP, OutputTag
from windowing.assigners.sliding_distinct import SlidingDistinctAssigner
from windowing.engine import timeline_derived as sliding_derived
from windowing.engine.timeline_derived import _SMALL_RANGE
from windowing.evictors import Evictor
from windowing.functions import Aggregate, AggregateFunction, ProcessWindowFunction, Reduce
from windowing.testing import WindowOperatorHarness
from windowing.triggers import EventTimeTrigger
from windowing.triggers.emit import OnWindowCloseTrigger

LATE = OutputTag("late")


class Collect(ProcessWindowFunction[Any, tuple[Any, ...], Any, Any]):
    def process(self, key: Any, context: Any, elements: Any) -> Any:
        yield tuple(sorted(elements))


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
        a[0] += b[0]
        a[1] += b[1]
        return a


class KeepAll(Evictor[Any, Any]):
    def evict_before(self, elements: Sequence[Any], window: Any, ctx: Any) -> Sequence[Any]:
        return elements

    def evict_after(self, elements: Sequence[Any], window: Any, ctx: Any) -> Sequence[Any]:
        return elements


def oracle(
    records: list[tuple[int, int]], size: int, *, kafka: bool = False
) -> dict[tuple[int, int], list[int]]:
    """KIP-450's definition, enumerated: a left window per distinct timestamp, a right window
    per timestamp whose next timestamp is at most ``size + 1`` later; contents by range.
    ``kafka``: as Kafka Streams implements it, where window starts cannot be negative, so
    timestamps in ``[0, size)`` share the left window ``[0; size]``."""
    stamps = sorted({ts for _, ts in records})
    windows = {(0, size) if kafka and 0 <= t < size else (t - size, t) for t in stamps}
    for t, nxt in pairwise(stamps):
        if nxt <= t + 1 + size:
            windows.add((t + 1, t + 1 + size))
    return {(s, e): sorted(v for v, ts in records if s <= ts <= e) for s, e in sorted(windows)}


def as_dict(results: list[Any]) -> dict[tuple[int, int], Any]:
    out: dict[tuple[int, int], Any] = {}
    for r in results:
        out[(r.window.start, r.window.end - 1)] = r.value  # the last result of a window wins
    return out


timestamps = st.lists(st.integers(-30, 60), min_size=1, max_size=40)
sizes = st.integers(0, 15)


@given(ts_list=timestamps, size=sizes, data=st.data())
def test_final_windows_equal_the_enumeration_in_any_order(
    ts_list: list[int], size: int, data: st.DataObject
) -> None:
    runs = [(f, s) for f in ("process", "reduce", "aggregate", "evicting") for s in (True, None)]
    orders = {}
    for base in (0, 30, -100):  # any timestamps; from 0 (Kafka's time); all negative
        records = [(v, ts + base) for v, ts in enumerate(ts_list)]
        orders[base] = (records, data.draw(st.permutations(records)))
    for function, slicing in runs:
        # the timeline: the definition; Kafka's algorithm: Kafka's windows for Kafka's time
        base = 0 if slicing else data.draw(st.sampled_from([30, -100]))
        records, order = orders[base]
        expected = oracle(records, size, kafka=not slicing)
        h = WindowOperatorHarness(
            SlidingDistinctAssigner(size, grace=0),
            {
                "process": Collect(),
                "reduce": Reduce(lambda a, b: a + b),
                "aggregate": Aggregate(CountSum()),
                "evicting": Collect(),
            }[function],
            evictor=KeepAll() if function == "evicting" else None,
            slicing=slicing,  # the record timeline, or contents per window
        )
        for value, ts in order:
            h.process_element(value, ts, key="k")
        h.process_watermark(MAX_TIMESTAMP)
        got = as_dict(h.extract_output())
        assert set(got) == set(expected)
        for window, values in expected.items():
            want = {
                "process": tuple(values),
                "evicting": tuple(values),
                "reduce": sum(values),
                "aggregate": (len(values), sum(values)),
            }[function]
            assert got[window] == want, (function, window)
        assert (h.num_state_entries(), h.num_event_time_timers(), h.num_keys()) == (0, 0, 0)


@given(
    ts_list=timestamps,
    size=sizes,
    delay=st.integers(0, 10),
    data=st.data(),
    slicing=st.sampled_from([True, None]),
    base=st.sampled_from([30, -100]),
)
def test_disorder_within_grace_gives_the_enumeration(
    ts_list: list[int],
    size: int,
    delay: int,
    data: st.DataObject,
    slicing: bool | None,
    base: int,
) -> None:
    # Arrival order with bounded disorder: sort, then swap neighbours within ``delay``.
    records = sorted(((v, ts + base) for v, ts in enumerate(ts_list)), key=lambda r: r[1])
    jitter = data.draw(
        st.lists(st.integers(0, delay), min_size=len(records), max_size=len(records))
    )
    arrival = [
        r
        for _, r in sorted(
            zip([r[1] - j for r, j in zip(records, jitter, strict=True)], records, strict=True),
            key=lambda p: p[0],
        )
    ]
    h = WindowOperatorHarness(
        SlidingDistinctAssigner(size, grace=delay + 1), Collect(), slicing=slicing
    )
    max_seen = None
    for value, ts in arrival:
        h.process_element(value, ts, key="k")
        max_seen = ts if max_seen is None else max(max_seen, ts)
        h.process_watermark(max_seen - delay)
    h.process_watermark(MAX_TIMESTAMP)
    expected = {w: tuple(v) for w, v in oracle(arrival, size, kafka=not slicing).items()}
    assert as_dict(h.extract_output()) == expected
    assert h.extract_side_output(LATE) == []


@given(
    steps=st.lists(
        st.one_of(
            st.tuples(st.just("e"), st.integers(-20, 60)),
            st.tuples(st.just("w"), st.integers(0, 25)),
        ),
        max_size=50,
    ),
    size=sizes,
    grace=st.integers(0, 8),
)
def test_every_record_is_in_a_result_or_late_never_both(
    steps: list[tuple[str, int]], size: int, grace: int
) -> None:
    h = WindowOperatorHarness(
        SlidingDistinctAssigner(size, grace=grace),
        Collect(),
        trigger=OnWindowCloseTrigger(),
        late_output_tag=LATE,
    )
    wm = -30
    sent = []
    for i, (kind, x) in enumerate(steps):
        if kind == "e":
            h.process_element(i, x, key="k")
            sent.append(i)
        else:
            wm += x
            h.process_watermark(wm)
    h.process_watermark(MAX_TIMESTAMP)
    in_results = {v for r in h.extract_output() for v in r.value}
    late = [e.value for e in h.extract_side_output(LATE)]
    assert not in_results & set(late)
    assert in_results | set(late) <= set(sent)
    # the rest were not late by their own timestamp but found only closed windows: counted
    assert len(sent) == len(in_results) + len(late) + h.metrics.num_records_in_no_window
    assert (h.num_state_entries(), h.num_event_time_timers(), h.num_keys()) == (0, 0, 0)


@given(ts_list=timestamps, size=sizes, cut=st.integers(0, 40), grace=st.integers(0, 6))
def test_snapshot_restore_mid_stream(ts_list: list[int], size: int, cut: int, grace: int) -> None:
    def make() -> WindowOperatorHarness:
        return WindowOperatorHarness(
            SlidingDistinctAssigner(size, grace=grace), Collect(), late_output_tag=LATE
        )

    def feed(h: WindowOperatorHarness, part: list[tuple[int, int]], start: int) -> None:
        for i, (value, ts) in enumerate(part, start):
            h.process_element(value, ts, key=value % 2)
            if i % 3 == 0:
                h.process_watermark(ts - 5)

    records = list(enumerate(ts_list))
    whole = make()
    feed(whole, records, 0)
    whole.process_watermark(MAX_TIMESTAMP)
    first = make()
    feed(first, records[:cut], 0)
    before = first.extract_output()
    late_before = first.extract_side_output(LATE)
    second = make()
    second.restore(first.snapshot())
    feed(second, records[cut:], cut)
    second.process_watermark(MAX_TIMESTAMP)
    assert sorted(before + second.extract_output()) == sorted(whole.extract_output())
    assert sorted(late_before + second.extract_side_output(LATE)) == sorted(
        whole.extract_side_output(LATE)
    )


class GenericEventTimeTrigger(EventTimeTrigger):
    """Same behaviour, but windows keep materialised contents (the general path)."""


class GenericCloseTrigger(OnWindowCloseTrigger):
    """Same behaviour, but windows keep materialised contents (the general path)."""


@given(
    steps=st.lists(
        st.one_of(
            st.tuples(st.just("e"), st.integers(-20, 60)),
            st.tuples(st.just("e"), st.integers(0, 12)),
            st.tuples(st.just("l"), st.integers(-12, 3)),  # near the watermark
            st.tuples(st.just("w"), st.integers(0, 25)),
        ),
        max_size=50,
    ),
    size=sizes,
    # grace up to the end of time: cleanup times saturate, windows are never cleaned up
    grace=st.one_of(st.integers(0, 8), st.sampled_from([MAX_TIMESTAMP // 2, MAX_TIMESTAMP])),
    function=st.sampled_from(["process", "reduce", "aggregate", "aggregate_process"]),
    close=st.booleans(),
    cursor_only=st.booleans(),
    base=st.sampled_from([0, 0, MAX_TIMESTAMP - 66]),  # also at the end of time
)
@example(  # an empty window after a late record: the lazy contents are "missing"
    steps=[("e", 0), ("e", 11), ("w", 15), ("w", 25), ("l", -9), ("e", 0)],
    size=9,
    grace=2,
    function="aggregate",
    close=False,
    cursor_only=False,
    base=0,
)
@example(  # a grace that saturates: the window keeps its state, as in Flink
    steps=[("e", 0)],
    size=0,
    grace=MAX_TIMESTAMP // 2,
    function="reduce",
    close=False,
    cursor_only=False,
    base=MAX_TIMESTAMP - 66,
)
@example(  # a record past the end of time opens no window that fires
    steps=[("w", 19), ("w", 25), ("w", 25), ("w", 25), ("l", 3)],
    size=0,
    grace=0,
    function="reduce",
    close=False,
    cursor_only=False,
    base=MAX_TIMESTAMP - 66,
)
@example(  # a right window past the end of time is clamped there: it fires at MAX and goes
    steps=[("e", 0), ("w", 13), ("w", 25), ("w", 25), ("w", 25), ("l", 1), ("e", 0), ("l", 0)],
    size=8,
    grace=0,
    function="reduce",
    close=False,
    cursor_only=False,
    base=MAX_TIMESTAMP - 66,
)
def test_lazy_windows_match_materialised_windows(
    steps: list[tuple[str, int]],
    size: int,
    grace: int,
    function: str,
    close: bool,
    cursor_only: bool,
    base: int,
) -> None:
    def run(trigger: Any, bulk: bool = False, per_key: bool = False) -> tuple[Any, ...]:
        fn = {
            "process": Collect(),
            "reduce": Reduce(lambda a, b: a + b),
            "aggregate": Aggregate(CountSum()),
            "aggregate_process": Aggregate(CountSum(), window_function=Collect()),
        }[function]
        h = WindowOperatorHarness(
            SlidingDistinctAssigner(size, grace=grace),
            fn,
            trigger=trigger,
            late_output_tag=LATE,
            slicing=True,  # the built-in triggers take the timeline (lazy) layout
        )
        wm = base - 30
        pending: list[tuple[int, int, str]] = []
        for i, (kind, x) in enumerate(steps):
            if kind != "w":
                pending.append((i, base + x if kind == "e" else wm + x, "k" if i % 3 else "j"))
                if not bulk:
                    h.process_elements(pending)
                    pending.clear()
            else:
                h.process_elements(pending)
                pending.clear()
                wm += x
                if per_key:  # a runtime that loads and fires one key at a time
                    op = h.operator
                    op.set_clocks(watermark=max(op.watermark, wm))
                    for key, ks in list(op.backend.items()):
                        op.fire_timers(key, ks)
                else:
                    h.process_watermark(wm)
        h.process_elements(pending)
        mid = sorted(h.extract_output())
        h.process_watermark(MAX_TIMESTAMP)
        late = sorted(h.extract_side_output(LATE))
        live = {k: list(h.operator.iter_windows(k)) for k in "jk"}
        # Firing key by key leaves emptied keys to the runtime: no key count then. Windows
        # that are never cleaned up (at the end of time, or a grace that saturates there)
        # keep their contents in the per-window layout and none on the timeline: the live
        # windows are compared, the entry counts only where windows get cleaned up.
        counted = not per_key and base == 0 and grace < MAX_TIMESTAMP // 4
        keys = h.num_keys() if counted else None
        state = (h.num_state_entries(), h.num_event_time_timers()) if counted else None
        return (mid, sorted(h.extract_output()), late, h.metrics, keys, state, live)

    trigger = OnWindowCloseTrigger() if close else EventTimeTrigger()
    general = run(GenericCloseTrigger() if close else GenericEventTimeTrigger())
    # Derived windows combine small ranges directly; the range cursor for every range too.
    with patch.object(sliding_derived, "_SMALL_RANGE", 0 if cursor_only else _SMALL_RANGE):
        assert run(trigger) == general
        assert run(trigger, bulk=True) == general
        assert run(trigger, per_key=True) == (
            run(GenericCloseTrigger() if close else GenericEventTimeTrigger(), per_key=True)
        )
