"""KIP-450 sliding windows: one window per distinct set of records within ``size`` of each other.

Known elsewhere as: Kafka Streams ``SlidingWindows`` (KIP-450). Not Flink's sliding windows
(those are :class:`~windowing.assigners.HoppingEventTimeWindows` here).

Windows are inclusive at both ends, ``[start; end]`` with ``end = start + size``, represented as
``TimeWindow(start, end + 1)`` so that ``max_timestamp() == end``. For a key whose records have
the distinct timestamps ``T``:

* every ``t`` in ``T`` has a *left window* ``[t - size; t]`` (it contains the record);
* every ``t`` in ``T`` has a *right window* ``[t + 1; t + 1 + size]`` when some record falls in
  it, i.e. when the next timestamp after ``t`` is at most ``t + 1 + size``.

A record therefore creates its left window, possibly its own right window (out-of-order records),
possibly the previous record's right window, and is added to every existing window that contains
it. Equal timestamps never create a second window.

Worked example, ``size = 10``, records at 5, 8, 12 and 21 arriving in that order:

====================  =========================  ==============
record (arrival)      windows created            contents
====================  =========================  ==============
a @ 5                 [-5; 5]                    a
b @ 8                 [-2; 8]                    a b
                      [6; 16]  (a's right)       b
c @ 12                [2; 12]                    a b c
                      [9; 19]  (b's right)       c
                      [6; 16]  updated           b c
d @ 21                [11; 21]                   c d
                      [13; 23] (c's right)       d
====================  =========================  ==============

Seven windows for four records, one per distinct set of records; hopping windows of size 10
and advance 1 (the usual emulation) give 26 windows with contents for the same records, holding
the same seven distinct sets many times over.

Unlike Kafka, timestamps may be negative and windows are not clamped at 0 (Kafka clamps because
its timestamps are never negative); the formulas above hold everywhere.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from windowing.assigners._validate import require_timestamp
from windowing.assigners.base import WindowAssigner, WindowAssignerContext
from windowing.time import MAX_TIMESTAMP, Duration, to_millis
from windowing.triggers.base import Trigger
from windowing.triggers.event_time import EventTimeTrigger
from windowing.windows import TimeWindow

__all__ = ["SlidingDistinctAssigner", "left_window", "right_window"]


def left_window(timestamp: int, size: int) -> TimeWindow:
    """``[timestamp - size; timestamp]``: the window a record defines and belongs to."""
    return TimeWindow(timestamp - size, timestamp + 1)


def right_window(timestamp: int, size: int) -> TimeWindow:
    """``[timestamp + 1; timestamp + 1 + size]``: the window starting just after a record."""
    end = timestamp + 2 + size
    return TimeWindow(timestamp + 1, end if end <= MAX_TIMESTAMP else MAX_TIMESTAMP + 1)


@dataclass(frozen=True, init=False, repr=False)
class SlidingDistinctAssigner(WindowAssigner[Any, TimeWindow]):
    """Kafka KIP-450 sliding windows of ``size`` with a ``grace`` period (see module docs).

    Windows depend on the key's records, not on one element alone, so the operator manages
    them (``assign_windows`` only gives a record's left window). ``grace`` is Kafka's name for
    the allowed lateness: a window accepts records until the watermark passes
    ``end + grace``, and the operator uses it as its allowed lateness.

    Parameters
    ----------
    size
        The time difference: records at most ``size`` apart share a window; > 0.
    grace
        How long after a window's end records are still added; >= 0. Required, as in Kafka's
        ``ofTimeDifferenceAndGrace`` / ``ofTimeDifferenceWithNoGrace``.

    Examples
    --------
    >>> a = SlidingDistinctAssigner("10 ms", grace=0)
    >>> a.assign_windows(None, 8, None)
    (TimeWindow(start=-2, end=9),)
    >>> SlidingDistinctAssigner.of_time_difference_and_grace(10, 5).grace
    5
    """

    size: int
    grace: int

    def __init__(self, size: Duration, *, grace: Duration) -> None:
        owner = type(self).__name__
        size_ms = to_millis(size, "size")
        if size_ms < 0:
            msg = f"{owner}: size must be >= 0, got {size!r}"
            raise ValueError(msg)
        object.__setattr__(self, "size", size_ms)
        grace_ms = to_millis(grace, "grace")
        if grace_ms < 0:
            msg = f"{owner}: grace must be >= 0, got {grace!r}"
            raise ValueError(msg)
        object.__setattr__(self, "grace", grace_ms)

    @classmethod
    def of_time_difference_and_grace(
        cls, size: Duration, grace: Duration
    ) -> SlidingDistinctAssigner:
        """Kafka ``SlidingWindows.ofTimeDifferenceAndGrace``."""
        return cls(size, grace=grace)

    @classmethod
    def of_time_difference_with_no_grace(cls, size: Duration) -> SlidingDistinctAssigner:
        """Kafka ``SlidingWindows.ofTimeDifferenceWithNoGrace``."""
        return cls(size, grace=0)

    def lateness(self, allowed_lateness: int, shown: object = None) -> int:
        """The operator's allowed lateness (ms) with this assigner: ``grace``, or
        ``allowed_lateness`` when ``grace`` is 0. ``ValueError`` when both are set and differ
        (``shown``: the value as the user gave it, for the message).

        Examples
        --------
        >>> SlidingDistinctAssigner(10, grace=5).lateness(0)
        5
        >>> SlidingDistinctAssigner(10, grace=0).lateness(7)
        7
        """
        if allowed_lateness and self.grace and allowed_lateness != self.grace:
            given = allowed_lateness if shown is None else shown
            msg = (
                f"allowed_lateness={given!r} differs from the grace {self.grace} ms of "
                f"{self!r}; set one of them"
            )
            raise ValueError(msg)
        return max(allowed_lateness, self.grace)

    def assign_windows(
        self, element: Any, timestamp: int | None, context: WindowAssignerContext
    ) -> Collection[TimeWindow]:
        ts = require_timestamp(timestamp, "SlidingDistinctAssigner")
        return (left_window(ts, self.size),)

    def get_default_trigger(self) -> Trigger[Any, TimeWindow]:
        return EventTimeTrigger()

    def is_event_time(self) -> bool:
        return True
