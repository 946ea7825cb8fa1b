"""Flink's ``EvictingWindowOperatorTest`` scenarios with the built-in evictors, plus count
windows (``count_window``) and the evictor rules of ``docs/evictors.md``.

As in Flink, elements are ``(key, value)`` tuples (the key is also passed to the harness) and
the window function sums the values into ``(key, sum)``. Each scenario runs with a reduce
function and with a process function (Flink's ``ReduceApplyWindowFunction`` and
``RichSumReducer``), which must agree: with an evictor, a reduce is computed over the kept
elements at firing time. Global windows are never cleaned up, so those scenarios end by
asserting the exact state left (no timers; per key the contents and, after an odd number of
elements, the count); time-window scenarios end with no timer and no state at all.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import pytest

from windowing.assigners import EventTimeSessionWindows, GlobalWindows, TumblingEventTimeWindows
from windowing.count_windows import count_window
from windowing.evictors import CountEvictor, DeltaEvictor, TimeEvictor
from windowing.functions import AggregateFunction, ProcessWindowFunction, Reduce
from windowing.testing import WindowOperatorHarness
from windowing.time import MAX_TIMESTAMP
from windowing.triggers import CountTrigger, EventTimeTrigger

Pair = tuple[str, int]


def sum_reduce(a: Pair, b: Pair) -> Pair:
    return (a[0], a[1] + b[1])


class SumProcess(ProcessWindowFunction[Pair, Pair, Any, Any]):
    """Flink's ``RichSumReducer``: one ``(key, sum)`` per firing."""

    def process(self, key: Any, context: Any, elements: Iterable[Pair]) -> Iterable[Pair]:
        return [(key, sum(v for _, v in elements))]


class SumAggregate(AggregateFunction[Pair, int, int]):
    def create_accumulator(self) -> int:
        return 0

    def add(self, value: Pair, accumulator: int) -> int:
        return accumulator + value[1]

    def get_result(self, accumulator: int) -> int:
        return accumulator

    def merge(self, a: int, b: int) -> int:
        return a + b


FUNCTIONS: dict[str, Callable[[], Any]] = {
    "reduce": lambda: sum_reduce,
    "reduce-spec": lambda: Reduce(sum_reduce),
    "process": SumProcess,
}
KINDS = list(FUNCTIONS)


def harness(kind: str, assigner: Any, trigger: Any, evictor: Any) -> WindowOperatorHarness:
    return WindowOperatorHarness(assigner, FUNCTIONS[kind](), trigger=trigger, evictor=evictor)


def feed(h: WindowOperatorHarness, records: Iterable[tuple[str, int, int | None]]) -> None:
    for key, value, ts in records:
        h.process_element((key, value), ts, key=key)


def out(h: WindowOperatorHarness) -> list[tuple[int, Pair]]:
    """``(timestamp, (key, sum))`` sorted, as Flink's ``ResultSortComparator``."""
    return sorted((r.timestamp, r.value) for r in h.extract_output())


def glob(*results: Pair) -> list[tuple[int, Pair]]:
    return sorted((MAX_TIMESTAMP, r) for r in results)


def assert_clean(h: WindowOperatorHarness) -> None:
    assert h.num_event_time_timers() == 0
    assert h.num_processing_time_timers() == 0
    assert h.num_state_entries() == 0
    assert h.num_keys() == 0


def assert_global_leftover(h: WindowOperatorHarness, entries: int) -> None:
    assert h.num_event_time_timers() == 0
    assert h.num_processing_time_timers() == 0
    assert h.num_state_entries() == entries


INPUT = [
    ("key2", 1, 3000),
    ("key2", 1, 3999),
    ("key1", 1, 20),
    ("key1", 1, 0),
    ("key1", 1, 999),
    ("key2", 1, 1998),
    ("key2", 1, 1999),
    ("key2", 1, 1000),
]


@pytest.mark.parametrize("kind", KINDS)
def test_count_evictor_evict_after(kind: str) -> None:
    """testCountEvictorEvictAfter: keep 4 after each firing, fire every 2."""
    h = harness(kind, GlobalWindows(), CountTrigger(2), CountEvictor(4, do_evict_after=True))
    feed(h, INPUT)
    assert out(h) == glob(("key2", 2), ("key2", 4), ("key1", 2))
    feed(h, [("key1", 1, 10999), ("key2", 1, 1000)])
    assert out(h) == glob(("key1", 4), ("key2", 6))
    feed(h, [("key2", 1, 1000), ("key2", 1, 1000)])
    assert out(h) == glob(("key2", 6))
    assert_global_leftover(h, 2)  # each key: 4 kept elements, count 0


