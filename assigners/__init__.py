"""Window assigners: which windows an element belongs to."""

if __name__ == "assigners":  # the top-level name of a source checkout: windowing.assigners itself
    from windowing._aliases import alias

    alias(__name__)

from windowing.assigners.base import MergingWindowAssigner, WindowAssigner, WindowAssignerContext
from windowing.assigners.global_windows import GlobalWindows
from windowing.assigners.hopping import (
    HoppingEventTimeWindows,
    HoppingProcessingTimeWindows,
    SlidingEventTimeWindows,
    SlidingProcessingTimeWindows,
)
from windowing.assigners.session import (
    DynamicEventTimeSessionWindows,
    DynamicProcessingTimeSessionWindows,
    EventTimeSessionWindows,
    ProcessingTimeSessionWindows,
)
from windowing.assigners.sliding_distinct import SlidingDistinctAssigner
from windowing.assigners.tumbling import (
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
    "is_processing_time_assigner",
]

_PROCESSING_TIME_ASSIGNERS = (
    TumblingProcessingTimeWindows,
    HoppingProcessingTimeWindows,
    ProcessingTimeSessionWindows,
    DynamicProcessingTimeSessionWindows,
)


def is_processing_time_assigner(assigner: object) -> bool:
    """Whether ``assigner`` assigns windows by the processing-time clock."""
    return isinstance(assigner, _PROCESSING_TIME_ASSIGNERS)
