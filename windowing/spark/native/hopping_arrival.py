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
    HER,
    HFIRST,
    HIN,
    HNEXT,
    HPROBE,
    HR,
    HRX,
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

_WM, _LATE_ROW, _FIRST_LATE = "__pw_hwm", "__pw_hlate", "__pw_hfirstlate"
_PANE = "__pw_hpane"
_FB, _FR, _FLATE = "__pw_hfb", "__pw_hfr", "__pw_hflate"  # a firing's window, and late
_FIRINGS = f"array<struct<{_FB}:bigint,{_FR}:bigint,{_FLATE}:boolean>>"


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
    seen_watermark = watermark_of(WMAX, job.source.watermark.delay)
    # the last window holding ts ends at ts + size - 1 - ((ts - offset) mod slide)
    back = F.pmod(F.pmod(ts, F.lit(slide)) - F.lit(grid.offset % slide), F.lit(slide))
    span = F.lit(size - 1) - back  # >= 0: size > slide
    last_max = F.when(ts > F.lit(MAX_TIMESTAMP) - span, F.lit(MAX_TIMESTAMP)).otherwise(ts + span)
    block, pane = grid.block_and_pane(ts)
    x_block, x_pane = grid.block_and_pane(F.greatest(ts, seen_watermark + F.lit(1)))  # wm < MAX
    # every row with the watermark it saw, whether it is late, and its panes (in the prefix
    # maximum's last select: Spark analyzes each DataFrame operation as it is made)
    marked = _with_prefix_max(
        prepared,
        layout,
        seen_watermark.alias(_WM),
        (~_cleanup_after(last_max, lateness, seen_watermark)).alias(_LATE_ROW),
        block.alias(HB),
        pane.alias(HR),
        x_block.alias(HBX),
        x_pane.alias(HRX),
    )
    late_row = has_arrival & has_time & F.col(_LATE_ROW)
    # One shuffle, by key: groups, late copies and the sweep of a key stay in its partition.
    positioned = marked.where(has_arrival & has_time & ~F.col(_LATE_ROW))
    positioned = positioned.repartition(*keys) if keys else positioned
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
    # One row per firing, its window normalized to a block and a pane: a run's on-time
    # windows, and a probe's late firing (its window already normalized). (Each window's
    # columns made in the select that makes its row: an expression built on another one
    # repeats it, and Spark analyzes every copy.)
    runs = (F.col(HIN) > F.lit(0)) & (F.col(HFIRST) < F.col(HNEXT))
    starts = F.sequence(F.col(HFIRST), F.col(HNEXT) - F.lit(1), F.lit(grid.m).cast("long"))
    firings = F.when(runs, F.transform(starts, lambda w: _firing(grid, F.col(HEB), w))).otherwise(
        F.array().cast(_FIRINGS)
    )
    if probes is not None:
        probe = F.struct(F.col(HEB).alias(_FB), F.col(HER).alias(_FR), F.lit(True).alias(_FLATE))
        firings = F.concat(
            firings,
            F.when(F.coalesce(F.col(HPROBE), F.lit(False)), F.array(probe)).otherwise(
                F.array().cast(_FIRINGS)
            ),
        )
    fired = swept.select("*", F.inline(firings))
    is_late = F.col(_FLATE)
    start, end = grid.bounds(F.col(_FB), F.col(_FR))
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
    pane = (pane_index, F.when(is_late, F.lit(LATE)).otherwise(F.lit(ON_TIME)))
    # the results' columns in the plan's select of its results (one select fewer), unless
    # the job's outputs read the values as columns by name
    fired_values: tuple[Column, ...] | None = tuple(values)
    if compiled.outputs is not None:
        fired, fired_values = fired.select("*", *values), None

    def rest() -> NativeRest:
        counters = marked.agg(
            F.count(F.lit(1)).alias("num_input_rows"),
            F.count(F.when(has_arrival & has_time, 1)).alias("num_elements"),
            F.count(F.when(has_arrival & ~has_time, 1)).alias("num_null_event_time"),
            F.count(F.when(~has_arrival, 1)).alias("num_null_arrival_order"),
            keys_counter(layout).alias("num_keys"),
            F.count(F.when(late_row, 1)).alias(late_counter(layout)),
        )
        if not layout.has_late:
            return NativeRest(counters)
        seen = F.when(wm != F.lit(MIN_TIMESTAMP), wm)
        late = [
            marked.where(late_row).select(*layout.sql.late_branch(seen, REASON_LATE)),
            marked.where(has_arrival & ~has_time).select(
                *layout.sql.late_branch(seen, REASON_NULL_EVENT_TIME)
            ),
            marked.where(~has_arrival).select(
                *layout.sql.late_branch(F.lit(None), REASON_NULL_ARRIVAL_ORDER)
            ),
        ]
        return NativeRest(counters, late)

    # Every output reads the rows with their prefix maximum (three shuffles), and those rows
    # are the whole input: a persisted result caches its tagged output (its outputs computed
    # in one job, the shuffles reused), not them (no shared parts).
    return NativeParts(fired, start, end, new_window, rest, pane, values=fired_values)


def _with_prefix_max(prepared: DataFrame, layout: OutputLayout, *also: Column) -> DataFrame:
    """``prepared`` with the prefix maximum of event time over earlier arrivals (``WMAX``,
    :func:`~windowing.spark.columns.watermark.add_prefix_max`, as the batch replay computes it),
    its summaries sent to key groups of the keys (``KEY_GROUP``; one without keys), and the
    columns ``also`` computed from them."""
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
        also=also,
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
    starts = grid.starts_of(F.col(HB), F.col(HR), high)
    windows = F.transform(starts, lambda w: _firing(grid, F.col(HB), w, late=True))
    copies = rows.select("*", F.inline(windows))  # (none without late windows: null)
    _, end = grid.bounds(F.col(_FB), F.col(_FR))
    max_ts = F.coalesce(end - F.lit(1), F.lit(MAX_TIMESTAMP))
    copies = copies.where(_cleanup_after(max_ts, lateness, F.col(_WM)))
    order = Window.partitionBy(*keys, F.col(_FB), F.col(_FR)).orderBy(
        F.col(ARR), F.col(TS), F.col(TB)
    )
    running = order.rowsBetween(Window.unboundedPreceding, 0)
    rank = F.row_number().over(order) - F.lit(1)
    return copies.select(
        *keys,
        F.col(_FB).alias(HEB),
        F.col(_FR).alias(HER),
        *[
            c.over(running).alias(f"{x}_late")
            for c, x in zip(partials.expressions(), partials.flat, strict=True)
        ],
        rank.alias(_PANE),
        (rank == F.lit(0)).alias(_FIRST_LATE),
        F.lit(True).alias(HPROBE),
    )


def _firing(grid: HoppingGrid, block: Column, pane: Column, late: bool = False) -> Column:
    """The window starting at ``pane`` of ``block`` (``-n < pane < 2n``) normalized to a
    block and a pane in it, and whether its firing is late: a struct to ``inline``."""
    b, r = grid.normalized(block, pane)
    return F.struct(b.alias(_FB), r.alias(_FR), F.lit(late).alias(_FLATE))
