"""Native Spark plans: ``WindowedStream.agg`` jobs that Spark SQL computes without Python.

Where the window model's outcome is a plain function of each window's rows, Spark computes
it with its own aggregation, and the rows never reach Python. The planner
(:mod:`windowing.spark.planning`) decides the route, once; :func:`run_native` builds the
plan of the route it was given.

Tumbling event-time windows or event-time sessions, replayed in event-time order (no
``arrival_order``, no ``processing_time`` column), the default trigger, no evictor, any allowed
lateness: nothing is late (the watermark stays at its start until the end of input, Flink's
batch mode), every window fires once, at the end of input, over all its rows. So::

    rows with an event time ──► tumbling: window start = ts - pmod(ts - offset, size)
                                sessions: per key in event-time order, a row more than the
                                gap after the previous one starts a session (lag, running sum)
                            ──► groupBy(keys, window).agg(the user's columns)
    rows without one        ──► the late side output (reason null_event_time) and a metric

Tumbling windows in arrival order (``arrival_order``; the watermark strategy's delay)::

    rows ──► per window, its arrival cutoffs: the earliest arrival of a row with event time
             >= end + delay (fire) and >= end + delay + lateness (late), from one small
             aggregate (WindowCutoffs), broadcast and joined by window
         ──► arrived after the late cutoff: late, never added; the late side output with the
             exact watermark it saw (WindowCutoffs.prefix_max, for those rows only)
         ──► no lateness: groupBy(keys, window) of the rows added (they all came before the
             watermark passed the window's end: one firing each)
             lateness: the aggregate state of the window's on-time rows (arrived no later than
             the fire cutoff) and of each later row, merged in replay order (arrival, event
             time, content hash) by a running window function over those groups: the
             on-time firing, then one late firing per row (windowing.spark.native.firings)

Tumbling windows with a count trigger or a count evictor, in either order (:func:`count_parts`):
the same rows and late rows, each window's firings as runs of ranks in its sorted rows
(:mod:`windowing.spark.native.counts`).

KIP-450 sliding windows (``SlidingDistinctAssigner``) in event-time order: their own module,
:mod:`windowing.spark.native.sliding` (range frames over each key's distinct record times).
Hopping event-time windows: their own modules, :mod:`windowing.spark.native.hopping`
(event-time order: panes and a sweep over each key's blocks of panes) and
:mod:`windowing.spark.native.hopping_arrival` (arrival order: the watermark each row saw,
from the batch replay's prefix maximum, :func:`~windowing.spark.columns.watermark.add_prefix_max`).

Sessions: Flink's session of a row is ``[t, t + gap)``, and windows that overlap *or touch*
merge, so rows ``gap`` apart share a session; merged at the end of input, a key's sessions
are exactly the runs of its sorted times without a step above ``gap``. With aggregates that
merge from parts (counts, sums, ``min`` / ``max``, ...), the runs are found over each key's
buckets of ``gap`` ms (aggregated by hash first) instead of its rows.

The output is the batch replay's tagged output (``windowing.spark.columns.output``), built with
Spark SQL, so results, late rows, metrics and ``persist()`` work as for the replay; Spark
prunes the branches a read does not need. Window bounds follow the assigner at the ends of
time (the window below ``MIN_TIMESTAMP`` has no start; an end past ``MAX_TIMESTAMP`` is
clamped, so no end). ``first`` / ``last`` / ``min_by`` / ``max_by`` pick by the replay
order (:func:`~windowing.spark.columns.aggregates.order_key`), as the window operator does.
``tests/spark/test_agg.py`` compares every native plan with the operator on random data.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F  # noqa: N812 - the PySpark convention

from windowing.assigners.hopping import HoppingEventTimeWindows
from windowing.assigners.session import EventTimeSessionWindows
from windowing.assigners.tumbling import TumblingEventTimeWindows, TumblingProcessingTimeWindows
from windowing.job import Job
from windowing.records import Timing
from windowing.spark.batch.replay_plan import (
    OtherOutputs,
    OutputBranches,
    WindowedResult,
    build_layout,
)
from windowing.spark.columns.aggregates import AggregateCall, CompiledAggregates
from windowing.spark.columns.inputs import (
    ARR,
    TB,
    TS,
    arrival_fields,
    content_hash,
    internal_columns,
)
from windowing.spark.columns.output import (
    REASON_LATE,
    REASON_NULL_ARRIVAL_ORDER,
    REASON_NULL_EVENT_TIME,
    OutputLayout,
    col,
)
from windowing.spark.columns.sql import quoted
from windowing.spark.columns.units import floor_div_sql
from windowing.spark.columns.watermark import (
    WindowCutoffs,
    few_rows_enough,
    one_task_enough,
    watermark_of,
)
from windowing.spark.native.continuous import FIRST as CONTINUOUS_FIRST
from windowing.spark.native.continuous import (
    continuous_firings,
    continuous_interval,
    describe_continuous,
    planned,
)
from windowing.spark.native.counts import CountFirings
from windowing.spark.native.firings import running_aggregate
from windowing.spark.native.hopping import HoppingGrid
from windowing.spark.native.hopping_arrival import arrival_parts
from windowing.spark.native.parts import (
    LATE,
    ON_TIME,
    ByEventTime,
    NativeParts,
    NativeRest,
    aggregate_columns,
    firings_at_min,
    first_window_end,
    grouped_aggregates,
    has_min_window,
    input_counters,
    keys_counter,
    late_counter,
    left_at_end,
    long_literal,
    max_timestamp_of,
    mergeable,
)
from windowing.time import MAX_TIMESTAMP, MIN_TIMESTAMP

if TYPE_CHECKING:
    from windowing.spark.planning import SparkPlan

__all__ = [
    "PartsBuilder",
    "TumblingBounds",
    "arrival_order_parts",
    "count_parts",
    "describe_sessions",
    "event_time_parts",
    "hopping_arrival_parts",
    "run_native",
]

_WINDOW = "__pw_nw"
_WR = "__pw_nwr"  # a hopping window's start as a pane of its row's block (hopping_windows)
_MT = "__pw_nmt"
_FIRST = "__pw_nfirst"
_LAST = "__pw_nlast"
_BUCKET = "__pw_nbucket"  # a session bucket: floor(event time / gap)
_PANE = "__pw_npane"
_TIMING = "__pw_ntiming"
_CUT = "__pw_ncut_"  # the arrival cutoffs' columns (arrival order)
_PMAX = "__pw_npmax"
_REASON = "__pw_nreason"
_LATE_KEY = "__pw_nlate_key"
_FIRST_FIRING = "__pw_nfirst_firing"


#: A native route's pieces of the plan: ``(job, prepared rows, key columns, aggregates,
#: layout) -> NativeParts``.
PartsBuilder = Callable[
    [Job, DataFrame, list[Column], CompiledAggregates, OutputLayout], NativeParts
]


def run_native(
    plan: SparkPlan, compiled: CompiledAggregates, job: Job, parts_of: PartsBuilder
) -> WindowedResult:
    """The native plan of ``job`` (the user's own, without the operator's argument columns)
    with the aggregates ``compiled``: the route's pieces (``parts_of``: tumbling windows or
    sessions, hopping windows, each in its order of rows) and the tail every route shares
    (results, metrics, late rows); see the module docstring."""
    source = job.source
    df = source.df
    layout = build_layout(job, None, compiled.schema, None)
    prepared = df.select(*internal_columns(df, source))
    keys = [col(k) for k in layout.keys]
    parts = parts_of(job, prepared, keys, compiled, layout)
    lateness = job.config.allowed_lateness
    max_ts = max_timestamp_of(parts.end)
    values = compiled.values() if parts.values is None else list(parts.values)
    results = parts.results.select(
        *layout.sql.result_branch((parts.window_start, parts.end, max_ts), values, parts.pane)
    )

    def others() -> OtherOutputs:
        rest = parts.rest()
        # the firings and the windows left at the end, in one aggregate over the results
        fired = rest.fired
        if fired is None:
            left = left_at_end(max_ts, lateness)
            fired = parts.results.agg(
                F.count(F.lit(1)).alias("n"),
                F.count(F.when(parts.first_firing & left, 1)).alias("left"),
            )
        counted = {"num_windows_fired": "n", "num_results": "n", "num_windows_left_at_end": "left"}
        metrics = (
            fired.select(*layout.sql.metrics_branch(counted)),
            rest.counters.select(*layout.sql.metrics_branch({n: n for n in rest.counters.columns})),
        )
        # cached with the results: the counters, the firings counted apart, the late parts
        fired_part = () if rest.fired is None else (rest.fired,)
        return OtherOutputs(metrics, tuple(rest.late), (rest.counters, *fired_part, *rest.shared))

    # with shared parts, they are cached (each output then computes only its own part) and
    # each output reads its own branches; else the tagged output, built when another output
    # is read or the result persisted (which caches it)
    shared = (*parts.shared, parts.results) if parts.shared else ()
    return WindowedResult.of_branches(OutputBranches(results, others), layout, plan, shared)


def event_time_parts(
    job: Job,
    prepared: DataFrame,
    keys: list[Column],
    compiled: CompiledAggregates,
    layout: OutputLayout,
) -> NativeParts:
    """Tumbling windows or sessions replayed in event-time order, and hopping windows with
    count or continuous triggers (each row copied into its windows); see the module
    docstring.

    The window ending at MIN_TIMESTAMP + 1 (tumbling; a session of gap 1 at MIN) is behind
    the first watermark (MIN): without lateness its rows are late; with lateness each row
    fires it at once (EventTimeTrigger), with the rows so far, and it never fires again (a
    tumbling window; a session unless a row at MIN + 1 merges it into a later one)."""
    assigner = job.config.assigner
    lateness = job.config.allowed_lateness
    assert isinstance(
        assigner, TumblingEventTimeWindows | EventTimeSessionWindows | HoppingEventTimeWindows
    )
    ts = F.col(TS)
    min_window = has_min_window(assigner)
    at_min = ts == F.lit(MIN_TIMESTAMP)
    is_late = at_min if min_window and lateness == 0 else F.lit(False)
    valid = prepared.where(ts.isNotNull() & ~is_late)
    extra: list[DataFrame] = []
    if min_window and lateness > 0:
        start: int | None = MIN_TIMESTAMP
        if isinstance(assigner, TumblingEventTimeWindows):
            lowest = first_window_end(assigner) - assigner.size
            start = lowest if lowest >= MIN_TIMESTAMP else None
        extra = firings_at_min(valid.where(at_min), keys, compiled, layout, start)
    pane = fired = None
    first = F.lit(True)
    if isinstance(assigner, TumblingEventTimeWindows | HoppingEventTimeWindows):
        hopping = isinstance(assigner, HoppingEventTimeWindows)
        if hopping:  # (count and continuous triggers) each row once per window, as tumbling
            rows, window_start, end = hopping_windows(HoppingGrid.of(assigner), valid)
            window = F.col(_WINDOW)
        else:
            bounds = TumblingBounds(assigner)
            rows = valid.where(~at_min) if min_window else valid
            window, window_start, end = bounds.start, bounds.window_start, bounds.end
        counts = CountFirings.of(job.config.trigger, job.config.evictor)
        interval = continuous_interval(job.config.trigger, job.config.evictor)
        if interval is not None:  # (the planner leaves a window at MIN to the operator)
            earliest = [F.min(ts).alias(CONTINUOUS_FIRST)]
            grouped = grouped_aggregates(rows, keys, window, _WINDOW, compiled, earliest)
            max_ts = max_timestamp_of(end)
            grouped, first, pane = continuous_firings(grouped, interval, max_ts)
        elif counts is None:
            grouped = grouped_aggregates(rows, keys, window, _WINDOW, compiled)
        else:  # (the planner leaves a window at MIN to the operator)
            counted = counts.firings(
                rows if hopping else rows.withColumn(_WINDOW, window),
                keys,
                _WINDOW,
                [ts, F.col(TB)],
                compiled,
                left_at_end(max_timestamp_of(end), lateness, at_max=counts.no_timer),
            )
            grouped, pane, fired = counted.results, counted.pane, counted.fired
    else:
        grouped, window_start, end = _sessions(assigner.gap, valid, keys, compiled)
        if min_window:
            grouped = grouped.where(F.col(_LAST) != F.lit(MIN_TIMESTAMP))
    late_name = late_counter(layout)
    counters = prepared.agg(*input_counters(layout), F.count(F.when(is_late, 1)).alias(late_name))
    late = extra + (
        [
            prepared.where(ts.isNull()).select(
                *layout.sql.late_branch(F.lit(None), REASON_NULL_EVENT_TIME)
            ),
            prepared.where(is_late).select(*layout.sql.late_branch(F.lit(None), REASON_LATE)),
        ]
        if layout.has_late
        else []
    )
    parts = NativeParts(
        grouped, window_start, end, first, lambda: NativeRest(counters, late, fired)
    )
    return parts if pane is None else replace(parts, pane=pane)


def hopping_windows(grid: HoppingGrid, rows: DataFrame) -> tuple[DataFrame, Column, Column]:
    """``rows`` (each with an event time) once per hopping window holding it, the window as
    ``(block, pane)`` of the pane grid in the column ``__pw_nw`` (nothing overflows at the
    ends of time), and the window's start and end over it (null past the ends of time)."""
    block, pane = grid.block_and_pane(TS)
    every = rows.select("*", F.expr(f"explode({grid.starts_of(block, pane)}) AS {_WR}"))
    b, r = grid.normalized(block, _WR)
    windowed = every.withColumn(_WINDOW, F.expr(f"named_struct('b', {b}, 'r', {r})")).drop(_WR)
    start, end = grid.bounds(f"{_WINDOW}.b", f"{_WINDOW}.r")
    return windowed, F.expr(start), F.expr(end)


