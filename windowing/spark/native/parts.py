"""The pieces every native Spark plan (:mod:`windowing.spark.native.windows`,
:mod:`windowing.spark.native.sliding`, :mod:`windowing.spark.native.hopping`,
:mod:`windowing.spark.native.hopping_arrival`) shares: a plan's parts, the user's aggregate
columns with the replay order's picks, the input counters, the firings of the window at the
start of time, and small Spark helpers."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F  # noqa: N812 - the PySpark convention
from pyspark.sql.types import (
    DecimalType,
    DoubleType,
    FloatType,
)

from windowing.assigners.session import EventTimeSessionWindows
from windowing.assigners.sliding_distinct import SlidingDistinctAssigner
from windowing.assigners.tumbling import TumblingEventTimeWindows
from windowing.functions.columns import AggKind
from windowing.records import Timing
from windowing.spark.columns.aggregates import (
    FIXED_WIDTH,
    AggregateCall,
    CompiledAggregates,
    ValuePick,
)
from windowing.spark.columns.inputs import TB, TS, arrival_fields
from windowing.spark.columns.output import OutputLayout, col
from windowing.time import MAX_TIMESTAMP, MIN_TIMESTAMP

__all__ = [
    "FRAMED_MAX_SIZE",
    "LATE",
    "ON_TIME",
    "ByEventTime",
    "NativeParts",
    "NativeRest",
    "aggregate_columns",
    "by_event_time",
    "firings_at_min",
    "first_window_end",
    "framed",
    "grouped_aggregates",
    "has_min_window",
    "input_counters",
    "keys_counter",
    "late_counter",
    "left_at_end",
    "long_literal",
    "max_timestamp_of",
    "mergeable",
    "native_column",
    "pick",
    "windowable",
]

#: The pane timings native plans write (``Timing`` names).
ON_TIME, LATE = Timing.ON_TIME.name, Timing.LATE.name
_PANE = "__pw_nmpane"  # the firings of the window at the start of time, in replay order
_VALUE = "__pw_bvalue"  # a built-in min_by / max_by's value, grouped by


@dataclass(frozen=True)
class NativeRest:
    """A native plan's pieces besides its results: the input counters (one row), the late
    branches (tagged-output columns; on a route without shared parts, any other branch of
    its tagged output), the firings and the windows left at the end (one row: ``n``,
    ``left``) where counting them from the results would compute those again (window
    functions sort every row: count plans), and with :attr:`NativeParts.shared` the parts
    of these a persisted result caches."""

    counters: DataFrame
    late: Sequence[DataFrame] = ()
    fired: DataFrame | None = None
    shared: tuple[DataFrame, ...] = ()


@dataclass(frozen=True)
class NativeParts:
    """A native plan's pieces: result rows (window columns and the aggregates by name) with
    their window start and end (ms, null where the assigner's bounds leave ``bigint``),
    which result rows are a window's first firing (one per window with contents: the
    windows, counted from the results in the same aggregate as them, unless
    :attr:`NativeRest.fired` counts them), the other pieces (:attr:`rest`), and the results'
    pane columns."""

    results: DataFrame
    window_start: Column
    end: Column
    first_firing: Column
    # built when the plan's other outputs are (a route with shared parts reads each output
    # from its own branches, so that a job read for its results never builds the others)
    rest: Callable[[], NativeRest]
    # with pane info: the results' pane index and timing (default: each window's one firing,
    # on time at the end of input or when the watermark passed its end; built when a plan
    # is, so that importing this module needs no Spark session)
    pane: tuple[Column, Column] = field(default_factory=lambda: (F.lit(0), F.lit(ON_TIME)))
    # what the results share with the other outputs (e.g. the windows' arrival cutoffs),
    # cached with the results when the result is persisted (none: the tagged output is)
    shared: tuple[DataFrame, ...] = ()
    # the aggregates' values over the result rows, by call name (default: its columns)
    values: tuple[Column, ...] | None = None


def max_timestamp_of(end: Column) -> Column:
    """A window's max timestamp from its ``end`` (null: past the end of time)."""
    return F.coalesce(end - F.lit(1), F.lit(MAX_TIMESTAMP))


def left_at_end(max_ts: Column, lateness: int, *, at_max: bool = False) -> Column:
    """Whether a window of max timestamp ``max_ts`` is left at the end of input: its cleanup
    time is past the end of time, so no cleanup timer clears it (``windowing.rules``). The
    window at ``MAX_TIMESTAMP`` is cleared at the end by the event-time trigger's timer
    there; ``at_max``: the trigger has no such timer (a count trigger), so it is left too."""
    left = max_ts >= F.lit(MAX_TIMESTAMP - lateness)
    return left if at_max else left & (max_ts != F.lit(MAX_TIMESTAMP))