@pytest.mark.parametrize("kind", KINDS)
def test_count_evictor_evict_before(kind: str) -> None:
    """testCountTrigger: a sliding count window, keep 4 before, fire every 2."""
    h = harness(kind, GlobalWindows(), CountTrigger(2), CountEvictor(4))
    feed(h, INPUT)
    assert out(h) == glob(("key2", 2), ("key2", 4), ("key1", 2))
    feed(h, [("key1", 1, 10999), ("key2", 1, 1000)])
    assert out(h) == glob(("key1", 4), ("key2", 4))  # key2 evicted down to 4 before
    assert_global_leftover(h, 2)


@pytest.mark.parametrize("kind", KINDS)
def test_time_evictor_evict_after(kind: str) -> None:
    """testTimeEvictorEvictAfter: keep 2 s after each firing."""
    h = harness(kind, GlobalWindows(), CountTrigger(2), TimeEvictor(2000, do_evict_after=True))
    feed(
        h,
        [
            ("key2", 1, 1000),
            ("key2", 1, 4000),
            ("key1", 1, 20),
            ("key1", 1, 0),
            ("key1", 1, 999),
            ("key2", 1, 3500),
            ("key2", 1, 2001),
            ("key2", 1, 1001),
        ],
    )
    assert out(h) == glob(("key2", 2), ("key1", 2), ("key2", 3))
    feed(h, [("key1", 1, 10999), ("key2", 1, 1002)])
    assert out(h) == glob(("key1", 4), ("key2", 5))
    assert_global_leftover(h, 2)


@pytest.mark.parametrize("kind", KINDS)
def test_time_evictor_evict_before(kind: str) -> None:
    """testTimeEvictorEvictBefore: tumbling 4 s windows, keep 2 s before each firing."""
    h = harness(kind, TumblingEventTimeWindows(4000), CountTrigger(2), TimeEvictor(2000))
    feed(
        h,
        [
            ("key2", 1, 1000),
            ("key2", 1, 3999),
            ("key1", 1, 20),
            ("key1", 1, 0),
            ("key1", 1, 999),
            ("key1", 1, 5999),
            ("key2", 1, 3500),
            ("key2", 1, 2001),
            ("key2", 1, 1001),
        ],
    )
    assert out(h) == [(3999, ("key1", 2)), (3999, ("key2", 1)), (3999, ("key2", 3))]
    feed(h, [("key1", 1, 6500), ("key2", 1, 1002)])
    assert out(h) == [(3999, ("key2", 3)), (7999, ("key1", 2))]
    h.process_watermark(7999)  # the count trigger does not fire at the end: cleanup only
    assert out(h) == []
    assert_clean(h)


@pytest.mark.parametrize("kind", KINDS)
def test_time_evictor_without_timestamps(kind: str) -> None:
    """testTimeEvictorNoTimestamp: nothing is evicted."""
    h = harness(kind, GlobalWindows(), CountTrigger(2), TimeEvictor(2000, do_evict_after=True))
    feed(h, [("key2", 1, None)] * 2 + [("key1", 1, None)] * 3 + [("key2", 1, None)] * 3)
    assert out(h) == glob(("key2", 2), ("key1", 2), ("key2", 4))
    feed(h, [("key1", 1, None), ("key2", 1, None)])
    assert out(h) == glob(("key1", 4), ("key2", 6))
    assert_global_leftover(h, 2)


DELTA_INPUT = [
    ("key2", 1, 3000),
    ("key2", 4, 3999),
    ("key1", 1, 20),
    ("key1", 1, 0),
    ("key1", 5, 999),
    ("key2", 5, 1998),
    ("key2", 6, 1999),
    ("key2", 1, 1000),
]


def value_rise(old: Pair, new: Pair) -> float:
    """Flink's test delta function: ``new.f1 - old.f1``."""
    return new[1] - old[1]


@pytest.mark.parametrize("kind", KINDS)
def test_delta_evictor_evict_before(kind: str) -> None:
    """testDeltaEvictorEvictBefore: threshold 2."""
    h = harness(kind, GlobalWindows(), CountTrigger(2), DeltaEvictor(2, value_rise))
    feed(h, DELTA_INPUT)
    assert out(h) == glob(("key2", 4), ("key2", 11), ("key1", 2))
    feed(h, [("key1", 3, 10999), ("key2", 10, 1000)])
    assert out(h) == glob(("key1", 8), ("key2", 10))
    assert_global_leftover(h, 2)


