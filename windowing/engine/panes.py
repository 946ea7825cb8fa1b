"""Hopping windows kept as panes: one partial result per pane instead of one per window.

With hopping windows of ``size`` every ``slide`` an element belongs to ``size / slide``
windows. For a reduce or aggregate with the built-in ``EventTimeTrigger`` and no evictor, the
operator instead keeps one partial per *pane* of ``gcd(size, slide)`` (the slices of the
slicing design, ``docs/design.md``): an element updates one pane, and a window's contents
are the combination of its panes, built when the window fires. Windows fire in order of
their end, so consecutive windows of a key share most panes: a two-stack range aggregate
combines each pane about three times in all, whatever the number of panes per window, and a
window with the same panes as the previous one reuses its aggregate.

Everything observable matches the per-window layout of Flink's ``WindowOperator``: the
windows that fire and when (including late firings within the allowed lateness), the late
side output, the metrics, and the state and timer counts the operator reports (derived from
the panes: a window exists while it contains a pane and its cleanup time is ahead of the
watermark). The difference is the order in which a window's elements are combined: pane by
pane in time order, each pane in arrival order, rather than in arrival order across the
window. Reduce and aggregate functions are assumed associative and commutative, as Flink's own
merging of window state assumes (``docs/semantics.md``); pass ``slicing=False`` to the operator
to keep one partial per window.

One timer per key stands for all its windows: the end of its next window with contents, or
the time its oldest pane can be dropped, whichever is earlier.
"""

from __future__ import annotations

import heapq
import math
from bisect import bisect_left, insort
from collections.abc import Callable, Iterable
from typing import Any

from windowing.due import put_back, take_due
from windowing.engine.exchange import ReducedPanes, export_panes, import_panes
from windowing.engine.keystate import KeyState, Slices, count_row
from windowing.engine.notes import note_element, note_window
from windowing.engine.strategy import Element, Engine, WindowStrategy
from windowing.functions.spec import Aggregate
from windowing.records import WindowResult
from windowing.rules import cleanup_time, has_cleanup_timer, keeps_state
from windowing.sliding import Partials
from windowing.time import MAX_TIMESTAMP
from windowing.windows import TimeWindow

__all__ = ["HoppingPanes", "PanesStrategy", "Slices"]

_MISSING: Any = object()
_END_OF_TIME = MAX_TIMESTAMP + 1  # window ends are clamped here


