"""The interval join in batch (``IntervalJoined.process`` on static DataFrames).

A batch without an arrival order has no watermark before the end of input, so nothing is
late and the join is every pair of equal keys within the bounds: Spark's equi-join on the
keys and time buckets as wide as the bounds, filtered exactly, then the function on each pair
(``mapInArrow``). With an arrival order, the tagged union of both inputs
(:func:`~windowing.spark.joins.tagged_union`) is replayed per key by
:class:`~windowing.interval_join.IntervalJoinOperator`, Flink's operator (buffers per side,
cleanup on the watermark, late rows to the late outputs), with the watermark a streaming run
would have seen: the smaller of the two inputs'.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F  # noqa: N812 - the PySpark convention
from pyspark.sql.pandas.types import to_arrow_type
from pyspark.sql.types import LongType, StructField, StructType, TimestampType

from windowing.functions.joins import LEFT, RIGHT, SIDE
from windowing.job import InputWatermarks
from windowing.records import OutputTag
from windowing.spark.batch.replay_plan import arrival_watermark, streams_record_batches
from windowing.spark.columns.inputs import TB as _TB
from windowing.spark.columns.inputs import WMAX as _WMAX
from windowing.spark.columns.inputs import internal_columns, replay_order, time_millis
from windowing.spark.columns.keys import KEY_GROUP, key_group
from windowing.spark.columns.output import (
    LATE_COLUMNS,
    REASON_NULL_EVENT_TIME,
    col,
    instant_time,
)
from windowing.spark.columns.schema import arrow_to_python
from windowing.spark.columns.side_outputs import no_side_output
from windowing.spark.interval_join.output import (
    METRIC_NAMES,
    IntervalJoinLayout,
    KeyRun,
    PairOutputs,
)
from windowing.spark.jobs import shuffle_partitions
from windowing.spark.joins import UNION_EVENT_TIME, TaggedUnion
from windowing.time import instant_text

__all__ = ["IntervalJoinResult", "run_batch"]

_MT = "__pw_mt"  # a pair's result time (ms)
_PAIR_L, _PAIR_R, _PAIR_LT, _PAIR_RT = "__pw_l", "__pw_r", "__pw_lt", "__pw_rt"
_BUCKET = "__pw_bucket"


@dataclass(frozen=True, eq=False)
class IntervalJoinResult:
    """The outcome of an interval join (``IntervalJoined.process``).

    Its DataFrames are lazy; with an arrival order they are filters of one replay output,
    which :meth:`persist` (or ``with result:``) computes once for all of them.

    Attributes
    ----------
    results
        The key column(s) (named as the left input's), the output's columns and
        ``max_timestamp``, the larger of the pair's event times (``timestamp``, or
        ``bigint`` in the unit of the inputs' integral event times).
    metrics
        One row of counters: ``num_elements`` (rows of both inputs with an event time),
        ``num_pairs`` (pairs joined), ``num_results``, ``num_late_left`` and
        ``num_late_right`` (late rows of each side, whether a late output takes them or not,
        rows without event time or arrival order included).
    plan
        How it runs, in words (:meth:`explain` prints it).
    left_late_tag, right_late_tag
        The tags of each side's late output, if any.
    """

    results: DataFrame
    metrics: DataFrame
    plan: str
    left_late: DataFrame | None
    right_late: DataFrame | None
    left_late_tag: OutputTag | None
    right_late_tag: OutputTag | None
    output: DataFrame | None = None

    def get_side_output(self, tag: OutputTag) -> DataFrame:
        """The late rows of one side, by its tag: the input's columns as they were, plus
        ``late_watermark`` (the watermark when the row arrived; null before any, and for a
        row without event time or arrival order) and ``late_reason`` (``late``,
        ``null_event_time`` or ``null_arrival_order``)."""
        if not isinstance(tag, OutputTag):
            msg = f"tag must be an OutputTag, got {type(tag).__name__} {tag!r}"
            raise ValueError(msg)
        if tag == self.left_late_tag and self.left_late is not None:
            return self.left_late
        if tag == self.right_late_tag and self.right_late is not None:
            return self.right_late
        raise no_side_output(tag, [t for t in (self.left_late_tag, self.right_late_tag) if t])

    def collect_metrics(self) -> dict[str, int]:
        """Run the metrics query and return the counters."""
        row = self.metrics.first()
        return {n: int((row[n] if row is not None else 0) or 0) for n in METRIC_NAMES}

    def explain(self) -> None:
        """Print how the join runs."""
        print(self.plan)

    def persist(self) -> IntervalJoinResult:
        """Persist the replay's output (with an arrival order), so that the first action on
        any of the DataFrames runs the replay and later ones read it; returns this result."""
        if self.output is not None:
            self.output.persist()
        return self

    def unpersist(self) -> None:
        """Release the persisted output."""
        if self.output is not None:
            self.output.unpersist()

    def __enter__(self) -> IntervalJoinResult:
        return self.persist()

    def __exit__(self, *exc: object) -> None:
        self.unpersist()


def run_batch(union: TaggedUnion, function: Any, layout: IntervalJoinLayout) -> IntervalJoinResult:
    """The interval join of the tagged union's two static sides with ``function`` (a
    ``ProcessJoinFunction``); no Spark job runs here. Without an arrival order, a range
    join; with one, the replay."""
    if union.source.arrival_order is None:
        return _range_join(union, function, layout)
    return _replay(union, function, layout)


def _late_rows(union: TaggedUnion, side: str, ts_kind: str) -> DataFrame:
    """A side's rows without event time, as its late output (no watermark)."""
    df = union.source.df
    return df.where((col(SIDE) == F.lit(side)) & col(UNION_EVENT_TIME).isNull()).select(
        f"{side}.*",
        F.lit(None)
        .cast(TimestampType() if ts_kind == "timestamp" else LongType())
        .alias(LATE_COLUMNS[0]),
        F.lit(REASON_NULL_EVENT_TIME).alias(LATE_COLUMNS[1]),
    )


