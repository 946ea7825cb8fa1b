"""Late firings of the native plan in arrival order, without sorting every row.

With allowed lateness a window fires once with the rows added before the watermark passed
its end (the on-time rows: a prefix of the replay order), and again at each row added after
that (the late rows), each time over everything so far. Each aggregate column is written as
a *state* that Spark aggregates per group and that merges with the states of other groups::

    count, count_if   state: the count                     merge: sum
    sum               state: the sum (decimals at 38 digits) merge: sum   result: the type
    avg               state: (sum, count)                   merge: sums  result: sum / count
    min, max          state: min, max                       merge: min, max
    first, last, min_by, max_by: state: (value, ordering key) of the pick   merge: the pick
    bool_and, bool_or state: and, or                        merge: and, or

The rows of each window are grouped by window and *late key* (null for the on-time rows,
the row's replay-order key for a late row): one group holds the on-time rows, each late row
is a group of its own. A running merge of these few groups per window, in replay order (a
window function), gives the on-time firing at the first group and a late firing at each
later one. Spark sorts only the groups, never the rows, and the results equal Spark's own
aggregates over the same rows; a decimal ``avg`` is rounded once, half up (as the window
operator does).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pyspark.sql import Column, WindowSpec
from pyspark.sql import functions as F  # noqa: N812 - the PySpark convention
from pyspark.sql.types import DataType, DecimalType, DoubleType

from windowing.functions.columns import AggKind
from windowing.spark.columns.aggregates import AggregateCall
from windowing.spark.columns.sql import cast_as

__all__ = ["RunningAggregate", "running_aggregate"]

_DEC = 38  # the widest decimal: sums keep every digit until the result's type is applied


@dataclass(frozen=True)
class RunningAggregate:
    """One aggregate column as a state that merges across groups (module docstring).

    Attributes
    ----------
    state
        The state of a group's rows (a Spark aggregate).
    merge
        ``(state column, window) -> running state``: the merge of the states so far, as a
        window function over ``window``.
    result
        ``state -> value`` in the column's type.
    """

    state: Column
    merge: Callable[[Column, WindowSpec], Column]
    result: Callable[[Column], Column]


def _decimal_avg(total: Column, n: Column, dtype: DecimalType) -> Column:
    """``total / n`` rounded once, half up, to ``dtype``: the quotient of the integers
    ``total * 10**scale`` and ``n``, plus one unit in the last place when twice the
    remainder reaches ``n`` (away from zero); the digits are placed at the scale as text
    (Spark's decimal division would round to at most 6 places for wide types)."""
    shift = dtype.scale
    integer = DecimalType(_DEC, 0)
    whole = cast_as(total * F.expr(f"{10**shift}BD"), integer)
    count = cast_as(F.greatest(n, F.lit(1)), DecimalType(20, 0))
    rest = whole % count
    quotient = cast_as((whole - rest) / count, integer)
    up = F.when(F.abs(rest) * 2 >= count, F.signum(whole).cast("int")).otherwise(F.lit(0))
    unscaled = cast_as(quotient + up, integer)
    if shift == 0:
        value = cast_as(unscaled, dtype)
    else:
        # at least one digit before the point (leading zeros are fine for the cast)
        digits = F.concat(F.lit("0" * shift), F.abs(unscaled).cast("string"))
        cut = F.length(digits) - F.lit(shift)
        text = F.concat(
            F.when(unscaled < 0, F.lit("-")).otherwise(F.lit("")),
            digits.substr(F.lit(1), cut),
            F.lit("."),
            digits.substr(cut + 1, F.lit(shift)),
        )
        value = cast_as(text, dtype)
    return F.when(n == 0, cast_as(F.lit(None), dtype)).otherwise(value)


def running_aggregate(
    call: AggregateCall, order: Sequence[Column], arg_types: Sequence[DataType]
) -> RunningAggregate:
    """``call`` (one of the kinds the window operator knows, no DISTINCT) as a
    :class:`RunningAggregate`; ``order`` are the columns of the picks' order (event time,
    arrival order, content hash), ``arg_types`` the types of the call's arguments."""
    kind, dtype = call.kind, call.dtype
    args = [a for a in call.args if a is not None]

    if kind in (AggKind.COUNT, AggKind.COUNT_IF):
        if kind is AggKind.COUNT_IF:
            counted = F.coalesce(args[0], F.lit(False))
        else:
            counted = F.lit(True)
            for a in args:
                counted = counted & a.isNotNull()
        return RunningAggregate(
            state=F.count(F.when(counted, F.lit(1))),
            merge=lambda s, w: F.sum(s).over(w),
            result=lambda s: cast_as(s, dtype),
        )
    if kind is AggKind.SUM:
        wide = DecimalType(_DEC, dtype.scale) if isinstance(dtype, DecimalType) else dtype
        return RunningAggregate(
            state=cast_as(F.sum(cast_as(args[0], wide)), wide),
            merge=lambda s, w: cast_as(F.sum(s).over(w), wide),
            result=lambda s: cast_as(s, dtype),
        )
    if kind is AggKind.AVG:
        arg_type = arg_types[0]
        wide = (
            DecimalType(_DEC, arg_type.scale) if isinstance(arg_type, DecimalType) else DoubleType()
        )
        x = cast_as(args[0], wide)

        def merge(s: Column, w: WindowSpec) -> Column:
            return F.struct(
                cast_as(F.sum(s.getField("s")).over(w), wide).alias("s"),
                F.sum(s.getField("n")).over(w).cast("long").alias("n"),
            )

        def result(s: Column) -> Column:
            total, n = s.getField("s"), s.getField("n")
            if isinstance(dtype, DecimalType):
                return _decimal_avg(total, n, dtype)
            return F.when(n == 0, cast_as(F.lit(None), dtype)).otherwise(total / n)

        return RunningAggregate(
            state=F.struct(cast_as(F.sum(x), wide).alias("s"), F.count(x).alias("n")),
            merge=merge,
            result=result,
        )
    if kind in (AggKind.MIN, AggKind.MAX):
        aggregate = F.min if kind is AggKind.MIN else F.max
        return RunningAggregate(
            state=aggregate(cast_as(args[0], dtype)),
            merge=lambda s, w: aggregate(s).over(w),
            result=lambda s: s,
        )
    if kind in (AggKind.BOOL_AND, AggKind.BOOL_OR):
        both = F.bool_and if kind is AggKind.BOOL_AND else F.bool_or
        return RunningAggregate(
            state=both(args[0]),
            merge=lambda s, w: both(s).over(w),
            result=lambda s: s,
        )
    # first / last / min_by / max_by: the pick and its key, as the native plan picks them
    x = args[0]
    assert kind is not None and kind.ordered, kind
    if kind in (AggKind.FIRST, AggKind.LAST):
        key = F.struct(*order)
        if len(call.literals) > 1 and bool(call.literals[1]):  # ignorenulls
            key = F.when(x.isNotNull(), key)
    else:
        o = args[1]
        parts = order if kind is AggKind.MIN_BY else [F.bitwise_not(c) for c in order]
        key = F.when(o.isNotNull(), F.struct(o, *parts))
    pick = F.min_by if kind in (AggKind.FIRST, AggKind.MIN_BY) else F.max_by
    return RunningAggregate(
        state=pick(F.struct(x.alias("v"), key.alias("k")), key),
        merge=lambda s, w: pick(s, s.getField("k")).over(w),
        result=lambda s: s.getField("v"),
    )
