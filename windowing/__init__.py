"""Apache Flink's window model for PySpark: the core (pure Python) API.

The Spark runtime lives in :mod:`windowing.spark`; everything importable from here runs
without Spark.
"""

from windowing.time import MAX_TIMESTAMP, MIN_TIMESTAMP, Duration, to_millis
from windowing.windows import GLOBAL_WINDOW, GlobalWindow, TimestampedValue, TimeWindow
from windowing.records import LateElement, OutputTag, WindowResult
from windowing.state import (
    AggregatingStateDescriptor,
    ListStateDescriptor,
    MapStateDescriptor,
    ReducingStateDescriptor,
    ValueStateDescriptor,
)
from windowing.operator import InMemoryStateBackend, KeyState, OperatorMetrics, WindowOperator

__all__ = [
    "GLOBAL_WINDOW",
    "MAX_TIMESTAMP",
    "MIN_TIMESTAMP",
    "AggregatingStateDescriptor",
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
    "to_millis",
]
