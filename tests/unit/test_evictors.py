"""Unit tests for the built-in evictors (Flink ``CountEvictor``, ``TimeEvictor``,
``DeltaEvictor``) at their boundaries.

Most tests run the evictor inside a real operator (:func:`run`): one key, global windows, a
purging count trigger that fires once when all elements are in, and a probe around the
evictor that records what the window function saw and what was kept after it. Each run ends
by asserting that no timer and no state is left.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from datetime import timedelta
from typing import Any

import cloudpickle
import numpy as np
import pyarrow as pa
import pyarrow.compute
import pytest

from windowing import evictors
from windowing.assigners import GlobalWindows, TumblingEventTimeWindows
from windowing.evictors import CountEvictor, DeltaEvictor, Evictor, EvictorContext, TimeEvictor
from windowing.evictors.vectorized import VectorizedEvictor, WindowRows, kept_rows
from windowing.functions import ProcessWindowFunction
from windowing.testing import WindowOperatorHarness
from windowing.triggers import CountTrigger, EventTimeTrigger, PurgingTrigger
from windowing.windows import GLOBAL_WINDOW, TimestampedValue, TimeWindow

TV = TimestampedValue
Item = tuple[Any, int | None]


class Probe(Evictor[Any, Any]):
    """Delegates to ``inner``; records what each side received and kept (test-only state)."""

    def __init__(self, inner: Evictor[Any, Any]) -> None:
        self.inner = inner
        self.before: list[tuple[list[Any], list[Any]]] = []
        self.after: list[tuple[list[Any], list[Any]]] = []

    def evict_before(
        self, elements: Sequence[TimestampedValue[Any]], window: Any, ctx: EvictorContext
    ) -> Sequence[TimestampedValue[Any]]:
        kept = self.inner.evict_before(elements, window, ctx)
        self.before.append((list(elements), list(kept)))
        return kept

    def evict_after(
        self, elements: Sequence[TimestampedValue[Any]], window: Any, ctx: EvictorContext
    ) -> Sequence[TimestampedValue[Any]]:
        kept = self.inner.evict_after(elements, window, ctx)
        self.after.append((list(elements), list(kept)))
        return kept


class Collect(ProcessWindowFunction[Any, list[Any], Any, Any]):
    def process(self, key: Any, context: Any, elements: Iterable[Any]) -> Iterable[list[Any]]:
        return [list(elements)]


def assert_clean(h: WindowOperatorHarness) -> None:
    assert h.num_event_time_timers() == 0
    assert h.num_processing_time_timers() == 0
    assert h.num_state_entries() == 0
    assert h.num_keys() == 0


def run(evictor: Evictor[Any, Any], items: Sequence[Item]) -> tuple[list[Any], list[Any]]:
    """Feed ``(value, timestamp)`` items into one window that fires (and purges) once, after
    the last item. Returns (values the function saw, values kept after the function)."""
    probe = Probe(evictor)
    h = WindowOperatorHarness(
        GlobalWindows(), Collect(), trigger=PurgingTrigger(CountTrigger(len(items))), evictor=probe
    )
    for value, ts in items:
        h.process_element(value, ts, key="k")
    outputs = h.extract_output()
    assert len(outputs) == 1
    assert len(probe.before) == len(probe.after) == 1
    kept_after = [e.value for e in probe.after[0][1]]
    assert_clean(h)
    return outputs[0].value, kept_after


def stamped(*timestamps: int | None) -> list[Item]:
    """Items whose value names their position: ``("e0", t0), ("e1", t1), ...``."""
    return [(f"e{i}", ts) for i, ts in enumerate(timestamps)]


# =========================================================================== CountEvictor


@pytest.mark.parametrize(
    ("n", "kept"),
    [
        (1, [0]),
        (2, [0, 1]),
        (3, [0, 1, 2]),  # exactly max_count: nothing evicted
        (4, [1, 2, 3]),  # one over: the first one goes
        (6, [3, 4, 5]),
    ],
)
def test_count_evictor_keeps_the_last_max_count(n: int, kept: list[int]) -> None:
    seen, after = run(CountEvictor(3), stamped(*range(n)))
    assert seen == [f"e{i}" for i in kept]
    assert after == seen


def test_count_evictor_evicts_by_arrival_not_by_timestamp() -> None:
    # The oldest *arrivals* go, even though they carry the newest timestamps.
    seen, _ = run(CountEvictor(2), stamped(90, 80, 10, 20))
    assert seen == ["e2", "e3"]


def test_count_evictor_max_count_one_keeps_only_the_last() -> None:
    seen, _ = run(CountEvictor(1), stamped(1, 2, 3))
    assert seen == ["e2"]


def test_count_evictor_after_lets_the_function_see_everything() -> None:
    seen, after = run(CountEvictor(2, do_evict_after=True), stamped(1, 2, 3, 4))
    assert seen == ["e0", "e1", "e2", "e3"]
    assert after == ["e2", "e3"]


def test_count_evictor_before_does_not_evict_after() -> None:
    probe = Probe(CountEvictor(2))
    h = WindowOperatorHarness(
        GlobalWindows(), Collect(), trigger=PurgingTrigger(CountTrigger(3)), evictor=probe
    )
    for v in "abc":
        h.process_element(v, 1, key="k")
    assert [e.value for e in probe.after[0][0]] == ["b", "c"]
    assert probe.after[0][0] == probe.after[0][1]
    h.extract_output()
    assert_clean(h)


@pytest.mark.parametrize("bad", [1.5, "3", True, None])
def test_count_evictor_rejects_bad_max_count(bad: Any) -> None:
    with pytest.raises(ValueError, match=r"CountEvictor: max_count must be") as info:
        CountEvictor(bad)
    assert repr(bad) in str(info.value) or str(bad) in str(info.value)


@pytest.mark.parametrize("count", [0, -1, -100])
def test_count_evictor_below_one_evicts_everything_as_flink(count: int) -> None:
    """Flink accepts ``CountEvictor.of(0)`` (and below): every element is evicted. A reduce
    over nothing passes on a null, as Flink's ``ReduceApplyWindowFunction`` does."""
    with pytest.warns(UserWarning, match=rf"CountEvictor: max_count={count} evicts every"):
        evictor = CountEvictor(count)
    assert evictor.evict_before([TV("a", 1), TV("b", 2)], None, None) == []
    h = WindowOperatorHarness(
        GlobalWindows(), lambda a, b: a + b, trigger=CountTrigger(2), evictor=evictor
    )
    for v in (1, 2, 3, 4):
        h.process_element(v, v, key="k")
    assert [r.value for r in h.extract_output()] == [None, None]
    assert h.num_state_entries() == 0


