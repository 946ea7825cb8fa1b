"""Triggers: when a window is evaluated and when its contents are purged."""

from triggers.base import OnMergeContext, Trigger, TriggerContext, TriggerResult
from triggers.composite import AfterWatermark, AllOf, AnyOf, OrFinally, Repeatedly
from triggers.continuous import ContinuousEventTimeTrigger, ContinuousProcessingTimeTrigger
from triggers.count import CountTrigger
from triggers.delta import DeltaTrigger
from triggers.emit import OnWindowCloseTrigger, OnWindowUpdateTrigger
from triggers.event_time import EventTimeTrigger
from triggers.never import NeverTrigger
from triggers.processing_time import ProcessingTimeTrigger
from triggers.purging import PurgingTrigger
from triggers.timeout import ProcessingTimeoutTrigger

__all__ = [
    "AfterWatermark",
    "AllOf",
    "AnyOf",
    "ContinuousEventTimeTrigger",
    "ContinuousProcessingTimeTrigger",
    "CountTrigger",
    "DeltaTrigger",
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
]
