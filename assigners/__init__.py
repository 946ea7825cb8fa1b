"""Window assigners: which windows an element belongs to."""

from assigners.base import MergingWindowAssigner, WindowAssigner, WindowAssignerContext
from assigners.global_windows import GlobalWindows
from assigners.hopping import (
    HoppingEventTimeWindows,
    HoppingProcessingTimeWindows,
    SlidingEventTimeWindows,
    SlidingProcessingTimeWindows,
)
from assigners.session import (
    DynamicEventTimeSessionWindows,
    DynamicProcessingTimeSessionWindows,
    EventTimeSessionWindows,
    ProcessingTimeSessionWindows,
)
from assigners.sliding_distinct import SlidingDistinctAssigner
from assigners.tumbling import (
    TumblingEventTimeWindows,
    TumblingProcessingTimeWindows,
    WindowStagger,
)

__all__ = [
    "DynamicEventTimeSessionWindows",
    "DynamicProcessingTimeSessionWindows",
    "EventTimeSessionWindows",
    "GlobalWindows",
    "HoppingEventTimeWindows",
    "HoppingProcessingTimeWindows",
    "MergingWindowAssigner",
    "ProcessingTimeSessionWindows",
    "SlidingDistinctAssigner",
    "SlidingEventTimeWindows",
    "SlidingProcessingTimeWindows",
    "TumblingEventTimeWindows",
    "TumblingProcessingTimeWindows",
    "WindowAssigner",
    "WindowAssignerContext",
    "WindowStagger",
]
