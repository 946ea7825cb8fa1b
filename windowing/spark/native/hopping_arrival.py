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
from windowing.spark.columns.sql import col, int_sql
from windowing.spark.columns.watermark import add_prefix_max, watermark_sql
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
_NO_FIRINGS = f"CAST(array() AS {_FIRINGS})"
_START = "__pw_hlw"  # a window start (pane), the variable of a lambda


def _cleanup_after(max_ts: str, lateness: int, watermark: str) -> str:
    """SQL text: whether a window ending at ``max_ts`` is not late at ``watermark``: its
    cleanup time (saturating at the end of time, which no watermark of the replay reaches)
    is after it."""
    return (
        f"CASE WHEN ({max_ts}) >= {int_sql(MAX_TIMESTAMP - lateness)} THEN true "
        f"ELSE ({max_ts}) + {int_sql(lateness)} > ({watermark}) END"
    )


def arrival_parts(
    grid: HoppingGrid,
    job: Job,
    prepared: DataFrame,
    keys: list[Column],
    compiled: CompiledAggregates,
    layout: OutputLayout,
) -> NativeParts:
    """Hopping windows (``size > slide``) in arrival order (see the module docstring).
    Written as SQL text: a ``Column`` costs a few calls to the JVM per function, operator
    and literal (``docs/design.md``, "Small jobs and ``.agg``")."""
    n, size, slide = grid.n, grid.size, grid.slide
    lateness = job.config.allowed_lateness
    has_both = f"{ARR} IS NOT NULL AND {TS} IS NOT NULL"
    seen = f"({watermark_sql(WMAX, job.source.watermark.delay)})"
    # the last window holding ts ends at ts + size - 1 - ((ts - offset) mod slide)
    back = f"pmod(pmod({TS}, {int_sql(slide)}) - {int_sql(grid.offset % slide)}, {int_sql(slide)})"
    span = f"({int_sql(size - 1)} - {back})"  # >= 0: size > slide
    end = int_sql(MAX_TIMESTAMP)
    last_max = f"CASE WHEN {TS} > {end} - {span} THEN {end} ELSE {TS} + {span} END"
    block, pane = grid.block_and_pane(TS)
    x_block, x_pane = grid.block_and_pane(f"greatest({TS}, {seen} + 1)")  # wm < MAX
    # every row with the watermark it saw, whether it is late, and its panes (in the prefix
    # maximum's last select: Spark analyzes each DataFrame operation as it is made)
    marked = _with_prefix_max(
        prepared,
        layout,
        f"{seen} AS {_WM}",
        f"NOT ({_cleanup_after(last_max, lateness, seen)}) AS {_LATE_ROW}",
        f"{block} AS {HB}",
        f"{pane} AS {HR}",
        f"{x_block} AS {HBX}",
        f"{x_pane} AS {HRX}",
    )
    late_row = f"{has_both} AND {_LATE_ROW}"
    # One shuffle, by key: groups, late copies and the sweep of a key stay in its partition.
    positioned = marked.where(f"{has_both} AND NOT {_LATE_ROW}")
    positioned = positioned.repartition(*keys) if keys else positioned
    # The pane of x relative to the row's block (x >= ts: the same block or a later one).
    x_rel = (
        f"(CASE WHEN {HBX} = {HB} THEN {HRX} WHEN {HBX} = {HB} + 1 THEN {HRX} + {int_sql(n)} END)"
    )
    on_time = f"{x_rel} - {int_sql(n)} < {HR}"  # a window ends after wm (null: x_rel null)
    partials = Partials.of(compiled.calls)
    groups = positioned.where(on_time).groupBy(*keys, HB, HR, HBX, HRX).agg(*partials.rows())
    partials = partials.typed(groups)
    probes = _late_copies(grid, positioned, keys, partials, x_rel, lateness) if lateness else None
    swept = sweep(grid, groups, keys, partials, probes)
    # One row per firing, its window normalized to a block and a pane: a run's on-time
    # windows, and a probe's late firing (its window already normalized). (Each window's
    # columns made in the select that makes its row: an expression built on another one
    # repeats it, and Spark analyzes every copy.)
    starts = grid.starts_between(HFIRST, f"{HNEXT} - 1")
    firings = (
        f"CASE WHEN {HIN} > 0 AND {HFIRST} < {HNEXT} THEN "
        f"transform({starts}, {_START} -> {_firing(grid, HEB, _START)}) ELSE {_NO_FIRINGS} END"
    )
    if probes is not None:
        probe = f"struct({HEB} AS {_FB}, {HER} AS {_FR}, true AS {_FLATE})"
        firings = (
            f"concat({firings}, CASE WHEN coalesce({HPROBE}, false) THEN array({probe}) "
            f"ELSE {_NO_FIRINGS} END)"
        )
    fired = swept.selectExpr("*", f"inline({firings})")
    start, end = grid.bounds(_FB, _FR)
    is_late = col(_FLATE)
    on_time_values = partials.results(lambda x: None, col)
    late_values = partials.results(col, lambda x: col(f"{x}_late")) if probes is not None else []
    values = [
        F.when(is_late, late).otherwise(now).alias(call.name) if late_values else now
        for call, now, late in zip(
            compiled.calls, on_time_values, late_values or on_time_values, strict=True
        )
    ]
    if probes is None:
        pane_index, new_window = "0", "true"
    else:
        pane_index = (
            f"CASE WHEN {_FLATE} THEN {_PANE} + CASE WHEN {HIN} > 0 THEN 1 ELSE 0 END ELSE 0 END"
        )
        new_window = f"NOT {_FLATE} OR ({_FIRST_LATE} AND {HIN} = 0)"
    timing = f"CASE WHEN {_FLATE} THEN '{LATE}' ELSE '{ON_TIME}' END"
    # the results' columns in the plan's select of its results (one select fewer), unless
    # the job's outputs read the values as columns by name
    fired_values: tuple[Column, ...] | None = tuple(values)
    if compiled.outputs is not None:
        fired, fired_values = fired.select("*", *values), None

    def rest() -> NativeRest:
        counters = marked.agg(
            *[
                F.expr(text)
                for text in (
                    "count(1) AS num_input_rows",
                    f"count(CASE WHEN {has_both} THEN 1 END) AS num_elements",
                    f"count(CASE WHEN {ARR} IS NOT NULL AND {TS} IS NULL THEN 1 END) "
                    "AS num_null_event_time",
                    f"count(CASE WHEN {ARR} IS NULL THEN 1 END) AS num_null_arrival_order",
                    f"count(CASE WHEN {late_row} THEN 1 END) AS {late_counter(layout)}",
                )
            ],
            keys_counter(layout).alias("num_keys"),
        )
        if not layout.has_late:
            return NativeRest(counters)
        wm = F.expr(f"CASE WHEN {_WM} != {int_sql(MIN_TIMESTAMP)} THEN {_WM} END")
        late = [
            marked.where(late_row).select(*layout.sql.late_branch(wm, REASON_LATE)),
            marked.where(f"{ARR} IS NOT NULL AND {TS} IS NULL").select(
                *layout.sql.late_branch(wm, REASON_NULL_EVENT_TIME)
            ),
            marked.where(f"{ARR} IS NULL").select(
                *layout.sql.late_branch(F.lit(None), REASON_NULL_ARRIVAL_ORDER)
            ),
        ]
        return NativeRest(counters, late)

    # Every output reads the rows with their prefix maximum (three shuffles), and those rows
    # are the whole input: a persisted result caches its tagged output (its outputs computed
    # in one job, the shuffles reused), not them (no shared parts).
    return NativeParts(
        fired,
        F.expr(start),
        F.expr(end),
        F.expr(new_window),
        rest,
        (F.expr(pane_index), F.expr(timing)),
        values=fired_values,
    )


