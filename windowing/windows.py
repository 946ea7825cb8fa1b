"""Window values: :class:`TimeWindow`, :class:`GlobalWindow`, and :class:`TimestampedValue`.

Windows are immutable, hashable and ordered values used as state namespaces. They are
``NamedTuple`` subclasses rather than dataclasses: the operator hashes and compares windows
for every element, and tuple hashing/equality run in C (see ``docs/design.md``).
"""

from __future__ import annotations

from typing import Any, Generic, NamedTuple, TypeVar

from windowing.time import MAX_TIMESTAMP, iso_text

__all__ = [
    "GLOBAL_WINDOW",
    "GlobalWindow",
    "TimeWindow",
    "TimestampedValue",
    "Window",
    "window_text",
]

T = TypeVar("T")


class TimeWindow(NamedTuple):
    """A window covering the half-open interval ``[start, end)`` in epoch milliseconds.

    Known elsewhere as: Flink ``TimeWindow``; Beam ``IntervalWindow``. Kafka's inclusive
    windows ``[s; e]`` (KIP-450) are represented as ``TimeWindow(s, e + 1)``.

    Examples
    --------
    >>> w = TimeWindow(0, 10)
    >>> w.max_timestamp()
    9
    >>> w.intersects(TimeWindow(10, 20))  # touching windows intersect (Flink)
    True
    >>> w.cover(TimeWindow(5, 30))
    TimeWindow(start=0, end=30)
    """

    start: int
    end: int

    def max_timestamp(self) -> int:
        """Largest timestamp in the window, ``end - 1`` (Flink ``maxTimestamp``)."""
        return self.end - 1

    def intersects(self, other: TimeWindow) -> bool:
        """Whether the windows overlap or touch (``[0, 5)`` and ``[5, 9)`` intersect)."""
        return self.start <= other.end and self.end >= other.start

    def cover(self, other: TimeWindow) -> TimeWindow:
        """The smallest window containing both windows."""
        return TimeWindow(min(self.start, other.start), max(self.end, other.end))

    def contains(self, timestamp: int) -> bool:
        """Whether ``start <= timestamp < end``."""
        return self.start <= timestamp < self.end


class GlobalWindow(NamedTuple):
    """The single window of :class:`~windowing.assigners.GlobalWindows`; ends at ``MAX_TIMESTAMP``.

    All instances are equal; use the module constant :data:`GLOBAL_WINDOW`.

    Examples
    --------
    >>> GlobalWindow() == GLOBAL_WINDOW and GLOBAL_WINDOW.max_timestamp() == 2**63 - 1
    True
    """

    def max_timestamp(self) -> int:
        """``MAX_TIMESTAMP``: the global window never ends."""
        return MAX_TIMESTAMP

    def __repr__(self) -> str:
        return "GlobalWindow()"


#: The global window (every ``GlobalWindow()`` is equal to it).
GLOBAL_WINDOW = GlobalWindow()

#: Anything the operator can use as a window: it must be hashable and have ``max_timestamp()``.
Window = Any


class TimestampedValue(NamedTuple, Generic[T]):
    """An element with its timestamp, as evictors see window contents.

    ``timestamp`` is ``None`` when the element has none (processing-time windows still carry
    the element's event time when it was given one).
    """

    value: T
    timestamp: int | None

    def has_timestamp(self) -> bool:
        """Whether the element carries a timestamp (Flink ``hasTimestamp``)."""
        return self.timestamp is not None


def window_text(window: object) -> str:
    """A window for an error or a note: its value, and for a time window its bounds as ISO
    UTC times.

    Examples
    --------
    >>> window_text(TimeWindow(0, 10_000))
    'TimeWindow(start=0, end=10000) [1970-01-01T00:00:00.000Z, 1970-01-01T00:00:10.000Z)'
    >>> window_text(GLOBAL_WINDOW)
    'GlobalWindow()'
    """
    if isinstance(window, TimeWindow):
        return f"{window!r} [{iso_text(window.start)}, {iso_text(window.end)})"
    return repr(window)
