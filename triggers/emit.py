"""Kafka Streams' two emit strategies as triggers: on window close, and on every update."""

from __future__ import annotations

from typing import Any

from windowing.triggers.base import StatelessTrigger, TriggerContext, TriggerResult

__all__ = ["OnWindowCloseTrigger", "OnWindowUpdateTrigger"]


class OnWindowCloseTrigger(StatelessTrigger[Any, Any]):
    """Fires once, when the window closes: when the watermark (processing time, for
    processing-time windows) reaches ``max_timestamp + allowed_lateness``, the moment the
    window can no longer change. Registers no timer of its own: it fires on the operator's
    cleanup timer, which reaches the trigger before the window is removed.

    A window whose cleanup time saturates at ``MAX_TIMESTAMP`` has no cleanup timer and never
    fires with this trigger.

    Known elsewhere as: Kafka Streams ``EmitStrategy.onWindowClose()`` (KIP-825) and
    "final results" with ``suppress(untilWindowCloses)``; seed 000's "final result only".

    Examples
    --------
    >>> from windowing.testing import TriggerHarness
    >>> from windowing.windows import TimeWindow
    >>> h = TriggerHarness(OnWindowCloseTrigger())
    >>> w = TimeWindow(0, 10)
    >>> h.process_element("x", 3, w).name, h.num_event_time_timers()
    ('CONTINUE', 0)
    >>> h.register_event_time_timer(14, w)  # the operator's cleanup timer (lateness 5)
    >>> h.advance_watermark_for(14, w).name
    'FIRE'
    """

    def on_element(
        self, element: Any, timestamp: int | None, window: Any, ctx: TriggerContext
    ) -> TriggerResult:
        return TriggerResult.CONTINUE

    def on_event_time(self, time: int, window: Any, ctx: TriggerContext) -> TriggerResult:
        return TriggerResult.FIRE if time >= window.max_timestamp() else TriggerResult.CONTINUE

    def on_processing_time(self, time: int, window: Any, ctx: TriggerContext) -> TriggerResult:
        return TriggerResult.FIRE if time >= window.max_timestamp() else TriggerResult.CONTINUE


class OnWindowUpdateTrigger(StatelessTrigger[Any, Any]):
    """Fires for every element a window receives (and, for sliding-distinct windows, for
    every window a record creates): an update stream of window results.

    Known elsewhere as: Kafka Streams' default ``EmitStrategy.onWindowUpdate()``.

    Examples
    --------
    >>> from windowing.testing import TriggerHarness
    >>> from windowing.windows import TimeWindow
    >>> TriggerHarness(OnWindowUpdateTrigger()).process_element("x", 3, TimeWindow(0, 10)).name
    'FIRE'
    """

    def on_element(
        self, element: Any, timestamp: int | None, window: Any, ctx: TriggerContext
    ) -> TriggerResult:
        return TriggerResult.FIRE
