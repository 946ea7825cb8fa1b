"""The generic strategy: Flink's ``WindowOperator`` / ``EvictingWindowOperator``, element by
element, for any assigner, trigger, evictor and function. The reference for every other
strategy (their differential tests compare them with this one).

With the built-in ``EventTimeTrigger`` its calls are inlined (``inline_timers``): identical
behaviour, checked by the differential tests.
"""

from __future__ import annotations

import heapq
import operator
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from windowing.engine.keystate import KeyState, count_row, merge_row_counts, register_timer
from windowing.engine.merging import MergingWindowSet
from windowing.engine.notes import note_element, note_window
from windowing.engine.strategy import Element, Engine, WindowStrategy
from windowing.records import WindowResult
from windowing.state import merge_namespaces
from windowing.time import MAX_TIMESTAMP, MIN_TIMESTAMP
from windowing.triggers.base import TriggerResult
from windowing.triggers.event_time import EventTimeTrigger

__all__ = ["GenericStrategy", "ends_before_end_of_time"]

_MISSING: Any = object()
_CONTINUE = TriggerResult.CONTINUE
_FIRE = TriggerResult.FIRE


class GenericStrategy(WindowStrategy):
    """Flink's operator, element by element (:class:`~windowing.plan.Strategy` ``GENERIC``);
    the base of the strategies that keep per-window state."""

    def __init__(self, engine: Engine) -> None:
        super().__init__(engine)
        self.inline_timers = engine.job.plan.inline_event_timers

    def event_timer_firing(self) -> Callable[[Any, KeyState, int], None]:
        return self.fire_event_timers_fast if self.inline_timers else self.fire_event_timers

    def add_element(self, key: Any, ks: KeyState, value: Any, timestamp: int | None) -> bool:
        engine = self.engine
        windows: Any = None
        try:
            windows = engine.job.assigner.assign_windows(value, timestamp, engine.clock)
            if engine.job.is_merging:
                return self.on_element_merging(key, ks, value, timestamp, windows)
            return self.on_element_plain(key, ks, value, timestamp, windows)
        except Exception as exc:
            note_element(exc, key, timestamp, windows)
            raise

    def on_element_plain(
        self, key: Any, ks: KeyState, value: Any, timestamp: int | None, windows: Iterable[Any]
    ) -> bool:
        added = False
        contents = ks.contents
        add = self.engine.add_contents
        trigger = self.engine.job.trigger
        ctx = self.engine.ctx
        ctx.key, ctx.ks = key, ks
        is_event_time = self.engine.job.is_event_time
        lateness = self.engine.job.allowed_lateness
        wm = self.engine.clocks.watermark
        fast_event_trigger = type(trigger) is EventTimeTrigger
        counting = self.engine.count_rows
        for window in windows:
            max_ts = window.max_timestamp()
            if is_event_time:
                cleanup = max_ts + lateness
                if cleanup >= MAX_TIMESTAMP:
                    cleanup = MAX_TIMESTAMP
                if cleanup <= wm:
                    continue  # the window is late
            else:
                cleanup = max_ts
            added = True
            if counting:
                count_row(ks, window, window not in contents)
            add(contents, window, value, timestamp)
            if fast_event_trigger:
                # EventTimeTrigger.on_element, inlined (identical behaviour).
                if max_ts <= wm:
                    result = _FIRE
                else:
                    result = _CONTINUE
                    register_timer(ks.evt_timers, ks.evt_heap, ks, max_ts, window)
            else:
                ctx.window = window
                result = trigger.on_element(value, timestamp, window, ctx)
            if result is not _CONTINUE:
                if result.is_fire() and not self.engine.emit(key, ks, window, window):
                    continue
                if result.is_purge():
                    contents.pop(window, None)
            if cleanup != MAX_TIMESTAMP:
                if is_event_time:
                    register_timer(ks.evt_timers, ks.evt_heap, ks, cleanup, window)
                else:
                    register_timer(ks.proc_timers, ks.proc_heap, ks, cleanup, window)
        return added

    def on_element_merging(
        self, key: Any, ks: KeyState, value: Any, timestamp: int | None, windows: Iterable[Any]
    ) -> bool:
        added = False
        mapping = ks.merging
        assert mapping is not None
        windows_set = MergingWindowSet(self.engine.job.assigner, mapping)  # type: ignore[arg-type]

        def merge(result: Any, merged: list[Any], state: Any, merged_states: list[Any]) -> None:
            self.on_merge(key, ks, result, merged, state, merged_states)

        ctx = self.engine.ctx
        fast_event_trigger = self.inline_timers
        for window in windows:
            actual = windows_set.add_window(window, merge)
            if self.engine.is_window_late(actual):
                mapping.pop(actual, None)  # retire
                continue
            added = True
            state_window = mapping.get(actual)
            if state_window is None:
                msg = f"Window {actual!r} is not in the in-flight window set"
                raise RuntimeError(msg)
            if self.engine.count_rows:
                count_row(ks, state_window, state_window not in ks.contents)
            self.engine.add_contents(ks.contents, state_window, value, timestamp)
            if fast_event_trigger:
                # EventTimeTrigger.on_element, inlined (identical behaviour).
                max_ts = actual.max_timestamp()
                if max_ts > self.engine.clocks.watermark:
                    register_timer(ks.evt_timers, ks.evt_heap, ks, max_ts, actual)
                    self.engine.register_cleanup_timer(ks, actual)
                    continue
                result = _FIRE
            else:
                ctx.key, ctx.ks, ctx.window = key, ks, actual
                result = self.engine.job.trigger.on_element(value, timestamp, actual, ctx)
            if result.is_fire() and not self.engine.emit(key, ks, actual, state_window):
                continue
            if result.is_purge():
                ks.contents.pop(state_window, None)
            self.engine.register_cleanup_timer(ks, actual)
        if windows_set.orphaned:
            self.engine.outputs.metrics.num_orphaned_state_windows += windows_set.orphaned
        return added

    def on_merge(
        self,
        key: Any,
        ks: KeyState,
        merge_result: Any,
        merged_windows: list[Any],
        state_window: Any,
        merged_state_windows: list[Any],
    ) -> None:
        if self.engine.job.is_event_time:
            if (
                merge_result.max_timestamp() + self.engine.job.allowed_lateness
                <= self.engine.clocks.watermark
            ):
                msg = (
                    "The end timestamp of an event-time window cannot become earlier than the "
                    "current watermark by merging. Current watermark: "
                    f"{self.engine.clocks.watermark} "
                    f"window: {merge_result!r}"
                )
                raise RuntimeError(msg)
        elif merge_result.max_timestamp() <= self.engine.clocks.processing_time:
            msg = (
                "The end timestamp of a processing-time window cannot become earlier than the "
                f"current processing time by merging. Current processing time: "
                f"{self.engine.clocks.processing_time} window: {merge_result!r}"
            )
            raise RuntimeError(msg)
        ctx = self.engine.ctx
        ctx.key, ctx.ks, ctx.window = key, ks, merge_result
        ctx.merged_windows = merged_windows
        try:
            self.engine.job.trigger.on_merge(merge_result, ctx)
        finally:
            ctx.merged_windows = []
        for m in merged_windows:
            ctx.window = m
            self.engine.job.trigger.clear(m, ctx)
            self.engine.delete_cleanup_timer(ks, m)
        if merged_state_windows:
            merge_values = self.engine.merge_values
            assert merge_values is not None
            merge_row_counts(ks, state_window, merged_state_windows)
            merge_namespaces(ks.contents, state_window, merged_state_windows, merge_values)

    def rows_in(self, ks: KeyState, window: Any, namespace: Any) -> int | None:
        if not self.engine.count_rows:
            return None
        if namespace not in ks.contents:
            return 0
        counts = ks.row_counts
        return None if counts is None else counts.get(namespace)

    def state_window(self, ks: KeyState, window: Any) -> Any:
        if ks.merging is None:
            return window
        return ks.merging.get(window)

    def on_event_time(self, key: Any, ks: KeyState, time: int, window: Any) -> None:
        """An event-time timer of ``key`` fired (Flink ``onEventTime``)."""
        self.on_timer(key, ks, time, window, event_time=True)

    def on_processing_time(self, key: Any, ks: KeyState, time: int, window: Any) -> None:
        """A processing-time timer of ``key`` fired (Flink ``onProcessingTime``)."""
        self.on_timer(key, ks, time, window, event_time=False)

    def on_timer(self, key: Any, ks: KeyState, time: int, window: Any, *, event_time: bool) -> None:
        """A timer of ``key`` fired: the trigger decides (a trigger that raises counts as
        ``CONTINUE`` when errors are dead-lettered), then the window's cleanup timer clears
        its state."""
        state_window = self.state_window(ks, window)
        if state_window is None:
            return  # a timer of a window that was merged away
        engine = self.engine
        ctx = engine.ctx
        ctx.key, ctx.ks, ctx.window = key, ks, window
        trigger = engine.job.trigger
        try:
            if event_time:
                result = trigger.on_event_time(time, window, ctx)
            else:
                result = trigger.on_processing_time(time, window, ctx)
        except Exception as exc:
            if not engine.dead_letter(exc, key, window):
                raise
            result = _CONTINUE
        if engine.pane_tracker is not None:
            # the clock reached this timer: its firing's time (pane info)
            engine.clocks.timer_time, engine.clocks.timer_event_time = time, event_time
            try:
                self.after_timer(key, ks, window, state_window, result)
            finally:
                engine.clocks.timer_time = None
        else:
            self.after_timer(key, ks, window, state_window, result)
        if engine.job.is_event_time == event_time and time == engine.cleanup_time(window):
            self.clear_all_state(key, ks, window, state_window)

    def after_timer(
        self, key: Any, ks: KeyState, window: Any, state_window: Any, result: TriggerResult
    ) -> None:
        if result is _CONTINUE:
            return
        if result.is_fire():
            self.engine.emit(key, ks, window, state_window)
        if result.is_purge():
            ks.contents.pop(state_window, None)

    def clear_all_state(self, key: Any, ks: KeyState, window: Any, state_window: Any) -> None:
        ks.contents.pop(state_window, None)
        if ks.timeline is not None:
            ks.timeline.live.discard(window.start)
        ctx = self.engine.ctx
        ctx.key, ctx.ks, ctx.window = key, ks, window
        try:
            self.engine.job.trigger.clear(window, ctx)
            wf = self.engine.pwf
            if wf is not None:
                ctx.window = window
                wf.clear(self.engine.pctx)
        except Exception as exc:
            if not self.engine.dead_letter(exc, key, window):
                raise
        finally:
            if ks.merging is not None:
                ks.merging.pop(window, None)

    def fire_event_timers(self, key: Any, ks: KeyState, upto: int) -> None:
        heap, live = ks.evt_heap, ks.evt_timers
        if self.inline_timers:
            self.fire_event_timers_fast(key, ks, upto)
            return
        while heap and heap[0][0] <= upto:
            time, _, window = heapq.heappop(heap)
            entry = (time, window)
            if entry not in live:
                continue
            live.remove(entry)
            self.on_event_time(key, ks, time, window)
        if not live:
            heap.clear()

    def fire_event_timers_fast(self, key: Any, ks: KeyState, upto: int) -> None:
        """``_fire_event_timers`` for a non-merging event-time assigner with the built-in
        ``EventTimeTrigger``: the trigger's ``on_event_time`` and ``clear`` inlined."""
        heap, live = ks.evt_heap, ks.evt_timers
        contents = ks.contents
        mapping = ks.merging
        lateness = self.engine.job.allowed_lateness
        pwf = self.engine.pwf
        direct = self.engine.direct_result
        append = self.engine.outputs.output.append
        new_tuple = tuple.__new__
        result_type = WindowResult
        panes = self.engine.pane_tracker
        pop = heapq.heappop
        fired = 0
        while heap and heap[0][0] <= upto:
            time, _, window = pop(heap)
            entry = (time, window)
            if entry not in live:
                continue
            live.remove(entry)
            if mapping is None:
                state_window = window
            else:
                state_window = mapping.get(window)
                if state_window is None:
                    continue  # a timer of a window that was merged away
            max_ts = window.max_timestamp()
            if time == max_ts:  # EventTimeTrigger.on_event_time -> FIRE
                value = contents.get(state_window, _MISSING)
                if value is not _MISSING:
                    if direct is None:
                        self.engine.emit_contents(key, ks, window, state_window, value)
                    else:
                        try:
                            value = direct(value)
                        except Exception as exc:
                            note_window(exc, window, key)
                            raise
                        if value is not None:  # a None result is an empty window (Flink)
                            fired += 1
                            pane = None if panes is None else panes.next(ks, window)
                            append(new_tuple(result_type, (key, window, value, max_ts, pane)))
                        else:
                            self.engine.null_results(key, (window,))
            cleanup = max_ts + lateness
            if cleanup >= MAX_TIMESTAMP:
                cleanup = MAX_TIMESTAMP
            if time == cleanup:
                contents.pop(state_window, None)
                live.discard((max_ts, window))  # EventTimeTrigger.clear
                if pwf is not None:
                    ctx = self.engine.ctx
                    ctx.key, ctx.ks, ctx.window = key, ks, window
                    try:
                        pwf.clear(self.engine.pctx)
                    except Exception as exc:
                        if not self.engine.dead_letter(exc, key, window):
                            raise
                if mapping is not None:
                    mapping.pop(window, None)
        self.engine.outputs.metrics.num_windows_fired += fired
        if not live:
            heap.clear()

    def fire_processing_timers(self, key: Any, ks: KeyState, upto: int) -> None:
        heap, live = ks.proc_heap, ks.proc_timers
        while heap and heap[0][0] <= upto:
            time, _, window = heapq.heappop(heap)
            entry = (time, window)
            if entry not in live:
                continue
            live.remove(entry)
            self.on_processing_time(key, ks, time, window)
        if not live:
            heap.clear()


def ends_before_end_of_time(elements: Sequence[Element], span: int, *, ordered: bool) -> bool:
    """Whether the elements all have timestamps above ``MIN_TIMESTAMP`` (so none can be late
    before a watermark exists), in non-decreasing order when ``ordered``, and every window (at
    most ``span`` ms from an element's timestamp to its cleanup time) is cleaned up before the
    end of time: at ``MAX_TIMESTAMP`` the operator keeps the state of a window whose cleanup
    time saturates there, as Flink does."""
    stamps = list(map(operator.itemgetter(1), elements))
    if not stamps:
        return True
    try:
        if ordered and not all(map(operator.le, stamps, stamps[1:])):
            return False
        return bool(min(stamps) > MIN_TIMESTAMP and max(stamps) < MAX_TIMESTAMP - span)
    except TypeError:  # a None timestamp: the generic path raises the assigner's error
        return False
