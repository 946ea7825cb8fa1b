"""Window functions: reduce, aggregate (row by row, or vectorized over batches of rows), fold,
process and apply, Flink's built-in field aggregations (sum, min, max, min_by, max_by), and the
functions of joins (join, coGroup, process join)."""

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
from windowing.functions.joins import (
    CoGroupFunction,
    FlatJoinFunction,
    JoinFunction,
    ProcessJoinFunction,
    ProcessJoinFunctionContext,
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
from windowing.functions.vectorized import VectorizedAggregateFunction
from windowing.functions.vectorized_process import VectorizedProcessWindowFunction

__all__ = [
    "Aggregate",
    "AggregateFunction",
    "AggregationType",
    "Apply",
    "CoGroupFunction",
    "FieldAggregation",
    "FlatJoinFunction",
    "Fold",
    "FoldFunction",
    "JoinFunction",
    "Process",
    "ProcessJoinFunction",
    "ProcessJoinFunctionContext",
    "ProcessWindowFunction",
    "ProcessWindowFunctionContext",
    "Reduce",
    "ReduceFunction",
    "VectorizedAggregateFunction",
    "VectorizedProcessWindowFunction",
    "WindowFunction",
    "WindowFunctionSpec",
    "as_spec",
]
