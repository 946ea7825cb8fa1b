"""Native Spark plans: ``WindowedStream.agg`` jobs that Spark SQL computes without Python.

Where the window model's outcome is a plain function of each window's rows, Spark computes
it with its own aggregation, and the rows never reach Python. :func:`native_reason` decides
(the one place; ``explain()`` prints its answer), :func:`run_native` builds the plan.

Tumbling event-time windows or event-time sessions, replayed in event-time order (no
``arrival_order``, no ``processing_time`` column), the default trigger, no evictor, any allowed
lateness: nothing is late (the watermark stays at its start until the end of input, Flink's
batch mode), every window fires once, at the end of input, over all its rows. So::

    rows with an event time ──► tumbling: window start = ts - pmod(ts - offset, size)
                                sessions: per key in event-time order, a row more than the
                                gap after the previous one starts a session (lag, running sum)
                            ──► groupBy(keys, window).agg(the user's columns)
    rows without one        ──► the late side output (reason null_event_time) and a metric

Sessions: Flink's session of a row is ``[t, t + gap)``, and windows that overlap *or touch*
merge, so rows ``gap`` apart share a session; merged at the end of input, a key's sessions
are exactly the runs of its sorted times without a step above ``gap``.

The output is the batch replay's tagged output (``windowing.spark.output``), built with
Spark SQL, so results, late rows, metrics and ``persist()`` work as for the replay; Spark
prunes the branches a read does not need. Window bounds follow the assigner at the ends of
time (the window below ``MIN_TIMESTAMP`` has no start; an end past ``MAX_TIMESTAMP`` is
clamped, so no end). ``first`` / ``last`` / ``min_by`` / ``max_by`` pick by the replay
order (:func:`~windowing.spark.aggregates.order_key`), as the window operator does.
``tests/spark/test_agg.py`` compares every native plan with the operator on random data.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F  # noqa: N812 - the PySpark convention

from windowing.assigners.session import EventTimeSessionWindows
from windowing.assigners.tumbling import TumblingEventTimeWindows, WindowStagger
from windowing.functions.columns import AggKind
from windowing.job import Job
from windowing.spark.aggregates import AggregateCall, CompiledAggregates
from windowing.spark.batch import WindowedResult, build_layout, run_batch
from windowing.spark.inputs import TB, TS, internal_columns
from windowing.spark.output import REASON_NULL_EVENT_TIME, OutputLayout, col
from windowing.spark.plans import plan_job
from windowing.time import MAX_TIMESTAMP, MIN_TIMESTAMP
from windowing.triggers.event_time import EventTimeTrigger

__all__ = ["native_reason", "run_aggregates", "run_native"]

_WINDOW = "__pw_nw"
_FIRST = "__pw_nfirst"
_LAST = "__pw_nlast"


def native_reason(job: Job) -> str | None:
    """Why ``job`` (a ``WindowedStream.agg``) runs as a native Spark plan, in words, or
    ``None`` when the window operator runs it."""
    source, config = job.source, job.config
    assigner = config.assigner
    if source.df.isStreaming:
        return None
    if type(assigner) is TumblingEventTimeWindows:
        if assigner.stagger is not WindowStagger.ALIGNED:
            return None  # the operator's assigner draws the offset
        shape = "tumbling event-time windows: groupBy(keys, window start)"
    elif type(assigner) is EventTimeSessionWindows:
        shape = (
            "event-time sessions by gaps and islands: per key in event-time order, a row more "
            "than the gap after the previous one starts a session (lag + running sum over a "
            "window partitioned by key), then groupBy(keys, session)"
        )
    else:
        return None
    if config.trigger is not None and type(config.trigger) is not EventTimeTrigger:
        return None
    if config.evictor is not None:
        return None
    if source.arrival_order is not None or source.processing_time is not None:
        return None
    return (
        f"native Spark plan: {shape}, .agg(...); default trigger, no evictor, event-time "
        "order (nothing is late; each window fires once at the end of input); rows without "
        "event time to the late side output; Python never sees the rows"
    )


def run_aggregates(compiled: CompiledAggregates, job: Job) -> WindowedResult:
    """Run ``WindowedStream.agg`` on a static DataFrame: the native plan when
    :func:`native_reason` allows it, else the batch replay of the window operator."""
    if native_reason(job) is not None:
        return run_native(compiled, job)
    return run_batch(compiled.job, compiled.spec, compiled.schema)


def run_native(compiled: CompiledAggregates, job: Job) -> WindowedResult:
    """The native plan of ``job`` (the user's own, without the operator's argument columns)
    with the aggregates ``compiled``; see the module docstring."""
    source, config = job.source, job.config
    df = source.df
    layout = build_layout(job, None, compiled.schema, None)
    prepared = df.select(*internal_columns(df, source))
    keys = [col(k) for k in layout.keys]
    valid = prepared.where(F.col(TS).isNotNull())
    assigner = config.assigner
    if isinstance(assigner, TumblingEventTimeWindows):
        grouped, window_start, end = _tumbling(assigner, valid, keys, compiled)
    else:
        assert isinstance(assigner, EventTimeSessionWindows), "native_reason chose this plan"
        grouped, window_start, end = _sessions(assigner.gap, valid, keys, compiled)
    max_ts = F.coalesce(end - F.lit(1), F.lit(MAX_TIMESTAMP))
    results = grouped.select(
        *layout.result_branch(
            (window_start, end, max_ts), [F.col(f"`{c.name}`") for c in compiled.calls]
        )
    )
    lateness = config.allowed_lateness
    window_metrics = grouped.select(max_ts.alias("mt")).agg(
        F.count(F.lit(1)).alias("n"),
        # no cleanup timer at the end of time: such windows keep their state (rules.py)
        F.count(
            F.when(
                (F.col("mt") >= F.lit(MAX_TIMESTAMP - lateness))
                & (F.col("mt") != F.lit(MAX_TIMESTAMP)),
                1,
            )
        ).alias("left"),
    )
    branches = [
        results,
        window_metrics.select(
            *layout.metrics_branch(
                {
                    "num_windows_fired": F.col("n"),
                    "num_results": F.col("n"),
                    "num_windows_left_at_end": F.col("left"),
                }
            )
        ),
        prepared.agg(*_input_counters(layout)).select(
            *layout.metrics_branch(
                {
                    n: F.col(n)
                    for n in ("num_input_rows", "num_elements", "num_null_event_time", "num_keys")
                }
            )
        ),
    ]
    if layout.has_late:
        branches.append(
            prepared.where(F.col(TS).isNull()).select(
                *layout.late_branch(F.lit(None), REASON_NULL_EVENT_TIME)
            )
        )
    combined = _union(branches)
    plan = plan_job(job, None, native=native_reason(job))
    return WindowedResult(
        plan=plan,
        results=layout.select_results(combined),
        metrics=layout.select_metric_totals(combined),
        output=combined,
        late_output_tag=config.late_output_tag,
        late=None if config.late_output_tag is None else layout.select_late(combined),
    )


def _aggregates(compiled: CompiledAggregates) -> list[Column]:
    return [_native_column(call).alias(call.name) for call in compiled.calls]


def _tumbling(
    assigner: TumblingEventTimeWindows,
    valid: DataFrame,
    keys: list[Column],
    compiled: CompiledAggregates,
) -> tuple[DataFrame, Column, Column]:
    """Rows grouped by key and window start; the window start and end (ms, null where the
    assigner's bounds leave ``bigint``)."""
    ts = F.col(TS)
    size, offset = assigner.size, assigner.offset
    # Python's floor mod without overflow: (ts - offset) mod size from the two residues.
    d = F.pmod(F.pmod(ts, F.lit(size)) - F.lit(offset % size), F.lit(size))
    lowest = MIN_TIMESTAMP - (MIN_TIMESTAMP - offset) % size  # start of the first window
    # Grouped by the window start, the first window's (below the end of time) as MIN.
    start = F.when(ts >= F.lit(MIN_TIMESTAMP) + d, ts - d).otherwise(F.lit(MIN_TIMESTAMP))
    grouped = valid.groupBy(*keys, start.alias(_WINDOW)).agg(*_aggregates(compiled))
    w = F.col(_WINDOW)
    first_end = lowest + size
    end = (
        F.when(w == F.lit(MIN_TIMESTAMP), _long(first_end if first_end <= MAX_TIMESTAMP else None))
        .when(w > F.lit(MAX_TIMESTAMP - size), F.lit(None))
        .otherwise(w + F.lit(size))
    )
    window_start = w if lowest >= MIN_TIMESTAMP else F.when(w != F.lit(MIN_TIMESTAMP), w)
    return grouped, window_start, end


def _sessions(
    gap: int, valid: DataFrame, keys: list[Column], compiled: CompiledAggregates
) -> tuple[DataFrame, Column, Column]:
    """Sessions by gaps and islands: in event-time order per key, a row more than ``gap``
    after the previous one starts a session (Flink merges windows ``[t, t + gap)`` that
    overlap or touch); sessions grouped by key and their running number."""
    ts = F.col(TS)
    order = Window.partitionBy(*(keys or [F.lit(0)])).orderBy(ts)
    prev = F.lag(ts).over(order)
    # (a session's end past the end of time is clamped there: nothing comes after it)
    starts = F.when(
        prev.isNull() | ((prev <= F.lit(MAX_TIMESTAMP - gap)) & (ts > prev + F.lit(gap))), 1
    ).otherwise(0)
    numbered = valid.withColumn(_WINDOW, starts).withColumn(
        _WINDOW, F.sum(_WINDOW).over(order.rowsBetween(Window.unboundedPreceding, 0))
    )
    grouped = numbered.groupBy(*keys, _WINDOW).agg(
        *_aggregates(compiled), F.min(ts).alias(_FIRST), F.max(ts).alias(_LAST)
    )
    last = F.col(_LAST)
    end = F.when(last > F.lit(MAX_TIMESTAMP - gap), F.lit(None)).otherwise(last + F.lit(gap))
    return grouped, F.col(_FIRST), end


def _long(value: int | None) -> Column:
    return F.lit(value).cast("long")


def _union(frames: list[DataFrame]) -> DataFrame:
    out = frames[0]
    for f in frames[1:]:
        out = out.union(f)
    return out


def _input_counters(layout: OutputLayout) -> list[Column]:
    """Counters over all input rows: rows, elements (with an event time), rows without one,
    distinct keys (1 for ``window_all``)."""
    n = F.count(F.lit(1))
    keys = (
        F.count_distinct(F.struct(*[col(k) for k in layout.keys]))
        if layout.keys
        else F.when(n > 0, F.lit(1)).otherwise(F.lit(0))
    )
    return [
        n.alias("num_input_rows"),
        F.count(F.col(TS)).alias("num_elements"),
        (n - F.count(F.col(TS))).alias("num_null_event_time"),
        keys.alias("num_keys"),
    ]


def _native_column(call: AggregateCall) -> Column:
    """The user's aggregate column, with the picks (``first`` / ``last`` / ``min_by`` /
    ``max_by``) made deterministic by the replay order (event time, content hash)."""
    kind = call.kind
    if kind is None or not kind.ordered:
        return call.column
    x = call.args[0]
    assert x is not None
    order = F.struct(F.col(TS), F.col(TB))
    if kind in (AggKind.FIRST, AggKind.LAST):
        ignore_nulls = len(call.literals) > 1 and bool(call.literals[1])
        key = F.when(x.isNotNull(), order) if ignore_nulls else order
        return F.min_by(x, key) if kind is AggKind.FIRST else F.max_by(x, key)
    o = call.args[1]
    assert o is not None
    if kind is AggKind.MIN_BY:
        return F.min_by(x, F.when(o.isNotNull(), F.struct(o, F.col(TS), F.col(TB))))
    # the largest ordering value; on a tie the row first in replay order
    later = F.struct(o, F.bitwise_not(F.col(TS)), F.bitwise_not(F.col(TB)))
    return F.max_by(x, F.when(o.isNotNull(), later))
