"""KIP-450 sliding windows as Kafka Streams computes them (``KStreamSlidingWindowAggregate``).

Kafka keeps, per key, a store of windows, each with its aggregate and the largest timestamp
of the records in it. A record fetches the windows starting in ``[ts - 2 * size, ts + 1]``
and, from the newest start down (``processReverse``):

* updates each window that contains it; the first of them (the latest start) is its
  *right-window aggregate*: the records after it;
* updates its left window ``[ts - size; ts]`` if it exists; when that window holds no earlier
  record the record is done (``return``);
* stops at the first window ending before it: its aggregate seeds the record's new left
  window, and its largest timestamp is the *previous record*.

Then (``createWindows``) it creates the previous record's right window (holding only this
record) when missing and non-empty, its own left window (seeded from the window found, plus
the record), and its own right window (a copy of the right-window aggregate, without the
record) when a later record falls in it. A record with ``0 <= ts < size`` goes through
``processEarly`` instead: Kafka cannot have negative window starts, so such records share the
window ``[0; size]``. A record none of whose windows can still be updated is dropped before
any of this (``ts + 1 + size <= stream time - grace``).

So a window's aggregate is built from other windows' aggregates, in the order the records
arrived, exactly as Kafka builds it, including Kafka's edge cases: the shared early window,
and records that only reached windows which were already closed are not in windows created
later. Negative timestamps, which Kafka cannot have, take the general path.

The operator's watermark plays Kafka's stream time minus one: a window is closed when
``end + grace <= watermark`` (Kafka: ``end < stream time - grace``). Kafka forwards every
update; here each window a record creates or updates gets the trigger's ``on_element``, in
Kafka's order, so ``OnWindowUpdateTrigger`` emits Kafka's update stream and the default
``EventTimeTrigger`` fires a window when the watermark passes its end.

Windows that closed stay in the key's store until no record that can still arrive would
fetch them. Kafka's store retention (``2 * size + grace`` from the latest window start of any
key of its task) can hide such windows after a jump in stream time; that is not reproduced
(``docs/semantics.md``, ``tests/unit/test_kafka_store_retention.py``).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from windowing.engine.keystate import KafkaWindowStore, KeyState
from windowing.engine.strategy import Engine
from windowing.functions.spec import Aggregate, Fold, Reduce
from windowing.sliding import _MISSING as SLIDING_MISSING
from windowing.time import MAX_TIMESTAMP
from windowing.triggers.base import TriggerResult
from windowing.windows import TimeWindow

__all__ = ["KafkaSliding", "KafkaWindowStore"]

# "No aggregate yet": the named sentinel, which stays itself through snapshots.
_MISSING: Any = SLIDING_MISSING
_CONTINUE = TriggerResult.CONTINUE


class KafkaSliding:
    """Kafka's per-record algorithm for one operator (``size`` and grace in ms)."""

    def __init__(self, engine: Engine, size: int, grace: int) -> None:
        self.size = size
        self.grace = grace
        self.copy = _copier(engine)

    def window_at(self, start: int) -> TimeWindow:
        """The store's window starting at ``start``: ``[start; start + size]``, its end
        clamped at the end of time (its max timestamp is then ``MAX_TIMESTAMP``)."""
        end = start + self.size + 1
        return TimeWindow(start, end if end <= MAX_TIMESTAMP else MAX_TIMESTAMP + 1)

    # ------------------------------------------------------------------ time
    def _closed(self, window: TimeWindow, wm: int) -> bool:
        """Kafka's ``windowEnd < closeTime`` with the watermark as stream time - 1."""
        cleanup = window.end - 1 + self.grace
        return (cleanup if cleanup < MAX_TIMESTAMP else MAX_TIMESTAMP) <= wm

    def horizon(self, wm: int) -> int:
        """Windows starting at or before this are never fetched again: a record that is not
        dropped has ``ts + size + grace > wm`` and fetches from ``ts - 2 * size``."""
        return wm - 3 * self.size - self.grace

    # ------------------------------------------------------------------ records
    def add(self, engine: Engine, key: Any, ks: KeyState, value: Any, ts: int) -> bool:
        """Process one record; returns whether it went into some window."""
        size = self.size
        wm = engine.clocks.watermark
        if ts + size + self.grace <= wm:
            return False  # Kafka drops it before looking at any window
        store = ks.kafka
        if store is None:
            store = ks.kafka = KafkaWindowStore()
        elif store.starts and store.starts[0] <= self.horizon(wm):
            store.expire(self.horizon(wm))
        if self.irregular(ts, wm, store):
            store.irregular_upto = max(store.irregular_upto, ts + 1)
        run = _Run(self, engine, key, ks, store, value, ts)
        if 0 <= ts < size:
            run.process_early()
        else:
            run.process_reverse()
        self._schedule_expiry(engine, ks, store)
        return run.added

    def irregular(self, ts: int, wm: int, store: KafkaWindowStore) -> bool:
        """Whether the record at ``ts`` may leave windows that differ from KIP-450's
        definition (each window: the records of its range): one of its windows is closed
        (``ts + grace <= wm``), it is near 0 (Kafka's shared early window, its fetch range cut
        at 0), or it reads windows that may already differ (``ts - 2 * size`` at or before
        ``store.irregular_upto``). Every window it touches starts at or before ``ts + 1``."""
        size = self.size
        return ts + self.grace <= wm or 0 <= ts <= 2 * size or ts - 2 * size <= store.irregular_upto

    def _schedule_expiry(self, engine: Engine, ks: KeyState, store: KafkaWindowStore) -> None:
        """One timer per key forgets its store once no record can fetch from it."""
        if store.expiry_at is not None or not store.starts:
            return
        at = store.starts[-1] + 3 * self.size + self.grace
        if at < MAX_TIMESTAMP:
            engine.register_store_expiry(ks, at)
            store.expiry_at = at

    def expire(self, engine: Engine, ks: KeyState, time: int) -> None:
        """The store-expiry timer at ``time`` fired."""
        store = ks.kafka
        if store is None:
            return
        store.expiry_at = None
        store.expire(self.horizon(time))
        if not store.starts:
            ks.kafka = None
        else:
            self._schedule_expiry(engine, ks, store)


