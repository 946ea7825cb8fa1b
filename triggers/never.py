"""A trigger that never fires: the default of :class:`~assigners.GlobalWindows`."""

from __future__ import annotations

from typing import Any

from triggers.base import OnMergeContext, Trigger, TriggerContext, TriggerResult

__all__ = ["NeverTrigger"]


class NeverTrigger(Trigger[Any, Any]):
    """Never fires and keeps no state; global windows need another trigger to emit anything.

    Known elsewhere as: Flink ``GlobalWindows.NeverTrigger``; Beam ``_Never``.

    >>> from windowing.testing import TriggerHarness
    >>> from windowing.windows import GLOBAL_WINDOW
    >>> TriggerHarness(NeverTrigger()).process_element(1, 5, GLOBAL_WINDOW).name
    'CONTINUE'
    """

    def on_element(
        self, element: Any, timestamp: int | None, window: Any, ctx: TriggerContext
    ) -> TriggerResult:
        return TriggerResult.CONTINUE

    def on_event_time(self, time: int, window: Any, ctx: TriggerContext) -> TriggerResult:
        return TriggerResult.CONTINUE

    def on_processing_time(self, time: int, window: Any, ctx: TriggerContext) -> TriggerResult:
        return TriggerResult.CONTINUE

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window: Any, ctx: OnMergeContext) -> None:
        return None

    def clear(self, window: Any, ctx: TriggerContext) -> None:
        return None
