"""How a window is evaluated: the five function kinds and their incremental + process
combinations, as small immutable specs the operator (and the Spark builder) understand.

Examples
--------
>>> Reduce(lambda a, b: a + b).kind
'reduce'
>>> as_spec(lambda a, b: a + b).kind
'reduce'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from windowing.functions.base import (
    AggregateFunction,
    FoldFunction,
    ProcessWindowFunction,
    ReduceFunction,
    WindowFunction,
)
from windowing.functions.vectorized import VectorizedAdapter, VectorizedAggregateFunction
from windowing.functions.vectorized_process import (
    VectorizedProcessAdapter,
    VectorizedProcessWindowFunction,
)

__all__ = [
    "Aggregate",
    "Apply",
    "Fold",
    "Process",
    "Reduce",
    "WindowFunctionSpec",
    "as_spec",
    "result_source",
    "with_input_schema",
]


def _check_window_function(window_function: Any, owner: str) -> None:
    if window_function is not None and not isinstance(
        window_function, ProcessWindowFunction | WindowFunction
    ):
        msg = (
            f"{owner}: window_function must be a ProcessWindowFunction or WindowFunction, "
            f"got {type(window_function).__name__} {window_function!r}"
        )
        raise ValueError(msg)


@dataclass(frozen=True)
class Reduce:
    """Incremental reduce; the optional ``window_function`` gets the single reduced value."""

    function: Any
    window_function: Any = None
    kind = "reduce"

    def __post_init__(self) -> None:
        fn = self.function
        if isinstance(fn, type) or not (isinstance(fn, ReduceFunction) or callable(fn)):
            msg = (
                "reduce: function must be a ReduceFunction or a callable (a, b) -> c, "
                f"got {type(fn).__name__} {fn!r}"
            )
            raise ValueError(msg)
        if isinstance(fn, AggregateFunction | ProcessWindowFunction | WindowFunction):
            msg = f"reduce: function must be a ReduceFunction or callable, got {fn!r}"
            raise ValueError(msg)
        _check_window_function(self.window_function, "reduce")

    def reducer(self) -> Any:
        return self.function.reduce if isinstance(self.function, ReduceFunction) else self.function

    @property
    def order_insensitive(self) -> bool:
        """Whether the function declares its result independent of the elements' order
        (:attr:`ReduceFunction.order_insensitive`; a plain callable cannot)."""
        return isinstance(self.function, ReduceFunction) and self.function.order_insensitive


@dataclass(frozen=True)
class Aggregate:
    """Incremental aggregation; ``window_function`` gets the single aggregate result.

    A :class:`~windowing.functions.vectorized.VectorizedAggregateFunction` is held as its
    :class:`~windowing.functions.vectorized.VectorizedAdapter` (``function``; the user's
    function is :attr:`user_function`)."""

    function: AggregateFunction[Any, Any, Any]
    window_function: Any = None
    kind = "aggregate"

    def __post_init__(self) -> None:
        if isinstance(self.function, VectorizedAggregateFunction):
            object.__setattr__(self, "function", VectorizedAdapter(self.function))
        if not isinstance(self.function, AggregateFunction):
            msg = (
                "aggregate: function must be an AggregateFunction or a "
                "VectorizedAggregateFunction, "
                f"got {type(self.function).__name__} {self.function!r}"
            )
            raise ValueError(msg)
        _check_window_function(self.window_function, "aggregate")

    @property
    def user_function(
        self,
    ) -> AggregateFunction[Any, Any, Any] | VectorizedAggregateFunction[Any, Any]:
        """The function the user gave (an ``AggregateFunction`` or a
        ``VectorizedAggregateFunction``)."""
        fn = self.function
        return fn.function if isinstance(fn, VectorizedAdapter) else fn

    @property
    def vectorized(self) -> VectorizedAggregateFunction[Any, Any] | None:
        """The user's ``VectorizedAggregateFunction``, if it is one."""
        fn = self.function
        return fn.function if isinstance(fn, VectorizedAdapter) else None

    @property
    def order_insensitive(self) -> bool:
        """Whether the function declares its result independent of the elements' order
        (:attr:`AggregateFunction.order_insensitive`)."""
        return self.user_function.order_insensitive


@dataclass(frozen=True)
class Fold:
    """Incremental fold from ``initial_value`` (copied per window); not for merging windows."""

    initial_value: Any
    function: Any
    window_function: Any = None
    kind = "fold"

    def __post_init__(self) -> None:
        fn = self.function
        if isinstance(fn, type) or not (isinstance(fn, FoldFunction) or callable(fn)):
            msg = (
                "fold: function must be a FoldFunction or a callable (acc, value) -> acc, "
                f"got {type(fn).__name__} {fn!r}"
            )
            raise ValueError(msg)
        _check_window_function(self.window_function, "fold")

    def folder(self) -> Any:
        return self.function.fold if isinstance(self.function, FoldFunction) else self.function


