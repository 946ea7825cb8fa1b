"""The per-key record timeline behind KIP-450 sliding windows.

A key's records are kept once, grouped by distinct timestamp in a sorted list, with one partial
per timestamp (the reduced value or accumulator of the records at that timestamp, or their
values when the function needs them all). Sliding-distinct windows are derived from it: the
operator creates a window's contents from the timeline when the window comes into existence
and then adds each new record to the windows that contain it (Kafka's eager update).
"""

from __future__ import annotations

import copy
import functools
from bisect import bisect_left, bisect_right
from collections.abc import Callable
from typing import Any, NamedTuple

from windowing.windows import TimestampedValue

__all__ = ["Partials", "Timeline", "TimelineExpiry"]

_MISSING: Any = object()


class TimelineExpiry(NamedTuple):
    """Timer namespace of the timeline's expiry timer (not a window)."""

    def max_timestamp(self) -> int:  # never used as a window end
        return 0


TIMELINE_EXPIRY = TimelineExpiry()


class Timeline:
    """Distinct timestamps of a key (sorted) with one partial each, plus its live windows."""

    __slots__ = ("live", "partials", "stamps")

    def __init__(self) -> None:
        self.stamps: list[int] = []
        self.partials: list[Any] = []
        self.live: set[Any] = set()

    def __len__(self) -> int:
        return len(self.stamps)

    def is_empty(self) -> bool:
        return not self.stamps and not self.live

    def expire(self, before: int) -> None:
        """Forget timestamps ``< before``."""
        stamps = self.stamps
        if stamps and stamps[0] < before:
            i = bisect_left(stamps, before)
            del stamps[:i]
            del self.partials[:i]

    def span(self, lo: int, hi: int) -> tuple[int, int]:
        """Index range of the timestamps in ``[lo, hi]``."""
        stamps = self.stamps
        return bisect_left(stamps, lo), bisect_right(stamps, hi)


_EMPTY: Any = object()  # partial of a timestamp whose records belong to no window


class Partials:
    """How records are kept per timestamp and turned into window contents, for one operator.

    ``kind`` is ``"reduce"`` / ``"aggregate"`` (one combined partial per timestamp) or
    ``"values"`` (all values; used for fold, process, apply and evictors).
    """

    def __init__(
        self,
        kind: str,
        *,
        reducer: Callable[[Any, Any], Any] | None = None,
        aggregate: Any = None,
        fold: tuple[Any, Callable[[Any, Any], Any]] | None = None,
        timestamped: bool = False,
    ) -> None:
        self.kind = kind
        self.reducer = reducer
        self.aggregate = aggregate
        self.fold = fold
        self.timestamped = timestamped

    def add_timestamp(self, timeline: Timeline, timestamp: int) -> None:
        """Put a timestamp on the timeline without a record (its record is in no window, but
        its right window exists)."""
        stamps = timeline.stamps
        i = bisect_left(stamps, timestamp)
        if i == len(stamps) or stamps[i] != timestamp:
            stamps.insert(i, timestamp)
            timeline.partials.insert(i, _EMPTY)

    def add(self, timeline: Timeline, timestamp: int, value: Any) -> bool:
        """Add a record; returns whether its timestamp is new on the timeline."""
        stamps = timeline.stamps
        i = bisect_left(stamps, timestamp)
        if i < len(stamps) and stamps[i] == timestamp:
            current = timeline.partials[i]
            if current is _EMPTY:
                timeline.partials[i] = self._first(value)
            elif self.kind == "reduce":
                assert self.reducer is not None
                timeline.partials[i] = self.reducer(current, value)
            elif self.kind == "aggregate":
                timeline.partials[i] = self.aggregate.add(value, current)
            else:
                current.append(value)
            return False
        stamps.insert(i, timestamp)
        timeline.partials.insert(i, self._first(value))
        return True

    def _first(self, value: Any) -> Any:
        if self.kind == "reduce":
            return value
        if self.kind == "aggregate":
            return self.aggregate.add(value, self.aggregate.create_accumulator())
        return [value]

    def contents(self, timeline: Timeline, lo: int, hi: int) -> Any:
        """Window contents (as the operator stores them) for the records in ``[lo, hi]``, in
        timestamp order; ``_MISSING`` when there are none."""
        i, j = timeline.span(lo, hi)
        stamps = timeline.stamps[i:j]
        parts = timeline.partials[i:j]
        if _EMPTY in parts:
            kept = [(t, p) for t, p in zip(stamps, parts, strict=True) if p is not _EMPTY]
            stamps = [t for t, _ in kept]
            parts = [p for _, p in kept]
        if not parts:
            return _MISSING
        if self.kind == "reduce":
            assert self.reducer is not None
            return functools.reduce(self.reducer, parts)
        if self.kind == "aggregate":
            agg = self.aggregate
            acc = agg.create_accumulator()
            for part in parts:
                acc = agg.merge(acc, part)
            return acc
        if self.timestamped:
            pairs = zip(stamps, parts, strict=True)
            return [TimestampedValue(v, t) for t, part in pairs for v in part]
        values = [v for part in parts for v in part]
        if self.fold is not None:
            initial, folder = self.fold
            acc = copy.deepcopy(initial)
            for v in values:
                acc = folder(acc, v)
            return acc
        return values
