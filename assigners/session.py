"""Session windows: windows of activity separated by a gap of inactivity (merging)."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from windowing.assigners._validate import positive, require_timestamp
from windowing.assigners.base import (
    MergingWindowAssigner,
    WindowAssignerContext,
    merge_time_windows,
)
from windowing.assigners.tumbling import _window
from windowing.time import Duration, to_millis
from windowing.triggers.base import Trigger
from windowing.triggers.event_time import EventTimeTrigger
from windowing.triggers.processing_time import ProcessingTimeTrigger
from windowing.windows import TimeWindow

__all__ = [
    "DynamicEventTimeSessionWindows",
    "DynamicProcessingTimeSessionWindows",
    "EventTimeSessionWindows",
    "ProcessingTimeSessionWindows",
]

GapExtractor = Callable[[Any], Duration]


def _dynamic_gap(extractor: GapExtractor, element: Any) -> int:
    raw = extractor(element)
    gap = to_millis(raw, "session gap")
    if gap <= 0:
        msg = f"Dynamic session gap must be > 0, got {raw!r} for element {element!r}"
        raise ValueError(msg)
    return gap


class _Sessions(MergingWindowAssigner[Any, TimeWindow]):
    def merge_windows(
        self, windows: Iterable[TimeWindow]
    ) -> Sequence[tuple[Collection[TimeWindow], TimeWindow]]:
        return merge_time_windows(windows)


@dataclass(frozen=True, init=False, repr=False)
class _StaticGap(_Sessions):
    """A validated static session gap."""

    gap: int

    def __init__(self, gap: Duration) -> None:
        object.__setattr__(self, "gap", positive(gap, "gap", type(self).__name__))


@dataclass(frozen=True, repr=False)
class _DynamicGap(_Sessions):
    """A validated per-element gap extractor."""

    gap_extractor: GapExtractor

    def __post_init__(self) -> None:
        if not callable(self.gap_extractor):
            msg = f"gap_extractor must be callable, got {self.gap_extractor!r}"
            raise ValueError(msg)


@dataclass(frozen=True, init=False, repr=False)
class EventTimeSessionWindows(_StaticGap):
    """Each element starts the window ``[ts, ts + gap)``; windows of a key that overlap or
    touch merge into one session.

    Known elsewhere as: Flink ``EventTimeSessionWindows.withGap``; Beam ``Sessions(gap)``;
    Kafka ``SessionWindows``; Spark ``session_window(col, gap)``.

    Examples
    --------
    >>> a = EventTimeSessionWindows(gap=5)
    >>> a.assign_windows(None, 3, None)
    (TimeWindow(start=3, end=8),)
    >>> a.merge_windows([TimeWindow(3, 8), TimeWindow(8, 13), TimeWindow(20, 25)])[0][1]
    TimeWindow(start=3, end=13)
    """

    @staticmethod
    def with_dynamic_gap(extractor: GapExtractor) -> DynamicEventTimeSessionWindows:
        """Sessions whose gap is computed per element (Flink ``withDynamicGap``)."""
        return DynamicEventTimeSessionWindows(extractor)

    def assign_windows(
        self, element: Any, timestamp: int | None, context: WindowAssignerContext
    ) -> Collection[TimeWindow]:
        ts = require_timestamp(timestamp, "EventTimeSessionWindows")
        return (_window(ts, self.gap),)

    def get_default_trigger(self) -> Trigger[Any, TimeWindow]:
        return EventTimeTrigger()

    def is_event_time(self) -> bool:
        return True


@dataclass(frozen=True, init=False, repr=False)
class ProcessingTimeSessionWindows(_StaticGap):
    """Like :class:`EventTimeSessionWindows`, on the processing-time clock at arrival.

    Known elsewhere as: Flink ``ProcessingTimeSessionWindows.withGap``.
    """

    @staticmethod
    def with_dynamic_gap(extractor: GapExtractor) -> DynamicProcessingTimeSessionWindows:
        """Sessions whose gap is computed per element (Flink ``withDynamicGap``)."""
        return DynamicProcessingTimeSessionWindows(extractor)

    def assign_windows(
        self, element: Any, timestamp: int | None, context: WindowAssignerContext
    ) -> Collection[TimeWindow]:
        return (_window(context.get_current_processing_time(), self.gap),)

    def get_default_trigger(self) -> Trigger[Any, TimeWindow]:
        return ProcessingTimeTrigger()

    def is_event_time(self) -> bool:
        return False


@dataclass(frozen=True, repr=False)
class DynamicEventTimeSessionWindows(_DynamicGap):
    """Event-time sessions whose gap ``gap_extractor(element)`` is chosen per element (> 0).

    Known elsewhere as: Flink ``EventTimeSessionWindows.withDynamicGap``.

    Examples
    --------
    >>> a = DynamicEventTimeSessionWindows(lambda e: e["gap"])
    >>> a.assign_windows({"gap": 7}, 10, None)
    (TimeWindow(start=10, end=17),)
    """

    def assign_windows(
        self, element: Any, timestamp: int | None, context: WindowAssignerContext
    ) -> Collection[TimeWindow]:
        ts = require_timestamp(timestamp, "DynamicEventTimeSessionWindows")
        return (_window(ts, _dynamic_gap(self.gap_extractor, element)),)

    def get_default_trigger(self) -> Trigger[Any, TimeWindow]:
        return EventTimeTrigger()

    def is_event_time(self) -> bool:
        return True


@dataclass(frozen=True, repr=False)
class DynamicProcessingTimeSessionWindows(_DynamicGap):
    """Processing-time sessions with a per-element gap.

    Known elsewhere as: Flink ``ProcessingTimeSessionWindows.withDynamicGap``.
    """

    def assign_windows(
        self, element: Any, timestamp: int | None, context: WindowAssignerContext
    ) -> Collection[TimeWindow]:
        now = context.get_current_processing_time()
        return (_window(now, _dynamic_gap(self.gap_extractor, element)),)

    def get_default_trigger(self) -> Trigger[Any, TimeWindow]:
        return ProcessingTimeTrigger()

    def is_event_time(self) -> bool:
        return False
