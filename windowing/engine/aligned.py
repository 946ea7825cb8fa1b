"""Tumbling and hopping event-time windows with the built-in ``EventTimeTrigger`` and no
evictor (:class:`~windowing.plan.Strategy` ``ALIGNED``): Flink's per-window state, with the
assigner, the trigger and the cleanup timers inlined in a bulk element loop, and a one-pass
form for a key's bounded input (tumbling windows, batch without arrival order)."""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from windowing.engine.generic import GenericStrategy, ends_before_end_of_time
from windowing.engine.keystate import KeyState, count_row
from windowing.engine.notes import note_element
from windowing.engine.strategy import Element, Engine
from windowing.functions.spec import Aggregate
from windowing.time import MAX_TIMESTAMP, MIN_TIMESTAMP
from windowing.windows import TimeWindow

__all__ = ["AlignedStrategy"]

_MISSING: Any = object()


def _identity_none() -> Any:
    return None


class AlignedStrategy(GenericStrategy):
    """Aligned windows of ``(size, slide, offset)``."""

    def __init__(self, engine: Engine, shape: tuple[int, int, int]) -> None:
        super().__init__(engine)
        self.shape = shape

    def process(self, elements: Iterable[Element], states: dict[Any, KeyState]) -> bool:
        """The element loop for tumbling/hopping event-time windows with the built-in
        ``EventTimeTrigger`` and no evictor: the assigner, trigger and cleanup-timer logic of
        :meth:`on_element_plain` inlined (identical behaviour, checked by differential tests)."""
        size, slide, offset = self.shape
        add = self.engine.add_contents
        reducer = self.engine.inline_reducer
        spec = self.engine.job.spec
        agg_add: Callable[[Any, Any], Any] | None = None
        agg_create: Callable[[], Any] = _identity_none
        if isinstance(spec, Aggregate):
            agg_add, agg_create = spec.function.add, spec.function.create_accumulator
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
                    ks = states[key] = KeyState()
                if ts is None:
                    self.engine.job.assigner.assign_windows(
                        value, ts, self.engine.clock
                    )  # raises its error
                    continue
                contents = ks.contents
                timers = ks.evt_timers
                heap = ks.evt_heap
                added = False
                start = ts - (ts - offset) % slide
                lowest = ts - size
                # The windows are the starts in (lowest, start] stepping by slide: they are
                # identified by the last start and the first start.
                first = start - (start - lowest - 1) // slide * slide
                recent = ks.recent
                if (
                    recent is not None
                    and recent[0] == start
                    and recent[1] == first
                    and recent[2] > wm
                    and start > lowest
                ):
                    # Same windows as the key's previous element and none has reached its end:
                    # their end-of-window and cleanup timers are registered already (they fire
                    # only once the watermark passes max_timestamp), so only the contents change.
                    for window in recent[3]:
                        if counting:
                            count_row(ks, window, window not in contents)
                        if reducer is not None:
                            current = contents.get(window, missing)
                            contents[window] = (
                                value if current is missing else reducer(current, value)
                            )
                        elif agg_add is not None:
                            current = contents.get(window, missing)
                            contents[window] = agg_add(
                                value, agg_create() if current is missing else current
                            )
                        else:
                            add(contents, window, value, ts)
                    continue
                last_start = start
                on_time: list[Any] | None = []
                smallest_max_ts = end_of_time
                while start > lowest:
                    end = start + size
                    if end > end_of_time:
                        end = end_of_time + 1
                    max_ts = end - 1
                    cleanup = max_ts + lateness
                    if cleanup >= end_of_time:
                        cleanup = end_of_time
                    if cleanup > wm:
                        added = True
                        window = new_tuple(time_window, (start, end))
                        current = contents.get(window, missing)
                        if counting:
                            count_row(ks, window, current is missing)
                        if reducer is not None:
                            contents[window] = (
                                value if current is missing else reducer(current, value)
                            )
                        elif agg_add is not None:
                            contents[window] = agg_add(
                                value, agg_create() if current is missing else current
                            )
                        else:
                            add(contents, window, value, ts)
                        if max_ts <= wm:
                            on_time = None
                            if not self.engine.emit(key, ks, window, window):  # late firing
                                start -= slide
                                continue  # empty window: no cleanup timer either (Flink)
                        else:
                            if on_time is not None:
                                on_time.append(window)
                                smallest_max_ts = max_ts
                            if current is not missing:
                                # The window got contents while its end was ahead of the
                                # watermark, so its timers are registered and still pending.
                                start -= slide
                                continue
                            entry = (max_ts, window)
                            if entry not in timers:
                                timers.add(entry)
                                ks.seq += 1
                                push(heap, (max_ts, ks.seq, window))
                        if cleanup != max_ts and cleanup != end_of_time:
                            entry = (cleanup, window)
                            if entry not in timers:
                                timers.add(entry)
                                ks.seq += 1
                                push(heap, (cleanup, ks.seq, window))
                    else:
                        on_time = None
                    start -= slide
                ks.recent = (
                    (last_start, first, smallest_max_ts, tuple(on_time)) if on_time else None
                )
                if not added:
                    self.engine.not_added(key, ks, value, ts)
                if heap:
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
        size, slide, offset = self.shape
        engine = self.engine
        if (
            size == slide
            and engine.job.plan.one_pass_at_end
            and engine.clocks.watermark == MIN_TIMESTAMP
            and engine.states is not None
            and not engine.states
            and ends_before_end_of_time(elements, size + engine.job.allowed_lateness, ordered=False)
        ):
            self._tumbling_to_end(key, elements, size, offset)
            return True
        return False

    def _tumbling_to_end(
        self, key: Any, elements: Sequence[tuple[Any, int | None, Any]], size: int, offset: int
    ) -> None:
        """The one-pass form of :meth:`process_to_end` for tumbling windows."""
        add = self.engine.add_contents
        contents: dict[int, Any] = {}  # window start -> contents
        count = 0
        ts: int | None = None
        start = 0
        adding = False  # the error came from the function, while adding to window ``start``
        try:
            for value, ts, _ in elements:
                count += 1
                start = ts - (ts - offset) % size  # type: ignore[operator]
                adding = True
                add(contents, start, value, ts)
                adding = False
        except Exception as exc:
            note_element(exc, key, ts, [TimeWindow(start, start + size)] if adding else None)
            raise
        finally:
            self.engine.outputs.metrics.num_elements += count
        # Fire in order of max_timestamp (no end is clamped: _ends_before_end_of_time).
        new_tuple = tuple.__new__
        self.engine.evaluator.fire_in_order(
            key, [(new_tuple(TimeWindow, (s, s + size)), contents[s]) for s in sorted(contents)]
        )