def test_count_evictor_rejects_non_bool_after_flag() -> None:
    with pytest.raises(ValueError, match=r"do_evict_after must be a bool, got 'yes'"):
        CountEvictor(2, do_evict_after="yes")  # type: ignore[arg-type]


# =========================================================================== TimeEvictor


def test_time_evictor_cutoff_is_exclusive() -> None:
    # newest 4000, size 2000: cut-off 2000. ts <= 2000 goes, ts > 2000 stays.
    seen, _ = run(TimeEvictor(2000), stamped(1999, 2000, 2001, 4000))
    assert seen == ["e2", "e3"]


def test_time_evictor_size_one_keeps_only_the_newest_timestamp() -> None:
    seen, _ = run(TimeEvictor(1), stamped(5, 9, 8, 9))
    assert seen == ["e1", "e3"]


def test_time_evictor_takes_the_maximum_over_an_unordered_buffer() -> None:
    # The newest element arrived first: the maximum, not the last element, sets the cut-off.
    seen, _ = run(TimeEvictor(10), stamped(100, 85, 91, 90, 95))
    assert seen == ["e0", "e2", "e4"]


def test_time_evictor_negative_timestamps() -> None:
    seen, _ = run(TimeEvictor(5), stamped(-20, -15, -11, -10))
    assert seen == ["e2", "e3"]  # cut-off -15


def test_time_evictor_without_timestamps_evicts_nothing() -> None:
    seen, after = run(TimeEvictor(1, do_evict_after=True), stamped(None, None, None))
    assert seen == after == ["e0", "e1", "e2"]


