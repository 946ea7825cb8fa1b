"""The evictor contract: remove elements from a window before and/or after evaluation."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, Generic, Protocol, TypeVar

from windowing.windows import TimestampedValue

__all__ = ["Evictor", "EvictorContext", "OneSidedEvictor"]

T = TypeVar("T")
W = TypeVar("W")


class EvictorContext(Protocol):
    """What an evictor may read."""

    def get_current_processing_time(self) -> int:
        """The current processing time in epoch milliseconds."""
        ...

    def get_current_watermark(self) -> int:
        """The current event-time watermark."""
        ...


class Evictor(ABC, Generic[T, W]):
    """Removes elements from a window's buffer when it fires.

    When a window fires, the operator calls :meth:`evict_before` with the buffered elements
    (in arrival order, each with its timestamp), evaluates the window function on what it
    returns, then calls :meth:`evict_after` with those elements. What is evicted is gone for
    later firings of the window too. Both methods return the elements to *keep*; they must not
    mutate their argument.

    An evictor disables incremental aggregation: every element of the window is buffered
    until the window is cleaned up, whatever the window function.

    Examples
    --------
    Keep only elements whose value is positive, before evaluation:

    >>> class KeepPositive(Evictor):
    ...     def evict_before(self, elements, window, ctx):
    ...         return [e for e in elements if e.value > 0]
    ...     def evict_after(self, elements, window, ctx):
    ...         return elements
    >>> KeepPositive().evict_before([TimestampedValue(-1, 1), TimestampedValue(2, 2)], None, None)
    [TimestampedValue(value=2, timestamp=2)]
    """

    @abstractmethod
    def evict_before(
        self, elements: Sequence[TimestampedValue[T]], window: W, ctx: EvictorContext
    ) -> Sequence[TimestampedValue[T]]:
        """The elements kept for the window function (and for later firings)."""

    @abstractmethod
    def evict_after(
        self, elements: Sequence[TimestampedValue[T]], window: W, ctx: EvictorContext
    ) -> Sequence[TimestampedValue[T]]:
        """The elements kept after the window function ran (for later firings)."""

    def __repr__(self) -> str:
        fields: Any = getattr(self, "__dataclass_fields__", None)
        if fields:
            args = ", ".join(f"{name}={getattr(self, name)!r}" for name in fields)
            return f"{type(self).__name__}({args})"
        return f"{type(self).__name__}()"


def check_after_flag(value: Any, owner: str) -> None:
    """``do_evict_after`` must be a real bool (a truthy string would silently mean ``True``)."""
    if not isinstance(value, bool):
        msg = f"{owner}: do_evict_after must be a bool, got {value!r}"
        raise ValueError(msg)


class OneSidedEvictor(Evictor[T, W]):
    """An evictor applying one rule, :meth:`evict`, before the window function, or after it
    when ``do_evict_after`` is set (Flink's built-in evictors)."""

    do_evict_after: bool

    def evict_before(
        self, elements: Sequence[TimestampedValue[T]], window: W, ctx: EvictorContext
    ) -> Sequence[TimestampedValue[T]]:
        return elements if self.do_evict_after else self.evict(elements)

    def evict_after(
        self, elements: Sequence[TimestampedValue[T]], window: W, ctx: EvictorContext
    ) -> Sequence[TimestampedValue[T]]:
        return self.evict(elements) if self.do_evict_after else elements

    @abstractmethod
    def evict(self, elements: Sequence[TimestampedValue[T]]) -> Sequence[TimestampedValue[T]]:
        """The elements kept by this evictor's rule."""
