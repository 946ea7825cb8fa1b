"""Count trigger: fires every ``max_count`` elements of a window."""

from __future__ import annotations

import operator
import warnings
from dataclasses import dataclass
from typing import Any

import numpy

from windowing.evictors.base import EvictorContext
from windowing.evictors.vectorized import WindowRows
from windowing.state import ReducingStateDescriptor
from windowing.triggers.base import OnMergeContext, TriggerContext, TriggerResult
from windowing.triggers.vectorized import CODES, EndFirings, VectorizedTrigger

__all__ = ["COUNT_STATE", "CountTrigger"]

#: The count of a window's elements since it last fired (a runtime that keeps windows itself
#: reads and writes it: :mod:`windowing.engine.exchange`).
COUNT_STATE: ReducingStateDescriptor[int] = ReducingStateDescriptor("count", operator.add)
_COUNT = COUNT_STATE


@dataclass(frozen=True, repr=False)
class CountTrigger(VectorizedTrigger[Any, Any]):
    """Fires when the window has received ``max_count`` elements since it last fired, then
    starts counting again. Never purges (wrap it in :class:`PurgingTrigger` for that).

    ``max_count`` below 1 is accepted, as by Flink, and fires on every element (with a
    ``UserWarning``).

    Known elsewhere as: Flink ``CountTrigger.of(n)``; Beam ``AfterCount(n)``.

    Examples
    --------
    >>> from windowing.testing import TriggerHarness
    >>> from windowing.windows import GLOBAL_WINDOW
    >>> h = TriggerHarness(CountTrigger(2))
    >>> [h.process_element(v, None, GLOBAL_WINDOW).name for v in "abc"]
    ['CONTINUE', 'FIRE', 'CONTINUE']
    """

    max_count: int

    def __post_init__(self) -> None:
        if isinstance(self.max_count, bool) or not isinstance(self.max_count, int):
            msg = f"max_count must be an int, got {self.max_count!r}"
            raise ValueError(msg)
        if self.max_count <= 0:
            msg = (
                f"CountTrigger: max_count={self.max_count} fires on every element, as "
                "max_count=1 (Flink accepts it too)"
            )
            warnings.warn(msg, UserWarning, stacklevel=3)

    def on_element(
        self, element: Any, timestamp: int | None, window: Any, ctx: TriggerContext
    ) -> TriggerResult:
        count = ctx.get_partitioned_state(_COUNT)
        count.add(1)
        if count.get() >= self.max_count:
            count.clear()
            return TriggerResult.FIRE
        return TriggerResult.CONTINUE

    def on_event_time(self, time: int, window: Any, ctx: TriggerContext) -> TriggerResult:
        return TriggerResult.CONTINUE

    def on_processing_time(self, time: int, window: Any, ctx: TriggerContext) -> TriggerResult:
        return TriggerResult.CONTINUE

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window: Any, ctx: OnMergeContext) -> None:
        ctx.merge_partitioned_state(_COUNT)

    def clear(self, window: Any, ctx: TriggerContext) -> None:
        ctx.get_partitioned_state(_COUNT).clear()

    def on_elements(self, rows: WindowRows, ctx: EvictorContext) -> numpy.ndarray[Any, Any]:
        """Each window's ``max_count``-th, ``2 * max_count``-th, ... row fires (every row for a
        ``max_count`` below 1); a session's rows count as they merged into it."""
        every = max(min(self.max_count, 2**62), 1)
        fire = CODES[TriggerResult.FIRE]
        return numpy.where((rows.positions() + 1) % every == 0, fire, 0).astype(numpy.int8)

    def on_end_of_input(self, rows: WindowRows, ctx: EvictorContext) -> EndFirings:
        """No timer fires."""
        return EndFirings.none()

    @property
    def vectorized_on_sessions(self) -> bool:
        return True