def test_time_evictor_keeps_elements_without_timestamp_among_stamped_ones() -> None:
    seen, _ = run(TimeEvictor(10), stamped(None, 0, 50, None, 45))
    assert seen == ["e0", "e2", "e3", "e4"]


def test_time_evictor_after() -> None:
    seen, after = run(TimeEvictor(10, do_evict_after=True), stamped(0, 5, 20))
    assert seen == ["e0", "e1", "e2"]
    assert after == ["e2"]


@pytest.mark.parametrize(
    ("size", "millis"), [("2 seconds", 2000), (timedelta(milliseconds=250), 250), (7, 7)]
)
def test_time_evictor_accepts_durations(size: Any, millis: int) -> None:
    assert TimeEvictor(size).window_size == millis


@pytest.mark.parametrize("bad", ["soon", 1.5, True])
def test_time_evictor_rejects_bad_window_size(bad: Any) -> None:
    with pytest.raises(ValueError, match="window_size"):
        TimeEvictor(bad)


@pytest.mark.parametrize("size", [0, -1, timedelta(seconds=-1), "-5 ms"])
def test_time_evictor_of_zero_or_less_evicts_every_timestamped_element(size: Any) -> None:
    """Flink's ``TimeEvictor.of(Duration.ZERO)``: the cut-off is the newest timestamp itself
    (``ts <= newest - 0``), so nothing with a timestamp stays."""
    with pytest.warns(UserWarning, match="TimeEvictor: window_size=.* evicts every element"):
        evictor = TimeEvictor(size)
    assert evictor.evict_before([TV("a", 1), TV("b", 5), TV("c", 5)], None, None) == []
    kept = evictor.evict_before([TV("x", None)], None, None)
    assert [e.value for e in kept] == ["x"]  # no timestamp: nothing to compare


def test_time_evictor_of_zero_after_the_function_empties_the_window() -> None:
    with pytest.warns(UserWarning):
        evictor = TimeEvictor(0, do_evict_after=True)
    h = WindowOperatorHarness(GlobalWindows(), Collect(), trigger=CountTrigger(2), evictor=evictor)
    for v in "abcd":
        h.process_element(v, 1, key="k")
    # each firing sees the two elements since the last, then evicts them for good
    assert [r.value for r in h.extract_output()] == [["a", "b"], ["c", "d"]]


def test_time_evictor_rejects_non_bool_after_flag() -> None:
    with pytest.raises(ValueError, match="TimeEvictor: do_evict_after must be a bool, got 1"):
        TimeEvictor(5, 1)  # type: ignore[arg-type]


# =========================================================================== DeltaEvictor


def _rise(old: int, new: int) -> float:
    """Flink's test delta: how far ``new`` (the last element) is above ``old``."""
    return new - old


def test_delta_evictor_threshold_is_inclusive() -> None:
    # last = 10; deltas 10-7=3 (>= 3: evicted), 10-8=2 (kept), 10-10=0 (kept)
    seen, _ = run(DeltaEvictor(3, _rise), [(7, 1), (8, 2), (10, 3)])
    assert seen == [8, 10]


def test_delta_evictor_tests_every_element_not_a_prefix() -> None:
    # Old Flink stopped at the first element below the threshold; current Flink does not.
    seen, _ = run(DeltaEvictor(3, _rise), [(9, 1), (1, 2), (8, 3), (0, 4), (10, 5)])
    assert seen == [9, 8, 10]


def test_delta_evictor_passes_element_first_and_last_second() -> None:
    calls: list[tuple[Any, Any]] = []

    def delta(old: Any, new: Any) -> float:
        calls.append((old, new))
        return 0.0

    run(DeltaEvictor(1, delta), [("a", 1), ("b", 2), ("c", 3)])
    assert calls == [("a", "c"), ("b", "c"), ("c", "c")]


def test_delta_evictor_zero_threshold_evicts_even_the_last_element() -> None:
    # delta(last, last) = 0 >= 0: Flink's rule evicts everything; the function sees nothing.
    seen, after = run(DeltaEvictor(0, _rise), [(1, 1), (2, 2)])
    assert seen == after == []


