"""Continuous triggers: fire a window periodically, in event time or in processing time."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy

from windowing.evictors.base import EvictorContext
from windowing.evictors.vectorized import WindowRows
from windowing.state import ReducingStateDescriptor
from windowing.time import Duration, java_remainder, to_millis
from windowing.triggers.base import OnMergeContext, Trigger, TriggerContext, TriggerResult
from windowing.triggers.vectorized import CODES, EndFirings, VectorizedTrigger

__all__ = ["ContinuousEventTimeTrigger", "ContinuousProcessingTimeTrigger", "positive_millis"]


def _min(a: int, b: int) -> int:
    return a if a <= b else b


#: The next periodic firing time. Reduced with ``min``: merged windows keep the earliest.
FIRE_TIME: ReducingStateDescriptor[int] = ReducingStateDescriptor("fire-time", _min)


def positive_millis(value: Duration, name: str, owner: str) -> int:
    """``value`` in milliseconds, which must be > 0 (``ValueError`` naming ``name``)."""
    ms = to_millis(value, name)
    if ms <= 0:
        msg = f"{owner}: {name} must be > 0, got {value!r}"
        raise ValueError(msg)
    return ms


def _first_fire(time: int, interval: int, window: Any) -> int:
    """The first firing for an element at ``time``: the interval boundary after it, capped at
    the window's last timestamp. Aligned with Java's ``%`` as Flink does: a negative ``time``
    rounds toward zero (``-3`` with interval 5 first fires at 5, not 0)."""
    return _min(time - java_remainder(time, interval) + interval, window.max_timestamp())


@dataclass(frozen=True, init=False, repr=False)
class ContinuousEventTimeTrigger(VectorizedTrigger[Any, Any]):
    """Fires every ``interval`` of event time while the window is open, and at its end.

    Rules (Flink's current ``ContinuousEventTimeTrigger``):

    * first element of a window (no pending fire time): a timer at
      ``min(ts - ts % interval + interval, window.max_timestamp())`` (Java's ``%``, see below)
      is registered and stored as the window's fire time, plus a timer at
      ``window.max_timestamp()``;
    * the fire-time timer fires (``FIRE``) and registers the next one,
      ``min(time + interval, window.max_timestamp())``; the end-of-window timer fires too;
      so with no new elements the window keeps firing every ``interval`` until its end;
    * an element for a window the watermark has passed fires at once (a late firing);
    * merging keeps the earliest pending fire time of the merged windows;
    * ``clear`` deletes the pending fire-time timer and the end-of-window timer.

    Intervals are aligned to the epoch with Java's truncating ``%``, as Flink's Java trigger
    does: for a negative ``ts`` the first firing is the boundary at or after ``ts`` plus one
    interval toward zero (``ts=-3``, ``interval=5``: 5), not the next boundary (0). Never
    purges: wrap it in :class:`~windowing.triggers.PurgingTrigger` for that.

    Known elsewhere as: Flink ``ContinuousEventTimeTrigger.of(interval)``; Beam
    ``AfterWatermark(early=Repeatedly(...))`` is the closest (early firings are
    processing-time based there).

    Parameters
    ----------
    interval
        The firing period (int ms, ``timedelta`` or e.g. ``"1 minute"``), > 0.

    Examples
    --------
    A window ``[0, 10)`` with ``interval=4``: an element at 1 schedules a firing at 4, which
    reschedules at 8, then the window end 9 caps the next one:

    >>> from windowing.testing import TriggerHarness
    >>> from windowing.windows import TimeWindow
    >>> h = TriggerHarness(ContinuousEventTimeTrigger(4))
    >>> w = TimeWindow(0, 10)
    >>> h.process_element("a", 1, w).name
    'CONTINUE'
    >>> [(t, r.name) for t in (4, 8, 9) for _, r in h.advance_watermark(t)]
    [(4, 'FIRE'), (8, 'FIRE'), (9, 'FIRE')]
    >>> h.clear(w)
    >>> h.num_event_time_timers(), h.num_state_entries()
    (0, 0)
    """

    interval: int

    def __init__(self, interval: Duration) -> None:
        object.__setattr__(
            self, "interval", positive_millis(interval, "interval", "ContinuousEventTimeTrigger")
        )

    def on_element(
        self, element: Any, timestamp: int | None, window: Any, ctx: TriggerContext
    ) -> TriggerResult:
        max_ts = window.max_timestamp()
        if max_ts <= ctx.get_current_watermark():
            # The watermark is already past the window: fire at once (late firing).
            return TriggerResult.FIRE
        ctx.register_event_time_timer(max_ts)
        fire_time = ctx.get_partitioned_state(FIRE_TIME)
        if fire_time.get() is None:
            if timestamp is None:
                msg = (
                    "ContinuousEventTimeTrigger: element has no timestamp; an event-time trigger "
                    f"needs event timestamps (window {window!r})"
                )
                raise ValueError(msg)
            next_fire = _first_fire(timestamp, self.interval, window)
            fire_time.add(next_fire)
            ctx.register_event_time_timer(next_fire)
        return TriggerResult.CONTINUE

    def on_event_time(self, time: int, window: Any, ctx: TriggerContext) -> TriggerResult:
        if time == window.max_timestamp():
            return TriggerResult.FIRE
        fire_time = ctx.get_partitioned_state(FIRE_TIME)
        if fire_time.get() == time:
            fire_time.clear()
            next_fire = _min(time + self.interval, window.max_timestamp())
            fire_time.add(next_fire)
            ctx.register_event_time_timer(next_fire)
            return TriggerResult.FIRE
        return TriggerResult.CONTINUE

    def on_processing_time(self, time: int, window: Any, ctx: TriggerContext) -> TriggerResult:
        return TriggerResult.CONTINUE

    def on_elements(self, rows: WindowRows, ctx: EvictorContext) -> numpy.ndarray[Any, Any]:
        """No row fires: the watermark is behind every window while rows arrive."""
        return numpy.zeros(len(rows), numpy.int8)

    def on_end_of_input(self, rows: WindowRows, ctx: EvictorContext) -> EndFirings | None:
        """Each window's timers: from the boundary after its first row's timestamp (capped at
        the last timestamp of that row's window) every ``interval`` while before its last
        timestamp, then at it; a window's firings in time order (``None`` for an interval
        beyond ``2**61`` ms). A session keeps the fire time its first row's own window set
        (``merge`` keeps the earliest): capped at that row's timestamp plus the gap, less
        one."""
        if self.interval > 2**61:
            return None
        filled = numpy.flatnonzero(rows.sizes() > 0)
        first = rows.timestamps[rows.offsets[:-1][filled]]
        last = rows.ends[filled] - 1
        cap = last
        if rows.sessions:  # the gap: the session's end after its latest row
            latest = rows.window_max(rows.timestamps)[filled]
            cap = first + (last + 1 - latest) - 1
        interval = self.interval
        fire = numpy.minimum(first - numpy.fmod(first, interval) + interval, cap)
        count = numpy.where(fire < last, -((fire - last) // interval), 0) + 1
        windows = numpy.repeat(filled, count)
        return EndFirings(windows, numpy.full(len(windows), CODES[TriggerResult.FIRE], numpy.int8))

    @property
    def vectorized_on_sessions(self) -> bool:
        return True

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window: Any, ctx: OnMergeContext) -> None:
        ctx.merge_partitioned_state(FIRE_TIME)
        next_fire = ctx.get_partitioned_state(FIRE_TIME).get()
        if next_fire is not None:
            ctx.register_event_time_timer(next_fire)

    def clear(self, window: Any, ctx: TriggerContext) -> None:
        fire_time = ctx.get_partitioned_state(FIRE_TIME)
        pending = fire_time.get()
        if pending is not None:
            ctx.delete_event_time_timer(pending)
            fire_time.clear()
        # Flink leaves the end-of-window timer behind; it is useless once the window is gone.
        ctx.delete_event_time_timer(window.max_timestamp())


@dataclass(frozen=True, init=False, repr=False)
class ContinuousProcessingTimeTrigger(Trigger[Any, Any]):
    """Fires every ``interval`` of processing time once the window has an element, up to the
    window's end.

    Rules (Flink's current ``ContinuousProcessingTimeTrigger``):

    * first element of a window (no pending fire time), at processing time ``now``: a timer at
      ``min(now - now % interval + interval, window.max_timestamp())`` (Java's ``%``), stored
      as the fire time;
    * any timer of the window at ``window.max_timestamp()`` fires (``FIRE``) and registers
      nothing: it is the last firing;
    * the fire-time timer fires (``FIRE``) and registers the next one,
      ``min(time + interval, window.max_timestamp())``; so without new elements the window
      keeps firing every ``interval`` until its end (global windows: forever);
    * merging keeps the earliest pending fire time and registers its timer for the merged
      window;
    * ``clear`` deletes the pending timer.

    There is no end-of-window timer of its own: with processing-time windows the operator's
    cleanup timer at ``window.max_timestamp()`` coincides with the capped fire time.

    Known elsewhere as: Flink ``ContinuousProcessingTimeTrigger.of(interval)``; Beam
    ``Repeatedly(AfterProcessingTime(interval))`` (which aligns to the first element, not to
    the epoch).

    Parameters
    ----------
    interval
        The firing period (int ms, ``timedelta`` or e.g. ``"10 seconds"``), > 0.

    Examples
    --------
    >>> from windowing.testing import TriggerHarness
    >>> from windowing.windows import TimeWindow
    >>> h = TriggerHarness(ContinuousProcessingTimeTrigger(5))
    >>> w = TimeWindow(0, 12)
    >>> h.advance_processing_time(2)
    []
    >>> h.process_element("a", None, w).name  # next firing: 5
    'CONTINUE'
    >>> [(t, r.name) for t in (5, 10, 11, 20) for _, r in h.advance_processing_time(t)]
    [(5, 'FIRE'), (10, 'FIRE'), (11, 'FIRE')]
    >>> h.clear(w)
    >>> h.num_processing_time_timers(), h.num_state_entries()
    (0, 0)
    """

    interval: int

    def __init__(self, interval: Duration) -> None:
        object.__setattr__(
            self,
            "interval",
            positive_millis(interval, "interval", "ContinuousProcessingTimeTrigger"),
        )

    def on_element(
        self, element: Any, timestamp: int | None, window: Any, ctx: TriggerContext
    ) -> TriggerResult:
        fire_time = ctx.get_partitioned_state(FIRE_TIME)
        if fire_time.get() is None:
            next_fire = _first_fire(ctx.get_current_processing_time(), self.interval, window)
            fire_time.add(next_fire)
            ctx.register_processing_time_timer(next_fire)
        return TriggerResult.CONTINUE

    def on_event_time(self, time: int, window: Any, ctx: TriggerContext) -> TriggerResult:
        return TriggerResult.CONTINUE

    def on_processing_time(self, time: int, window: Any, ctx: TriggerContext) -> TriggerResult:
        if time == window.max_timestamp():
            return TriggerResult.FIRE
        fire_time = ctx.get_partitioned_state(FIRE_TIME)
        if fire_time.get() != time:
            return TriggerResult.CONTINUE
        fire_time.clear()
        next_fire = _min(time + self.interval, window.max_timestamp())
        fire_time.add(next_fire)
        ctx.register_processing_time_timer(next_fire)
        return TriggerResult.FIRE

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window: Any, ctx: OnMergeContext) -> None:
        ctx.merge_partitioned_state(FIRE_TIME)
        next_fire = ctx.get_partitioned_state(FIRE_TIME).get()
        if next_fire is not None:
            ctx.register_processing_time_timer(next_fire)

    def clear(self, window: Any, ctx: TriggerContext) -> None:
        fire_time = ctx.get_partitioned_state(FIRE_TIME)
        pending = fire_time.get()
        if pending is not None:
            ctx.delete_processing_time_timer(pending)
            fire_time.clear()