def windowable(calls: Sequence[AggregateCall]) -> bool:
    """Whether every aggregate runs as a Spark window function (running aggregates): one
    function the window operator knows, without DISTINCT (a pandas UDF is none: Spark runs
    it in a ``groupBy`` alone)."""
    return all(call.kind not in (None, AggKind.PANDAS_UDF) and not call.distinct for call in calls)


#: The largest KIP-450 size range frames take: event times are shifted by ``2**62`` towards 0
#: per sign, so ``t - size`` and ``t + 1 + size`` stay in ``bigint``.
FRAMED_MAX_SIZE = 2**62 - 1


def framed(assigner: SlidingDistinctAssigner, calls: Sequence[AggregateCall]) -> bool:
    """Whether KIP-450 windows are aggregated over range frames (else joined to their rows)."""
    return assigner.size <= FRAMED_MAX_SIZE and windowable(calls)


def first_window_end(assigner: TumblingEventTimeWindows) -> int:
    """The end of a tumbling assigner's first window (the one holding ``MIN_TIMESTAMP``)."""
    size, offset = assigner.size, assigner.offset
    return MIN_TIMESTAMP - (MIN_TIMESTAMP - offset) % size + size


def has_min_window(assigner: object) -> bool:
    """Whether a window ends at ``MIN_TIMESTAMP + 1`` (max timestamp MIN, behind the first
    watermark): the first tumbling window for some offsets, a session of gap 1 at MIN."""
    if isinstance(assigner, TumblingEventTimeWindows):
        return first_window_end(assigner) == MIN_TIMESTAMP + 1
    return isinstance(assigner, EventTimeSessionWindows) and assigner.gap == 1


def long_literal(value: int | None) -> Column:
    """``value`` as a ``bigint`` literal (``None``: a null one)."""
    return F.lit(value).cast("long")


def keys_counter(layout: OutputLayout) -> Column:
    """Distinct keys over all input rows (1 for ``window_all`` with any row)."""
    if layout.keys:
        return F.count_distinct(F.struct(*[col(k) for k in layout.keys]))
    return F.when(F.count(F.lit(1)) > 0, F.lit(1)).otherwise(F.lit(0))


def late_counter(layout: OutputLayout) -> str:
    """The metric counting late rows: ``num_late_records_side_output`` with a late side
    output, else ``num_late_records_dropped``."""
    return "num_late_records_side_output" if layout.has_late else "num_late_records_dropped"


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


def aggregate_columns(
    compiled: CompiledAggregates, *, arrival: int, null_times: bool = False
) -> list[Column]:
    """The user's aggregates as Spark columns, by name (:func:`native_column`; ``arrival``:
    the number of arrival-order columns, 0 without an arrival order; ``null_times``: rows
    without event time are in windows)."""
    return [
        native_column(call, arrival, null_times=null_times).alias(call.name)
        for call in compiled.calls
    ]


def native_column(
    call: AggregateCall, arrival: int, *, expression: bool = False, null_times: bool = False
) -> Column:
    """The user's aggregate column, with the picks (``first`` / ``last`` / ``min_by`` /
    ``max_by``) made deterministic by the replay order (event time[, arrival order], content
    hash). ``expression``: without the user's alias (to be used with ``over``);
    ``null_times``: as :func:`pick`."""
    kind = call.kind
    if kind is None or not kind.ordered:
        if expression and call.expression is not None:
            return call.expression
        return call.column
    x, key, smallest = pick(call, arrival, null_times=null_times)
    return F.min_by(x, key) if smallest else F.max_by(x, key)


def pick(
    call: AggregateCall, arrival: int, *, null_times: bool = False
) -> tuple[Column, Column, bool]:
    """A pick (``first`` / ``last`` / ``min_by`` / ``max_by``) as the value, the key that
    chooses its row (null for rows it skips) and whether the smallest key wins: the replay
    order (event time[, the ``arrival`` arrival-order columns], content hash) decides
    ties. ``null_times``: rows without event time are in windows (assigners other than
    event-time ones) and come after the others, as in the window operator's order key
    (:func:`~windowing.spark.columns.aggregates.order_key`)."""
    kind = call.kind
    x = call.args[0]
    assert x is not None and kind is not None and kind.ordered
    ts = F.col(TS)
    nulls_last = [ts.isNull()] if null_times else []
    times = [ts, *(arrival_fields(arrival) if arrival else []), F.col(TB)]
    parts = [*nulls_last, *times]
    order = F.struct(*parts)
    if kind in (AggKind.FIRST, AggKind.LAST):
        ignore_nulls = len(call.literals) > 1 and bool(call.literals[1])
        key = F.when(x.isNotNull(), order) if ignore_nulls else order
        return x, key, kind is AggKind.FIRST
    o = call.args[1]
    assert o is not None
    if kind is AggKind.MIN_BY:
        return x, F.when(o.isNotNull(), F.struct(o, *parts)), True
    # the largest ordering value; on a tie the row first in replay order
    later = F.struct(o, *[~c for c in nulls_last], *[F.bitwise_not(c) for c in times])
    return x, F.when(o.isNotNull(), later), False


