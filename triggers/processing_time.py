"""Processing-time trigger: fires when the processing-time clock passes the window end."""

from __future__ import annotations

from typing import Any

from windowing.triggers.base import OnMergeContext, Trigger, TriggerContext, TriggerResult

__all__ = ["ProcessingTimeTrigger"]


class ProcessingTimeTrigger(Trigger[Any, Any]):
    """Fires once processing time reaches ``window.max_timestamp()``; the default of
    processing-time assigners.

    Known elsewhere as: Flink ``ProcessingTimeTrigger``; Beam ``AfterProcessingTime``.

    Examples
    --------
    >>> from windowing.testing import TriggerHarness
    >>> from windowing.windows import TimeWindow
    >>> h = TriggerHarness(ProcessingTimeTrigger())
    >>> h.process_element(1, None, TimeWindow(0, 10)).name
    'CONTINUE'
    >>> [r.name for _, r in h.advance_processing_time(9)]
    ['FIRE']
    """

    def on_element(
        self, element: Any, timestamp: int | None, window: Any, ctx: TriggerContext
    ) -> TriggerResult:
        ctx.register_processing_time_timer(window.max_timestamp())
        return TriggerResult.CONTINUE

    def on_event_time(self, time: int, window: Any, ctx: TriggerContext) -> TriggerResult:
        return TriggerResult.CONTINUE

    def on_processing_time(self, time: int, window: Any, ctx: TriggerContext) -> TriggerResult:
        return TriggerResult.FIRE

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window: Any, ctx: OnMergeContext) -> None:
        # As in EventTimeTrigger: no timer when processing time is already past the window.
        max_ts = window.max_timestamp()
        if max_ts > ctx.get_current_processing_time():
            ctx.register_processing_time_timer(max_ts)

    def clear(self, window: Any, ctx: TriggerContext) -> None:
        ctx.delete_processing_time_timer(window.max_timestamp())