def test_delta_evictor_float_threshold() -> None:
    # last = 1.2: |0.5 - 1.2| = 0.7 >= 0.5 goes, |1.6 - 1.2| = 0.4 stays
    seen, _ = run(DeltaEvictor(0.5, lambda a, b: abs(a - b)), [(0.5, 1), (1.6, 2), (1.2, 3)])
    assert seen == [1.6, 1.2]


def test_delta_evictor_infinite_threshold_keeps_everything() -> None:
    seen, _ = run(DeltaEvictor(math.inf, _rise), [(0, 1), (10**9, 2)])
    assert seen == [0, 10**9]


def test_delta_evictor_after() -> None:
    seen, after = run(DeltaEvictor(2, _rise, do_evict_after=True), [(1, 1), (2, 2), (5, 3)])
    assert seen == [1, 2, 5]
    assert after == [5]


def test_delta_evictor_empty_buffer() -> None:
    assert DeltaEvictor(2, _rise).evict_before([], GLOBAL_WINDOW, None) == []  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("threshold", "function", "message"),
    [
        ("2", _rise, r"threshold must be a number, got '2'"),
        (True, _rise, r"threshold must be a number, got True"),
        (2, "abs", r"delta_function must be a callable .* got 'abs'"),
        (2, None, r"delta_function must be a callable .* got None"),
    ],
)
def test_delta_evictor_rejects_bad_configuration(
    threshold: Any, function: Any, message: str
) -> None:
    with pytest.raises(ValueError, match=rf"DeltaEvictor: {message}"):
        DeltaEvictor(threshold, function)


def test_delta_evictor_with_a_nan_threshold_evicts_nothing_as_flink() -> None:
    with pytest.warns(UserWarning, match="DeltaEvictor: threshold is NaN"):
        evictor = DeltaEvictor(math.nan, _rise)
    buffer = [TV(1, 1), TV(100, 2), TV(3, 3)]
    assert evictor.evict_before(buffer, None, None) == buffer


def test_delta_evictor_keeps_elements_whose_delta_is_nan_as_flink() -> None:
    """Flink evicts when ``delta >= threshold``: a NaN delta is never that."""
    evictor = DeltaEvictor(2.0, lambda old, new: math.nan if old == 100 else new - old)
    buffer = [TV(1, 1), TV(100, 2), TV(4, 3), TV(5, 4)]
    assert [e.value for e in evictor.evict_before(buffer, None, None)] == [100, 4, 5]


# =========================================================================== all evictors

ALL = [
    pytest.param(CountEvictor(2), id="count"),
    pytest.param(TimeEvictor(3), id="time"),
    pytest.param(DeltaEvictor(3, _rise), id="delta"),
    pytest.param(CountEvictor(2, do_evict_after=True), id="count-after"),
    pytest.param(TimeEvictor(3, do_evict_after=True), id="time-after"),
    pytest.param(DeltaEvictor(3, _rise, do_evict_after=True), id="delta-after"),
]


@pytest.mark.parametrize("evictor", ALL)
def test_evictors_do_not_mutate_their_input(evictor: Evictor[Any, Any]) -> None:
    buffer = [TV(0, 0), TV(5, 5), TV(1, 1), TV(9, 9)]
    frozen = list(buffer)
    kept_before = evictor.evict_before(buffer, GLOBAL_WINDOW, None)  # type: ignore[arg-type]
    kept_after = evictor.evict_after(buffer, GLOBAL_WINDOW, None)  # type: ignore[arg-type]
    assert buffer == frozen
    # Exactly one side evicts; the other returns the elements unchanged.
    assert (list(kept_before) == frozen) != (list(kept_after) == frozen)


@pytest.mark.parametrize("evictor", ALL)
def test_evictors_survive_cloudpickle(evictor: Evictor[Any, Any]) -> None:
    copy = cloudpickle.loads(cloudpickle.dumps(evictor))
    buffer = [TV(0, 0), TV(5, 5), TV(1, 1), TV(9, 9)]
    ctx: Any = None
    assert copy.evict_before(buffer, None, ctx) == evictor.evict_before(buffer, None, ctx)
    assert copy.evict_after(buffer, None, ctx) == evictor.evict_after(buffer, None, ctx)