@pytest.mark.parametrize("kind", KINDS)
def test_delta_evictor_evict_after(kind: str) -> None:
    """testDeltaEvictorEvictAfter: threshold 2."""
    h = harness(
        kind, GlobalWindows(), CountTrigger(2), DeltaEvictor(2, value_rise, do_evict_after=True)
    )
    feed(h, DELTA_INPUT)
    assert out(h) == glob(("key2", 5), ("key2", 15), ("key1", 2))
    feed(h, [("key1", 9, 10999), ("key2", 10, 1000)])
    assert out(h) == glob(("key1", 16), ("key2", 22))
    assert_global_leftover(h, 2)


@pytest.mark.parametrize("kind", [*KINDS, "aggregate"])
def test_count_evictor_on_tumbling_event_time_windows(kind: str) -> None:
    """testTumblingWindowWithApply: keep the last 4 elements of each window at its end."""
    function = SumAggregate() if kind == "aggregate" else FUNCTIONS[kind]()
    h = WindowOperatorHarness(
        TumblingEventTimeWindows(4000),
        function,
        trigger=EventTimeTrigger(),
        evictor=CountEvictor(4),
    )
    feed(h, [("key1", 1, 10), ("key1", 1, 100)])
    h.process_watermark(1999)
    feed(h, [("key1", 1, 1997), ("key1", 1, 1998), ("key1", 1, 2310), ("key1", 1, 2310)])
    feed(h, [("key2", 1, 2310), ("key2", 1, 2310)])
    h.process_watermark(3999)
    results = sorted((r.timestamp, r.key, r.value) for r in h.extract_output())
    expected: list[Any] = [(3999, "key1", ("key1", 4)), (3999, "key2", ("key2", 2))]
    if kind == "aggregate":
        expected = [(3999, "key1", 4), (3999, "key2", 2)]
    assert results == expected
    assert_clean(h)


# =========================================================================== the rules


@pytest.mark.parametrize(
    ("function", "expected"),
    [
        pytest.param(lambda: sum_reduce, ("k", 9), id="reduce"),
        pytest.param(SumAggregate, 9, id="aggregate"),
        pytest.param(SumProcess, ("k", 9), id="process"),
    ],
)
def test_reduce_and_aggregate_run_over_the_kept_elements_at_firing(
    function: Callable[[], Any], expected: Any
) -> None:
    h = WindowOperatorHarness(
        TumblingEventTimeWindows(10),
        function(),
        trigger=EventTimeTrigger(),
        evictor=CountEvictor(2),
    )
    for v in range(1, 6):
        h.process_element(("k", v), v, key="k")
    h.process_watermark(9)
    assert [r.value for r in h.extract_output()] == [expected]  # 4 + 5, not 15
    assert_clean(h)


@pytest.mark.parametrize("kind", KINDS)
def test_evictions_are_permanent_for_later_firings(kind: str) -> None:
    # |a - b| >= 3 from the last element is evicted. First firing: [1, 10] -> [10].
    # Second: [10, 2, 3] -> [2, 3] = 5. Had 1 been kept, |1 - 3| < 3 would count it: 6.
    evictor = DeltaEvictor(3, lambda a, b: abs(a[1] - b[1]))
    h = harness(kind, GlobalWindows(), CountTrigger(2), evictor)
    feed(h, [("k", 1, 1), ("k", 10, 2)])
    assert out(h) == glob(("k", 10))
    feed(h, [("k", 2, 3), ("k", 3, 4)])
    assert out(h) == glob(("k", 5))
    assert_global_leftover(h, 1)  # the kept [2, 3]


@pytest.mark.parametrize("after", [False, True], ids=["before", "after"])
def test_process_function_sees_the_elements_after_evict_before(after: bool) -> None:
    seen: list[list[Pair]] = []

    class Record(ProcessWindowFunction[Pair, int, Any, Any]):
        def process(self, key: Any, context: Any, elements: Iterable[Pair]) -> Iterable[int]:
            seen.append(list(elements))
            return [len(seen[-1])]

    h = WindowOperatorHarness(
        TumblingEventTimeWindows(100),
        Record(),
        trigger=CountTrigger(3),
        evictor=CountEvictor(1, do_evict_after=after),
    )
    feed(h, [("k", v, v) for v in (1, 2, 3, 4, 5, 6)])
    if after:  # sees all 3, keeps the last; then the last + 2 new
        assert seen == [[("k", 1), ("k", 2), ("k", 3)], [("k", 3), ("k", 4), ("k", 5), ("k", 6)]]
    else:  # sees only the last of the buffer each time
        assert seen == [[("k", 3)], [("k", 6)]]
    h.process_watermark(99)
    assert_clean(h)


