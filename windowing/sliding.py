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

from windowing.time import MAX_TIMESTAMP
from windowing.windows import TimestampedValue

__all__ = ["Partials", "Timeline", "TimelineExpiry"]


class _Sentinel:
    """A named singleton that stays itself through pickling (snapshots)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __reduce__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return self.name


_MISSING: Any = _Sentinel("_MISSING")


class TimelineExpiry(NamedTuple):
    """Timer namespace of the timeline's expiry timer (not a window)."""

    def max_timestamp(self) -> int:  # never used as a window end
        return 0


TIMELINE_EXPIRY = TimelineExpiry()


class Timeline:
    """Distinct timestamps of a key (sorted) with one partial each, plus its live windows.

    A sliding-distinct window is known by its start (its end follows from the size), so
    ``live`` holds the starts of the windows that exist and are not cleaned up yet.
    """

    __slots__ = (
        "cursor",
        "due",
        "empties",
        "expiry_at",
        "live",
        "offset",
        "partials",
        "stamps",
        "upto",
    )

    def __init__(self, upto: int = 0) -> None:
        self.stamps: list[int] = []
        self.partials: list[Any] = []
        self.empties = 0  # timestamps without a record (partial ``_EMPTY``)
        self.live: set[int] = set()  # window starts
        self.cursor: RangeCursor | None = None
        # Timestamps forgotten so far: ``index + offset`` is a record's position, which stays
        # the same while records are appended or forgotten (the cursor's coordinates).
        self.offset = 0
        self.expiry_at: int | None = None  # the pending expiry timer, if any
        # Windows derived from the timeline (no per-window timers): those firing by ``upto``
        # have fired; ``due`` is the key's one timer.
        self.upto = upto
        self.due: int | None = None

    def schedule(self, time: int) -> None:
        """Make the key's one timer (derived windows) fire by ``time`` (at the latest at the
        end of time, where the windows ending there fire)."""
        if time <= MAX_TIMESTAMP and (self.due is None or time < self.due):
            self.due = time

    def max_timestamp_of(self, start: int, size: int) -> int:
        """The max timestamp of the live window starting at ``start``: ``start + size``,
        but a right window reaching past the end of time is clamped there, as
        :func:`~windowing.assigners.sliding_distinct.right_window` clamps it (a window ending
        past it at a record is that record's left window, which is not)."""
        last = start + size
        if last <= MAX_TIMESTAMP:
            return last
        i = bisect_left(self.stamps, last)
        at_record = i < len(self.stamps) and self.stamps[i] == last
        return last if at_record else MAX_TIMESTAMP

    def __len__(self) -> int:
        return len(self.stamps)

    def is_empty(self) -> bool:
        return not self.stamps and not self.live

    def expire(self, before: int, size: int) -> int:
        """Forget timestamps ``< before`` and the starts of their left and right windows in
        ``live`` (``size``: the window size); returns how many. The callers pass ``before``
        no later than ``watermark - size - lateness - 1``: every window of those timestamps
        is cleaned up."""
        stamps = self.stamps
        if stamps and stamps[0] < before:
            i = bisect_left(stamps, before)
            live = self.live
            for t in stamps[:i]:
                live.discard(t - size)
                live.discard(t + 1)
            del stamps[:i]
            if self.empties:
                self.empties -= sum(part is _EMPTY for part in self.partials[:i])
            del self.partials[:i]
            self.offset += i
            return i
        return 0

    def span(self, lo: int, hi: int) -> tuple[int, int]:
        """Index range of the timestamps in ``[lo, hi]``."""
        stamps = self.stamps
        return bisect_left(stamps, lo), bisect_right(stamps, hi)


_EMPTY: Any = _Sentinel("_EMPTY")  # partial of a timestamp whose records are in no window


