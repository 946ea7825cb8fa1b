"""KIP-450 sliding windows (``SlidingDistinctAssigner``) from the key's record timeline.

The strategies of :class:`~windowing.plan.Strategy` ``KAFKA_SLIDING`` (Kafka Streams' own
algorithm and window store, :mod:`windowing.engine.kafka`), ``TIMELINE`` (windows created from
the timeline, contents kept per window), ``TIMELINE_LAZY`` (contents computed from the
timeline when a window fires) and ``TIMELINE_DERIVED`` (the windows to fire derived from the
timeline as well, :mod:`windowing.engine.timeline_derived`). The window rules are KIP-450's
(``docs/sliding-distinct.md``); lateness and cleanup are Flink's (:mod:`windowing.rules`).

The key's timeline is forgotten by one expiry timer per key, at ``last record + size +
lateness + 3``: the record's right window ``[t + 1, t + 1 + size]`` ends (inclusive) at
``t + 1 + size``, its cleanup timer fires at that plus the lateness, and one more ms keeps the
expiry after every timer of that watermark advance.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable
from typing import Any

import windowing.sliding as sliding_module
from windowing.assigners.sliding_distinct import left_window, right_window
from windowing.engine.evaluation import MISSING
from windowing.engine.exchange import KafkaWindows, export_kafka, import_kafka
from windowing.engine.generic import GenericStrategy
from windowing.engine.kafka import KafkaSliding
from windowing.engine.keystate import KeyState, register_timer
from windowing.engine.notes import note_element, note_window
from windowing.engine.strategy import Element, Engine
from windowing.engine.timeline_derived import DerivedSliding
from windowing.functions.spec import Aggregate
from windowing.records import WindowResult
from windowing.sliding import Timeline, TimelineExpiry
from windowing.time import MAX_TIMESTAMP
from windowing.triggers.base import TriggerResult
from windowing.triggers.event_time import EventTimeTrigger
from windowing.windows import TimeWindow

__all__ = [
    "DerivedTimelineStrategy",
    "KafkaSlidingStrategy",
    "LazyTimelineStrategy",
    "TimelineStrategy",
]

_MISSING: Any = MISSING  # what the evaluator takes for "no contents"
_SLIDING_EMPTY: Any = sliding_module._MISSING
_CONTINUE = TriggerResult.CONTINUE
_EXPIRY = TimelineExpiry()


class KafkaSlidingStrategy(GenericStrategy):
    """``KAFKA_SLIDING``: KIP-450 windows of ``size`` with Kafka Streams' own algorithm and
    window store (:class:`~windowing.engine.kafka.KafkaSliding`); the store is forgotten by one
    expiry timer per key."""

    def __init__(self, engine: Engine, size: int) -> None:
        super().__init__(engine)
        self.size = size
        self.kafka = KafkaSliding(engine, size, engine.job.allowed_lateness)

    def on_event_time(self, key: Any, ks: KeyState, time: int, window: Any) -> None:
        if type(window) is TimelineExpiry:
            self.kafka.expire(self.engine, ks, time)
            return
        super().on_event_time(key, ks, time, window)

    def live_windows(self, ks: KeyState) -> list[Any] | None:
        """The key's windows in Kafka's window store."""
        store = ks.kafka
        return [] if store is None else [self.kafka.window_at(s) for s in store.starts]

    def rows_in(self, ks: KeyState, window: Any, namespace: Any) -> int | None:
        return None  # a window's aggregate starts from its neighbours': not counted

    def export_kafka(self, ks: KeyState) -> KafkaWindows | None:
        return export_kafka(ks, size=self.size, lateness=self.kafka.grace)

    def import_kafka(self, ks: KeyState, windows: KafkaWindows) -> bool:
        import_kafka(ks, windows, size=self.size, lateness=self.kafka.grace)
        return True

    def add_element(self, key: Any, ks: KeyState, value: Any, ts: int | None) -> bool:
        if ts is None:
            self.engine.job.assigner.assign_windows(
                value, ts, self.engine.clock
            )  # raises its error
            return False
        return self.kafka.add(self.engine, key, ks, value, ts)

    def process(self, elements: Iterable[Element], states: dict[Any, KeyState]) -> bool:
        _process_one_by_one(self, elements, states)
        return True


class TimelineStrategy(GenericStrategy):
    """``TIMELINE``: KIP-450 windows of ``size`` (inclusive ends) created from the key's
    record timeline, each window's contents kept per window (any trigger or evictor).

    :meth:`add_element` is the steps every timeline strategy takes; the lazy ones
    (:class:`LazyTimelineStrategy`, :class:`DerivedTimelineStrategy`) change how a record in
    order is taken, how the timeline is kept and which windows a record touches."""

    def __init__(self, engine: Engine, size: int) -> None:
        super().__init__(engine)
        self.size = size
        self.fires_at_end = type(engine.job.trigger) is EventTimeTrigger

    def rows_in(self, ks: KeyState, window: Any, namespace: Any) -> int | None:
        return None  # a window's contents start from the timeline's records: not counted

    def on_event_time(self, key: Any, ks: KeyState, time: int, window: Any) -> None:
        if type(window) is TimelineExpiry:
            self.expire_timeline(ks, time)
            return
        super().on_event_time(key, ks, time, window)

    def live_windows(self, ks: KeyState) -> list[Any] | None:
        """The key's windows that exist and are not cleaned up (by start on the timeline)."""
        size = self.size
        timeline = ks.timeline
        if timeline is None:
            return []
        return [
            TimeWindow(s, timeline.max_timestamp_of(s, size) + 1) for s in sorted(timeline.live)
        ]

    def num_event_time_timers(self, ks: KeyState) -> int:
        return len(ks.evt_timers) + (ks.timeline is not None and ks.timeline.due is not None)

    def add_element(self, key: Any, ks: KeyState, value: Any, ts: int | None) -> bool:
        """Process a record for KIP-450 sliding windows (Kafka's algorithm on the timeline).

        The record is added to the key's timeline; every window containing it is created
        (contents from the timeline) or updated, and so is its own right window when a later
        record makes it non-empty. The trigger's ``on_element`` runs for each of these windows
        (including the right window, which does not contain the record).
        """
        if ts is None:
            self.engine.job.assigner.assign_windows(
                value, ts, self.engine.clock
            )  # raises its error
            return False
        size = self.size
        lateness = self.engine.job.allowed_lateness
        wm = self.engine.clocks.watermark
        timeline = ks.timeline
        if timeline is None:
            timeline = ks.timeline = Timeline(wm)
        elif timeline.upto < wm:
            # The key's windows due by now have fired: any window ending by wm that this
            # record creates or changes is a late firing, handled here.
            timeline.upto = wm
        stamps = timeline.stamps
        if stamps and stamps[0] < wm - size - lateness - 1:
            timeline.expire(wm - size - lateness - 1, size)
        if self._took_in_order(ks, timeline, value, ts):
            return True
        # The latest-ending window that contains ts decides whether the record is added to
        # any window: left windows of timestamps in [ts, ts + size], right windows of
        # timestamps in [ts - size - 1, ts - 1].
        k = bisect_left(stamps, ts)
        j = bisect_right(stamps, ts + size)
        latest_end = stamps[j - 1] if j > k else ts
        if k > 0 and stamps[k - 1] >= ts - size - 1:
            latest_end = max(latest_end, stamps[k - 1] + 1 + size)
        in_some_window = min(latest_end + lateness, MAX_TIMESTAMP) > wm
        if not in_some_window:
            # Kafka drops such a record; only its right window may still come into existence.
            exists = k < len(stamps) and stamps[k] == ts
            n = k + 1 if exists else k
            following = stamps[n] if n < len(stamps) else None
            if following is None or following > ts + 1 + size:
                return False
            # Kafka drops the record altogether once its right window ends at or before the
            # close time (stream time - grace; the watermark is stream time - 1): one ms
            # before that window itself counts as closed.
            if min(ts + size + lateness, MAX_TIMESTAMP) <= wm:
                return False
            self.engine.partials.add_timestamp(timeline, ts)
        else:
            self.engine.partials.add(timeline, ts, value)
        self._keep(ks, timeline)
        return self._touch_windows(key, ks, value, ts, timeline, in_some_window)

    def _took_in_order(self, ks: KeyState, timeline: Timeline, value: Any, ts: int) -> bool:
        """Whether a record later than every other of the key was taken on a fast path (the
        lazy strategies'); nothing is here."""
        return False

    def _keep(self, ks: KeyState, timeline: Timeline) -> None:
        """Keep the timeline while a window of its records can still change: its expiry
        timer."""
        if timeline.expiry_at is None:
            self._schedule_expiry(ks, timeline)

    def _touch_windows(
        self, key: Any, ks: KeyState, value: Any, ts: int, timeline: Timeline, in_window: bool
    ) -> bool:
        """Create or update the windows containing the record at ``ts`` (and its own right
        window), each with its trigger's ``on_element``; whether the record is in a window."""
        size, lateness, wm = (
            self.size,
            self.engine.job.allowed_lateness,
            self.engine.clocks.watermark,
        )
        stamps = timeline.stamps
        # Windows containing ts: left windows of timestamps in [ts, ts + size] and right
        # windows of timestamps in [ts - size - 1, ts - 1] (ts itself makes those non-empty).
        i, j = timeline.span(ts, ts + size)
        windows = {left_window(u, size) for u in stamps[i:j]}
        i2 = bisect_left(stamps, ts - size - 1)
        windows.update(right_window(q, size) for q in stamps[i2:i])
        ordered = sorted(windows)
        # stamps[i] is ts; the record's own right window exists when the next timestamp is in it
        if i + 1 < len(stamps) and stamps[i + 1] <= ts + 1 + size:
            ordered.append(right_window(ts, size))
        added = False
        ctx = self.engine.ctx
        trigger = self.engine.job.trigger
        contents = ks.contents
        live = timeline.live
        for window in ordered:
            max_ts = window.end - 1
            cleanup = max_ts + lateness
            if cleanup >= MAX_TIMESTAMP:
                cleanup = MAX_TIMESTAMP
            if cleanup <= wm:
                continue  # a late window
            contains = window.start <= ts <= max_ts
            if window.start in live:
                if not contains:
                    continue
                self.engine.add_contents(contents, window, value, ts)
            else:
                initial = self.engine.partials.contents(timeline, window.start, max_ts)
                if initial is _SLIDING_EMPTY:
                    continue
                live.add(window.start)
                contents[window] = initial
            if contains:
                added = True
            ctx.key, ctx.ks, ctx.window = key, ks, window
            result = trigger.on_element(value, ts, window, ctx)
            if result is not _CONTINUE:
                if result.is_fire() and not self.engine.emit(key, ks, window, window):
                    continue
                if result.is_purge():
                    contents.pop(window, None)
            self.engine.register_cleanup_timer(ks, window)
        return added

    def process(self, elements: Iterable[Element], states: dict[Any, KeyState]) -> bool:
        _process_one_by_one(self, elements, states)
        return True

    def _schedule_expiry(self, ks: KeyState, timeline: Timeline) -> None:
        """One timer per key forgets the timeline once the watermark is past every window of
        its latest record (re-armed while records keep coming)."""
        size = self.size
        assert size is not None
        if timeline.stamps:
            expiry = timeline.stamps[-1] + size + self.engine.job.allowed_lateness + 3
            if expiry < MAX_TIMESTAMP:
                register_timer(ks.evt_timers, ks.evt_heap, ks, expiry, _EXPIRY)
                timeline.expiry_at = expiry

    def expire_timeline(self, ks: KeyState, time: int) -> None:
        """The expiry timer at ``time`` fired: forget records whose windows all have cleanup
        times before it (later timers of the same watermark advance have not fired yet)."""
        timeline = ks.timeline
        if timeline is None:
            return
        size = self.size
        assert size is not None
        timeline.expiry_at = None
        timeline.expire(time - size - self.engine.job.allowed_lateness - 2, size)
        if timeline.is_empty():
            ks.timeline = None
        else:
            self._schedule_expiry(ks, timeline)


