"""Built-in aggregations of event-time session windows (static gap) on whole Arrow columns:
gaps and islands on each key's sorted times.

For ``sum`` / ``min`` / ``max`` / ``min_by`` / ``max_by``
(:class:`~windowing.functions.aggregations.FieldAggregation`) of ``EventTimeSessionWindows`` with
the default trigger and no evictor:

* **Batch replay** (event-time order, nothing late, every session fires once at the end of
  input): in time order each row either joins the current session (its window
  ``[t, t + gap)`` touches it: ``t <= end``) or starts the next, and a session's record is
  the reduction of its rows in replay order; the sessions are the runs between gaps of more
  than ``gap``.
* **Streaming** (:meth:`SessionAggregation.step`): the watermark advance fires and cleans up
  sessions, then the rows are added. Flink's merging-window set merges a new window with
  every in-flight session it touches; when it touches two or more, the merge order (and so
  the record) follows the iteration order of a ``java.util.HashSet``
  (:mod:`windowing.engine.merging`). The columns take a key's call only when that never
  happens and the result is a plain reduction: each key's rows in time order, no row
  touching two sessions at its turn, no late row touching a session, no session fired by an
  element on arrival (allowed lateness). Then each island of rows either extends the one
  session it touches (whose record comes first) or forms a new session.
  :meth:`SessionAggregation.keys_needing_the_operator` names the other keys, which run
  through the operator for that call (their sessions converted to a ``KeyState``, and back
  at their next call).

Streaming state (:class:`~windowing.spark.columnar.core.OpenWindows` of kind ``"session"``): per
in-flight session its start (``starts``), end (``extra["ends"]``) and reduced record. Sessions
of a key never overlap or touch; the state window of a session (the namespace Flink keeps its
contents under) is not kept: away from the ends of time it changes no result (a new window
equals a merged session only when sessions are clamped at the end of time).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa

from windowing.engine.exchange import ReducedWindows
from windowing.engine.keystate import KeyState
from windowing.operator import WindowOperator
from windowing.rules import cleanup_times, windows_late
from windowing.spark.columnar.core import (
    ColumnarResults,
    ColumnarShape,
    ColumnarStep,
    ItemsOfAField,
    OpenWindows,
    WindowItems,
    near_ends_of_time,
    reduce_groups,
    times_near_ends,
)
from windowing.spark.columnar.ranges import by_code, keyed_search
from windowing.time import MIN_TIMESTAMP
from windowing.windows import TimeWindow

__all__ = ["SessionAggregation"]

_Array = np.ndarray[Any, Any]


@dataclass(frozen=True, eq=False)
class _Merge:
    """How a call's rows meet a key group's kept sessions (rows in key order, each key's in
    replay order: ``perm`` of the input rows, ``None``: as given).

    ``conflict``: per input row, whether its key needs the operator. For the others:
    ``late`` (per input row), and per non-late row (``added``: their input positions, in
    key order) its island, and per island the kept session it extends (``-1``: a new one;
    an index into the kept sessions sorted by key and start), its start and its end."""

    conflict: _Array
    late: _Array
    added: _Array
    island: _Array
    extends: _Array
    starts: _Array
    ends: _Array


@dataclass(frozen=True)
class SessionAggregation(ItemsOfAField):
    """Event-time session windows of a static ``gap`` (ms) with the default trigger and no
    evictor, of a built-in aggregation or of ``.agg`` columns (per session an item of
    ``items``, as :class:`~windowing.spark.columnar.tumbling.TumblingAggregation` keeps)."""

    items: WindowItems
    gap: int
    allowed_lateness: int = 0
    kind: ClassVar[str] = "session"
    shape: ClassVar[ColumnarShape] = ColumnarShape.SESSIONS

    @property
    def margin(self) -> int:
        """Times within this distance of the ends of time are left to the operator (session
        ends and cleanup times are clamped there)."""
        return 2 * self.gap + self.allowed_lateness + 1

    # ------------------------------------------------------------------ batch
    def results(
        self, times: pa.ChunkedArray, values: pa.ChunkedArray, codes: _Array | None
    ) -> ColumnarResults | None:
        """The sessions of the keys whose rows are sorted as the replay sorts them (by key
        ``codes``, then event time, then the tie-breaker), or ``None``."""
        t = times.to_numpy()
        if near_ends_of_time(self.margin, int(t.min()), int(t.max())):
            return None
        n = len(t)
        cut = t[1:] > t[:-1] + self.gap
        if codes is not None:
            cut |= codes[1:] != codes[:-1]
        head = np.flatnonzero(np.concatenate(([True], cut)))
        label = np.repeat(t[head], np.diff(np.append(head, n)))
        found = reduce_groups(self.aggregation, self.first, label, values.to_numpy(), codes)
        if found is None:
            return None
        starts, rows, field_values = found
        tail = np.append(head[1:], n) - 1
        return ColumnarResults(starts, rows, field_values, t[tail] + self.gap)

    # ------------------------------------------------------------------ streaming
    def rows_needing_the_operator(
        self, watermark: int, rows: pa.Table, times: pa.ChunkedArray
    ) -> _Array:
        """Rows the columns cannot add whatever the state (see
        :func:`~windowing.spark.columnar.core.rows_needing_the_operator`); the state decides the
        rest (:meth:`keys_needing_the_operator`)."""
        mask, t = self.items.rows_needing_the_operator(rows, times)
        margin = self.margin
        return mask | times_near_ends(t, margin)

    def keys_needing_the_operator(
        self,
        state: OpenWindows | None,
        state_codes: _Array,
        watermark: int,
        times: _Array,
        row_codes: _Array,
    ) -> _Array:
        """Rows of keys whose call the columns cannot take (see the module docstring)."""
        kept, kept_codes = self._kept(state, state_codes, watermark)
        found = self._merge(kept, kept_codes, watermark, times, row_codes)
        return np.ones(len(times), np.bool_) if found is None else found.conflict

    def _kept(
        self, state: OpenWindows | None, codes: _Array | None, watermark: int
    ) -> tuple[OpenWindows | None, _Array | None]:
        """The sessions of ``state`` (and their key codes) not cleaned up at ``watermark``."""
        if state is None or not len(state):
            return None, None
        keep = ~windows_late(state.extra["ends"] - 1, self.allowed_lateness, watermark)
        if keep.all():
            return state, codes
        index = np.flatnonzero(keep)
        return state.take(index), None if codes is None else codes[index]

    def _merge(
        self,
        kept: OpenWindows | None,
        kept_codes: _Array | None,
        watermark: int,
        times: _Array,
        row_codes: _Array | None,
    ) -> _Merge | None:
        """How the rows meet the kept sessions (see :class:`_Merge`); ``None`` when the
        keys' times spread too wide to be searched together."""
        gap, lateness = self.gap, self.allowed_lateness
        n = len(times)
        codes = np.zeros(n, np.int64) if row_codes is None else row_codes
        perm = by_code(codes)
        t = times if perm is None else times[perm]
        c = codes if perm is None else codes[perm]
        same = c[1:] == c[:-1]
        conflict = np.zeros(n, np.bool_)
        conflict[1:] = same & (t[1:] < t[:-1])  # a key's rows out of time order
        late = windows_late(t + (gap - 1), lateness, watermark)  # a session of its own
        touched = np.full(n, -1, np.int64)
        k_starts = k_ends = k_codes = np.empty(0, np.int64)
        if kept is not None and len(kept):
            kc = np.zeros(len(kept), np.int64) if kept_codes is None else kept_codes
            order = np.lexsort((kept.starts, kc))
            k_codes, k_starts = kc[order], kept.starts[order]
            k_ends = kept.extra["ends"][order]
            j = keyed_search(k_codes, k_starts, c, t + gap, "right")
            if j is None:
                return None
            j -= 1  # the last session of the key starting at or before t + gap
            jj = np.maximum(j, 0)
            touch = (j >= 0) & (k_codes[jj] == c) & (k_ends[jj] >= t)
            prev = np.maximum(j - 1, 0)
            bridge = touch & (j >= 1) & (k_codes[prev] == c) & (k_ends[prev] >= t)
            conflict |= bridge | (late & touch)
            touched = np.where(touch, jj, -1)  # an index into the sorted sessions
        added = np.flatnonzero(~late)
        tn, cn, un = t[added], c[added], touched[added]
        m = len(added)
        one_session = (un[1:] == un[:-1]) & (un[1:] >= 0)
        chain = (cn[1:] == cn[:-1]) & ((tn[1:] <= tn[:-1] + gap) | one_session)
        head = np.flatnonzero(np.concatenate(([True], ~chain))) if m else np.empty(0, np.int64)
        island = np.cumsum(np.concatenate(([True], ~chain))) - 1 if m else head
        big = np.iinfo(np.int64).max
        if m:
            lowest = np.minimum.reduceat(np.where(un >= 0, un, big), head)
            highest = np.maximum.reduceat(un, head)
        else:
            lowest = highest = np.empty(0, np.int64)
        extends = np.where(highest >= 0, highest, -1)
        bad = (highest >= 0) & ((lowest != highest) | (un[head] < 0))
        tail = np.append(head[1:], m) - 1
        e = np.maximum(extends, 0)
        has = extends >= 0
        starts = tn[head] if m else head
        ends = tn[tail] + gap if m else head
        if len(k_starts) and m:
            starts = np.where(has, np.minimum(k_starts[e], starts), starts)
            ends = np.where(has, np.maximum(k_ends[e], ends), ends)
        if lateness and m:
            # a row that leaves its session ended by the watermark fires it on arrival
            before = np.where(has, k_ends[e] if len(k_ends) else 0, MIN_TIMESTAMP)[island]
            bad |= np.maximum.reduceat(
                (np.maximum(before, tn + gap) - 1 <= watermark).astype(np.int8), head
            ).astype(np.bool_)
        if bad.any():
            conflict[added[np.isin(island, np.flatnonzero(bad))]] = True
        if conflict.any():
            conflict = np.isin(c, np.unique(c[conflict]))
        # back to the input's order
        if perm is not None:
            conflict[perm] = conflict.copy()
            late_in = np.empty(n, np.bool_)
            late_in[perm] = late
            late, added = late_in, perm[added]
        return _Merge(conflict, late, added, island, extends, starts, ends)

    def step(
        self,
        state: OpenWindows | None,
        watermark: int,
        rows: pa.Table | None,
        times: _Array | None,
        codes: tuple[_Array, _Array] | None,
    ) -> ColumnarStep | None:
        """One streaming call on whole columns (see
        :func:`~windowing.spark.columnar.core.step_open_windows`): fire the sessions ending by the
        watermark, drop those past their lateness, then merge the rows into the sessions
        (``None`` when a key needs the operator: :meth:`keys_needing_the_operator`)."""
        state_codes, row_codes = (None, None) if codes is None else codes
        empty = np.empty(0, np.int64)
        fired_starts = fired_ends = empty
        fired_rows = None
        fired_upto = watermark
        if state is not None and len(state):
            fired_upto = max(state.fired_upto, watermark)
            max_ts = state.extra["ends"] - 1
            fire = (max_ts > state.fired_upto) & (max_ts <= watermark)
            if fire.any():
                index = np.flatnonzero(fire)
                fired_starts, fired_ends = state.starts[index], state.extra["ends"][index]
                fired_rows = self.items.results_of(state.rows.take(index))
                if fired_rows is None:
                    return None
        kept, kept_codes = self._kept(state, state_codes, watermark)

        def done(late: _Array, new: OpenWindows | None) -> ColumnarStep:
            if new is not None and len(new):
                new = OpenWindows(new.starts, new.rows, fired_upto, self.kind, new.extra)
            else:
                new = None
            return ColumnarStep(fired_starts, fired_rows, late, new, fired_ends)

        if rows is None or times is None or len(times) == 0:
            return done(empty, kept)
        if near_ends_of_time(self.margin, int(times.min()), int(times.max())):
            return None
        found = self._merge(kept, kept_codes, watermark, times, row_codes)
        if found is None or found.conflict.any():
            return None
        late = np.flatnonzero(found.late)
        if not len(found.added):
            return done(late, kept)
        new_items = self.items.items_of(rows.take(pa.array(found.added, pa.int64())))
        if new_items is None:
            return None
        if kept is not None and not kept.rows.schema.equals(new_items.schema):
            return None  # state written with another schema (e.g. session time zone)
        merged = self._add(kept, kept_codes, found, new_items, row_codes)
        return None if merged is None else done(late, merged)

    def _add(
        self,
        kept: OpenWindows | None,
        kept_codes: _Array | None,
        found: _Merge,
        new_items: pa.Table,
        row_codes: _Array | None,
    ) -> OpenWindows | None:
        """The kept sessions with the rows merged in (``found``)."""
        n_new = len(found.added)
        new_codes = np.zeros(n_new, np.int64) if row_codes is None else row_codes[found.added]
        labels = found.starts[found.island]  # each row's session start and end
        label_ends = found.ends[found.island]
        if kept is None or not len(kept):
            group, codes, table = labels, new_codes, new_items
            element_ends = label_ends
            untouched_rows = None
        else:
            kc = np.zeros(len(kept), np.int64) if kept_codes is None else kept_codes
            order = np.lexsort((kept.starts, kc))
            extended = order[found.extends[found.extends >= 0]]
            with_island = np.flatnonzero(found.extends >= 0)
            untouched = np.setdiff1d(np.arange(len(kept)), extended)
            group = np.concatenate((found.starts[with_island], labels))
            element_ends = np.concatenate((found.ends[with_island], label_ends))
            codes = np.concatenate((kc[extended], new_codes))
            table = pa.concat_tables([kept.rows.take(extended), new_items])
            untouched_rows = kept.take(untouched) if len(untouched) else None
            untouched_codes = kc[untouched]
        reduced = self.items.reduce(group, table, codes)
        if reduced is None:
            return None  # e.g. a session of nulls or NaN (state converted from the operator)
        starts, carriers, records = reduced
        island_codes = codes[carriers]
        ends = element_ends[carriers]
        if untouched_rows is None:
            return OpenWindows(starts, records, MIN_TIMESTAMP, self.kind, {"ends": ends})
        all_codes = np.concatenate((untouched_codes, island_codes))
        all_starts = np.concatenate((untouched_rows.starts, starts))
        all_ends = np.concatenate((untouched_rows.extra["ends"], ends))
        order = np.lexsort((all_starts, all_codes))
        table = pa.concat_tables([untouched_rows.rows, records]).take(pa.array(order, pa.int64()))
        return OpenWindows(
            all_starts[order], table, MIN_TIMESTAMP, self.kind, {"ends": all_ends[order]}
        )

    # ------------------------------------------------------------------ the operator's form
    def records_of(self, items: pa.Table) -> list[Any]:
        """The operator's state value of each item."""
        return self.items.records_of(items)

    def usable_state(self, items: pa.Table) -> bool:
        """Whether the items can be reduced on columns."""
        return self.items.usable_state(items)

    def key_state_of(self, op: WindowOperator, state: OpenWindows, records: list[Any]) -> KeyState:
        """The operator's state of one key's sessions: each in flight (its own state
        window), its reduced record, its trigger timer while it has not fired and its
        cleanup timer."""
        ends = state.extra["ends"]
        order = np.argsort(state.starts, kind="stable").tolist()
        windows = tuple(TimeWindow(int(state.starts[i]), int(ends[i])) for i in order)
        reduced = tuple(records[i] for i in order)
        return op.import_reduced_windows(ReducedWindows(windows, reduced, state.fired_upto))

    def open_windows_of(
        self, op: WindowOperator, ks: KeyState, encode: Callable[[list[Any]], pa.Table | None]
    ) -> OpenWindows | None:
        """One key's columnar state for the operator's state ``ks`` (its in-flight sessions
        and their records), or ``None`` when ``ks`` holds anything else (other state,
        unreachable contents, sessions near the ends of time)."""
        reduced = op.export_reduced_windows(ks)
        if reduced is None or not reduced.windows:
            return None
        for w in reduced.windows:
            if w.end - w.start < self.gap or near_ends_of_time(self.margin, w.start, w.end):
                return None
        table = encode(list(reduced.records))
        if table is None:
            return None
        starts = np.array([w.start for w in reduced.windows], np.int64)
        ends = np.array([w.end for w in reduced.windows], np.int64)
        return OpenWindows(starts, table, reduced.fired_upto, self.kind, {"ends": ends})

    def carried_from(self, t: _Array, lo: int) -> int:
        """The rows of the last session: a session ends at its last time + gap, and a row at
        most that far merges into it."""
        cut = np.flatnonzero(np.diff(t[lo:]) > self.gap)
        return lo + int(cut[-1]) + 1 if len(cut) else lo

    def next_event_time(self, state: OpenWindows) -> int | None:
        ends = state.extra["ends"] - 1
        due = np.where(ends > state.fired_upto, ends, cleanup_times(ends, self.allowed_lateness))
        return int(due.min())

    def window_count(self, state: OpenWindows, codes: _Array | None) -> int:
        return len(state)

    def listing(self, state: OpenWindows) -> Iterator[tuple[int, int, int, list[int]]]:
        lateness = self.allowed_lateness
        for i, (start, end) in enumerate(
            zip(state.starts.tolist(), state.extra["ends"].tolist(), strict=True)
        ):
            max_ts = end - 1
            pending = [max_ts] if max_ts > state.fired_upto else []
            if lateness:
                pending.append(max_ts + lateness)
            yield i, start, end, pending

    def describe(self) -> str:
        return (
            f"{self.items.describe()} on session windows of gap "
            f"{self.gap} ms computed on whole Arrow columns per key group: gaps and islands "
            "on each key's sorted times (keys whose rows would merge sessions kept in the "
            "state, or fire one on arrival, and times near the ends of time run through the "
            "operator)"
        )
