"""Apache Flink's window model for PySpark: the core (pure Python) API.

The Spark runtime lives in :mod:`windowing.spark`; everything importable from here runs
without Spark.
"""

from windowing.records import LateElement, OutputTag, WindowResult
from windowing.state import (
    AggregatingStateDescriptor,
    ListStateDescriptor,
    MapStateDescriptor,
    ReducingStateDescriptor,
    ValueStateDescriptor,
)
from windowing.time import MAX_TIMESTAMP, MIN_TIMESTAMP, Duration, to_millis
from windowing.windows import GLOBAL_WINDOW, GlobalWindow, TimestampedValue, TimeWindow

# The operator imports assigners/, triggers/ and functions/, which import windowing.* modules:
# load it lazily so that any package can be imported first.
_LAZY = {"InMemoryStateBackend", "KeyState", "OperatorMetrics", "WindowOperator"}


_LAZY_COUNT = {"CountWindowSpec", "count_window"}


def __getattr__(name: str) -> object:
    if name in _LAZY:
        from windowing import operator

        return getattr(operator, name)
    if name in _LAZY_COUNT:
        from windowing import count_windows

        return getattr(count_windows, name)
    msg = f"module 'windowing' has no attribute {name!r}"
    raise AttributeError(msg)


__all__ = [
    "GLOBAL_WINDOW",
    "MAX_TIMESTAMP",
    "MIN_TIMESTAMP",
    "AggregatingStateDescriptor",
    "CountWindowSpec",
    "Duration",
    "GlobalWindow",
    "InMemoryStateBackend",
    "KeyState",
    "LateElement",
    "ListStateDescriptor",
    "MapStateDescriptor",
    "OperatorMetrics",
    "OutputTag",
    "ReducingStateDescriptor",
    "TimeWindow",
    "TimestampedValue",
    "ValueStateDescriptor",
    "WindowOperator",
    "WindowResult",
    "count_window",
    "to_millis",
]
