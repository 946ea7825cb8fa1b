"""The assigner contract: :class:`WindowAssigner` and :class:`MergingWindowAssigner`."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Collection, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

if TYPE_CHECKING:
    from windowing.triggers.base import Trigger

__all__ = ["MergingWindowAssigner", "WindowAssigner", "WindowAssignerContext"]

T = TypeVar("T")
W = TypeVar("W")


class WindowAssignerContext(Protocol):
    """What an assigner may read while assigning windows."""

    def get_current_processing_time(self) -> int:
        """The current processing time in epoch milliseconds."""
        ...


class WindowAssigner(ABC, Generic[T, W]):
    """Assigns each element to zero or more windows.

    Subclass it for a custom assigner; the operator calls :meth:`assign_windows` once per
    element, with the element's timestamp (``None`` when it has none).
    """

    @abstractmethod
    def assign_windows(
        self, element: T, timestamp: int | None, context: WindowAssignerContext
    ) -> Collection[W]:
        """The windows ``element`` belongs to."""

    @abstractmethod
    def get_default_trigger(self) -> Trigger[T, W]:
        """The trigger used when the user sets none."""

    @abstractmethod
    def is_event_time(self) -> bool:
        """Whether windows are based on event time (governs lateness and cleanup)."""

    def __repr__(self) -> str:
        fields = getattr(self, "__dataclass_fields__", None)
        if fields:
            args = ", ".join(f"{name}={getattr(self, name)!r}" for name in fields)
            return f"{type(self).__name__}({args})"
        return f"{type(self).__name__}()"


class MergingWindowAssigner(WindowAssigner[T, W]):
    """An assigner whose windows can merge, like session windows.

    :meth:`merge_windows` is a pure function: given the current windows of a key, it returns
    every group of windows that must be merged, with the window they merge into.
    """

    @abstractmethod
    def merge_windows(self, windows: Iterable[W]) -> Sequence[tuple[Collection[W], W]]:
        """Groups of two or more windows to merge, each with the resulting window."""


def merge_time_windows(windows: Iterable[Any]) -> list[tuple[frozenset[Any], Any]]:
    """Merge overlapping or touching ``TimeWindow``s (Flink ``TimeWindow.mergeWindows``).

    Examples
    --------
    >>> from windowing.windows import TimeWindow as W
    >>> merges = merge_time_windows([W(0, 5), W(5, 8), W(10, 12)])
    >>> [(sorted(group), result) for group, result in merges]
    [([TimeWindow(start=0, end=5), TimeWindow(start=5, end=8)], TimeWindow(start=0, end=8))]
    """
    ordered = sorted(windows)  # by (start, end); ties on start do not change the groups
    merges: list[tuple[frozenset[Any], Any]] = []
    current: Any = None
    group: list[Any] = []
    for w in ordered:
        if current is None:
            current, group = w, [w]
        elif current.start <= w.end and current.end >= w.start:
            current = current.cover(w)
            group.append(w)
        else:
            if len(set(group)) > 1:
                merges.append((frozenset(group), current))
            current, group = w, [w]
    # Flink counts a group's distinct windows (a HashSet): equal windows are no merge
    if current is not None and len(set(group)) > 1:
        merges.append((frozenset(group), current))
    return merges
