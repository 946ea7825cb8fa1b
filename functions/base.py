"""Window functions: what is computed over a window's contents when it fires."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from typing import Any, ClassVar, Generic, Protocol, TypeVar

from windowing.state import KeyedStateStore

__all__ = [
    "AggregateFunction",
    "FoldFunction",
    "ProcessWindowFunction",
    "ProcessWindowFunctionContext",
    "ReduceFunction",
    "WindowFunction",
]

T = TypeVar("T")
IN = TypeVar("IN")
ACC = TypeVar("ACC")
OUT = TypeVar("OUT")
K = TypeVar("K")
W = TypeVar("W")


class ReduceFunction(ABC, Generic[T]):
    """Combines two elements of the same type into one; applied incrementally.

    A plain callable ``(a, b) -> c`` can be used wherever a ``ReduceFunction`` is accepted.

    Known elsewhere as: Flink ``ReduceFunction``.

    Set the class attribute ``order_insensitive = True`` when the result never depends on the
    order in which elements are combined (associative and commutative, exact: e.g. an integer
    sum, a set union, a min of numbers; not a float sum, whose rounding depends on the order,
    nor "the first element"): hopping and sliding-distinct windows may then be computed from
    shared partial results (panes, the record timeline) instead of one per window, with the
    same results (``docs/semantics.md``).

    Examples
    --------
    >>> class Sum(ReduceFunction):
    ...     order_insensitive = True  # integers
    ...     def reduce(self, a, b):
    ...         return a + b
    >>> Sum().reduce(2, 3)
    5
    """

    #: The result does not depend on the order of the elements (see the class docstring).
    order_insensitive: ClassVar[bool] = False

    @abstractmethod
    def reduce(self, value1: T, value2: T) -> T:
        """Combine two values; must be associative for merging windows, and must not modify
        its arguments (an element can be the first value of several windows)."""


class AggregateFunction(ABC, Generic[IN, ACC, OUT]):
    """Incremental aggregation through an accumulator: ``IN -> ACC -> OUT``.

    Set the class attribute ``order_insensitive = True`` when ``get_result`` never depends on
    the order in which elements are added and accumulators merged (as Beam requires of a
    ``CombineFn``; see :class:`ReduceFunction`): hopping and sliding-distinct windows may then
    share partial results.

    Known elsewhere as: Flink ``AggregateFunction``; Beam ``CombineFn``.

    Examples
    --------
    >>> class Average(AggregateFunction):
    ...     def create_accumulator(self):
    ...         return (0, 0)
    ...     def add(self, value, acc):
    ...         return (acc[0] + value, acc[1] + 1)
    ...     def get_result(self, acc):
    ...         return acc[0] / acc[1]
    ...     def merge(self, a, b):
    ...         return (a[0] + b[0], a[1] + b[1])
    >>> avg = Average()
    >>> avg.get_result(avg.add(4, avg.add(2, avg.create_accumulator())))
    3.0
    """

    #: The result does not depend on the order of the elements (see the class docstring).
    order_insensitive: ClassVar[bool] = False

    @abstractmethod
    def create_accumulator(self) -> ACC:
        """A new, empty accumulator."""

    @abstractmethod
    def add(self, value: IN, accumulator: ACC) -> ACC:
        """Add ``value`` to ``accumulator``; return the (possibly same) accumulator."""

    @abstractmethod
    def get_result(self, accumulator: ACC) -> OUT:
        """The result for ``accumulator``."""

    @abstractmethod
    def merge(self, a: ACC, b: ACC) -> ACC:
        """Merge two accumulators (merging windows, range aggregates); may modify and return
        ``a``, must not modify ``b``."""


class FoldFunction(ABC, Generic[IN, ACC]):
    """Folds elements into an accumulator that starts at an initial value (not mergeable).

    Known elsewhere as: Flink ``FoldFunction`` (deprecated there in favour of
    ``AggregateFunction``).
    """

    @abstractmethod
    def fold(self, accumulator: ACC, value: IN) -> ACC:
        """Fold ``value`` into ``accumulator``."""


class ProcessWindowFunctionContext(Protocol):
    """What :meth:`ProcessWindowFunction.process` and ``clear`` can see and do."""

    def window(self) -> Any:
        """The window being evaluated."""
        ...

    def current_processing_time(self) -> int:
        """The current processing time."""
        ...

    def current_watermark(self) -> int:
        """The current event-time watermark."""
        ...

    def window_state(self) -> KeyedStateStore:
        """State scoped to the key and this window; clear it in ``clear``."""
        ...

    def global_state(self) -> KeyedStateStore:
        """State scoped to the key, shared by all its windows."""
        ...

    def output(self, tag: Any, value: Any) -> None:
        """Emit ``value`` to the side output named by ``tag`` (an ``OutputTag``)."""
        ...


class ProcessWindowFunction(ABC, Generic[IN, OUT, K, W]):
    """Evaluates a window with all its elements (or the incremental result) and a context.

    ``process`` returns (or yields) the outputs. ``clear`` is called when the window is
    removed, to delete what ``process`` kept in ``context.window_state()``.

    Known elsewhere as: Flink ``ProcessWindowFunction``.

    Examples
    --------
    >>> class CountWithWindow(ProcessWindowFunction):
    ...     def process(self, key, context, elements):
    ...         yield (key, context.window().start, sum(1 for _ in elements))
    """

    @abstractmethod
    def process(
        self, key: K, context: ProcessWindowFunctionContext, elements: Iterable[IN]
    ) -> Iterable[OUT]:
        """The outputs of the window (an iterable; a generator is fine)."""

    def clear(self, context: ProcessWindowFunctionContext) -> None:
        """Called when the window is removed; delete per-window state here."""


class WindowFunction(ABC, Generic[IN, OUT, K, W]):
    """The legacy window function: ``apply(key, window, elements)`` returns the outputs.

    Known elsewhere as: Flink ``WindowFunction``. Prefer :class:`ProcessWindowFunction`.
    """

    @abstractmethod
    def apply(self, key: K, window: W, elements: Iterable[IN]) -> Iterable[OUT]:
        """The outputs of the window."""


ReduceLike = ReduceFunction[Any] | Callable[[Any, Any], Any]
