"""``.agg`` columns of KIP-450 sliding windows on whole Arrow columns, in streaming: Kafka's
window store as accumulator columns.

The window operator runs Kafka Streams' algorithm (:mod:`windowing.engine.kafka`): per key a
store of windows, each with its aggregate and its largest record timestamp, a new window's
aggregate seeded from a neighbour's. Fed records in order, that algorithm leaves exactly the
windows KIP-450 defines, each holding the records of its range. The columnar state keeps the
same store, one item of accumulators
(:class:`~windowing.spark.columnar.accumulators.AggregateItems`) per window, with the
window's largest record timestamp, the key's store-expiry time and how far the key's windows
may differ from the definition (``irregular_upto``), so a key's state converts each way
without loss (:meth:`~windowing.operator.WindowOperator.export_kafka_windows` /
:meth:`~windowing.operator.WindowOperator.import_kafka_windows`). A call

* fires the windows ending in ``(fired_upto, watermark]`` (``EventTimeTrigger``) and forgets
  the windows the key's store-expiry timer drops, as the operator's timers do;
* adds the rows of the keys whose rows all come after every record of the key's store and
  after the watermark: the windows Kafka would create are each record's left window
  ``[t - size; t]``, the right window of the key's latest record and of each new record with
  a later one within ``size + 1``; a window's aggregate is the aggregate Kafka would seed it
  from (the store's window with the latest start before it, within ``size``, when that one
  holds a record of its range), plus the new rows of its range, reduced with prefix sums and
  sparse tables (:meth:`~windowing.spark.columnar.accumulators.AggregateItems.reduce_ranges`).

The calls left to the operator: a key with a row at or before its latest record (Kafka's
out-of-order path) or one whose store may differ from the definition where the rows read
it (``irregular_upto``), rows at or behind the watermark (late, or within the grace of a
window that fired), rows near 0 (Kafka's shared early window) and near the ends of time,
sums that could leave 64 bits, float extremes meeting NaN or ``-0.0``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa

from windowing.engine.exchange import KafkaWindows
from windowing.engine.keystate import KeyState
from windowing.operator import WindowOperator
from windowing.spark.columnar.accumulators import AggregateItems
from windowing.spark.columnar.core import (
    ColumnarShape,
    ColumnarStep,
    OpenWindows,
    StreamingItems,
    near_ends_of_time,
    times_near_ends,
    window_groups,
)
from windowing.spark.columnar.ranges import keyed_search
from windowing.time import MIN_TIMESTAMP

__all__ = ["KafkaAccumulators"]

_Array = np.ndarray[Any, Any]

#: ``extra`` arrays of the state: per window its largest record timestamp; per window, the
#: key's store-expiry time and ``irregular_upto`` (the same for each window of a key).
_MAX_TS, _EXPIRY, _IRREGULAR = "max_ts", "expiry", "irregular"


@dataclass(frozen=True, eq=False)
class _Store:
    """A key group's windows sorted by key, then start: their key ``codes``, and per key
    code its store-expiry time and ``irregular_upto`` (``MIN_TIMESTAMP``: no store)."""

    windows: OpenWindows
    codes: _Array
    expiry: _Array
    irregular: _Array

    def take(self, keep: _Array) -> _Store:
        if keep.all():
            return self
        index = np.flatnonzero(keep)
        return _Store(self.windows.take(index), self.codes[index], self.expiry, self.irregular)


@dataclass(frozen=True)
class KafkaAccumulators(StreamingItems):
    """KIP-450 sliding windows of ``size`` (ms; grace ``allowed_lateness``) of ``.agg``
    columns (``items``) with the default trigger and no evictor, in streaming, as Kafka's
    algorithm leaves them (see the module docstring).

    Example::

        plan = KafkaAccumulators(items, size=10_000, allowed_lateness=0)
        step = plan.step(None, watermark, rows, times, None)  # None: the operator decides
    """

    items: AggregateItems
    size: int
    allowed_lateness: int = 0
    kind: ClassVar[str] = "kip450"
    shape: ClassVar[ColumnarShape] = ColumnarShape.KIP450

    @property
    def _retention(self) -> int:
        """A store's windows starting ``_retention`` before the watermark are never fetched
        again (:meth:`~windowing.engine.kafka.KafkaSliding.horizon`)."""
        return 3 * self.size + self.allowed_lateness

    @property
    def margin(self) -> int:
        """Times within this distance of the ends of time are left to the operator."""
        return self._retention + 2

    # ------------------------------------------------------------------ which calls
    def _far(self, t: _Array) -> _Array:
        """Rows near the ends of time, or near 0 (Kafka's shared early window ``[0; size]``
        and fetch ranges cut at 0)."""
        margin = self.margin
        return (  # type: ignore[no-any-return]
            times_near_ends(t, margin) | ((t >= 0) & (t <= 2 * self.size))
        )

    def rows_needing_the_operator(
        self, watermark: int, rows: pa.Table, times: pa.ChunkedArray
    ) -> _Array:
        """The rows the items cannot take, rows near 0 or the ends of time, and rows at or
        behind the watermark."""
        mask, t = self.items.rows_needing_the_operator(rows, times)
        if mask.all():
            return mask
        return mask | self._far(t) | (t <= watermark)

    def keys_needing_the_operator(
        self,
        state: OpenWindows | None,
        state_codes: _Array,
        watermark: int,
        times: _Array,
        row_codes: _Array,
    ) -> _Array:
        """Rows of keys with a row at or before the latest record of the key's store, or
        whose store may differ from the definition where the rows read it."""
        return self._conflicts(state, state_codes, times, row_codes)

    def _conflicts(
        self, state: OpenWindows | None, state_codes: _Array, times: _Array, row_codes: _Array
    ) -> _Array:
        n = len(times)
        if state is None or not len(state) or n == 0:
            return np.zeros(n, np.bool_)
        k = int(max(state_codes.max(initial=0), row_codes.max(initial=0))) + 1
        latest = np.full(k, MIN_TIMESTAMP, np.int64)
        np.maximum.at(latest, state_codes, state.extra[_MAX_TS])
        irregular = np.full(k, MIN_TIMESTAMP, np.int64)
        np.maximum.at(irregular, state_codes, state.extra[_IRREGULAR])
        conflict = (times <= latest[row_codes]) | (times - 2 * self.size <= irregular[row_codes])
        if not conflict.any():
            return conflict
        return np.isin(row_codes, row_codes[conflict])

    # ------------------------------------------------------------------ a call
    def step(
        self,
        state: OpenWindows | None,
        watermark: int,
        rows: pa.Table | None,
        times: _Array | None,
        codes: tuple[_Array, _Array] | None,
    ) -> ColumnarStep | None:
        """One streaming call on whole columns (see
        :func:`~windowing.spark.columnar.core.step_open_windows`): fire the windows ending in
        ``(fired_upto, watermark]``, run the keys' store-expiry timers, then add the rows."""
        size = self.size
        n_rows = 0 if times is None else len(times)
        if codes is None:
            state_codes = np.zeros(0 if state is None else len(state), np.int64)
            row_codes = np.zeros(n_rows, np.int64)
        else:
            state_codes, row_codes = codes
        empty = np.empty(0, np.int64)
        fired_starts: _Array = empty
        fired_rows: pa.Table | None = None
        fired_upto = watermark
        store: _Store | None = None
        if state is not None and len(state):
            fired_upto = max(state.fired_upto, watermark)
            ends = state.starts + size
            firing = np.flatnonzero((ends > state.fired_upto) & (ends <= watermark))
            if len(firing):
                fired_starts = state.starts[firing]
                fired_rows = self.items.results_of(state.rows.take(pa.array(firing)))
            store = self._expired(self._sorted(state, state_codes), watermark)

        def done(new: _Store | None) -> ColumnarStep:
            return ColumnarStep(
                fired_starts,
                fired_rows,
                empty,
                None if new is None else self._open(new, fired_upto),
                fired_starts + size + 1,
            )

        if rows is None or times is None or n_rows == 0:
            return done(store)
        if bool((self._far(times) | (times <= watermark)).any()):
            return None
        if state is not None and bool(self._conflicts(state, state_codes, times, row_codes).any()):
            return None
        return self._add(store, watermark, rows, times, row_codes, done)

    def _sorted(self, state: OpenWindows, codes: _Array) -> _Store:
        """The state by key, then start, with each key's expiry and ``irregular_upto``."""
        order = np.lexsort((state.starts, codes))
        if bool((order[1:] > order[:-1]).all()):
            windows = state
        else:
            windows = state.take(order)
            codes = codes[order]
        k = int(codes.max(initial=0)) + 1
        expiry = np.full(k, MIN_TIMESTAMP, np.int64)
        irregular = np.full(k, MIN_TIMESTAMP, np.int64)
        expiry[codes] = windows.extra[_EXPIRY]
        irregular[codes] = windows.extra[_IRREGULAR]
        return _Store(windows, codes, expiry, irregular)

    def _expired(self, store: _Store, watermark: int) -> _Store | None:
        """The windows the keys' store-expiry timers leave at ``watermark``: a timer at
        ``e`` forgets the windows starting at or before ``e - retention`` and is set again
        for the latest start left (:meth:`~windowing.engine.kafka.KafkaSliding.expire`)."""
        retention = self._retention
        codes, starts = store.codes, store.windows.starts
        expiry_of = store.expiry[codes]
        due = (expiry_of != MIN_TIMESTAMP) & (expiry_of <= watermark)
        if not due.any():
            return store
        keep = ~(due & (starts <= expiry_of - retention))
        due_keys = np.unique(codes[due])
        latest = np.full(len(store.expiry), MIN_TIMESTAMP, np.int64)
        np.maximum.at(latest, codes[keep], starts[keep])
        left = latest[due_keys]
        expiry = store.expiry.copy()
        expiry[due_keys] = np.where(left > MIN_TIMESTAMP, left + retention, MIN_TIMESTAMP)
        # no window left, or the timer set again is due too: it forgets the rest
        gone = due_keys[(left == MIN_TIMESTAMP) | (expiry[due_keys] <= watermark)]
        expiry[gone] = MIN_TIMESTAMP
        irregular = store.irregular.copy()
        irregular[gone] = MIN_TIMESTAMP
        keep &= ~np.isin(codes, gone)
        kept = _Store(store.windows, codes, expiry, irregular).take(keep)
        return kept if len(kept.windows) else None

    def _add(
        self,
        store: _Store | None,
        watermark: int,
        rows: pa.Table,
        times: _Array,
        row_codes: _Array,
        done: Callable[[_Store | None], ColumnarStep],
    ) -> ColumnarStep | None:
        """Add rows that all come after their key's store and the watermark (see the module
        docstring)."""
        size, retention = self.size, self._retention
        order = np.lexsort((times, row_codes))
        t, rc = times[order], row_codes[order]
        new_items = self.items.items_of(rows.take(pa.array(order)))
        k = int(rc.max(initial=0)) + 1
        if store is not None:
            k = max(k, len(store.expiry))
            if not store.windows.rows.schema.equals(new_items.schema):
                return None  # state written with another schema (e.g. session time zone)
            # the store of a key with rows first forgets what no row can fetch
            horizon = watermark - retention
            if horizon > MIN_TIMESTAMP:
                store = store.take(~(np.isin(store.codes, rc) & (store.windows.starts <= horizon)))
        expiry = np.full(k, MIN_TIMESTAMP, np.int64)
        irregular = np.full(k, MIN_TIMESTAMP, np.int64)
        latest = np.full(k, MIN_TIMESTAMP, np.int64)  # each key's latest record
        if store is not None:
            expiry[: len(store.expiry)] = store.expiry
            irregular[: len(store.irregular)] = store.irregular
            np.maximum.at(latest, store.codes, store.windows.extra[_MAX_TS])
        # each key's distinct new times: left windows, and the right windows of records
        # with a later record within size + 1
        head = np.flatnonzero(np.concatenate(([True], (rc[1:] != rc[:-1]) | (t[1:] != t[:-1]))))
        u, uc = t[head], rc[head]
        follows = np.concatenate(((uc[1:] == uc[:-1]) & (u[1:] - u[:-1] <= size + 1), [False]))
        first = np.concatenate(([True], uc[1:] != uc[:-1]))
        has_latest = latest[uc[first]] > MIN_TIMESTAMP
        right_of_latest = has_latest & (u[first] <= latest[uc[first]] + 1 + size)
        new_starts = np.concatenate(
            (u - size, u[follows] + 1, latest[uc[first]][right_of_latest] + 1)
        )
        new_codes = np.concatenate((uc, uc[follows], uc[first][right_of_latest]))
        # a key without a store sets its expiry timer at its first record's left window
        fresh = ~has_latest & (expiry[uc[first]] == MIN_TIMESTAMP)
        expiry[uc[first][fresh]] = u[first][fresh] - size + retention
        # the new windows not in the store, and the store's window Kafka seeds each from
        parts: list[pa.Table] = []
        groups: list[_Array] = []
        group_codes: list[_Array] = []
        stamps: list[_Array] = []
        if store is not None and len(store.windows):
            old = store.windows
            hit = keyed_search(store.codes, old.starts, new_codes, new_starts, "left")
            if hit is None:
                return None
            n_old = len(old)
            at = np.minimum(hit, n_old - 1)
            exists = (hit < n_old) & (store.codes[at] == new_codes) & (old.starts[at] == new_starts)
            before = hit - 1
            prior = np.maximum(before, 0)
            seeded = (
                ~exists
                & (before >= 0)
                & (store.codes[prior] == new_codes)
                & (old.starts[prior] >= new_starts - size)
                & (old.extra[_MAX_TS][prior] >= new_starts)
            )
            seeds = prior[seeded]
            parts += [old.rows, old.rows.take(pa.array(seeds, pa.int64()))]
            groups += [old.starts, new_starts[seeded]]
            group_codes += [store.codes, new_codes[seeded]]
            stamps += [old.extra[_MAX_TS], np.full(len(seeds), MIN_TIMESTAMP, np.int64)]
            window_starts = np.concatenate((old.starts, new_starts))
            window_codes = np.concatenate((store.codes, new_codes))
        else:
            window_starts, window_codes = new_starts, new_codes
        # each window once (a new window may be a stored one, or another new one)
        by_window = np.lexsort((window_starts, window_codes))
        window_starts, window_codes = window_starts[by_window], window_codes[by_window]
        once = np.concatenate(
            (
                [True],
                (window_starts[1:] != window_starts[:-1]) | (window_codes[1:] != window_codes[:-1]),
            )
        )
        window_starts, window_codes = window_starts[once], window_codes[once]
        # every window's new rows: a range of the key's sorted rows
        lo = keyed_search(rc, t, window_codes, window_starts, "left")
        hi = keyed_search(rc, t, window_codes, window_starts + size, "right")
        if lo is None or hi is None:
            return None
        holding = np.flatnonzero(hi > lo)
        reduced = self.items.reduce_ranges(new_items, lo[holding], hi[holding])
        if reduced is None:
            return None
        parts.append(reduced)
        groups.append(window_starts[holding])
        group_codes.append(window_codes[holding])
        stamps.append(t[hi[holding] - 1])
        group, codes = np.concatenate(groups), np.concatenate(group_codes)
        found = self.items.reduce(group, pa.concat_tables(parts), codes)
        if found is None:
            return None
        starts, carriers, items = found
        # each window's largest record timestamp: the largest of its items'
        perm, heads = window_groups(group, codes)
        stamp = np.concatenate(stamps)
        latest = np.maximum.reduceat(stamp if perm is None else stamp[perm], heads)
        windows = OpenWindows(starts, items, watermark, self.kind, {_MAX_TS: latest})
        return done(_Store(windows, codes[carriers], expiry, irregular))

    def _open(self, store: _Store, fired_upto: int) -> OpenWindows:
        """The state of ``store``'s windows, fired up to ``fired_upto``."""
        windows = store.windows
        extra = {
            _MAX_TS: windows.extra[_MAX_TS],
            _EXPIRY: store.expiry[store.codes],
            _IRREGULAR: store.irregular[store.codes],
        }
        return OpenWindows(windows.starts, windows.rows, fired_upto, self.kind, extra)

    # ------------------------------------------------------------------ timers, listing
    def _pending(self, state: OpenWindows) -> tuple[_Array, _Array]:
        """Per window its end-of-window timer and cleanup timer, ``MAX`` once they ran."""
        never = np.iinfo(np.int64).max
        ends = state.starts + self.size
        cleanup = ends + self.allowed_lateness
        upto = state.fired_upto
        return np.where(ends > upto, ends, never), np.where(cleanup > upto, cleanup, never)

    def next_event_time(self, state: OpenWindows) -> int | None:
        end, cleanup = self._pending(state)
        expiry = state.extra[_EXPIRY]
        due = min(int(end.min()), int(cleanup.min()), int(expiry.min()))
        return due if due < np.iinfo(np.int64).max else None

    def listing(self, state: OpenWindows) -> Iterator[tuple[int, int, int, list[int]]]:
        never = np.iinfo(np.int64).max
        end, cleanup = self._pending(state)
        for i, (start, e, c) in enumerate(
            zip(state.starts.tolist(), end.tolist(), cleanup.tolist(), strict=True)
        ):
            yield i, start, start + self.size + 1, [x for x in dict.fromkeys((e, c)) if x < never]

    # ------------------------------------------------------------------ the operator's form
    def key_state_of(self, op: WindowOperator, state: OpenWindows, records: list[Any]) -> KeyState:
        """The operator's state of one key's windows (``records``: their accumulator
        lists)."""
        order = np.argsort(state.starts, kind="stable")
        expiry = int(state.extra[_EXPIRY][0])
        windows = KafkaWindows(
            tuple(state.starts[order].tolist()),
            tuple(records[i] for i in order.tolist()),
            tuple(state.extra[_MAX_TS][order].tolist()),
            None if expiry == MIN_TIMESTAMP else expiry,
            int(state.extra[_IRREGULAR][0]),
            state.fired_upto,
        )
        return op.import_kafka_windows(windows)

    def open_windows_of(
        self, op: WindowOperator, ks: KeyState, encode: Callable[[list[Any]], pa.Table | None]
    ) -> OpenWindows | None:
        """One key's columnar windows for the operator's state ``ks``, or ``None`` when
        ``ks`` holds anything else than Kafka's store with the default trigger's timers (or
        windows near the ends of time)."""
        found = op.export_kafka_windows(ks)
        if found is None or found.expiry_at is None:
            return None
        starts = np.array(found.starts, np.int64)
        if near_ends_of_time(self.margin, int(starts.min()), int(starts.max())):
            return None
        table = encode(list(found.values))
        if table is None:
            return None
        n = len(starts)
        extra = {
            _MAX_TS: np.array(found.max_ts, np.int64),
            _EXPIRY: np.full(n, found.expiry_at, np.int64),
            _IRREGULAR: np.full(n, found.irregular_upto, np.int64),
        }
        return OpenWindows(starts, table, found.fired_upto, self.kind, extra)

    def describe(self) -> str:
        return (
            f"{self.items.describe()} on KIP-450 sliding windows of {self.size} ms computed "
            "on whole Arrow columns per key group: Kafka's window store as columns, a new "
            "window seeded from the window Kafka seeds it from (keys with rows out of order, "
            "near 0 or the ends of time, run through the operator)"
        )