class LazyTimelineStrategy(TimelineStrategy):
    """``TIMELINE_LAZY``: as :class:`TimelineStrategy` with the built-in end-of-window triggers
    (``EventTimeTrigger`` / ``OnWindowCloseTrigger``) and no evictor: windows hold no contents,
    they are computed from the timeline when a window fires, and a record in order (later than
    every other and than the watermark) takes a fast path."""

    #: Whether the windows to fire are derived from the timeline (no timer per window).
    derives_windows = False

    def __init__(self, engine: Engine, size: int) -> None:
        super().__init__(engine, size)
        engine.evaluator.window_contents = self.contents

    def event_timer_firing(self) -> Callable[[Any, KeyState, int], None]:
        return self._fire_lazy_timers

    def fire_event_timers(self, key: Any, ks: KeyState, upto: int) -> None:
        self._fire_lazy_timers(key, ks, upto)

    def _took_in_order(self, ks: KeyState, timeline: Timeline, value: Any, ts: int) -> bool:
        stamps = timeline.stamps
        size, lateness = self.size, self.engine.job.allowed_lateness
        if (
            stamps
            and stamps[-1] < ts
            and self.engine.clocks.watermark < ts
            and ts + size + lateness + 3 < MAX_TIMESTAMP
        ):
            self._in_order(ks, timeline, value, ts, size, lateness)
            return True
        return False

    def _touch_windows(
        self, key: Any, ks: KeyState, value: Any, ts: int, timeline: Timeline, in_window: bool
    ) -> bool:
        self._lazy_windows(key, ks, value, ts, timeline, in_window)
        return in_window

    def _in_order(
        self, ks: KeyState, timeline: Timeline, value: Any, ts: int, size: int, lateness: int
    ) -> None:
        """A record later than every record of the key and than the watermark (the common
        case), for lazy sliding-distinct windows: it creates its left window and possibly the
        previous record's right window, neither late nor due; nothing else changes."""
        stamps = timeline.stamps
        previous = stamps[-1]
        stamps.append(ts)
        timeline.partials.append(self.engine.partials.first(value))
        live = timeline.live
        timers = ks.evt_timers
        heap = ks.evt_heap
        push = heapq.heappush
        on_end = self.fires_at_end
        new_tuple = tuple.__new__
        windows = [new_tuple(TimeWindow, (ts - size, ts + 1))]
        if ts <= previous + 1 + size and previous + 1 != ts - size:
            windows.append(new_tuple(TimeWindow, (previous + 1, previous + 2 + size)))
        for window in windows:
            if window[0] in live:
                continue
            live.add(window[0])
            max_ts = window[1] - 1
            if on_end and (max_ts, window) not in timers:
                timers.add((max_ts, window))
                ks.seq += 1
                push(heap, (max_ts, ks.seq, window))
            cleanup = max_ts + lateness
            if (cleanup, window) not in timers:
                timers.add((cleanup, window))
                ks.seq += 1
                push(heap, (cleanup, ks.seq, window))
        if timeline.expiry_at is None:
            self._schedule_expiry(ks, timeline)

    def _fire_lazy_timers(self, key: Any, ks: KeyState, upto: int) -> None:
        """Event timers of lazy sliding-distinct windows: ``EventTimeTrigger`` /
        ``OnWindowCloseTrigger`` inlined, contents computed from the timeline."""
        heap, live = ks.evt_heap, ks.evt_timers
        lateness = self.engine.job.allowed_lateness
        on_end = self.fires_at_end  # EventTimeTrigger fires at the window end
        pwf = self.engine.pwf
        pop = heapq.heappop
        direct = self.engine.direct_result
        append = self.engine.outputs.output.append
        new_tuple = tuple.__new__
        result_type = WindowResult
        panes = self.engine.pane_tracker
        fired = 0
        partials = self.engine.partials
        range_aggregate = None if partials.kind == "values" else partials.aggregate_range
        while heap and heap[0][0] <= upto:
            time, _, window = pop(heap)
            entry = (time, window)
            if entry not in live:
                continue
            live.remove(entry)
            if type(window) is TimelineExpiry:
                self.expire_timeline(ks, time)
                continue
            max_ts = window[1] - 1
            if time == max_ts if on_end else time >= max_ts:
                timeline = ks.timeline
                if timeline is None:
                    contents = _MISSING
                elif range_aggregate is not None:
                    contents = range_aggregate(timeline, window[0], max_ts)
                    if contents is _SLIDING_EMPTY:
                        contents = _MISSING
                else:
                    contents = self.contents(ks, window)
                if contents is not _MISSING:
                    if direct is None:
                        self.engine.emit_contents(key, ks, window, window, contents)
                    else:
                        try:
                            result = direct(contents)
                        except Exception as exc:
                            note_window(exc, window, key)
                            raise
                        if result is not None:
                            fired += 1
                            pane = None if panes is None else panes.next(ks, window)
                            append(new_tuple(result_type, (key, window, result, max_ts, pane)))
                        else:
                            self.engine.null_results(key, (window,))
            cleanup = max_ts + lateness
            if cleanup >= MAX_TIMESTAMP:
                cleanup = MAX_TIMESTAMP
            if time == cleanup:
                timeline = ks.timeline
                if timeline is not None:
                    timeline.live.discard(window[0])
                live.discard((max_ts, window))  # EventTimeTrigger.clear
                if pwf is not None:
                    ctx = self.engine.ctx
                    ctx.key, ctx.ks, ctx.window = key, ks, window
                    pwf.clear(self.engine.pctx)
        self.engine.outputs.metrics.num_windows_fired += fired
        if not live:
            heap.clear()

    def _lazy_windows(
        self,
        key: Any,
        ks: KeyState,
        value: Any,
        ts: int,
        timeline: Timeline,
        in_some_window: bool,
    ) -> None:
        """Sliding-distinct windows with the built-in ``EventTimeTrigger`` or
        ``OnWindowCloseTrigger`` and no evictor: windows hold no contents (they are computed
        from the timeline when a window fires), so a record only creates the at most three
        windows it brings into existence: its left window, the previous record's right window
        and its own right window. For every other window containing the record, these triggers'
        ``on_element`` only matters for a late firing (``EventTimeTrigger``, window end already
        behind the watermark)."""
        size = self.size
        assert size is not None
        lateness = self.engine.job.allowed_lateness
        wm = self.engine.clocks.watermark
        stamps = timeline.stamps
        live = timeline.live
        i = bisect_left(stamps, ts)  # stamps[i] == ts
        candidates = []
        if in_some_window:
            candidates.append(left_window(ts, size))
            if i > 0 and ts <= stamps[i - 1] + 1 + size:
                candidates.append(right_window(stamps[i - 1], size))
        if i + 1 < len(stamps) and stamps[i + 1] <= ts + 1 + size:
            candidates.append(right_window(ts, size))
        event_trigger = self.fires_at_end
        derived = self.derives_windows
        late_fired = set()
        if event_trigger and in_some_window and lateness > 0:
            # Existing windows containing ts whose end the watermark passed: late firings.
            for u in stamps[i + 1 : bisect_right(stamps, min(ts + size, wm))]:
                late_fired.add(left_window(u, size))
            for q in stamps[bisect_left(stamps, ts - size - 1) : i]:
                if q + 1 + size <= wm:
                    late_fired.add(right_window(q, size))
        # A left window can be another record's right window: one on_element per window.
        for window in dict.fromkeys(candidates):
            max_ts = window.end - 1
            cleanup = min(max_ts + lateness, MAX_TIMESTAMP)
            if cleanup <= wm:
                continue
            if window.start in live:
                if event_trigger and window.start <= ts <= max_ts:
                    late_fired.add(window)  # EventTimeTrigger.on_element: FIRE if late
                continue
            live.add(window.start)
            late_fired.discard(window)  # one on_element per window and record
            fired = True
            if derived:
                if event_trigger and max_ts <= wm:
                    self.engine.emit(key, ks, window, window)  # EventTimeTrigger: FIRE
                else:
                    timeline.schedule(max_ts if event_trigger else cleanup)
                continue
            if event_trigger:
                if max_ts <= wm:
                    fired = self.engine.emit(key, ks, window, window)  # EventTimeTrigger: FIRE
                else:
                    register_timer(ks.evt_timers, ks.evt_heap, ks, max_ts, window)
            if fired and cleanup != MAX_TIMESTAMP:
                register_timer(ks.evt_timers, ks.evt_heap, ks, cleanup, window)
        for window in sorted(late_fired):
            max_ts = window.end - 1
            if window.start in live and max_ts <= wm < min(max_ts + lateness, MAX_TIMESTAMP):
                self.engine.emit(key, ks, window, window)

    def contents(self, ks: KeyState, window: Any) -> Any:
        timeline = ks.timeline
        if timeline is None:
            return _MISSING
        partials = self.engine.partials
        if partials.kind == "values":
            result = partials.contents(timeline, window.start, window.end - 1)
        else:
            result = partials.aggregate_range(timeline, window.start, window.end - 1)
        return _MISSING if result is _SLIDING_EMPTY else result


