"""The runtime's own input columns, added to the user's DataFrame before the operator reads
it: event time in ms, the content hash (the replay order's last tie-breaker), arrival order,
processing time, and the arrival-order watermark. One definition for the batch replay, the
streaming query and the native plans."""

from __future__ import annotations

import functools
import operator
from collections.abc import Sequence
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F  # noqa: N812 - the PySpark convention
from pyspark.sql.types import DoubleType, FloatType

from windowing.spark.columns.output import col
from windowing.spark.columns.schema import INTERNAL_PREFIX, column_time_kind, contains_map
from windowing.spark.columns.sql import quoted
from windowing.spark.columns.units import millis_sql
from windowing.time import TimeUnit

__all__ = [
    "ARR",
    "PT",
    "TB",
    "TS",
    "WMAX",
    "arrival_count",
    "arrival_fields",
    "arrival_key",
    "arrival_micros",
    "arrival_names",
    "content_hash",
    "flat_arrival",
    "internal_columns",
    "key_columns",
    "replay_order",
    "time_millis",
    "time_millis_sql",
]

# Internal input columns (the prefix is reserved, see schema.INTERNAL_PREFIX).
TS = "__pw_ts"
ARR = "__pw_arr"
PT = "__pw_pt"
TB = "__pw_tb"
WMAX = "__pw_wmax"


def arrival_names(parts: int) -> list[str]:
    """The flat arrival-order columns of ``parts`` arrival-order columns (``ARR``, then
    ``__pw_arr1``, ...): what the Python side reads (:func:`flat_arrival`)."""
    return [ARR, *[f"{ARR}{i}" for i in range(1, parts)]]


def arrival_count(internal: Sequence[str]) -> int:
    """How many flat arrival-order columns the internal columns ``internal`` hold."""
    n = 0
    while (ARR if n == 0 else f"{ARR}{n}") in internal:
        n += 1
    return n


def replay_order(*, arrival: int, processing_time: bool) -> list[tuple[str, str, str]]:
    """Pyarrow sort keys of the replay order inside a key: the ``arrival`` flat
    arrival-order columns (:func:`arrival_names`; 0: none), else processing time, then event
    time, then the content hash (never dependent on partitioning); nulls last."""
    first = arrival_names(arrival) if arrival else [PT] if processing_time else []
    return [(n, "ascending", "at_end") for n in (*first, TS, TB)]


def time_millis(
    df: DataFrame,
    name: str,
    parameter: str = "time column",
    unit: TimeUnit = TimeUnit.MILLISECONDS,
) -> Column:
    """The time column ``name`` in epoch milliseconds: a timestamp's, or the integer of
    ``unit`` read onto the millisecond clock in integer arithmetic (:meth:`TimeUnit.to_millis`:
    seconds times 1,000 saturating at the ends of ``long``; microseconds and nanoseconds
    floored, so a sub-millisecond part is dropped toward the past, as Flink's millisecond
    clock would)."""
    return F.expr(time_millis_sql(df, name, parameter, unit))


def time_millis_sql(
    df: DataFrame,
    name: str,
    parameter: str = "time column",
    unit: TimeUnit = TimeUnit.MILLISECONDS,
) -> str:
    """:func:`time_millis` as SQL text."""
    kind = column_time_kind(df, name, parameter)
    if kind == "timestamp":
        return f"unix_millis({quoted(name)})"
    return millis_sql(quoted(name), unit)


def arrival_micros(df: DataFrame, name: str) -> Column:
    """The arrival-order column as a ``bigint`` (a timestamp's microseconds)."""
    kind = column_time_kind(df, name, "arrival_order")
    return F.unix_micros(col(name)) if kind == "timestamp" else col(name).cast("long")


def arrival_key(df: DataFrame, names: Sequence[str]) -> Column:
    """The arrival order of the columns ``names`` as one column Spark compares, sorts and
    aggregates (``min``) in that order: one column's ``bigint`` (:func:`arrival_micros`),
    or for several the struct of theirs (fields ``p0``, ``p1``, ...: Spark orders structs
    field by field), null when any of them is null."""
    parts = [arrival_micros(df, n) for n in names]
    if len(parts) == 1:
        return parts[0]
    present = functools.reduce(operator.and_, [p.isNotNull() for p in parts])
    return F.when(present, F.struct(*[p.alias(f"p{i}") for i, p in enumerate(parts)]))


def arrival_fields(parts: int) -> list[Column]:
    """The arrival key (``ARR``, :func:`arrival_key`) of ``parts`` columns as ``bigint``
    columns, most significant first (all null when it is null): for orders that list their
    columns, or negate them (``bitwise_not``)."""
    if parts == 1:
        return [F.col(ARR)]
    return [F.col(ARR).getField(f"p{i}") for i in range(parts)]


