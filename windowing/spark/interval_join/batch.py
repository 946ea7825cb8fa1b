"""The interval join on Spark (``IntervalJoined.process``).

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

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F  # noqa: N812 - the PySpark convention
from pyspark.sql.pandas.types import to_arrow_schema, to_arrow_type
from pyspark.sql.types import (
    ByteType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from windowing.functions.joins import LEFT, RIGHT, SIDE, ProcessJoinFunction
from windowing.interval_join import IntervalJoinOperator
from windowing.job import InputWatermarks
from windowing.records import OutputTag
from windowing.spark.batch.replay_plan import arrival_watermark, streams_record_batches
from windowing.spark.columns.inputs import ARR as _ARR
from windowing.spark.columns.inputs import TB as _TB
from windowing.spark.columns.inputs import TS as _TS
from windowing.spark.columns.inputs import WMAX as _WMAX
from windowing.spark.columns.inputs import internal_columns, replay_order, time_millis
from windowing.spark.columns.keys import KEY_GROUP, key_group, key_value, state_key
from windowing.spark.columns.output import (
    LATE_COLUMNS,
    REASON_LATE,
    REASON_NULL_ARRIVAL_ORDER,
    REASON_NULL_EVENT_TIME,
    col,
    instant_time,
)
from windowing.spark.columns.schema import (
    arrow_to_python,
    column_time_kind,
    make_row_encoder,
    parse_output_schema,
)
from windowing.spark.columns.side_outputs import check_names, no_side_output
from windowing.spark.jobs import shuffle_partitions
from windowing.spark.joins import UNION_EVENT_TIME, TaggedUnion
from windowing.time import instant_text

__all__ = ["METRIC_NAMES", "IntervalBounds", "IntervalJoinResult", "run_interval_join"]

# The tagged output of the interval join's replay: results, each side's late rows, and one
# metrics row per call, told apart by the kind.
_KIND = "__pw_kind"
_MT = "__pw_mt"  # a result's event time (ms)
_LWM = "__pw_lwm"  # a late row's watermark (ms)
_LREASON = "__pw_lreason"
_RESULT, _LATE_LEFT, _LATE_RIGHT, _METRICS = 0, 1, 2, 3
_PAIR_L, _PAIR_R, _PAIR_LT, _PAIR_RT = "__pw_l", "__pw_r", "__pw_lt", "__pw_rt"
_LATE_ROW = {LEFT: "__pw_lrow", RIGHT: "__pw_rrow"}  # a late row of each side
_BUCKET = "__pw_bucket"
#: The interval join's counters (:class:`~windowing.interval_join.IntervalJoinMetrics`).
METRIC_NAMES = ("num_elements", "num_pairs", "num_results", "num_late_left", "num_late_right")
_COUNTER = "__pw_n_"


@dataclass(frozen=True)
class IntervalBounds:
    """An interval join's bounds and late outputs (what ``between`` and the configuration
    calls gave)."""

    lower: int
    upper: int
    lower_inclusive: bool = True
    upper_inclusive: bool = True
    left_late_tag: OutputTag | None = None
    right_late_tag: OutputTag | None = None

    @property
    def low(self) -> int:
        """The lower bound, inclusive (Flink moves an exclusive bound by one)."""
        return self.lower if self.lower_inclusive else self.lower + 1

    @property
    def high(self) -> int:
        """The upper bound, inclusive."""
        return self.upper if self.upper_inclusive else self.upper - 1


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


def run_interval_join(
    union: TaggedUnion, function: Any, output_schema: Any, bounds: IntervalBounds
) -> IntervalJoinResult:
    """The interval join of the tagged union's two sides with ``function`` (a
    ``ProcessJoinFunction``); no Spark job runs here. A batch without an arrival order is a
    range join; with one, the replay; streaming inputs: ``NotImplementedError``."""
    source = union.source
    df = source.df
    if df.isStreaming:
        msg = (
            "interval_join on streaming DataFrames is not supported yet; join static "
            "DataFrames (a batch job, with arrival_order to replay a stream), or use a window "
            "join (join(...).where(...).equal_to(...).window(...)), which runs in streaming"
        )
        raise NotImplementedError(msg)
    out = parse_output_schema(output_schema, "output_schema")
    ts_kind = column_time_kind(df, UNION_EVENT_TIME, "event_time")
    check_names([*union.keys, *out.names, "max_timestamp"], "results")
    for tag, row_type in (
        (bounds.left_late_tag, union.left_type),
        (bounds.right_late_tag, union.right_type),
    ):
        if tag is not None:
            check_names([*row_type.names, *LATE_COLUMNS], f"late side output {tag.name!r}")
    if source.arrival_order is None:
        return _range_join(union, function, out, bounds, ts_kind)
    return _replay(union, function, out, bounds, ts_kind)


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
    union: TaggedUnion, function: Any, out: StructType, bounds: IntervalBounds, ts_kind: str
) -> IntervalJoinResult:
    """A batch without an arrival order: nothing is late (no watermark before the end of
    input), so the join is every pair of equal keys within the bounds: Spark's equi-join on
    the keys (and time buckets of the bounds' width), filtered exactly."""
    df = union.source.df
    keys = union.keys
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


class _Outputs:
    """The outputs of a call's pairs, as columns: each output's field values, the row of
    the call's input its key comes from, its event time (ms)."""

    def __init__(self, out: StructType) -> None:
        self.encode = make_row_encoder(out)
        self.fields = [[] for _ in out.names]  # type: list[list[Any]]
        self.rows: list[int] = []
        self.times: list[int] = []

    def add(self, values: Iterable[Any], row: int, time: int, note: str) -> None:
        try:
            for value in values:
                for field, v in zip(self.fields, self.encode(value), strict=True):
                    field.append(v)
                self.rows.append(row)
                self.times.append(time)
        except Exception as exc:
            exc.add_note(note)
            raise


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
            outputs = _Outputs(self.out)
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
    """The interval join's replay of one key group (executor side, ``applyInArrow``): each
    key's rows in arrival order through an
    :class:`~windowing.interval_join.IntervalJoinOperator`, the watermark moving between them
    as a streaming run's would; one tagged output (results, late rows of each side, a
    metrics row)."""

    function: Any
    keys: tuple[str, ...]
    out: StructType
    bounds: IntervalBounds
    watermark: InputWatermarks
    schema: pa.Schema

    def table(self, table: pa.Table) -> pa.Table:
        return pa.Table.from_batches(list(self.batches(iter(table.to_batches()))), self.schema)

    def batches(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        state = _KeyRun(self)
        for batch in batches:
            yield state.run(batch)
        yield state.metrics_batch()


class _Unwrap(ProcessJoinFunction[Any, Any, Any]):
    """The user's function over the operator's values, which are ``(row index, Row)``."""

    def __init__(self, function: Any) -> None:
        self.function = function

    def process_element(self, left: Any, right: Any, context: Any) -> Any:
        return self.function.process_element(left[1], right[1], context)


_LEFT_TAG, _RIGHT_TAG = OutputTag("__pw_left_late"), OutputTag("__pw_right_late")


class _KeyRun:
    """The replay's state across a key group's record batches (rows sorted by key, then
    arrival order): the current key and its operator."""

    def __init__(self, replay: _Replay) -> None:
        self.replay = replay
        self.key: Any = _NO_KEY
        self.op: IntervalJoinOperator | None = None
        self.totals = dict.fromkeys(METRIC_NAMES, 0)

    def _new_operator(self) -> IntervalJoinOperator:
        b = self.replay.bounds
        return IntervalJoinOperator(
            b.lower,
            b.upper,
            _Unwrap(self.replay.function),
            lower_inclusive=b.lower_inclusive,
            upper_inclusive=b.upper_inclusive,
            left_late_tag=_LEFT_TAG,
            right_late_tag=_RIGHT_TAG,
        )

    def _count(self, op: IntervalJoinOperator) -> None:
        m = op.metrics  # (late rows are counted as they go to the output)
        for name in ("num_elements", "num_pairs", "num_results"):
            self.totals[name] += getattr(m, name)

    def run(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        replay = self.replay
        keys = replay.keys
        key_lists = [batch.column(k).to_pylist() for k in keys]
        sides = batch.column(SIDE).to_pylist()
        times = batch.column(_TS).to_pylist()
        arrivals = batch.column(_ARR).to_pylist()
        wmax = batch.column(_WMAX).to_pylist()
        lefts = arrow_to_python(batch.column(LEFT))
        rights = arrow_to_python(batch.column(RIGHT))
        outputs = _Outputs(replay.out)
        late_rows: list[int] = []
        late_kinds: list[int] = []
        late_marks: list[int | None] = []
        late_reasons: list[str] = []
        watermark_for = replay.watermark.current_watermark

        def late(i: int, side: str, mark: int | None, reason: str) -> None:
            if side == LEFT:
                self.totals["num_late_left"] += 1
                tag = replay.bounds.left_late_tag
            else:
                self.totals["num_late_right"] += 1
                tag = replay.bounds.right_late_tag
            if tag is not None:
                late_rows.append(i)
                late_kinds.append(_LATE_LEFT if side == LEFT else _LATE_RIGHT)
                late_marks.append(mark)
                late_reasons.append(reason)

        def collect(op: IntervalJoinOperator, i: int) -> None:
            for r in op.extract_output():
                outputs.add((r.value,), i, r.timestamp, "")
            for tag, side in ((_LEFT_TAG, LEFT), (_RIGHT_TAG, RIGHT)):
                for e in op.extract_side_output(tag):
                    late(e.value[0], side, e.watermark, REASON_LATE)

        for i in range(batch.num_rows):
            key = tuple(state_key(values[i]) for values in key_lists)
            if self.op is None or key != self.key:
                if self.op is not None:
                    self._count(self.op)
                self.key, self.op = key, self._new_operator()
            op = self.op
            side = sides[i]
            if arrivals[i] is None:
                late(i, side, None, REASON_NULL_ARRIVAL_ORDER)
                continue
            if wmax[i] is not None:
                wm = watermark_for(wmax[i])
                if wm > op.watermark:
                    op.process_watermark(wm)
            t = times[i]
            if t is None:
                late(i, side, op.watermark, REASON_NULL_EVENT_TIME)
                continue
            try:
                if side == LEFT:
                    op.process_left((i, lefts[i]), t, key)
                else:
                    op.process_right((i, rights[i]), t, key)
            except Exception as exc:
                shown = key_value([values[i] for values in key_lists])
                exc.add_note(
                    f"while joining the {side} row at {instant_text(t)} of key {shown!r} "
                    f"(watermark {instant_text(op.watermark)})"
                )
                raise
            collect(op, i)
        return self._tagged(batch, outputs, late_rows, late_kinds, late_marks, late_reasons)

    def _tagged(
        self,
        batch: pa.RecordBatch,
        outputs: _Outputs,
        late_rows: list[int],
        late_kinds: list[int],
        late_marks: list[int | None],
        late_reasons: list[str],
    ) -> pa.RecordBatch:
        schema = self.replay.schema
        n_res, n_late = len(outputs.rows), len(late_rows)
        n = n_res + n_late
        rows = pa.array(outputs.rows + late_rows, pa.int64())
        arrays: dict[str, pa.Array] = {
            _KIND: pa.array([_RESULT] * n_res + late_kinds, pa.int8()),
        }
        for k in self.replay.keys:
            arrays[k] = batch.column(k).take(rows)
        for name, values in zip(self.replay.out.names, outputs.fields, strict=True):
            arrays[name] = pa.array(values + [None] * n_late, schema.field(name).type)
        arrays[_MT] = pa.array(outputs.times + [None] * n_late, pa.int64())
        late_take = pa.array([None] * n_res + late_rows, pa.int64())
        for side, kind in ((LEFT, _LATE_LEFT), (RIGHT, _LATE_RIGHT)):
            taken = batch.column(side).take(late_take)
            mask = pa.array([k != kind for k in [_RESULT] * n_res + late_kinds])
            arrays[_LATE_ROW[side]] = pc.if_else(mask, pa.nulls(n, taken.type), taken)
        arrays[_LWM] = pa.array([None] * n_res + late_marks, pa.int64())
        arrays[_LREASON] = pa.array([None] * n_res + late_reasons, pa.string())
        for name in METRIC_NAMES:
            arrays[_COUNTER + name] = pa.nulls(n, pa.int64())
        return pa.RecordBatch.from_arrays(
            [arrays[f.name].cast(f.type) for f in schema], schema=schema
        )

    def metrics_batch(self) -> pa.RecordBatch:
        if self.op is not None:
            self._count(self.op)
            self.op = None
        schema = self.replay.schema
        arrays = []
        for f in schema:
            if f.name == _KIND:
                arrays.append(pa.array([_METRICS], pa.int8()))
            elif f.name.startswith(_COUNTER):
                arrays.append(pa.array([self.totals[f.name[len(_COUNTER) :]]], pa.int64()))
            else:
                arrays.append(pa.nulls(1, f.type))
        return pa.RecordBatch.from_arrays(arrays, schema=schema)


_NO_KEY = object()


def _replay(
    union: TaggedUnion, function: Any, out: StructType, bounds: IntervalBounds, ts_kind: str
) -> IntervalJoinResult:
    """A batch with an arrival order: Flink's operator per key, in arrival order, with the
    watermark a streaming run would have seen (the smaller of the two inputs')."""
    source = union.source
    df = source.df
    keys = union.keys
    assert isinstance(source.watermark, InputWatermarks)
    groups = max(128, shuffle_partitions(df.sparkSession))
    prepared = df.select(*internal_columns(df, source))
    kg = key_group(keys, groups) + F.pmod(col(_TB), F.lit(1))
    prepared = arrival_watermark(prepared.withColumn(KEY_GROUP, kg), source, groups)
    order = replay_order(arrival=True, processing_time=False)
    ordered = prepared.sortWithinPartitions(
        col(KEY_GROUP), *[col(k) for k in keys], *[col(n).asc_nulls_last() for n, _, _ in order]
    )
    fields = [StructField(_KIND, ByteType(), True)]
    fields += [StructField(k, df.schema[k].dataType, True) for k in keys]
    fields += [StructField(f.name, f.dataType, True) for f in out.fields]
    fields.append(StructField(_MT, LongType(), True))
    fields += [StructField(_LATE_ROW[LEFT], union.left_type, True)]
    fields += [StructField(_LATE_ROW[RIGHT], union.right_type, True)]
    fields += [StructField(_LWM, LongType(), True), StructField(_LREASON, StringType(), True)]
    fields += [StructField(_COUNTER + n, LongType(), True) for n in METRIC_NAMES]
    spark_schema = StructType(fields)
    replay = _Replay(
        function, keys, out, bounds, source.watermark, to_arrow_schema(spark_schema, timezone="UTC")
    )
    grouped = ordered.groupBy(KEY_GROUP)
    if streams_record_batches():

        def replay_batches(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            return replay.batches(batches)

        output = grouped.applyInArrow(replay_batches, schema=spark_schema)
    else:  # PySpark 4.0: the group as one table

        def replay_table(table: pa.Table) -> pa.Table:
            return replay.table(table)

        output = grouped.applyInArrow(replay_table, schema=spark_schema)
    kind = col(_KIND)
    results = output.where(kind == F.lit(_RESULT)).select(
        *[col(k) for k in keys],
        *[col(n) for n in out.names],
        instant_time(_MT, ts_kind, union.source.event_unit).alias("max_timestamp"),
    )

    def late_output(side: str, code: int) -> DataFrame:
        return output.where(kind == F.lit(code)).select(
            f"{_LATE_ROW[side]}.*",
            instant_time(_LWM, ts_kind, source.event_unit).alias(LATE_COLUMNS[0]),
            col(_LREASON).alias(LATE_COLUMNS[1]),
        )

    metrics = output.where(kind == F.lit(_METRICS)).agg(
        *[
            F.coalesce(F.sum(col(_COUNTER + n)), F.lit(0)).cast(LongType()).alias(n)
            for n in METRIC_NAMES
        ]
    )
    plan = (
        f"interval join: batch replay in arrival order ({union.source.arrival_order!r}): rows "
        f"grouped into {groups} key groups (groupBy + applyInArrow), each key's rows through "
        "Flink's interval join operator (buffers per side, cleanup on the watermark, late rows "
        f"to the late outputs) with the watermark a streaming run would have seen "
        f"({source.watermark!r})"
    )
    return IntervalJoinResult(
        results=results,
        metrics=metrics,
        plan=plan,
        left_late=None if bounds.left_late_tag is None else late_output(LEFT, _LATE_LEFT),
        right_late=None if bounds.right_late_tag is None else late_output(RIGHT, _LATE_RIGHT),
        left_late_tag=bounds.left_late_tag,
        right_late_tag=bounds.right_late_tag,
        output=output,
    )
