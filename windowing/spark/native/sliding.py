"""Native Spark plans for KIP-450 sliding windows (``SlidingDistinctAssigner``) in
``WindowedStream.agg``: the windows Kafka's algorithm creates, computed with Spark SQL.

Replayed in event-time order (no ``arrival_order``), nothing is late and every window fires
once, at the end of input, with the records it holds then. Kafka's algorithm
(:mod:`windowing.engine.kafka`), fed a key's records in event-time order, leaves exactly these
windows (``docs/sliding-distinct.md``; ``tests/unit/test_kafka_sliding_in_time_order.py``
checks this against the operator on random inputs)::

    the key's records split by sign: records before 0, records at 0 or after
    (Kafka's window starts cannot be negative: a window starting below 0 holds only records
    before 0, and records in [0, size) share one window [0; size])
    per part, for each distinct record time t:
      left window   [t - size; t]        for t < 0 or t > size
      early window  [0; size]            once, when the part has a time in [0, size]
      right window  [t + 1; t + 1 + size] when the part's next time after t is in it
    a window's rows: the part's records in its range; windows with equal bounds are one

The plan computes them without a copy of the rows per window where it can::

    rows with an event time, by (key, sign), ordered by event time
      ──► per row: the aggregates over range frames [t - size, t] and [t + 1, t + 1 + size]
          (Spark window functions), the next time (lead), the last time of the right frame
      ──► one row per distinct time (the last of its ties) ──► its left / early and right
          window (inline) ──► result rows
    rows without event time ──► the late side output (reason null_event_time) and a metric

Aggregates that have no window-function form (``count(DISTINCT ...)``, expressions over
aggregates, functions the window operator does not know) and sizes from ``2**62`` on (range
frames in ``bigint`` then overflow) take the general form: the windows from the distinct times
(``lead``), then each window's rows joined to it by time range (an equi-join on key, sign and a
bucket of ``size + 1`` ms, then the range) and ``groupBy(window).agg(...)``: one copy of a row
per window holding it (and of each row in the bucket before its own, so that a window is
joined in one bucket and grouped without another shuffle).

At the start of time: with a grace of 0, a record at ``MIN_TIMESTAMP`` finds its left window
``[MIN - size; MIN]`` already closed (watermark ``MIN``): it is late and in no window (Kafka
keeps no trace of it). With a grace, that window fires on each of its records at once
(``EventTimeTrigger``: its end is behind the watermark), over the records so far in replay
order (a self-join of the key's rows at ``MIN`` numbered in that order), and never at the end.
With pane info the firings at the end are each window's first (``ON_TIME``), the ones at
``MIN`` are ``LATE``, numbered in replay order (as the operator's ``PaneTracker`` numbers them).

The metrics are the operator's; ``num_windows_left_at_end`` follows the Kafka store's expiry:
a key's store is forgotten by a timer at ``start + 3 * size + grace`` of its newest window,
registered once from the key's first window; windows stay when that time saturates at
``MAX_TIMESTAMP`` (all the key's windows when even its first window's does, else all but the
first).

In arrival order Kafka's algorithm builds a window's aggregate from other windows' aggregates
as records arrive (a late record's new window starts from a window that may have closed, or
missed records that only reached closed windows): that is the window operator's job
(the planner, :mod:`windowing.spark.planning`, then picks another route).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F  # noqa: N812 - the PySpark convention

from windowing.assigners.sliding_distinct import SlidingDistinctAssigner
from windowing.job import Job
from windowing.spark.batch.replay_plan import (
    OtherOutputs,
    OutputBranches,
    WindowedResult,
    build_layout,
)
from windowing.spark.columns.aggregates import CompiledAggregates
from windowing.spark.columns.inputs import TB, TS, internal_columns
from windowing.spark.columns.output import REASON_LATE, REASON_NULL_EVENT_TIME, OutputLayout, col
from windowing.spark.native.parts import (
    LATE,
    ON_TIME,
    input_counters,
    late_counter,
    long_literal,
    native_column,
)
from windowing.time import MAX_TIMESTAMP, MIN_TIMESTAMP

if TYPE_CHECKING:
    from windowing.spark.planning import SparkPlan

__all__ = ["run_sliding"]

_SHIFT = 2**62  # event times shifted towards 0 per sign (FRAMED_MAX_SIZE)

_NEG = "__pw_sneg"  # the record's time is below 0
_O = "__pw_so"  # the time shifted towards 0 (range frames' order)
_NEXT = "__pw_snext"  # the next row's time in the (key, sign) part
_RMAX = "__pw_srmax"  # the last time in the right window's frame
_EMIT = "__pw_semit"
_FIRES = "__pw_sfires"  # the window fires at the end of input (not the one at MIN)
_GE = "__pw_sge"  # the window starts at or after the store-expiry bound
_WS, _WE, _WMT = "__pw_sws", "__pw_swe", "__pw_smt"
_LO, _HI = "__pw_slo", "__pw_shi"  # the window's rows' times (bigint, clamped)
_BUCKET = "__pw_sb"
_KEY, _WKEY, _WNEG, _WBUCKET = "__pw_skey", "__pw_swkey", "__pw_swneg", "__pw_swb"
_RN, _TRN = "__pw_srn", "__pw_strn"
_AGG = "__pw_sa"


def run_sliding(
    plan: SparkPlan, compiled: CompiledAggregates, job: Job, *, framed: bool
) -> WindowedResult:
    """The native plan of ``job`` (a ``SlidingDistinctAssigner`` job) with the aggregates
    ``compiled``: over range frames (``framed``, route ``NATIVE_KIP450``) or each window
    joined to its rows (``NATIVE_KIP450_JOINED``); see the module docstring."""
    source, config = job.source, job.config
    assigner = config.assigner
    assert isinstance(assigner, SlidingDistinctAssigner)
    grace = assigner.lateness(config.allowed_lateness)
    df = source.df
    layout = build_layout(job, None, compiled.schema, None)
    prepared = df.select(*internal_columns(df, source))
    keys = [col(k) for k in layout.keys]
    ts = F.col(TS)
    at_min = ts == F.lit(MIN_TIMESTAMP)
    # grace 0: a record at MIN finds its only window closed (and Kafka keeps no trace of it)
    is_late = at_min if grace == 0 else F.lit(False)
    valid = prepared.where(ts.isNotNull() & ~is_late)
    bounds = _Bounds(assigner.size, grace)
    if framed:
        results, windows = _framed_windows(valid, keys, compiled, bounds)
    else:
        results, windows = _joined_windows(valid, keys, layout, compiled, bounds)
    result_rows = results.select(
        *layout.sql.result_branch(
            (F.col(_WS), F.col(_WE), F.col(_WMT)),
            compiled.values(),
            (F.lit(0), F.lit(ON_TIME)),  # each window's one firing, by its timer
        )
    )
    # with a grace, the window [MIN - size; MIN] fires once per row at MIN (it is behind the
    # first watermark)
    at_min_fired = _firings_at_min(valid.where(at_min), layout, compiled) if grace > 0 else None
    if at_min_fired is not None:
        start = MIN_TIMESTAMP if assigner.size == 0 else None  # ([MIN - size; MIN] below MIN)
        window = (
            long_literal(start),
            long_literal(MIN_TIMESTAMP + 1),
            long_literal(MIN_TIMESTAMP),
        )
        pane = (F.col(_RN), F.lit(LATE))  # each firing is late, numbered in replay order
        at_min_rows = at_min_fired.select(
            *layout.sql.result_branch(window, compiled.values(), pane)
        )
        result_rows = result_rows.unionByName(at_min_rows, allowMissingColumns=True)

    def others() -> OtherOutputs:
        fired = {"num_windows_fired": "fired", "num_results": "fired"}
        metrics = [
            _window_metrics(windows, keys).select(
                *layout.sql.metrics_branch({**fired, "num_windows_left_at_end": "left"})
            )
        ]
        if at_min_fired is not None:
            counted = at_min_fired.agg(F.count(F.lit(1)).alias("fired"))
            metrics.append(counted.select(*layout.sql.metrics_branch(fired)))
        late_name = late_counter(layout)
        counters = prepared.agg(
            *input_counters(layout), F.count(F.when(is_late, 1)).alias(late_name)
        )
        metrics.append(
            counters.select(*layout.sql.metrics_branch({n: n for n in counters.columns}))
        )
        late = (
            [
                prepared.where(ts.isNull()).select(
                    *layout.sql.late_branch(F.lit(None), REASON_NULL_EVENT_TIME)
                ),
                prepared.where(is_late).select(*layout.sql.late_branch(F.lit(None), REASON_LATE)),
            ]
            if layout.has_late
            else []
        )
        return OtherOutputs(tuple(metrics), tuple(late))

    return WindowedResult.of_branches(OutputBranches(result_rows, others), layout, plan, ())


class _Bounds:
    """A window's columns from the distinct time ``t`` that defines it: start, end and max
    timestamp as the results show them (null where the window's bounds leave ``bigint``),
    the range of its rows' times (clamped to ``bigint``), and whether it starts at or after
    the store-expiry bound ``MAX - 3 * size - grace``. Every sum is guarded: no ``bigint``
    overflow (an error under ANSI) whatever the time."""

    def __init__(self, size: int, grace: int) -> None:
        self.size = size
        self.expiry = MAX_TIMESTAMP - 3 * size - grace  # a Python int: may be below MIN

    def left(self, t: Column, early: Column) -> dict[str, Column]:
        """``[t - size; t]``, or Kafka's early window ``[0; size]`` where ``early``."""
        size = self.size
        start = F.when(_at_least(t, MIN_TIMESTAMP + size), t - F.lit(size))
        return {
            _WS: F.when(early, long_literal(0)).otherwise(start),
            _WE: F.when(early, long_literal(size + 1 if size < MAX_TIMESTAMP else None)).otherwise(
                F.when(t < F.lit(MAX_TIMESTAMP), t + F.lit(1))
            ),
            _WMT: F.when(early, long_literal(size)).otherwise(t),
            _LO: F.when(early, long_literal(0)).otherwise(
                F.coalesce(start, long_literal(MIN_TIMESTAMP))
            ),
            _HI: F.when(early, long_literal(size)).otherwise(t),
            _GE: F.when(early, F.lit(self.expiry <= 0)).otherwise(_at_least(t, self.expiry + size)),
        }

    def right(self, t: Column, exists: Column) -> dict[str, Column]:
        """``[t + 1; t + 1 + size]`` (the end clamped past ``MAX``), where ``exists``."""
        size = self.size
        start = F.when(exists & (t < F.lit(MAX_TIMESTAMP)), t + F.lit(1))
        last = F.when(_at_most(t, MAX_TIMESTAMP - 1 - size), _plus(t, size + 1))
        return {
            _WS: start,
            _WE: F.when(_at_most(t, MAX_TIMESTAMP - 2 - size), _plus(t, size + 2)),
            _WMT: F.coalesce(last, long_literal(MAX_TIMESTAMP)),
            _LO: start,
            _HI: F.coalesce(last, long_literal(MAX_TIMESTAMP)),
            _GE: _at_least(t, self.expiry - 1),
        }

    def of_range(self, lo: Column, hi: Column) -> tuple[Column, Column, Column]:
        """Start, end and max timestamp (as the results show them) of the window whose rows'
        times are ``[lo, hi]`` (its bounds clamped to ``bigint``): only one end can be
        clamped, a window spanning less than ``2**64`` ms."""
        size = self.size
        start = F.when(lo > F.lit(MIN_TIMESTAMP), lo).when(
            _at_least(hi, MIN_TIMESTAMP + size), hi - F.lit(size)
        )
        return start, F.when(hi < F.lit(MAX_TIMESTAMP), hi + F.lit(1)), hi


def _plus(column: Column, k: int) -> Column:
    """``column + k`` for ``0 <= k < 2**64`` where the sum fits in ``bigint``, as one sum
    with one literal: Spark folds ``(x + a) + b`` into ``x + (a + b)``, also into the
    branches of a ``CASE``, which overflows when ``a + b`` does."""
    if k <= MAX_TIMESTAMP:
        return column + F.lit(k)
    return (column + F.lit(k + MIN_TIMESTAMP)) - F.lit(MIN_TIMESTAMP)


def _at_least(column: Column, bound: int) -> Column:
    """``column >= bound`` for a non-null ``bigint`` column and any integer ``bound``."""
    if bound <= MIN_TIMESTAMP:
        return F.lit(True)
    if bound > MAX_TIMESTAMP:
        return F.lit(False)
    return column >= F.lit(bound)


def _at_most(column: Column, bound: int) -> Column:
    """``column <= bound`` for a ``bigint`` column and any integer ``bound``."""
    if bound >= MAX_TIMESTAMP:
        return column.isNotNull()
    if bound < MIN_TIMESTAMP:
        return F.lit(False)
    return column <= F.lit(bound)


def _windows_of_times(
    times: DataFrame,
    keys: list[Column],
    bounds: _Bounds,
    last_early: Column,
    right_exists: Column,
    fields: Sequence[str],
    extra: tuple[list[Column], list[Column]] = ([], []),
) -> DataFrame:
    """Each distinct time's left (or early) and right window, one row each (``inline``):
    keys, the sign, whether the window fires at the end (``_FIRES``), the ``_Bounds``
    columns named in ``fields``, and ``extra`` columns of the left and right window.
    ``last_early``: no later time of the part is in ``[0, size]``; ``right_exists``: the
    right window exists and is no left window."""
    t = F.col(TS)
    neg = F.col(_NEG)
    # records in [0, size] share Kafka's early window: once, at the last of their times
    in_early = ~neg & (t <= F.lit(bounds.size))
    early = in_early & last_early
    at_min = t == F.lit(MIN_TIMESTAMP)  # (grace 0: no such rows) fires per row instead

    def window(
        emit: Column, fires: Column, columns: dict[str, Column], more: list[Column]
    ) -> Column:
        named = [columns[n].alias(n) for n in fields]
        return F.struct(emit.alias(_EMIT), fires.alias(_FIRES), *named, *more)

    left_emit = ~in_early | early
    return (
        times.select(
            *keys,
            neg,
            F.inline(
                F.array(
                    window(left_emit, left_emit & ~at_min, bounds.left(t, early), extra[0]),
                    window(right_exists, right_exists, bounds.right(t, right_exists), extra[1]),
                )
            ),
        )
        .where(F.col(_EMIT))
        .drop(_EMIT)
    )


def _framed_windows(
    valid: DataFrame, keys: list[Column], compiled: CompiledAggregates, bounds: _Bounds
) -> tuple[DataFrame, DataFrame]:
    """Range frames: every row's left and right window aggregates (window functions over the
    rows of its key and sign, ordered by time), kept at the last row of each time. Returns
    the result rows and the windows (keys, ``_FIRES``, ``_GE``)."""
    ts = F.col(TS)
    size = bounds.size
    neg = ts < F.lit(0)
    shifted = F.when(neg, ts + F.lit(_SHIFT)).otherwise(ts - F.lit(_SHIFT))
    rows = valid.withColumn(_NEG, neg).withColumn(_O, shifted)
    order = Window.partitionBy(*keys, F.col(_NEG)).orderBy(F.col(_O))
    left, right = order.rangeBetween(-size, 0), order.rangeBetween(1, size + 1)
    calls = compiled.calls
    framed = rows.select(
        *keys,
        _NEG,
        TS,
        _O,
        F.lead(_O).over(order).alias(_NEXT),
        F.max(_O).over(right).alias(_RMAX),
        *[
            native_column(c, 0, expression=True).over(left).alias(f"{_AGG}l{i}")
            for i, c in enumerate(calls)
        ],
        *[
            native_column(c, 0, expression=True).over(right).alias(f"{_AGG}r{i}")
            for i, c in enumerate(calls)
        ],
    )
    o, nxt = F.col(_O), F.col(_NEXT)
    last = framed.where(nxt.isNull() | (nxt != o))  # one row per distinct time
    # the next time is in the right window, and no left window [t + 1; t + 1 + size] is it
    right_exists = (
        nxt.isNotNull() & (nxt - o <= F.lit(size + 1)) & (F.col(_RMAX) != o + F.lit(size + 1))
    )
    named = [
        [F.col(f"{_AGG}{side}{i}").alias(c.name) for i, c in enumerate(calls)] for side in "lr"
    ]
    last_early = nxt.isNull() | (nxt > F.lit(size - _SHIFT))  # (times >= 0 shifted down)
    results = (
        _windows_of_times(
            last, keys, bounds, last_early, right_exists, (_WS, _WE, _WMT), (named[0], named[1])
        )
        .where(F.col(_FIRES))
        .select(*keys, _WS, _WE, _WMT, *[col(c.name) for c in calls])
    )
    windows = _windows_of_times(last, keys, bounds, last_early, right_exists, (_GE,))
    return results, windows.select(*keys, _FIRES, _GE)


def _joined_windows(
    valid: DataFrame,
    keys: list[Column],
    layout: OutputLayout,
    compiled: CompiledAggregates,
    bounds: _Bounds,
) -> tuple[DataFrame, DataFrame]:
    """The general form: the windows from the distinct times, each window's rows joined to
    it, grouped by window. The join's equality is the key (one struct: nulls equal), the
    sign and a bucket of time (``bigint div width``, ``width = size + 1`` up to ``2**62``): a
    window in the bucket of its start, a row in its own bucket and the ones before it that a
    window can reach it from; the aggregation then needs no shuffle of its own. Returns the
    result rows and the windows (keys, ``_FIRES``, ``_GE``)."""
    ts = F.col(TS)
    size = bounds.size
    rows = valid.withColumn(_NEG, ts < F.lit(0))
    order = Window.partitionBy(*keys, F.col(_NEG)).orderBy(ts)
    nxt = F.col(_NEXT)
    last = rows.select(*keys, _NEG, TS, F.lead(TS).over(order).alias(_NEXT)).where(
        nxt.isNull() | (nxt != ts)
    )
    # (times of one sign: the difference fits in bigint)
    right_exists = nxt.isNotNull() & _at_most(nxt - ts, size + 1)
    fields = (_LO, _HI, _GE)
    last_early = nxt.isNull() | (nxt > F.lit(size))
    # a right window [t + 1; t + 1 + size] may be a left window too: one window
    windows = _windows_of_times(last, keys, bounds, last_early, right_exists, fields).distinct()
    width = min(size + 1, 2**62)
    reach = -(-(size + 1) // width)  # buckets past its own that a window reaches (1 or 2)
    key = F.struct(*keys) if keys else F.lit(0)
    targets = windows.where(F.col(_FIRES)).select(
        key.alias(_WKEY),
        F.col(_NEG).alias(_WNEG),
        F.expr(f"{_LO} div {width}").alias(_WBUCKET),
        _LO,
        _HI,
    )
    bucket = F.expr(f"{TS} div {width}")
    copies = F.array(*[bucket - F.lit(i) for i in range(reach + 1)])
    bucketed = rows.withColumn(_KEY, key).withColumn(_BUCKET, F.explode(copies))
    condition = [
        F.col(_KEY) == F.col(_WKEY),
        F.col(_NEG) == F.col(_WNEG),
        F.col(_BUCKET) == F.col(_WBUCKET),
        ts.between(F.col(_LO), F.col(_HI)),
    ]
    calls = compiled.calls
    grouped = (
        bucketed.join(targets, condition)
        .groupBy(_KEY, _NEG, _BUCKET, _LO, _HI)
        .agg(*[native_column(c, 0).alias(c.name) for c in calls])
    )
    start, end, max_ts = bounds.of_range(F.col(_LO), F.col(_HI))
    results = grouped.select(
        *[F.col(_KEY).getField(k).alias(k) for k in layout.keys],
        start.alias(_WS),
        end.alias(_WE),
        max_ts.alias(_WMT),
        *[col(c.name) for c in calls],
    )
    return results, windows.select(*keys, _FIRES, _GE)


def _window_metrics(windows: DataFrame, keys: list[Column]) -> DataFrame:
    """One row: the windows firing at the end (``fired``), and the windows the key stores
    keep at the end (``left``; see the module docstring)."""
    n, m = F.col("n"), F.col("m")
    per_key = windows.groupBy(*keys).agg(
        F.count(F.lit(1)).alias("n"),
        F.count(F.when(F.col(_GE), 1)).alias("m"),
        F.count(F.when(F.col(_FIRES), 1)).alias("f"),
    )
    left = F.when(m == n, n).when(m > F.lit(0), n - F.lit(1)).otherwise(F.lit(0))
    return per_key.agg(
        F.coalesce(F.sum("f"), long_literal(0)).alias("fired"),
        F.coalesce(F.sum(left), long_literal(0)).alias("left"),
    )


def _firings_at_min(
    rows: DataFrame, layout: OutputLayout, compiled: CompiledAggregates
) -> DataFrame:
    """With a grace: the firings of the window ``[MIN - size; MIN]`` (its rows are the
    key's rows at ``MIN``), one per row, over the rows so far in replay order (each row
    numbered in that order, joined to the rows numbered up to it): the keys, the
    aggregates and the firing's pane index (``_RN``, from 0)."""
    keys = [col(k) for k in layout.keys]
    order = Window.partitionBy(*(keys or [F.lit(0)])).orderBy(F.col(TB))
    numbered = rows.withColumn(_RN, F.row_number().over(order))
    renamed = [f"__pw_sk{i}" for i in range(len(keys))]
    targets = numbered.select(
        *[k.alias(r) for k, r in zip(keys, renamed, strict=True)], F.col(_RN).alias(_TRN)
    )
    condition = [
        *[k.eqNullSafe(F.col(r)) for k, r in zip(keys, renamed, strict=True)],
        F.col(_RN) <= F.col(_TRN),
    ]
    calls = compiled.calls
    return (
        numbered.join(targets, condition)
        .groupBy(*renamed, _TRN)
        .agg(*[native_column(c, 0).alias(c.name) for c in calls])
        .select(
            *[F.col(r).alias(k) for r, k in zip(renamed, layout.keys, strict=True)],
            *[col(c.name) for c in calls],
            (F.col(_TRN) - F.lit(1)).alias(_RN),
        )
    )
