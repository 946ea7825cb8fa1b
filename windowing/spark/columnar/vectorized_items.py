"""A vectorized aggregate of tumbling windows or sessions on whole columns, in streaming.

A streaming ``.aggregate(VectorizedAggregateFunction)`` runs, in the window operator, through
the function's adapter (:class:`~windowing.functions.vectorized.VectorizedAdapter`), whose
accumulator holds a window's rows until it fires and then hands them to ``add_batch``: a
batch built from the rows' Python objects per window. With the default trigger, no evictor
and tumbling windows (or sessions and hopping panes, for an ``order_insensitive``
function), the columnar state keeps instead, per window (an *item*), the key columns and
the window's rows so far as an Arrow list of the input records (:class:`VectorizedItems`),
in arrival order (a merged session's, a hopping window's: its sessions' or panes' rows one
after the other):

* a micro-batch's rows become an item each, and a window's items reduce to one by
  concatenating their lists in order (the held rows first);
* the windows firing in a call hand all their rows to one ``add_groups`` call and their
  accumulators to one ``get_results`` call, as in the batch replay;
* a window's rows beyond :data:`~windowing.functions.vectorized.MAX_PENDING_ROWS`, or a
  ``None`` result, leave the call to the operator (the items convert to the adapter's
  accumulators: a new accumulator and the rows; the operator's accumulators, once they have
  added rows, do not convert back, so such a key stays with the operator until its windows
  are cleaned up).

A late firing (allowed lateness) hands ``add_groups`` all the window's rows again, where the
operator adds the rows since the last firing to the accumulator it kept: the function's
contract (how rows are split into batches does not change the result beyond float rounding)
makes them equal.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.types import StructType

from windowing.assigners.hopping import HoppingEventTimeWindows
from windowing.assigners.session import EventTimeSessionWindows
from windowing.assigners.tumbling import TumblingEventTimeWindows, WindowStagger
from windowing.evictors.vectorized import (
    Clocks,
    VectorizedOneSidedEvictor,
    WindowRows,
    kept_before,
)
from windowing.functions.spec import Aggregate, WindowFunctionSpec
from windowing.functions.vectorized import (
    MAX_PENDING_ROWS,
    VectorizedAggregateFunction,
    describe,
)
from windowing.job import WindowConfig
from windowing.plan import Strategy, plan_operator
from windowing.spark.columnar.accumulators import AggregateItems, spec_items
from windowing.spark.columnar.core import default_firing, null_times, window_groups
from windowing.spark.columnar.hopping_accumulators import HoppingAccumulators
from windowing.spark.columnar.sessions import SessionAggregation
from windowing.spark.columnar.tumbling import TumblingAggregation
from windowing.spark.columnar.vectorized import aggregate_columns
from windowing.spark.columns.inputs import TS
from windowing.spark.columns.schema import table_rows
from windowing.time import MIN_TIMESTAMP
from windowing.windows import TimestampedValue

__all__ = ["ROWS", "START", "EvictingItems", "VectorizedItems", "vectorized_rows", "with_output"]

_Array = np.ndarray[Any, Any]

#: The list column of a window's rows in a columnar state that holds rows.
ROWS = "__pw_rows"
#: The column of each window's start in an evicting state (:class:`EvictingItems`).
START = "__pw_start"


@dataclass(frozen=True)
class VectorizedItems:
    """The items of a vectorized aggregate ``function``: per window the key columns ``keys``
    and the window's rows (:data:`ROWS`, a list of the input records); ``out_schema``, the
    result columns (bound by the runtime, :func:`with_output`). See the module docstring.

    Example::

        items = VectorizedItems(function, ("key",), out_schema)
        state = items.items_of(rows)  # one item per row
    """

    function: VectorizedAggregateFunction[Any, Any]
    keys: tuple[str, ...]
    out_schema: StructType | None = None

    # -------------------------------------------------------------------- rows to items
    def rows_needing_the_operator(
        self, rows: pa.Table, times: pa.ChunkedArray
    ) -> tuple[_Array, _Array]:
        """The rows without an event time (any value is the function's to read)."""
        return _without_time(rows, times)

    def items_of(self, rows: pa.Table) -> pa.Table:
        """Each input row as an item: its key columns and a list of itself."""
        return _keyed(self.keys, [rows.column(k) for k in self.keys], _row_lists(rows))

    # -------------------------------------------------------------------- reduction
    def reduce(
        self, group: _Array, items: pa.Table, codes: _Array | None
    ) -> tuple[_Array, _Array, pa.Table] | None:
        """The items of each window (``group``: their window starts; ``codes``: their keys)
        reduced to one, their lists concatenated in order, or ``None`` when a window would
        hold more rows than the operator's adapter does."""
        return _concatenated(self.keys, group, items, codes)

    def reduce_ranges(self, items: pa.Table, lo: _Array, hi: _Array) -> pa.Table | None:
        """The items ``[lo[i], hi[i])`` (non-empty ranges of one key's items each: a hopping
        window's panes) as one list of rows each, or ``None`` when one would hold more rows
        than the operator's adapter does."""
        records, offsets = _flattened(items.column(ROWS))
        first, last = offsets[lo], offsets[hi]
        sizes = last - first
        if len(sizes) and int(sizes.max()) > MAX_PENDING_ROWS:
            return None
        bounds = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
        take = np.arange(int(bounds[-1]), dtype=np.int64) + np.repeat(first - bounds[:-1], sizes)
        rows = records.take(pa.array(take, pa.int64()))
        lists = pa.ListArray.from_arrays(pa.array(bounds, pa.int32()), rows)
        keys = [items.column(k).take(pa.array(lo, pa.int64())) for k in self.keys]
        return _keyed(self.keys, keys, lists)

    def usable_state(self, items: pa.Table) -> bool:
        """Any held rows can be reduced on columns."""
        return True

    # -------------------------------------------------------------------- results
    def results_of(self, items: pa.Table) -> pa.Table | None:
        """The key columns and output columns of the items' windows: one ``add_groups``
        and one ``get_results`` call for all of them, or ``None`` when a result is ``None``
        (the operator emits nothing for such a window and counts it)."""
        out = _bound(self.out_schema, "VectorizedItems")
        records, offsets = _flattened(items.column(ROWS))
        rows = pa.Table.from_struct_array(records)
        return _results(self.keys, items, aggregate_columns(self.function, rows, offsets, out), out)

    # -------------------------------------------------------------------- the operator's form
    def records_of(self, items: pa.Table) -> list[Any]:
        """Each item's adapter accumulator: a new accumulator of the function and the
        window's rows (as ``Row`` objects of the input columns)."""
        records, offsets = _flattened(items.column(ROWS))
        table = pa.Table.from_struct_array(records)
        rows = table_rows(table, table.column_names)
        fn = self.function
        return [
            [fn.create_accumulator(), rows[lo:hi]]
            for lo, hi in itertools.pairwise(offsets.tolist())
        ]

    def describe(self) -> str:
        return (
            f"{describe(self.function)} with each window's rows held as an Arrow list, the "
            "windows firing in a call handed to one add_groups call"
        )


@dataclass(frozen=True)
class EvictingItems:
    """The items of a streaming job with an evictor of a form on columns that reads no clock
    (:class:`~windowing.evictors.vectorized.VectorizedOneSidedEvictor`: ``CountEvictor``,
    ``TimeEvictor``, ``DeltaEvictor`` with a ``vectorized_delta``), the default trigger and
    no allowed lateness, of tumbling windows of ``size`` ms: per window the key columns
    ``keys``, its start (:data:`START`) and its rows with their event times (:data:`ROWS`,
    the input records and :data:`~windowing.spark.columns.inputs.TS`), in arrival order (the
    evicting operator's buffer order). A window fires once and is cleaned up at once (no
    lateness), so a firing hands ``function`` the rows the evictor's ``keep_before`` mask
    keeps, and nothing stays for ``keep_after``: ``function`` is a vectorized aggregate
    (one ``add_groups`` call) or ``.agg`` accumulator columns
    (:class:`~windowing.spark.columnar.accumulators.AggregateItems`); ``out_schema``, the
    result columns (:func:`with_output`). A window whose rows the evictor all evicts, a
    ``None`` result or columns that could give another result leave the call to the
    operator, whose evicting state is each window's rows as ``TimestampedValue`` s.

    Example::

        items = EvictingItems(function, CountEvictor(10), 10_000, ("key",), out_schema)
    """

    function: VectorizedAggregateFunction[Any, Any] | AggregateItems
    evictor: VectorizedOneSidedEvictor
    size: int
    keys: tuple[str, ...]
    out_schema: StructType | None = None
    #: The rows the runtime hands :meth:`items_of` carry their event times (ms), column TS.
    with_times: ClassVar[bool] = True

    def rows_needing_the_operator(
        self, rows: pa.Table, times: pa.ChunkedArray
    ) -> tuple[_Array, _Array]:
        """The rows without an event time, and those ``.agg`` columns cannot add."""
        if isinstance(self.function, AggregateItems):
            return self.function.rows_needing_the_operator(rows, times)
        return _without_time(rows, times)

    def items_of(self, rows: pa.Table) -> pa.Table:
        """Each input row (with its event time) as an item of its own."""
        keys = [rows.column(k) for k in self.keys]
        lists = _row_lists(rows)
        table = _keyed(self.keys, keys, lists)
        return table.append_column(START, pa.array(np.zeros(rows.num_rows, np.int64)))

    def reduce(
        self, group: _Array, items: pa.Table, codes: _Array | None
    ) -> tuple[_Array, _Array, pa.Table] | None:
        """The items of each window concatenated (see :class:`VectorizedItems`), with the
        window's start."""
        found = _concatenated(self.keys, group, items, codes)
        if found is None:
            return None
        starts, carriers, table = found
        return starts, carriers, table.append_column(START, pa.array(starts, pa.int64()))

    def usable_state(self, items: pa.Table) -> bool:
        """Held rows: the columns take any (the rows they cannot take never became items)."""
        return True

    def results_of(self, items: pa.Table) -> pa.Table | None:
        """The key columns and output columns of the items' windows, over the rows the
        evictor keeps, or ``None`` when the operator must compute them."""
        out = _bound(self.out_schema, "EvictingItems")
        records, offsets = _flattened(items.column(ROWS))
        table = pa.Table.from_struct_array(records)
        starts = items.column(START).to_numpy()
        inputs = table.drop_columns([TS])
        rows = WindowRows(offsets, table.column(TS).to_numpy(), starts, starts + self.size, inputs)
        mask = kept_before(self.evictor, rows, _NO_CLOCKS, "a streaming call")
        counts = rows.kept_per_window(mask)
        if not counts.all():
            return None  # a window of no row: the operator gives a new accumulator's result
        kept = inputs.filter(pa.array(mask))
        bounds = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
        return _results(self.keys, items, aggregate_columns(self.function, kept, bounds, out), out)

    def records_of(self, items: pa.Table) -> list[Any]:
        """Each item's evicting state: the window's rows as ``TimestampedValue`` s of
        ``Row`` objects of the input columns and their event times."""
        records, offsets = _flattened(items.column(ROWS))
        table = pa.Table.from_struct_array(records)
        names = [n for n in table.column_names if n != TS]
        values = [
            TimestampedValue(row, ts)
            for row, ts in zip(table_rows(table, names), table.column(TS).to_pylist(), strict=True)
        ]
        return [values[lo:hi] for lo, hi in itertools.pairwise(offsets.tolist())]

    def describe(self) -> str:
        what = (
            self.function.describe()
            if isinstance(self.function, AggregateItems)
            else describe(self.function)
        )
        return (
            f"{what} over the rows {self.evictor!r} keeps (its mask on columns), each "
            "window's rows held as an Arrow list"
        )


#: The clocks a one-sided evictor's mask gets in streaming (it reads none).
_NO_CLOCKS = Clocks(MIN_TIMESTAMP, 0)


def _without_time(rows: pa.Table, times: pa.ChunkedArray) -> tuple[_Array, _Array]:
    """The rows without an event time (a boolean mask), and the event times (0 for nulls)."""
    if rows.num_rows == 0:
        return np.zeros(0, np.bool_), np.zeros(0, np.int64)
    return null_times(times)


def _row_lists(rows: pa.Table) -> pa.ListArray:
    """Each row of ``rows`` as a list of itself (a struct of its columns)."""
    records = pa.StructArray.from_arrays(
        [rows.column(name).combine_chunks() for name in rows.column_names],
        fields=list(rows.schema),
    )
    return pa.ListArray.from_arrays(pa.array(np.arange(rows.num_rows + 1), pa.int32()), records)


def _keyed(names: Sequence[str], keys: Sequence[Any], lists: pa.Array) -> pa.Table:
    """Items: the key columns ``keys`` (named ``names``) and the lists of rows."""
    return pa.Table.from_arrays([*keys, lists], names=[*names, ROWS])


def _concatenated(
    names: Sequence[str], group: _Array, items: pa.Table, codes: _Array | None
) -> tuple[_Array, _Array, pa.Table] | None:
    """The items of each window (``group``: their window starts; ``codes``: their keys; key
    columns ``names``) reduced to one list each, concatenated in order: the windows' starts
    (by key, then ascending), the position of an item of each, and the reduced items;
    ``None`` when a window would hold more than
    :data:`~windowing.functions.vectorized.MAX_PENDING_ROWS` rows (the adapter hands such
    rows to ``add_batch`` before the window fires)."""
    perm, first_rows = window_groups(group, codes)
    starts = (group if perm is None else group[perm])[first_rows]
    carriers = first_rows if perm is None else perm[first_rows]
    ordered = items if perm is None else items.take(pa.array(perm, pa.int64()))
    records, offsets = _flattened(ordered.column(ROWS))
    bounds = offsets[np.append(first_rows, len(offsets) - 1)]
    if len(bounds) > 1 and int(np.diff(bounds).max()) > MAX_PENDING_ROWS:
        return None
    lists = pa.ListArray.from_arrays(pa.array(bounds, pa.int32()), records)
    take = pa.array(carriers, pa.int64())
    return starts, carriers, _keyed(names, [items.column(k).take(take) for k in names], lists)


def _results(
    names: Sequence[str], items: pa.Table, columns: list[pa.Array] | None, out: StructType
) -> pa.Table | None:
    """The key columns ``names`` of ``items`` and the result ``columns`` (``out``), or
    ``None`` when there are no columns (the operator computes them)."""
    if columns is None:
        return None
    return pa.Table.from_arrays(
        [*(items.column(k) for k in names), *columns], names=[*names, *out.names]
    )


def _bound(out_schema: StructType | None, owner: str) -> StructType:
    """The result columns items were bound to (:func:`with_output`)."""
    if out_schema is None:
        msg = f"{owner}.results_of before the output columns were bound (with_output)"
        raise RuntimeError(msg)
    return out_schema


def _flattened(lists: pa.ChunkedArray | pa.Array) -> tuple[pa.StructArray, _Array]:
    """The records of a list column, one after the other, and where each list begins in
    them (then their number)."""
    array = lists.combine_chunks() if isinstance(lists, pa.ChunkedArray) else lists
    lengths = pc.list_value_length(array).to_numpy(zero_copy_only=False)
    offsets = np.zeros(len(lengths) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return array.flatten(), offsets


def vectorized_rows(
    config: WindowConfig,
    spec: WindowFunctionSpec,
    keys: Sequence[str],
    input_arrow: pa.Schema | None = None,
) -> TumblingAggregation | SessionAggregation | HoppingAccumulators | None:
    """The streaming plan that holds windows' rows (``spec``: no window function; ``keys``,
    the key columns; ``input_arrow``, the input's Arrow schema), or ``None``: a vectorized
    aggregate with the default trigger, no evictor and a lateness after which windows are
    cleaned up, of aligned tumbling event-time windows, or of event-time sessions of a
    static gap or of hopping windows kept as the operator's panes when the function is
    ``order_insensitive`` (a merged session's rows are its sessions' rows one after the
    other, a hopping window's its panes', not in arrival order); a vectorized aggregate or
    ``.agg`` accumulator columns of aligned tumbling windows with the default trigger, no
    lateness and an evictor whose mask reads no clock (:class:`EvictingItems`)."""
    if not isinstance(spec, Aggregate) or spec.window_function is not None:
        return None
    if config.evictor is not None:
        return _evicting(config, spec, keys, input_arrow)
    fn = spec.vectorized
    lateness = config.allowed_lateness
    if fn is None or not default_firing(config.trigger, config.evictor, lateness):
        return None
    assigner = config.assigner
    items = VectorizedItems(fn, tuple(keys))
    if type(assigner) is EventTimeSessionWindows and fn.order_insensitive:
        return SessionAggregation(items, assigner.gap, lateness)
    if type(assigner) is HoppingEventTimeWindows and assigner.slide < assigner.size:
        # the operator's panes (an order-insensitive function's, by default): each pane's
        # rows held, a window's panes' rows one after the other
        kept = plan_operator(assigner, None, None, spec, lateness, config.slicing)
        if kept.strategy is not Strategy.PANES or not fn.order_insensitive:
            return None
        size, slide, offset = assigner.size, assigner.slide, assigner.offset
        return HoppingAccumulators(items, size, slide, offset, lateness)
    if type(assigner) is not TumblingEventTimeWindows:
        return None
    if assigner.stagger is not WindowStagger.ALIGNED:
        return None
    return TumblingAggregation(items, assigner.size, assigner.offset, lateness)


def _evicting(
    config: WindowConfig, spec: Aggregate, keys: Sequence[str], input_arrow: pa.Schema | None
) -> TumblingAggregation | None:
    evictor, assigner = config.evictor, config.assigner
    if not isinstance(evictor, VectorizedOneSidedEvictor) or not evictor.vectorized:
        return None  # the operator: per-row methods, or a mask that may read the clocks
    if config.allowed_lateness or not default_firing(config.trigger, None, 0):
        return None  # late firings would read the rows the evictor left
    if type(assigner) is not TumblingEventTimeWindows:
        return None
    if assigner.stagger is not WindowStagger.ALIGNED:
        return None
    fn: Any = spec.vectorized or spec_items(spec, keys, input_arrow)
    if fn is None:
        return None
    items = EvictingItems(fn, evictor, assigner.size, tuple(keys))
    return TumblingAggregation(items, assigner.size, assigner.offset, 0)


def with_output(plan: Any, out_schema: StructType) -> Any:
    """``plan`` (a columnar plan), its vectorized items bound to the result columns
    ``out_schema``; any other plan as it is."""
    items = getattr(plan, "items", None)
    if isinstance(items, VectorizedItems | EvictingItems):
        return replace(plan, items=replace(items, out_schema=out_schema))
    return plan
