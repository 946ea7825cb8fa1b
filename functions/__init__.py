"""Window functions: reduce, aggregate, fold, process and apply, and Flink's built-in
field aggregations (sum, min, max, min_by, max_by)."""

if __name__ == "functions":  # the top-level name of a source checkout: windowing.functions itself
    from windowing._aliases import alias

    alias(__name__)

from windowing.functions.aggregations import AggregationType, FieldAggregation
from windowing.functions.base import (
    AggregateFunction,
    FoldFunction,
    ProcessWindowFunction,
    ProcessWindowFunctionContext,
    ReduceFunction,
    WindowFunction,
)
from windowing.functions.spec import (
    Aggregate,
    Apply,
    Fold,
    Process,
    Reduce,
    WindowFunctionSpec,
    as_spec,
)

__all__ = [
    "Aggregate",
    "AggregateFunction",
    "AggregationType",
    "Apply",
    "FieldAggregation",
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
