"""Built-in aggregations of hopping event-time windows on whole Arrow columns: one partial
per pane of ``gcd(size, slide)``, combined per window.

For ``sum`` / ``min`` / ``max`` / ``min_by`` / ``max_by``
(:class:`~windowing.functions.aggregations.FieldAggregation`) of hopping event-time windows
(``slide < size``) with the default trigger and no evictor, the operator keeps one reduced
record per window and combines a window's elements in arrival order (Flink's per-window
state; the aggregations do not declare themselves order-insensitive). The same record is a
combination of per-pane partials, if the panes are combined in the order of their first
elements: a ``sum`` / ``min`` / ``max`` takes the window's first element with the field
replaced, so its carrier is the pane partial whose carrier arrived first; ``min_by`` /
``max_by`` take the extreme element that arrived first (or last, ``first=False``), so
the pane partial holding the extreme whose element arrived first (last). Each pane partial
therefore keeps the arrival sequence of its carrier (``seq``): in the batch replay the row's
position (event-time order), in streaming a counter over the calls.

Windows are ranges of consecutive panes: a sum is a difference of prefix sums, the other
aggregations select over a range with a sparse table
(:mod:`windowing.spark.columnar.ranges`), so the cost is flat in ``size / slide`` (about
``log2(size / pane)`` passes over the panes) and no row is copied per window.

Streaming state (:class:`~windowing.spark.columnar.core.OpenWindows` of kind ``"hopping"``): the
key's pane partials (``starts``: pane starts; ``extra["seq"]``: the carrier's arrival
sequence), and, for a key whose windows the operator held before (converted from its
``KeyState``), those windows' reduced records as whole-window items (``extra["base"]`` 1,
``seq`` -1: their elements arrived before any pane's). A pane is kept while a window
containing it is not cleaned up; the windows the operator would hold are those with a pane
or a whole-window item whose cleanup time is ahead of the watermark.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa

from windowing.engine.exchange import ReducedWindows
from windowing.engine.keystate import KeyState
from windowing.functions.aggregations import AggregationType, FieldAggregation
from windowing.operator import WindowOperator
from windowing.rules import cleanup_times
from windowing.spark.columnar.core import (
    SUM_LIMIT,
    ColumnarResults,
    ColumnarShape,
    ColumnarStep,
    OpenWindows,
    near_ends_of_time,
    ordered_floats,
    reduce_groups,
    usable,
    value_rows_needing_the_operator,
)
from windowing.spark.columnar.ranges import (
    Picker,
    keyed_search,
    range_pick,
    range_reduce,
    window_count_of,
    window_ranges,
    window_starts_of,
)
from windowing.spark.columns.schema import table_rows
from windowing.time import MAX_TIMESTAMP, MIN_TIMESTAMP
from windowing.windows import TimeWindow

__all__ = ["HoppingAggregation", "PaneWindows"]

_Array = np.ndarray[Any, Any]
_LOW = MIN_TIMESTAMP // 2  # bounds of window-start ranges, far from any kept time
_HIGH = MAX_TIMESTAMP // 2


def _order_picker(order: _Array) -> Picker:
    """The entry with the smallest ``order`` first."""

    def better(a: _Array, b: _Array) -> _Array:
        return order[b] < order[a]

    return better


def _value_picker(values: _Array, order: _Array, lowest: bool, first: bool) -> Picker:
    """The most extreme value first (the smallest if ``lowest``); of equal values the one
    with the smallest ``order`` (``first``) or the largest."""

    def better(a: _Array, b: _Array) -> _Array:
        va, vb = values[a], values[b]
        wins = vb < va if lowest else vb > va
        ties = order[b] < order[a] if first else order[b] > order[a]
        return wins | ((vb == va) & ties)  # type: ignore[no-any-return]

    return better


@dataclass(frozen=True, eq=False)
class _Items:
    """A state's items sorted by (code, start), split into panes and whole windows (values:
    the field's, as numpy; ``index``: position in the state)."""

    codes: _Array
    starts: _Array
    values: _Array
    seqs: _Array
    index: _Array

    def take(self, mask: _Array) -> _Items:
        return _Items(
            self.codes[mask],
            self.starts[mask],
            self.values[mask],
            self.seqs[mask],
            self.index[mask],
        )