class HoppingPanes:
    """Element, timer and inspection logic of sliced hopping windows for one operator."""

    def __init__(
        self,
        size: int,
        slide: int,
        offset: int,
        lateness: int,
        *,
        partials: Partials,
        result: Callable[[Any], Any],
        result_is_contents: bool = False,
    ) -> None:
        self.size = size
        self.slide = slide
        self.offset = offset
        self.pane = math.gcd(size, slide)
        self.lateness = lateness
        self.result = result
        self.result_is_contents = result_is_contents  # a reduce: the result is the contents
        # A pane's partial is what Partials keeps per timestamp of a sliding timeline.
        self.first = partials.first
        self.reducer = partials.reducer
        self.aggregate = partials.aggregate
        self.combine = partials.combine
        self.owned = partials.owned  # None once accumulators are known to be immutable
        self._copies_decided = self.aggregate is None

    # ------------------------------------------------------------------ window arithmetic
    def _max_ts(self, start: int) -> int:
        end = start + self.size
        return (end if end < _END_OF_TIME else _END_OF_TIME) - 1

    def _cleanup(self, start: int) -> int:
        return cleanup_time(self._max_ts(start), self.lateness)

    def _align_up(self, t: int) -> int:
        """The smallest window start >= t."""
        return t + (self.offset - t) % self.slide

    def _last_start(self, t: int) -> int:
        """The largest window start <= t (the last window containing t)."""
        return t - (t - self.offset) % self.slide

    # ------------------------------------------------------------------ elements
    def add(self, engine: Engine, key: Any, ks: KeyState, value: Any, ts: int | None) -> bool:
        """Add one element (the generic per-element path); returns whether it went into any
        window. Fires the windows it joins that are past their end (late firings)."""
        if ts is None:
            engine.job.assigner.assign_windows(
                value, ts, engine.clock
            )  # raises the assigner's error
            return False
        size, slide = self.size, self.slide
        wm = engine.clocks.watermark
        last = self._last_start(ts)
        if self._cleanup(last) <= wm:
            return False  # every window of the element is past its cleanup time
        sl = ks.slices
        if sl is None:
            sl = ks.slices = Slices(wm)
        elif sl.upto < wm:
            sl.upto = wm  # windows ending by now without contents stay unfired
        self._add_to_pane(ks, sl, ts - (ts - self.offset) % self.pane, value, engine.count_rows)
        first = last - (last - ts + size - 1) // slide * slide
        due = self._max_ts(first)
        if due <= wm:
            # Some windows are past their end: fire those still alive, latest start first
            # (the assigner's order), and schedule the earliest window still pending.
            pending: int | None = None
            s = last
            while s >= first:
                max_ts = self._max_ts(s)
                if max_ts > wm:
                    pending = max_ts
                elif self._cleanup(s) > wm:
                    self._fire_window(engine, key, ks, s)
                else:
                    break  # this and every earlier window are cleaned up
                s -= slide
            due = pending if pending is not None else self._cleanup(last)
        self._schedule(ks, sl, due)
        return True

    def _add_to_pane(self, ks: KeyState, sl: Slices, pane: int, value: Any, counting: bool) -> None:
        contents = ks.contents
        current = contents.get(pane, _MISSING)
        if counting:
            count_row(ks, pane, current is _MISSING)
        if current is _MISSING:
            contents[pane] = self.first(value)
            starts = sl.starts
            if not starts or pane > starts[-1]:
                starts.append(pane)
            else:
                insort(starts, pane)
        elif self.reducer is not None:
            contents[pane] = self.reducer(current, value)
        else:
            contents[pane] = self.aggregate.add(value, current)

    def _schedule(self, ks: KeyState, sl: Slices, due: int) -> None:
        """Make the key's one timer (``sl.due``) fire no later than ``due``."""
        current = sl.due
        if current is None or due < current:
            sl.due = due

    def process(self, engine: Engine, elements: Iterable[tuple[Any, int | None, Any]]) -> None:
        """The bulk element loop: an element whose windows are all ahead of the watermark,
        of a key whose timer is due no later than those windows' ends, only updates its
        pane; any other element takes :meth:`add`."""
        states = engine.states
        assert states is not None

        size, slide, offset, pane = self.size, self.slide, self.offset, self.pane
        wm = engine.clocks.watermark
        reducer = self.reducer
        agg_add = None if self.aggregate is None else self.aggregate.add
        agg_create = None if self.aggregate is None else self.aggregate.create_accumulator
        missing = _MISSING
        limit = _END_OF_TIME - size  # windows starting after it are clamped: generic path
        counting = engine.count_rows
        count = 0
        key: Any = None
        ts: int | None = None
        try:
            for value, ts, key in elements:
                count += 1
                ks = states.get(key)
                if ks is None:
                    ks = states[key] = KeyState()
                sl = ks.slices
                if ts is not None and sl is not None and sl.due is not None:
                    last = ts - (ts - offset) % slide
                    first_end = last - (last - ts + size - 1) // slide * slide + size
                    if first_end > wm + 1 and sl.due < first_end and last <= limit:
                        if sl.upto < wm:
                            sl.upto = wm
                        p = ts - (ts - offset) % pane
                        contents = ks.contents
                        current = contents.get(p, missing)
                        if counting:
                            count_row(ks, p, current is missing)
                        if current is missing:
                            contents[p] = (
                                value if agg_add is None else agg_add(value, agg_create())  # type: ignore[misc]
                            )
                            starts = sl.starts
                            if not starts or p > starts[-1]:
                                starts.append(p)
                            else:
                                insort(starts, p)
                        elif reducer is not None:
                            contents[p] = reducer(current, value)
                        else:
                            contents[p] = agg_add(value, current)  # type: ignore[misc]
                        continue
                if self.add(engine, key, ks, value, ts):
                    engine.schedule(key, ks)
                else:
                    engine.not_added(key, ks, value, ts)
        except Exception as exc:
            note_element(exc, key, ts)
            raise
        finally:
            engine.outputs.metrics.num_elements += count

    # ------------------------------------------------------------------ firing
    def _window_value(self, ks: KeyState, start: int) -> Any:
        """The combined partial of the panes of the window starting at ``start``."""
        sl = ks.slices
        assert sl is not None
        starts, contents = sl.starts, ks.contents
        i = bisect_left(starts, start)
        j = bisect_left(starts, start + self.size, i)
        value: Any = _MISSING
        for k in range(i, j):
            part = contents[starts[k]]
            if value is _MISSING:
                value = part if self.owned is None else self.owned(part)
            else:
                value = self.combine(value, part)
        return value

    def _fire_window(self, engine: Engine, key: Any, ks: KeyState, start: int) -> None:
        value = self._window_value(ks, start)
        if value is _MISSING:
            return
        end = start + self.size
        window = TimeWindow(start, end if end < _END_OF_TIME else _END_OF_TIME)
        self._emit(engine, key, window, value)

    def _emit(self, engine: Engine, key: Any, window: TimeWindow, value: Any) -> None:
        try:
            result = self.result(value)
        except Exception as exc:
            note_window(exc, window, key)
            raise
        if result is None:  # an empty window (Flink)
            engine.null_results(key, (window,))
        else:
            engine.outputs.metrics.num_windows_fired += 1
            engine.outputs.output.append(WindowResult(key, window, result, window.max_timestamp()))

    def fire(self, engine: Engine, key: Any, ks: KeyState, upto: int) -> None:
        """Fire the due windows of one key (a runtime that loads keys one at a time)."""
        sl = ks.slices
        if sl is not None and sl.due is not None and sl.due <= upto:
            self._drain(engine, upto, [(sl.due, 0, key)], {key: sl.due}, {key: ks}.get, None)

    def drain(self, engine: Engine, upto: int) -> None:
        """The operator's event-time drain: fire every key whose timer is due by ``upto``,
        in the order of their timers."""
        states = engine.states
        get = states.get if states is not None else engine.backend.get
        self._drain(
            engine,
            upto,
            engine.scheduler.evt_due,
            engine.scheduler.evt_sched,
            get,
            engine.backend.remove,
        )

    def _drain(
        self,
        engine: Engine,
        upto: int,
        due_heap: list[tuple[int, int, Any]],
        sched: dict[Any, int],
        get: Callable[[Any], KeyState | None],
        remove: Callable[[Any], None] | None,
    ) -> None:
        """For each due key: emit its windows with contents whose end is in ``(upto of the
        key's last firing, upto]`` in order of end, drop the panes no live window contains,
        and schedule its next timer. Inlined: a key is visited at most once per watermark,
        but with hopping windows nearly every key is due at every watermark."""
        size, slide, offset, lateness = self.size, self.slide, self.offset, self.lateness
        combine, owned = self.combine, self.owned
        direct = self.result
        identity = self.result_is_contents
        append = engine.outputs.output.append
        new_tuple = tuple.__new__
        result_type = WindowResult
        windows = _Windows(size)  # every key fires the same windows: one object each
        end_of_time = _END_OF_TIME
        max_timestamp = MAX_TIMESTAMP
        last = size - 1  # max_timestamp - start of a window whose end is not clamped
        missing = _MISSING
        push = heapq.heappush
        s_max = upto - size + 1  # the last window start ending by upto (end not clamped)
        if not self._copies_decided and due_heap:
            self._decide_copies(get(due_heap[0][2]))
            owned = self.owned
        fired = 0
        key: Any = None
        evaluating: int | None = None  # start of the window being evaluated
        rest = iter(take_due(due_heap, upto))  # a key is rescheduled after upto
        try:
            for t, _, key in rest:
                if sched.get(key) != t:
                    continue  # superseded by an earlier schedule of this key
                del sched[key]
                ks = get(key)
                if ks is None:
                    continue
                sl = ks.slices
                if sl is None or sl.due is None or sl.due > upto:
                    if sl is not None and sl.due is not None:
                        sched[key] = sl.due
                        engine.scheduler.seq += 1
                        push(due_heap, (sl.due, engine.scheduler.seq, key))
                    elif remove is not None and ks.is_empty():
                        remove(key)
                    continue
                starts, contents = sl.starts, ks.contents
                n = len(starts)
                if sl.upto < upto:
                    # Emit the windows ending in (sl.upto, upto]. Two-stack range aggregate
                    # over pane indexes: suffix[k - front_lo] combines panes k .. split-1,
                    # back_agg combines panes split .. hi-1 and may be modified only when
                    # back_owned (otherwise it is a pane's partial or was handed out).
                    s = sl.upto - size + 2
                    s += (offset - s) % slide  # the first window ending after sl.upto
                    i = bisect_left(starts, s)
                    j = front_lo = split = hi = i
                    suffix: list[Any] = []
                    back_agg: Any = missing
                    back_owned = False
                    while s <= s_max:
                        while i < n and starts[i] < s:
                            i += 1
                        if i == n:
                            break
                        first_pane = starts[i]
                        if first_pane >= s + size:  # no contents: jump to the next window
                            s = first_pane - size + 1
                            s += (offset - s) % slide
                            continue
                        if j < i:
                            j = i
                        while j < n and starts[j] < s + size:
                            j += 1
                        evaluating = s
                        if j == i + 1:  # one pane: its partial is the window's aggregate
                            value = contents[first_pane]
                        elif i >= split:  # the front is used up: rebuild it from i .. j-1
                            suffix = [None] * (j - i)
                            acc = contents[starts[j - 1]]
                            suffix[j - 1 - i] = acc
                            for k in range(j - 2, i - 1, -1):
                                part = contents[starts[k]]
                                acc = combine(part if owned is None else owned(part), acc)
                                suffix[k - i] = acc
                            front_lo, split, hi = i, j, j
                            back_agg, back_owned = missing, False
                            value = acc
                        else:
                            if j > hi:  # panes entering the range
                                for k in range(hi, j):
                                    part = contents[starts[k]]
                                    if back_agg is missing:
                                        back_agg, back_owned = part, owned is None
                                    else:
                                        if not back_owned:
                                            back_agg, back_owned = owned(back_agg), True  # type: ignore[misc]
                                        back_agg = combine(back_agg, part)
                                hi = j
                            value = suffix[i - front_lo]
                            if back_agg is not missing:
                                if owned is not None:
                                    value = owned(value)
                                value = combine(value, back_agg)
                        # The windows from s to stop have exactly the panes i .. j-1: one
                        # result, shared by their outputs.
                        stop = first_pane
                        if j < n and starts[j] - size < stop:
                            stop = starts[j] - size
                        if s_max < stop:
                            stop = s_max
                        result = value if identity else direct(value)
                        if result is None:  # a None result is an empty window (Flink)
                            nulls = [windows[w] for w in range(s, stop + 1, slide)]
                            engine.null_results(key, nulls)
                            s += (stop - s) // slide * slide + slide
                            continue
                        fired += (stop - s) // slide + 1
                        while s <= stop:
                            append(
                                new_tuple(result_type, (key, windows[s], result, s + last, None))
                            )
                            s += slide
                    if upto == max_timestamp:
                        self._fire_clamped(engine, key, ks, s)
                    sl.upto = upto
                # Drop the panes whose last window is cleaned up, then schedule the key at
                # its first remaining pane's drop time or the end of its next window with
                # contents, whichever is earlier.
                k = 0
                drop = max_timestamp
                if upto == max_timestamp:
                    # Every timer has fired: a pane stays where a window containing it keeps
                    # its state (a saturated cleanup time without a timer at the end of time).
                    kept = [p for p in starts if self._keeps_pane(p, upto)]
                    if len(kept) < n:
                        for p in set(starts).difference(kept):
                            del contents[p]
                        starts[:] = kept
                        n = len(kept)
                while k < n and upto < max_timestamp:
                    p = starts[k]
                    end = p - (p - offset) % slide + size  # end of the last window with p
                    if end > end_of_time:
                        end = end_of_time
                    drop = end - 1 + lateness
                    if drop > max_timestamp:
                        drop = max_timestamp
                    if drop > upto:
                        break
                    del contents[p]
                    k += 1
                if k:
                    del starts[:k]
                    n -= k
                if not n:
                    sl.due = None
                    if remove is not None and ks.is_empty():
                        remove(key)
                    continue
                if upto == max_timestamp:
                    sl.due = None  # fired everything; what is left is never cleaned up
                    continue
                drop = self._next_due(starts, upto, drop)
                sl.due = drop
                sched[key] = drop
                engine.scheduler.seq += 1
                push(due_heap, (drop, engine.scheduler.seq, key))
        except Exception as exc:
            if evaluating is not None:
                window = TimeWindow(evaluating, min(evaluating + size, end_of_time))
                note_window(exc, window, key)
            raise
        finally:
            put_back(due_heap, rest)  # the keys not visited, if interrupted
            engine.outputs.metrics.num_windows_fired += fired

    def _next_due(self, starts: list[int], upto: int, drop: int) -> int:
        """The key's timer after a firing up to ``upto``: the end of its next window with
        contents (``starts``: its pane starts) or ``drop`` (its first pane's drop time),
        whichever is earlier."""
        size, slide, offset = self.size, self.slide, self.offset
        s = upto - size + 2
        s += (offset - s) % slide  # the first window ending after upto
        i = bisect_left(starts, s)
        if i < len(starts):
            s2 = starts[i] - size + 1
            s2 += (offset - s2) % slide
            if s2 > s:
                s = s2
            end = min(s + size, _END_OF_TIME)
            if end - 1 < drop:
                drop = end - 1
        return drop

    def _drop_time(self, p: int) -> int:
        """When the pane at ``p`` is dropped: the cleanup time of its last window."""
        end = min(p - (p - self.offset) % self.slide + self.size, _END_OF_TIME)
        return min(end - 1 + self.lateness, MAX_TIMESTAMP)

    # ------------------------------------------------------------------ exchange
    def import_panes(self, ks: KeyState, reduced: ReducedPanes) -> None:
        """Put ``reduced`` into the new ``ks``, its timer as a firing up to its upto left it."""
        import_panes(ks, reduced)
        sl = ks.slices
        if sl is not None and sl.starts and reduced.upto < MAX_TIMESTAMP:
            sl.due = self._next_due(sl.starts, reduced.upto, self._drop_time(sl.starts[0]))

    def _decide_copies(self, ks: KeyState | None) -> None:
        """Accumulators that are immutable values (numbers, strings, tuples of those) cannot
        be modified by ``merge``: combine them without defensive copies. Decided once, from
        a new accumulator and the first pane partial."""
        if ks is None or ks.slices is None or not ks.slices.starts:
            return
        part = ks.contents[ks.slices.starts[0]]
        if _immutable(self.aggregate.create_accumulator()) and _immutable(part):
            self.owned = None
        self._copies_decided = True

    def _fire_clamped(self, engine: Engine, key: Any, ks: KeyState, s: int) -> None:
        """At the end of time: fire the windows from start ``s`` on whose ends are clamped
        to the end of time, one at a time."""
        sl = ks.slices
        assert sl is not None
        starts = sl.starts
        while True:
            i = bisect_left(starts, s)
            if i == len(starts):
                return
            if starts[i] >= s + self.size:
                s = self._align_up(starts[i] - self.size + 1)
                continue
            self._fire_window(engine, key, ks, s)
            s += self.slide

    # ------------------------------------------------------------------ inspection
    def live_windows(self, ks: KeyState, watermark: int) -> list[TimeWindow]:
        """The windows Flink would keep for the key: those containing a pane whose cleanup
        time is ahead of ``watermark``."""
        sl = ks.slices
        if sl is None:
            return []
        found: set[int] = set()
        for p in sl.starts:
            s = self._last_start(p)
            while s > p - self.size:
                if keeps_state(self._max_ts(s), self._cleanup(s), watermark):
                    found.add(s)
                s -= self.slide
        return [TimeWindow(s, self._max_ts(s) + 1) for s in sorted(found)]

    def _keeps_pane(self, p: int, watermark: int) -> bool:
        """Whether a window containing the pane at ``p`` still holds its state."""
        s = self._last_start(p)
        while s > p - self.size:
            if keeps_state(self._max_ts(s), self._cleanup(s), watermark):
                return True
            s -= self.slide
        return False

    def num_timers(self, ks: KeyState, watermark: int) -> int:
        """The event-time timers Flink would hold for the key: an end-of-window timer per
        live window not yet past its end, and a cleanup timer per live window whose cleanup
        time differs from its end (and is not the end of time)."""
        windows = self.live_windows(ks, watermark)
        return sum(
            len(window_timers(w.end - 1, self._cleanup(w.start), watermark)) for w in windows
        )