def _with_prefix_max(prepared: DataFrame, layout: OutputLayout, *also: str) -> DataFrame:
    """``prepared`` with the prefix maximum of event time over earlier arrivals (``WMAX``,
    :func:`~windowing.spark.columns.watermark.add_prefix_max`, as the batch replay computes it),
    its summaries sent to key groups of the keys (``KEY_GROUP``; one without keys), and the
    SQL select items ``also`` computed from them."""
    spark = prepared.sparkSession
    groups = shuffle_partitions(spark) if layout.keys else 1
    # (+ pmod(content hash, 1), always 0: without keys the group is no constant, which
    # Spark would drop from the prefix maximum's window partition, warning that it has none)
    kg = key_group(layout.keys, groups) + F.expr(f"pmod({TB}, 1)")
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
    x_rel: str,
    lateness: int,
) -> DataFrame:
    """Probes for the late firings: each row copied into its windows that end at or before
    its watermark and are not past their cleanup time, with the running partials of the
    window's late rows in replay order (``<partial>_late``), its rank among them (``_PANE``,
    from 0) and whether it is the first (``_FIRST_LATE``)."""
    # the row's windows start at panes r - n + 1 .. r of its block; those ending at or
    # before the watermark (last pane < pane of x) start before x_rel - n + 1
    high = f"least({HR}, coalesce({x_rel} - {int_sql(grid.n)}, {HR}))"
    starts = grid.starts_of(HB, HR, high)
    windows = f"transform({starts}, {_START} -> {_firing(grid, HB, _START, late=True)})"
    copies = rows.selectExpr("*", f"inline({windows})")  # (none without late windows: null)
    _, end = grid.bounds(_FB, _FR)
    max_ts = f"coalesce(({end}) - 1, {int_sql(MAX_TIMESTAMP)})"
    copies = copies.where(_cleanup_after(max_ts, lateness, _WM))
    order = Window.partitionBy(*keys, col(_FB), col(_FR)).orderBy(col(ARR), col(TS), col(TB))
    running = order.rowsBetween(Window.unboundedPreceding, 0)
    rank = F.row_number().over(order) - F.lit(1)
    return copies.select(
        *keys,
        col(_FB).alias(HEB),
        col(_FR).alias(HER),
        *[
            c.over(running).alias(f"{x}_late")
            for c, x in zip(partials.expressions(), partials.flat, strict=True)
        ],
        rank.alias(_PANE),
        (rank == F.lit(0)).alias(_FIRST_LATE),
        F.expr(f"true AS {HPROBE}"),
    )


def _firing(grid: HoppingGrid, block: str, pane: str, late: bool = False) -> str:
    """SQL text: the window starting at ``pane`` of ``block`` (``-n < pane < 2n``)
    normalized to a block and a pane in it, and whether its firing is late: a struct to
    ``inline``."""
    b, r = grid.normalized(block, pane)
    return f"struct({b} AS {_FB}, {r} AS {_FR}, {str(late).lower()} AS {_FLATE})"