def _bucket_columns(low: int, high: int) -> tuple[Column, Column] | None:
    """The buckets of the range join (SQL over ``__pw_lt`` / ``__pw_rt`` in ms): right rows
    by ``floor(t / width)``, left rows copied to the (at most two) buckets of ``[t + low, t +
    high]``, exact in ``decimal(20, 0)`` whatever the times; ``None`` when the bounds are too
    wide for buckets to help."""
    width = high - low + 1
    if not 0 < width < 2**62 or max(abs(low), abs(high)) >= 2**62:
        return None

    def floor_div(t: str) -> str:
        return f"(({t} div {width}L) - IF({t} % {width}L < 0, 1, 0))"

    qb, rb = divmod(low, width)  # Python's floor division
    right = F.expr(f"CAST({floor_div(_PAIR_RT)} AS DECIMAL(20, 0))")
    first = (
        f"CAST({floor_div(_PAIR_LT)} AS DECIMAL(20, 0)) + {qb}BD"
        f" + IF(pmod({_PAIR_LT}, {width}L) + {rb}L >= {width}L, 1, 0)"
    )
    left = F.expr(f"explode(array({first}, ({first}) + 1))")
    return left, right


def _range_join(
    union: TaggedUnion, function: Any, layout: IntervalJoinLayout
) -> IntervalJoinResult:
    """A batch without an arrival order: nothing is late (no watermark before the end of
    input), so the join is every pair of equal keys within the bounds: Spark's equi-join on
    the keys (and time buckets of the bounds' width), filtered exactly."""
    df = union.source.df
    keys = union.keys
    out, bounds, ts_kind = layout.out, layout.bounds, layout.ts_kind
    ms = time_millis(df, UNION_EVENT_TIME, "event_time", union.source.event_unit)
    timed = df.where(col(UNION_EVENT_TIME).isNotNull())
    left = timed.where(col(SIDE) == F.lit(LEFT)).select(
        *[col(k) for k in keys], col(LEFT).alias(_PAIR_L), ms.alias(_PAIR_LT)
    )
    right = timed.where(col(SIDE) == F.lit(RIGHT)).select(
        *[col(k).alias(f"__pw_k{i}") for i, k in enumerate(keys)],
        col(RIGHT).alias(_PAIR_R),
        ms.alias(_PAIR_RT),
    )
    condition = [col(k).eqNullSafe(col(f"__pw_k{i}")) for i, k in enumerate(keys)]
    buckets = _bucket_columns(bounds.low, bounds.high)
    if buckets is not None:
        left = left.select("*", buckets[0].alias(_BUCKET))
        right = right.select("*", buckets[1].alias(f"{_BUCKET}_r"))
        condition.append(col(_BUCKET) == col(f"{_BUCKET}_r"))
    gap = f"CAST({_PAIR_RT} AS DECIMAL(20, 0)) - CAST({_PAIR_LT} AS DECIMAL(20, 0))"
    within = F.expr(f"{gap} BETWEEN {bounds.low}BD AND {bounds.high}BD")
    pairs = left.join(right, [*condition, within]).select(
        *[col(k) for k in keys], _PAIR_L, _PAIR_R, _PAIR_LT, _PAIR_RT
    )
    apply = _PairFunction(function, keys, out, df.schema)
    mapped = pairs.mapInArrow(apply.batches, schema=apply.spark_schema())
    results = mapped.select(
        *[col(k) for k in keys],
        *[col(n) for n in out.names],
        instant_time(_MT, ts_kind, union.source.event_unit).alias("max_timestamp"),
    )
    counts = df.agg(
        F.count(col(UNION_EVENT_TIME)).alias("num_elements"),
        *[
            F.count(F.when((col(SIDE) == F.lit(s)) & col(UNION_EVENT_TIME).isNull(), 1)).alias(
                f"num_late_{s}"
            )
            for s in (LEFT, RIGHT)
        ],
    )
    metrics = (
        counts.crossJoin(pairs.agg(F.count(F.lit(1)).alias("num_pairs")))
        .crossJoin(mapped.agg(F.count(F.lit(1)).alias("num_results")))
        .select(*[col(n).cast(LongType()).alias(n) for n in METRIC_NAMES])
    )
    plan = (
        f"interval join: batch, no arrival order, so no watermark before the end of input and "
        f"nothing late: Spark's join of the rows of equal keys"
        f"{' and time buckets of ' + str(bounds.high - bounds.low + 1) + ' ms' if buckets else ''}"
        f" with {bounds.low} <= right - left event time <= {bounds.high} ms, the function on "
        "each pair (mapInArrow); rows without event time to the late outputs"
    )
    return IntervalJoinResult(
        results=results,
        metrics=metrics,
        plan=plan,
        left_late=None if bounds.left_late_tag is None else _late_rows(union, LEFT, ts_kind),
        right_late=None if bounds.right_late_tag is None else _late_rows(union, RIGHT, ts_kind),
        left_late_tag=bounds.left_late_tag,
        right_late_tag=bounds.right_late_tag,
    )


