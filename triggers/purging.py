"""Purging trigger: turns every FIRE of a wrapped trigger into FIRE_AND_PURGE."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy

from windowing.evictors.base import EvictorContext
from windowing.evictors.vectorized import WindowRows
from windowing.triggers.base import OnMergeContext, Trigger, TriggerContext, TriggerResult
from windowing.triggers.vectorized import EndFirings, VectorizedTrigger

__all__ = ["PurgingTrigger"]


def _purging(result: TriggerResult) -> TriggerResult:
    return TriggerResult.FIRE_AND_PURGE if result.is_fire() else result


@dataclass(frozen=True, repr=False)
class PurgingTrigger(VectorizedTrigger[Any, Any]):
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

    @property
    def vectorized(self) -> bool:
        """On columns when the wrapped trigger is."""
        nested = self.trigger
        return isinstance(nested, VectorizedTrigger) and nested.vectorized and super().vectorized

    @property
    def vectorized_on_sessions(self) -> bool:
        nested = self.trigger
        return isinstance(nested, VectorizedTrigger) and nested.vectorized_on_sessions

    def on_elements(self, rows: WindowRows, ctx: EvictorContext) -> Any:
        """The wrapped trigger's results, each firing purging too."""
        assert isinstance(self.trigger, VectorizedTrigger)
        found = self.trigger.on_elements(rows, ctx)
        return None if found is None else _purging_codes(numpy.asarray(found))

    def on_end_of_input(self, rows: WindowRows, ctx: EvictorContext) -> EndFirings | None:
        assert isinstance(self.trigger, VectorizedTrigger)
        found = self.trigger.on_end_of_input(rows, ctx)
        if found is None:
            return None
        return EndFirings(found.windows, _purging_codes(numpy.asarray(found.results)))


def _purging_codes(codes: numpy.ndarray[Any, Any]) -> numpy.ndarray[Any, Any]:
    """``FIRE`` as ``FIRE_AND_PURGE`` (code 1 as 3)."""
    purged: numpy.ndarray[Any, Any] = numpy.where(codes & 1, codes | 2, codes)
    return purged
