"""Event-time trigger: fires when the watermark passes the end of the window."""

from __future__ import annotations

from typing import Any

import numpy

from windowing.evictors.base import EvictorContext
from windowing.evictors.vectorized import WindowRows
from windowing.triggers.base import OnMergeContext, TriggerContext, TriggerResult
from windowing.triggers.vectorized import EndFirings, VectorizedTrigger

__all__ = ["EventTimeTrigger"]


class EventTimeTrigger(VectorizedTrigger[Any, Any]):
    """Fires once the watermark passes ``window.max_timestamp()``; the default of event-time
    assigners.

    An element added to a window whose end the watermark has already passed (a late element
    within the allowed lateness) fires the window at once: a *late firing*.

    Known elsewhere as: Flink ``EventTimeTrigger``; Beam ``AfterWatermark()``.

    Examples
    --------
    >>> from windowing.testing import TriggerHarness
    >>> from windowing.windows import TimeWindow
    >>> h = TriggerHarness(EventTimeTrigger())
    >>> h.process_element(1, 3, TimeWindow(0, 10))
    <TriggerResult.CONTINUE: (False, False)>
    >>> h.advance_watermark(9)
    [(TimeWindow(start=0, end=10), <TriggerResult.FIRE: (True, False)>)]
    """

    def on_element(
        self, element: Any, timestamp: int | None, window: Any, ctx: TriggerContext
    ) -> TriggerResult:
        max_ts = window.max_timestamp()
        if max_ts <= ctx.get_current_watermark():
            # The watermark is already past the window: fire immediately (late firing).
            return TriggerResult.FIRE
        ctx.register_event_time_timer(max_ts)
        return TriggerResult.CONTINUE

    def on_event_time(self, time: int, window: Any, ctx: TriggerContext) -> TriggerResult:
        return TriggerResult.FIRE if time == window.max_timestamp() else TriggerResult.CONTINUE

    def on_processing_time(self, time: int, window: Any, ctx: TriggerContext) -> TriggerResult:
        return TriggerResult.CONTINUE

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window: Any, ctx: OnMergeContext) -> None:
        # Register only if the watermark has not passed the merged window yet: otherwise the
        # next on_element() fires it, and a timer here would fire the window twice.
        max_ts = window.max_timestamp()
        if max_ts > ctx.get_current_watermark():
            ctx.register_event_time_timer(max_ts)

    def clear(self, window: Any, ctx: TriggerContext) -> None:
        ctx.delete_event_time_timer(window.max_timestamp())

    def on_elements(self, rows: WindowRows, ctx: EvictorContext) -> numpy.ndarray[Any, Any]:
        """No row fires: the watermark is behind every window while rows arrive."""
        return numpy.zeros(len(rows), numpy.int8)

    def on_end_of_input(self, rows: WindowRows, ctx: EvictorContext) -> EndFirings:
        """Each window fires once, at its end."""
        return EndFirings.once_each(rows, TriggerResult.FIRE)

    @property
    def vectorized_on_sessions(self) -> bool:
        return True