def window_timers(max_ts: int, cleanup: int, watermark: int) -> tuple[int, ...]:
    """The event-time timers Flink would hold for a live window (its max timestamp, its
    cleanup time): its end-of-window timer until the watermark passes it, its cleanup timer
    where that differs from its end (and is not the end of time)."""
    end = (max_ts,) if max_ts > watermark else ()
    return (*end, cleanup) if cleanup != max_ts and has_cleanup_timer(cleanup) else end


class _Windows(dict[int, TimeWindow]):
    """``TimeWindow(start, start + size)`` by start, each created once (on first use)."""

    __slots__ = ("size",)

    def __init__(self, size: int) -> None:
        super().__init__()
        self.size = size

    def __missing__(self, start: int) -> TimeWindow:
        window = self[start] = tuple.__new__(TimeWindow, (start, start + self.size))
        return window


_SCALARS = (int, float, complex, bool, str, bytes, type(None))


def _immutable(value: Any) -> bool:
    """Whether ``value`` is a number, string or bytes, or a tuple of those."""
    if type(value) in _SCALARS:
        return True
    return type(value) is tuple and all(type(v) in _SCALARS for v in value)


class PanesStrategy(WindowStrategy):
    """Hopping windows as panes (:class:`~windowing.plan.Strategy` ``PANES``)."""

    def __init__(self, engine: Engine, shape: tuple[int, int, int]) -> None:
        super().__init__(engine)
        result = engine.direct_result
        assert result is not None
        self.hopping = HoppingPanes(
            *shape,
            engine.job.allowed_lateness,
            partials=engine.partials,
            result=result,
            result_is_contents=not isinstance(engine.job.spec, Aggregate),
        )

    def add_element(self, key: Any, ks: KeyState, value: Any, timestamp: int | None) -> bool:
        return self.hopping.add(self.engine, key, ks, value, timestamp)

    def process(self, elements: Iterable[Element], states: dict[Any, KeyState]) -> bool:
        self.hopping.process(self.engine, elements)
        return True

    def fire_event_timers(self, key: Any, ks: KeyState, upto: int) -> None:
        self.hopping.fire(self.engine, key, ks, upto)

    def fire_processing_timers(self, key: Any, ks: KeyState, upto: int) -> None:
        return  # event-time windows with the default trigger register none

    def drain_event_time(self, upto: int) -> bool:
        self.hopping.drain(self.engine, upto)
        return True

    def num_event_time_timers(self, ks: KeyState) -> int:
        return self.hopping.num_timers(ks, self.engine.clocks.watermark)

    def num_state_entries(self, ks: KeyState) -> int:
        return len(self.hopping.live_windows(ks, self.engine.clocks.watermark))

    def live_windows(self, ks: KeyState) -> list[Any] | None:
        return self.hopping.live_windows(ks, self.engine.clocks.watermark)

    def window_timers(self, ks: KeyState, window: Any) -> tuple[int, ...] | None:
        cleanup = self.hopping._cleanup(window.start)
        return window_timers(window.end - 1, cleanup, self.engine.clocks.watermark)

    def export_panes(self, ks: KeyState) -> ReducedPanes | None:
        return export_panes(ks)

    def import_panes(self, ks: KeyState, reduced: ReducedPanes) -> bool:
        self.hopping.import_panes(ks, reduced)
        return True

    def rows_in(self, ks: KeyState, window: Any, namespace: Any) -> int | None:
        """The rows of the window's panes (0 without any), ``None`` when one of them took
        rows in before they were counted."""
        sl, counts = ks.slices, ks.row_counts
        if not self.engine.count_rows:
            return None
        if sl is None:
            return 0
        starts = sl.starts
        i = bisect_left(starts, window.start)
        j = bisect_left(starts, window.start + self.hopping.size, i)
        if i == j:
            return 0
        if counts is None:
            return None
        total = 0
        for k in range(i, j):
            n = counts.get(starts[k])
            if n is None:
                return None
            total += n
        return total
