"""Functions of two inputs: the window join's and coGroup's (one window of each key, both
sides) and the interval join's (one pair of rows).

A window join runs as Flink runs it (``CoGroupedStreams``, ``JoinedStreams``): both inputs
become one stream of *tagged* rows (each row says its side and carries the row of that side),
keyed and windowed as any stream, and a :class:`CoGroupWindowFunction` splits each window's
rows by side and calls the :class:`CoGroupFunction` once per window with both lists. A join
is a coGroup that calls the :class:`JoinFunction` once per pair of the two lists (a nested
loop: nothing for a window with an empty side, an inner join).

Examples
--------
>>> rows = [{"side": "left", "left": "a", "right": None},
...         {"side": "right", "left": None, "right": 1},
...         {"side": "right", "left": None, "right": 2}]
>>> apply = CoGroupWindowFunction(JoinCoGroupFunction(lambda a, b: (a, b)))
>>> list(apply.apply("k", None, rows))
[('a', 1), ('a', 2)]
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Generic, Protocol, TypeVar

from windowing.functions.base import WindowFunction

__all__ = [
    "LEFT",
    "RIGHT",
    "SIDE",
    "CoGroupFunction",
    "CoGroupWindowFunction",
    "FlatJoinCoGroupFunction",
    "FlatJoinFunction",
    "JoinCoGroupFunction",
    "JoinFunction",
    "ProcessJoinFunction",
    "ProcessJoinFunctionContext",
    "as_co_group",
    "as_process_join",
    "output_annotation",
]

IN1 = TypeVar("IN1")
IN2 = TypeVar("IN2")
OUT = TypeVar("OUT")

#: The field of a tagged row naming its side (:data:`LEFT` or :data:`RIGHT`), and the
#: fields holding the row of each side (the other is null).
SIDE = "side"
LEFT = "left"
RIGHT = "right"


class JoinFunction(ABC, Generic[IN1, IN2, OUT]):
    """Joins one row of each side into one output (Flink ``JoinFunction``).

    A plain callable ``(left, right) -> row`` can be used wherever a ``JoinFunction`` is
    accepted.

    Examples
    --------
    >>> class Pair(JoinFunction):
    ...     def join(self, first, second):
    ...         return (first, second)
    >>> Pair().join(1, 2)
    (1, 2)
    """

    @abstractmethod
    def join(self, first: IN1, second: IN2) -> OUT:
        """The output of the pair (``first`` from the left input, ``second`` from the right)."""


class FlatJoinFunction(ABC, Generic[IN1, IN2, OUT]):
    """Joins one row of each side into any number of outputs (Flink ``FlatJoinFunction``):
    ``join`` returns (or yields) them.

    Examples
    --------
    >>> class Both(FlatJoinFunction):
    ...     def join(self, first, second):
    ...         yield first
    ...         yield second
    >>> list(Both().join(1, 2))
    [1, 2]
    """

    @abstractmethod
    def join(self, first: IN1, second: IN2) -> Iterable[OUT]:
        """The outputs of the pair (an iterable; a generator is fine)."""


class CoGroupFunction(ABC, Generic[IN1, IN2, OUT]):
    """Evaluates one window of one key with the rows of both sides (Flink
    ``CoGroupFunction``): ``co_group`` returns (or yields) any number of outputs. It is called
    for every window that fires, also when one side has no rows there (that side's list is
    empty): outer joins are written with it.

    A plain callable ``(left_rows, right_rows) -> iterable`` can be used wherever a
    ``CoGroupFunction`` is accepted.

    Examples
    --------
    >>> class Counts(CoGroupFunction):
    ...     def co_group(self, first, second):
    ...         yield (len(first), len(second))
    >>> list(Counts().co_group([1, 2], []))
    [(2, 0)]
    """

    @abstractmethod
    def co_group(self, first: list[IN1], second: list[IN2]) -> Iterable[OUT]:
        """The outputs of one window: ``first`` holds its left rows, ``second`` its right
        rows, each in the order the window received them."""


class ProcessJoinFunctionContext(Protocol):
    """What :meth:`ProcessJoinFunction.process_element` can see: the event times (epoch ms)
    of the pair's rows and of the output."""

    def left_timestamp(self) -> int:
        """The left row's event time."""
        ...

    def right_timestamp(self) -> int:
        """The right row's event time."""
        ...

    def timestamp(self) -> int:
        """The outputs' event time: the larger of the two."""
        ...


class ProcessJoinFunction(ABC, Generic[IN1, IN2, OUT]):
    """Called once per pair of an interval join (Flink ``ProcessJoinFunction``), with a
    context giving the two rows' event times and the result's (the larger one);
    ``process_element`` returns (or yields) any number of outputs.

    A plain callable ``(left, right) -> row`` (one output per pair, no context) can be used
    wherever a ``ProcessJoinFunction`` is accepted.

    Examples
    --------
    >>> class Gap(ProcessJoinFunction):
    ...     def process_element(self, left, right, context):
    ...         yield (left, right, context.right_timestamp() - context.left_timestamp())
    """

    @abstractmethod
    def process_element(
        self, left: IN1, right: IN2, context: ProcessJoinFunctionContext
    ) -> Iterable[OUT]:
        """The outputs of the pair ``(left, right)``."""


