"""Arrow tables in and out of the streaming processor: the input rows of a key group as one
table (times, NaNs, keys restored), and the output packed into few binary rows for Spark."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame
from pyspark.sql import functions as F  # noqa: N812 - the PySpark convention
from pyspark.sql.types import (
    BinaryType,
    StructField,
    StructType,
    TimestampType,
)

from windowing.spark.columns.keys import (
    key_segments,
    key_value,
)
from windowing.spark.columns.output import (
    col,
)
from windowing.spark.columns.schema import (
    arrow_to_python,
)
from windowing.time import MIN_TIMESTAMP

if TYPE_CHECKING:
    pass


__all__ = [
    "PACKED",
    "PACKED_SCHEMA",
    "from_ipc",
    "input_table",
    "key_ranges",
    "pack",
    "restore_nans",
    "timestamps_as_micros",
    "to_ipc",
    "unpack",
]

PACKED = "__pw_packed"
PACKED_SCHEMA = StructType([StructField(PACKED, BinaryType(), False)])
_PACKED_COLUMNS = pd.Index([PACKED])

_IPC_OPTIONS = pa.ipc.IpcWriteOptions()  # given explicitly: pyarrow reads no environment


def to_ipc(data: pa.Table | Sequence[pa.RecordBatch]) -> bytes:
    """A table, or record batches of one schema, as an Arrow IPC stream."""
    sink = pa.BufferOutputStream()
    schema = data.schema if isinstance(data, pa.Table) else data[0].schema
    with pa.ipc.new_stream(sink, schema, options=_IPC_OPTIONS) as writer:
        if isinstance(data, pa.Table):
            writer.write_table(data)
        else:
            for batch in data:
                writer.write_batch(batch)
    return sink.getvalue().to_pybytes()  # type: ignore[no-any-return]


def from_ipc(data: bytes) -> pa.Table:
    """The table of an Arrow IPC stream written by :func:`to_ipc`."""
    return pa.ipc.open_stream(data).read_all()


#: The largest packed row: Spark batches up to ``maxRecordsPerBatch`` (10,000) rows of the
#: binary column into one Arrow batch, whose offsets are 32-bit (2 GiB in all).
_PACK_LIMIT = 128 * 1024


def pack(*outputs: pa.Table | list[pa.RecordBatch]) -> pd.DataFrame:
    """One processor call's tagged outputs (tables, or record batches of one schema each;
    empty lists are skipped) as the one frame the processor yields: Arrow IPC streams in one
    binary column, a row per output (or, for a large output, one row per slice of about
    ``_PACK_LIMIT`` bytes). Spark converts each yielded pandas frame back to Arrow column by
    column (a fixed cost per column and frame); one binary column and one frame per call
    keep that cost to one column whatever the layout."""
    blobs: list[bytes] = []
    for output in outputs:
        if isinstance(output, list) and not output:
            continue
        blob = to_ipc(output)
        rows = output.num_rows if isinstance(output, pa.Table) else sum(b.num_rows for b in output)
        if len(blob) <= _PACK_LIMIT or rows < 2:
            blobs.append(blob)
            continue
        table = output if isinstance(output, pa.Table) else pa.Table.from_batches(output)
        step = max(1, rows * _PACK_LIMIT // len(blob))
        blobs.extend(to_ipc(table.slice(i, step)) for i in range(0, rows, step))
    column = np.empty((len(blobs), 1), dtype=object)
    column[:, 0] = blobs
    # a 2-d block and a prebuilt column index: the cheapest frames pandas builds
    return pd.DataFrame(
        column, columns=_PACKED_COLUMNS, index=pd.RangeIndex(len(blobs)), dtype=object, copy=False
    )


def unpack(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """The ``mapInArrow`` function after the processor: the tagged tables of the packed
    rows of each input batch, concatenated (one schema: a column of nulls may carry another
    time zone label than one read from the input, and is relabelled; the instants are the
    same)."""
    for batch in batches:
        tables = [from_ipc(data) for data in batch.column(0).to_pylist()]
        if tables:
            first = tables[0].schema
            tables = [t if t.schema.equals(first) else _relabel(t, first) for t in tables]
            yield from pa.concat_tables(tables).combine_chunks().to_batches()


def _relabel(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """``table`` with the time zone labels of ``schema``'s timestamp columns."""
    columns = [
        column.cast(field.type)
        if column.type != field.type and pa.types.is_timestamp(column.type)
        else column
        for column, field in zip(table.columns, schema, strict=True)
    ]
    return pa.Table.from_arrays(columns, schema=schema)


