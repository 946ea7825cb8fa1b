"""Late firings of the native plan in arrival order, without sorting every row.

With allowed lateness a window fires once with the rows added before the watermark passed
its end (the on-time rows: a prefix of the replay order), and again at each row added after
that (the late rows), each time over everything so far. Spark computes the on-time part
with its own aggregation (partial aggregates before the shuffle, as for any ``groupBy``);
the late rows of the window travel in the same aggregation as a list (few rows: those that
arrived between the two arrival cutoffs of their window). Each aggregate column is written
as a *state* (the on-time aggregate) that takes one row at a time::

    count   state: count                    row: 1 if counted          result: state
    sum     state: sum (decimals at 38 digits)                         result: cast to the type
    avg     state: (sum, count)                                        result: sum / count
    min/max state: the value                row: the value (least / greatest skip nulls)
    first, last, min_by, max_by: state: (value, ordering key) of the pick; the row wins when
            its key is smaller (larger); keys are those of the window operator's replay order
    count_if, bool_and, bool_or: like count and the boolean and / or

so each late firing is the state merged with the window's late rows up to it, in replay
order (a higher-order ``aggregate`` over the sorted list, evaluated only for windows with
late rows). The results equal Spark's own aggregates over the same rows; a decimal ``avg``
is rounded once, half up (as the window operator does).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pyspark.sql import Column
from pyspark.sql import functions as F  # noqa: N812 - the PySpark convention
from pyspark.sql.types import (
    ArrayType,
    DataType,
    DecimalType,
    DoubleType,
    StructField,
    StructType,
)

from windowing.functions.columns import AggKind
from windowing.spark.aggregates import AggregateCall

__all__ = ["RunningAggregate", "firings", "running_aggregate"]

_DEC = 38  # the widest decimal: sums keep every digit until the result's type is applied


@dataclass(frozen=True)
class RunningAggregate:
    """One aggregate column as a state that takes one row at a time (module docstring).

    Attributes
    ----------
    state
        The aggregate over the rows where ``on_time`` holds (a Spark aggregate).
    item
        One row's part (a row expression).
    merge
        ``(state, item) -> state``.
    result
        ``state -> value`` of the column's type.
    dtype
        The column's type.
    """

    state: Column
    item: Column
    merge: Callable[[Column, Column], Column]
    result: Callable[[Column], Column]
    dtype: DataType


def _add(a: Column, b: Column, dtype: DataType) -> Column:
    """``a + b`` skipping nulls (null when both are), in ``dtype``."""
    return F.when(b.isNull(), a).when(a.isNull(), b).otherwise((a + b).cast(dtype))


def _pick(smaller: bool) -> Callable[[Column, Column], Column]:
    def merge(state: Column, item: Column) -> Column:
        key, current = item.getField("k"), state.getField("k")
        wins = key < current if smaller else key > current
        return (
            F.when(key.isNull(), state)
            .when(state.isNull() | current.isNull() | wins, item)
            .otherwise(state)
        )

    return merge


def _decimal_avg(total: Column, n: Column, dtype: DecimalType) -> Column:
    """``total / n`` rounded once, half up, to ``dtype``: the quotient of the integers
    ``total * 10**scale`` and ``n``, plus one unit in the last place when twice the
    remainder reaches ``n`` (away from zero); the digits are placed at the scale as text
    (Spark's decimal division would round to at most 6 places for wide types)."""
    shift = dtype.scale
    integer = DecimalType(_DEC, 0)
    whole = (total * F.expr(f"{10**shift}BD")).cast(integer)
    count = F.greatest(n, F.lit(1)).cast(DecimalType(20, 0))
    rest = whole % count
    quotient = ((whole - rest) / count).cast(integer)
    up = F.when(F.abs(rest) * 2 >= count, F.signum(whole).cast("int")).otherwise(F.lit(0))
    unscaled = (quotient + up).cast(integer)
    if shift == 0:
        value = unscaled.cast(dtype)
    else:
        digits = F.lpad(F.abs(unscaled).cast("string"), shift + 1, "0")
        cut = F.length(digits) - F.lit(shift)
        text = F.concat(
            F.when(unscaled < 0, F.lit("-")).otherwise(F.lit("")),
            digits.substr(F.lit(1), cut),
            F.lit("."),
            digits.substr(cut + 1, F.lit(shift)),
        )
        value = text.cast(dtype)
    return F.when(n == 0, F.lit(None).cast(dtype)).otherwise(value)


def running_aggregate(
    call: AggregateCall, on_time: Column, order: Sequence[Column], arg_types: Sequence[DataType]
) -> RunningAggregate:
    """``call`` (one of the kinds the window operator knows, no DISTINCT) as a
    :class:`RunningAggregate` over the rows where ``on_time`` holds; ``order`` are the replay
    order's columns (event time, arrival order, content hash), ``arg_types`` the types of
    the call's arguments."""
    kind, dtype = call.kind, call.dtype
    args = [a for a in call.args if a is not None]

    def on(value: Column) -> Column:
        return F.when(on_time, value)

    if kind in (AggKind.COUNT, AggKind.COUNT_IF):
        if kind is AggKind.COUNT_IF:
            counted = F.coalesce(args[0], F.lit(False))
        else:
            counted = F.lit(True)
            for a in args:
                counted = counted & a.isNotNull()
        return RunningAggregate(
            state=F.count(on(F.when(counted, F.lit(1)))),
            item=F.when(counted, F.lit(1)).otherwise(F.lit(0)).cast("long"),
            merge=lambda s, i: (s + i).cast("long"),
            result=lambda s: s.cast(dtype),
            dtype=dtype,
        )
    if kind is AggKind.SUM:
        wide = DecimalType(_DEC, dtype.scale) if isinstance(dtype, DecimalType) else dtype
        x = args[0].cast(wide)
        return RunningAggregate(
            state=F.sum(on(x)).cast(wide),
            item=x,
            merge=lambda s, i: _add(s, i, wide),
            result=lambda s: s.cast(dtype),
            dtype=dtype,
        )
    if kind is AggKind.AVG:
        arg_type = arg_types[0]
        wide = (
            DecimalType(_DEC, arg_type.scale) if isinstance(arg_type, DecimalType) else DoubleType()
        )
        x = args[0].cast(wide)
        counted = F.when(x.isNotNull(), F.lit(1)).otherwise(F.lit(0)).cast("long")

        def merge(s: Column, i: Column) -> Column:
            return F.struct(
                _add(s.getField("s"), i.getField("s"), wide).alias("s"),
                (s.getField("n") + i.getField("n")).cast("long").alias("n"),
            )

        def result(s: Column) -> Column:
            total, n = s.getField("s"), s.getField("n")
            if isinstance(dtype, DecimalType):
                return _decimal_avg(total, n, dtype)
            return F.when(n == 0, F.lit(None).cast(dtype)).otherwise(total / n)

        return RunningAggregate(
            state=F.struct(F.sum(on(x)).cast(wide).alias("s"), F.count(on(x)).alias("n")),
            item=F.struct(x.alias("s"), counted.alias("n")),
            merge=merge,
            result=result,
            dtype=dtype,
        )
    if kind in (AggKind.MIN, AggKind.MAX):
        x = args[0].cast(dtype)
        aggregate, best = (F.min, F.least) if kind is AggKind.MIN else (F.max, F.greatest)
        return RunningAggregate(
            state=aggregate(on(x)),
            item=x,
            merge=lambda s, i: best(s, i),
            result=lambda s: s,
            dtype=dtype,
        )
    if kind in (AggKind.BOOL_AND, AggKind.BOOL_OR):
        b = args[0]
        conjunction = kind is AggKind.BOOL_AND

        def both(s: Column, i: Column) -> Column:
            return s & i if conjunction else s | i

        return RunningAggregate(
            state=(F.bool_and if conjunction else F.bool_or)(on(b)),
            item=b,
            merge=lambda s, i: F.when(i.isNull(), s).when(s.isNull(), i).otherwise(both(s, i)),
            result=lambda s: s,
            dtype=dtype,
        )
    # first / last / min_by / max_by: the pick and its key
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
    smaller = kind in (AggKind.FIRST, AggKind.MIN_BY)
    item = F.struct(x.alias("v"), key.alias("k"))
    pick = F.min_by if smaller else F.max_by
    return RunningAggregate(
        state=pick(on(item), on(key)),
        item=item,
        merge=_pick(smaller),
        result=lambda s: s.getField("v"),
        dtype=dtype,
    )


def firings(
    runs: Sequence[RunningAggregate],
    states: Sequence[Column],
    on_time_rows: Column,
    late_rows: Column,
) -> Column:
    """The firings of one window as an array of structs (fields ``v0``, ``v1``, ... in the
    columns' types): the on-time firing when ``on_time_rows > 0``, then one per late row.
    ``states`` are the aggregated states, ``late_rows`` the window's late rows as structs
    ``(o, i0, i1, ...)`` (``o`` the replay order key, ``i<n>`` the items)."""
    names = [f"v{i}" for i in range(len(runs))]
    firing = StructType([StructField(n, r.dtype, True) for n, r in zip(names, runs, strict=True)])
    no_firings = F.array().cast(ArrayType(firing))
    on_time = F.struct(*[r.result(s).alias(n) for r, s, n in zip(runs, states, names, strict=True)])
    first = F.when(on_time_rows > 0, F.array(on_time)).otherwise(no_firings)
    ordered = F.array_sort(
        late_rows,
        lambda a, b: (
            F.when(a.getField("o") < b.getField("o"), -1)
            .when(a.getField("o") > b.getField("o"), 1)
            .otherwise(0)
        ),
    )
    state_fields = [f"s{i}" for i in range(len(runs))]
    start = F.struct(
        *[s.alias(n) for s, n in zip(states, state_fields, strict=True)],
        no_firings.alias("out"),
    )

    def step(acc: Column, row: Column) -> Column:
        merged = [
            r.merge(acc.getField(n), row.getField(f"i{j}"))
            for j, (r, n) in enumerate(zip(runs, state_fields, strict=True))
        ]
        fired = F.struct(
            *[r.result(m).alias(n) for r, m, n in zip(runs, merged, names, strict=True)]
        )
        return F.struct(
            *[m.alias(n) for m, n in zip(merged, state_fields, strict=True)],
            F.concat(acc.getField("out"), F.array(fired)).alias("out"),
        )

    late = F.aggregate(ordered, start, step, lambda acc: acc.getField("out"))
    return F.when(F.size(late_rows) == 0, first).otherwise(F.concat(first, late))