@pytest.mark.parametrize("evictor", ALL)
def test_evictors_keep_no_state_on_self(evictor: Evictor[Any, Any]) -> None:
    with pytest.raises(AttributeError):
        evictor.extra = 1  # type: ignore[attr-defined]
    assert not hasattr(evictor, "__dict__") or set(vars(evictor)) <= {
        "max_count",
        "window_size",
        "threshold",
        "delta_function",
        "do_evict_after",
        "vectorized_delta",
    }


def test_evictor_reprs_and_equality() -> None:
    assert repr(CountEvictor(3)) == "CountEvictor(max_count=3, do_evict_after=False)"
    assert (
        repr(TimeEvictor("1 second", True)) == "TimeEvictor(window_size=1000, do_evict_after=True)"
    )
    assert TimeEvictor(1000) == TimeEvictor(timedelta(seconds=1))
    assert CountEvictor(3) != CountEvictor(3, do_evict_after=True)
    assert repr(DeltaEvictor(2, _rise)).startswith("DeltaEvictor(threshold=2, delta_function=")


def test_evictors_are_exported() -> None:
    assert {"CountEvictor", "TimeEvictor", "DeltaEvictor", "Evictor"} <= set(evictors.__all__)


# =========================================================================== custom evictors


class WatermarkEvictor(Evictor[Any, Any]):
    """Keeps elements not older than the watermark minus 5; records what it was given."""

    def __init__(self) -> None:
        self.seen: list[tuple[Any, list[Any], int, int]] = []

    def evict_before(
        self, elements: Sequence[TimestampedValue[Any]], window: Any, ctx: EvictorContext
    ) -> Sequence[TimestampedValue[Any]]:
        wm = ctx.get_current_watermark()
        self.seen.append((window, list(elements), wm, ctx.get_current_processing_time()))
        return [e for e in elements if e.timestamp is not None and e.timestamp > wm - 5]

    def evict_after(
        self, elements: Sequence[TimestampedValue[Any]], window: Any, ctx: EvictorContext
    ) -> Sequence[TimestampedValue[Any]]:
        return elements


def test_custom_evictor_gets_window_timestamps_watermark_and_processing_time() -> None:
    evictor = WatermarkEvictor()
    h = WindowOperatorHarness(
        TumblingEventTimeWindows(20), Collect(), trigger=EventTimeTrigger(), evictor=evictor
    )
    h.set_processing_time(1234)
    for ts in (3, 12, 16):
        h.process_element(f"v{ts}", ts, key="k")
    h.process_watermark(19)
    assert evictor.seen == [
        (TimeWindow(0, 20), [TV("v3", 3), TV("v12", 12), TV("v16", 16)], 19, 1234)
    ]
    assert [r.value for r in h.extract_output()] == [["v16"]]  # 16 > 19 - 5
    assert_clean(h)


# ---------------------------------------------------------------------------- columns
class _EvictLess(CountEvictor):
    """A subclass changing the per-row rule only: its inherited mask would disagree."""

    def evict(self, elements: Sequence[TimestampedValue[Any]]) -> Sequence[TimestampedValue[Any]]:
        return elements


class _EvictLessEverywhere(_EvictLess):
    def keep(self, rows: WindowRows) -> Any:
        return np.ones(len(rows), np.bool_)


class _KeepFirst(VectorizedEvictor[Any, Any]):
    def evict_before(self, elements: Any, window: Any, ctx: Any) -> Any:
        return list(elements[:1])

    def evict_after(self, elements: Any, window: Any, ctx: Any) -> Any:
        return elements

    def keep_before(self, rows: WindowRows, ctx: Any) -> Any:
        return rows.positions() == 0

    def keep_after(self, rows: WindowRows, ctx: Any) -> Any:
        return np.ones(len(rows), np.bool_)


class _KeepFirstPerRowChanged(_KeepFirst):
    def evict_before(self, elements: Any, window: Any, ctx: Any) -> Any:
        return elements


