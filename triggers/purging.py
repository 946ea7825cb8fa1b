"""Purging trigger: turns every FIRE of a wrapped trigger into FIRE_AND_PURGE."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from windowing.triggers.base import OnMergeContext, Trigger, TriggerContext, TriggerResult

__all__ = ["PurgingTrigger"]


def _purging(result: TriggerResult) -> TriggerResult:
    return TriggerResult.FIRE_AND_PURGE if result.is_fire() else result


@dataclass(frozen=True, repr=False)
class PurgingTrigger(Trigger[Any, Any]):
    """Wraps ``trigger`` so that its firings also purge the window contents.

    Known elsewhere as: Flink ``PurgingTrigger.of(trigger)``; Beam's discarding accumulation.

    Examples
    --------
    >>> from windowing.triggers.count import CountTrigger
    >>> from windowing.testing import TriggerHarness
    >>> from windowing.windows import GLOBAL_WINDOW
    >>> h = TriggerHarness(PurgingTrigger(CountTrigger(1)))
    >>> h.process_element("a", None, GLOBAL_WINDOW).name
    'FIRE_AND_PURGE'
    """

    trigger: Trigger[Any, Any]

    def __post_init__(self) -> None:
        if not isinstance(self.trigger, Trigger):
            msg = f"trigger must be a Trigger, got {self.trigger!r}"
            raise ValueError(msg)

    def on_element(
        self, element: Any, timestamp: int | None, window: Any, ctx: TriggerContext
    ) -> TriggerResult:
        return _purging(self.trigger.on_element(element, timestamp, window, ctx))

    def on_event_time(self, time: int, window: Any, ctx: TriggerContext) -> TriggerResult:
        return _purging(self.trigger.on_event_time(time, window, ctx))

    def on_processing_time(self, time: int, window: Any, ctx: TriggerContext) -> TriggerResult:
        return _purging(self.trigger.on_processing_time(time, window, ctx))

    def can_merge(self) -> bool:
        return self.trigger.can_merge()

    def on_merge(self, window: Any, ctx: OnMergeContext) -> None:
        self.trigger.on_merge(window, ctx)

    def clear(self, window: Any, ctx: TriggerContext) -> None:
        self.trigger.clear(window, ctx)
