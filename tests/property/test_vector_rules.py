"""Flink's window rules on whole columns (``windowing.rules``' array forms) equal the scalar
rules element by element, the ends of time included."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from windowing.rules import (
    cleanup_time,
    cleanup_times,
    is_window_late,
    keeps_state,
    windows_firing_on_arrival,
    windows_keeping_state,
    windows_late,
)
from windowing.time import MAX_TIMESTAMP, MIN_TIMESTAMP

TIMES = st.one_of(
    st.integers(MIN_TIMESTAMP, MAX_TIMESTAMP),
    st.integers(MAX_TIMESTAMP - 100, MAX_TIMESTAMP),
    st.integers(MIN_TIMESTAMP, MIN_TIMESTAMP + 100),
    st.integers(-100, 100),
)
LATENESS = st.one_of(
    st.integers(0, 100), st.integers(0, MAX_TIMESTAMP), st.just(MAX_TIMESTAMP), st.just(0)
)


@given(ends=st.lists(TIMES, min_size=1, max_size=20), lateness=LATENESS, watermark=TIMES)
def test_the_column_forms_equal_the_scalar_rules(
    ends: list[int], lateness: int, watermark: int
) -> None:
    column = np.array(ends, np.int64)
    cleanup = [cleanup_time(e, lateness) for e in ends]
    assert cleanup_times(column, lateness).tolist() == cleanup
    assert windows_late(column, lateness, watermark).tolist() == [
        is_window_late(e, lateness, watermark) for e in ends
    ]
    assert windows_keeping_state(column, lateness, watermark).tolist() == [
        keeps_state(e, c, watermark) for e, c in zip(ends, cleanup, strict=True)
    ]
    assert windows_firing_on_arrival(column, lateness, watermark).tolist() == [
        e <= watermark and not is_window_late(e, lateness, watermark) for e in ends
    ]