class PaneWindows:
    """Window arithmetic of hopping windows and the windows a state's items hold (mixed into
    :class:`HoppingAggregation` and
    :class:`~windowing.spark.columnar.hopping_accumulators.HoppingAccumulators`, which
    provide the fields). A state without ``extra["base"]`` / ``extra["seq"]`` holds panes
    only, in no order of arrival."""

    size: int
    slide: int
    offset: int
    allowed_lateness: int

    def _last_start(self, t: _Array) -> _Array:
        """The largest window start <= t (the last window containing t)."""
        return t - np.mod(t - self.offset, self.slide)  # type: ignore[no-any-return]

    def _first_start(self, t: _Array) -> _Array:
        """The smallest window start > t - size (the first window containing t)."""
        low = t - self.size + 1
        return low + np.mod(self.offset - low, self.slide)  # type: ignore[no-any-return]

    def _align_up(self, t: int) -> int:
        return t + (self.offset - t) % self.slide

    def _align_down(self, t: int) -> int:
        return t - (t - self.offset) % self.slide

    def _cleanup(self, starts: _Array) -> _Array:
        return cleanup_times(starts + (self.size - 1), self.allowed_lateness)

    def _live_from(self, fired_upto: int) -> int:
        """The first window start whose cleanup time is after ``fired_upto``."""
        return max(fired_upto - self.allowed_lateness - self.size + 2, _LOW)

    def _ending_between(self, fired_upto: int, watermark: int) -> tuple[int, int]:
        """The range of starts of the windows ending in ``(fired_upto, watermark]``."""
        return max(fired_upto - self.size + 2, _LOW), min(watermark - self.size + 1, _HIGH)

    def _fires_on_arrival(self, watermark: int, t: _Array) -> _Array:
        """Whether a window of each time has ended by ``watermark`` but is not cleaned up."""
        lateness = self.allowed_lateness
        if not lateness or watermark - self.size + 1 <= _LOW:
            return np.zeros(len(t), np.bool_)
        lo = self._align_up(watermark - lateness - self.size + 2)
        hi = self._align_down(watermark - self.size + 1)
        first = np.maximum(self._first_start(t), lo)
        last = np.minimum(self._last_start(t), hi)
        return first <= last

    def _windows_between(
        self, panes: _Items, bases: _Items, lo: int, hi: int
    ) -> tuple[_Array, _Array]:
        """The windows with a pane or a whole-window item whose start is in ``[lo, hi]``:
        (codes, starts) sorted by code and start."""
        lo, hi = self._align_up(lo), self._align_down(hi)
        wcodes, wstarts = window_starts_of(
            panes.codes,
            np.maximum(self._first_start(panes.starts), lo),
            np.minimum(self._last_start(panes.starts), hi),
            self.slide,
        )
        in_range = (bases.starts >= lo) & (bases.starts <= hi)
        if not in_range.any():
            return wcodes, wstarts
        codes = np.concatenate((wcodes, bases.codes[in_range]))
        starts = np.concatenate((wstarts, bases.starts[in_range]))
        order = np.lexsort((starts, codes))
        codes, starts = codes[order], starts[order]
        distinct = np.concatenate(([True], (codes[1:] != codes[:-1]) | (starts[1:] != starts[:-1])))
        return codes[distinct], starts[distinct]

    @staticmethod
    def _bases(state: OpenWindows) -> _Array:
        """Which items are whole windows taken over from the operator."""
        base = state.extra.get("base")
        return np.zeros(len(state), np.bool_) if base is None else base.astype(np.bool_)

    @staticmethod
    def _seqs(state: OpenWindows) -> _Array:
        """The arrival sequence of each item's carrier (zeros for a state without one)."""
        seq = state.extra.get("seq")
        return np.zeros(len(state), np.int64) if seq is None else seq

    def _split(
        self, state: OpenWindows, codes: _Array | None, numbers: _Array | None = None
    ) -> tuple[_Items, _Items]:
        """The state's panes and whole windows, each sorted by (code, start), with the
        values ``numbers`` (``None``: zeros)."""
        n = len(state)
        numbers = np.zeros(n, np.int64) if numbers is None else numbers
        codes = np.zeros(n, np.int64) if codes is None else codes
        order = np.lexsort((state.starts, codes))
        base = self._bases(state)[order]
        seqs = self._seqs(state)[order]
        items = _Items(codes[order], state.starts[order], numbers[order], seqs, order)
        return items.take(~base), items.take(base)

    def _earliest(self, state: OpenWindows, lo: int) -> int | None:
        """The earliest window start ``>= lo`` of a window holding an item, if any."""
        lo = self._align_up(lo)
        base = self._bases(state)
        starts = state.starts
        found = []
        if base.any():
            b = starts[base]
            b = b[b >= lo]
            if len(b):
                found.append(int(b.min()))
        p = starts[~base]
        if len(p):
            first = np.maximum(self._first_start(p), lo)
            first = first[first <= self._last_start(p)]
            if len(first):
                found.append(int(first.min()))
        return min(found) if found else None

    def _members(self, state: OpenWindows) -> Iterator[tuple[int, list[int]]]:
        """Per window the operator would hold: its start and its items (positions in the
        state) in the order of their carriers' arrival."""
        n = len(state)
        base = self._bases(state)
        seqs = self._seqs(state)
        panes = np.flatnonzero(~base)
        panes = panes[np.argsort(state.starts[panes], kind="stable")]
        pane_starts = state.starts[panes]
        live_from = self._live_from(state.fired_upto)
        starts: set[int] = {int(s) for s in state.starts[base] if s >= live_from}
        for p in pane_starts.tolist():
            s = self._align_down(p)
            while s > p - self.size:
                if s >= live_from:
                    starts.add(s)
                s -= self.slide
        for s in sorted(starts):
            lo, hi = np.searchsorted(pane_starts, [s, s + self.size])
            members = [int(i) for i in panes[lo:hi]]
            members += [i for i in range(n) if base[i] and state.starts[i] == s]
            yield s, sorted(members, key=lambda i: int(seqs[i]))

    # ------------------------------------------------------------------ shared calls
    @property
    def pane(self) -> int:
        return math.gcd(self.size, self.slide)

    @property
    def margin(self) -> int:
        """Times within this distance of the ends of time are left to the operator (window
        bounds and cleanup times are clamped there)."""
        return 2 * (self.size + self.slide) + abs(self.offset) + self.allowed_lateness

    def _near_ends(self, lo: int, hi: int) -> bool:
        """Whether streaming times from ``lo`` to ``hi`` are left to the operator: within
        the margin of the range of window starts a call fires (``_LOW`` .. ``_HIGH``, which
        keeps the ends of time, where the operator clamps, out too)."""
        margin = self.margin
        return lo <= _LOW + margin or hi >= _HIGH - margin

    def _far(self, t: _Array) -> _Array:
        """:meth:`_near_ends` of each time."""
        margin = self.margin
        return (t <= _LOW + margin) | (t >= _HIGH - margin)  # type: ignore[no-any-return]

    def keys_needing_the_operator(
        self,
        state: OpenWindows | None,
        state_codes: _Array,
        watermark: int,
        times: _Array,
        row_codes: _Array,
    ) -> _Array:
        return np.zeros(len(times), np.bool_)

    def carried_from(self, t: _Array, lo: int) -> int:
        """All of the rows ``lo:``: hopping windows overlap, any may share one with later rows."""
        return lo

    def next_event_time(self, state: OpenWindows) -> int | None:
        """The earliest operator timer of the windows the state holds: a window's end while
        it has not fired, then its cleanup time."""
        fired_upto = state.fired_upto
        live = self._earliest(state, self._live_from(fired_upto))
        if live is None:
            return None
        last = self.size - 1
        if live + last > fired_upto:  # the earliest window has not fired: its end is first
            return live + last
        due = live + last + self.allowed_lateness  # its cleanup, or a window's end
        pending = self._earliest(state, max(fired_upto - self.size + 2, _LOW))
        return due if pending is None else min(due, pending + last)

    def window_count(self, state: OpenWindows, codes: _Array | None) -> int:
        """The windows the operator would hold: those with an item whose cleanup time is
        after the state's watermark, counted per key (``codes``; ``None``: one key)."""
        panes, bases = self._split(state, codes)
        lo = self._align_up(self._live_from(state.fired_upto))
        if len(bases.starts):
            return len(self._windows_between(panes, bases, lo, _HIGH)[1])
        first = np.maximum(self._first_start(panes.starts), lo)
        return window_count_of(panes.codes, first, self._last_start(panes.starts), self.slide)

    def listing(self, state: OpenWindows) -> Iterator[tuple[int, int, int, list[int]]]:
        lateness = self.allowed_lateness
        for start, members in self._members(state):
            max_ts = start + self.size - 1
            pending = [max_ts] if max_ts > state.fired_upto else []
            if lateness:
                pending.append(max_ts + lateness)
            yield members[0], start, start + self.size, pending