class _Run:
    """One record's pass over the key's windows (Kafka's local variables)."""

    def __init__(
        self,
        sliding: KafkaSliding,
        engine: Engine,
        key: Any,
        ks: KeyState,
        store: KafkaWindowStore,
        value: Any,
        ts: int,
    ) -> None:
        self.sliding = sliding
        self.engine = engine
        self.key = key
        self.ks = ks
        self.store = store
        self.value = value
        self.ts = ts
        self.wm = engine.clocks.watermark
        self.added = False

    # ------------------------------------------------------------------ Kafka's passes
    def process_reverse(self) -> None:
        size, ts, store = self.sliding.size, self.ts, self.store
        lo = ts - 2 * size
        if ts >= 0:
            lo = max(0, lo)
        starts = store.fetch(lo, ts + 1)
        seen = set(starts)
        left_seed: Any = _MISSING
        right_seed: tuple[Any, int] | None = None
        left_exists = right_exists = False
        previous: int | None = None
        for start in reversed(starts):
            end = start + size
            if start == ts + 1:
                right_exists = True
            elif end > ts:
                if right_seed is None:
                    right_seed = (self.sliding.copy(store.values[start]), store.max_ts[start])
                self.update(start)
            elif end == ts:
                left_exists = True
                window_max = store.max_ts[start]  # before this record updates it
                self.update(start)
                if window_max < ts:
                    previous = window_max
                else:
                    return
            else:
                left_seed = store.values[start]
                previous = store.max_ts[start]
                break
        # createWindows: the previous record's right window, the left window, the right window
        if previous is not None:
            start = previous + 1
            if start not in seen and start + size >= ts:
                self.create(start, _MISSING, ts, update=True)
        if not left_exists:
            seed = _MISSING
            if previous is not None and ts - size <= previous:
                seed = self.sliding.copy(left_seed)
            self.create(ts - size, seed, ts, update=True)
        if not right_exists and right_seed is not None and right_seed[1] > ts:
            self.create(ts + 1, right_seed[0], right_seed[1], update=False)

    def process_early(self) -> None:
        """Kafka's ``processEarly``: ``0 <= ts < size`` (window starts cannot be negative)."""
        ts, store = self.ts, self.store
        starts = store.fetch(0, ts + 1)
        seen = set(starts)
        combined: int | None = None
        right_seed: tuple[Any, int] | None = None
        right_exists = False
        previous: int | None = None
        for start in starts:
            if start == 0:
                combined = 0
                if store.max_ts[0] < ts:
                    previous = store.max_ts[0]
            elif start <= ts:
                right_seed = (self.sliding.copy(store.values[start]), store.max_ts[start])
                self.update(start)
            elif start == ts + 1:
                right_exists = True
        if right_seed is None and combined is not None and store.max_ts[0] > ts:
            right_seed = (self.sliding.copy(store.values[0]), store.max_ts[0])
        if not right_exists and right_seed is not None and right_seed[1] > ts:
            self.create(ts + 1, right_seed[0], right_seed[1], update=False)
        if previous is not None and previous + 1 not in seen:
            self.create(previous + 1, _MISSING, ts, update=True)
        if combined is None:
            self.create(0, _MISSING, ts, update=True)
        else:
            self.update(0)

    # ------------------------------------------------------------------ windows
    def update(self, start: int) -> None:
        """Kafka's ``updateWindowAndForward`` of a stored window: add the record unless the
        window is closed."""
        window = self.sliding.window_at(start)
        if self.sliding._closed(window, self.wm):
            return
        store = self.store
        store.max_ts[start] = max(self.ts, store.max_ts[start])
        self._add(window, start)

    def create(self, start: int, seed: Any, max_ts: int, *, update: bool) -> None:
        """A new window: ``seed`` (a copy of another window's aggregate, or nothing), plus the
        record when ``update`` (Kafka puts a right window without the closed-window check)."""
        window = self.sliding.window_at(start)
        if update and self.sliding._closed(window, self.wm):
            return
        store = self.store
        contents = self.ks.contents
        if seed is _MISSING:
            store.put(start, _MISSING, max_ts)
            contents.pop(window, None)
        else:
            store.put(start, seed, max_ts)
            contents[window] = seed
        if update:
            self._add(window, start)
        elif seed is not _MISSING:
            self._on_element(window)

    def _add(self, window: TimeWindow, start: int) -> None:
        """Add the record to the window's aggregate (the store's) and to its contents, then
        run the trigger. Both are one object, unless a trigger purged the contents: then
        the contents restart from this record and the store keeps Kafka's aggregate."""
        engine, store, contents = self.engine, self.store, self.ks.contents
        current = store.values[start]
        if current is not _MISSING and contents.get(window, _MISSING) is current:
            engine.add_contents(contents, window, self.value, self.ts)
            store.values[start] = contents[window]
        else:
            holder: dict[Any, Any] = {} if current is _MISSING else {window: current}
            engine.add_contents(holder, window, self.value, self.ts)
            store.values[start] = holder[window]
            if current is _MISSING:
                contents[window] = holder[window]  # a new window: one object for both
            else:
                engine.add_contents(
                    contents, window, self.value, self.ts
                )  # purged contents restart
        if window.start <= self.ts <= window.end - 1:
            self.added = True
        self._on_element(window)

    def _on_element(self, window: TimeWindow) -> None:
        engine, ks = self.engine, self.ks
        ctx = engine.ctx
        ctx.key, ctx.ks, ctx.window = self.key, ks, window
        result = engine.job.trigger.on_element(self.value, self.ts, window, ctx)
        if result is not _CONTINUE:
            if result.is_fire() and not engine.emit(self.key, ks, window, window):
                return
            if result.is_purge():
                ks.contents.pop(window, None)
        engine.register_cleanup_timer(ks, window)


def _copier(engine: Engine) -> Callable[[Any], Any]:
    """A copy of a window's contents that adding to another window cannot change (Kafka
    deserializes a fresh aggregate from its store)."""
    spec = engine.job.spec
    if engine.job.evictor is not None or not isinstance(spec, Reduce | Aggregate | Fold):
        return lambda v: v if v is _MISSING else list(v)
    if isinstance(spec, Aggregate):
        merge, create = spec.function.merge, spec.function.create_accumulator
        return lambda v: v if v is _MISSING else merge(create(), v)
    if isinstance(spec, Fold):
        return copy.deepcopy
    return lambda v: v  # reduce functions never modify their arguments
