"""Processing-time timeout: fire a window when its trigger has not fired for a while."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy

from windowing.evictors.base import EvictorContext
from windowing.evictors.vectorized import WindowRows
from windowing.state import ValueStateDescriptor
from windowing.time import Duration, to_millis
from windowing.triggers.base import Trigger, TriggerContext, TriggerResult
from windowing.triggers.continuous import ContinuousEventTimeTrigger
from windowing.triggers.count import CountTrigger
from windowing.triggers.event_time import EventTimeTrigger
from windowing.triggers.purging import PurgingTrigger
from windowing.triggers.vectorized import CODES, EndFirings, VectorizedTrigger

__all__ = ["ProcessingTimeoutTrigger"]

#: The processing time of the pending timeout timer.
TIMEOUT: ValueStateDescriptor[int] = ValueStateDescriptor("timeout")


def _fired(result: TriggerResult) -> TriggerResult:
    return TriggerResult.FIRE_AND_PURGE if result.is_purge() else TriggerResult.FIRE


@dataclass(frozen=True, init=False, repr=False)
class ProcessingTimeoutTrigger(VectorizedTrigger[Any, Any]):
    """Wraps ``inner`` and also fires ``timeout`` of processing time after the first element
    (or, with ``reset_timer_on_new_record``, after the latest element).

    Rules (Flink's ``ProcessingTimeoutTrigger``):

    * ``on_element``: ``inner`` decides first. When it fires, its result is returned and the
      timeout and ``inner``'s state are cleared (``clear``), so the next element starts a new
      timeout. Otherwise a timeout timer at ``now + timeout`` is registered if none is pending
      (with ``reset_timer_on_new_record``, the pending one is replaced).
    * the timeout timer fires: ``FIRE`` (``FIRE_AND_PURGE`` when ``inner``'s answer to that
      timer purges); with ``clear_on_timeout`` the timeout and ``inner``'s state are cleared.
      Without it the expired timeout stays recorded, so no new timeout starts until the
      window is cleared (or, with ``reset_timer_on_new_record``, the next element).
    * any other timer goes to ``inner``; when ``inner`` fires on it, the result is turned into
      ``FIRE`` / ``FIRE_AND_PURGE`` as above (and cleared with ``clear_on_timeout``).
      Flink returns ``FIRE`` for *every* timer callback, including timers ``inner`` does not
      fire on and the operator's cleanup timer; here a timer that is neither the timeout nor
      a firing of ``inner`` returns ``inner``'s answer.

    ``inner`` shares the trigger's partitioned state and timers (Flink does the same); the
    timeout is kept in the value state ``"timeout"``. Cannot merge (as in Flink).

    Known elsewhere as: Flink ``ProcessingTimeoutTrigger.of(trigger, timeout,
    resetTimerOnNewRecord, shouldClearOnTimeout)``; Beam
    ``AfterAny(inner, AfterProcessingTime(timeout))``.

    Parameters
    ----------
    inner
        The wrapped trigger.
    timeout
        Processing time from the first (or latest) element to the timeout firing (int ms,
        ``timedelta`` or e.g. ``"30 seconds"``), > 0.
    reset_timer_on_new_record
        Restart the timeout on every element that does not fire.
    clear_on_timeout
        Clear the timeout and ``inner``'s state when the timeout fires, so that the next
        element starts a new timeout. Without it (the default, as specified for this project)
        an expired timeout stays recorded and the window gets no new timeout; Flink's
        two-argument ``ProcessingTimeoutTrigger.of(trigger, timeout)`` sets it.

    Examples
    --------
    "Every 3 elements, or 50 ms after the first element of a batch":

    >>> from windowing.triggers import CountTrigger
    >>> from windowing.testing import TriggerHarness
    >>> from windowing.windows import GLOBAL_WINDOW as W
    >>> h = TriggerHarness(ProcessingTimeoutTrigger(CountTrigger(3), 50, clear_on_timeout=True))
    >>> [h.process_element(v, None, W).name for v in "ab"]
    ['CONTINUE', 'CONTINUE']
    >>> h.advance_processing_time_for(50, W).name  # timeout: fires with two elements
    'FIRE'
    >>> [h.process_element(v, None, W).name for v in "cde"]  # counting starts afresh
    ['CONTINUE', 'CONTINUE', 'FIRE']
    >>> h.num_processing_time_timers(), h.num_state_entries()
    (0, 0)
    """

    inner: Trigger[Any, Any]
    timeout: int
    reset_timer_on_new_record: bool
    clear_on_timeout: bool

    def __init__(
        self,
        inner: Trigger[Any, Any],
        timeout: Duration,
        reset_timer_on_new_record: bool = False,
        clear_on_timeout: bool = False,
    ) -> None:
        owner = "ProcessingTimeoutTrigger"
        if not isinstance(inner, Trigger):
            msg = f"{owner}: inner must be a Trigger, got {inner!r}"
            raise ValueError(msg)
        for name, flag in (
            ("reset_timer_on_new_record", reset_timer_on_new_record),
            ("clear_on_timeout", clear_on_timeout),
        ):
            if not isinstance(flag, bool):
                msg = f"{owner}: {name} must be a bool, got {flag!r}"
                raise ValueError(msg)
        object.__setattr__(self, "inner", inner)
        ms = to_millis(timeout, "timeout")
        if ms <= 0:
            msg = (
                f"{owner}: timeout={timeout!r} fires at the next processing-time advance "
                "(Flink accepts it too)"
            )
            warnings.warn(msg, UserWarning, stacklevel=2)
        object.__setattr__(self, "timeout", ms)
        object.__setattr__(self, "reset_timer_on_new_record", reset_timer_on_new_record)
        object.__setattr__(self, "clear_on_timeout", clear_on_timeout)

    def on_element(
        self, element: Any, timestamp: int | None, window: Any, ctx: TriggerContext
    ) -> TriggerResult:
        result = self.inner.on_element(element, timestamp, window, ctx)
        if result.is_fire():
            self.clear(window, ctx)
            return result
        state = ctx.get_partitioned_state(TIMEOUT)
        pending = state.value()
        if pending is not None and self.reset_timer_on_new_record:
            ctx.delete_processing_time_timer(pending)
            state.clear()
            pending = None
        if pending is None:
            deadline = ctx.get_current_processing_time() + self.timeout
            state.update(deadline)
            ctx.register_processing_time_timer(deadline)
        return result

    def on_processing_time(self, time: int, window: Any, ctx: TriggerContext) -> TriggerResult:
        result = self.inner.on_processing_time(time, window, ctx)
        timed_out = ctx.get_partitioned_state(TIMEOUT).value() == time
        if not timed_out and not result.is_fire():
            return result
        if self.clear_on_timeout:
            self.clear(window, ctx)
        return _fired(result)

    def on_event_time(self, time: int, window: Any, ctx: TriggerContext) -> TriggerResult:
        result = self.inner.on_event_time(time, window, ctx)
        if not result.is_fire():
            return result
        if self.clear_on_timeout:
            self.clear(window, ctx)
        return _fired(result)

    def clear(self, window: Any, ctx: TriggerContext) -> None:
        state = ctx.get_partitioned_state(TIMEOUT)
        pending = state.value()
        if pending is not None:
            ctx.delete_processing_time_timer(pending)
            state.clear()
        self.inner.clear(window, ctx)

    # ------------------------------------------------------------------ on columns
    @property
    def vectorized(self) -> bool:
        """On columns when ``inner`` is one of the built-in triggers whose state a firing's
        ``clear`` leaves as its own rules would (``CountTrigger``, ``EventTimeTrigger``,
        ``ContinuousEventTimeTrigger``, each also in a ``PurgingTrigger``): in a bounded input
        replayed in event-time order the timeout never fires (the processing time does not
        move before every window is cleaned up at the end of input), so the firings are
        ``inner``'s, its timers' as ``FIRE`` / ``FIRE_AND_PURGE``, and with
        ``clear_on_timeout`` only a window's first timer firing (the ``clear`` deletes
        ``inner``'s timers)."""
        inner = self.inner.trigger if type(self.inner) is PurgingTrigger else self.inner
        return type(inner) in _CLEARED_AS_THEIR_OWN and super().vectorized

    @property
    def vectorized_on_sessions(self) -> bool:
        inner = self.inner
        return isinstance(inner, VectorizedTrigger) and inner.vectorized_on_sessions

    def on_elements(self, rows: WindowRows, ctx: EvictorContext) -> Any:
        """``inner``'s results."""
        assert isinstance(self.inner, VectorizedTrigger)
        return self.inner.on_elements(rows, ctx)

    def on_end_of_input(self, rows: WindowRows, ctx: EvictorContext) -> EndFirings | None:
        """``inner``'s timer firings as ``FIRE`` (``FIRE_AND_PURGE`` when they purge); with
        ``clear_on_timeout`` each window's first only."""
        assert isinstance(self.inner, VectorizedTrigger)
        found = self.inner.on_end_of_input(rows, ctx)
        if found is None:
            return None
        codes = numpy.asarray(found.results)
        fires = (codes & 1) == 1
        windows = numpy.asarray(found.windows)[fires]
        results = numpy.where((codes[fires] & 2) == 2, _PURGES, _FIRES).astype(numpy.int8)
        if self.clear_on_timeout:
            _, first = numpy.unique(windows, return_index=True)
            first.sort()
            windows, results = windows[first], results[first]
        return EndFirings(windows, results)


#: The triggers a ``ProcessingTimeoutTrigger``'s ``clear`` on firing leaves as they are.
_CLEARED_AS_THEIR_OWN = (CountTrigger, EventTimeTrigger, ContinuousEventTimeTrigger)
_FIRES = CODES[TriggerResult.FIRE]
_PURGES = CODES[TriggerResult.FIRE_AND_PURGE]
