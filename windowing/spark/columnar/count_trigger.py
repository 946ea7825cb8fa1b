"""``.agg`` columns of tumbling and hopping windows under a count trigger, in streaming:
Flink's ``CountTrigger(n)`` (also in ``PurgingTrigger``) on accumulator columns.

A count trigger fires a window at its ``n``-th element since it last fired, whatever the
watermark; the window operator then emits the window's accumulators (a purging trigger also
empties them), and cleans the window up, without firing, when the watermark passes its
cleanup time. The columnar state keeps what the operator keeps: per window one item of
accumulators (:class:`~windowing.spark.columnar.accumulators.AggregateItems`) and the
trigger's count since the last firing, so a key's state converts each way
(:meth:`~windowing.operator.WindowOperator.export_counted_windows` /
:meth:`~windowing.operator.WindowOperator.import_counted_windows`). A call

* drops the windows whose cleanup time the watermark reached (no firing);
* copies each row into the windows holding it (hopping windows: ``size / slide`` of them),
  and sends rows whose every window is past its cleanup time to the late rows;
* adds the others in the call's order (each key's rows in replay order): the ``j``-th new row
  of a window with count ``c`` fires it when ``(c + j) % n == 0``, over the window's
  accumulators and its new rows up to that one (a purging trigger: the rows since the
  previous firing), reduced as ranges of the window's rows
  (:meth:`~windowing.spark.columnar.accumulators.AggregateItems.reduce_ranges`).

The calls left to the operator are those of the default trigger's columns: sums that could
leave 64 bits, float extremes meeting NaN or ``-0.0``, rows near the ends of time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa

from windowing.assigners.hopping import HoppingEventTimeWindows
from windowing.assigners.tumbling import TumblingEventTimeWindows
from windowing.engine.exchange import CountedWindows
from windowing.engine.keystate import KeyState
from windowing.functions.columns import ColumnAggregates
from windowing.functions.spec import Aggregate, WindowFunctionSpec
from windowing.job import WindowConfig
from windowing.operator import WindowOperator
from windowing.spark.columnar.accumulators import AggregateItems, aggregate_items_of
from windowing.spark.columnar.core import (
    ColumnarShape,
    ColumnarStep,
    OpenWindows,
    StreamingItems,
    near_ends_of_time,
    times_near_ends,
)
from windowing.spark.columnar.ranges import keyed_search
from windowing.spark.columnar.tumbling import tumbling_size, tumbling_starts
from windowing.time import MIN_TIMESTAMP
from windowing.triggers.count import CountTrigger
from windowing.triggers.purging import PurgingTrigger
from windowing.windows import TimeWindow

__all__ = ["CountTriggered", "counted_plan"]

_Array = np.ndarray[Any, Any]

#: ``extra`` array of the state: per window the trigger's count since its last firing.
_COUNTS = "counts"


def counted_plan(
    config: WindowConfig,
    spec: WindowFunctionSpec,
    keys: Sequence[str],
    input_arrow: pa.Schema | None,
) -> CountTriggered | None:
    """The columnar plan of a streaming ``.agg`` (``spec``) of aligned tumbling or hopping
    (``slide <= size``) event-time windows with a ``CountTrigger`` (also in a
    ``PurgingTrigger``) and no evictor, when every aggregate is exact on columns in any order
    (:func:`aggregate_items_of`), else ``None``."""
    trigger, purging = config.trigger, False
    if type(trigger) is PurgingTrigger:
        trigger, purging = trigger.trigger, True
    if type(trigger) is not CountTrigger or config.evictor is not None:
        return None
    assigner = config.assigner
    if type(assigner) is TumblingEventTimeWindows:
        shape = tumbling_size(assigner)
        if shape is None:
            return None
        size, slide, offset = shape[0], shape[0], shape[1]
    elif type(assigner) is HoppingEventTimeWindows and assigner.slide <= assigner.size:
        size, slide, offset = assigner.size, assigner.slide, assigner.offset
    else:
        return None
    if input_arrow is None or not isinstance(spec, Aggregate) or spec.window_function:
        return None
    if type(spec.function) is not ColumnAggregates:
        return None
    items = aggregate_items_of(spec.function, keys, input_arrow)
    if items is None:
        return None
    every = max(1, trigger.max_count)  # below 1 Flink's trigger fires on every element
    lateness = config.allowed_lateness
    return CountTriggered(items, size, slide, offset, every, purging, lateness)


@dataclass(frozen=True)
class CountTriggered(StreamingItems):
    """Tumbling or hopping event-time windows (``size``, ``slide``, ``offset`` in ms; tumbling:
    ``slide == size``) of ``.agg`` columns (``items``) under ``CountTrigger(every)``
    (``purging``: in a ``PurgingTrigger``), no evictor, in streaming (see the module
    docstring).

    Example::

        plan = CountTriggered(items, 10_000, 10_000, 0, every=100, purging=False)
        step = plan.step(None, watermark, rows, times, None)  # None: the operator decides
    """

    items: AggregateItems
    size: int
    slide: int
    offset: int
    every: int
    purging: bool
    allowed_lateness: int = 0
    kind: ClassVar[str] = "count-trigger"
    shape: ClassVar[ColumnarShape] = ColumnarShape.COUNT_TRIGGER

    @property
    def margin(self) -> int:
        """Times within this distance of the ends of time are left to the operator."""
        return 2 * self.size + abs(self.offset) + self.allowed_lateness

    def _windows_of(self, t: _Array) -> tuple[_Array, _Array]:
        """Each row's windows as pairs (the row's index, the window's start), a row's latest
        start first: one per row of tumbling windows, ``size / slide`` of hopping ones."""
        if self.slide == self.size:
            return np.arange(len(t)), tumbling_starts(t, self.size, self.offset)
        last = tumbling_starts(t, self.slide, self.offset)
        per_row = -(-self.size // self.slide)
        starts = (last[:, None] - self.slide * np.arange(per_row)[None, :]).ravel()
        row = np.repeat(np.arange(len(t)), per_row)
        holds = starts > t[row] - self.size
        return row[holds], starts[holds]

    def _windows_text(self) -> str:
        if self.slide == self.size:
            return f"tumbling windows of {self.size} ms"
        return f"hopping windows of {self.size} ms every {self.slide} ms"

    def _cleanup(self, starts: _Array) -> _Array:
        """Each window's cleanup time (its only timer: a count trigger registers none)."""
        return starts + (self.size - 1 + self.allowed_lateness)  # type: ignore[no-any-return]

    # ------------------------------------------------------------------ which calls
    def rows_needing_the_operator(
        self, watermark: int, rows: pa.Table, times: pa.ChunkedArray
    ) -> _Array:
        """The rows the items cannot take, and rows near the ends of time."""
        mask, t = self.items.rows_needing_the_operator(rows, times)
        if mask.all():
            return mask
        return mask | times_near_ends(t, self.margin)

    def keys_needing_the_operator(
        self,
        state: OpenWindows | None,
        state_codes: _Array,
        watermark: int,
        times: _Array,
        row_codes: _Array,
    ) -> _Array:
        """No key: a window's firings depend on its own count only."""
        return np.zeros(len(times), np.bool_)

    # ------------------------------------------------------------------ a call
    def step(
        self,
        state: OpenWindows | None,
        watermark: int,
        rows: pa.Table | None,
        times: _Array | None,
        codes: tuple[_Array, _Array] | None,
    ) -> ColumnarStep | None:
        """One streaming call on whole columns (see the module docstring)."""
        n_rows = 0 if times is None else len(times)
        if codes is None:
            state_codes = np.zeros(0 if state is None else len(state), np.int64)
            row_codes = np.zeros(n_rows, np.int64)
        else:
            state_codes, row_codes = codes
        empty = np.empty(0, np.int64)
        fired_upto = watermark
        kept: OpenWindows | None = None
        kept_codes = empty
        if state is not None and len(state):
            fired_upto = max(state.fired_upto, watermark)
            keep = self._cleanup(state.starts) > watermark
            order = np.lexsort((state.starts, state_codes))
            order = order[keep[order]]
            kept, kept_codes = state.take(order), state_codes[order]

        def done(
            fired: tuple[_Array, pa.Table | None], late: _Array, new: OpenWindows | None
        ) -> ColumnarStep:
            if new is not None and len(new):
                new = OpenWindows(new.starts, new.rows, fired_upto, self.kind, new.extra)
            else:
                new = None
            starts, fired_rows = fired
            return ColumnarStep(starts, fired_rows, late, new, starts + self.size)

        if rows is None or times is None or n_rows == 0:
            return done((empty, None), empty, kept)
        if bool(times_near_ends(times, self.margin).any()):
            return None
        row, starts = self._windows_of(times)  # each row copied into each of its windows
        open_ = self._cleanup(starts) > watermark
        late = np.setdiff1d(np.arange(n_rows), row[open_])  # every window of the row closed
        if len(late) == n_rows:
            return done((empty, None), late, kept)
        added = np.flatnonzero(open_)
        order = added[np.lexsort((starts[added], row_codes[row[added]]))]  # stable: call order
        new_items = self.items.items_of(rows.take(pa.array(row[order], pa.int64())))
        if kept is not None and not kept.rows.schema.equals(new_items.schema):
            return None  # state written with another schema (e.g. session time zone)
        found = self._add(
            kept, kept_codes, new_items, starts[order], row_codes[row[order]], row[order]
        )
        if found is None:
            return None
        fired, new = found
        return done(fired, late, new)

    def _add(
        self,
        kept: OpenWindows | None,
        kept_codes: _Array,
        items: pa.Table,
        ws: _Array,
        rc: _Array,
        position: _Array,
    ) -> tuple[tuple[_Array, pa.Table | None], OpenWindows] | None:
        """Add the rows (``items``, sorted by key code ``rc``, then window start ``ws``,
        each window's in the call's order; ``position``: each one's place in the call) to
        the windows ``kept`` (sorted the same way). A key's firings come in the order of
        the rows that fire them, as the operator emits them."""
        every, n = self.every, len(ws)
        head = np.flatnonzero(np.concatenate(([True], (rc[1:] != rc[:-1]) | (ws[1:] != ws[:-1]))))
        ends = np.append(head[1:], n)  # each window's rows: [head, ends)
        w_starts, w_codes = ws[head], rc[head]
        n_kept = 0 if kept is None else len(kept)
        held = np.full(len(head), -1, np.int64)  # each window's item in ``kept``
        count = np.zeros(len(head), np.int64)
        if kept is not None and n_kept:
            hit = keyed_search(kept_codes, kept.starts, w_codes, w_starts, "left")
            if hit is None:
                return None
            at = np.minimum(hit, n_kept - 1)
            found = (hit < n_kept) & (kept_codes[at] == w_codes) & (kept.starts[at] == w_starts)
            held = np.where(found, at, -1)
            count = np.where(found, kept.extra[_COUNTS][at], 0)
        window_of = np.repeat(np.arange(len(head)), ends - head)
        rank = np.arange(n) - head[window_of] + 1  # 1 for a window's first new row
        fires = np.flatnonzero((count[window_of] + rank) % every == 0)
        f_window = window_of[fires]
        first = np.concatenate(([True], f_window[1:] != f_window[:-1])) if len(fires) else fires
        # each firing's rows: from the window's first new row, or (purging) after the last
        lo = head[f_window]
        if self.purging and len(fires):
            lo = np.where(first, lo, np.concatenate(([0], fires[:-1] + 1)))
        with_held = held[f_window] >= 0
        if self.purging:
            with_held &= first.astype(np.bool_)
        fired: tuple[_Array, pa.Table | None] = (np.empty(0, np.int64), None)
        if len(fires):
            parts = self.items.reduce_ranges(items, lo, fires + 1)
            if parts is None:
                return None
            firing_ids = np.arange(len(fires))
            if kept is not None and with_held.any():
                held_items = kept.rows.take(pa.array(held[f_window][with_held], pa.int64()))
                parts = pa.concat_tables([held_items, parts])
                firing_ids = np.concatenate((firing_ids[with_held], firing_ids))
            reduced = self.items.reduce(firing_ids, parts, None)
            if reduced is None:
                return None
            # a row fires its windows as the assigner gives them: the latest start first
            by_row = np.lexsort((-ws[fires], position[fires], rc[fires]))
            results = self.items.results_of(reduced[2]).take(pa.array(by_row, pa.int64()))
            fired = (ws[fires][by_row], results)
        # the windows after the call: untouched ones as they were, the others with their
        # accumulators (emptied at a purging trigger's last firing) and the rows after it
        last_fire = np.full(len(head), -1, np.int64)
        if len(fires):
            last_fire[f_window] = fires  # the last assignment per window wins
        purged = self.purging & (last_fire >= 0)
        rest_lo = np.where(purged, last_fire + 1, head)
        keeps_held = (held >= 0) & ~purged
        touched = np.zeros(n_kept, np.bool_)
        touched[held[held >= 0]] = True
        untouched = np.flatnonzero(~touched)
        new_counts = (count + (ends - head)) % every
        # per window its items (kept, new rows) with its key and count, reduced to one
        tables: list[pa.Table] = []
        groups: list[_Array] = []
        group_codes: list[_Array] = []
        counts: list[_Array] = []
        if kept is not None and n_kept:
            tables += [kept.rows.take(pa.array(untouched, pa.int64()))]
            tables += [kept.rows.take(pa.array(held[keeps_held], pa.int64()))]
            groups += [kept.starts[untouched], w_starts[keeps_held]]
            group_codes += [kept_codes[untouched], w_codes[keeps_held]]
            counts += [kept.extra[_COUNTS][untouched], new_counts[keeps_held]]
        rest = np.flatnonzero(rest_lo < ends)
        if len(rest):
            parts = self.items.reduce_ranges(items, rest_lo[rest], ends[rest])
            if parts is None:
                return None
            tables.append(parts)
            groups.append(w_starts[rest])
            group_codes.append(w_codes[rest])
            counts.append(new_counts[rest])
        group = np.concatenate(groups) if groups else np.empty(0, np.int64)
        if not len(group):  # every window purged, or none left
            return fired, OpenWindows(group, items.slice(0, 0), 0, self.kind)
        reduced = self.items.reduce(group, pa.concat_tables(tables), np.concatenate(group_codes))
        if reduced is None:
            return None
        new_starts, carriers, new_items = reduced
        # a window's items all carry its count: the first one's is the window's
        extra = {_COUNTS: np.concatenate(counts)[carriers]}
        return fired, OpenWindows(new_starts, new_items, 0, self.kind, extra)

    # ------------------------------------------------------------------ timers, listing
    def next_event_time(self, state: OpenWindows) -> int | None:
        return int(self._cleanup(state.starts).min())

    def listing(self, state: OpenWindows) -> Iterator[tuple[int, int, int, list[int]]]:
        cleanup = self._cleanup(state.starts).tolist()
        for i, (start, c) in enumerate(zip(state.starts.tolist(), cleanup, strict=True)):
            yield i, start, start + self.size, [c]

    # ------------------------------------------------------------------ the operator's form
    def key_state_of(self, op: WindowOperator, state: OpenWindows, records: list[Any]) -> KeyState:
        """The operator's state of one key's windows (``records``: their accumulator
        lists), with their counts and cleanup timers."""
        size = self.size
        windows = tuple(TimeWindow(s, s + size) for s in state.starts.tolist())
        counts = tuple(state.extra[_COUNTS].tolist())
        return op.import_counted_windows(CountedWindows(windows, tuple(records), counts))

    def open_windows_of(
        self, op: WindowOperator, ks: KeyState, encode: Callable[[list[Any]], pa.Table | None]
    ) -> OpenWindows | None:
        """One key's columnar windows for the operator's state ``ks``, or ``None`` when ``ks``
        holds anything else than windows of this size with a count and a cleanup timer (or
        windows near the ends of time)."""
        found = op.export_counted_windows(ks)
        if found is None or not found.windows:
            return None
        size = self.size
        for w in found.windows:
            if w.end - w.start != size or (w.start - self.offset) % self.slide:
                return None
            if near_ends_of_time(self.margin, w.start, w.end):
                return None
        counts = np.array(found.counts, np.int64)
        if bool((counts >= self.every).any()):
            return None  # a count the trigger never leaves (a state of another count)
        table = encode(list(found.records))
        if table is None:
            return None
        starts = np.array([w.start for w in found.windows], np.int64)
        return OpenWindows(starts, table, MIN_TIMESTAMP, self.kind, {_COUNTS: counts})

    def describe(self) -> str:
        trigger = f"CountTrigger({self.every})"
        if self.purging:
            trigger = f"PurgingTrigger({trigger})"
        return (
            f"{self.items.describe()} on {self._windows_text()} with {trigger} "
            "computed on whole Arrow columns per key group: each window's accumulators and "
            "count, its firings as ranges of its rows (keys the columns cannot take, e.g. "
            "near the ends of time, run through the operator)"
        )
