"""The pieces every native Spark plan (:mod:`windowing.spark.native`,
:mod:`windowing.spark.native_sliding`) shares: the user's aggregate columns with the replay
order's picks, the input counters, and small Spark helpers."""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F  # noqa: N812 - the PySpark convention

from windowing.functions.columns import AggKind
from windowing.spark.aggregates import AggregateCall
from windowing.spark.inputs import ARR, TB, TS
from windowing.spark.output import OutputLayout, col

__all__ = [
    "input_counters",
    "keys_counter",
    "long_literal",
    "native_column",
    "union_all",
    "windowable",
]


def windowable(calls: Sequence[AggregateCall]) -> bool:
    """Whether every aggregate runs as a Spark window function (running aggregates): one
    function the window operator knows, without DISTINCT."""
    return all(call.kind is not None and not call.distinct for call in calls)


def long_literal(value: int | None) -> Column:
    """``value`` as a ``bigint`` literal (``None``: a null one)."""
    return F.lit(value).cast("long")


def union_all(frames: list[DataFrame]) -> DataFrame:
    """The frames' rows, by position (``union``)."""
    out = frames[0]
    for f in frames[1:]:
        out = out.union(f)
    return out


def keys_counter(layout: OutputLayout) -> Column:
    """Distinct keys over all input rows (1 for ``window_all`` with any row)."""
    if layout.keys:
        return F.count_distinct(F.struct(*[col(k) for k in layout.keys]))
    return F.when(F.count(F.lit(1)) > 0, F.lit(1)).otherwise(F.lit(0))


def input_counters(layout: OutputLayout) -> list[Column]:
    """Counters over all input rows in event-time order: rows, elements (with an event
    time), rows without one, distinct keys."""
    n = F.count(F.lit(1))
    return [
        n.alias("num_input_rows"),
        F.count(F.col(TS)).alias("num_elements"),
        (n - F.count(F.col(TS))).alias("num_null_event_time"),
        keys_counter(layout).alias("num_keys"),
    ]


def native_column(call: AggregateCall, arrival: bool, *, expression: bool = False) -> Column:
    """The user's aggregate column, with the picks (``first`` / ``last`` / ``min_by`` /
    ``max_by``) made deterministic by the replay order (event time[, arrival order], content
    hash). ``expression``: without the user's alias (to be used with ``over``)."""
    kind = call.kind
    if kind is None or not kind.ordered:
        if expression and call.expression is not None:
            return call.expression
        return call.column
    x = call.args[0]
    assert x is not None
    parts = [F.col(TS), *([F.col(ARR)] if arrival else []), F.col(TB)]
    order = F.struct(*parts)
    if kind in (AggKind.FIRST, AggKind.LAST):
        ignore_nulls = len(call.literals) > 1 and bool(call.literals[1])
        key = F.when(x.isNotNull(), order) if ignore_nulls else order
        return F.min_by(x, key) if kind is AggKind.FIRST else F.max_by(x, key)
    o = call.args[1]
    assert o is not None
    if kind is AggKind.MIN_BY:
        return F.min_by(x, F.when(o.isNotNull(), F.struct(o, *parts)))
    # the largest ordering value; on a tie the row first in replay order
    later = F.struct(o, *[F.bitwise_not(c) for c in parts])
    return F.max_by(x, F.when(o.isNotNull(), later))
