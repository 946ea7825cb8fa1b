"""The window operator: Flink's ``WindowOperator`` / ``EvictingWindowOperator`` semantics in
pure Python, for every key of a stream.

One :class:`WindowOperator` runs in the test harness, in Spark batch replay and in Spark
Structured Streaming. Everything it keeps for one key lives in one :class:`KeyState` value
(window contents, trigger and function state, timers, the merging-window set), held by a
:class:`StateBackend`, so a runtime can load a key's state once, drive it, and store it once.

Semantics (Flink's, see ``docs/semantics.md``):

* An element is assigned to windows; a window whose cleanup time
  (``max_timestamp + allowed_lateness``, event time only) is ``<=`` the watermark is *late*
  and skipped. An element added to no window goes to the late side output when the element
  itself is late (``timestamp + allowed_lateness <= watermark``), and is counted otherwise.
* The trigger sees every added element and the timers it registered; ``FIRE`` evaluates the
  window function (nothing is emitted for empty contents), ``PURGE`` drops contents only.
* A cleanup timer at the cleanup time (processing-time windows: at ``max_timestamp``) first
  reaches the trigger, then removes contents, trigger state and per-window function state.
  No cleanup timer is set when the cleanup time saturates at ``MAX_TIMESTAMP``.
* Timers are deduplicated per (key, window, time) and fire in time order.
* Merging assigners merge windows through a merging-window set: contents stay in one state
  namespace; trigger state is merged by the trigger's ``on_merge``.
* With an evictor, elements are buffered with timestamps; the evictor runs around the
  function and its evictions are permanent.
* Results carry ``window.max_timestamp()`` as their timestamp.
"""

from __future__ import annotations

import copy
import functools
import heapq
import operator
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import cloudpickle

import windowing.rules as rules
import windowing.sliding as sliding_module
from windowing.assigners.base import MergingWindowAssigner, WindowAssigner
from windowing.assigners.sliding_distinct import SlidingDistinctAssigner, left_window, right_window
from windowing.due import compact, put_back, take_due
from windowing.engine.context import Clock, ProcessContext, WindowContext, check_outputs
from windowing.engine.keystate import (
    InMemoryStateBackend,
    KeyState,
    StateBackend,
    register_timer,
)
from windowing.engine.metrics import OperatorMetrics
from windowing.engine.notes import END_OF_INPUT_NOTE, note_element
from windowing.evictors.base import Evictor
from windowing.functions.base import ProcessWindowFunction
from windowing.functions.spec import (
    Aggregate,
    Apply,
    Fold,
    Process,
    Reduce,
    WindowFunctionSpec,
    as_spec,
)
from windowing.java_order import hash_set_order
from windowing.kip450 import KafkaSliding
from windowing.plan import Plan, Strategy, aligned_shape, plan_operator
from windowing.records import LateElement, OutputTag, WindowResult
from windowing.slicing import SlicedHopping
from windowing.sliding import Partials, Timeline, TimelineExpiry
from windowing.sliding_derived import DerivedSliding
from windowing.state import merge_namespaces
from windowing.time import MAX_TIMESTAMP, MIN_TIMESTAMP, Duration, to_millis
from windowing.triggers.base import Trigger, TriggerResult
from windowing.triggers.event_time import EventTimeTrigger
from windowing.windows import TimestampedValue, TimeWindow

__all__ = [
    "InMemoryStateBackend",
    "KeyState",
    "OperatorMetrics",
    "StateBackend",
    "WindowOperator",
]

_MISSING: Any = object()
_CONTINUE = TriggerResult.CONTINUE
_FIRE = TriggerResult.FIRE