def input_table(
    pdf: pd.DataFrame,
    schema: pa.Schema,
    order: list[tuple[str, str, str]],
) -> pa.Table:
    """A key's rows as Spark hands them to the processor (a pandas frame whose columns are
    those of ``schema`` by position: Spark names the internal columns ``_<i>``) as an Arrow
    table of ``schema``, sorted by the pyarrow sort keys ``order`` (the replay order).

    A top-level ``TimestampType`` column arrives as its epoch microseconds, with
    ``MIN_TIMESTAMP`` for null (:func:`timestamps_as_micros`): its exact instants, also in
    the hour repeated when clocks go back and outside pandas' nanosecond range. Numbers go
    through numpy, several times faster than ``pa.Array.from_pandas`` for the few hundred
    rows of a key, with the same result (``NaN`` becomes null); so does the sort when its
    columns hold no nulls. Timestamps nested in other types keep Spark's own conversion."""
    # A column's values without building a Series (pandas' block manager, where present).
    values_at = getattr(getattr(pdf, "_mgr", None), "iget_values", None)
    columns: list[np.ndarray[Any, Any] | None] = []
    for i in range(len(schema)):
        values = values_at(i) if values_at is not None else pdf.iloc[:, i].array
        ok = isinstance(values, np.ndarray) and values.dtype.kind in "iufb"
        columns.append(values if ok else None)
    keys = [columns[schema.get_field_index(name)] for name, _, _ in order]
    perm = None
    sortable = all(k is not None and k.dtype.kind in "iu" for k in keys)
    if keys and sortable and len(pdf) > 1:
        perm = np.lexsort(keys[::-1])  # last key first; stable
        if bool((perm[1:] > perm[:-1]).all()):
            perm = None  # already in order
    arrays = []
    for i, (field, values) in enumerate(zip(schema, columns, strict=True)):
        if values is None:
            array = pa.Array.from_pandas(pdf.iloc[:, i], type=field.type, safe=False)
            arrays.append(array if perm is None else array.take(perm))
            continue
        if perm is not None:
            values = values[perm]
        if pa.types.is_timestamp(field.type) and values.dtype.kind == "i":
            micros = pa.array(values, pa.int64(), mask=values == MIN_TIMESTAMP)
            arrays.append(micros.cast(pa.timestamp("us", tz="UTC")).cast(field.type))
        else:
            # safe=False as pa.Array.from_pandas: a long column with nulls arrives as floats
            arrays.append(pa.array(values, field.type, from_pandas=True, safe=False))
    table = pa.Table.from_arrays(arrays, schema=schema)
    if keys and not sortable and len(pdf) > 1:
        table = table.take(pc.sort_indices(table, sort_keys=order))  # nulls last
    return table


def timestamps_as_micros(df: DataFrame) -> DataFrame:
    """``df`` with each top-level ``TimestampType`` column replaced by its epoch
    microseconds, ``MIN_TIMESTAMP`` for null (outside Spark's timestamp range): Spark's
    pandas frames would give naive wall-clock times of the session time zone (ambiguous
    when clocks go back) in nanoseconds (years 1678-2261 only)."""
    return df.select(
        *[
            F.coalesce(F.unix_micros(col(f.name)), F.lit(MIN_TIMESTAMP)).alias(f.name)
            if isinstance(f.dataType, TimestampType)
            else col(f.name)
            for f in df.schema.fields
        ]
    )


def key_ranges(table: pa.Table, keys: Sequence[str]) -> tuple[pa.Table, list[tuple[Any, int, int]]]:
    """``table`` with each key's rows together (kept in their order) and ``(key, first row,
    end row)`` for each key."""
    if table.num_rows == 0:
        return table, []
    segments = key_segments(table, keys)
    table = segments.table
    first_rows = pa.array(segments.starts[:-1], pa.int64())
    values = [arrow_to_python(table.column(k).take(first_rows)) for k in keys]
    return table, [
        (key_value([v[i] for v in values]), lo, hi)
        for i, (lo, hi) in enumerate(itertools.pairwise(segments.starts))
    ]


def restore_nans(table: pa.Table, masks: Sequence[tuple[str, Sequence[str]]]) -> pa.Table:
    """``table`` with NaN back where the masks say a float value was NaN (the frame from
    Spark gave it as a null)."""
    for mask_name, names in masks:
        mask = table.column(mask_name).to_numpy()
        if not mask.any():
            continue
        for bit, name in enumerate(names):
            hit = (mask >> bit) & 1 == 1
            if hit.any():
                i = table.schema.get_field_index(name)
                column = table.column(i)
                nan = pa.scalar(float("nan"), column.type)
                table = table.set_column(i, name, pc.if_else(pa.array(hit), nan, column))
    return table
