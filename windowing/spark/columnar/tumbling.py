"""Tumbling windows on whole columns: a built-in aggregation's windows, one item of the
columnar state per window (its reduced record), fired and cleaned up as the window operator
does with ``EventTimeTrigger`` (:mod:`windowing.spark.columnar.core` has what the shapes
share; hopping windows and sessions are shapes of their own)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa

from windowing.assigners.hopping import HoppingEventTimeWindows
from windowing.assigners.tumbling import TumblingEventTimeWindows, WindowStagger
from windowing.engine.exchange import ReducedWindows
from windowing.engine.keystate import KeyState
from windowing.operator import WindowOperator
from windowing.rules import cleanup_times, windows_firing_on_arrival, windows_late
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
from windowing.windows import TimeWindow

__all__ = ["TumblingAggregation", "last_window_from", "tumbling_size", "tumbling_starts"]


def tumbling_starts(t: np.ndarray[Any, Any], size: int, offset: int) -> np.ndarray[Any, Any]:
    """The start of the tumbling window (``size``, ``offset`` in ms) of each event time."""
    return t - np.mod(t - offset, size)  # type: ignore[no-any-return]


def tumbling_size(assigner: Any) -> tuple[int, int] | None:
    """The size and offset (ms) of tumbling event-time windows (of a hopping assigner whose
    slide is its size too), or ``None``."""
    if type(assigner) is TumblingEventTimeWindows:
        if assigner.stagger is not WindowStagger.ALIGNED:
            return None  # the offset is drawn by the operator's assigner
        return assigner.size, assigner.offset
    if type(assigner) is HoppingEventTimeWindows and assigner.slide == assigner.size:
        return assigner.size, assigner.offset
    return None


def last_window_from(t: np.ndarray[Any, Any], lo: int, size: int, offset: int) -> int:
    """The first of the rows ``lo:`` (event times ``t``, sorted) in the tumbling window of
    the last one."""
    t_last = int(t[-1])
    window = t_last - (t_last - offset) % size
    return lo + int(np.searchsorted(t[lo:], window, side="left"))


@dataclass(frozen=True)
class TumblingAggregation(ItemsOfAField):
    """Tumbling event-time windows (``size``, ``offset`` in ms) of a built-in aggregation or
    of ``.agg`` columns, whose per-window item ``items`` says how to reduce
    (:class:`~windowing.spark.columnar.core.FieldItems`: a reduced input record;
    :class:`~windowing.spark.columnar.accumulators.AggregateItems`: accumulators)."""

    items: WindowItems
    size: int
    offset: int
    allowed_lateness: int = 0
    kind: ClassVar[str] = "tumbling"
    shape: ClassVar[ColumnarShape] = ColumnarShape.TUMBLING

    @property
    def margin(self) -> int:
        """Times within this distance of the ends of time are left to the operator (it clamps
        window bounds and cleanup times there)."""
        return 2 * self.size + abs(self.offset) + self.allowed_lateness

    # ---------------------------------------------- the calls of a WindowShape (tumbling)
    def keys_needing_the_operator(
        self,
        state: OpenWindows | None,
        state_codes: np.ndarray[Any, Any],
        watermark: int,
        times: np.ndarray[Any, Any],
        row_codes: np.ndarray[Any, Any],
    ) -> np.ndarray[Any, Any]:
        """No key: a tumbling window's rows never depend on another call's."""
        return np.zeros(len(times), np.bool_)

    def next_event_time(self, state: OpenWindows) -> int | None:
        """A window's end while it has not fired, then its cleanup time: the earliest."""
        ends = state.starts + (self.size - 1)
        due = np.where(ends > state.fired_upto, ends, cleanup_times(ends, self.allowed_lateness))
        return int(due.min())

    def window_count(self, state: OpenWindows, codes: np.ndarray[Any, Any] | None) -> int:
        """One window per item."""
        return len(state)

    def results(
        self,
        times: pa.ChunkedArray,
        values: pa.ChunkedArray,
        codes: np.ndarray[Any, Any] | None,
    ) -> ColumnarResults | None:
        """:func:`~windowing.spark.columnar.core.columnar_results` of tumbling windows."""
        t = times.to_numpy()
        if self.near_ends_of_time(int(t.min()), int(t.max())):
            return None  # window bounds near the ends of time: the operator clamps them
        found = reduce_groups(
            self.aggregation, self.first, self.window_starts(t), values.to_numpy(), codes
        )
        if found is None:
            return None
        starts, rows, field_values = found
        return ColumnarResults(starts, rows, field_values, starts + self.size)

    def rows_needing_the_operator(
        self, watermark: int, rows: pa.Table, times: pa.ChunkedArray
    ) -> np.ndarray[Any, Any]:
        """:func:`rows_needing_the_operator` of tumbling windows."""
        mask, t = self.items.rows_needing_the_operator(rows, times)
        if mask.all():
            return mask
        margin = self.margin
        mask |= times_near_ends(t, margin)
        if self.allowed_lateness:
            ends = self.window_starts(np.where(mask, 0, t)) + (self.size - 1)
            mask |= windows_firing_on_arrival(ends, self.allowed_lateness, watermark)
        return mask

    def step(
        self,
        state: OpenWindows | None,
        watermark: int,
        rows: pa.Table | None,
        times: np.ndarray[Any, Any] | None,
        codes: tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]] | None,
    ) -> ColumnarStep | None:
        """:func:`~windowing.spark.columnar.core.step_open_windows` of tumbling windows."""
        size, lateness = self.size, self.allowed_lateness
        state_codes, row_codes = (None, None) if codes is None else codes
        fired_rows: pa.Table | None = None
        fired_starts = np.empty(0, np.int64)
        fired_upto = watermark
        kept = None if rows is None else rows.schema.empty_table()
        kept_windows: OpenWindows | None = None
        kept_codes = None
        if state is not None and len(state):
            ends = state.starts + (size - 1)
            fire = (ends > state.fired_upto) & (ends <= watermark)
            if fire.any():
                fired = np.flatnonzero(fire)
                fired_starts = state.starts[fired]
                fired_rows = self.items.results_of(state.rows.take(fired))
                if fired_rows is None:
                    return None  # (a vectorized function's None result: the operator's)
            keep = ~windows_late(ends, lateness, watermark)
            kept_windows = state if keep.all() else state.take(np.flatnonzero(keep))
            if state_codes is not None:
                kept_codes = state_codes if keep.all() else state_codes[keep]
            fired_upto = max(state.fired_upto, watermark)
            kept = kept_windows.rows

        def step(late: np.ndarray[Any, Any]) -> ColumnarStep:
            left = None
            if kept_windows is not None and len(kept_windows):
                left = OpenWindows(kept_windows.starts, kept_windows.rows, fired_upto)
            return ColumnarStep(fired_starts, fired_rows, late, left, fired_starts + size)

        if rows is None or times is None or len(times) == 0 or kept is None:
            return step(np.empty(0, np.int64))
        if self.near_ends_of_time(int(times.min()), int(times.max())):
            return None
        row_starts = self.window_starts(times)
        row_ends = row_starts + (size - 1)
        is_late = windows_late(row_ends, lateness, watermark)
        if lateness and bool(windows_firing_on_arrival(row_ends, lateness, watermark).any()):
            return None  # an element fires its window on arrival (EventTimeTrigger)
        if is_late.any():
            late = np.flatnonzero(is_late)
            added = np.flatnonzero(~is_late)
            if len(added) == 0:
                return step(late)
            new_rows = rows.take(added)
            row_starts = row_starts[added]
            if row_codes is not None:
                row_codes = row_codes[added]
        else:
            late = np.empty(0, np.int64)
            new_rows = rows
        new_items = self.items.items_of(new_rows)
        if new_items is None:
            return None
        if len(kept) and not kept.schema.equals(new_items.schema):
            return None  # state written with another schema (e.g. session time zone)
        group, group_codes = row_starts, row_codes
        items = new_items
        if len(kept):
            assert kept_windows is not None
            items = pa.concat_tables([kept, new_items])
            group = np.concatenate((kept_windows.starts, row_starts))
            if row_codes is not None and kept_codes is not None:
                group_codes = np.concatenate((kept_codes, row_codes))
        found = self.items.reduce(group, items, group_codes)
        if found is None:
            return None
        new_starts, _, records = found
        state = OpenWindows(new_starts, records, fired_upto)
        return ColumnarStep(fired_starts, fired_rows, late, state, fired_starts + size)

    def records_of(self, items: pa.Table) -> list[Any]:
        """The operator's state value of each item."""
        return self.items.records_of(items)

    def usable_state(self, items: pa.Table) -> bool:
        """Whether the items can be reduced on columns."""
        return self.items.usable_state(items)

    def key_state_of(self, op: WindowOperator, state: OpenWindows, records: list[Any]) -> KeyState:
        """:func:`key_state_of` of tumbling windows."""
        size = self.size
        windows = tuple(TimeWindow(start, start + size) for start in state.starts.tolist())
        return op.import_reduced_windows(ReducedWindows(windows, tuple(records), state.fired_upto))

    def open_windows_of(
        self,
        op: WindowOperator,
        ks: KeyState,
        encode: Callable[[list[Any]], pa.Table | None],
    ) -> OpenWindows | None:
        """:func:`open_windows_of` of tumbling windows."""
        reduced = op.export_reduced_windows(ks)
        if reduced is None or not reduced.windows:
            return None
        size = self.size
        for w in reduced.windows:
            if w.end - w.start != size or (w.start - self.offset) % size:
                return None
            if self.near_ends_of_time(w.start, w.start + size - 1):
                return None
        table = encode(list(reduced.records))
        if table is None:
            return None
        starts = np.array([w.start for w in reduced.windows], np.int64)
        return OpenWindows(starts, table, reduced.fired_upto)

    def listing(self, state: OpenWindows) -> Iterator[tuple[int, int, int, list[int]]]:
        """:func:`~windowing.spark.columnar.core.window_listing` of tumbling windows."""
        lateness = self.allowed_lateness
        for i, start in enumerate(state.starts.tolist()):
            max_ts = start + self.size - 1
            pending = [max_ts] if max_ts > state.fired_upto else []
            if lateness:
                pending.append(max_ts + lateness)
            yield i, start, start + self.size, pending

    def describe(self) -> str:
        return (
            f"{self.items.describe()} on tumbling windows of {self.size} ms computed on "
            "whole Arrow columns per key group (keys the columns cannot take, e.g. near the "
            "ends of time, run through the operator)"
        )

    def window_starts(self, t: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        return tumbling_starts(t, self.size, self.offset)

    def near_ends_of_time(self, lo: int, hi: int) -> bool:
        return near_ends_of_time(self.margin, lo, hi)

    def carried_from(self, t: np.ndarray[Any, Any], lo: int) -> int:
        """The first of the rows ``lo:`` (event times ``t``, sorted) in the last window."""
        return last_window_from(t, lo, self.size, self.offset)