class WindowOperator:
    """Applies an assigner, trigger, optional evictor and window function to a keyed stream.

    Parameters
    ----------
    assigner
        The :class:`~assigners.WindowAssigner`.
    function
        The window function: a reduce callable / ``ReduceFunction``, ``AggregateFunction``,
        ``ProcessWindowFunction``, ``WindowFunction``, or a spec from :mod:`functions`
        (``Reduce``, ``Aggregate``, ``Fold``, ``Process``, ``Apply``).
    window_function
        For a reduce or aggregate: a ``ProcessWindowFunction`` / ``WindowFunction`` that gets
        the incremental result (Flink ``reduce(f, windowFunction)``).
    trigger
        Replaces the assigner's default trigger.
    evictor
        Buffers elements and evicts around the window function.
    allowed_lateness
        How long after a window's end late elements are still added (event time), >= 0.
    late_output_tag
        Emit late elements added to no window to this side output instead of dropping them.
    backend
        Where per-key state lives; an in-memory dict by default.
    slicing
        Whether windows that overlap may share partial results: hopping event-time windows
        with a reduce or aggregate (default trigger, no evictor, no window function) as one
        partial per pane of ``gcd(size, slide)`` (:mod:`windowing.slicing`), and
        sliding-distinct windows with the built-in ``EventTimeTrigger`` or
        ``OnWindowCloseTrigger`` as ranges of the key's record timeline
        (:mod:`windowing.sliding_derived`). Both combine a window's records in time order, not
        in arrival order as Flink and Kafka do. ``None`` (the default): panes only for a
        function that declares ``order_insensitive = True`` (``ReduceFunction``,
        ``AggregateFunction``), whose results are then the same, and never the timeline
        (whose windows are KIP-450's definition, not Kafka's algorithm:
        ``docs/sliding-distinct.md``); ``True``: both, for any reduce or aggregate (an
        opt-in: results of an order-sensitive function follow time order, and a process
        function sees the records in time order); ``False``: never.

    Examples
    --------
    >>> from windowing.assigners import TumblingEventTimeWindows
    >>> op = WindowOperator(TumblingEventTimeWindows(10), lambda a, b: a + b)
    >>> for ts in (1, 5, 12):
    ...     op.process_element(1, ts, key="k")
    >>> op.process_watermark(9)
    >>> op.output
    [WindowResult(key='k', window=TimeWindow(start=0, end=10), value=2, timestamp=9)]
    """

    def __init__(
        self,
        assigner: WindowAssigner[Any, Any],
        function: Any,
        *,
        window_function: Any = None,
        trigger: Trigger[Any, Any] | None = None,
        evictor: Evictor[Any, Any] | None = None,
        allowed_lateness: Duration = 0,
        late_output_tag: OutputTag | None = None,
        backend: StateBackend | None = None,
        slicing: bool | None = None,
    ) -> None:
        if not isinstance(assigner, WindowAssigner):
            msg = f"assigner must be a WindowAssigner, got {type(assigner).__name__} {assigner!r}"
            raise ValueError(msg)
        if trigger is None:
            trigger = assigner.get_default_trigger()
        elif not isinstance(trigger, Trigger):
            msg = f"trigger must be a Trigger, got {type(trigger).__name__} {trigger!r}"
            raise ValueError(msg)
        if evictor is not None and not isinstance(evictor, Evictor):
            msg = f"evictor must be an Evictor, got {type(evictor).__name__} {evictor!r}"
            raise ValueError(msg)
        lateness = to_millis(allowed_lateness, "allowed_lateness")
        if lateness < 0:
            msg = f"allowed_lateness must be >= 0, got {allowed_lateness!r}"
            raise ValueError(msg)
        self._sliding_size: int | None = None
        if isinstance(assigner, SlidingDistinctAssigner):
            if lateness and assigner.grace and lateness != assigner.grace:
                msg = (
                    f"allowed_lateness={allowed_lateness!r} differs from the grace "
                    f"{assigner.grace} ms of {assigner!r}; set one of them"
                )
                raise ValueError(msg)
            lateness = max(lateness, assigner.grace)
            self._sliding_size = assigner.size
        if slicing is not None and not isinstance(slicing, bool):
            msg = f"slicing must be a bool or None, got {type(slicing).__name__} {slicing!r}"
            raise ValueError(msg)
        spec = as_spec(function, window_function)
        self.plan: Plan = plan_operator(assigner, trigger, evictor, spec, lateness, slicing)
        strategy = self.plan.strategy
        self.slicing = strategy in _SHARED_PARTIALS
        # Lazy sliding-distinct windows: contents computed from the timeline at firing time.
        self._sliding_lazy = strategy in (Strategy.TIMELINE_LAZY, Strategy.TIMELINE_DERIVED)
        self._sliding_fires_on_element = type(trigger) is EventTimeTrigger
        if late_output_tag is not None and not isinstance(late_output_tag, OutputTag):
            msg = f"late_output_tag must be an OutputTag, got {late_output_tag!r}"
            raise ValueError(msg)
        self.is_merging = isinstance(assigner, MergingWindowAssigner)
        if self.is_merging and not trigger.can_merge():
            msg = (
                f"trigger {trigger!r} cannot merge, but assigner {assigner!r} merges windows; "
                "a merging window assigner needs a trigger whose can_merge() is True"
            )
            raise ValueError(msg)
        if self.is_merging and isinstance(spec, Fold):
            msg = f"fold cannot be used with the merging window assigner {assigner!r}"
            raise ValueError(msg)

        self.assigner = assigner
        self.trigger = trigger
        self.evictor = evictor
        self.spec: WindowFunctionSpec = spec
        self.allowed_lateness = lateness
        self.late_output_tag = late_output_tag
        self.is_event_time = assigner.is_event_time()
        self.backend: StateBackend = backend if backend is not None else InMemoryStateBackend()
        # Direct dict access for the in-memory backend (hot path).
        self._states: dict[Any, KeyState] | None = (
            self.backend.states if isinstance(self.backend, InMemoryStateBackend) else None
        )

        self.watermark = MIN_TIMESTAMP
        self.processing_time = 0
        self.output: list[WindowResult] = []
        self.side_outputs: dict[OutputTag, list[Any]] = {}
        self.metrics = OperatorMetrics()

        self._clock = Clock(self)
        self._ctx = WindowContext(self)
        self._pctx = ProcessContext(self._ctx)
        # Scheduling across keys for the in-memory driver: (time, seq, key) heaps.
        self._evt_due: list[tuple[int, int, Any]] = []
        self._proc_due: list[tuple[int, int, Any]] = []
        self._evt_sched: dict[Any, int] = {}
        self._proc_sched: dict[Any, int] = {}
        self._due_seq = 0
        # Size of the event-time heap above which its dead entries are dropped (windowing.due).
        self._evt_compact_at = _COMPACT_MIN
        self._setup_contents()
        self._pwf = self._process_function()
        # Lazy sliding-distinct windows without a process function need no per-window
        # timers: the windows to fire are derived from the timeline (one timer per key).
        self._sliding_derived = strategy is Strategy.TIMELINE_DERIVED
        self._fast_event_timers = self.plan.inline_event_timers
        self._partials = self._make_partials()
        shape = aligned_shape(assigner, trigger, evictor)
        # Inlined element loop for aligned event-time windows with the default trigger.
        self._aligned = shape if strategy is Strategy.ALIGNED else None
        self._inline_reducer: Callable[[Any, Any], Any] | None = (
            spec.reducer() if isinstance(spec, Reduce) and evictor is None else None
        )
        self._session_gap: int | None = (
            assigner.gap  # type: ignore[attr-defined]
            if strategy is Strategy.SESSIONS
            else None
        )
        # Incremental results emitted as they are (no window function, no evictor).
        self._direct_result: Callable[[Any], Any] | None = None
        if self.plan.direct_result:
            if isinstance(spec, Aggregate):
                self._direct_result = spec.function.get_result
            else:
                self._direct_result = _identity
        # Sliding-distinct windows derived from the timeline (windowing.sliding_derived).
        self._derived: DerivedSliding | None = None
        if self._sliding_derived:
            assert self._sliding_size is not None
            self._derived = DerivedSliding(
                self._sliding_size,
                lateness,
                fires_at_end=self._sliding_fires_on_element,
                partials=self._partials,
                result=self._direct_result,
                result_is_contents=self._direct_result is _identity,
            )
        # Hopping windows kept as panes (windowing.slicing).
        self._slicer: SlicedHopping | None = None
        if strategy is Strategy.PANES:
            assert shape is not None and self._direct_result is not None
            self._slicer = SlicedHopping(
                shape[0],
                shape[1],
                shape[2],
                lateness,
                partials=self._partials,
                result=self._direct_result,
                result_is_contents=self._direct_result is _identity,
            )
        # KIP-450 windows without shared partials: Kafka's own algorithm (windowing.kip450).
        self._kafka: KafkaSliding | None = None
        if strategy is Strategy.KAFKA_SLIDING:
            assert self._sliding_size is not None
            self._kafka = KafkaSliding(self, self._sliding_size, lateness)

    def _register_store_expiry(self, ks: KeyState, time: int) -> None:
        """The key's one timer that forgets its Kafka window store (:mod:`windowing.kip450`)."""
        register_timer(ks.evt_timers, ks.evt_heap, ks, time, _EXPIRY)

    def _make_partials(self) -> Partials:
        spec = self.spec
        if self.evictor is not None:
            return Partials("values", timestamped=True)
        if isinstance(spec, Reduce):
            return Partials("reduce", reducer=spec.reducer())
        if isinstance(spec, Aggregate):
            return Partials("aggregate", aggregate=spec.function)
        if isinstance(spec, Fold):
            return Partials("values", fold=(spec.initial_value, spec.folder()))
        return Partials("values")

    # ------------------------------------------------------------------ contents strategy
    def _setup_contents(self) -> None:
        spec = self.spec
        self._add: Callable[[dict[Any, Any], Any, Any, int | None], None]
        self._merge_values: Callable[[Any, Any], Any] | None
        if self.evictor is not None or isinstance(spec, Process | Apply):
            buffer_ts = self.evictor is not None

            def add_list(contents: dict[Any, Any], ns: Any, value: Any, ts: int | None) -> None:
                buf = contents.get(ns)
                item = TimestampedValue(value, ts) if buffer_ts else value
                if buf is None:
                    contents[ns] = [item]
                else:
                    buf.append(item)

            self._add = add_list
            self._merge_values = lambda a, b: [*a, *b]
        elif isinstance(spec, Reduce):
            reducer = spec.reducer()

            def add_reduce(contents: dict[Any, Any], ns: Any, value: Any, ts: int | None) -> None:
                cur = contents.get(ns, _MISSING)
                contents[ns] = value if cur is _MISSING else reducer(cur, value)

            self._add = add_reduce
            self._merge_values = reducer
        elif isinstance(spec, Aggregate):
            agg = spec.function
            create, agg_add = agg.create_accumulator, agg.add

            def add_agg(contents: dict[Any, Any], ns: Any, value: Any, ts: int | None) -> None:
                acc = contents.get(ns, _MISSING)
                contents[ns] = agg_add(value, create() if acc is _MISSING else acc)

            self._add = add_agg
            self._merge_values = agg.merge
        else:
            assert isinstance(spec, Fold)
            folder = spec.folder()
            initial = spec.initial_value

            def add_fold(contents: dict[Any, Any], ns: Any, value: Any, ts: int | None) -> None:
                acc = contents.get(ns, _MISSING)
                contents[ns] = folder(copy.deepcopy(initial) if acc is _MISSING else acc, value)

            self._add = add_fold
            self._merge_values = None

    # ------------------------------------------------------------------ time helpers
    def cleanup_time(self, window: Any) -> int:
        """When ``window`` is removed (:func:`windowing.rules.cleanup_time`)."""
        return rules.cleanup_time(
            window.max_timestamp(), self.allowed_lateness, event_time=self.is_event_time
        )

    def is_window_late(self, window: Any) -> bool:
        """Whether ``window`` is already past its cleanup time (event time only;
        :func:`windowing.rules.is_window_late`)."""
        return self.is_event_time and rules.is_window_late(
            window.max_timestamp(), self.allowed_lateness, self.watermark
        )

    def is_element_late(self, timestamp: int | None) -> bool:
        """Whether an element is late (event time only; :func:`windowing.rules.is_element_late`:
        near ``MAX_TIMESTAMP`` the sum wraps negative, so an element whose windows are all
        late goes to the late output)."""
        return self.is_event_time and rules.is_element_late(
            timestamp, self.allowed_lateness, self.watermark
        )

    def _register_cleanup_timer(self, ks: KeyState, window: Any) -> None:
        t = self.cleanup_time(window)
        if not rules.has_cleanup_timer(t):
            return
        if self.is_event_time:
            register_timer(ks.evt_timers, ks.evt_heap, ks, t, window)
        else:
            register_timer(ks.proc_timers, ks.proc_heap, ks, t, window)

    def _delete_cleanup_timer(self, ks: KeyState, window: Any) -> None:
        t = self.cleanup_time(window)
        if t == MAX_TIMESTAMP:
            return
        if self.is_event_time:
            ks.evt_timers.discard((t, window))
        else:
            ks.proc_timers.discard((t, window))

    # ------------------------------------------------------------------ per-key engine
    def new_key_state(self) -> KeyState:
        """An empty :class:`KeyState` for this operator."""
        return KeyState(self.is_merging)

    def on_element(self, key: Any, ks: KeyState, value: Any, timestamp: int | None) -> bool:
        """Process one element of ``key`` whose state is ``ks`` (Flink ``processElement``);
        returns whether it was added to any window."""
        self.metrics.num_elements += 1
        windows: Any = None
        try:
            if self._slicer is not None:
                added = self._slicer.add(self, key, ks, value, timestamp)
            elif self._sliding_size is not None:
                added = self._on_element_sliding(key, ks, value, timestamp)
            else:
                windows = self.assigner.assign_windows(value, timestamp, self._clock)
                if self.is_merging:
                    added = self._on_element_merging(key, ks, value, timestamp, windows)
                else:
                    added = self._on_element_plain(key, ks, value, timestamp, windows)
        except Exception as exc:
            note_element(exc, key, timestamp, windows)
            raise
        if not added:
            self._not_added(key, ks, value, timestamp)
        return added

    def _on_element_plain(
        self, key: Any, ks: KeyState, value: Any, timestamp: int | None, windows: Iterable[Any]
    ) -> bool:
        added = False
        contents = ks.contents
        add = self._add
        trigger = self.trigger
        ctx = self._ctx
        ctx.key, ctx.ks = key, ks
        is_event_time = self.is_event_time
        lateness = self.allowed_lateness
        wm = self.watermark
        fast_event_trigger = type(trigger) is EventTimeTrigger
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
                if result.is_fire() and not self._emit(key, ks, window, window):
                    continue
                if result.is_purge():
                    contents.pop(window, None)
            if cleanup != MAX_TIMESTAMP:
                if is_event_time:
                    register_timer(ks.evt_timers, ks.evt_heap, ks, cleanup, window)
                else:
                    register_timer(ks.proc_timers, ks.proc_heap, ks, cleanup, window)
        return added

    def _on_element_sliding(self, key: Any, ks: KeyState, value: Any, ts: int | None) -> bool:
        """Process a record for KIP-450 sliding windows (Kafka's algorithm on the timeline).

        The record is added to the key's timeline; every window containing it is created
        (contents from the timeline) or updated, and so is its own right window when a later
        record makes it non-empty. The trigger's ``on_element`` runs for each of these windows
        (including the right window, which does not contain the record).
        """
        if ts is None:
            self.assigner.assign_windows(value, ts, self._clock)  # raises its error
            return False
        if self._kafka is not None:
            return self._kafka.add(self, key, ks, value, ts)
        size = self._sliding_size
        assert size is not None
        lateness = self.allowed_lateness
        wm = self.watermark
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
        if (
            self._sliding_lazy
            and stamps
            and stamps[-1] < ts
            and wm < ts
            and ts + size + lateness + 3 < MAX_TIMESTAMP
        ):
            self._sliding_in_order(ks, timeline, value, ts, size, lateness)
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
            self._partials.add_timestamp(timeline, ts)
        else:
            self._partials.add(timeline, ts, value)
        if self._sliding_derived:
            timeline.schedule(stamps[-1] + size + lateness + 3)
        elif timeline.expiry_at is None:
            self._schedule_timeline_expiry(ks, timeline)
        if self._sliding_lazy:
            self._sliding_lazy_windows(key, ks, value, ts, timeline, in_some_window)
            return in_some_window
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
        ctx = self._ctx
        trigger = self.trigger
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
                self._add(contents, window, value, ts)
            else:
                initial = self._partials.contents(timeline, window.start, max_ts)
                if initial is _SLIDING_EMPTY:
                    continue
                live.add(window.start)
                contents[window] = initial
            if contains:
                added = True
            ctx.key, ctx.ks, ctx.window = key, ks, window
            result = trigger.on_element(value, ts, window, ctx)
            if result is not _CONTINUE:
                if result.is_fire() and not self._emit(key, ks, window, window):
                    continue
                if result.is_purge():
                    contents.pop(window, None)
            self._register_cleanup_timer(ks, window)
        return added

    def _sliding_in_order(
        self, ks: KeyState, timeline: Timeline, value: Any, ts: int, size: int, lateness: int
    ) -> None:
        """A record later than every record of the key and than the watermark (the common
        case), for lazy sliding-distinct windows: it creates its left window and possibly the
        previous record's right window, neither late nor due; nothing else changes."""
        if self._derived is not None:
            self._derived.add_in_order(timeline, value, ts)
            return
        stamps = timeline.stamps
        previous = stamps[-1]
        stamps.append(ts)
        timeline.partials.append(self._partials.first(value))
        live = timeline.live
        timers = ks.evt_timers
        heap = ks.evt_heap
        push = heapq.heappush
        on_end = self._sliding_fires_on_element
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
            self._schedule_timeline_expiry(ks, timeline)

    def _schedule_timeline_expiry(self, ks: KeyState, timeline: Timeline) -> None:
        """One timer per key forgets the timeline once the watermark is past every window of
        its latest record (re-armed while records keep coming)."""
        size = self._sliding_size
        assert size is not None
        if timeline.stamps:
            expiry = timeline.stamps[-1] + size + self.allowed_lateness + 3
            if expiry < MAX_TIMESTAMP:
                register_timer(ks.evt_timers, ks.evt_heap, ks, expiry, _EXPIRY)
                timeline.expiry_at = expiry

    def _expire_timeline(self, ks: KeyState, time: int) -> None:
        """The expiry timer at ``time`` fired: forget records whose windows all have cleanup
        times before it (later timers of the same watermark advance have not fired yet)."""
        timeline = ks.timeline
        if timeline is None:
            return
        size = self._sliding_size
        assert size is not None
        timeline.expiry_at = None
        timeline.expire(time - size - self.allowed_lateness - 2, size)
        if timeline.is_empty():
            ks.timeline = None
        else:
            self._schedule_timeline_expiry(ks, timeline)

    def _fire_sliding_timers(self, key: Any, ks: KeyState, upto: int) -> None:
        """Event timers of lazy sliding-distinct windows: ``EventTimeTrigger`` /
        ``OnWindowCloseTrigger`` inlined, contents computed from the timeline."""
        heap, live = ks.evt_heap, ks.evt_timers
        lateness = self.allowed_lateness
        on_end = self._sliding_fires_on_element  # EventTimeTrigger fires at the window end
        pwf = self._pwf
        pop = heapq.heappop
        direct = self._direct_result
        append = self.output.append
        new_tuple = tuple.__new__
        result_type = WindowResult
        fired = 0
        partials = self._partials
        range_aggregate = None if partials.kind == "values" else partials.aggregate_range
        while heap and heap[0][0] <= upto:
            time, _, window = pop(heap)
            entry = (time, window)
            if entry not in live:
                continue
            live.remove(entry)
            if type(window) is TimelineExpiry:
                self._expire_timeline(ks, time)
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
                    contents = self._sliding_contents(ks, window)
                if contents is not _MISSING:
                    if direct is None:
                        self._emit_contents(key, ks, window, window, contents)
                    else:
                        try:
                            result = direct(contents)
                        except Exception as exc:
                            exc.add_note(f"while evaluating window {window!r} of key {key!r}")
                            raise
                        if result is not None:
                            fired += 1
                            append(new_tuple(result_type, (key, window, result, max_ts)))
                        else:
                            self.metrics.num_null_results += 1
            cleanup = max_ts + lateness
            if cleanup >= MAX_TIMESTAMP:
                cleanup = MAX_TIMESTAMP
            if time == cleanup:
                timeline = ks.timeline
                if timeline is not None:
                    timeline.live.discard(window[0])
                live.discard((max_ts, window))  # EventTimeTrigger.clear
                if pwf is not None:
                    ctx = self._ctx
                    ctx.key, ctx.ks, ctx.window = key, ks, window
                    pwf.clear(self._pctx)
        self.metrics.num_windows_fired += fired
        if not live:
            heap.clear()

    def _sliding_lazy_windows(
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
        size = self._sliding_size
        assert size is not None
        lateness = self.allowed_lateness
        wm = self.watermark
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
        event_trigger = self._sliding_fires_on_element
        derived = self._sliding_derived
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
                    self._emit(key, ks, window, window)  # EventTimeTrigger: FIRE
                else:
                    timeline.schedule(max_ts if event_trigger else cleanup)
                continue
            if event_trigger:
                if max_ts <= wm:
                    fired = self._emit(key, ks, window, window)  # EventTimeTrigger: FIRE
                else:
                    register_timer(ks.evt_timers, ks.evt_heap, ks, max_ts, window)
            if fired and cleanup != MAX_TIMESTAMP:
                register_timer(ks.evt_timers, ks.evt_heap, ks, cleanup, window)
        for window in sorted(late_fired):
            max_ts = window.end - 1
            if window.start in live and max_ts <= wm < min(max_ts + lateness, MAX_TIMESTAMP):
                self._emit(key, ks, window, window)

    def _on_element_merging(
        self, key: Any, ks: KeyState, value: Any, timestamp: int | None, windows: Iterable[Any]
    ) -> bool:
        added = False
        mapping = ks.merging
        assert mapping is not None
        ctx = self._ctx
        fast_event_trigger = self._fast_event_timers
        for window in windows:
            actual = self._add_merging_window(key, ks, mapping, window)
            if self.is_window_late(actual):
                mapping.pop(actual, None)  # retire
                continue
            added = True
            state_window = mapping.get(actual)
            if state_window is None:
                msg = f"Window {actual!r} is not in the in-flight window set"
                raise RuntimeError(msg)
            self._add(ks.contents, state_window, value, timestamp)
            if fast_event_trigger:
                # EventTimeTrigger.on_element, inlined (identical behaviour).
                max_ts = actual.max_timestamp()
                if max_ts > self.watermark:
                    register_timer(ks.evt_timers, ks.evt_heap, ks, max_ts, actual)
                    self._register_cleanup_timer(ks, actual)
                    continue
                result = _FIRE
            else:
                ctx.key, ctx.ks, ctx.window = key, ks, actual
                result = self.trigger.on_element(value, timestamp, actual, ctx)
            if result.is_fire() and not self._emit(key, ks, actual, state_window):
                continue
            if result.is_purge():
                ks.contents.pop(state_window, None)
            self._register_cleanup_timer(ks, actual)
        return added

    def _add_merging_window(
        self, key: Any, ks: KeyState, mapping: dict[Any, Any], new_window: Any
    ) -> Any:
        """Add ``new_window`` to the merging-window set of ``ks`` (Flink
        ``MergingWindowSet.addWindow``); returns the window it ended up in."""
        assigner = self.assigner
        assert isinstance(assigner, MergingWindowAssigner)
        merges = assigner.merge_windows([*mapping, new_window])
        result_window = new_window
        merged_new_window = False
        for merged, merge_result in merges:
            # Flink collects the group in a java.util.HashSet, inserted in start order (the
            # set's windows, then the new one): its iteration order decides the state window
            # and the order in which the others are merged into it.
            ordered = hash_set_order(sorted(merged, key=lambda w: (w[0], w not in mapping)))
            if new_window in ordered:
                merged_new_window = True
                result_window = merge_result
                ordered.remove(new_window)  # removes an equal window of the set too, as Java
            target_state = mapping[ordered[0]]
            merged_state_windows = [mapping.pop(w) for w in ordered if w in mapping]
            mapping[merge_result] = target_state
            merged_state_windows.remove(target_state)
            # Nothing to merge when the only merged window is the result itself (the new
            # window fell inside an existing one without extending it).
            if not (len(ordered) == 1 and merge_result in ordered):
                self._on_merge(key, ks, merge_result, ordered, target_state, merged_state_windows)
        if not merges or (result_window == new_window and not merged_new_window):
            previous = mapping.get(new_window)
            if previous is not None and previous != new_window:
                # Flink maps a new window equal to an in-flight merged window to itself: the
                # contents of its former state window are not reached any more (kept, as
                # Flink keeps them, and counted).
                self.metrics.num_orphaned_state_windows += 1
            mapping[new_window] = new_window
        return result_window

    def _on_merge(
        self,
        key: Any,
        ks: KeyState,
        merge_result: Any,
        merged_windows: list[Any],
        state_window: Any,
        merged_state_windows: list[Any],
    ) -> None:
        if self.is_event_time:
            if merge_result.max_timestamp() + self.allowed_lateness <= self.watermark:
                msg = (
                    "The end timestamp of an event-time window cannot become earlier than the "
                    f"current watermark by merging. Current watermark: {self.watermark} "
                    f"window: {merge_result!r}"
                )
                raise RuntimeError(msg)
        elif merge_result.max_timestamp() <= self.processing_time:
            msg = (
                "The end timestamp of a processing-time window cannot become earlier than the "
                f"current processing time by merging. Current processing time: "
                f"{self.processing_time} window: {merge_result!r}"
            )
            raise RuntimeError(msg)
        ctx = self._ctx
        ctx.key, ctx.ks, ctx.window = key, ks, merge_result
        ctx.merged_windows = merged_windows
        try:
            self.trigger.on_merge(merge_result, ctx)
        finally:
            ctx.merged_windows = []
        for m in merged_windows:
            ctx.window = m
            self.trigger.clear(m, ctx)
            self._delete_cleanup_timer(ks, m)
        if merged_state_windows:
            merge_values = self._merge_values
            assert merge_values is not None
            merge_namespaces(ks.contents, state_window, merged_state_windows, merge_values)

    def _state_window(self, ks: KeyState, window: Any) -> Any:
        if ks.merging is None:
            return window
        return ks.merging.get(window)

    def on_event_time(self, key: Any, ks: KeyState, time: int, window: Any) -> None:
        """An event-time timer of ``key`` fired (Flink ``onEventTime``)."""
        if type(window) is TimelineExpiry:
            if self._kafka is not None:
                self._kafka.expire(self, ks, time)
            else:
                self._expire_timeline(ks, time)
            return
        state_window = self._state_window(ks, window)
        if state_window is None:
            return  # a timer of a window that was merged away
        ctx = self._ctx
        ctx.key, ctx.ks, ctx.window = key, ks, window
        result = self.trigger.on_event_time(time, window, ctx)
        self._after_timer(key, ks, window, state_window, result)
        if self.is_event_time and time == self.cleanup_time(window):
            self._clear_all_state(key, ks, window, state_window)

    def on_processing_time(self, key: Any, ks: KeyState, time: int, window: Any) -> None:
        """A processing-time timer of ``key`` fired (Flink ``onProcessingTime``)."""
        state_window = self._state_window(ks, window)
        if state_window is None:
            return
        ctx = self._ctx
        ctx.key, ctx.ks, ctx.window = key, ks, window
        result = self.trigger.on_processing_time(time, window, ctx)
        self._after_timer(key, ks, window, state_window, result)
        if not self.is_event_time and time == self.cleanup_time(window):
            self._clear_all_state(key, ks, window, state_window)

    def _after_timer(
        self, key: Any, ks: KeyState, window: Any, state_window: Any, result: TriggerResult
    ) -> None:
        if result is _CONTINUE:
            return
        if result.is_fire():
            self._emit(key, ks, window, state_window)
        if result.is_purge():
            ks.contents.pop(state_window, None)

    def _clear_all_state(self, key: Any, ks: KeyState, window: Any, state_window: Any) -> None:
        ks.contents.pop(state_window, None)
        if ks.timeline is not None:
            ks.timeline.live.discard(window.start)
        ctx = self._ctx
        ctx.key, ctx.ks, ctx.window = key, ks, window
        self.trigger.clear(window, ctx)
        wf = self._pwf
        if wf is not None:
            ctx.window = window
            wf.clear(self._pctx)
        if ks.merging is not None:
            ks.merging.pop(window, None)

    def _process_function(self) -> ProcessWindowFunction[Any, Any, Any, Any] | None:
        spec = self.spec
        if isinstance(spec, Process):
            return spec.function
        if isinstance(spec, Reduce | Aggregate | Fold):
            wf = spec.window_function
            return wf if isinstance(wf, ProcessWindowFunction) else None
        return None

    # ------------------------------------------------------------------ evaluation
    def _emit(self, key: Any, ks: KeyState, window: Any, state_window: Any) -> bool:
        """Evaluate ``window``; returns False when it was empty (nothing emitted).

        As in Flink, a window is empty when it has no contents, or when its incremental
        result (reduced value, fold accumulator, ``AggregateFunction.get_result``) is ``None``.
        """
        if self._sliding_lazy:
            contents = self._sliding_contents(ks, window)
        else:
            contents = ks.contents.get(state_window, _MISSING)
        if contents is _MISSING:
            return False
        return self._emit_contents(key, ks, window, state_window, contents)

    def _sliding_contents(self, ks: KeyState, window: Any) -> Any:
        timeline = ks.timeline
        if timeline is None:
            return _MISSING
        partials = self._partials
        if partials.kind == "values":
            result = partials.contents(timeline, window.start, window.end - 1)
        else:
            result = partials.aggregate_range(timeline, window.start, window.end - 1)
        return _MISSING if result is _SLIDING_EMPTY else result

    def _emit_contents(
        self, key: Any, ks: KeyState, window: Any, state_window: Any, contents: Any
    ) -> bool:
        direct = self._direct_result
        if direct is not None:
            try:
                value = direct(contents)
            except Exception as exc:
                exc.add_note(f"while evaluating window {window!r} of key {key!r}")
                raise
            if value is None:
                self.metrics.num_null_results += 1
                return False
            self.metrics.num_windows_fired += 1
            self.output.append(
                tuple.__new__(WindowResult, (key, window, value, window.max_timestamp()))
            )
            return True
        ctx = self._ctx
        ctx.key, ctx.ks, ctx.window = key, ks, window
        spec = self.spec
        try:
            outputs: Iterable[Any]
            if self.evictor is not None:
                outputs = self._evaluate_evicting(key, ks, window, state_window, contents)
            elif isinstance(spec, Reduce | Fold | Aggregate):
                result = (
                    spec.function.get_result(contents) if isinstance(spec, Aggregate) else contents
                )
                if result is None:
                    self.metrics.num_null_results += 1
                    return False
                outputs = self._finish(key, window, result)
            else:
                outputs = self._evaluate_all(key, window, list(contents))
            self.metrics.num_windows_fired += 1
            ts = window.max_timestamp()
            append = self.output.append
            for out in outputs:
                append(WindowResult(key, window, out, ts))
        except Exception as exc:
            exc.add_note(f"while evaluating window {window!r} of key {key!r}")
            raise
        return True

    def _finish(self, key: Any, window: Any, result: Any) -> Iterable[Any]:
        """Outputs for an incremental result, through the optional window function."""
        spec = self.spec
        wf = spec.window_function if isinstance(spec, Reduce | Aggregate | Fold) else None
        if wf is None:
            return (result,)
        if isinstance(wf, ProcessWindowFunction):
            out = wf.process(key, self._pctx, [result])
            return check_outputs(out, "ProcessWindowFunction.process", key, window)
        out = wf.apply(key, window, [result])
        return check_outputs(out, "WindowFunction.apply", key, window)

    def _evaluate_all(self, key: Any, window: Any, values: list[Any]) -> Iterable[Any]:
        """Evaluate over all buffered values (process/apply, or any kind with an evictor)."""
        spec = self.spec
        if isinstance(spec, Process):
            out = spec.function.process(key, self._pctx, values)
            return check_outputs(out, "ProcessWindowFunction.process", key, window)
        if isinstance(spec, Apply):
            out = spec.function.apply(key, window, values)
            return check_outputs(out, "WindowFunction.apply", key, window)
        if isinstance(spec, Reduce):
            # Everything evicted: Flink's ReduceApplyWindowFunction passes on a null.
            result = functools.reduce(spec.reducer(), values) if values else None
            return self._finish(key, window, result)
        if isinstance(spec, Aggregate):
            agg = spec.function
            acc = agg.create_accumulator()
            for v in values:
                acc = agg.add(v, acc)
            return self._finish(key, window, agg.get_result(acc))
        folder = spec.folder()
        acc = copy.deepcopy(spec.initial_value)
        for v in values:
            acc = folder(acc, v)
        return self._finish(key, window, acc)

    def _evaluate_evicting(
        self, key: Any, ks: KeyState, window: Any, state_window: Any, buffer: list[Any]
    ) -> list[Any]:
        evictor = self.evictor
        assert evictor is not None
        ctx = self._ctx
        kept = _check_evicted(evictor.evict_before(list(buffer), window, ctx), "evict_before")
        outputs = list(self._evaluate_all(key, window, [e.value for e in kept]))
        ctx.window = window
        kept = _check_evicted(evictor.evict_after(list(kept), window, ctx), "evict_after")
        if kept:
            ks.contents[state_window] = kept
        else:
            ks.contents.pop(state_window, None)
        return outputs

    # ------------------------------------------------------------------ per-key timers
    def fire_timers(self, key: Any, ks: KeyState) -> None:
        """Fire every timer of ``key`` due at the current watermark / processing time."""
        self._fire_event_timers(key, ks, self.watermark)
        self._fire_processing_timers(key, ks, self.processing_time)

    def _fire_event_timers(self, key: Any, ks: KeyState, upto: int) -> None:
        heap, live = ks.evt_heap, ks.evt_timers
        if self._slicer is not None:
            self._slicer.fire(self, key, ks, upto)
            return
        if self._fast_event_timers:
            self._fire_event_timers_fast(key, ks, upto)
            return
        if self._derived is not None:
            self._derived.fire(self, key, ks, upto)
            return
        if self._sliding_lazy:
            self._fire_sliding_timers(key, ks, upto)
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

    def _fire_event_timers_fast(self, key: Any, ks: KeyState, upto: int) -> None:
        """``_fire_event_timers`` for a non-merging event-time assigner with the built-in
        ``EventTimeTrigger``: the trigger's ``on_event_time`` and ``clear`` inlined."""
        heap, live = ks.evt_heap, ks.evt_timers
        contents = ks.contents
        mapping = ks.merging
        lateness = self.allowed_lateness
        pwf = self._pwf
        direct = self._direct_result
        append = self.output.append
        new_tuple = tuple.__new__
        result_type = WindowResult
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
                        self._emit_contents(key, ks, window, state_window, value)
                    else:
                        try:
                            value = direct(value)
                        except Exception as exc:
                            exc.add_note(f"while evaluating window {window!r} of key {key!r}")
                            raise
                        if value is not None:  # a None result is an empty window (Flink)
                            fired += 1
                            append(new_tuple(result_type, (key, window, value, max_ts)))
                        else:
                            self.metrics.num_null_results += 1
            cleanup = max_ts + lateness
            if cleanup >= MAX_TIMESTAMP:
                cleanup = MAX_TIMESTAMP
            if time == cleanup:
                contents.pop(state_window, None)
                live.discard((max_ts, window))  # EventTimeTrigger.clear
                if pwf is not None:
                    ctx = self._ctx
                    ctx.key, ctx.ks, ctx.window = key, ks, window
                    pwf.clear(self._pctx)
                if mapping is not None:
                    mapping.pop(window, None)
        self.metrics.num_windows_fired += fired
        if not live:
            heap.clear()

    def _fire_processing_timers(self, key: Any, ks: KeyState, upto: int) -> None:
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

    # ------------------------------------------------------------------ multi-key driver
    def _key_state(self, key: Any) -> KeyState:
        ks = self.backend.get(key)
        if ks is None:
            ks = KeyState(self.is_merging)
            self.backend.put(key, ks)
        return ks

    def _schedule(self, key: Any, ks: KeyState) -> bool:
        """Schedule ``key`` at its earliest timers; returns whether it has any. A heap top may
        be a deleted timer: scheduling too early is harmless (nothing fires, and the key is
        rescheduled). The bulk element loops inline this for speed."""
        pending = False
        # Sliced hopping and derived sliding-distinct windows keep one timer per key.
        one = ks.slices if ks.slices is not None else ks.timeline
        due = None if one is None else one.due
        if due is not None:
            pending = True
            cur = self._evt_sched.get(key)
            if cur is None or due < cur:
                derived = self._derived
                if derived is not None:  # the schedule is the ordered dict alone
                    self._evt_sched.pop(key, None)  # last in the order (DerivedSliding.drain)
                    self._evt_sched[key] = due
                    if due < derived.min_due:
                        derived.min_due = due
                else:
                    self._evt_sched[key] = due
                    self._due_seq += 1
                    heapq.heappush(self._evt_due, (due, self._due_seq, key))
        elif ks.evt_timers:
            pending = True
            t = ks.evt_heap[0][0]
            cur = self._evt_sched.get(key)
            if cur is None or t < cur:
                self._evt_sched[key] = t
                self._due_seq += 1
                heapq.heappush(self._evt_due, (t, self._due_seq, key))
        if ks.proc_timers:
            pending = True
            t = ks.proc_heap[0][0]
            cur = self._proc_sched.get(key)
            if cur is None or t < cur:
                self._proc_sched[key] = t
                self._due_seq += 1
                heapq.heappush(self._proc_due, (t, self._due_seq, key))
        return pending

    def _release(self, key: Any, ks: KeyState) -> None:
        if ks.is_empty():
            self.backend.remove(key)

    def process_element(self, value: Any, timestamp: int | None, key: Any = None) -> None:
        """Process one element (``key=None`` for a non-keyed stream)."""
        states = self._states
        if states is not None:
            ks = states.get(key)
            if ks is None:
                ks = states[key] = KeyState(self.is_merging)
        else:
            ks = self._key_state(key)
        self.on_element(key, ks, value, timestamp)
        if not (ks.contents or ks.evt_timers or ks.proc_timers):
            self._release(key, ks)  # e.g. purged by the trigger, with nothing pending
        self._schedule(key, ks)

    def process_elements(self, elements: Iterable[tuple[Any, int | None, Any]]) -> None:
        """Process ``(value, timestamp, key)`` triples in order, all at the current watermark
        and processing time; same result as calling :meth:`process_element` for each."""
        states = self._states
        if states is not None:
            if self._slicer is not None:
                self._slicer.process(self, elements)
                return
            if self._aligned is not None:
                self._process_aligned(elements, states, *self._aligned)
                return
            if self._session_gap is not None:
                self._process_sessions(elements, states, self._session_gap)
                return
            if self._derived is not None:
                self._derived.process(self, elements)
                return
            if self._sliding_size is not None:
                self._process_sliding(elements, states)
                return
        process = self.process_element
        for value, timestamp, key in elements:
            process(value, timestamp, key)

    def process_key_elements(
        self, key: Any, ks: KeyState, elements: Iterable[tuple[Any, int | None, Any]]
    ) -> KeyState:
        """Process the ``(value, timestamp, key)`` elements of one ``key`` whose state ``ks``
        a runtime loaded from its own store, with the bulk loops of :meth:`process_elements`
        (same results as :meth:`on_element` for each). Returns the key's state afterwards
        (``ks``, or a new one if ``ks`` emptied and the key started over). The runtime keeps
        the key's timer itself (``KeyState.next_event_time()``): nothing stays scheduled in
        this operator's multi-key driver."""
        states = self._states
        if states is None or key in states:
            for value, timestamp, _ in elements:
                self.on_element(key, ks, value, timestamp)
            return ks
        states[key] = ks
        try:
            self.process_elements(elements)
        finally:
            ks = states.pop(key, ks)
            for sched in (self._evt_sched, self._proc_sched):
                sched.pop(key, None)
            if not self._evt_sched:
                self._evt_due.clear()
            if not self._proc_sched:
                self._proc_due.clear()
        return ks

    def process_to_end(self, key: Any, elements: Sequence[tuple[Any, int | None, Any]]) -> None:
        """Process the ``(value, timestamp, key)`` elements of one ``key`` (all of its bounded
        input, in order), then the end of input: watermark and processing time at
        ``MAX_TIMESTAMP``. Same results as :meth:`process_elements` followed by
        :meth:`process_watermark` and :meth:`advance_processing_time` to ``MAX_TIMESTAMP``.

        This is a batch replay without arrival order (Flink's batch execution mode: a key's
        input, then the end of time). When the operator holds no state and no watermark yet,
        no element can be late and every window fires at the end, so with the built-in
        ``EventTimeTrigger``, no evictor and a reduce or aggregate, tumbling windows and (for
        input in timestamp order) event-time session windows take one pass: contents by
        window, no timers, windows fired in order of their end. If a user function raises,
        the operator's state afterwards is unspecified (a runtime abandons the key)."""
        one_pass = (
            self._direct_result is not None
            and isinstance(self.spec, Reduce | Aggregate)
            and self.watermark == MIN_TIMESTAMP
            and self._states is not None
            and not self._states
        )
        aligned, gap = self._aligned, self._session_gap
        lateness = self.allowed_lateness
        if (
            one_pass
            and aligned is not None
            and aligned[0] == aligned[1]  # tumbling
            and _ends_before_end_of_time(elements, aligned[0] + lateness, ordered=False)
        ):
            self._tumbling_to_end(key, elements, aligned[0], aligned[2])
        elif (
            one_pass
            and gap is not None
            and _ends_before_end_of_time(elements, gap + lateness, ordered=True)
        ):
            self._sessions_to_end(key, elements, gap)
        else:
            self.process_elements(elements)
        try:
            self.process_watermark(MAX_TIMESTAMP)
            self.advance_processing_time(MAX_TIMESTAMP)
        except Exception as exc:
            exc.add_note(END_OF_INPUT_NOTE)
            raise

    def _tumbling_to_end(
        self, key: Any, elements: Sequence[tuple[Any, int | None, Any]], size: int, offset: int
    ) -> None:
        """The one-pass form of :meth:`process_to_end` for tumbling windows."""
        add = self._add
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
            self.metrics.num_elements += count
        # Fire in order of max_timestamp (no end is clamped: _ends_before_end_of_time).
        new_tuple = tuple.__new__
        self._fire_to_end(
            key, [(new_tuple(TimeWindow, (s, s + size)), contents[s]) for s in sorted(contents)]
        )

    def _sessions_to_end(
        self, key: Any, elements: Sequence[tuple[Any, int | None, Any]], gap: int
    ) -> None:
        """The one-pass form of :meth:`process_to_end` for session windows, elements in
        timestamp order: an element whose window ``[ts, ts + gap)`` intersects the current
        session (touching counts) merges into it, and its value is added to the session's
        contents, as the merging-window set does; otherwise it starts the next session."""
        add = self._add
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
            self.metrics.num_elements += count
        if started:
            sessions.append((start, end))
        new_tuple = tuple.__new__
        self._fire_to_end(key, [(new_tuple(TimeWindow, (s, e)), contents[s]) for s, e in sessions])

    def _fire_to_end(self, key: Any, windows: list[tuple[TimeWindow, Any]]) -> None:
        """Emit the windows' results in the given order, as their end-of-window timers would
        at the end of input (a ``None`` result is an empty window)."""
        direct = self._direct_result
        assert direct is not None
        append = self.output.append
        new_tuple = tuple.__new__
        fired = 0
        window: Any = None
        try:
            for window, contents in windows:
                result = direct(contents)
                if result is not None:
                    fired += 1
                    append(new_tuple(WindowResult, (key, window, result, window[1] - 1)))
                else:
                    self.metrics.num_null_results += 1
        except Exception as exc:
            exc.add_note(f"while evaluating window {window!r} of key {key!r}")
            exc.add_note(END_OF_INPUT_NOTE)
            raise
        finally:
            self.metrics.num_windows_fired += fired

    def _process_sliding(
        self, elements: Iterable[tuple[Any, int | None, Any]], states: dict[Any, KeyState]
    ) -> None:
        """``process_element`` for each element, without the per-call overhead."""
        count = 0
        ts: int | None = None
        key: Any = None
        try:
            for value, ts, key in elements:
                count += 1
                ks = states.get(key)
                if ks is None:
                    ks = states[key] = KeyState()
                if not self._on_element_sliding(key, ks, value, ts):
                    self._not_added(key, ks, value, ts)
                self._schedule(key, ks)
        except Exception as exc:
            note_element(exc, key, ts)
            raise
        finally:
            self.metrics.num_elements += count

    def _process_sessions(
        self, elements: Iterable[tuple[Any, int | None, Any]], states: dict[Any, KeyState], gap: int
    ) -> None:
        """The element loop for ``EventTimeSessionWindows`` with the built-in
        ``EventTimeTrigger`` and no evictor: the merging-window set, the trigger's
        ``on_element`` / ``on_merge`` / ``clear`` and the cleanup timers inlined (identical
        behaviour to :meth:`on_element`, checked by differential tests).

        In-flight session windows of a key never overlap or touch (they would have merged), so
        a new window ``[ts, ts + gap)`` merges exactly with the in-flight windows it intersects.
        """
        add = self._add
        reducer = self._inline_reducer
        lateness = self.allowed_lateness
        wm = self.watermark
        evt_sched = self._evt_sched
        evt_due = self._evt_due
        push = heapq.heappush
        end_of_time = MAX_TIMESTAMP
        new_tuple = tuple.__new__
        time_window = TimeWindow
        missing = _MISSING
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
                    self.assigner.assign_windows(value, ts, self._clock)  # raises its error
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
                elif (
                    len(overlapping) == 1
                    and overlapping[0][0] <= start
                    and overlapping[0][1] >= end
                ):
                    actual = overlapping[0]  # inside an in-flight window: no merge
                    state_window = mapping[actual]
                elif len(overlapping) > 1:
                    # It bridges sessions: Flink's set order picks the state window and the
                    # order of the merge (the generic path).
                    window = new_tuple(time_window, (start, end))
                    if not self._on_element_merging(key, ks, value, ts, (window,)):
                        self._not_added(key, ks, value, ts)
                    self._schedule(key, ks)
                    continue
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
                        self._on_merge(key, ks, actual, overlapping, target, [])  # raises: too late
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
                    self._not_added(key, ks, value, ts)
                    continue
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
                    register_cleanup = self._emit(key, ks, actual, state_window)
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
                    self._due_seq += 1
                    push(evt_due, (t, self._due_seq, key))
        except Exception as exc:
            note_element(exc, key, ts)
            raise
        finally:
            self.metrics.num_elements += count

    def _process_aligned(
        self,
        elements: Iterable[tuple[Any, int | None, Any]],
        states: dict[Any, KeyState],
        size: int,
        slide: int,
        offset: int,
    ) -> None:
        """The element loop for tumbling/hopping event-time windows with the built-in
        ``EventTimeTrigger`` and no evictor: the assigner, trigger and cleanup-timer logic of
        :meth:`on_element` inlined (identical behaviour, checked by differential tests)."""
        add = self._add
        reducer = self._inline_reducer
        spec = self.spec
        agg_add: Callable[[Any, Any], Any] | None = None
        agg_create: Callable[[], Any] = _identity_none
        if isinstance(spec, Aggregate):
            agg_add, agg_create = spec.function.add, spec.function.create_accumulator
        lateness = self.allowed_lateness
        wm = self.watermark
        evt_sched = self._evt_sched
        evt_due = self._evt_due
        push = heapq.heappush
        end_of_time = MAX_TIMESTAMP
        new_tuple = tuple.__new__
        time_window = TimeWindow
        missing = _MISSING
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
                    self.assigner.assign_windows(value, ts, self._clock)  # raises its error
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
                            if not self._emit(key, ks, window, window):  # late firing
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
                    self._not_added(key, ks, value, ts)
                if heap:
                    t = heap[0][0]
                    cur = evt_sched.get(key)
                    if cur is None or t < cur:
                        evt_sched[key] = t
                        self._due_seq += 1
                        push(evt_due, (t, self._due_seq, key))
        except Exception as exc:
            note_element(exc, key, ts)
            raise
        finally:
            self.metrics.num_elements += count

    def _not_added(self, key: Any, ks: KeyState, value: Any, timestamp: int | None) -> None:
        """Account for an element added to no window: late side output, or a metric."""
        if self.is_element_late(timestamp):
            if self.late_output_tag is not None:
                self.metrics.num_late_records_side_output += 1
                self.side_outputs.setdefault(self.late_output_tag, []).append(
                    LateElement(key, value, timestamp, self.watermark)
                )
            else:
                self.metrics.num_late_records_dropped += 1
        else:
            self.metrics.num_records_in_no_window += 1
        self._release(key, ks)

    def process_watermark(self, watermark: int) -> None:
        """Advance the watermark and fire every event-time timer ``<= watermark``.

        Each key fires its due timers in time order; keys are visited in the order of their
        earliest due timer. A watermark lower than the current one is ignored."""
        if watermark < self.watermark:
            return
        self.watermark = watermark
        if len(self._evt_due) > self._evt_compact_at:
            compact(self._evt_due)
            self._evt_compact_at = max(_COMPACT_MIN, 2 * len(self._evt_due))
        if self._slicer is not None:
            self._slicer.drain(self, watermark)
            return
        if self._derived is not None:
            self._derived.drain(self, watermark)
            return
        self._drain(self._evt_due, self._evt_sched, watermark, event_time=True)

    def advance_processing_time(self, time: int) -> None:
        """Set the processing-time clock and fire every processing-time timer ``<= time``."""
        if time < self.processing_time:
            return
        self.processing_time = time
        self._drain(self._proc_due, self._proc_sched, time, event_time=False)

    def _drain(
        self, due: list[tuple[int, int, Any]], sched: dict[Any, int], upto: int, event_time: bool
    ) -> None:
        # Keys are visited in the order of their earliest due timer; each key then fires all
        # its timers up to ``upto`` in time order (timers of one key are strictly ordered;
        # outputs of different keys may interleave differently than in a global time order).
        states = self._states
        get = states.get if states is not None else self.backend.get
        if not event_time:
            fire = self._fire_processing_timers
        elif self._fast_event_timers:
            fire = self._fire_event_timers_fast
        elif self._sliding_lazy:
            fire = self._fire_sliding_timers
        else:
            fire = self._fire_event_timers
        # A key fires all its timers up to ``upto``: it is rescheduled after it.
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
                if not self._schedule(key, ks) and not ks.contents and ks.is_empty():
                    self.backend.remove(key)
        finally:
            put_back(due, rest)  # the keys not visited, if interrupted

    # ------------------------------------------------------------------ inspection
    def keys(self) -> list[Any]:
        """Keys with live state."""
        return [k for k, _ in self.backend.items()]

    def num_event_time_timers(self, key: Any = _MISSING) -> int:
        """Live event-time timers (of one key, or all). Sliced hopping windows count the
        timers of the per-window layout; derived sliding-distinct windows count their key's
        one timer."""
        slicer = self._slicer
        if slicer is not None:
            return self._count(lambda ks: slicer.num_timers(ks, self.watermark), key)
        return self._count(
            lambda ks: (
                len(ks.evt_timers) + (ks.timeline is not None and ks.timeline.due is not None)
            ),
            key,
        )

    def num_processing_time_timers(self, key: Any = _MISSING) -> int:
        """Live processing-time timers (of one key, or all)."""
        return self._count(lambda ks: len(ks.proc_timers), key)

    def num_state_entries(self, key: Any = _MISSING) -> int:
        """Live state entries (window contents, trigger and function state; merging-window
        set entries are not counted) of one key, or all. Sliced hopping windows count their
        live windows, as the per-window layout would."""
        slicer = self._slicer
        if slicer is not None:
            return self._count(lambda ks: len(slicer.live_windows(ks, self.watermark)), key)
        return self._count(lambda ks: ks.num_state_entries(), key)

    def _count(self, fn: Callable[[KeyState], int], key: Any) -> int:
        if key is not _MISSING:
            ks = self.backend.get(key)
            return 0 if ks is None else fn(ks)
        return sum(fn(ks) for _, ks in self.backend.items())

    def iter_windows(self, key: Any) -> Iterator[Any]:
        """The windows of ``key`` that hold contents (or, for merging assigners, are in the
        merging-window set)."""
        ks = self.backend.get(key)
        if ks is None:
            return iter(())
        if ks.merging is not None:
            return iter(sorted(ks.merging, key=_window_sort_key))
        if self._slicer is not None:
            return iter(self._slicer.live_windows(ks, self.watermark))
        return iter(sorted(ks.contents, key=_window_sort_key))

    # ------------------------------------------------------------------ snapshots
    def snapshot(self) -> bytes:
        """All key states and the clocks, as bytes (outputs are not included)."""
        payload = {
            "version": 1,
            "watermark": self.watermark,
            "processing_time": self.processing_time,
            "states": dict(self.backend.items()),
        }
        return bytes(cloudpickle.dumps(payload))

    def restore(self, data: bytes) -> None:
        """Load a :meth:`snapshot` into this (fresh) operator, replacing its state."""
        payload = cloudpickle.loads(data)
        if not isinstance(payload, dict) or payload.get("version") != 1:
            msg = "restore: data is not a WindowOperator snapshot"
            raise ValueError(msg)
        for key, _ in list(self.backend.items()):
            self.backend.remove(key)
        self._evt_due.clear()
        self._proc_due.clear()
        self._evt_sched.clear()
        self._proc_sched.clear()
        self.watermark = payload["watermark"]
        self.processing_time = payload["processing_time"]
        for key, ks in payload["states"].items():
            if ks.merging is None and self.is_merging:
                msg = "restore: the snapshot was taken with a non-merging assigner"
                raise ValueError(msg)
            self.backend.put(key, ks)
            self._schedule(key, ks)


_EXPIRY = TimelineExpiry()
_SHARED_PARTIALS = frozenset(
    {Strategy.PANES, Strategy.TIMELINE, Strategy.TIMELINE_LAZY, Strategy.TIMELINE_DERIVED}
)
_COMPACT_MIN = 4096


_SLIDING_EMPTY: Any = sliding_module._MISSING


def _ends_before_end_of_time(
    elements: Sequence[tuple[Any, int | None, Any]], span: int, *, ordered: bool
) -> bool:
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


def _identity(value: Any) -> Any:
    return value


def _identity_none() -> Any:
    return None


def _window_sort_key(window: Any) -> tuple[int, int, str]:
    start = getattr(window, "start", None)
    end = getattr(window, "end", None)
    if isinstance(start, int) and isinstance(end, int):
        return (start, end, "")
    return (MAX_TIMESTAMP, MAX_TIMESTAMP, repr(window))


def _check_evicted(kept: Any, what: str) -> list[Any]:
    if kept is None or isinstance(kept, str | bytes) or not isinstance(kept, Iterable):
        msg = (
            f"Evictor.{what} must return the elements to keep (a list of TimestampedValue), "
            f"got {type(kept).__name__} {kept!r}"
        )
        raise TypeError(msg)
    elements: list[Any] = list(kept)
    for e in elements:
        if not isinstance(e, TimestampedValue):
            msg = f"Evictor.{what} must return TimestampedValue elements, got {e!r}"
            raise TypeError(msg)
    return elements
