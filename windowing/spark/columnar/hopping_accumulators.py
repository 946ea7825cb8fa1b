"""``.agg`` columns of hopping event-time windows on whole Arrow columns, in streaming: the
accumulators of one pane of ``gcd(size, slide)`` per item, combined per window when it
fires.

The window operator keeps such a job's windows as panes (``slicing``, the default for an
``.agg`` whose aggregates are exact in any order: :mod:`windowing.engine.panes`): one
accumulator list per pane, a window's accumulators merged from its panes when it fires. The
columnar state keeps the same panes, as accumulator columns
(:class:`~windowing.spark.columnar.accumulators.AggregateItems`, one item per pane), so a
key's state converts each way without loss
(:meth:`~windowing.operator.WindowOperator.export_reduced_panes` /
:meth:`~windowing.operator.WindowOperator.import_reduced_panes`). A call

* fires the windows ending in ``(fired_upto, watermark]`` that hold a pane: each window is
  a range of its key's panes (sorted by key, then start), reduced with prefix sums and
  sparse tables (:meth:`~windowing.spark.columnar.accumulators.AggregateItems.reduce_ranges`),
  so the cost is flat in ``size / slide``;
* drops the panes whose last window is cleaned up;
* adds the rows to their panes (rows whose every window is cleaned up are late).

The calls the columns leave to the operator are those of the tumbling and session shapes:
rows near the ends of time (within the pane grid's margin of ``±MAX_TIMESTAMP / 2``, the
range of window starts a call fires), a row that fires a window on arrival (allowed lateness), sums
that could leave 64 bits, float extremes meeting NaN or ``-0.0``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import pyarrow as pa

from windowing.engine.exchange import ReducedPanes
from windowing.engine.keystate import KeyState
from windowing.operator import WindowOperator
from windowing.spark.columnar.accumulators import AggregateItems
from windowing.spark.columnar.core import (
    ColumnarShape,
    ColumnarStep,
    OpenWindows,
    StreamingItems,
)
from windowing.spark.columnar.hopping import PaneWindows
from windowing.spark.columnar.ranges import window_ranges

if TYPE_CHECKING:
    from windowing.spark.columnar.vectorized_items import VectorizedItems

__all__ = ["HoppingAccumulators"]

_Array = np.ndarray[Any, Any]


@dataclass(frozen=True)
class HoppingAccumulators(PaneWindows, StreamingItems):
    """Hopping event-time windows (``size``, ``slide < size``, ``offset`` in ms) of ``.agg``
    columns (``items``) with the default trigger and no evictor, in streaming: one item of
    accumulators per pane (see the module docstring); or of an order-insensitive vectorized
    aggregate, one item of held rows per pane
    (:class:`~windowing.spark.columnar.vectorized_items.VectorizedItems`).

    Example::

        plan = HoppingAccumulators(items, size=10_000, slide=2_000, offset=0)
        step = plan.step(None, watermark, rows, times, None)  # None: the operator decides
    """

    items: AggregateItems | VectorizedItems
    size: int
    slide: int
    offset: int
    allowed_lateness: int = 0
    kind: ClassVar[str] = "hopping"
    shape: ClassVar[ColumnarShape] = ColumnarShape.HOPPING

    def rows_needing_the_operator(
        self, watermark: int, rows: pa.Table, times: pa.ChunkedArray
    ) -> _Array:
        """The rows the items cannot take, rows near the ends of time, and rows one of whose
        windows has ended but is within its allowed lateness (it fires on arrival)."""
        mask, t = self.items.rows_needing_the_operator(rows, times)
        if mask.all():
            return mask
        mask |= self._far(t)
        return mask | self._fires_on_arrival(watermark, np.where(mask, 0, t))

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
        ``(fired_upto, watermark]`` that hold a pane, drop the panes no live window contains,
        then add the rows to their panes."""
        size = self.size
        state_codes, row_codes = (None, None) if codes is None else codes
        empty = np.empty(0, np.int64)
        fired_starts: _Array = empty
        fired_rows: pa.Table | None = None
        fired_upto = watermark
        kept: OpenWindows | None = None
        kept_codes = None
        if state is not None and len(state):
            fired_upto = max(state.fired_upto, watermark)
            lo, hi = self._ending_between(state.fired_upto, watermark)
            if watermark > state.fired_upto and lo <= hi:
                found = self._fire(state, state_codes, lo, hi)
                if found is None:
                    return None
                fired_starts, fired_rows = found
            keep = self._cleanup(self._last_start(state.starts)) > watermark
            kept = state if keep.all() else state.take(np.flatnonzero(keep))
            if state_codes is not None:
                kept_codes = state_codes if keep.all() else state_codes[keep]

        def done(late: _Array, new: OpenWindows | None) -> ColumnarStep:
            if new is not None and len(new):
                new = OpenWindows(new.starts, new.rows, fired_upto, self.kind)
            else:
                new = None
            return ColumnarStep(fired_starts, fired_rows, late, new, fired_starts + size)

        if rows is None or times is None or len(times) == 0:
            return done(empty, kept)
        if self._near_ends(int(times.min()), int(times.max())):
            return None
        if bool(self._fires_on_arrival(watermark, times).any()):
            return None  # an element fires a window on arrival (EventTimeTrigger)
        late_mask = self._cleanup(self._last_start(times)) <= watermark
        late = np.flatnonzero(late_mask)
        if len(late) == len(times):
            return done(late, kept)
        added = np.flatnonzero(~late_mask)
        new_rows = rows if len(late) == 0 else rows.take(added)
        t = times[added]
        new_items = self.items.items_of(new_rows)
        group = t - np.mod(t - self.offset, self.pane)
        new_codes = None if row_codes is None else row_codes[added]
        if kept is not None and len(kept):
            if not kept.rows.schema.equals(new_items.schema):
                return None  # state written with another schema (e.g. session time zone)
            new_items = pa.concat_tables([kept.rows, new_items])
            group = np.concatenate((kept.starts, group))
            if new_codes is not None:
                assert kept_codes is not None  # (codes come for the state and the rows alike)
                new_codes = np.concatenate((kept_codes, new_codes))
        found = self.items.reduce(group, new_items, new_codes)
        if found is None:
            return None
        starts, _, panes = found
        return done(late, OpenWindows(starts, panes, fired_upto, self.kind))

    def _fire(
        self, state: OpenWindows, codes: _Array | None, lo: int, hi: int
    ) -> tuple[_Array, pa.Table | None] | None:
        """The windows starting in ``[lo, hi]`` that hold a pane of ``state`` (by key, then
        start) and their results; ``None`` when the columns could compute another result
        than the operator."""
        panes, _ = self._split(state, codes)
        first = np.maximum(self._first_start(panes.starts), self._align_up(lo))
        last = np.minimum(self._last_start(panes.starts), self._align_down(hi))
        holding = first <= last
        if not holding.any():
            return np.empty(0, np.int64), None
        pane_codes = None if codes is None else panes.codes[holding]
        _, starts, begin, end = window_ranges(pane_codes, first[holding], last[holding], self.slide)
        members = state.rows.take(pa.array(panes.index[holding], pa.int64()))
        reduced = self.items.reduce_ranges(members, begin, end)
        results = None if reduced is None else self.items.results_of(reduced)
        if results is None:
            return None  # (a vectorized function's None result: the operator's)
        return starts, results

    # ------------------------------------------------------------------ the operator's form
    def key_state_of(self, op: WindowOperator, state: OpenWindows, records: list[Any]) -> KeyState:
        """The operator's state of one key's panes (``records``: their accumulator lists)."""
        order = np.argsort(state.starts, kind="stable")
        reduced = ReducedPanes(
            tuple(state.starts[order].tolist()),
            tuple(records[i] for i in order.tolist()),
            state.fired_upto,
        )
        return op.import_reduced_panes(reduced)

    def open_windows_of(
        self, op: WindowOperator, ks: KeyState, encode: Callable[[list[Any]], pa.Table | None]
    ) -> OpenWindows | None:
        """One key's columnar panes for the operator's state ``ks``, or ``None`` when ``ks``
        holds anything else than panes (or panes near the ends of time)."""
        reduced = op.export_reduced_panes(ks)
        if reduced is None:
            return None
        starts = np.array(reduced.starts, np.int64)
        if self._near_ends(int(starts.min()), int(starts.max()) + self.pane):
            return None
        table = encode(list(reduced.partials))
        if table is None:
            return None
        return OpenWindows(starts, table, reduced.upto, self.kind)

    def describe(self) -> str:
        return (
            f"{self.items.describe()} on hopping windows of {self.size} ms every "
            f"{self.slide} ms computed on whole Arrow columns per key group: one item per "
            f"pane of {self.pane} ms, combined per window as it fires (keys the columns "
            "cannot take, e.g. near the ends of time, run through the operator)"
        )