@dataclass(frozen=True)
class HoppingAggregation(PaneWindows):
    """A built-in aggregation of hopping event-time windows (``size``, ``slide < size``,
    ``offset`` in ms) with the default trigger and no evictor."""

    aggregation: AggregationType
    field: str
    first: bool
    size: int
    slide: int
    offset: int
    allowed_lateness: int = 0
    kind: ClassVar[str] = "hopping"
    shape: ClassVar[ColumnarShape] = ColumnarShape.HOPPING

    # ------------------------------------------------------------------ batch
    def results(
        self, times: pa.ChunkedArray, values: pa.ChunkedArray, codes: _Array | None
    ) -> ColumnarResults | None:
        """The windows of the keys whose rows are sorted as the replay sorts them (by key
        ``codes``, then event time, then the tie-breaker; no arrival order: nothing is late
        and every window fires once at the end of input), or ``None``."""
        t = times.to_numpy()
        if near_ends_of_time(self.margin, int(t.min()), int(t.max())):
            return None
        v = values.to_numpy()
        pane = self.pane
        found = reduce_groups(
            self.aggregation, self.first, t - np.mod(t - self.offset, pane), v, codes
        )
        if found is None:
            return None
        pstarts, prows, pvals = found
        pcodes = None if codes is None else codes[prows]
        if pvals is None:
            pvals = v[prows]
        _, wstarts, lo, hi = window_ranges(
            pcodes, self._first_start(pstarts), self._last_start(pstarts), self.slide
        )
        combined = self._panes_to_windows(pvals, prows, lo, hi, True)
        if combined is None:
            return None
        pick, field_values = combined
        if field_values is not None and not _fits(field_values, v.dtype):
            return None  # the operator's sum does not fit the column: it raises
        return ColumnarResults(wstarts, prows[pick], field_values, wstarts + self.size)

    def _panes_to_windows(
        self, pvals: _Array, porder: _Array, lo: _Array, hi: _Array, monotone: bool
    ) -> tuple[_Array, _Array | None] | None:
        """Combine the panes ``[lo, hi)`` (non-empty; ``porder``: the panes' carriers' arrival
        order, ascending within a key if ``monotone``) of each window: the pane each window's
        record is taken from, and the field's values (``None``: the picked pane's)."""
        kind = self.aggregation
        n = len(pvals)
        lowest = kind in (AggregationType.MIN, AggregationType.MIN_BY)
        if kind.picks_element:
            return range_pick(n, _value_picker(pvals, porder, lowest, self.first), lo, hi), None
        carrier = lo if monotone else range_pick(n, _order_picker(porder), lo, hi)
        if kind is AggregationType.SUM:
            widest = max(abs(int(pvals.min())), abs(int(pvals.max())))
            if widest * n >= SUM_LIMIT:
                return None
            prefix = np.concatenate(([0], np.cumsum(pvals, dtype=np.int64)))
            return carrier, prefix[hi] - prefix[lo]
        return carrier, range_reduce(pvals, np.minimum if lowest else np.maximum, lo, hi)

    # ------------------------------------------------------------------ streaming
    def rows_needing_the_operator(
        self, watermark: int, rows: pa.Table, times: pa.ChunkedArray
    ) -> _Array:
        """Rows the columns cannot add (see
        :func:`~windowing.spark.columnar.core.rows_needing_the_operator`): also a row one of
        whose windows has ended but is within its allowed lateness (it fires on arrival)."""
        mask, t = value_rows_needing_the_operator(self.aggregation, self.field, rows, times)
        if mask.all():
            return mask
        mask |= self._far(t)
        fires = self._fires_on_arrival(watermark, np.where(mask, 0, t))
        return mask | fires

    def _items(
        self, state: OpenWindows, codes: _Array | None, values: bool = True
    ) -> tuple[_Items, _Items] | None:
        """The state's panes and whole windows, each sorted by (code, start); ``None`` when
        a value is null or a float NaN / ``-0.0`` (state converted from the operator).
        Without ``values`` the items' values are not read (all zero)."""
        if values:
            column = state.rows.column(self.field)
            if column.null_count:
                return None
            numbers = column.to_numpy()
            floats = numbers.dtype.kind == "f"
            if floats and (self.aggregation is AggregationType.SUM or not ordered_floats(numbers)):
                return None  # a float sum depends on the order of additions
        else:
            numbers = None
        return self._split(state, codes, numbers)

    def _window_records(
        self, panes: _Items, bases: _Items, wcodes: _Array, wstarts: _Array
    ) -> tuple[_Array, _Array | None] | None:
        """Per window: the state item its record is taken from and the field's values
        (``None``: the item's), the whole-window item first, then the panes in the order
        of their carriers' arrival."""
        nw = len(wstarts)
        item = np.full(nw, -1, np.int64)
        value = None
        kind = self.aggregation
        lowest = kind in (AggregationType.MIN, AggregationType.MIN_BY)
        lo = keyed_search(panes.codes, panes.starts, wcodes, wstarts, "left")
        hi = keyed_search(panes.codes, panes.starts, wcodes, wstarts + self.size, "left")
        b = keyed_search(bases.codes, bases.starts, wcodes, wstarts, "left")
        if lo is None or hi is None or b is None:
            return None
        with_panes = hi > lo
        b_found = b < len(bases.starts)
        bi = np.where(b_found, b, 0)
        has_base = b_found & (len(bases.starts) > 0)
        if len(bases.starts):
            has_base &= (bases.codes[bi] == wcodes) & (bases.starts[bi] == wstarts)
        total = kind is AggregationType.SUM
        dtype = np.dtype(np.int64) if total else panes.values.dtype
        pane_pick = np.zeros(nw, np.int64)
        pane_value = np.zeros(nw, dtype)
        if with_panes.any():
            found = self._panes_to_windows(
                panes.values, panes.seqs, lo[with_panes], hi[with_panes], False
            )
            if found is None:
                return None
            pick, combined = found
            pane_pick[with_panes] = pick
            pane_value[with_panes] = panes.values[pick] if combined is None else combined
        base_value = np.zeros(nw, dtype)
        if len(bases.starts):
            base_value[has_base] = bases.values[bi[has_base]]
        # the whole-window item's elements arrived first
        take_base = has_base
        if kind.picks_element:
            base_wins = base_value < pane_value if lowest else base_value > pane_value
            if self.first:
                base_wins |= base_value == pane_value
            take_base = has_base & (~with_panes | base_wins)
        item[with_panes] = panes.index[pane_pick[with_panes]]
        if len(bases.starts):
            item[take_base] = bases.index[bi[take_base]]
        if kind.picks_element:
            return item, None
        both = has_base & with_panes
        if total:
            if both.any() and 2 * max(_widest(base_value), _widest(pane_value)) >= SUM_LIMIT:
                return None
            value = base_value + pane_value  # zero where a window has no such part
        else:
            extreme = (
                np.minimum(base_value, pane_value) if lowest else np.maximum(base_value, pane_value)
            )
            value = np.where(both, extreme, np.where(has_base, base_value, pane_value))
        return item, value

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
        ``(fired_upto, watermark]`` that hold an item, drop the items no live window
        contains, then add the rows to their panes."""
        size = self.size
        state_codes, row_codes = (None, None) if codes is None else codes
        empty = np.empty(0, np.int64)
        fired_starts, fired_rows = empty, None
        fired_upto = watermark
        kept: OpenWindows | None = None
        kept_codes = None
        seq_base = 0
        if state is not None and len(state):
            fired_upto = max(state.fired_upto, watermark)
            split = self._items(state, state_codes)
            if split is None:
                return None
            panes, bases = split
            if watermark > state.fired_upto:
                lo, hi = self._ending_between(state.fired_upto, watermark)
                if lo <= hi:
                    wcodes, wstarts = self._windows_between(panes, bases, lo, hi)
                    if len(wstarts):
                        found = self._window_records(panes, bases, wcodes, wstarts)
                        if found is None:
                            return None
                        item, value = found
                        fired_rows = self._records(state.rows, item, value)
                        if fired_rows is None:
                            return None
                        fired_starts = wstarts
            base = state.extra["base"].astype(np.bool_)
            last = np.where(base, state.starts, self._last_start(state.starts))
            keep = self._cleanup(last) > watermark
            kept = state if keep.all() else state.take(np.flatnonzero(keep))
            if state_codes is not None:
                kept_codes = state_codes if keep.all() else state_codes[keep]
            seq_base = int(state.extra["seq"].max()) + 1

        def done(late: _Array, new: OpenWindows | None) -> ColumnarStep:
            if new is not None and not len(new):
                new = None
            if new is not None:
                new = OpenWindows(new.starts, new.rows, fired_upto, self.kind, new.extra)
            return ColumnarStep(fired_starts, fired_rows, late, new, fired_starts + size)

        if rows is None or times is None or len(times) == 0:
            return done(empty, kept)
        if self._near_ends(int(times.min()), int(times.max())):
            return None
        late_mask = self._cleanup(self._last_start(times)) <= watermark
        if bool(self._fires_on_arrival(watermark, times).any()):
            return None  # an element fires a window on arrival (EventTimeTrigger)
        late = np.flatnonzero(late_mask)
        if len(late) == len(times):
            return done(late, kept)
        added = np.flatnonzero(~late_mask)
        new_rows = rows if len(late) == 0 else rows.take(added)
        t = times[added]
        new_codes = None if row_codes is None else row_codes[added]
        if kept is not None and not kept.rows.schema.equals(new_rows.schema):
            return None  # state written with another schema (e.g. session time zone)
        new_values = new_rows.column(self.field)
        if not usable(self.aggregation, new_values):
            return None
        grown = self._add(kept, kept_codes, new_rows, new_values.to_numpy(), t, new_codes, seq_base)
        if grown is None:
            return None
        return done(late, grown)

    def _add(
        self,
        kept: OpenWindows | None,
        kept_codes: _Array | None,
        new_rows: pa.Table,
        new_values: _Array,
        t: _Array,
        new_codes: _Array | None,
        seq_base: int,
    ) -> OpenWindows | None:
        """The kept items with the new rows (each key's in replay order) added to their
        panes."""
        pane_starts = t - np.mod(t - self.offset, self.pane)
        seqs = seq_base + np.arange(len(t), dtype=np.int64)
        n_kept = 0 if kept is None else len(kept)
        if kept is None or not n_kept:
            group, values, all_seqs, codes = pane_starts, new_values, seqs, new_codes
            table = new_rows
            is_pane = np.ones(len(t), np.bool_)
        else:
            is_pane = np.concatenate((kept.extra["base"] == 0, np.ones(len(t), np.bool_)))
            group = np.concatenate((kept.starts, pane_starts))
            kept_values = kept.rows.column(self.field).to_numpy()
            values = np.concatenate((kept_values, new_values))
            all_seqs = np.concatenate((kept.extra["seq"], seqs))
            k_codes = np.zeros(n_kept, np.int64) if kept_codes is None else kept_codes
            n_codes = np.zeros(len(t), np.int64) if new_codes is None else new_codes
            codes = np.concatenate((k_codes, n_codes))
            table = pa.concat_tables([kept.rows, new_rows])
        if codes is None:
            codes = np.zeros(len(group), np.int64)
        panes = np.flatnonzero(is_pane)
        whole = np.flatnonzero(~is_pane)
        found = reduce_groups(
            self.aggregation, self.first, group[panes], values[panes], codes[panes]
        )
        if found is None:
            return None
        starts, rows, field_values = found
        rows = panes[rows]
        records = self._records(table, rows, field_values)
        if records is None:
            return None
        item_starts = starts
        item_seqs = all_seqs[rows]
        item_codes = codes[rows]
        base = np.zeros(len(rows), np.int64)
        if len(whole):
            records = pa.concat_tables([table.take(whole), records])
            item_starts = np.concatenate((group[whole], item_starts))
            item_seqs = np.concatenate((all_seqs[whole], item_seqs))
            item_codes = np.concatenate((codes[whole], item_codes))
            base = np.concatenate((np.ones(len(whole), np.int64), base))
            order = np.lexsort((item_starts, item_codes))
            records = records.take(order)
            item_starts, item_seqs, base = item_starts[order], item_seqs[order], base[order]
        return OpenWindows(
            item_starts, records, MIN_TIMESTAMP, self.kind, {"base": base, "seq": item_seqs}
        )

    def _records(self, table: pa.Table, index: _Array, values: _Array | None) -> pa.Table | None:
        """The rows ``index`` of ``table`` with the field replaced by ``values`` (``None``:
        kept); ``None`` when a value does not fit the column."""
        records = table.take(pa.array(index, pa.int64()))
        if values is None:
            return records
        position = records.schema.get_field_index(self.field)
        field = records.schema.field(position)
        if not _fits(values, np.dtype(field.type.to_pandas_dtype())):
            return None
        return records.set_column(position, field, pa.array(values, field.type))

    # ------------------------------------------------------------------ the operator's form
    def records_of(self, items: pa.Table) -> list[Any]:
        """The items' reduced records as the operator's ``Row`` values."""
        return table_rows(items, items.column_names)

    def usable_state(self, items: pa.Table) -> bool:
        """Whether the items' field values can be reduced on columns."""
        return usable(self.aggregation, items.column(self.field))

    def key_state_of(self, op: WindowOperator, state: OpenWindows, records: list[Any]) -> KeyState:
        """The operator's state of one key's ``state`` (its items' records as the operator's
        ``Row`` values, ``records``): each window's reduced record (its items' records
        reduced in their order), trigger timer while it has not fired, cleanup timer."""
        fn = FieldAggregation(self.aggregation, self.field, self.first)
        members = list(self._members(state))
        windows = tuple(TimeWindow(start, start + self.size) for start, _ in members)
        reduced = tuple(functools.reduce(fn.reduce, [records[i] for i in m]) for _, m in members)
        return op.import_reduced_windows(ReducedWindows(windows, reduced, state.fired_upto))

    def open_windows_of(
        self, op: WindowOperator, ks: KeyState, encode: Callable[[list[Any]], pa.Table | None]
    ) -> OpenWindows | None:
        """One key's columnar state for the operator's state ``ks`` (per-window reduced
        records become whole-window items), or ``None`` when ``ks`` holds anything else than
        these windows and their trigger and cleanup timers (e.g. panes of ``slicing=True``)."""
        reduced = op.export_reduced_windows(ks)
        if reduced is None or not reduced.windows:
            return None
        for w in reduced.windows:
            if w.end - w.start != self.size or (w.start - self.offset) % self.slide:
                return None
            if self._near_ends(w.start, w.end):
                return None
        table = encode(list(reduced.records))
        if table is None:
            return None
        n = len(reduced.windows)
        starts = np.array([w.start for w in reduced.windows], np.int64)
        extra = {"base": np.ones(n, np.int64), "seq": np.full(n, -1, np.int64)}
        return OpenWindows(starts, table, reduced.fired_upto, self.kind, extra)

    def describe(self) -> str:
        return (
            f"built-in {self.aggregation.value} of {self.field!r} on hopping windows of "
            f"{self.size} ms every {self.slide} ms computed on whole Arrow columns per key "
            f"group: one partial per pane of {self.pane} ms, combined per window (keys the "
            "columns cannot take, e.g. near the ends of time, run through the operator)"
        )


def _fits(values: _Array, dtype: np.dtype[Any]) -> bool:
    """Whether the (int64) ``values`` fit an integer column of ``dtype`` (floats: always)."""
    if dtype.kind not in "iu" or not len(values):
        return True
    info = np.iinfo(dtype)
    return int(values.min()) >= info.min and int(values.max()) <= info.max


def _widest(values: _Array) -> int:
    return max(abs(int(values.min())), abs(int(values.max()))) if len(values) else 0
