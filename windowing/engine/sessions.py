"""Event-time session windows with the built-in ``EventTimeTrigger`` and no evictor
(:class:`~windowing.plan.Strategy` ``SESSIONS``): the merging-window set, the trigger's
``on_element`` / ``on_merge`` / ``clear`` and the cleanup timers inlined in a bulk element loop,
and a one-pass form for a key's bounded input in time order."""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Sequence
from typing import Any

from windowing.engine.generic import GenericStrategy, ends_before_end_of_time
from windowing.engine.keystate import KeyState, count_row
from windowing.engine.notes import note_element
from windowing.engine.strategy import Element, Engine
from windowing.time import MAX_TIMESTAMP, MIN_TIMESTAMP
from windowing.windows import TimeWindow

__all__ = ["SessionStrategy"]

_MISSING: Any = object()


class SessionStrategy(GenericStrategy):
    """Session windows of a fixed ``gap``."""

    def __init__(self, engine: Engine, gap: int) -> None:
        super().__init__(engine)
        self.gap = gap

    def process(self, elements: Iterable[Element], states: dict[Any, KeyState]) -> bool:
        """The element loop for ``EventTimeSessionWindows`` with the built-in
        ``EventTimeTrigger`` and no evictor: the merging-window set, the trigger's
        ``on_element`` / ``on_merge`` / ``clear`` and the cleanup timers inlined (identical
        behaviour to :meth:`on_element_merging`, checked by differential tests).

        In-flight session windows of a key never overlap or touch (they would have merged), so
        a new window ``[ts, ts + gap)`` merges exactly with the in-flight windows it intersects.
        """
        gap = self.gap
        add = self.engine.add_contents
        reducer = self.engine.inline_reducer
        lateness = self.engine.job.allowed_lateness
        wm = self.engine.clocks.watermark
        scheduler = self.engine.scheduler
        evt_sched = scheduler.evt_sched
        evt_due = scheduler.evt_due
        push = heapq.heappush
        end_of_time = MAX_TIMESTAMP
        new_tuple = tuple.__new__
        time_window = TimeWindow
        missing = _MISSING
        counting = self.engine.count_rows
        count = 0
        ts: int | None = None
        key: Any = None
        try:
            for value, ts, key in elements:
                count += 1
                ks = states.get(key)
                if ks is None:
                    ks = states[key] = KeyState(True)
                if ts is None:
                    self.engine.job.assigner.assign_windows(
                        value, ts, self.engine.clock
                    )  # raises its error
                    continue
                mapping = ks.merging
                assert mapping is not None
                contents = ks.contents
                timers = ks.evt_timers
                heap = ks.evt_heap
                end = ts + gap
                if end > end_of_time:
                    end = end_of_time + 1
                start = ts
                if len(mapping) == 1:
                    for w in mapping:
                        overlapping = [w] if w[0] <= end and w[1] >= start else []
                else:
                    overlapping = [w for w in mapping if w[0] <= end and w[1] >= start]
                if not overlapping:
                    actual = new_tuple(time_window, (start, end))
                    mapping[actual] = actual
                    state_window = actual
                elif len(overlapping) > 1 or _equals_merged(mapping, overlapping, start, end):
                    # It bridges sessions, or equals a merged session (possible at the end of
                    # time, where sessions are clamped): Flink's set order picks the state
                    # window and the order of the merge, and an equal window replaces the
                    # mapping (the generic path).
                    window = new_tuple(time_window, (start, end))
                    if not self.on_element_merging(key, ks, value, ts, (window,)):
                        self.engine.not_added(key, ks, value, ts)
                    self.engine.schedule(key, ks)
                    continue
                elif overlapping[0][0] <= start and overlapping[0][1] >= end:
                    actual = overlapping[0]  # inside an in-flight window: no merge
                    state_window = mapping[actual]
                else:
                    # Merge: the result covers the new window and the window it touches.
                    first_window = overlapping[0]
                    new_start = first_window[0] if first_window[0] < start else start
                    new_end = end
                    for w in overlapping:
                        if w[1] > new_end:
                            new_end = w[1]
                    actual = new_tuple(time_window, (new_start, new_end))
                    target = mapping.pop(first_window)
                    mapping[actual] = target
                    if new_end - 1 + lateness <= wm:
                        self.on_merge(key, ks, actual, overlapping, target, [])  # raises: too late
                    # EventTimeTrigger.on_merge
                    max_ts = new_end - 1
                    if max_ts > wm and (max_ts, actual) not in timers:
                        timers.add((max_ts, actual))
                        ks.seq += 1
                        push(heap, (max_ts, ks.seq, actual))
                    for w in overlapping:
                        w_max = w[1] - 1
                        timers.discard((w_max, w))  # EventTimeTrigger.clear
                        w_cleanup = w_max + lateness
                        if w_cleanup >= end_of_time:
                            w_cleanup = end_of_time
                        if w_cleanup != end_of_time:
                            timers.discard((w_cleanup, w))  # the cleanup timer
                    state_window = target  # one window merged: no contents to merge
                max_ts = actual[1] - 1
                cleanup = max_ts + lateness
                if cleanup >= end_of_time:
                    cleanup = end_of_time
                if cleanup <= wm:
                    del mapping[actual]  # a late window: retire it
                    self.engine.not_added(key, ks, value, ts)
                    continue
                if counting:
                    count_row(ks, state_window, state_window not in contents)
                if reducer is not None:
                    current = contents.get(state_window, missing)
                    contents[state_window] = (
                        value if current is missing else reducer(current, value)
                    )
                else:
                    add(contents, state_window, value, ts)
                # Late firing; an empty result skips the cleanup timer too (Flink's `continue`).
                register_cleanup = True
                if max_ts <= wm:
                    register_cleanup = self.engine.emit(key, ks, actual, state_window)
                elif (max_ts, actual) not in timers:
                    timers.add((max_ts, actual))
                    ks.seq += 1
                    push(heap, (max_ts, ks.seq, actual))
                if register_cleanup and cleanup != end_of_time and (cleanup, actual) not in timers:
                    timers.add((cleanup, actual))
                    ks.seq += 1
                    push(heap, (cleanup, ks.seq, actual))
                if not heap:
                    continue
                t = heap[0][0]
                cur = evt_sched.get(key)
                if cur is None or t < cur:
                    evt_sched[key] = t
                    scheduler.seq += 1
                    push(evt_due, (t, scheduler.seq, key))
        except Exception as exc:
            note_element(exc, key, ts)
            raise
        finally:
            self.engine.outputs.metrics.num_elements += count
        return True

    def process_to_end(self, key: Any, elements: Sequence[Element]) -> bool:
        engine = self.engine
        if (
            engine.job.plan.one_pass_at_end
            and engine.clocks.watermark == MIN_TIMESTAMP
            and engine.states is not None
            and not engine.states
            and ends_before_end_of_time(
                elements, self.gap + engine.job.allowed_lateness, ordered=True
            )
        ):
            self._sessions_to_end(key, elements, self.gap)
            return True
        return False

    def _sessions_to_end(
        self, key: Any, elements: Sequence[tuple[Any, int | None, Any]], gap: int
    ) -> None:
        """The one-pass form of :meth:`process_to_end` for session windows, elements in
        timestamp order: an element whose window ``[ts, ts + gap)`` intersects the current
        session (touching counts) merges into it, and its value is added to the session's
        contents, as the merging-window set does; otherwise it starts the next session."""
        add = self.engine.add_contents
        contents: dict[int, Any] = {}  # session start -> contents (starts are distinct)
        sessions: list[tuple[int, int]] = []  # (start, end) of the closed sessions
        start = end = 0
        started = False
        count = 0
        ts: Any = None
        try:
            for value, ts, _ in elements:
                count += 1
                if started and ts <= end:
                    if ts + gap > end:
                        end = ts + gap
                else:
                    if started:
                        sessions.append((start, end))
                    start, end, started = ts, ts + gap, True
                add(contents, start, value, ts)
        except Exception as exc:
            note_element(exc, key, ts, [TimeWindow(ts, ts + gap)])
            raise
        finally:
            self.engine.outputs.metrics.num_elements += count
        if started:
            sessions.append((start, end))
        new_tuple = tuple.__new__
        self.engine.evaluator.fire_in_order(
            key, [(new_tuple(TimeWindow, (s, e)), contents[s]) for s, e in sessions]
        )


def _equals_merged(mapping: dict[Any, Any], overlapping: list[Any], start: int, end: int) -> bool:
    """Whether the new window ``[start, end)`` equals the one in-flight window it overlaps,
    and that window is a merged one (its state window is another): Flink's merge finds
    nothing to merge and maps the new window to itself."""
    w = overlapping[0]
    return bool(w[0] == start and w[1] == end and mapping[w] != w)
