"""Triggers: when a window is evaluated and when its contents are purged."""

if __name__ == "triggers":  # the top-level name of a source checkout: windowing.triggers itself
    from windowing._aliases import alias

    alias(__name__)

from windowing.triggers.base import OnMergeContext, Trigger, TriggerContext, TriggerResult
from windowing.triggers.composite import AfterWatermark, AllOf, AnyOf, OrFinally, Repeatedly
from windowing.triggers.continuous import (
    ContinuousEventTimeTrigger,
    ContinuousProcessingTimeTrigger,
)
from windowing.triggers.count import CountTrigger
from windowing.triggers.delta import DeltaTrigger
from windowing.triggers.emit import OnWindowCloseTrigger, OnWindowUpdateTrigger
from windowing.triggers.event_time import EventTimeTrigger
from windowing.triggers.never import NeverTrigger
from windowing.triggers.processing_time import ProcessingTimeTrigger
from windowing.triggers.purging import PurgingTrigger
from windowing.triggers.timeout import ProcessingTimeoutTrigger
from windowing.triggers.vectorized import EndFirings, VectorizedTrigger

__all__ = [
    "AfterWatermark",
    "AllOf",
    "AnyOf",
    "ContinuousEventTimeTrigger",
    "ContinuousProcessingTimeTrigger",
    "CountTrigger",
    "DeltaTrigger",
    "EndFirings",
    "EventTimeTrigger",
    "NeverTrigger",
    "OnMergeContext",
    "OnWindowCloseTrigger",
    "OnWindowUpdateTrigger",
    "OrFinally",
    "ProcessingTimeTrigger",
    "ProcessingTimeoutTrigger",
    "PurgingTrigger",
    "Repeatedly",
    "Trigger",
    "TriggerContext",
    "TriggerResult",
    "VectorizedTrigger",
]
