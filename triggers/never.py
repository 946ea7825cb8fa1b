"""A trigger that never fires: the default of :class:`~windowing.assigners.GlobalWindows`."""

from __future__ import annotations

from typing import Any

from windowing.triggers.base import StatelessTrigger, TriggerContext, TriggerResult

__all__ = ["NeverTrigger"]


class NeverTrigger(StatelessTrigger[Any, Any]):
    """Never fires and keeps no state; global windows need another trigger to emit anything.

    Known elsewhere as: Flink ``GlobalWindows.NeverTrigger``; Beam ``_Never``.

    Examples
    --------
    >>> from windowing.testing import TriggerHarness
    >>> from windowing.windows import GLOBAL_WINDOW
    >>> TriggerHarness(NeverTrigger()).process_element(1, 5, GLOBAL_WINDOW).name
    'CONTINUE'
    """

    def on_element(
        self, element: Any, timestamp: int | None, window: Any, ctx: TriggerContext
    ) -> TriggerResult:
        return TriggerResult.CONTINUE
