"""A vectorized aggregate of tumbling windows or sessions on whole columns, in streaming.

A streaming ``.aggregate(VectorizedAggregateFunction)`` runs, in the window operator, through
the function's adapter (:class:`~windowing.functions.vectorized.VectorizedAdapter`), whose
accumulator holds a window's rows until it fires and then hands them to ``add_batch``: a
batch built from the rows' Python objects per window. With the default trigger, no evictor
and tumbling windows (or sessions, for an ``order_insensitive`` function), the columnar state
keeps instead, per window (an *item*), the key columns and the window's rows so far as an
Arrow list of the input records (:class:`VectorizedItems`), in arrival order (a merged
session's: its sessions' rows one after the other):

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
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.types import StructType

from windowing.assigners.session import EventTimeSessionWindows
from windowing.assigners.tumbling import TumblingEventTimeWindows, WindowStagger
from windowing.functions.spec import Aggregate, WindowFunctionSpec
from windowing.functions.vectorized import (
    MAX_PENDING_ROWS,
    VectorizedAggregateFunction,
    describe,
    group_accumulators,
    group_results,
    in_format,
)
from windowing.job import WindowConfig
from windowing.spark.columnar.core import default_firing, null_times, window_groups
from windowing.spark.columnar.sessions import SessionAggregation
from windowing.spark.columnar.tumbling import TumblingAggregation
from windowing.spark.columnar.vectorized import result_columns
from windowing.spark.columns.schema import table_rows

__all__ = ["ROWS", "VectorizedItems", "vectorized_rows", "with_output"]

_Array = np.ndarray[Any, Any]

#: The list column of a window's rows in a columnar state of a vectorized aggregate.
ROWS = "__pw_rows"


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
        if rows.num_rows == 0:
            return np.zeros(0, np.bool_), np.zeros(0, np.int64)
        return null_times(times)

    def items_of(self, rows: pa.Table) -> pa.Table:
        """Each input row as an item: its key columns and a list of itself."""
        n = rows.num_rows
        records = pa.StructArray.from_arrays(
            [rows.column(name).combine_chunks() for name in rows.column_names],
            fields=list(rows.schema),
        )
        lists = pa.ListArray.from_arrays(pa.array(np.arange(n + 1), pa.int32()), records)
        return self._items([rows.column(k) for k in self.keys], lists)

    def _items(self, keys: list[Any], lists: pa.Array) -> pa.Table:
        return pa.Table.from_arrays([*keys, lists], names=[*self.keys, ROWS])

    # -------------------------------------------------------------------- reduction
    def reduce(
        self, group: _Array, items: pa.Table, codes: _Array | None
    ) -> tuple[_Array, _Array, pa.Table] | None:
        """The items of each window (``group``: their window starts; ``codes``: their keys)
        reduced to one, their lists concatenated in order, or ``None`` when a window would
        hold more rows than the operator's adapter does."""
        perm, first_rows = window_groups(group, codes)
        starts = (group if perm is None else group[perm])[first_rows]
        carriers = first_rows if perm is None else perm[first_rows]
        ordered = items if perm is None else items.take(pa.array(perm, pa.int64()))
        records, offsets = _flattened(ordered.column(ROWS))
        bounds = offsets[np.append(first_rows, len(offsets) - 1)]
        if len(bounds) > 1 and int(np.diff(bounds).max()) > MAX_PENDING_ROWS:
            return None  # the adapter hands such rows to add_batch before the window fires
        lists = pa.ListArray.from_arrays(pa.array(bounds, pa.int32()), records)
        take = pa.array(carriers, pa.int64())
        keys = [items.column(k).take(take) for k in self.keys]
        return starts, carriers, self._items(keys, lists)

    def usable_state(self, items: pa.Table) -> bool:
        """Any held rows can be reduced on columns."""
        return True

    # -------------------------------------------------------------------- results
    def results_of(self, items: pa.Table) -> pa.Table | None:
        """The key columns and output columns of the items' windows: one ``add_groups``
        and one ``get_results`` call for all of them, or ``None`` when a result is ``None``
        (the operator emits nothing for such a window and counts it)."""
        if self.out_schema is None:
            msg = "VectorizedItems.results_of before the output columns were bound (with_output)"
            raise RuntimeError(msg)
        fn = self.function
        records, offsets = _flattened(items.column(ROWS))
        batch = in_format(pa.Table.from_struct_array(records), fn.batch_format)
        results = group_results(fn, group_accumulators(fn, batch, offsets))
        columns = result_columns(fn, results, self.out_schema)
        if columns is None:
            return None
        return pa.Table.from_arrays(
            [*(items.column(k) for k in self.keys), *columns],
            names=[*self.keys, *self.out_schema.names],
        )

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


def _flattened(lists: pa.ChunkedArray | pa.Array) -> tuple[pa.StructArray, _Array]:
    """The records of a list column, one after the other, and where each list begins in
    them (then their number)."""
    array = lists.combine_chunks() if isinstance(lists, pa.ChunkedArray) else lists
    lengths = pc.list_value_length(array).to_numpy(zero_copy_only=False)
    offsets = np.zeros(len(lengths) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return array.flatten(), offsets


def vectorized_rows(
    config: WindowConfig, spec: WindowFunctionSpec, keys: Sequence[str]
) -> TumblingAggregation | SessionAggregation | None:
    """The streaming plan of a vectorized aggregate (``spec``, no window function; ``keys``,
    the key columns) with the default trigger, no evictor and a lateness after which windows
    are cleaned up: of aligned tumbling event-time windows, or of event-time sessions of a
    static gap when the function is ``order_insensitive`` (a merged session's rows are
    its sessions' rows one after the other, not in arrival order), else ``None``."""
    if not isinstance(spec, Aggregate) or spec.window_function is not None:
        return None
    fn = spec.vectorized
    lateness = config.allowed_lateness
    if fn is None or not default_firing(config.trigger, config.evictor, lateness):
        return None
    assigner = config.assigner
    items = VectorizedItems(fn, tuple(keys))
    if type(assigner) is EventTimeSessionWindows and fn.order_insensitive:
        return SessionAggregation(items, assigner.gap, lateness)
    if type(assigner) is not TumblingEventTimeWindows:
        return None
    if assigner.stagger is not WindowStagger.ALIGNED:
        return None
    return TumblingAggregation(items, assigner.size, assigner.offset, lateness)


def with_output(plan: Any, out_schema: StructType) -> Any:
    """``plan`` (a columnar plan), its vectorized items bound to the result columns
    ``out_schema``; any other plan as it is."""
    items = getattr(plan, "items", None)
    if isinstance(items, VectorizedItems):
        return replace(plan, items=replace(items, out_schema=out_schema))
    return plan