@pytest.mark.parametrize("kind", KINDS)
def test_count_evictor_on_merged_session_windows(kind: str) -> None:
    # Merged contents keep arrival order within the earliest window's buffer first.
    h = harness(kind, EventTimeSessionWindows(10), EventTimeTrigger(), CountEvictor(2))
    feed(h, [("k", 1, 0), ("k", 10, 5), ("k", 100, 12)])  # one session [0, 22)
    h.process_watermark(21)
    assert out(h) == [(21, ("k", 110))]
    assert_clean(h)


# =========================================================================== count windows


@pytest.mark.parametrize("kind", KINDS)
def test_tumbling_count_window(kind: str) -> None:
    spec = count_window(3)
    h = WindowOperatorHarness(spec.assigner, FUNCTIONS[kind](), **spec.options())
    feed(h, [("a", 1, None), ("b", 10, None), ("a", 2, None), ("a", 3, None), ("b", 20, None)])
    assert out(h) == glob(("a", 6))
    feed(h, [("b", 30, None), ("a", 4, None)])
    assert out(h) == glob(("b", 60))
    assert_global_leftover(h, 2)  # "a": element 4 and its count of 1
    feed(h, [("a", 5, None), ("a", 6, None)])
    assert out(h) == glob(("a", 15))
    assert_global_leftover(h, 0)  # purged on every firing: nothing left


@pytest.mark.parametrize("kind", KINDS)
def test_sliding_count_window(kind: str) -> None:
    spec = count_window(4, slide=2)
    h = WindowOperatorHarness(spec.assigner, FUNCTIONS[kind](), **spec.options())
    feed(h, [("a", v, v) for v in range(1, 8)])
    # fires after 2, 4 and 6 elements over the last (up to) 4
    assert out(h) == glob(("a", 1 + 2), ("a", 1 + 2 + 3 + 4), ("a", 3 + 4 + 5 + 6))
    assert_global_leftover(h, 2)  # [3, 4, 5, 6, 7] and the count of element 7
    feed(h, [("a", 8, 8)])
    assert out(h) == glob(("a", 5 + 6 + 7 + 8))


def test_count_window_spec_matches_flink() -> None:
    tumbling, sliding = count_window(100), count_window(100, slide=10)
    assert (tumbling.assigner, sliding.assigner) == (GlobalWindows(), GlobalWindows())
    assert repr(tumbling.trigger) == "PurgingTrigger(trigger=CountTrigger(max_count=100))"
    assert tumbling.evictor is None
    assert sliding.trigger == CountTrigger(10)
    assert sliding.evictor == CountEvictor(100)
    assert tumbling.options() == {"trigger": tumbling.trigger, "evictor": None}


@pytest.mark.parametrize(
    ("size", "slide", "message"),
    [
        (2.5, None, r"count_window: size must be an int, got 2.5"),
        (True, None, r"count_window: size must be an int, got True"),
        (5, "1", r"count_window: slide must be an int, got '1'"),
    ],
)
def test_count_window_rejects_bad_sizes(size: Any, slide: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        count_window(size, slide)


def test_count_window_of_zero_fires_every_element_alone_as_flink() -> None:
    """Flink's ``countWindow(0)``: ``PurgingTrigger.of(CountTrigger.of(0))``."""
    with pytest.warns(UserWarning, match="CountTrigger: max_count=0"):
        spec = count_window(0)
    h = WindowOperatorHarness(spec.assigner, lambda a, b: a + b, **spec.options())
    for v in (1, 2, 3):
        h.process_element(v, key="k")
    assert [r.value for r in h.extract_output()] == [1, 2, 3]


def test_sliding_count_window_of_size_zero_evicts_everything_as_flink() -> None:
    with pytest.warns(UserWarning, match="CountEvictor: max_count=0"):
        spec = count_window(0, 2)
    h = WindowOperatorHarness(spec.assigner, lambda a, b: a + b, **spec.options())
    for v in (1, 2, 3, 4):
        h.process_element(v, key="k")
    assert [r.value for r in h.extract_output()] == [None, None]