def describe_hopping_firings(
    job: Job, counts: CountFirings | None, interval: int | None, windowable: bool
) -> str | None:
    """The native plan of the job's hopping windows with count firings ``counts`` or a
    ``ContinuousEventTimeTrigger`` of ``interval``, in words, or ``None`` when the window
    operator runs them: in arrival order (late rows would need every overlapping window's
    cutoffs), with gaps between windows (rows in none), with a window ending at
    ``MIN_TIMESTAMP + 1`` (behind the first watermark: it fires per row), or where the
    tumbling windows' plans would not take the firings (``windowable``: the aggregates
    have a window-function form)."""
    assigner = job.config.assigner
    assert isinstance(assigner, HoppingEventTimeWindows)
    grid = HoppingGrid.of(assigner)
    if job.source.arrival_order is not None or grid.size > MAX_TIMESTAMP:
        return None  # (a size past a bigint: the pane grid's arithmetic is in bigint)
    if grid.slide > grid.size or grid.min_window_start is not None:
        return None
    if counts is not None:
        if not counts.native(windowable, arrival=False):
            return None
        firings = counts.describe()
    elif interval is not None and planned(grid.size, interval):
        firings = describe_continuous(interval)
    else:
        return None
    windows = -(-grid.size // grid.slide)
    return (
        f"hopping event-time windows with {firings}; each row first copied into the windows "
        f"holding it (up to {windows}, as Spark's own hopping windows), event-time order"
    )


def count_parts(
    job: Job,
    prepared: DataFrame,
    keys: list[Column],
    compiled: CompiledAggregates,
    layout: OutputLayout,
) -> NativeParts:
    """Tumbling windows with a count trigger or a count evictor
    (:mod:`windowing.spark.native.counts`), in event-time or arrival order."""
    parts = arrival_order_parts if job.source.arrival_order is not None else event_time_parts
    return parts(job, prepared, keys, compiled, layout)


def hopping_arrival_parts(
    job: Job,
    prepared: DataFrame,
    keys: list[Column],
    compiled: CompiledAggregates,
    layout: OutputLayout,
) -> NativeParts:
    assigner = job.config.assigner
    assert isinstance(assigner, HoppingEventTimeWindows)
    return arrival_parts(HoppingGrid.of(assigner), job, prepared, keys, compiled, layout)


class TumblingBounds:
    """A tumbling window as Spark columns: ``start`` groups rows (the first window's, below
    the end of time, as ``MIN_TIMESTAMP``); ``window_start`` / ``end`` read the grouping
    column ``column`` (``__pw_nw``)."""

    column = _WINDOW

    def __init__(self, assigner: TumblingEventTimeWindows | TumblingProcessingTimeWindows) -> None:
        ts = F.col(TS)
        size, offset = assigner.size, assigner.offset
        # Python's floor mod without overflow: (ts - offset) mod size from the two residues.
        d = F.pmod(F.pmod(ts, F.lit(size)) - F.lit(offset % size), F.lit(size))
        lowest = MIN_TIMESTAMP - (MIN_TIMESTAMP - offset) % size  # the first window's start
        self.start = F.when(ts >= F.lit(MIN_TIMESTAMP) + d, ts - d).otherwise(F.lit(MIN_TIMESTAMP))
        w = F.col(_WINDOW)
        first_end = self.first_end = lowest + size
        self.end = (
            F.when(
                w == F.lit(MIN_TIMESTAMP),
                long_literal(first_end if first_end <= MAX_TIMESTAMP else None),
            )
            .when(w > F.lit(MAX_TIMESTAMP - size), F.lit(None))
            .otherwise(w + F.lit(size))
        )
        self.window_start = w if lowest >= MIN_TIMESTAMP else F.when(w != F.lit(MIN_TIMESTAMP), w)
        self._size, self._offset = size, offset

    def start_of(self, time_sql: str) -> Column:
        """The grouping value of the window holding the event time ``time_sql`` (SQL text of
        a ``bigint`` of milliseconds: a quoted column, or an expression over the input's),
        as ``start`` (null for null; one call to the JVM)."""
        size, residue = self._size, self._offset % self._size
        t = f"({time_sql})"
        d = f"pmod(pmod({t}, {size}L) - {residue}L, {size}L)"
        return F.expr(
            f"CASE WHEN {t} >= {MIN_TIMESTAMP}L + {d} THEN {t} - {d} "
            f"WHEN {t} IS NOT NULL THEN {MIN_TIMESTAMP}L END"
        )


def arrival_order_parts(
    job: Job,
    prepared: DataFrame,
    keys: list[Column],
    compiled: CompiledAggregates,
    layout: OutputLayout,
) -> NativeParts:
    """Tumbling windows replayed in arrival order; see the module docstring. Whether the
    watermark had passed a window's end (or its cleanup time) when a row arrived comes from
    the window's arrival cutoffs (:class:`~windowing.spark.columns.watermark.WindowCutoffs`), joined
    by window from a broadcast table; only the late rows get their exact watermark."""
    assigner = job.config.assigner
    assert isinstance(assigner, TumblingEventTimeWindows)
    source = job.source
    lateness = job.config.allowed_lateness
    delay = source.watermark.delay
    bounds = TumblingBounds(assigner)
    arrival, ts = F.col(ARR), F.col(TS)
    has_arrival, has_time = arrival.isNotNull(), ts.isNotNull()
    elements = prepared.where(has_arrival & has_time)
    cutoffs = WindowCutoffs(
        elements,
        TS,
        ARR,
        bounds.start_of,
        fire_shift=delay,
        late_shift=lateness + delay,
        one_task=one_task_enough(prepared),
        few_rows=few_rows_enough(prepared),
    )
    max_ts = max_timestamp_of(bounds.end)
    # The window ending at MIN + 1 (max timestamp MIN) is behind the first watermark: its
    # end has passed for every row, and without lateness it is past its cleanup time.
    at_min = f"{_MT} = {MIN_TIMESTAMP}L"

    def behind(cutoff: str) -> str:
        return f"({_CUT}{cutoff} IS NOT NULL AND {ARR} > {_CUT}{cutoff})"

    late = F.expr(f"({at_min}) OR {behind('late')}" if lateness == 0 else behind("late"))
    table = F.broadcast(cutoffs.table(_CUT))
    # every row with its window (null without an arrival order), the window's cutoffs and
    # max timestamp: one plan for the results, the counters and the late rows (each
    # DataFrame operation costs Spark an analysis when the job is built)
    every = (
        prepared.withColumn(_WINDOW, F.when(has_arrival, bounds.start_of(quoted(TS))))
        .join(table, F.col(_WINDOW) == F.col(_CUT + "w"), "left")
        .withColumn(_MT, max_ts)
    )
    added = every.where(has_arrival & has_time & ~late)
    pane = (F.lit(0), F.lit(ON_TIME))
    counts = CountFirings.of(job.config.trigger, job.config.evictor)
    fired = None
    if counts is not None:
        # a count trigger's firings in arrival order: LATE once the watermark had passed the
        # window's end when the firing row came (the planner leaves a window at MIN out)
        early = F.expr(f"NOT {behind('fire')}")
        counted = counts.firings(
            added,
            keys,
            _WINDOW,
            [*arrival_fields(len(source.arrival_columns)), ts, F.col(TB)],
            compiled,
            left_at_end(max_timestamp_of(bounds.end), lateness, at_max=counts.no_timer),
            len(source.arrival_columns),
            F.when(early, F.lit(Timing.EARLY.name)).otherwise(F.lit(LATE)),
        )
        results, pane, fired, first = counted.results, counted.pane, counted.fired, F.lit(True)
    elif lateness == 0:
        # Without lateness a window's contents are the rows it had when the watermark passed
        # its end: one firing each.
        arrival = len(source.arrival_columns)
        results = added.groupBy(*keys, _WINDOW).agg(*aggregate_columns(compiled, arrival=arrival))
        first = F.lit(True)
    else:
        on_time = F.expr(f"NOT (({at_min}) OR {behind('fire')})")
        results = _with_late_firings(
            added, keys, compiled, on_time, prepared, len(source.arrival_columns)
        )
        pane = (F.col(_PANE), F.col(_TIMING))
        first = F.col(_FIRST_FIRING)  # the windows with contents: one row each

    def rest() -> NativeRest:
        # the counters in one aggregate, over every row
        arrived, timed = f"{ARR} IS NOT NULL", f"{TS} IS NOT NULL"
        input_counts = every.agg(
            F.expr("count(1) AS num_input_rows"),
            F.expr(f"count(IF({arrived} AND {timed}, 1, NULL)) AS num_elements"),
            F.expr(f"count(IF({arrived} AND NOT {timed}, 1, NULL)) AS num_null_event_time"),
            F.expr(f"count(IF(NOT {arrived}, 1, NULL)) AS num_null_arrival_order"),
            keys_counter(layout).alias("num_keys"),
            F.count(F.when(has_arrival & has_time & late, 1)).alias(late_counter(layout)),
        )
        if not layout.has_late:
            return NativeRest(input_counts, fired=fired)
        late_rows, candidates = _late_rows(every, cutoffs, layout, lateness, delay)
        null_arrival = candidates.where(F.col(ARR).isNull()).select(
            *layout.sql.late_branch(F.lit(None), REASON_NULL_ARRIVAL_ORDER)
        )
        # the candidates are read thrice: their windows, their rows, no arrival
        return NativeRest(input_counts, (late_rows, null_arrival), fired, (candidates,))

    return NativeParts(
        results, bounds.window_start, bounds.end, first, rest, pane, (cutoffs.shared,)
    )


def _late_rows(
    every: DataFrame,
    cutoffs: WindowCutoffs,
    layout: OutputLayout,
    lateness: int,
    delay: int,
) -> tuple[DataFrame, DataFrame]:
    """The late side output of rows with an arrival order: rows past their window's cleanup
    time and rows without event time, with the exact watermark they saw; and the rows of the
    late side output before their watermarks, those without an arrival order too (what a
    persisted result keeps). The late rows come from
    ``every`` (the input rows joined with the broadcast cutoff table by window, in
    :func:`arrival_order_parts`); their watermarks from
    :meth:`WindowCutoffs.prefix_max`, with the windows' arrival runs broadcast as one row."""
    arrival, ts = F.col(ARR), F.col(TS)
    behind = f"({_CUT}late IS NOT NULL AND {ARR} > {_CUT}late)"
    at_min = f"{_MT} = {MIN_TIMESTAMP}L OR " if lateness == 0 else ""
    late = F.expr(f"{TS} IS NOT NULL AND ({at_min}{behind})")
    reason = F.expr(f"IF({TS} IS NULL, '{REASON_NULL_EVENT_TIME}', '{REASON_LATE}') AS {_REASON}")
    inputs = [col(c) for c in layout.input_schema.names]
    candidates = every.where(arrival.isNull() | late | ts.isNull()).select(*inputs, arrival, reason)
    runs = F.broadcast(cutoffs.runs(_CUT))
    queries = candidates.where(arrival.isNotNull()).crossJoin(runs)
    seen = cutoffs.prefix_max(queries, _CUT + "r", _CUT + "rg", _PMAX)
    watermark = watermark_of(_PMAX, delay)
    late = seen.select(
        *layout.sql.late_branch(
            F.when(watermark != F.lit(MIN_TIMESTAMP), watermark), F.col(_REASON)
        )
    )
    return late, candidates


def _with_late_firings(
    added: DataFrame,
    keys: list[Column],
    compiled: CompiledAggregates,
    on_time: Column,
    prepared: DataFrame,
    arrival: int,
) -> DataFrame:
    """With allowed lateness: per window, the rows added before the watermark passed its
    end (``on_time``) fire once together, and each row added after that fires with
    everything so far: the states of a window's on-time rows and of each late row, merged
    in replay order (:mod:`windowing.spark.native.firings`). Shuffled by window first, so that the
    grouping by late row and the running merge need no other shuffle. Each firing's pane
    (``__pw_npane``, ``__pw_ntiming``; Spark prunes them without pane info): numbered in
    replay order, the on-time firing ``ON_TIME`` (it comes first: the watermark never goes
    back), every later one ``LATE`` (a window's first row already behind the watermark
    fires ``LATE`` too)."""
    # the picks' order (first, last, ...); ``arrival``: the arrival-order columns
    order = [F.col(TS), *arrival_fields(arrival), F.col(TB)]
    # a late row's replay-order key; its content hash computed for late rows only (= TB),
    # then a row id: identical late rows (same arrival, event time and content) fire once
    # each, as in the replay (which of them comes first changes nothing)
    late_key = F.when(
        ~on_time,
        F.struct(F.col(ARR), F.col(TS), content_hash(prepared), F.monotonically_increasing_id()),
    )
    runs = []
    for call in compiled.calls:
        args = [a for a in call.args if a is not None]
        types = [f.dataType for f in prepared.select(*args).schema.fields] if args else []
        runs.append(running_aggregate(call, order, types))
    states = [f"__pw_ns{i}" for i in range(len(runs))]
    grouped = (
        added.withColumn(_LATE_KEY, late_key)  # before the shuffle: it ships no row columns
        .repartition(*keys, F.col(_WINDOW))
        .groupBy(*keys, _WINDOW, _LATE_KEY)
        .agg(*[r.state.alias(s) for r, s in zip(runs, states, strict=True)])
    )
    by_window = Window.partitionBy(*keys, F.col(_WINDOW)).orderBy(
        F.col(_LATE_KEY).asc_nulls_first()
    )
    so_far = by_window.rowsBetween(Window.unboundedPreceding, 0)
    firing = F.row_number().over(by_window)
    timing = F.when(F.col(_LATE_KEY).isNull(), F.lit(ON_TIME)).otherwise(F.lit(LATE))
    return grouped.select(
        *keys,
        _WINDOW,
        *[
            r.result(r.merge(F.col(s), so_far)).alias(call.name)
            for r, s, call in zip(runs, states, compiled.calls, strict=True)
        ],
        (firing == 1).alias(_FIRST_FIRING),
        (firing - 1).alias(_PANE),
        timing.alias(_TIMING),
    )


def _sessions(
    gap: int, valid: DataFrame, keys: list[Column], compiled: CompiledAggregates
) -> tuple[DataFrame, Column, Column]:
    """Sessions by gaps and islands: in event-time order per key, a row more than ``gap``
    after the previous one starts a session (Flink merges windows ``[t, t + gap)`` that
    overlap or touch); sessions grouped by key and their running number. When every
    aggregate merges from partial ones (:func:`~windowing.spark.native.parts.mergeable`),
    the islands are found over buckets of rows instead (:func:`_bucketed_sessions`)."""
    merged = mergeable(compiled.calls)
    if merged is not None:
        return _bucketed_sessions(gap, valid, keys, compiled, merged)
    ts = F.col(TS)
    order = Window.partitionBy(*(keys or [F.lit(0)])).orderBy(ts)
    numbered = valid.withColumn(_WINDOW, _starts_session(F.lag(ts).over(order), ts, gap))
    numbered = numbered.withColumn(
        _WINDOW, F.sum(_WINDOW).over(order.rowsBetween(Window.unboundedPreceding, 0))
    )
    extra = [F.min(ts).alias(_FIRST), F.max(ts).alias(_LAST)]
    grouped = grouped_aggregates(
        numbered, keys, F.col(_WINDOW), _WINDOW, compiled, extra, by_keys=True
    )
    return grouped, F.col(_FIRST), _session_end(gap)


def _starts_session(prev: Column, first: Column, gap: int) -> Column:
    """1 where a key's rows from ``first`` on start a session (more than ``gap`` after the
    previous row, ``prev``; none before), else 0. A session's end past the end of time is
    clamped there: nothing comes after it."""
    starts = prev.isNull() | ((prev <= F.lit(MAX_TIMESTAMP - gap)) & (first > prev + F.lit(gap)))
    return F.when(starts, 1).otherwise(0)


def _session_end(gap: int) -> Column:
    last = F.col(_LAST)
    return F.when(last > F.lit(MAX_TIMESTAMP - gap), F.lit(None)).otherwise(last + F.lit(gap))


def describe_sessions(calls: Sequence[AggregateCall]) -> str:
    """The plan of :func:`_sessions` for the aggregates ``calls``, in words."""
    if mergeable(calls) is None:
        return (
            "event-time sessions by gaps and islands: per key in event-time order, a row more "
            "than the gap after the previous one starts a session (lag + running sum over a "
            "window partitioned by key), then groupBy(keys, session)"
        )
    return (
        "event-time sessions of aggregates that merge: groupBy(keys, event time div gap) "
        "(partial aggregates before the shuffle), per key a bucket more than the gap after "
        "the previous one starts a session (lag + running sum over the buckets), then the "
        "buckets' parts merged per session"
    )


def _bucketed_sessions(
    gap: int,
    valid: DataFrame,
    keys: list[Column],
    compiled: CompiledAggregates,
    merged: list[ByEventTime],
) -> tuple[DataFrame, Column, Column]:
    """Sessions of aggregates that merge: the rows of a key within one bucket of ``gap``
    ms (``[b * gap, (b + 1) * gap)``) are less than ``gap`` apart, so they share a session.
    Spark aggregates them per (key, bucket) by hash, partially before the shuffle (the
    earliest and latest event time, and each aggregate's parts); then, per key in bucket
    order, a bucket whose earliest row is more than ``gap`` after the previous bucket's
    latest starts a session (``lag``, a running sum over buckets, not rows), and the parts
    merge per session. Spark's own ``session_window`` merges each partition's rows before
    its shuffle too."""
    ts = F.col(TS)
    bucket = F.expr(floor_div_sql(TS, gap)) if gap > 1 else ts
    parts = [[f"__pw_sp{j}_{i}" for i in range(len(m.rows))] for j, m in enumerate(merged)]
    per_bucket = valid.groupBy(*keys, bucket.alias(_BUCKET)).agg(
        *[
            c.alias(n)
            for m, names in zip(merged, parts, strict=True)
            for c, n in zip(m.rows, names, strict=True)
        ],
        F.min(ts).alias(_FIRST),
        F.max(ts).alias(_LAST),
    )
    order = Window.partitionBy(*(keys or [F.lit(0)])).orderBy(F.col(_BUCKET))
    starts = _starts_session(F.lag(F.col(_LAST)).over(order), F.col(_FIRST), gap)
    numbered = per_bucket.withColumn(_WINDOW, starts)
    numbered = numbered.withColumn(
        _WINDOW, F.sum(_WINDOW).over(order.rowsBetween(Window.unboundedPreceding, 0))
    )
    grouped = numbered.groupBy(*keys, F.col(_WINDOW)).agg(
        *[
            m.merge([F.col(n) for n in names]).alias(call.name)
            for m, names, call in zip(merged, parts, compiled.calls, strict=True)
        ],
        F.min(_FIRST).alias(_FIRST),
        F.max(_LAST).alias(_LAST),
    )
    return grouped, F.col(_FIRST), _session_end(gap)
