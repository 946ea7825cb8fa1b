"""Window functions: reduce, aggregate, fold, process and apply."""

from functions.base import (
    AggregateFunction,
    FoldFunction,
    ProcessWindowFunction,
    ProcessWindowFunctionContext,
    ReduceFunction,
    WindowFunction,
)
from functions.spec import Aggregate, Apply, Fold, Process, Reduce, WindowFunctionSpec, as_spec

__all__ = [
    "Aggregate",
    "AggregateFunction",
    "Apply",
    "Fold",
    "FoldFunction",
    "Process",
    "ProcessWindowFunction",
    "ProcessWindowFunctionContext",
    "Reduce",
    "ReduceFunction",
    "WindowFunction",
    "WindowFunctionSpec",
    "as_spec",
]
