"""Triggers: when a window is evaluated and when its contents are purged."""

from triggers.base import OnMergeContext, Trigger, TriggerContext, TriggerResult
from triggers.count import CountTrigger
from triggers.event_time import EventTimeTrigger
from triggers.never import NeverTrigger
from triggers.processing_time import ProcessingTimeTrigger
from triggers.purging import PurgingTrigger

__all__ = [
    "CountTrigger",
    "EventTimeTrigger",
    "NeverTrigger",
    "OnMergeContext",
    "ProcessingTimeTrigger",
    "PurgingTrigger",
    "Trigger",
    "TriggerContext",
    "TriggerResult",
]
