"""Assigners and window values against brute-force oracles (Polars ``test_rolling_parametric``).

Each oracle is written the slow, obvious way (scan every candidate, enumerate every point),
so that it shares no formula with the code under test.
"""

from __future__ import annotations

from itertools import combinations

from hypothesis import assume, given
from hypothesis import strategies as st

from windowing.assigners import (
    EventTimeSessionWindows,
    HoppingEventTimeWindows,
    HoppingProcessingTimeWindows,
    TumblingEventTimeWindows,
    TumblingProcessingTimeWindows,
)
from windowing.assigners.base import merge_time_windows
from windowing.time import MAX_TIMESTAMP
from windowing.windows import GLOBAL_WINDOW, GlobalWindow, TimeWindow

# Timestamps: mostly near zero (both signs, where the floor-mod bugs live), sometimes huge.
timestamps = st.one_of(
    st.integers(-300, 300),
    st.integers(-(10**15), 10**15),
    st.integers(MAX_TIMESTAMP - 200, MAX_TIMESTAMP),
)


class _Clock:
    def __init__(self, now: int) -> None:
        self.now = now

    def get_current_processing_time(self) -> int:
        return self.now


@st.composite
def grids(draw: st.DrawFn, hopping: bool) -> tuple[int, int, int]:
    """``(size, slide, offset)`` with ``abs(offset) < slide``; ``slide == size`` if tumbling."""
    size = draw(st.integers(1, 40))
    slide = draw(st.integers(1, 40)) if hopping else size
    offset = draw(st.integers(-(slide - 1), slide - 1))
    return size, slide, offset


def oracle_windows(ts: int, size: int, slide: int, offset: int) -> set[TimeWindow]:
    """Scan every candidate start ``s`` near ``ts``; keep ``s ≡ offset (mod slide)`` with
    ``s <= ts < s + size``. Ends are clamped at the end of time, as the assigners document."""
    found = set()
    for s in range(ts - size - slide, ts + 1):
        if (s - offset) % slide == 0 and s <= ts < s + size:
            found.add(TimeWindow(s, min(s + size, MAX_TIMESTAMP + 1)))
    return found


@given(grids(hopping=False), timestamps)
def test_tumbling_matches_oracle(grid: tuple[int, int, int], ts: int) -> None:
    size, _, offset = grid
    expected = oracle_windows(ts, size, size, offset)
    event = list(TumblingEventTimeWindows(size, offset).assign_windows("x", ts, _Clock(0)))
    # The processing-time assigner reads the clock and ignores the element's timestamp.
    proc_assigner = TumblingProcessingTimeWindows(size, offset)
    processing = list(proc_assigner.assign_windows("x", 7, _Clock(ts)))
    assert len(event) == 1 and set(event) == expected
    assert len(processing) == 1 and set(processing) == expected


@given(grids(hopping=True), timestamps)
def test_hopping_matches_oracle(grid: tuple[int, int, int], ts: int) -> None:
    size, slide, offset = grid
    expected = oracle_windows(ts, size, slide, offset)
    event = list(HoppingEventTimeWindows(size, slide, offset).assign_windows("x", ts, _Clock(0)))
    proc_assigner = HoppingProcessingTimeWindows(size, slide, offset)
    processing = list(proc_assigner.assign_windows("x", 7, _Clock(ts)))
    for windows in (event, processing):
        assert len(windows) == len(set(windows)), f"duplicate windows: {windows}"
        assert set(windows) == expected


@given(st.integers(1, 40), st.integers(1, 40), st.integers(-100, 100))
def test_offset_must_be_smaller_than_slide(size: int, slide: int, offset: int) -> None:
    """Construction succeeds exactly when ``abs(offset) < slide`` (``size`` for tumbling)."""
    for make, bound in (
        (lambda: HoppingEventTimeWindows(size, slide, offset), slide),
        (lambda: TumblingEventTimeWindows(size, offset), size),
    ):
        try:
            make()
        except ValueError as exc:
            assert abs(offset) >= bound, exc
            assert "offset" in str(exc)
        else:
            assert abs(offset) < bound


@given(st.integers(1, 50), timestamps)
def test_session_assigns_gap_window(gap: int, ts: int) -> None:
    assume(ts + gap <= MAX_TIMESTAMP)
    assert list(EventTimeSessionWindows(gap).assign_windows("x", ts, _Clock(0))) == [
        TimeWindow(ts, ts + gap)
    ]


# ---------------------------------------------------------------------------- TimeWindow laws
small_windows = st.builds(
    lambda start, length: TimeWindow(start, start + length),
    st.integers(-12, 12),
    st.integers(1, 8),
)


def points(w: TimeWindow) -> set[int]:
    """The integer points of the closed range ``[start, end]``."""
    return set(range(w.start, w.end + 1))


@given(small_windows, small_windows)
def test_intersects_matches_closed_range_enumeration(a: TimeWindow, b: TimeWindow) -> None:
    # Half-open windows that merely touch ([0, 5) and [5, 9)) intersect, as in Flink: the
    # closed ranges [start, end] share the point 5.
    assert a.intersects(b) == bool(points(a) & points(b))


@given(small_windows, st.integers(-25, 25))
def test_contains_and_max_timestamp_match_enumeration(w: TimeWindow, ts: int) -> None:
    assert w.contains(ts) == (ts in set(range(w.start, w.end)))
    assert w.max_timestamp() == max(range(w.start, w.end))


@given(small_windows, small_windows, small_windows)
def test_cover_is_the_smallest_common_window(a: TimeWindow, b: TimeWindow, c: TimeWindow) -> None:
    ab = a.cover(b)
    assert ab == b.cover(a)
    assert ab.cover(c) == a.cover(b.cover(c))
    span = set(range(a.start, a.end)) | set(range(b.start, b.end))
    assert (ab.start, ab.end) == (min(span), max(span) + 1)
    assert a.cover(a) == a


@given(small_windows, small_windows)
def test_ordering_is_reflexive_total_and_consistent_with_eq(a: TimeWindow, b: TimeWindow) -> None:
    assert a <= a and a >= a and not a < a
    assert (a <= b and b <= a) == (a == b)
    assert [a < b, a == b, a > b].count(True) == 1
    assert (a == b) == ((a.start, a.end) == (b.start, b.end))
    if a == b:
        assert hash(a) == hash(b)


def test_global_window_is_a_single_ordered_value() -> None:
    assert GlobalWindow() == GLOBAL_WINDOW and hash(GlobalWindow()) == hash(GLOBAL_WINDOW)
    assert GLOBAL_WINDOW <= GLOBAL_WINDOW and not GLOBAL_WINDOW < GLOBAL_WINDOW
    assert GLOBAL_WINDOW.max_timestamp() == MAX_TIMESTAMP


# ---------------------------------------------------------------------------- merging
def oracle_components(windows: set[TimeWindow]) -> list[set[TimeWindow]]:
    """Connected components of the "intersects" graph, by repeated pairwise union."""
    components = [{w} for w in windows]
    changed = True
    while changed:
        changed = False
        for i, j in combinations(range(len(components)), 2):
            if any(points(x) & points(y) for x in components[i] for y in components[j]):
                components[i] |= components.pop(j)
                changed = True
                break
    return components


@given(st.sets(small_windows, max_size=8))
def test_merge_time_windows_matches_connected_components(windows: set[TimeWindow]) -> None:
    merges = merge_time_windows(windows)
    expected = {
        frozenset(c): TimeWindow(min(w.start for w in c), max(w.end for w in c))
        for c in oracle_components(windows)
        if len(c) > 1
    }
    assert dict(merges) == expected
    assert len(merges) == len(expected)