class DerivedTimelineStrategy(LazyTimelineStrategy):
    """``TIMELINE_DERIVED``: as :class:`LazyTimelineStrategy` without a process function, the
    windows to fire derived from the timeline as well, with one timer per key
    (:class:`~windowing.engine.timeline_derived.DerivedSliding`)."""

    derives_windows = True

    def __init__(self, engine: Engine, size: int) -> None:
        super().__init__(engine, size)
        self.derived = DerivedSliding(
            size,
            engine.job.allowed_lateness,
            fires_at_end=self.fires_at_end,
            partials=engine.partials,
            result=engine.direct_result,
            result_is_contents=engine.job.plan.direct_result
            and not isinstance(engine.job.spec, Aggregate),
        )

    def event_timer_firing(self) -> Callable[[Any, KeyState, int], None]:
        return self.fire_event_timers

    def fire_event_timers(self, key: Any, ks: KeyState, upto: int) -> None:
        self.derived.fire(self.engine, key, ks, upto)

    def drain_event_time(self, upto: int) -> bool:
        self.derived.drain(self.engine, upto)
        return True

    def _in_order(
        self, ks: KeyState, timeline: Timeline, value: Any, ts: int, size: int, lateness: int
    ) -> None:
        self.derived.add_in_order(timeline, value, ts)

    def _keep(self, ks: KeyState, timeline: Timeline) -> None:
        """The derived windows' one timer per key follows the timeline's latest record."""
        timeline.schedule(
            min(
                timeline.stamps[-1] + self.size + self.engine.job.allowed_lateness + 3,
                MAX_TIMESTAMP,
            )
        )

    def process(self, elements: Iterable[Element], states: dict[Any, KeyState]) -> bool:
        self.derived.process(self.engine, elements, self.add_element)
        return True


def _process_one_by_one(
    strategy: GenericStrategy, elements: Iterable[Element], states: dict[Any, KeyState]
) -> None:
    """``process_element`` for each element, without the per-call overhead."""
    engine = strategy.engine
    count = 0
    ts: int | None = None
    key: Any = None
    try:
        for value, ts, key in elements:
            count += 1
            ks = states.get(key)
            if ks is None:
                ks = states[key] = KeyState()
            if not strategy.add_element(key, ks, value, ts):
                engine.not_added(key, ks, value, ts)
            engine.schedule(key, ks)
    except Exception as exc:
        note_element(exc, key, ts)
        raise
    finally:
        engine.outputs.metrics.num_elements += count