def _no_combine(a: Any, b: Any) -> Any:
    msg = "values are not combined"
    raise TypeError(msg)


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
        # combine(owned, part) for range aggregates; owned(part) copies a partial into a
        # value that combine may modify (None: reduce functions never modify arguments).
        self.combine: Callable[[Any, Any], Any] = reducer if reducer is not None else _no_combine
        self.owned: Callable[[Any], Any] | None = None
        if aggregate is not None:
            merge, create = aggregate.merge, aggregate.create_accumulator
            self.combine = merge
            self.owned = lambda part: merge(create(), part)

    def add_timestamp(self, timeline: Timeline, timestamp: int) -> None:
        """Put a timestamp on the timeline without a record (its record is in no window, but
        its right window exists)."""
        stamps = timeline.stamps
        i = bisect_left(stamps, timestamp)
        if i == len(stamps) or stamps[i] != timestamp:
            _moved(timeline, i)
            stamps.insert(i, timestamp)
            timeline.partials.insert(i, _EMPTY)
            timeline.empties += 1

    def add(self, timeline: Timeline, timestamp: int, value: Any) -> bool:
        """Add a record; returns whether its timestamp is new on the timeline."""
        stamps = timeline.stamps
        i = bisect_left(stamps, timestamp)
        _moved(timeline, i)
        if i < len(stamps) and stamps[i] == timestamp:
            current = timeline.partials[i]
            if current is _EMPTY:
                timeline.partials[i] = self.first(value)
                timeline.empties -= 1
            elif self.kind == "reduce":
                assert self.reducer is not None
                timeline.partials[i] = self.reducer(current, value)
            elif self.kind == "aggregate":
                timeline.partials[i] = self.aggregate.add(value, current)
            else:
                current.append(value)
            return False
        stamps.insert(i, timestamp)
        timeline.partials.insert(i, self.first(value))
        return True

    def aggregate_range(self, timeline: Timeline, lo: int, hi: int) -> Any:
        """Like :meth:`contents` for reduce/aggregate kinds, through the timeline's
        :class:`RangeCursor` when the range moves forward (amortised O(1))."""
        i, j = timeline.span(lo, hi)
        return self.aggregate_span(timeline, i, j)

    def aggregate_span(self, timeline: Timeline, i: int, j: int) -> Any:
        """The combined partials of the timeline indexes ``[i, j)`` (``_MISSING`` when there
        are none), from the timeline's :class:`RangeCursor`: a range starting and ending no
        earlier than the previous one costs amortised O(1) combines."""
        offset = timeline.offset
        a, b = i + offset, j + offset
        cursor = timeline.cursor
        if cursor is None:
            cursor = timeline.cursor = RangeCursor()
        combine, owned = self.combine, self.owned
        partials = timeline.partials
        if a >= cursor.split or a < cursor.front or b < cursor.hi:
            # The front is used up (or the range moved back): rebuild it from the range.
            suffix: list[Any] = []
            acc: Any = _MISSING
            for part in reversed(partials[i:j]):
                if part is not _EMPTY:
                    if acc is _MISSING:
                        acc = part
                    else:
                        acc = combine(part if owned is None else owned(part), acc)
                suffix.append(acc)
            suffix.reverse()
            cursor.suffix, cursor.front, cursor.split, cursor.hi = suffix, a, b, b
            cursor.back_agg, cursor.back_owned = _MISSING, False
            return acc
        if b > cursor.hi:  # partials entering the range join the back
            agg, own = cursor.back_agg, cursor.back_owned
            for part in partials[cursor.hi - offset : j]:
                if part is _EMPTY:
                    continue
                if agg is _MISSING:
                    agg, own = part, owned is None
                else:
                    if not own:
                        agg, own = owned(agg), True  # type: ignore[misc]
                    agg = combine(agg, part)
            cursor.back_agg, cursor.back_owned, cursor.hi = agg, own, b
        top = cursor.suffix[a - cursor.front]
        back = cursor.back_agg
        if back is _MISSING:
            return top
        if top is _MISSING:
            cursor.back_owned = owned is None  # handed out: copied before it is modified
            return back
        return combine(top if owned is None else owned(top), back)

    def first(self, value: Any) -> Any:
        """The partial of a timestamp's first record."""
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


def _moved(timeline: Timeline, i: int) -> None:
    """The partial at index ``i`` changes or a timestamp is inserted there: the cursor is
    rebuilt on its next query if it covers that position."""
    cursor = timeline.cursor
    if cursor is not None and i + timeline.offset < cursor.hi:
        timeline.cursor = None


class RangeCursor:
    """Aggregate of a timeline's partials over a range of positions that only moves forward.

    Sliding-distinct windows all have the same length, so a key's windows fire in order of
    start and of end: consecutive queries slide the range forward. The cursor keeps the range
    as two stacks (the classic sliding-window aggregation) over positions ``[front, hi)``
    (``Timeline.offset``): ``suffix[p - front]`` combines positions ``p .. split - 1`` and
    ``back_agg`` combines ``split .. hi - 1``. Each partial is combined about three times in
    all, and a query combines two aggregates, whatever the window size. A query behind the
    cursor, or a record inserted or updated inside the covered positions, rebuilds it.
    """

    __slots__ = ("back_agg", "back_owned", "front", "hi", "split", "suffix")

    def __init__(self) -> None:
        self.front = self.split = self.hi = 0  # empty: the first query builds it
        self.suffix: list[Any] = []  # for positions front .. split - 1
        self.back_agg: Any = _MISSING
        self.back_owned = False  # whether combine may modify back_agg in place