def grouped_aggregates(
    rows: DataFrame,
    keys: list[Column],
    window: Column,
    name: str,
    compiled: CompiledAggregates,
    extra: Sequence[Column] = (),
    *,
    by_keys: bool = False,
) -> DataFrame:
    """``rows`` in event-time order (no arrival order) grouped by key and window (``window``,
    named ``name``): the key columns, ``name``, the aggregates by name and the ``extra``
    aggregates of event time (``F.min(F.col(TS))`` ...).

    A pick by the replay order (``first`` / ``last``: event time, then the content hash) in
    one ``groupBy`` has a struct as its key, and Spark aggregates a struct by sorting every
    row. So when each aggregate is a pick of that kind or splits into aggregates of the rows
    of one event time and an aggregate of those (:func:`by_event_time`), with fixed-width
    values, the rows are shuffled once by key and window and aggregated twice by hash: per
    key, window and event time (picks by content hash), then per key and window (picks by
    event time, which the groups no longer share). Otherwise one ``groupBy``. ``by_keys``:
    ``rows`` are partitioned by key already (no shuffle needed)."""
    pick = compiled.calls[0].value_pick if len(compiled.calls) == 1 else None
    if pick is not None and not extra:
        return _picked_by_value(rows, keys, window, name, compiled.calls[0].name, pick)
    split = [by_event_time(call) for call in compiled.calls]
    picks = any(c.kind in (AggKind.FIRST, AggKind.LAST) for c in compiled.calls)
    parts = [s for s in split if s is not None]
    if not picks or len(parts) < len(split):
        columns = aggregate_columns(compiled, arrival=0)
        return rows.groupBy(*keys, window.alias(name)).agg(*columns, *extra)
    group = [*keys, F.col(name)]
    names = [[f"__pw_et{j}_{i}" for i in range(len(p.rows))] for j, p in enumerate(parts)]
    named = rows.withColumn(name, window)
    if not by_keys:
        named = named.repartition(*group)  # the one shuffle: both aggregates keep it
    per_time = named.groupBy(*group, F.col(TS)).agg(
        *[
            c.alias(n)
            for p, group_names in zip(parts, names, strict=True)
            for c, n in zip(p.rows, group_names, strict=True)
        ]
    )
    return per_time.groupBy(*group).agg(
        *[
            p.merge([F.col(n) for n in group_names]).alias(call.name)
            for p, group_names, call in zip(parts, names, compiled.calls, strict=True)
        ],
        *extra,
    )


def _picked_by_value(
    rows: DataFrame, keys: list[Column], window: Column, name: str, out: str, pick: ValuePick
) -> DataFrame:
    """A built-in ``min_by`` / ``max_by`` (:class:`ValuePick`) by hash: after one shuffle by
    key and window, the rows grouped per key, window, value and event time (the first or
    last by content hash), per key, window and value (by event time), then per key and
    window: the extreme value (each group has its own), or a window of nulls' one group.
    The picked row as the struct ``out``."""
    group = [*keys, F.col(name)]
    x, value = F.col(pick.field), F.col(_VALUE)
    ts, tb = F.col(TS), F.col(TB)
    # the first row of a group of equal values (of nulls, always), else the last
    first = x.isNull() | F.lit(pick.first)
    hashed = F.when(first, tb).otherwise(F.bitwise_not(tb))
    names = [f"__pw_bv{i}" for i in range(len(pick.fields))]
    per_time = (
        rows.withColumn(name, window)
        .repartition(*group)  # the one shuffle: the three aggregates keep its partitions
        .groupBy(*group, x.alias(_VALUE), ts)
        .agg(*[F.min_by(col(f), hashed).alias(n) for f, n in zip(pick.fields, names, strict=True)])
    )
    timed = F.when(value.isNull() | F.lit(pick.first), ts).otherwise(F.bitwise_not(ts))
    per_value = per_time.groupBy(*group, value).agg(
        *[F.min_by(F.col(n), timed).alias(n) for n in names]
    )
    extreme = F.min_by if pick.smallest else F.max_by  # (rows without a value skipped)
    nulls = F.when(value.isNull(), F.lit(0))
    fields = [
        F.when(F.bool_or(value.isNotNull()), extreme(F.col(n), value))
        .otherwise(F.min_by(F.col(n), nulls))
        .alias(f)
        for n, f in zip(names, pick.fields, strict=True)
    ]
    return per_value.groupBy(*group).agg(F.struct(*fields).alias(out))


