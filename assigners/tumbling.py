"""Tumbling windows: fixed-size, non-overlapping, aligned to the epoch plus an offset."""

from __future__ import annotations

import enum
import random
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from windowing.assigners._validate import offset_within, positive, require_timestamp
from windowing.assigners.base import WindowAssigner, WindowAssignerContext
from windowing.time import MAX_TIMESTAMP, Duration, java_remainder
from windowing.triggers.base import Trigger
from windowing.triggers.event_time import EventTimeTrigger
from windowing.triggers.processing_time import ProcessingTimeTrigger
from windowing.windows import TimeWindow

__all__ = [
    "TumblingEventTimeWindows",
    "TumblingProcessingTimeWindows",
    "WindowStagger",
    "window_start",
]


class WindowStagger(enum.Enum):
    """How a tumbling assigner shifts its windows, once, when it assigns its first element
    (Flink ``WindowStagger``): staggering spreads the firings of many operators (or keys
    handled by different tasks) over the window instead of all at its end.

    * ``ALIGNED``: no shift; every window starts at ``N * size + offset``.
    * ``RANDOM``: a random shift in ``[0, size)``.
    * ``NATURAL``: the processing time at the first element, relative to the window grid
      (``now - window_start(now)``): windows start when the assigner starts working.

    As in Flink, the shift is drawn by each assigner object when it assigns its first window
    (each task's copy, after deserialization) and is not part of checkpointed state: a restarted
    job may draw another.

    Examples
    --------
    >>> WindowStagger.NATURAL.stagger_offset(12_345, 1_000)
    345
    >>> WindowStagger.ALIGNED.stagger_offset(12_345, 1_000)
    0
    """

    ALIGNED = "aligned"
    RANDOM = "random"
    NATURAL = "natural"

    def stagger_offset(self, current_processing_time: int, size: int) -> int:
        """The shift for windows of ``size`` (Flink ``getStaggerOffset``)."""
        if self is WindowStagger.RANDOM:
            return int(random.random() * size)
        if self is WindowStagger.NATURAL:
            start = window_start(current_processing_time, 0, size)
            return max(0, current_processing_time - start)
        return 0


def window_start(timestamp: int, offset: int, size: int) -> int:
    """Start of the aligned window of ``size`` containing ``timestamp``: a floor-mod, so it
    is correct for negative timestamps.

    Examples
    --------
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
    """Size, offset and stagger of tumbling windows, validated."""

    size: int
    offset: int
    stagger: WindowStagger
    # The offset in effect: offset + the stagger's shift, drawn at the first assignment.
    _effective: int | None = field(default=None, compare=False, hash=False)

    def __init__(
        self, size: Duration, offset: Duration = 0, stagger: WindowStagger = WindowStagger.ALIGNED
    ) -> None:
        owner = type(self).__name__
        size_ms = positive(size, "size", owner)
        if not isinstance(stagger, WindowStagger):
            msg = f"{owner}: stagger must be a WindowStagger, got {stagger!r}"
            raise ValueError(msg)
        object.__setattr__(self, "size", size_ms)
        object.__setattr__(self, "offset", offset_within(offset, size_ms, "size", owner))
        object.__setattr__(self, "stagger", stagger)
        aligned = stagger is WindowStagger.ALIGNED
        object.__setattr__(self, "_effective", self.offset if aligned else None)

    def __repr__(self) -> str:
        args = [f"size={self.size}", f"offset={self.offset}"]
        if self.stagger is not WindowStagger.ALIGNED:
            args.append(f"stagger=WindowStagger.{self.stagger.name}")
        return f"{type(self).__name__}({', '.join(args)})"

    def _offset(self, context: WindowAssignerContext) -> int:
        """The offset in effect; the first call draws the stagger (Flink: lazily, in
        ``assignWindows``, from the processing time)."""
        effective = self._effective
        if effective is None:
            shift = self.stagger.stagger_offset(context.get_current_processing_time(), self.size)
            effective = java_remainder(self.offset + shift, self.size)
            object.__setattr__(self, "_effective", effective)
        return effective


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
    stagger
        A :class:`WindowStagger` shift added to ``offset`` at the first element (default
        ``ALIGNED``: none).

    Examples
    --------
    >>> a = TumblingEventTimeWindows("10 ms")
    >>> [tuple(a.assign_windows(None, t, None)[0]) for t in (-1, 0, 9, 10)]
    [(-10, 0), (0, 10), (0, 10), (10, 20)]
    """

    def assign_windows(
        self, element: Any, timestamp: int | None, context: WindowAssignerContext
    ) -> Collection[TimeWindow]:
        ts = require_timestamp(timestamp, "TumblingEventTimeWindows")
        size = self.size
        offset = self._effective if self._effective is not None else self._offset(context)
        start = ts - (ts - offset) % size
        return (_window(start, size),)

    def get_default_trigger(self) -> Trigger[Any, TimeWindow]:
        return EventTimeTrigger()

    def is_event_time(self) -> bool:
        return True


@dataclass(frozen=True, init=False, repr=False)
class TumblingProcessingTimeWindows(_Tumbling):
    """Like :class:`TumblingEventTimeWindows`, on the processing-time clock at arrival.

    Known elsewhere as: Flink ``TumblingProcessingTimeWindows``.

    Examples
    --------
    >>> class Clock:
    ...     def get_current_processing_time(self): return 1_234
    >>> TumblingProcessingTimeWindows("1 second").assign_windows("x", None, Clock())
    (TimeWindow(start=1000, end=2000),)
    """

    def assign_windows(
        self, element: Any, timestamp: int | None, context: WindowAssignerContext
    ) -> Collection[TimeWindow]:
        now = context.get_current_processing_time()
        offset = self._effective if self._effective is not None else self._offset(context)
        return (_window(window_start(now, offset, self.size), self.size),)

    def get_default_trigger(self) -> Trigger[Any, TimeWindow]:
        return ProcessingTimeTrigger()

    def is_event_time(self) -> bool:
        return False
