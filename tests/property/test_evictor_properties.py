"""The built-in evictors against brute-force filters.

1. Direct calls: for random buffers (timestamps may be missing), what ``evict_before`` /
   ``evict_after`` keep equals a filter written from the rule in ``docs/evictors.md``, on the
   configured side only, in the original order.
2. Through the operator: random elements of one key in global windows with a count trigger;
   each firing's function input equals a brute-force simulation of the buffer (filter
   before, evaluate, filter after, keep what is left), so evictions are permanent.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from hypothesis import given, note
from hypothesis import strategies as st

from windowing.assigners import GlobalWindows
from windowing.evictors import CountEvictor, DeltaEvictor, Evictor, TimeEvictor
from windowing.functions import ProcessWindowFunction
from windowing.testing import WindowOperatorHarness
from windowing.triggers import CountTrigger
from windowing.windows import GLOBAL_WINDOW, TimestampedValue

TV = TimestampedValue
Buffer = list[TimestampedValue[int]]


def _distance(a: int, b: int) -> float:
    return abs(a - b)


def _rise(old: int, new: int) -> float:
    return new - old


DELTAS: dict[str, Callable[[int, int], float]] = {"distance": _distance, "rise": _rise}


# ---------------------------------------------------------------------------- oracles
def keep_count(buffer: Buffer, max_count: int) -> Buffer:
    """Keep element ``i`` iff fewer than ``max_count`` elements arrived after it."""
    return [e for i, e in enumerate(buffer) if len(buffer) - 1 - i < max_count]


def keep_time(buffer: Buffer, size: int) -> Buffer:
    """Keep an element iff it has no timestamp or no element is ``size`` or more newer."""
    return [
        e
        for e in buffer
        if e.timestamp is None
        or all(o.timestamp is None or o.timestamp - e.timestamp < size for o in buffer)
    ]


def keep_delta(buffer: Buffer, threshold: float, delta: Callable[[int, int], float]) -> Buffer:
    """Keep an element iff its delta to the last element is below ``threshold``."""
    return [e for e in buffer if delta(e.value, buffer[-1].value) < threshold] if buffer else []


Config = tuple[Evictor[Any, Any], Callable[[Buffer], Buffer], bool]


@st.composite
def configs(draw: st.DrawFn) -> Config:
    """An evictor, its brute-force filter, and whether it evicts after the function."""
    after = draw(st.booleans())
    kind = draw(st.sampled_from(["count", "time", "delta"]))
    if kind == "count":
        n = draw(st.integers(1, 6))
        return CountEvictor(n, after), lambda b: keep_count(b, n), after
    if kind == "time":
        size = draw(st.integers(1, 30))
        return TimeEvictor(size, after), lambda b: keep_time(b, size), after
    threshold = draw(st.integers(0, 5) | st.integers(-2, 10) | st.floats(-2, 10, allow_nan=False))
    name = draw(st.sampled_from(sorted(DELTAS)))
    fn = DELTAS[name]
    return DeltaEvictor(threshold, fn, after), lambda b: keep_delta(b, threshold, fn), after


timestamps = st.integers(-50, 50)
buffers = st.lists(
    st.builds(TV, st.integers(-20, 20), timestamps | st.none()), max_size=12
) | st.lists(st.builds(TV, st.integers(-20, 20), timestamps), max_size=12)


# ---------------------------------------------------------------------------- properties
@given(configs(), buffers)
def test_evictors_keep_what_the_brute_force_filter_keeps(config: Config, buffer: Buffer) -> None:
    evictor, keep, after = config
    before_kept = list(evictor.evict_before(list(buffer), GLOBAL_WINDOW, None))  # type: ignore[arg-type]
    after_kept = list(evictor.evict_after(list(buffer), GLOBAL_WINDOW, None))  # type: ignore[arg-type]
    expected = keep(buffer)
    assert (after_kept if after else before_kept) == expected
    assert (before_kept if after else after_kept) == buffer  # the other side keeps all


class Record(ProcessWindowFunction[int, list[int], Any, Any]):
    def process(self, key: Any, context: Any, elements: Iterable[int]) -> Iterable[list[int]]:
        return [list(elements)]


@given(
    configs(),
    st.integers(1, 4),
    st.lists(st.tuples(st.integers(-20, 20), timestamps | st.none()), max_size=25),
)
def test_firings_see_the_brute_force_buffer(
    config: Config, every: int, elements: Sequence[tuple[int, int | None]]
) -> None:
    evictor, keep, after = config
    h = WindowOperatorHarness(
        GlobalWindows(), Record(), trigger=CountTrigger(every), evictor=evictor
    )
    buffer: Buffer = []
    expected: list[list[int]] = []
    for i, (value, ts) in enumerate(elements, start=1):
        h.process_element(value, ts, key="k")
        buffer.append(TV(value, ts))
        if i % every == 0:
            seen = buffer if after else keep(buffer)
            expected.append([e.value for e in seen])
            buffer = keep(seen) if after else list(seen)
    note(f"expected firings {expected}")
    assert [r.value for r in h.extract_output()] == expected
    assert h.num_event_time_timers() == h.num_processing_time_timers() == 0
    # Left: the contents (if any) and the count since the last firing (if any).
    assert h.num_state_entries() == int(bool(buffer)) + int(len(elements) % every != 0)