# ---------------------------------------------------------------------------- adapters
class JoinCoGroupFunction(CoGroupFunction[Any, Any, Any]):
    """A join as a coGroup (Flink ``JoinedStreams.JoinCoGroupFunction``): one call of
    ``join`` per pair of the window's left and right rows, left rows in the outer loop."""

    def __init__(self, join: Callable[[Any, Any], Any]) -> None:
        self.join = join

    def co_group(self, first: list[Any], second: list[Any]) -> Iterator[Any]:
        join = self.join
        for a in first:
            for b in second:
                yield join(a, b)


class FlatJoinCoGroupFunction(CoGroupFunction[Any, Any, Any]):
    """A flat join as a coGroup (Flink ``JoinedStreams.FlatJoinCoGroupFunction``): every
    output of ``join`` for every pair, left rows in the outer loop."""

    def __init__(self, join: Callable[[Any, Any], Iterable[Any]]) -> None:
        self.join = join

    def co_group(self, first: list[Any], second: list[Any]) -> Iterator[Any]:
        join = self.join
        for a in first:
            for b in second:
                yield from join(a, b)


class _CallableCoGroup(CoGroupFunction[Any, Any, Any]):
    """A plain callable ``(left_rows, right_rows) -> iterable`` as a coGroup function."""

    def __init__(self, function: Callable[[list[Any], list[Any]], Iterable[Any]]) -> None:
        self.function = function

    def co_group(self, first: list[Any], second: list[Any]) -> Iterable[Any]:
        return self.function(first, second)


class CoGroupWindowFunction(WindowFunction[Any, Any, Any, Any]):
    """The window function of a coGroup (Flink ``CoGroupedStreams.CoGroupWindowFunction``):
    splits the window's tagged rows (fields :data:`SIDE`, :data:`LEFT`, :data:`RIGHT`) by
    side, keeping their order, and calls the coGroup function once with both lists."""

    def __init__(self, function: CoGroupFunction[Any, Any, Any]) -> None:
        self.function = function

    def apply(self, key: Any, window: Any, elements: Iterable[Any]) -> Iterable[Any]:
        first: list[Any] = []
        second: list[Any] = []
        for element in elements:
            if element[SIDE] == LEFT:
                first.append(element[LEFT])
            else:
                second.append(element[RIGHT])
        return self.function.co_group(first, second)


def _is_function(value: Any) -> bool:
    return callable(value) and not isinstance(value, type)


def as_co_group(function: Any, kind: str) -> CoGroupFunction[Any, Any, Any]:
    """The coGroup function of a window join's ``apply`` (``kind="join"``: a
    :class:`JoinFunction`, :class:`FlatJoinFunction` or callable ``(left, right) -> row``) or
    of a coGroup's (``kind="co_group"``: a :class:`CoGroupFunction` or callable
    ``(left_rows, right_rows) -> iterable``); ``ValueError`` naming the value otherwise."""
    if kind == "join":
        if isinstance(function, FlatJoinFunction):
            return FlatJoinCoGroupFunction(function.join)
        if isinstance(function, JoinFunction):
            return JoinCoGroupFunction(function.join)
        if _is_function(function) and not isinstance(function, CoGroupFunction):
            return JoinCoGroupFunction(function)
        msg = (
            "join(...).apply: function must be a JoinFunction, a FlatJoinFunction or a "
            f"callable (left, right) -> row, got {type(function).__name__} {function!r}"
        )
        raise ValueError(msg)
    if isinstance(function, CoGroupFunction):
        return function
    if _is_function(function) and not isinstance(function, JoinFunction | FlatJoinFunction):
        return _CallableCoGroup(function)
    msg = (
        "co_group(...).apply: function must be a CoGroupFunction or a callable "
        f"(left_rows, right_rows) -> iterable of rows, got {type(function).__name__} {function!r}"
    )
    raise ValueError(msg)


class _CallableProcessJoin(ProcessJoinFunction[Any, Any, Any]):
    """A plain callable ``(left, right) -> row`` as a process join function."""

    def __init__(self, function: Callable[[Any, Any], Any]) -> None:
        self.function = function

    def process_element(
        self, left: Any, right: Any, context: ProcessJoinFunctionContext
    ) -> Iterable[Any]:
        return (self.function(left, right),)


def as_process_join(function: Any) -> ProcessJoinFunction[Any, Any, Any]:
    """The process join function of an interval join's ``process``: a
    :class:`ProcessJoinFunction`, or a callable ``(left, right) -> row``; ``ValueError``
    naming the value otherwise."""
    if isinstance(function, ProcessJoinFunction):
        return function
    if _is_function(function) and not isinstance(
        function, JoinFunction | FlatJoinFunction | CoGroupFunction
    ):
        return _CallableProcessJoin(function)
    msg = (
        "interval_join(...).process: function must be a ProcessJoinFunction or a callable "
        f"(left, right) -> row, got {type(function).__name__} {function!r}"
    )
    raise ValueError(msg)


def output_annotation(function: Any, *, many: bool = False) -> tuple[Any, bool]:
    """The method whose return annotation describes a two-input function's outputs, and
    whether it returns many (an iterable); ``many``: whether a plain callable does (a
    coGroup's)."""
    methods: Mapping[type, tuple[str, bool]] = {
        JoinFunction: ("join", False),
        FlatJoinFunction: ("join", True),
        CoGroupFunction: ("co_group", True),
        ProcessJoinFunction: ("process_element", True),
    }
    for cls, (name, returns_many) in methods.items():
        if isinstance(function, cls):
            return getattr(type(function), name), returns_many
    return function, many