def test_an_evictor_has_a_form_on_columns_when_its_masks_follow_its_per_row_methods() -> None:
    def same(old: Any, new: Any) -> float:
        return 0.0

    assert CountEvictor(2).vectorized and TimeEvictor(5, True).vectorized
    assert DeltaEvictor(
        1, same, vectorized_delta=lambda old, new: np.zeros(old.num_rows)
    ).vectorized
    assert not DeltaEvictor(1, same).vectorized  # no vectorized_delta: per row
    assert not _EvictLess(2).vectorized  # the mask is CountEvictor's, the rule is not
    assert _EvictLessEverywhere(2).vectorized
    assert _KeepFirst().vectorized and not _KeepFirstPerRowChanged().vectorized
    assert not isinstance(Probe(CountEvictor(1)), VectorizedEvictor)


def _rows(sizes: list[int], **columns: Any) -> WindowRows:
    n = sum(sizes)
    offsets = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    starts = np.arange(len(sizes), dtype=np.int64) * 10
    table = pa.table(columns or {"x": list(range(n))})
    return WindowRows(offsets, np.arange(n, dtype=np.int64), starts, starts + 10, table)


@pytest.mark.parametrize(
    ("mask", "shown"),
    [
        (np.ones(3, np.int64), "ndarray of dtype int64 and shape (3,)"),
        (np.ones(2, np.bool_), "ndarray of dtype bool and shape (2,)"),
        (pa.array([True, None, False]), "BooleanArray"),
        (None, "NoneType"),
    ],
    ids=["ints", "short", "null", "none"],
)
def test_a_mask_of_the_wrong_shape_or_type_names_the_evictor(mask: Any, shown: str) -> None:
    rows = _rows([1, 2])
    with pytest.raises(TypeError, match=r"_KeepFirst.keep_before must return a boolean mask") as e:
        kept_rows(mask, rows, _KeepFirst(), "keep_before")
    assert f"one per row (3, no null), got {shown}" in str(e.value)


def test_masks_as_arrow_or_lists_are_taken() -> None:
    rows = _rows([1, 2])
    assert kept_rows(pa.array([True, False, True]), rows, _KeepFirst(), "m").tolist() == [
        True,
        False,
        True,
    ]
    assert kept_rows([False, False, True], rows, _KeepFirst(), "m").tolist() == [
        False,
        False,
        True,
    ]


def test_vectorized_deltas_are_checked() -> None:
    def same(old: Any, new: Any) -> float:
        return 0.0

    with pytest.raises(ValueError, match="DeltaEvictor: vectorized_delta must be None or a"):
        DeltaEvictor(1, same, vectorized_delta=3)  # type: ignore[arg-type]
    short = DeltaEvictor(1, same, vectorized_delta=lambda old, new: [0.0])
    with pytest.raises(TypeError, match=r"return one number per row \(3\), got list of shape"):
        short.keep_before(_rows([1, 2]), None)  # type: ignore[arg-type]
    words = DeltaEvictor(1, same, vectorized_delta=lambda old, new: ["a", "b", "c"])
    with pytest.raises(TypeError, match=r"one number per row \(3\), got list$"):
        words.keep_before(_rows([1, 2]), None)  # type: ignore[arg-type]
    columns = WindowRows(np.array([0, 1]), np.array([5]), np.array([0]), np.array([10]))
    with pytest.raises(ValueError, match="vectorized_delta needs the rows' columns"):
        DeltaEvictor(1, same, vectorized_delta=lambda o, n: [0.0]).keep_before(columns, None)  # type: ignore[arg-type]


def test_a_delta_evictor_on_columns_compares_each_row_with_its_windows_last() -> None:
    seen: list[tuple[list[int], list[int]]] = []

    def deltas(old: pa.Table, new: pa.Table) -> Any:
        seen.append((old["x"].to_pylist(), new["x"].to_pylist()))
        return pa.compute.subtract(new["x"], old["x"])

    evictor = DeltaEvictor(2, lambda old, new: new - old, vectorized_delta=deltas)
    rows = _rows([3, 0, 2], x=[1, 4, 3, 2, 6])
    assert evictor.keep_before(rows, None).tolist() == [False, True, True, False, True]  # type: ignore[arg-type]
    assert seen == [([1, 4, 3, 2, 6], [3, 3, 3, 6, 6])]
    assert evictor.keep_after(rows, None).tolist() == [True] * 5  # type: ignore[arg-type]
