"""A :class:`~windowing.functions.vectorized.VectorizedAggregateFunction` of tumbling
event-time windows computed a record batch at a time in the batch replay.

In event-time order (no arrival order: nothing is late, every window fires once, at the end of
input, over all its rows, as :func:`~windowing.spark.columnar.core.columnar_results` assumes)
a tumbling window's result is a function of its rows in replay order. The rows of a key group
arrive sorted by key and event time, so each (key, window) is a run of consecutive rows: the
replay hands all the runs of a record batch to one ``add_groups`` call and their accumulators
to one ``get_results`` call, and builds the result columns in Arrow, rather than one operator
call per row. The rows of the last key's last window, which the next batch may continue, are
carried to it (:meth:`VectorizedTumbling.carried_from`), as for the built-in aggregations.

:meth:`VectorizedTumbling.results` returns ``None`` when the operator must compute the rows
(event times near the ends of time, a ``None`` result: the operator counts and reports such
windows), and the replay then runs the operator, through the function's adapter
(:class:`~windowing.functions.vectorized.VectorizedAdapter`), with the same results.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd
import pyarrow as pa
from pyspark.sql.pandas.types import to_arrow_type
from pyspark.sql.types import StructType

from windowing.assigners.hopping import HoppingEventTimeWindows
from windowing.assigners.tumbling import TumblingEventTimeWindows, WindowStagger
from windowing.functions.spec import Aggregate, WindowFunctionSpec
from windowing.functions.vectorized import (
    VectorizedAggregateFunction,
    describe,
    group_accumulators,
    group_results,
    in_format,
)
from windowing.job import WindowConfig
from windowing.spark.columnar.core import ColumnarShape, near_ends_of_time
from windowing.spark.columnar.tumbling import last_window_from, tumbling_starts
from windowing.spark.columns.output import OutputLayout
from windowing.spark.columns.schema import make_columns_encoder, make_row_encoder
from windowing.time import MAX_TIMESTAMP
from windowing.triggers.event_time import EventTimeTrigger

__all__ = ["VectorizedResults", "VectorizedTumbling", "vectorized_plan"]


@dataclass(frozen=True)
class VectorizedResults:
    """Per (key, window) group of a part of the input: its window's start and end, its first
    row (the key columns are taken from it) and the result columns."""

    starts: np.ndarray[Any, Any]
    ends: np.ndarray[Any, Any]
    rows: np.ndarray[Any, Any]
    columns: list[pa.Array]


@dataclass(frozen=True, eq=False)
class VectorizedTumbling:
    """A vectorized aggregate function of tumbling event-time windows (``size``, ``offset``
    in ms) in the batch replay, in event-time order."""

    function: VectorizedAggregateFunction[Any, Any]
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

    def carried_from(self, t: np.ndarray[Any, Any], lo: int) -> int:
        """The first of the rows ``lo:`` (event times ``t``, sorted) in the last window."""
        return last_window_from(t, lo, self.size, self.offset)

    def results(
        self,
        rows: pa.Table,
        times: pa.ChunkedArray,
        codes: np.ndarray[Any, Any] | None,
        layout: OutputLayout,
    ) -> VectorizedResults | None:
        """The windows of ``rows`` (the input columns of whole windows of one or more keys,
        sorted by key ``codes``, ``None`` for one key, then event time ``times`` in ms without
        nulls), or ``None`` when the operator must compute them."""
        t = times.to_numpy()
        n = len(t)
        if n == 0 or near_ends_of_time(self.margin, int(t.min()), int(t.max())):
            return None
        starts = tumbling_starts(t, self.size, self.offset)
        rising = starts[1:] >= starts[:-1]
        boundary = starts[1:] != starts[:-1]
        if codes is not None:
            same_key = codes[1:] == codes[:-1]
            rising = (codes[1:] > codes[:-1]) | (same_key & rising)
            boundary |= ~same_key
        if not bool(rising.all()):
            return None  # not in replay order: the operator (which checks) takes them
        first_rows = np.flatnonzero(np.concatenate(([True], boundary)))
        offsets = np.append(first_rows, n).astype(np.int64)
        fn = self.function
        batch = in_format(rows, fn.batch_format)
        results = group_results(fn, group_accumulators(fn, batch, offsets))
        columns = result_columns(fn, results, layout)
        if columns is None:
            return None
        group_starts = starts[first_rows]
        return VectorizedResults(group_starts, group_starts + self.size, first_rows, columns)

    def describe(self) -> str:
        return (
            f"{describe(self.function)} on tumbling windows of {self.size} ms: one add_groups "
            "and one get_results per Arrow record batch for all its (key, window) groups "
            "(keys the columns cannot take, e.g. near the ends of time, run through the "
            "operator, which hands add_batch each window's rows)"
        )


def result_columns(
    function: VectorizedAggregateFunction[Any, Any], results: Any, layout: OutputLayout
) -> list[pa.Array] | None:
    """``get_results``' value as the result columns: columns by field name (a ``dict``, an
    Arrow table or record batch, a pandas data frame), one array for an output of one
    field, or a sequence of results (``None`` when one is ``None``: the operator counts such
    windows)."""
    names = list(layout.out_schema.names)
    try:
        if isinstance(results, pd.DataFrame):
            results = pa.Table.from_pandas(results, preserve_index=False)
        if isinstance(results, pa.Table | pa.RecordBatch):
            results = {name: results.column(name) for name in results.column_names}
        if isinstance(results, Mapping):
            if sorted(map(str, results)) != sorted(names):
                msg = f"columns {sorted(map(str, results))} for the output fields {names}"
                raise ValueError(msg)
            return [_array(results[name]) for name in names]
        if len(names) == 1 and isinstance(results, np.ndarray | pa.Array | pa.ChunkedArray):
            return [_array(results)]
        values = list(results)
        if any(v is None for v in values):
            return None
        return _encoded(values, layout.out_schema)
    except Exception as exc:
        exc.add_note(
            f"while writing the results of {describe(function)}.get_results as the output "
            f"columns {layout.out_schema.simpleString()}"
        )
        raise


def _encoded(values: list[Any], schema: StructType) -> list[pa.Array]:
    """Results (as a window function returns them) as the columns of ``schema``."""
    columns = make_columns_encoder(schema)(values)
    if columns is None:
        encode = make_row_encoder(schema)
        columns = [[] for _ in schema.fields]
        for value in values:
            for column, v in zip(columns, encode(value), strict=True):
                column.append(v)
    types = [to_arrow_type(f.dataType, timezone="UTC") for f in schema.fields]
    return [pa.array(c, t) for c, t in zip(columns, types, strict=True)]


def _array(values: Any) -> pa.Array:
    if isinstance(values, pa.ChunkedArray):
        return values.combine_chunks()
    if isinstance(values, pa.Array):
        return values
    if isinstance(values, pd.Series):
        return pa.Array.from_pandas(values)
    return pa.array(values)


def vectorized_plan(
    config: WindowConfig, spec: WindowFunctionSpec, *, streaming: bool
) -> VectorizedTumbling | None:
    """The plan of a vectorized function computed a record batch at a time, or ``None``:
    batch; tumbling event-time windows (or hopping ones whose slide is their size), aligned;
    the default trigger; no evictor, no window function; a lateness that lets windows be
    cleaned up. The caller checks the order of rows (event-time order)."""
    if streaming or not isinstance(spec, Aggregate) or spec.vectorized is None:
        return None
    if spec.window_function is not None or config.evictor is not None:
        return None
    trigger = config.trigger
    if trigger is not None and type(trigger) is not EventTimeTrigger:
        return None
    lateness = config.allowed_lateness
    if lateness > MAX_TIMESTAMP // 4:
        return None  # cleanup at the end of time: the operator keeps the windows (a metric)
    assigner = config.assigner
    if type(assigner) is TumblingEventTimeWindows and assigner.stagger is WindowStagger.ALIGNED:
        return VectorizedTumbling(spec.vectorized, assigner.size, assigner.offset, lateness)
    if type(assigner) is HoppingEventTimeWindows and assigner.slide == assigner.size:
        return VectorizedTumbling(spec.vectorized, assigner.size, assigner.offset, lateness)
    return None