def flat_arrival(df: DataFrame, parts: int) -> DataFrame:
    """``df`` with its arrival key of ``parts`` columns (a struct when several) replaced by
    the flat ``bigint`` columns :func:`arrival_names`, in its place: the Python side reads
    those (record batches and pandas frames of ``bigint`` columns)."""
    if parts <= 1:
        return df
    flat = [p.alias(n) for p, n in zip(arrival_fields(parts), arrival_names(parts), strict=True)]
    return df.select(*[x for c in df.columns for x in (flat if c == ARR else [col(c)])])


def content_hash(df: DataFrame) -> Column:
    """A row's content hash, the replay order's last tie-breaker: ``xxhash64`` of the input
    columns (maps left out; so are the runtime's own columns, so it is the same before and
    after they are added), and of the sign of each top-level float column: Spark hashes
    ``-0.0`` as ``0.0``, so rows differing only there would tie, in input order
    (``docs/failures.md``)."""
    fields = [
        f
        for f in df.schema.fields
        if not contains_map(f.dataType) and not f.name.startswith(INTERNAL_PREFIX)
    ]
    hashable = [col(f.name) for f in fields]
    # A zero as text ("-0.0" / "0.0"), null otherwise: Spark's arithmetic normalizes -0.0
    # (atan2, signum), its cast to string does not.
    hashable += [
        F.when(col(f.name) == 0, col(f.name).cast("string"))
        for f in fields
        if isinstance(f.dataType, FloatType | DoubleType)
    ]
    return F.xxhash64(*hashable) if hashable else F.lit(0).cast("long")


def internal_columns(df: DataFrame, source: Any, *, flat: bool = False) -> list[Column]:
    """The input columns, then event time in ms (``__pw_ts``), the content hash
    (``__pw_tb``), and when given the arrival order (``__pw_arr``, :func:`arrival_key`; with
    ``flat``, one ``bigint`` column per arrival-order column, :func:`arrival_names`) and
    processing time in ms (``__pw_pt``): the one place where the input's time columns, in
    their units, become the operator's milliseconds."""
    columns = [
        *[col(c) for c in df.columns],
        time_millis(df, source.event_time, "event_time", source.event_unit).alias(TS),
        content_hash(df).alias(TB),
    ]
    arrival = source.arrival_columns
    if arrival and flat and len(arrival) > 1:
        key = arrival_key(df, arrival)
        present = key.isNotNull()
        columns += [
            F.when(present, arrival_micros(df, a)).alias(n)
            for a, n in zip(arrival, arrival_names(len(arrival)), strict=True)
        ]
    elif arrival:
        columns.append(arrival_key(df, arrival).alias(ARR))
    if source.processing_time is not None:
        columns.append(
            time_millis(
                df, source.processing_time, "processing_time", source.processing_time_unit
            ).alias(PT)
        )
    return columns


def key_columns(df: DataFrame, columns: Sequence[Any]) -> tuple[DataFrame, tuple[str, ...]]:
    """The key columns ``columns`` (names, or ``Column`` expressions) as names of ``df``'s
    columns: an expression becomes a column of the input named as Spark names it (its alias,
    or e.g. ``lower(country)``), so results, late rows and dead letters carry it like any key
    column. ``ValueError`` naming the column for an unknown name, another type, a key given
    twice, or an expression named like an input column it is not."""
    names: list[str] = []
    for c in columns:
        if isinstance(c, str):
            if c not in df.columns:
                msg = f"key_by: unknown column {c!r}; the DataFrame has columns {df.columns}"
                raise ValueError(msg)
            names.append(c)
            continue
        if not isinstance(c, Column):
            msg = (
                f"key_by: keys must be column names (str) or Columns, got {type(c).__name__} {c!r}"
            )
            raise ValueError(msg)
        try:
            name = df.select(c).columns[0]
        except Exception as exc:
            msg = f"key_by: cannot evaluate {c} on the DataFrame: {exc}"
            raise ValueError(msg) from exc
        if name.startswith(INTERNAL_PREFIX):
            msg = (
                f"key_by: the key {c} is named {name!r}; the prefix {INTERNAL_PREFIX!r} is reserved"
            )
            raise ValueError(msg)
        if name in df.columns:
            if str(c) not in (f"Column<'{name}'>", f"Column<'`{name}`'>"):
                msg = (
                    f"key_by: the key {c} is named {name!r}, as a column of the DataFrame it is "
                    "not; give it another name with .alias(...)"
                )
                raise ValueError(msg)
        else:
            df = df.withColumn(name, c)
        names.append(name)
    if len(set(names)) != len(names):
        msg = f"key_by: a column is given twice in {tuple(names)!r}"
        raise ValueError(msg)
    return df, tuple(names)