@dataclass(frozen=True)
class Process:
    """A :class:`ProcessWindowFunction` over all buffered elements of the window.

    A :class:`~windowing.functions.vectorized_process.VectorizedProcessWindowFunction` is held
    as its :class:`~windowing.functions.vectorized_process.VectorizedProcessAdapter`
    (``function``; the user's function is :attr:`vectorized`)."""

    function: ProcessWindowFunction[Any, Any, Any, Any]
    kind = "process"

    def __post_init__(self) -> None:
        if isinstance(self.function, VectorizedProcessWindowFunction):
            object.__setattr__(self, "function", VectorizedProcessAdapter(self.function))
        if not isinstance(self.function, ProcessWindowFunction):
            msg = (
                "process: function must be a ProcessWindowFunction or a "
                "VectorizedProcessWindowFunction, "
                f"got {type(self.function).__name__} {self.function!r}"
            )
            raise ValueError(msg)

    @property
    def vectorized(self) -> VectorizedProcessWindowFunction | None:
        """The user's ``VectorizedProcessWindowFunction``, if it is one."""
        fn = self.function
        return fn.function if isinstance(fn, VectorizedProcessAdapter) else None


@dataclass(frozen=True)
class Apply:
    """A legacy :class:`WindowFunction` over all buffered elements of the window."""

    function: WindowFunction[Any, Any, Any, Any]
    kind = "apply"

    def __post_init__(self) -> None:
        if not isinstance(self.function, WindowFunction):
            msg = (
                "apply: function must be a WindowFunction, "
                f"got {type(self.function).__name__} {self.function!r}"
            )
            raise ValueError(msg)


WindowFunctionSpec = Reduce | Aggregate | Fold | Process | Apply


def as_spec(function: Any, window_function: Any = None) -> WindowFunctionSpec:
    """Read a function of any supported kind as a spec.

    A ``ReduceFunction`` or plain callable is a reduce; an ``AggregateFunction`` or
    ``VectorizedAggregateFunction`` an aggregate; a ``ProcessWindowFunction`` or
    ``VectorizedProcessWindowFunction`` a process; a ``WindowFunction`` an apply. Specs pass
    through.
    """
    if isinstance(function, Reduce | Aggregate | Fold | Process | Apply):
        if window_function is not None:
            msg = "window_function cannot be given together with a function spec"
            raise ValueError(msg)
        return function
    if isinstance(function, VectorizedAggregateFunction):
        return Aggregate(VectorizedAdapter(function), window_function)
    if isinstance(function, AggregateFunction):
        return Aggregate(function, window_function)
    if isinstance(function, VectorizedProcessWindowFunction):
        if window_function is not None:
            msg = f"function: {function!r} is not incremental; window_function is not allowed"
            raise ValueError(msg)
        return Process(function)  # type: ignore[arg-type]
    if isinstance(function, ProcessWindowFunction | WindowFunction):
        if window_function is not None:
            msg = f"function: {function!r} is not incremental; window_function is not allowed"
            raise ValueError(msg)
        return Process(function) if isinstance(function, ProcessWindowFunction) else Apply(function)
    if isinstance(function, FoldFunction):
        msg = "function: a FoldFunction needs an initial value; pass Fold(initial, function)"
        raise ValueError(msg)
    if isinstance(function, ReduceFunction) or (
        callable(function) and not isinstance(function, type)
    ):
        return Reduce(function, window_function)
    msg = (
        "function must be a ReduceFunction or callable, AggregateFunction, "
        "VectorizedAggregateFunction, ProcessWindowFunction, VectorizedProcessWindowFunction, "
        "WindowFunction or a spec, "
        f"got {type(function).__name__} {function!r}"
    )
    raise ValueError(msg)


def result_source(spec: WindowFunctionSpec) -> str | None:
    """The call that gives a window's incremental result, named for a message (a ``None``
    from it makes the window empty); ``None`` for a process or apply function.

    Examples
    --------
    >>> result_source(Reduce(max))
    'reduce function max'
    """
    fn = spec.function
    if isinstance(spec, Aggregate):
        if spec.vectorized is not None:
            return f"VectorizedAggregateFunction {type(spec.vectorized).__qualname__}.get_result"
        return f"AggregateFunction {type(fn).__qualname__}.get_result"
    if isinstance(spec, Reduce):
        if isinstance(fn, ReduceFunction):
            return f"ReduceFunction {type(fn).__qualname__}.reduce"
        return f"reduce function {getattr(fn, '__qualname__', repr(fn))}"
    if isinstance(spec, Fold):
        if isinstance(fn, FoldFunction):
            return f"FoldFunction {type(fn).__qualname__}.fold"
        return f"fold function {getattr(fn, '__qualname__', repr(fn))}"
    return None


def with_input_schema(spec: WindowFunctionSpec, schema: Any) -> WindowFunctionSpec:
    """``spec`` with the input columns' Arrow schema ``schema`` given to a vectorized
    (aggregate or window) function's adapter (which then builds batches of these types rather
    than infer them); any other spec as it is."""
    if isinstance(spec, Aggregate) and isinstance(spec.function, VectorizedAdapter):
        return Aggregate(spec.function.with_input_schema(schema), spec.window_function)
    if isinstance(spec, Process) and isinstance(spec.function, VectorizedProcessAdapter):
        return Process(spec.function.with_input_schema(schema))
    return spec
