"""KIP-450 sliding windows derived from the record timeline, with one timer per key.

With the built-in ``EventTimeTrigger`` or ``OnWindowCloseTrigger``, no evictor and no
process function, a sliding-distinct window needs no state of its own: its contents are a
range of the key's timeline (``windowing.sliding``) and its firing time is a function of the
timestamps that define it. The windows of a key are

* the *left* window ``[t - size, t]`` of each timestamp ``t`` holding a record that went into
  some window, firing at ``t`` (plus the lateness for ``OnWindowCloseTrigger``);
* the *right* window ``[q + 1, q + 1 + size]`` of each timestamp ``q``, which exists once a
  record lies in it (its contents are then not empty), firing at ``q + 1 + size``;

a left window can be a right window too (``t = q + 1 + size``) and fires once. A key keeps one
timer, the next firing time; when it is due, the windows firing in ``(timeline.upto, watermark]``
are enumerated from the sorted timestamps, in order of end, and their contents are read from
the timeline. Windows that a late record creates or changes after their end are fired by the
element path (late firings), which also moves ``timeline.upto`` to the watermark: a window
firing by ``upto`` never fires from the timer. The per-window path of the operator (a timer
per window, a live-window set) gives the same results; the differential test
``test_lazy_windows_match_materialised_windows`` holds them equal.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable
from typing import Any

import windowing.sliding as sliding_module
from windowing.engine.keystate import KeyState
from windowing.engine.notes import note_element, note_window
from windowing.engine.strategy import Engine
from windowing.records import WindowResult
from windowing.rules import cleanup_time, keeps_state
from windowing.sliding import Partials, Timeline
from windowing.time import MAX_TIMESTAMP
from windowing.windows import TimeWindow

__all__ = ["DerivedSliding"]

_EMPTY: Any = sliding_module._EMPTY  # partial of a timestamp whose records are in no window
_NONE: Any = sliding_module._MISSING  # an empty range
_SMALL_RANGE = 12  # ranges up to this many timestamps are combined directly


class DerivedSliding:
    """Element, timer and firing logic of derived sliding-distinct windows for one operator."""

    def __init__(
        self,
        size: int,
        lateness: int,
        *,
        fires_at_end: bool,
        partials: Partials,
        result: Callable[[Any], Any] | None,
        result_is_contents: bool = False,
    ) -> None:
        self.size = size
        self.lateness = lateness
        self.fires_at_end = fires_at_end  # EventTimeTrigger (else OnWindowCloseTrigger)
        self.delay = 0 if fires_at_end else lateness  # firing time - max_timestamp
        self.partials = partials
        self.result = result  # None: the operator evaluates the contents (fold, apply)
        self.result_is_contents = result_is_contents  # a reduce: the result is the contents
        # The partial of a timestamp's first record (None: the record itself, for a reduce).
        self.first = None if partials.kind == "reduce" else partials.first

    def _kept_at_end(self, timeline: Timeline) -> set[int]:
        """The windows (by start) that keep their state at the end of time: no cleanup timer
        (the cleanup time saturates), and with ``EventTimeTrigger`` no trigger timer at the
        end of time either (:func:`windowing.rules.keeps_state`)."""
        size, lateness = self.size, self.lateness
        kept = set()
        for start in timeline.live:
            max_ts = timeline.max_timestamp_of(start, size)
            cleanup = cleanup_time(max_ts, lateness)
            if cleanup == MAX_TIMESTAMP and (
                keeps_state(max_ts, cleanup, MAX_TIMESTAMP) or not self.fires_at_end
            ):
                kept.add(start)
        return kept

    # ------------------------------------------------------------------ elements
    def add_in_order(self, timeline: Timeline, value: Any, ts: int) -> None:
        """A record later than every record of the key and than the watermark (and no later
        than ``MAX_TIMESTAMP - size - lateness - 3``): it creates its left window and maybe the
        previous record's right window, neither late nor due. :meth:`process` runs the same
        steps inlined."""
        size, delay = self.size, self.delay
        stamps = timeline.stamps
        live = timeline.live
        due = ts + size + self.lateness + 3  # forget the timeline
        start = ts - size  # the left window
        if start not in live:
            live.add(start)
            due = ts + delay
        if stamps:
            start = stamps[-1] + 1  # the previous record's right window
            if ts <= start + size and start != ts - size and start not in live:
                live.add(start)
                if start + size + delay < due:
                    due = start + size + delay
        stamps.append(ts)
        first = self.first
        timeline.partials.append(value if first is None else first(value))
        current = timeline.due  # Timeline.schedule (due is before the end of time)
        if current is None or due < current:
            timeline.due = due

    def process(
        self,
        engine: Engine,
        elements: Iterable[tuple[Any, int | None, Any]],
        on_element: Callable[[Any, KeyState, Any, int | None], bool],
    ) -> None:
        """The bulk element loop: a record later than every record of its key (after those no
        window needs any more are forgotten, as the operator's element path does) and than
        the watermark creates its left window and maybe the previous record's right window,
        neither due yet; any other record takes the operator's sliding element path."""
        states = engine.states
        assert states is not None

        size, lateness = self.size, self.lateness
        wm = engine.clocks.watermark
        evt_sched = engine.scheduler.evt_sched
        scheduler = engine.scheduler
        min_due = scheduler.min_due
        limit = MAX_TIMESTAMP - size - lateness - 3
        horizon = wm - size - lateness - 1  # records before it are in no live window
        delay = self.delay
        forget = size + lateness + 3  # the timeline is forgotten this long after its last record
        first = self.first
        count = 0
        key: Any = None
        ts: int | None = None
        try:
            for value, ts, key in elements:
                count += 1
                ks = states.get(key)
                if ks is None:
                    ks = states[key] = KeyState()
                if ts is not None and wm < ts <= limit:
                    timeline = ks.timeline
                    if timeline is None:
                        timeline = ks.timeline = Timeline(wm)
                    elif timeline.upto < wm:
                        timeline.upto = wm  # as the operator's element path does
                    stamps = timeline.stamps
                    if stamps and stamps[0] < horizon:
                        timeline.expire(horizon, size)
                    if not stamps or stamps[-1] < ts:
                        # add_in_order, inlined: this runs once per record.
                        live = timeline.live
                        due = ts + forget
                        start = ts - size  # the left window
                        if start not in live:
                            live.add(start)
                            due = ts + delay
                        if stamps:
                            start = stamps[-1] + 1  # the previous record's right window
                            if ts <= start + size and start != ts - size and start not in live:
                                live.add(start)
                                if start + size + delay < due:
                                    due = start + size + delay
                        stamps.append(ts)
                        timeline.partials.append(value if first is None else first(value))
                        current = timeline.due
                        if current is None or due < current:
                            timeline.due = due
                        else:
                            due = current
                        # Schedule the key (see drain): last in the schedule's order.
                        scheduled = evt_sched.get(key)
                        if scheduled is None:
                            evt_sched[key] = due
                        elif due < scheduled:
                            del evt_sched[key]
                            evt_sched[key] = due
                        if due < min_due:
                            min_due = due
                        continue
                if not on_element(key, ks, value, ts):
                    engine.not_added(key, ks, value, ts)
                engine.schedule(key, ks)
        except Exception as exc:
            note_element(exc, key, ts)
            raise
        finally:
            if min_due < scheduler.min_due:  # the generic path may have lowered it meanwhile
                scheduler.min_due = min_due
            engine.outputs.metrics.num_elements += count

    # ------------------------------------------------------------------ firing
    def fire(self, engine: Engine, key: Any, ks: KeyState, upto: int) -> None:
        """Fire the due windows of one key (a runtime that loads keys one at a time)."""
        timeline = ks.timeline
        if timeline is not None and timeline.due is not None and timeline.due <= upto:
            self._drain(engine, upto, {key: timeline.due}, {key: ks}.get)

    def drain(self, engine: Engine, upto: int) -> None:
        """The operator's event-time drain: fire every key whose timer is due by ``upto``,
        in the order of their timers.

        The schedule is ``engine.scheduler.evt_sched`` alone, ``{key: time of its one
        timer}``, kept in the order the keys were (re)scheduled: a key whose timer moves
        earlier is moved to the end. Keys due at the same time are visited in that order.
        With nearly every key due at every watermark, selecting the due keys from the dict
        is cheaper than keeping a heap of entries (one per reschedule, most of them
        superseded). The scheduler's ``min_due`` bounds the schedule from below (every place
        that schedules a key lowers it), so a watermark with no key due costs O(1)."""
        if upto < engine.scheduler.min_due:
            return
        states = engine.states
        get = states.get if states is not None else engine.backend.get
        try:
            self._drain(engine, upto, engine.scheduler.evt_sched, get, engine)
        finally:
            engine.scheduler.min_due = min(
                engine.scheduler.evt_sched.values(), default=MAX_TIMESTAMP
            )

    def _drain(
        self,
        engine: Engine,
        upto: int,
        sched: dict[Any, int],
        get: Callable[[Any], KeyState | None],
        driver: Engine | None = None,
    ) -> None:
        """For each due key: emit its windows firing in ``(timeline.upto, upto]`` in order of
        end, forget the records no window needs any more, and schedule its next timer (in
        ``sched``; a key left without a timeline is rescheduled or dropped by ``driver``).
        Inlined: with small slides nearly every key is due at every watermark."""
        size, lateness, delay = self.size, self.lateness, self.delay
        values = self.partials.kind == "values"
        reducing = self.partials.kind == "reduce"  # combined without copies
        combine = self.partials.combine
        owned = self.partials.owned
        aggregate_span = self.partials.aggregate_span
        direct = self.result
        identity = self.result_is_contents
        output = engine.outputs.output
        append = output.append
        emitted = len(output)  # the windows fired here are the results appended
        new_tuple = tuple.__new__
        time_window, result_type = TimeWindow, WindowResult
        empty, none = _EMPTY, _NONE
        end_max = MAX_TIMESTAMP + 1
        small = _SMALL_RANGE
        end_of_time = upto >= MAX_TIMESTAMP
        left_upto = upto - delay  # left windows of the timestamps <= left_upto fire by upto
        right_upto = left_upto - 1 - size  # right windows of the timestamps <= right_upto
        horizon = upto - size - lateness - 1  # timestamps before it are in no live window
        forget = size + lateness + 3  # the timeline is forgotten this long after its last record
        right_delay = 1 + size + delay  # a right window fires this long after its timestamp
        key: Any = None
        window: Any = None
        # The due keys, by time; the same time in the schedule's order (a stable sort). A key
        # is rescheduled after upto; those not visited when an error stops the loop stay.
        ready = [k for k, t in sched.items() if t <= upto]
        ready.sort(key=sched.__getitem__)
        try:
            for key in ready:
                del sched[key]  # only this key's visit reschedules it
                ks = get(key)
                if ks is None:
                    continue
                timeline = ks.timeline
                if timeline is None:
                    due = None
                else:
                    due = timeline.due
                    if due is not None and due <= upto:
                        due = timeline.due = None
                        stamps = timeline.stamps
                        n = len(stamps)
                        after = timeline.upto
                        if after < upto:
                            # The windows firing in (after, upto]: left windows of
                            # stamps[li:lj], right windows of stamps[ri:rj].
                            ri = bisect_right(stamps, after - delay - 1 - size)
                            li = bisect_right(stamps, after - delay, ri)
                            if end_of_time and self.fires_at_end:
                                # Every window, also those ending at the end; a record past
                                # the end of time opens none that fires.
                                lj = bisect_right(stamps, MAX_TIMESTAMP, li)
                                rj = bisect_left(stamps, MAX_TIMESTAMP, ri, lj)
                            elif end_of_time:
                                # OnWindowCloseTrigger: a window whose cleanup time reaches
                                # the end of time is never cleaned up, so it never fires.
                                lj = bisect_left(stamps, MAX_TIMESTAMP - delay, li)
                                rj = bisect_left(stamps, MAX_TIMESTAMP - right_delay, ri, lj)
                            else:
                                lj = bisect_right(stamps, left_upto, li)
                                rj = bisect_right(stamps, right_upto, ri, lj)
                            next_left, next_right = lj, rj
                            partials = timeline.partials
                            bare = timeline.empties  # whether any partial is _EMPTY
                            plain = reducing and not bare  # small ranges: combined without checks
                            # Merge the left and right windows by end; a left window that is
                            # also the next right window fires once.
                            while li < lj or ri < rj:
                                if ri < rj:
                                    start = stamps[ri] + 1
                                    end = start + 1 + size
                                    if end > end_max:
                                        end = end_max
                                    right = li >= lj or stamps[li] >= end - 1
                                else:
                                    right = False
                                if right:
                                    ri += 1
                                    i = ri  # the first timestamp after stamps[ri - 1]
                                    j = bisect_right(stamps, end - 1, i)
                                    if li < lj and stamps[li] == end - 1 == start + size:
                                        li += 1  # the same window as the next left window
                                else:
                                    end = stamps[li] + 1
                                    start = end - 1 - size
                                    li += 1
                                    if partials[li - 1] is empty:
                                        continue  # the record is in no window: no left window
                                    i = bisect_left(stamps, start, 0, li)
                                    j = li
                                window = new_tuple(time_window, (start, end))
                                if plain and 1 < j - i <= small:
                                    contents = partials[i]
                                    i += 1
                                    while i < j:
                                        contents = combine(contents, partials[i])
                                        i += 1
                                elif values:
                                    contents = self.partials.contents(timeline, start, end - 1)
                                elif j - i == 1:
                                    contents = partials[i]
                                    if contents is empty:
                                        continue
                                elif j == i:
                                    continue  # a right window without records
                                elif j - i > small:
                                    contents = aggregate_span(timeline, i, j)
                                elif not bare:
                                    contents = owned(partials[i])  # type: ignore[misc]
                                    i += 1
                                    while i < j:
                                        contents = combine(contents, partials[i])
                                        i += 1
                                else:
                                    contents = none
                                    copied = owned is None
                                    for part in partials[i:j]:
                                        if part is empty:
                                            continue
                                        if contents is none:
                                            contents = part
                                        else:
                                            if not copied:
                                                contents, copied = owned(contents), True  # type: ignore[misc]
                                            contents = combine(contents, part)
                                if contents is none:
                                    continue
                                if direct is None:
                                    engine.emit_contents(key, ks, window, window, contents)
                                    continue
                                result = contents if identity else direct(contents)
                                if result is not None:  # None: an empty window (Flink)
                                    append(
                                        new_tuple(result_type, (key, window, result, end - 1, None))
                                    )
                                else:
                                    engine.null_results(key, (window,))
                            window = None
                            timeline.upto = upto
                        else:
                            partials = timeline.partials
                            next_left = bisect_right(stamps, left_upto)
                            next_right = bisect_right(stamps, right_upto)
                        if end_of_time:
                            # Every window has fired (or never will); those whose cleanup
                            # time saturates keep their state, as in Flink (rules).
                            kept = self._kept_at_end(timeline)
                            if kept:
                                timeline.live = kept
                                timeline.due = None
                            else:
                                ks.timeline = None
                        else:
                            if n and stamps[0] < horizon:
                                # Timeline.expire, inlined: nearly every visit forgets one.
                                k = bisect_left(stamps, horizon)
                                live = timeline.live
                                for gone in stamps[:k]:
                                    live.discard(gone - size)
                                    live.discard(gone + 1)
                                del stamps[:k]
                                if timeline.empties:
                                    timeline.empties -= sum(p is empty for p in partials[:k])
                                del partials[:k]
                                timeline.offset += k
                                n -= k
                                next_left -= k
                                next_right -= k
                            if not n:
                                timeline.live.clear()
                                ks.timeline = None
                            else:
                                # The next timer: the next left window, the next right window,
                                # or forgetting the timeline (at the latest at the end of time,
                                # where windows whose cleanup time is before it are cleaned).
                                due = min(stamps[-1] + forget, MAX_TIMESTAMP)
                                if next_left < n and stamps[next_left] + delay < due:
                                    due = stamps[next_left] + delay
                                if next_right < n and stamps[next_right] + right_delay < due:
                                    due = stamps[next_right] + right_delay
                                if due <= MAX_TIMESTAMP:
                                    timeline.due = due
                                else:
                                    due = None
                if due is not None:
                    sched[key] = due
                elif driver is not None and driver.schedule(key, ks) is False and ks.is_empty():
                    driver.backend.remove(key)
        except Exception as exc:
            if window is not None:
                note_window(exc, window, key)
            raise
        finally:
            if direct is not None:  # otherwise the operator counts the windows it evaluates
                engine.outputs.metrics.num_windows_fired += len(output) - emitted
