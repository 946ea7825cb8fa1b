"""The built-in evictors' masks on columns against their per-row methods: for random windows
(any number of rows, empty ones too, ties and any timestamps), what ``keep_before`` /
``keep_after`` keep of each window is what ``evict_before`` / ``evict_after`` keep of its
buffer, in order."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from hypothesis import given
from hypothesis import strategies as st

from windowing.evictors import CountEvictor, DeltaEvictor, TimeEvictor
from windowing.evictors.vectorized import Clocks, VectorizedEvictor, WindowRows, kept_rows
from windowing.windows import TimestampedValue

CLOCKS = Clocks(2**63 - 1, 0)


def _rise(old: int, new: int) -> float:
    return new - old


def _rise_columns(old: pa.Table, new: pa.Table) -> Any:
    return pc.subtract(new["x"], old["x"])


def _distance(old: int, new: int) -> float:
    return abs(new - old)


def _distance_columns(old: pa.Table, new: pa.Table) -> Any:
    return np.abs(new["x"].to_numpy() - old["x"].to_numpy()).astype(np.float64)


@st.composite
def evictors(draw: st.DrawFn) -> VectorizedEvictor[Any, Any]:
    after = draw(st.booleans())
    kind = draw(st.sampled_from(["count", "time", "rise", "distance"]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # sizes <= 0 evict everything
        if kind == "count":
            return CountEvictor(draw(st.integers(-1, 7)), after)
        if kind == "time":
            return TimeEvictor(draw(st.integers(-3, 40)), after)
        threshold = draw(st.sampled_from([-1, 0, 1, 3, 10.5, float("nan")]))
        if kind == "rise":
            return DeltaEvictor(threshold, _rise, after, _rise_columns)
        return DeltaEvictor(threshold, _distance, after, _distance_columns)


windows = st.lists(
    st.lists(st.tuples(st.integers(-20, 20), st.integers(-50, 50)), max_size=7), max_size=5
)


def _as_rows(found: list[list[tuple[int, int]]]) -> WindowRows:
    flat = [row for window in found for row in window]
    sizes = [len(window) for window in found]
    return WindowRows(
        np.concatenate(([0], np.cumsum(sizes, dtype=np.int64))).astype(np.int64),
        np.array([t for _, t in flat], np.int64),
        np.arange(len(found), dtype=np.int64) * 100,
        np.arange(len(found), dtype=np.int64) * 100 + 100,
        pa.table({"x": pa.array([x for x, _ in flat], pa.int64())}),
    )


@given(evictors(), windows)
def test_masks_keep_what_the_per_row_methods_keep(
    evictor: VectorizedEvictor[Any, Any], found: list[list[tuple[int, int]]]
) -> None:
    assert evictor.vectorized
    rows = _as_rows(found)
    for method, mask_method in (("evict_before", "keep_before"), ("evict_after", "keep_after")):
        mask = kept_rows(getattr(evictor, mask_method)(rows, CLOCKS), rows, evictor, mask_method)
        kept = iter(mask.tolist())
        for i, window in enumerate(found):
            buffer = [TimestampedValue(x, t) for x, t in window]
            expected = getattr(evictor, method)(buffer, rows.window(i), CLOCKS)
            assert [e for e in buffer if next(kept)] == list(expected), (method, i)


@given(windows, st.integers(-5, 5))
def test_window_maxima_and_positions_skip_empty_windows(
    found: list[list[tuple[int, int]]], shift: int
) -> None:
    rows = _as_rows(found)
    values = rows.timestamps + shift
    maxima = rows.window_max(values)
    lowest = np.iinfo(np.int64).min
    assert maxima.tolist() == [max((t + shift for _, t in w), default=lowest) for w in found]
    assert rows.positions().tolist() == [i for w in found for i in range(len(w))]
    assert rows.last_rows().tolist() == [
        int(rows.offsets[i + 1]) - 1 for i, w in enumerate(found) for _ in w
    ]
