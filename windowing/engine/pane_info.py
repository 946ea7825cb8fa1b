"""Pane info: which firing of its window a result is, and when it fired (Beam's
``PaneInfo``; an operator built with ``pane_info=True``).

Each firing of a window is a *pane*: ``index`` counts the window's firings from 0, and
``timing`` places it against the window's max timestamp on a clock: the clock of the timer
that fired it, or for an element's firing the window's own (the watermark for event-time
windows, the processing time for processing-time windows and ``GlobalWindows``)::

    LATE     a pane was already ON_TIME or LATE, or the clock had passed the max timestamp
             before the step that fired it (an element within the allowed lateness, a timer
             of a window the clock had already passed)
    EARLY    else, while the clock is still below the max timestamp (for a timer's firing:
             the timer's time, which the clock passed on its way)
    ON_TIME  else: the first firing of the step whose clock advance passed the max timestamp

Timing by the timer's time rather than by the watermark a step ended at makes the panes the
same however far one watermark step jumps (a batch replay and a streaming run agree).

A window's panes go ``EARLY* ON_TIME? LATE*``. Flink's watermark ``W`` means "no more
elements at or before ``W``", so a clock *passes* a max timestamp ``m`` when it reaches
``m`` (Beam's, one unit later).

The count lives in the key's state (``KeyState.panes``: window -> ``(next index, settled,
keep)``) while the window can still fire: it is dropped when the window's cleanup time is
reached in the step that fires it, and pruned lazily once the clock has passed a window's
cleanup time. A window without a cleanup time (its cleanup time saturates at the end of
time: ``GlobalWindows``, windows at the end of time) keeps its count, and keeps its key,
forever, as it keeps its state. Merged session windows start from 0 when the merge result is
a new window, as in Beam (``docs/spark.md``, pane info).

Examples
--------
>>> from windowing.assigners import TumblingEventTimeWindows
>>> from windowing.operator import WindowOperator
>>> op = WindowOperator(
...     TumblingEventTimeWindows(10), lambda a, b: a + b, allowed_lateness=5, pane_info=True
... )
>>> op.process_element(1, 3, key="k")
>>> op.process_watermark(9)  # passes the window's max timestamp: ON_TIME
>>> op.process_element(1, 4, key="k")  # within the lateness: LATE
>>> [(r.value, r.pane.index, r.pane.timing.name) for r in op.output]
[(1, 0, 'ON_TIME'), (2, 1, 'LATE')]
"""

from __future__ import annotations

import enum
from typing import Any, Protocol

from windowing.engine.keystate import KeyState
from windowing.records import PaneInfo, Timing
from windowing.rules import cleanup_time, has_cleanup_timer

__all__ = ["Clocks", "PaneTracker", "StepClock"]

_EARLY, _ON_TIME, _LATE = Timing.EARLY, Timing.ON_TIME, Timing.LATE
#: Entries a key keeps before the stale ones are pruned (then twice what is left).
_PRUNE_AT = 32


class StepClock(enum.Enum):
    """Which clock the operator's current step is advancing (timers firing), if any."""

    NONE = "none"
    EVENT = "event"
    PROCESSING = "processing"


class Clocks(Protocol):
    """The clocks the tracker reads from its operator."""

    watermark: int
    processing_time: int
    watermark_before: int
    processing_time_before: int
    step_clock: StepClock
    timer_time: int | None
    timer_event_time: bool


class PaneTracker:
    """Gives each firing its :class:`~windowing.records.PaneInfo` and keeps the count per
    window in the key's state (see the module docstring)."""

    __slots__ = ("clocks", "event_time", "lateness", "prune_at")

    def __init__(self, clocks: Clocks, *, event_time: bool, allowed_lateness: int) -> None:
        self.clocks = clocks
        self.event_time = event_time
        self.lateness = allowed_lateness if event_time else 0
        self.prune_at = _PRUNE_AT

    def window_clock(self) -> tuple[int, int]:
        """The clock a firing is timed on, before the current step and at the firing: the
        clock of the timer that fired (the window's own clock for an element's firing); in a
        step that fires timers of that clock, the value before the advance, and the timer's
        time (the clock passed it on its way); otherwise the current value."""
        clocks = self.clocks
        timer = clocks.timer_time
        if clocks.timer_event_time if timer is not None else self.event_time:
            now = clocks.watermark
            before = clocks.watermark_before if clocks.step_clock is StepClock.EVENT else now
        else:
            now = clocks.processing_time
            before = (
                clocks.processing_time_before if clocks.step_clock is StepClock.PROCESSING else now
            )
        if timer is not None and timer < now:
            now = timer
        return (before if before < now else now), now

    def next(
        self, ks: KeyState | None, window: Any, clocks: tuple[int, int] | None = None
    ) -> PaneInfo:
        """The pane of a firing of ``window`` (of the key whose state is ``ks``; ``None``: a
        key without state, whose window fires for the first and last time), counted.
        ``clocks``: the window clock before the step and now, when the caller fires outside
        the operator's steps (the one pass at the end of input)."""
        before, now = self.window_clock() if clocks is None else clocks
        max_ts = window.max_timestamp()
        panes = None if ks is None else ks.panes
        entry = None if panes is None else panes.get(window)
        index, settled = (0, False) if entry is None else (entry[0], entry[1])
        if settled or max_ts <= before:
            timing = _LATE
        elif max_ts > now:
            timing = _EARLY
        else:
            timing = _ON_TIME
        if ks is not None:
            cleanup = cleanup_time(max_ts, self.lateness, event_time=self.event_time)
            keep = not has_cleanup_timer(cleanup)
            if cleanup > now or keep:
                if panes is None:
                    panes = ks.panes = {}
                panes[window] = (index + 1, settled or timing is not _EARLY, keep)
                if len(panes) >= self.prune_at:
                    self.prune(panes, now)
            elif entry is not None:
                del panes[window]  # type: ignore[union-attr]
        return PaneInfo(index, timing)

    def prune(self, panes: dict[Any, tuple[int, bool, bool]], now: int) -> None:
        """Drop the counts of windows whose cleanup time the clock has reached."""
        lateness, event_time = self.lateness, self.event_time
        for window, entry in list(panes.items()):
            if (
                not entry[2]
                and cleanup_time(window.max_timestamp(), lateness, event_time=event_time) <= now
            ):
                del panes[window]
        self.prune_at = max(_PRUNE_AT, 2 * len(panes))
