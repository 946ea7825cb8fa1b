"""The in-memory driver's timer service across keys: which key to visit next.

Each key keeps its own timers (:class:`~windowing.engine.keystate.KeyState`); the scheduler
keeps, per clock, a heap of ``(time, seq, key)`` with each key's earliest timer and a dict of
the time each key is scheduled at (later heap entries of a key are superseded). A watermark
visits the due keys in the order of their earliest timer; each key fires all its timers up to
the watermark in time order (Flink's ``InternalTimerService`` per key group, with keys in
timer order).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from typing import Any

from windowing.due import compact, put_back, take_due
from windowing.engine.keystate import KeyState
from windowing.time import MIN_TIMESTAMP

__all__ = ["KeyScheduler"]

_COMPACT_MIN = 4096


class KeyScheduler:
    """Due keys per clock (event time, processing time).

    ``in_order``: the keys' one event-time timers are visited in the order of the ordered
    dict ``evt_sched`` (derived sliding-distinct windows,
    :class:`~windowing.engine.timeline_derived.DerivedSliding`), which keeps no heap but
    ``min_due``, a bound below every key's due time."""

    __slots__ = (
        "compact_at",
        "evt_due",
        "evt_sched",
        "in_order",
        "min_due",
        "proc_due",
        "proc_sched",
        "seq",
    )

    def __init__(self, *, in_order: bool = False) -> None:
        self.evt_due: list[tuple[int, int, Any]] = []
        self.proc_due: list[tuple[int, int, Any]] = []
        self.evt_sched: dict[Any, int] = {}
        self.proc_sched: dict[Any, int] = {}
        self.seq = 0
        # Size of the event-time heap above which its dead entries are dropped (windowing.due).
        self.compact_at = _COMPACT_MIN
        self.in_order = in_order
        self.min_due = MIN_TIMESTAMP

    def schedule(self, key: Any, ks: KeyState) -> bool:
        """Schedule ``key`` at its earliest timers; returns whether it has any. A heap top may
        be a deleted timer: scheduling too early is harmless (nothing fires, and the key is
        rescheduled). The bulk element loops inline this for speed."""
        pending = False
        # Sliced hopping and derived sliding-distinct windows keep one timer per key.
        one = ks.slices if ks.slices is not None else ks.timeline
        due = None if one is None else one.due
        if due is not None:
            pending = True
            cur = self.evt_sched.get(key)
            if cur is None or due < cur:
                if self.in_order:  # the schedule is the ordered dict alone
                    self.evt_sched.pop(key, None)  # last in the order (DerivedSliding.drain)
                    self.evt_sched[key] = due
                    if due < self.min_due:
                        self.min_due = due
                else:
                    self.evt_sched[key] = due
                    self.seq += 1
                    heapq.heappush(self.evt_due, (due, self.seq, key))
        elif ks.evt_timers:
            pending = True
            t = ks.evt_heap[0][0]
            cur = self.evt_sched.get(key)
            if cur is None or t < cur:
                self.evt_sched[key] = t
                self.seq += 1
                heapq.heappush(self.evt_due, (t, self.seq, key))
        if ks.proc_timers:
            pending = True
            t = ks.proc_heap[0][0]
            cur = self.proc_sched.get(key)
            if cur is None or t < cur:
                self.proc_sched[key] = t
                self.seq += 1
                heapq.heappush(self.proc_due, (t, self.seq, key))
        return pending

    def forget(self, key: Any) -> None:
        """Unschedule ``key`` (a runtime keeps the key's timer itself)."""
        for schedule in (self.evt_sched, self.proc_sched):
            schedule.pop(key, None)
        if not self.evt_sched:
            self.evt_due.clear()
        if not self.proc_sched:
            self.proc_due.clear()

    def clear(self) -> None:
        """Unschedule every key."""
        self.evt_due.clear()
        self.proc_due.clear()
        self.evt_sched.clear()
        self.proc_sched.clear()

    def compact(self) -> None:
        """Drop superseded entries of the event-time heap once it has grown."""
        if len(self.evt_due) > self.compact_at:
            compact(self.evt_due)
            self.compact_at = max(_COMPACT_MIN, 2 * len(self.evt_due))

    def drain(
        self,
        upto: int,
        *,
        event_time: bool,
        fire: Callable[[Any, KeyState, int], None],
        get: Callable[[Any], KeyState | None],
        remove: Callable[[Any], None],
    ) -> None:
        """Visit the keys due by ``upto`` in the order of their earliest timer: ``fire`` fires
        a key's timers up to ``upto``; the key is rescheduled, or ``remove``d when it keeps
        nothing."""
        due, sched = (
            (self.evt_due, self.evt_sched) if event_time else (self.proc_due, self.proc_sched)
        )
        # Timers of one key are strictly ordered; outputs of different keys may interleave
        # differently than in a global time order.
        rest = iter(take_due(due, upto))
        try:
            for t, _, key in rest:
                if sched.get(key) != t:
                    continue  # superseded by an earlier schedule of this key
                del sched[key]
                ks = get(key)
                if ks is None:
                    continue
                fire(key, ks, upto)
                if not self.schedule(key, ks) and not ks.contents and ks.is_empty():
                    remove(key)
        finally:
            put_back(due, rest)  # the keys not visited, if interrupted
