"""Hopping windows: fixed-size windows starting every ``slide`` (Flink's sliding windows)."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from windowing.assigners._validate import offset_within, positive, require_timestamp
from windowing.assigners.base import WindowAssigner, WindowAssignerContext
from windowing.assigners.tumbling import _window, window_start
from windowing.time import Duration
from windowing.triggers.base import Trigger
from windowing.triggers.event_time import EventTimeTrigger
from windowing.triggers.processing_time import ProcessingTimeTrigger
from windowing.windows import TimeWindow

__all__ = [
    "HoppingEventTimeWindows",
    "HoppingProcessingTimeWindows",
    "SlidingEventTimeWindows",
    "SlidingProcessingTimeWindows",
]


#: The most windows an element may belong to; Flink 2.3's ``SlidingEventTimeWindows`` rejects
#: a larger ``size / slide`` (each element would be copied into that many windows).
MAX_WINDOWS_PER_ELEMENT = 10_000_000


def _hopping(ts: int, size: int, slide: int, offset: int) -> list[TimeWindow]:
    last_start = window_start(ts, offset, slide)
    return [_window(start, size) for start in range(last_start, ts - size, -slide)]


@dataclass(frozen=True, init=False, repr=False)
class _Hopping(WindowAssigner[Any, TimeWindow]):
    """Size, slide and offset of hopping windows, validated."""

    size: int
    slide: int
    offset: int
    _bounded_ratio = False

    def __init__(self, size: Duration, slide: Duration, offset: Duration = 0) -> None:
        owner = type(self).__name__
        size_ms = positive(size, "size", owner)
        slide_ms = positive(slide, "slide", owner)
        if self._bounded_ratio and size_ms // slide_ms > MAX_WINDOWS_PER_ELEMENT:
            msg = (
                f"{owner}: size / slide must be <= {MAX_WINDOWS_PER_ELEMENT:,} (as in Flink), got "
                f"size={size!r}, slide={slide!r}"
            )
            raise ValueError(msg)
        object.__setattr__(self, "size", size_ms)
        object.__setattr__(self, "slide", slide_ms)
        object.__setattr__(self, "offset", offset_within(offset, slide_ms, "slide", owner))


@dataclass(frozen=True, init=False, repr=False)
class HoppingEventTimeWindows(_Hopping):
    """Each element goes to every window ``[N * slide + offset, N * slide + offset + size)``
    containing its event timestamp: ``ceil(size / slide)`` windows when ``slide < size``,
    and none for elements in the gaps when ``slide > size``.

    Known elsewhere as: Flink ``SlidingEventTimeWindows`` (also exported here under that
    name); Beam ``SlidingWindows(size, period)``; Kafka hopping ``TimeWindows.advanceBy``.
    Not Kafka's ``SlidingWindows`` (KIP-450): that is
    :class:`~windowing.assigners.SlidingDistinctAssigner`.

    Parameters
    ----------
    size
        Window length, > 0.
    slide
        Distance between window starts, > 0.
    offset
        Shift of the grid, ``abs(offset) < slide``.

    Examples
    --------
    >>> HoppingEventTimeWindows(size=10, slide=5).assign_windows(None, 7, None)
    [TimeWindow(start=5, end=15), TimeWindow(start=0, end=10)]
    """

    _bounded_ratio = True  # Flink checks size / slide for event time only

    def assign_windows(
        self, element: Any, timestamp: int | None, context: WindowAssignerContext
    ) -> Collection[TimeWindow]:
        ts = require_timestamp(timestamp, type(self).__name__)
        return _hopping(ts, self.size, self.slide, self.offset)

    def get_default_trigger(self) -> Trigger[Any, TimeWindow]:
        return EventTimeTrigger()

    def is_event_time(self) -> bool:
        return True


@dataclass(frozen=True, init=False, repr=False)
class HoppingProcessingTimeWindows(_Hopping):
    """Like :class:`HoppingEventTimeWindows`, on the processing-time clock at arrival.

    Known elsewhere as: Flink ``SlidingProcessingTimeWindows``.
    """

    def assign_windows(
        self, element: Any, timestamp: int | None, context: WindowAssignerContext
    ) -> Collection[TimeWindow]:
        now = context.get_current_processing_time()
        return _hopping(now, self.size, self.slide, self.offset)

    def get_default_trigger(self) -> Trigger[Any, TimeWindow]:
        return ProcessingTimeTrigger()

    def is_event_time(self) -> bool:
        return False


#: Flink's name for :class:`HoppingEventTimeWindows`.
SlidingEventTimeWindows = HoppingEventTimeWindows
#: Flink's name for :class:`HoppingProcessingTimeWindows`.
SlidingProcessingTimeWindows = HoppingProcessingTimeWindows
