"""Apache Flink's window model for PySpark.

Everything is importable from ``windowing``: the common names from here, the rest from its
subpackages (``windowing.assigners``, ``windowing.triggers``, ``windowing.evictors``,
``windowing.functions``). The Spark runtime lives in :mod:`windowing.spark`; everything
importable from here runs without Spark.

Examples
--------
>>> from windowing import DataStream, TumblingEventTimeWindows, WindowOperator
>>> op = WindowOperator(TumblingEventTimeWindows(10), lambda a, b: a + b)

Modules import in layers, downward only (``docs/design.md``); this module is the top of the
pure-Python layers and imports them in that order.
"""

from windowing._version import __version__
from windowing.assigners import (
    DynamicEventTimeSessionWindows,
    DynamicProcessingTimeSessionWindows,
    EventTimeSessionWindows,
    GlobalWindows,
    HoppingEventTimeWindows,
    HoppingProcessingTimeWindows,
    MergingWindowAssigner,
    ProcessingTimeSessionWindows,
    SlidingDistinctAssigner,
    SlidingEventTimeWindows,
    SlidingProcessingTimeWindows,
    TumblingEventTimeWindows,
    TumblingProcessingTimeWindows,
    WindowAssigner,
    WindowStagger,
)
from windowing.count_windows import CountWindowSpec, count_window
from windowing.evictors import (
    CountEvictor,
    DeltaEvictor,
    Evictor,
    TimeEvictor,
    VectorizedEvictor,
    WindowRows,
)
from windowing.functions import (
    AggregateFunction,
    CoGroupFunction,
    FlatJoinFunction,
    FoldFunction,
    JoinFunction,
    ProcessJoinFunction,
    ProcessWindowFunction,
    ReduceFunction,
    VectorizedAggregateFunction,
    VectorizedProcessWindowFunction,
    WindowFunction,
)
from windowing.operator import InMemoryStateBackend, KeyState, OperatorMetrics, WindowOperator
from windowing.plotting import plot_windows
from windowing.records import LateElement, OutputTag, PaneInfo, Timing, WindowResult
from windowing.state import (
    AggregatingStateDescriptor,
    ListStateDescriptor,
    MapStateDescriptor,
    ReducingStateDescriptor,
    ValueStateDescriptor,
)
from windowing.stream import (
    BoundedOutOfOrderness,
    DataStream,
    KeyedStream,
    MonotonousTimestamps,
    WindowedStream,
)
from windowing.time import MAX_TIMESTAMP, MIN_TIMESTAMP, Duration, to_millis
from windowing.triggers import (
    AfterWatermark,
    AllOf,
    AnyOf,
    ContinuousEventTimeTrigger,
    ContinuousProcessingTimeTrigger,
    CountTrigger,
    DeltaTrigger,
    EventTimeTrigger,
    NeverTrigger,
    OnWindowCloseTrigger,
    OnWindowUpdateTrigger,
    OrFinally,
    ProcessingTimeoutTrigger,
    ProcessingTimeTrigger,
    PurgingTrigger,
    Repeatedly,
    Trigger,
    TriggerResult,
    VectorizedTrigger,
)
from windowing.windows import GLOBAL_WINDOW, GlobalWindow, TimestampedValue, TimeWindow

__all__ = [
    "GLOBAL_WINDOW",
    "MAX_TIMESTAMP",
    "MIN_TIMESTAMP",
    "AfterWatermark",
    "AggregateFunction",
    "AggregatingStateDescriptor",
    "AllOf",
    "AnyOf",
    "BoundedOutOfOrderness",
    "CoGroupFunction",
    "ContinuousEventTimeTrigger",
    "ContinuousProcessingTimeTrigger",
    "CountEvictor",
    "CountTrigger",
    "CountWindowSpec",
    "DataStream",
    "DeltaEvictor",
    "DeltaTrigger",
    "Duration",
    "DynamicEventTimeSessionWindows",
    "DynamicProcessingTimeSessionWindows",
    "EventTimeSessionWindows",
    "EventTimeTrigger",
    "Evictor",
    "FlatJoinFunction",
    "FoldFunction",
    "GlobalWindow",
    "GlobalWindows",
    "HoppingEventTimeWindows",
    "HoppingProcessingTimeWindows",
    "InMemoryStateBackend",
    "JoinFunction",
    "KeyState",
    "KeyedStream",
    "LateElement",
    "ListStateDescriptor",
    "MapStateDescriptor",
    "MergingWindowAssigner",
    "MonotonousTimestamps",
    "NeverTrigger",
    "OnWindowCloseTrigger",
    "OnWindowUpdateTrigger",
    "OperatorMetrics",
    "OrFinally",
    "OutputTag",
    "PaneInfo",
    "ProcessJoinFunction",
    "ProcessWindowFunction",
    "ProcessingTimeSessionWindows",
    "ProcessingTimeTrigger",
    "ProcessingTimeoutTrigger",
    "PurgingTrigger",
    "ReduceFunction",
    "ReducingStateDescriptor",
    "Repeatedly",
    "SlidingDistinctAssigner",
    "SlidingEventTimeWindows",
    "SlidingProcessingTimeWindows",
    "TimeEvictor",
    "TimeWindow",
    "TimestampedValue",
    "Timing",
    "Trigger",
    "TriggerResult",
    "TumblingEventTimeWindows",
    "TumblingProcessingTimeWindows",
    "ValueStateDescriptor",
    "VectorizedAggregateFunction",
    "VectorizedEvictor",
    "VectorizedProcessWindowFunction",
    "VectorizedTrigger",
    "WindowAssigner",
    "WindowFunction",
    "WindowOperator",
    "WindowResult",
    "WindowRows",
    "WindowStagger",
    "WindowedStream",
    "__version__",
    "count_window",
    "plot_windows",
    "to_millis",
]
