"""Flink's built-in aggregations (``WindowedStream.sum`` / ``min`` / ``max`` / ``min_by`` /
``max_by``) as Spark aggregate calls, for the native plans of ``WindowedStream.agg``.

A built-in's result (:class:`~windowing.functions.aggregations.FieldAggregation`) is a row
of the window: its *first* row in replay order with the field replaced by the sum, minimum
or maximum, or for ``min_by`` / ``max_by`` the row holding the extreme value. Both are
aggregates Spark computes natively, as :class:`~windowing.spark.columns.aggregates.AggregateCall`
objects the native plans already run (so late firings, allowed lateness, late rows, arrival
order, hopping windows and sessions work as for ``.agg``):

* the first row: without an arrival order ``.agg``'s ``first`` of each of its columns (of
  the row as a struct when a column has no fixed width), by event time, then the content
  hash, Flink's "first element added to the window" in the batch replay's order
  (:func:`~windowing.spark.columns.inputs.replay_order`); the native plans of tumbling
  windows aggregate these by hash, in two steps
  (:func:`~windowing.spark.native.parts.grouped_aggregates`); with an arrival order
  ``min_by(struct(the row's columns), struct(arrival order, event time, content hash))``;
* ``sum``: ``sum`` of the field (an integer field of up to 32 bits as ``bigint``; a
  ``bigint`` field as two exact ``bigint`` sums of its high and low 32 bits; a decimal of up
  to 18 digits at ``p + 10`` digits): exact, whatever the order of additions, then checked
  against the field's type (a sum that does not fit fails the query, as the window
  operator's does) and cast to it;
* ``min`` / ``max``: Spark's ``min`` / ``max`` of the field; floats as a struct with a flag
  below ``0.0`` for ``-0.0`` (Java's ``Double.compareTo``: NaN above every number, which is
  Spark's order too, and ``-0.0`` below ``0.0``, which Spark's is not);
* ``min_by`` / ``max_by``: ``min_by`` / ``max_by`` of the row by ``struct(field is null,
  field, replay order)``: never a null over a value, ties to the first (``first=True``) or
  last row in replay order, and a window of nulls gives its first row; with the field (no
  float) and every column of fixed width and no arrival order, the call carries a
  :class:`~windowing.spark.columns.aggregates.ValuePick`, which the native plans of
  tumbling windows pick by hash, in three steps.

A final select rebuilds the built-in's output row from these columns (the input's columns
but the keys, in order, with their names and types). What Spark cannot compute exactly as
the window operator does keeps the operator (or columnar) path, and
:func:`compile_field_aggregation` says why: a ``float`` / ``double`` sum (its last bits depend
on the order of additions), a decimal sum of more than 18 digits (the operator's Python
decimals round past 28), a string with a collation (the operator compares code points).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from pyspark.sql import Column
from pyspark.sql import functions as F  # noqa: N812 - the PySpark convention
from pyspark.sql.types import (
    ByteType,
    DataType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    ShortType,
    StringType,
    StructField,
    StructType,
)

from windowing.functions.aggregations import AggregationType, FieldAggregation
from windowing.functions.columns import AggKind
from windowing.job import Job
from windowing.spark.columns.aggregates import (
    FIXED_WIDTH,
    AggregateCall,
    CompiledAggregates,
    ValuePick,
)
from windowing.spark.columns.inputs import TB, TS, arrival_fields
from windowing.spark.columns.output import col

__all__ = ["compile_field_aggregation", "describe", "why_not_native"]

_ROW = "__pw_brow"  # the window's first row (sum / min / max) or the picked row
_VALUE = "__pw_bval"  # the aggregate (sum / min / max); a bigint sum's high 32 bits
_LOW = "__pw_blow"  # a bigint sum's low 32 bits
_FIRST = "__pw_bfirst"  # the first row's fields, one call each (numbered)
_V, _Z = "v", "z"  # a float's value and its -0.0 flag (min / max)

#: The integer types, by their bounds.
_BOUNDS: dict[type[DataType], tuple[int, int]] = {
    ByteType: (-(2**7), 2**7 - 1),
    ShortType: (-(2**15), 2**15 - 1),
    IntegerType: (-(2**31), 2**31 - 1),
    LongType: (-(2**63), 2**63 - 1),
}
#: A decimal sum is exact in the operator's Python decimals (28 digits) up to this precision.
_DECIMAL_SUM_DIGITS = 18


def why_not_native(kind: AggregationType, dtype: DataType) -> str | None:
    """Why a built-in of a field of type ``dtype`` has no native plan (``None``: it has)."""
    if kind is AggregationType.SUM:
        if isinstance(dtype, FloatType | DoubleType):
            return (
                f"a sum of a {dtype.simpleString()} field depends on the order of its additions "
                "(Spark's sum adds in another order than the window's)"
            )
        if isinstance(dtype, DecimalType) and dtype.precision > _DECIMAL_SUM_DIGITS:
            return (
                f"a sum of a {dtype.simpleString()} field: the window operator's Python "
                "decimals round sums past 28 digits, Spark's do not"
            )
    if isinstance(dtype, StringType) and getattr(dtype, "collation", "UTF8_BINARY") != (
        "UTF8_BINARY"
    ):
        return f"the field's collation orders strings otherwise ({dtype.simpleString()})"
    return None


def compile_field_aggregation(job: Job, fn: FieldAggregation) -> CompiledAggregates | str:
    """The built-in ``fn`` (its field a column name of the job's DataFrame, not a key) as
    aggregate calls and the select rebuilding its row (no Spark job runs); or, when Spark
    cannot compute it exactly as the window operator does, why."""
    df = job.source.df
    assert isinstance(fn.field, str)
    field, kind = fn.field, fn.aggregation
    dtype = df.schema[field].dataType
    why = why_not_native(kind, dtype)
    if why is not None:
        return why
    keys = tuple(job.keys or ())
    fields = [f for f in df.schema.fields if f.name not in keys]
    row = F.struct(*[col(f.name) for f in fields])
    row_type = df.select(row).schema.fields[0].dataType
    replay = _replay_parts(job)
    x = col(field)
    calls: list[AggregateCall]
    if kind.picks_element:
        order = _pick_order(x, dtype, replay, smallest=kind is AggregationType.MIN_BY, fn=fn)
        by = AggKind.MIN_BY if kind is AggregationType.MIN_BY else AggKind.MAX_BY
        pick = _call(by, _ROW, row_type, row, order)
        hashable = not isinstance(dtype, FloatType | DoubleType) and all(
            isinstance(f.dataType, FIXED_WIDTH) for f in fields
        )
        if hashable and not job.source.arrival_columns:
            value_pick = ValuePick(
                field, tuple(f.name for f in fields), kind is AggregationType.MIN_BY, fn.first
            )
            pick = dataclasses.replace(pick, value_pick=value_pick)
        calls = [pick]
        picked = col(_ROW)
        values = [picked.getField(f.name) for f in fields]
    else:
        others = [f for f in fields if f.name != field]
        calls, firsts = _first_row(job, others, row, row_type, replay)
        if kind is AggregationType.SUM:
            calls += _sum_calls(x, dtype)
            value = _sum_value(dtype, field)
        else:
            extreme = AggKind.MIN if kind is AggregationType.MIN else AggKind.MAX
            floating = isinstance(dtype, FloatType | DoubleType)
            pair = F.struct(x.alias(_V), _zero_flag(x).alias(_Z))
            compared = F.when(x.isNotNull(), pair) if floating else x  # (nulls skipped)
            compared_type = df.select(compared).schema.fields[0].dataType
            calls.append(_call(extreme, _VALUE, compared_type, compared))
            value = col(_VALUE).getField(_V) if floating else col(_VALUE)
        values = [value if f.name == field else firsts[f.name] for f in fields]
    schema = StructType([StructField(f.name, f.dataType, True) for f in fields])
    outputs = tuple(v.alias(f.name) for v, f in zip(values, fields, strict=True))
    return CompiledAggregates(tuple(calls), schema, job, None, None, outputs)


def describe(job: Job, fn: FieldAggregation) -> str:
    """How the native plans compute the built-in ``fn``, in words (a plan's reason)."""
    order = ("arrival order, " if job.source.arrival_columns else "") + "event time, content hash"
    field, kind = fn.field, fn.aggregation
    if kind.picks_element:
        return (
            f".{kind.value}({field!r}, first={fn.first}) as {kind.value}(struct(row), "
            f"struct({field!r} is null, {field!r}, replay order ({order}), reversed for the "
            f"{'first' if fn.first else 'last'} of equal rows as needed)), then the row's columns"
        )
    value = (
        f"exact sum({field!r}) in bigint / decimal sums, checked against its type"
        if kind is AggregationType.SUM
        else f"{kind.value}({field!r})"
    )
    first = (
        f"min_by(struct(row), struct({order}))"
        if job.source.arrival_columns
        else f"first by {order}"
    )
    return (
        f".{kind.value}({field!r}) as aggregates: the window's first row in replay order "
        f"({first}) with {field!r} replaced by {value}"
    )


def _call(kind: AggKind, name: str, dtype: DataType, *args: Column) -> AggregateCall:
    """The aggregate call ``kind(*args)`` named ``name``, of type ``dtype``."""
    functions: dict[AggKind, Callable[..., Column]] = {
        AggKind.FIRST: F.first,
        AggKind.MIN_BY: F.min_by,
        AggKind.MAX_BY: F.max_by,
        AggKind.SUM: F.sum,
        AggKind.MIN: F.min,
        AggKind.MAX: F.max,
    }
    expression = functions[kind](*args)
    return AggregateCall(
        expression.alias(name),
        name,
        dtype,
        kind.value,
        tuple(args),
        (None,) * len(args),
        kind=kind,
        expression=expression,
    )


def _first_row(
    job: Job,
    others: list[StructField],
    row: Column,
    row_type: DataType,
    replay: list[Column],
) -> tuple[list[AggregateCall], dict[str, Column]]:
    """The window's first row in replay order (its fields ``others``, by name): ``.agg``'s
    ``first`` without an arrival order (by event time, then the content hash), one call
    per field of a fixed-width type (which Spark aggregates by hash,
    :func:`~windowing.spark.native.parts.grouped_aggregates`), else of the row as a struct;
    by the replay order with one (arrival order first, where ``first`` takes event time
    first)."""
    if job.source.arrival_columns:
        pick = _call(AggKind.MIN_BY, _ROW, row_type, row, _struct(replay))
        return [pick], {f.name: col(_ROW).getField(f.name) for f in others}
    if all(isinstance(f.dataType, FIXED_WIDTH) for f in others):
        names = [f"{_FIRST}{i}" for i in range(len(others))]
        calls = [
            _call(AggKind.FIRST, n, f.dataType, col(f.name))
            for n, f in zip(names, others, strict=True)
        ]
        return calls, {f.name: col(n) for n, f in zip(names, others, strict=True)}
    first = _call(AggKind.FIRST, _ROW, row_type, row)
    return [first], {f.name: col(_ROW).getField(f.name) for f in others}


def _replay_parts(job: Job) -> list[Column]:
    """The replay order inside a key as ``bigint`` columns of the native plans' prepared
    rows: the arrival order when given, event time, the content hash (the batch replay's
    :func:`~windowing.spark.columns.inputs.replay_order`)."""
    arrival = len(job.source.arrival_columns)
    return [*(arrival_fields(arrival) if arrival else []), F.col(TS), F.col(TB)]


def _struct(parts: Sequence[Column], prefix: str = "o") -> Column:
    return F.struct(*[p.alias(f"{prefix}{i}") for i, p in enumerate(parts)])


def _zero_flag(x: Column) -> Column:
    """0 for ``-0.0``, else 1: after the value, it orders ``-0.0`` below ``0.0`` (Spark
    compares them equal; its cast to string keeps the sign, its arithmetic does not)."""
    negative_zero = (x == F.lit(0)) & x.cast("string").startswith("-")
    return F.when(negative_zero, F.lit(0)).otherwise(F.lit(1))


def _pick_order(
    x: Column, dtype: DataType, replay: list[Column], *, smallest: bool, fn: FieldAggregation
) -> Column:
    """The ordering key of ``min_by`` (``smallest``) / ``max_by``: rows with a value before
    (min) or above (max) the null ones, then the value (floats with their ``-0.0`` flag),
    then the replay order, reversed where the pick should take the last of equal rows: the
    last on a tie with ``first=False``, and always the first of a window of nulls."""
    floating = isinstance(dtype, FloatType | DoubleType)
    value = [x, _zero_flag(x)] if floating else [x]
    forward = _struct(replay, "r")
    backward = _struct([F.bitwise_not(p) for p in replay], "r")
    # the earliest wins with min over the order, the latest with max (and reversed)
    earliest, latest = (forward, backward) if smallest else (backward, forward)
    tie = earliest if fn.first else F.when(x.isNull(), earliest).otherwise(latest)
    present = x.isNull() if smallest else x.isNotNull()
    return _struct([present, *value, tie], "k")


def _sum_calls(x: Column, dtype: DataType) -> list[AggregateCall]:
    """The exact sum of the field as ``bigint`` (or decimal) sums: a narrow integer's as
    ``bigint`` (exact below 2**32 rows a window), a ``bigint``'s high and low 32 bits apart
    (exact below 2**31 rows a window), a decimal's at ``p + 10`` digits."""
    if isinstance(dtype, LongType):
        high = F.shiftright(x, 32)
        low = x.bitwiseAND(F.lit(0xFFFFFFFF))
        return [
            _call(AggKind.SUM, _VALUE, LongType(), high),
            _call(AggKind.SUM, _LOW, LongType(), low),
        ]
    if isinstance(dtype, DecimalType):
        wide = DecimalType(min(dtype.precision + 10, 38), dtype.scale)
        return [_call(AggKind.SUM, _VALUE, wide, x)]
    return [_call(AggKind.SUM, _VALUE, LongType(), x.cast("long"))]


def _sum_value(dtype: DataType, field: str) -> Column:
    """The sum in the field's type, read from the sum calls' columns; a sum beyond the type
    fails the query (``raise_error``), as the window operator's result does. A ``bigint``
    sum in ``bigint`` arithmetic (decimals only for the error's text): the low sum's carry
    added to the high sum, which must then fit 32 bits."""
    total = col(_VALUE)
    if isinstance(dtype, LongType):
        low = col(_LOW)
        high = total + F.shiftright(low, 32)  # (|high| <= 2**62, the carry < 2**31)
        fits = high.between(F.lit(-(2**31)), F.lit(2**31 - 1))
        value = F.shiftleft(high, 32).bitwiseOR(low.bitwiseAND(F.lit(0xFFFFFFFF)))
        wide = DecimalType(38, 0)
        exact = total.cast(wide) * F.lit(2**32).cast(wide) + low.cast(wide)
        return F.when(total.isNull() | fits, value).otherwise(
            F.raise_error(_does_not_fit(field, exact, dtype))
        )
    if isinstance(dtype, DecimalType):
        limit = 10 ** (dtype.precision - dtype.scale)
        fits = F.abs(total) < F.lit(limit).cast(DecimalType(38, 0))
    else:
        low_bound, high_bound = _BOUNDS[type(dtype)]
        fits = total.between(F.lit(low_bound), F.lit(high_bound))
    message = _does_not_fit(field, total, dtype)
    return F.when(total.isNull() | fits, total.cast(dtype)).otherwise(F.raise_error(message))


def _does_not_fit(field: str, total: Column, dtype: DataType) -> Column:
    """The error's text: a window's sum of ``field`` beyond its type."""
    return F.concat(
        F.lit(f"sum: the sum of {field!r} in a window, "),
        total.cast("string"),
        F.lit(f", does not fit its type {dtype.simpleString()}"),
    )
