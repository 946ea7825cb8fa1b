"""Native Spark plans for hopping event-time windows replayed in arrival order
(``WindowedStream.agg`` with ``arrival_order``), for aggregates whose partials subtract
exactly: ``count``, ``count_if``, ``sum`` of integers and decimals, ``avg`` of decimals.

A row arriving at watermark ``wm`` (the batch replay's prefix maximum of event time over
earlier arrivals, :func:`~windowing.spark.columns.watermark.add_prefix_max`) joins only its windows
that are not late (cleanup time ``> wm``), as in Flink; of those, the windows ending after
``wm`` hold it when the watermark passes their end (their one *on-time* firing), and the
others (``max timestamp <= wm < cleanup``) fire again at once with it (a *late* firing).
The watermark only rises in arrival order, so every window's on-time rows come before its
late ones. Without a copy of any row per window::

    on time: the windows of a row are those starting in (ts - size, ts]; the ones ending
             after wm start at or after x - size + 1, x = max(ts, wm + 1). So rows grouped by
             (key, pane of ts, pane of x) enter the windows at pane(x) - n + 1 and leave
             after pane(ts): running sums in window-start order, windows generated per run
             (windowing.spark.native.hopping's sweep)
    late:    each row copied into its late windows only (rows behind the watermark by more
             than a window's length, within the allowed lateness), running sums per window in
             replay order (arrival, event time, content hash), read together with the
             on-time contents at the window's start (a probe in the same sweep)
    rows added to no window (every window past its cleanup time): the late side output

With ``pane_info()`` the on-time firing is pane 0 (``ON_TIME``) and the late ones follow it
(``LATE``). Minimum and maximum style aggregates (and floating sums) are not native here: a
row behind the watermark joins the windows ending after it only, so a window's contents are
no longer a block's suffix plus the next block's prefix, and subtracting is not exact; the
window operator runs those jobs.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F  # noqa: N812 - the PySpark convention

from windowing.job import Job
from windowing.spark.batch.replay_plan import prefix_max_buckets
from windowing.spark.columns.aggregates import CompiledAggregates
from windowing.spark.columns.inputs import ARR, TB, TS, WMAX
from windowing.spark.columns.keys import KEY_GROUP, key_group
from windowing.spark.columns.output import (
    REASON_LATE,
    REASON_NULL_ARRIVAL_ORDER,
    REASON_NULL_EVENT_TIME,
    OutputLayout,
)
from windowing.spark.columns.watermark import add_prefix_max, watermark_of
from windowing.spark.jobs import shuffle_partitions
from windowing.spark.native.hopping import (
    HB,
    HBX,
    HEB,
    HEND,
    HER,
    HFIRST,
    HIN,
    HNEXT,
    HPROBE,
    HR,
    HRX,
    HSTART,
    HoppingGrid,
    Partials,
    sweep,
)
from windowing.spark.native.parts import (
    LATE,
    ON_TIME,
    NativeParts,
    NativeRest,
    keys_counter,
    late_counter,
)
from windowing.time import MAX_TIMESTAMP, MIN_TIMESTAMP

__all__ = ["arrival_parts"]

_WM, _LATE_ROW, _W, _FIRST_LATE = "__pw_hwm", "__pw_hlate", "__pw_hw", "__pw_hfirstlate"
_PANE, _TIMING, _NEW = "__pw_hpane", "__pw_htiming", "__pw_hnew"


def _cleanup_after(max_ts: Column, lateness: int, watermark: Column) -> Column:
    """Whether a window ending at ``max_ts`` is not late at ``watermark``: its cleanup time
    (saturating at the end of time, which no watermark of the replay reaches) is after it."""
    return F.when(max_ts >= F.lit(MAX_TIMESTAMP - lateness), F.lit(True)).otherwise(
        max_ts + F.lit(lateness) > watermark
    )


def arrival_parts(
    grid: HoppingGrid,
    job: Job,
    prepared: DataFrame,
    keys: list[Column],
    compiled: CompiledAggregates,
    layout: OutputLayout,
) -> NativeParts:
    """Hopping windows (``size > slide``) in arrival order (see the module docstring)."""
    n, size, slide = grid.n, grid.size, grid.slide
    lateness = job.config.allowed_lateness
    has_arrival, has_time = F.col(ARR).isNotNull(), F.col(TS).isNotNull()
    ts, wm = F.col(TS), F.col(_WM)
    prepared = _with_prefix_max(prepared, layout)
    seen_watermark = watermark_of(WMAX, job.source.watermark.delay)
    # the last window holding ts ends at ts + size - 1 - ((ts - offset) mod slide)
    back = F.pmod(F.pmod(ts, F.lit(slide)) - F.lit(grid.offset % slide), F.lit(slide))
    span = F.lit(size - 1) - back  # >= 0: size > slide
    last_max = F.when(ts > F.lit(MAX_TIMESTAMP) - span, F.lit(MAX_TIMESTAMP)).otherwise(ts + span)
    # (one select: Spark analyzes each DataFrame operation as it is made)
    marked = prepared.where(has_arrival & has_time).select(
        "*",
        seen_watermark.alias(_WM),
        (~_cleanup_after(last_max, lateness, seen_watermark)).alias(_LATE_ROW),
    )
    # One shuffle, by key: groups, late copies and the sweep of a key stay in its partition.
    added = marked.where(~F.col(_LATE_ROW))
    added = added.repartition(*keys) if keys else added
    block, pane = grid.block_and_pane(ts)
    x_block, x_pane = grid.block_and_pane(F.greatest(ts, wm + F.lit(1)))  # wm < MAX
    positioned = added.select(
        "*", block.alias(HB), pane.alias(HR), x_block.alias(HBX), x_pane.alias(HRX)
    )
    # The pane of x relative to the row's block (x >= ts: the same block or a later one).
    x_rel = F.when(F.col(HBX) == F.col(HB), F.col(HRX)).when(
        F.col(HBX) == F.col(HB) + F.lit(1), F.col(HRX) + F.lit(n)
    )
    on_time = x_rel.isNotNull() & (x_rel - F.lit(n) < F.col(HR))  # a window ends after wm
    partials = Partials.of(compiled.calls)
    groups = positioned.where(on_time).groupBy(*keys, HB, HR, HBX, HRX).agg(*partials.rows())
    partials = partials.typed(groups)
    probes = _late_copies(grid, positioned, keys, partials, x_rel, lateness) if lateness else None
    swept = sweep(grid, groups, keys, partials, probes)
    # One row per firing: a run's on-time windows, and a probe's late firing (marked -1).
    runs = (F.col(HIN) > F.lit(0)) & (F.col(HFIRST) < F.col(HNEXT))
    starts = F.when(
        runs, F.sequence(F.col(HFIRST), F.col(HNEXT) - F.lit(1), F.lit(grid.m).cast("long"))
    ).otherwise(F.array().cast("array<bigint>"))
    if probes is not None:
        starts = F.concat(
            starts,
            F.when(
                F.coalesce(F.col(HPROBE), F.lit(False)), F.array(F.lit(-1).cast("long"))
            ).otherwise(F.array().cast("array<bigint>")),
        )
    fired = swept.select("*", F.explode(starts).alias(_W))
    is_late = F.col(_W) == F.lit(-1)
    eb, w = grid.normalized(F.col(HEB), F.when(is_late, F.col(HER)).otherwise(F.col(_W)))
    start, end = grid.bounds(eb, w)
    on_time_values = partials.results(lambda x: None, F.col)
    late_values = (
        partials.results(F.col, lambda x: F.col(f"{x}_late")) if probes is not None else []
    )
    values = [
        F.when(is_late, late).otherwise(now).alias(call.name) if late_values else now
        for call, now, late in zip(
            compiled.calls, on_time_values, late_values or on_time_values, strict=True
        )
    ]
    pane_index = (
        F.lit(0)
        if probes is None
        else F.when(
            is_late, F.col(_PANE) + F.when(F.col(HIN) > F.lit(0), 1).otherwise(0)
        ).otherwise(F.lit(0))
    )
    new_window = (
        F.lit(True)
        if probes is None
        else ~is_late | (F.col(_FIRST_LATE) & (F.col(HIN) == F.lit(0)))
    )
    results = fired.select(
        *keys,
        start.alias(HSTART),
        end.alias(HEND),
        *values,
        pane_index.alias(_PANE),
        F.when(is_late, F.lit(LATE)).otherwise(F.lit(ON_TIME)).alias(_TIMING),
        new_window.alias(_NEW),
    )

    def rest() -> NativeRest:
        late_count = marked.select(_LATE_ROW).agg(
            F.count(F.when(F.col(_LATE_ROW), 1)).alias("late")
        )
        counters = prepared.agg(
            F.count(F.lit(1)).alias("num_input_rows"),
            F.count(F.when(has_arrival & has_time, 1)).alias("num_elements"),
            F.count(F.when(has_arrival & ~has_time, 1)).alias("num_null_event_time"),
            F.count(F.when(~has_arrival, 1)).alias("num_null_arrival_order"),
            keys_counter(layout).alias("num_keys"),
        ).crossJoin(late_count.select(F.col("late").alias(late_counter(layout))))
        if not layout.has_late:
            return NativeRest(counters)
        seen = F.when(wm != F.lit(MIN_TIMESTAMP), wm)
        late = [
            marked.where(F.col(_LATE_ROW)).select(*layout.sql.late_branch(seen, REASON_LATE)),
            prepared.where(has_arrival & ~has_time)
            .withColumn(_WM, seen_watermark)
            .select(*layout.sql.late_branch(seen, REASON_NULL_EVENT_TIME)),
            prepared.where(~has_arrival).select(
                *layout.sql.late_branch(F.lit(None), REASON_NULL_ARRIVAL_ORDER)
            ),
        ]
        return NativeRest(counters, late)

    # Every output reads the rows with their prefix maximum (three shuffles), and those rows
    # are the whole input: a persisted result caches its tagged output (its outputs computed
    # in one job, the shuffles reused), not them (no shared parts).
    return NativeParts(
        results,
        F.col(HSTART),
        F.col(HEND),
        F.col(_NEW),
        rest,
        (F.col(_PANE), F.col(_TIMING)),
    )


def _with_prefix_max(prepared: DataFrame, layout: OutputLayout) -> DataFrame:
    """``prepared`` with the prefix maximum of event time over earlier arrivals (``WMAX``,
    :func:`~windowing.spark.columns.watermark.add_prefix_max`, as the batch replay computes it),
    its summaries sent to key groups of the keys (``KEY_GROUP``; one without keys)."""
    spark = prepared.sparkSession
    groups = shuffle_partitions(spark) if layout.keys else 1
    # (+ pmod(content hash, 1), always 0: without keys the group is no constant, which
    # Spark would drop from the prefix maximum's window partition, warning that it has none)
    kg = key_group(layout.keys, groups) + F.pmod(F.col(TB), F.lit(1))
    grouped = prepared.withColumn(KEY_GROUP, kg)
    return add_prefix_max(
        grouped,
        order=ARR,
        value=TS,
        out=WMAX,
        group=KEY_GROUP,
        groups=groups,
        buckets=prefix_max_buckets(spark),
    )


def _late_copies(
    grid: HoppingGrid,
    rows: DataFrame,
    keys: list[Column],
    partials: Partials,
    x_rel: Column,
    lateness: int,
) -> DataFrame:
    """Probes for the late firings: each row copied into its windows that end at or before
    its watermark and are not past their cleanup time, with the running partials of the
    window's late rows in replay order (``<partial>_late``), its rank among them (``_PANE``,
    from 0) and whether it is the first (``_FIRST_LATE``)."""
    n = grid.n
    # the row's windows start at panes r - n + 1 .. r of its block; those ending at or
    # before the watermark (last pane < pane of x) start before x_rel - n + 1
    high = F.least(F.col(HR), F.coalesce(x_rel - F.lit(n), F.col(HR)))
    first = grid.first_start(F.col(HB), F.col(HR) - F.lit(n - 1))
    copies = rows.where(first <= high).select(
        "*", grid.window_starts(first, high + F.lit(1)).alias(_W)
    )
    eb, er = grid.normalized(F.col(HB), F.col(_W))
    _, end = grid.bounds(eb, er)
    max_ts = F.coalesce(end - F.lit(1), F.lit(MAX_TIMESTAMP))
    copies = copies.select("*", eb.alias(HEB), er.alias(HER)).where(
        _cleanup_after(max_ts, lateness, F.col(_WM))
    )
    order = Window.partitionBy(*keys, F.col(HEB), F.col(HER)).orderBy(
        F.col(ARR), F.col(TS), F.col(TB)
    )
    running = order.rowsBetween(Window.unboundedPreceding, 0)
    rank = F.row_number().over(order) - F.lit(1)
    return copies.select(
        *keys,
        F.col(HEB),
        F.col(HER),
        *[
            c.over(running).alias(f"{x}_late")
            for c, x in zip(partials.expressions(), partials.flat, strict=True)
        ],
        rank.alias(_PANE),
        (rank == F.lit(0)).alias(_FIRST_LATE),
        F.lit(True).alias(HPROBE),
    )