@dataclass(frozen=True)
class ByEventTime:
    """An aggregate as ``rows``, aggregates of a group's rows of one event time, and
    ``merge``, the aggregate of those per group (its rows hold ``__pw_ts``, one each)."""

    rows: list[Column]
    merge: Callable[[list[Column]], Column]


def by_event_time(call: AggregateCall) -> ByEventTime | None:
    """``call`` split by event time (:func:`grouped_aggregates`), or ``None``: picks by
    the replay order (``first`` / ``last``), sums, counts, ``min`` / ``max`` and boolean
    aggregates of fixed-width values, without DISTINCT."""
    kind = call.kind
    if kind is None or call.distinct or call.expression is None:
        return None
    if not isinstance(call.dtype, FIXED_WIDTH):
        return None
    dtype = call.dtype
    if kind in (AggKind.FIRST, AggKind.LAST):
        x = call.args[0]
        assert x is not None
        by = F.min_by if kind is AggKind.FIRST else F.max_by
        ignore_nulls = len(call.literals) > 1 and bool(call.literals[1])
        hashed = F.when(x.isNotNull(), F.col(TB)) if ignore_nulls else F.col(TB)

        def pick(p: list[Column]) -> Column:
            at = F.when(p[0].isNotNull(), F.col(TS)) if ignore_nulls else F.col(TS)
            return by(p[0], at)

        return ByEventTime([by(x, hashed)], pick)
    merges: dict[AggKind, Callable[[Column], Column]] = {
        AggKind.SUM: F.sum,
        AggKind.COUNT: F.sum,
        AggKind.COUNT_IF: F.sum,
        AggKind.MIN: F.min,
        AggKind.MAX: F.max,
        AggKind.BOOL_AND: F.bool_and,
        AggKind.BOOL_OR: F.bool_or,
    }
    merge = merges.get(kind)
    if merge is None:
        return None
    if kind is AggKind.SUM and isinstance(dtype, FloatType | DoubleType):
        return None  # (the order of additions)
    if kind is AggKind.SUM and isinstance(dtype, DecimalType):
        # without ANSI a part whose sum overflows is null (Spark's sum of decimals): the
        # whole sum is null then too, not the sum of the other parts
        x = call.args[0]
        assert x is not None

        def decimal_sum(p: list[Column]) -> Column:
            overflowed = F.bool_or(p[0].isNull() & (p[1] > F.lit(0)))
            return F.when(overflowed, F.lit(None)).otherwise(F.sum(p[0])).cast(dtype)

        return ByEventTime([call.expression, F.count(x)], decimal_sum)
    return ByEventTime([call.expression], lambda p: merge(p[0]).cast(dtype))


def mergeable(calls: Sequence[AggregateCall]) -> list[ByEventTime] | None:
    """Each aggregate of ``calls`` as partial aggregates and their merge, when every one
    merges whatever rows its parts hold (``by_event_time``'s parts taken over any rows):
    sums (not of floats), counts, ``min`` / ``max`` and the boolean aggregates of
    fixed-width values; else ``None`` (picks by the replay order, DISTINCT, ...)."""
    if not calls or any(c.kind in (AggKind.FIRST, AggKind.LAST) for c in calls):
        return None  # (their parts pick within one event time)
    split = [by_event_time(call) for call in calls]
    return None if any(s is None for s in split) else [s for s in split if s is not None]


def firings_at_min(
    rows: DataFrame,
    keys: list[Column],
    compiled: CompiledAggregates,
    layout: OutputLayout,
    start: int | None,
) -> list[DataFrame]:
    """The firings of the window ending at ``MIN_TIMESTAMP + 1`` (its rows are at MIN; its
    ``start``, ``None`` below ``MIN_TIMESTAMP``), with allowed lateness: one per row, over
    the rows so far in replay order (running aggregates); as tagged result rows, and a
    metrics row counting them."""
    order = Window.partitionBy(*(keys or [F.lit(0)])).orderBy(F.col(TS), F.col(TB))
    running = order.rowsBetween(Window.unboundedPreceding, 0)
    columns = [
        native_column(call, 0, expression=True).over(running).alias(call.name)
        for call in compiled.calls
    ]
    # each firing is late (the window is behind the first watermark), numbered in replay order
    index = (F.row_number().over(order) - F.lit(1)).alias(_PANE)
    fired = rows.select(*keys, *columns, index)
    bounds = (long_literal(start), long_literal(MIN_TIMESTAMP + 1), long_literal(MIN_TIMESTAMP))
    values = compiled.values()
    results = fired.select(*layout.sql.result_branch(bounds, values, (F.col(_PANE), F.lit(LATE))))
    n = rows.agg(F.count(F.lit(1)).alias("n")).select(
        *layout.sql.metrics_branch({"num_windows_fired": "n", "num_results": "n"})
    )
    return [results, n]
