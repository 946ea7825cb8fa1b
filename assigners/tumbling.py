"""Tumbling windows: fixed-size, non-overlapping, aligned to the epoch plus an offset."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from assigners._validate import offset_within, positive, require_timestamp
from assigners.base import WindowAssigner, WindowAssignerContext
from triggers.base import Trigger
from triggers.event_time import EventTimeTrigger
from triggers.processing_time import ProcessingTimeTrigger
from windowing.time import MAX_TIMESTAMP, Duration
from windowing.windows import TimeWindow

__all__ = ["TumblingEventTimeWindows", "TumblingProcessingTimeWindows", "window_start"]


def window_start(timestamp: int, offset: int, size: int) -> int:
    """Start of the aligned window of ``size`` containing ``timestamp``: a floor-mod, so it
    is correct for negative timestamps.

    >>> window_start(-1, 0, 10), window_start(9, 0, 10), window_start(10, 0, 10)
    (-10, 0, 10)
    """
    return timestamp - (timestamp - offset) % size


def _window(start: int, size: int) -> TimeWindow:
    end = start + size
    # Clamp at the end of time so that max_timestamp() never exceeds MAX_TIMESTAMP.
    return TimeWindow(start, end if end <= MAX_TIMESTAMP else MAX_TIMESTAMP + 1)


@dataclass(frozen=True, init=False, repr=False)
class _Tumbling(WindowAssigner[Any, TimeWindow]):
    """Size and offset of tumbling windows, validated."""

    size: int
    offset: int

    def __init__(self, size: Duration, offset: Duration = 0) -> None:
        owner = type(self).__name__
        size_ms = positive(size, "size", owner)
        object.__setattr__(self, "size", size_ms)
        object.__setattr__(self, "offset", offset_within(offset, size_ms, "size", owner))


@dataclass(frozen=True, init=False, repr=False)
class TumblingEventTimeWindows(_Tumbling):
    """Each element goes to the one window ``[N * size + offset, (N + 1) * size + offset)``
    containing its event timestamp.

    Known elsewhere as: Flink ``TumblingEventTimeWindows``; Beam ``FixedWindows``; Kafka
    ``TimeWindows.ofSizeWithNoGrace`` (advance = size); Spark ``window(col, size)``.

    Parameters
    ----------
    size
        Window length (int ms, ``timedelta`` or e.g. ``"5 seconds"``), > 0.
    offset
        Shift of the window grid, ``abs(offset) < size``; e.g. ``"-8 hours"`` for UTC+8 days.

    >>> a = TumblingEventTimeWindows("10 ms")
    >>> [tuple(a.assign_windows(None, t, None)[0]) for t in (-1, 0, 9, 10)]
    [(-10, 0), (0, 10), (0, 10), (10, 20)]
    """

    def assign_windows(
        self, element: Any, timestamp: int | None, context: WindowAssignerContext
    ) -> Collection[TimeWindow]:
        ts = require_timestamp(timestamp, "TumblingEventTimeWindows")
        size = self.size
        start = ts - (ts - self.offset) % size
        return (_window(start, size),)

    def get_default_trigger(self) -> Trigger[Any, TimeWindow]:
        return EventTimeTrigger()

    def is_event_time(self) -> bool:
        return True


@dataclass(frozen=True, init=False, repr=False)
class TumblingProcessingTimeWindows(_Tumbling):
    """Like :class:`TumblingEventTimeWindows`, on the processing-time clock at arrival.

    Known elsewhere as: Flink ``TumblingProcessingTimeWindows``.

    >>> class Clock:
    ...     def get_current_processing_time(self): return 1_234
    >>> TumblingProcessingTimeWindows("1 second").assign_windows("x", None, Clock())
    (TimeWindow(start=1000, end=2000),)
    """

    def assign_windows(
        self, element: Any, timestamp: int | None, context: WindowAssignerContext
    ) -> Collection[TimeWindow]:
        now = context.get_current_processing_time()
        return (_window(window_start(now, self.offset, self.size), self.size),)

    def get_default_trigger(self) -> Trigger[Any, TimeWindow]:
        return ProcessingTimeTrigger()

    def is_event_time(self) -> bool:
        return False