class _Context:
    """The context of one pair (``ProcessJoinFunctionContext``)."""

    __slots__ = ("left", "result", "right")

    def __init__(self, left: int, right: int) -> None:
        self.left, self.right, self.result = left, right, max(left, right)

    def left_timestamp(self) -> int:
        return self.left

    def right_timestamp(self) -> int:
        return self.right

    def timestamp(self) -> int:
        return self.result


@dataclass(frozen=True, eq=False)
class _PairFunction:
    """The function applied to the range join's pairs (executor side, ``mapInArrow``)."""

    function: Any
    keys: tuple[str, ...]
    out: StructType
    input_schema: StructType

    def spark_schema(self) -> StructType:
        fields = [self.input_schema[k] for k in self.keys]
        fields += list(self.out.fields)
        fields.append(StructField(_MT, LongType(), True))
        return StructType([StructField(f.name, f.dataType, True) for f in fields])

    def batches(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        out_types = [to_arrow_type(f.dataType, timezone="UTC") for f in self.out.fields]
        for batch in batches:
            lefts = arrow_to_python(batch.column(_PAIR_L))
            rights = arrow_to_python(batch.column(_PAIR_R))
            lts = batch.column(_PAIR_LT).to_pylist()
            rts = batch.column(_PAIR_RT).to_pylist()
            outputs = PairOutputs(self.out)
            process = self.function.process_element
            for i, (a, b, lt, rt) in enumerate(zip(lefts, rights, lts, rts, strict=True)):
                context = _Context(lt, rt)
                note = (
                    f"while joining the left row at {instant_text(lt)} with the right row at "
                    f"{instant_text(rt)}"
                )
                outputs.add(process(a, b, context), i, context.result, note)
            take = pa.array(outputs.rows, pa.int64())
            arrays = [batch.column(k).take(take) for k in self.keys]
            arrays += [
                pa.array(values, t) for values, t in zip(outputs.fields, out_types, strict=True)
            ]
            arrays.append(pa.array(outputs.times, pa.int64()))
            names = [*self.keys, *self.out.names, _MT]
            yield pa.RecordBatch.from_arrays(arrays, names=names)


@dataclass(frozen=True, eq=False)
class _Replay:
    """The replay of one key group (executor side, ``applyInArrow``): each key's rows in
    arrival order through Flink's operator (:class:`~windowing.spark.interval_join.output.
    KeyRun`), the watermark moving between them as a streaming run's would; one tagged output
    (results, late rows of each side, a metrics row)."""

    function: Any
    layout: IntervalJoinLayout
    watermark: InputWatermarks

    def table(self, table: pa.Table) -> pa.Table:
        batches = list(self.batches(iter(table.to_batches())))
        return pa.Table.from_batches(batches, self.layout.arrow_schema)

    def batches(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        run = KeyRun(self.function, self.layout)
        watermark_for = self.watermark.current_watermark
        for batch in batches:
            marks = [
                None if w is None else watermark_for(w) for w in batch.column(_WMAX).to_pylist()
            ]
            yield run.run(batch, marks)
        run.finish()
        yield run.metrics_batch()


def _replay(union: TaggedUnion, function: Any, layout: IntervalJoinLayout) -> IntervalJoinResult:
    """A batch with an arrival order: Flink's operator per key, in arrival order, with the
    watermark a streaming run would have seen (the smaller of the two inputs')."""
    source = union.source
    df = source.df
    keys = union.keys
    bounds = layout.bounds
    assert isinstance(source.watermark, InputWatermarks)
    groups = max(128, shuffle_partitions(df.sparkSession))
    prepared = df.select(*internal_columns(df, source))
    kg = key_group(keys, groups) + F.pmod(col(_TB), F.lit(1))
    prepared = arrival_watermark(prepared.withColumn(KEY_GROUP, kg), source, groups)
    order = replay_order(arrival=True, processing_time=False)
    ordered = prepared.sortWithinPartitions(
        col(KEY_GROUP), *[col(k) for k in keys], *[col(n).asc_nulls_last() for n, _, _ in order]
    )
    replay = _Replay(function, layout, source.watermark)
    grouped = ordered.groupBy(KEY_GROUP)
    if streams_record_batches():

        def replay_batches(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            return replay.batches(batches)

        output = grouped.applyInArrow(replay_batches, schema=layout.schema)
    else:  # PySpark 4.0: the group as one table

        def replay_table(table: pa.Table) -> pa.Table:
            return replay.table(table)

        output = grouped.applyInArrow(replay_table, schema=layout.schema)
    plan = (
        f"interval join: batch replay in arrival order ({union.source.arrival_order!r}): rows "
        f"grouped into {groups} key groups (groupBy + applyInArrow), each key's rows through "
        "Flink's interval join operator (buffers per side, cleanup on the watermark, late rows "
        f"to the late outputs) with the watermark a streaming run would have seen "
        f"({source.watermark!r})"
    )
    return IntervalJoinResult(
        results=layout.select_results(output),
        metrics=layout.select_metric_totals(output),
        plan=plan,
        left_late=None if bounds.left_late_tag is None else layout.select_late(output, LEFT),
        right_late=None if bounds.right_late_tag is None else layout.select_late(output, RIGHT),
        left_late_tag=bounds.left_late_tag,
        right_late_tag=bounds.right_late_tag,
        output=output,
    )
