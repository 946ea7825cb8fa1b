"""Batch replay: run a :class:`~windowing.stream.WindowedStream` over a static DataFrame.

The plan (see ``docs/spark.md``)::

    input ──► add internal columns: event time in ms, arrival order, processing time,
              a content hash (tie-breaker), and with an arrival order the prefix-max watermark
          ──► groupBy(key columns).applyInArrow(replay)          (window_all: one group)
          ──► one combined output, persisted: results, late rows and metrics, tagged
          ──► results / late side output / metrics DataFrames (filters of the persisted output)

``replay`` runs on the executors: for each key it builds a
:class:`~windowing.operator.WindowOperator` (the same one the test harness drives), replays the
key's rows in arrival order with the watermark a streaming run would have seen, then advances
the watermark and processing time to ``MAX_TIMESTAMP`` (end of input).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, Row, SparkSession
from pyspark.sql import functions as F  # noqa: N812 - the PySpark convention
from pyspark.sql.pandas.types import to_arrow_type
from pyspark.sql.types import (
    ByteType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from functions.base import FoldFunction, ProcessWindowFunction, WindowFunction
from functions.spec import WindowFunctionSpec
from windowing.operator import WindowOperator
from windowing.records import OutputTag
from windowing.spark.schema import (
    arrow_to_python,
    column_time_kind,
    contains_map,
    make_row_encoder,
    parse_output_schema,
    schema_from_annotation,
)
from windowing.spark.watermark import add_prefix_max
from windowing.time import MAX_TIMESTAMP, MIN_TIMESTAMP

if TYPE_CHECKING:
    from windowing.stream import WindowedStream

__all__ = ["BatchMetrics", "WindowedResult", "run_batch"]

# Internal column names (the prefix is reserved, see schema.INTERNAL_PREFIX).
_TS = "__pw_ts"
_ARR = "__pw_arr"
_PT = "__pw_pt"
_TB = "__pw_tb"
_WMAX = "__pw_wmax"
_KIND = "__pw_kind"
_WS = "__pw_ws"
_WE = "__pw_we"
_MT = "__pw_mt"
_LWM = "__pw_lwm"
_LREASON = "__pw_lreason"

_RESULT, _LATE, _METRICS = 0, 1, 2

#: Reasons in the ``late_reason`` column of the late side output.
REASON_LATE = "late"
REASON_NULL_EVENT_TIME = "null_event_time"
REASON_NULL_ARRIVAL_ORDER = "null_arrival_order"

#: Result columns added around the function's output columns.
RESULT_COLUMNS = ("window_start", "window_end", "max_timestamp")
#: Columns added to the late rows.
LATE_COLUMNS = ("late_watermark", "late_reason")

# Epoch milliseconds representable as a Spark timestamp (years 1 to 9999).
_SPARK_MIN_MS = -62_135_596_800_000
_SPARK_MAX_MS = 253_402_300_799_999
_INT64_MAX = 2**63 - 1


@dataclass(frozen=True)
class BatchMetrics:
    """What happened to every input row of a batch run (sums over all keys).

    Every input row is counted once in ``num_elements``, ``num_null_event_time`` or
    ``num_null_arrival_order``; every element ends in a window, in
    ``num_late_records_side_output``, ``num_late_records_dropped`` or
    ``num_records_in_no_window``.

    Attributes
    ----------
    num_input_rows
        Rows of the input DataFrame.
    num_elements
        Rows handed to the window operator.
    num_late_records_side_output
        Late elements (added to no window) written to the late side output.
    num_late_records_dropped
        Late elements dropped because no late side output was requested.
    num_null_event_time
        Rows without event time under an event-time assigner; in the late side output (reason
        ``null_event_time``) when it is requested, otherwise only counted here.
    num_null_arrival_order
        Rows without arrival order; like ``num_null_event_time`` (reason
        ``null_arrival_order``).
    num_records_in_no_window
        Elements added to no window although not late (e.g. all their windows had closed).
    num_windows_fired
        Window evaluations with contents.
    num_results
        Rows of the results DataFrame.
    num_windows_left_at_end
        Windows still holding contents after the end of input (e.g. global windows whose
        trigger did not purge, or never fired).
    num_keys
        Distinct keys (1 for ``window_all``).
    """

    num_input_rows: int = 0
    num_elements: int = 0
    num_late_records_side_output: int = 0
    num_late_records_dropped: int = 0
    num_null_event_time: int = 0
    num_null_arrival_order: int = 0
    num_records_in_no_window: int = 0
    num_windows_fired: int = 0
    num_results: int = 0
    num_windows_left_at_end: int = 0
    num_keys: int = 0


_METRIC_NAMES = tuple(f.name for f in dataclasses.fields(BatchMetrics))
_METRIC_COLUMNS = tuple(f"__pw_m_{n}" for n in _METRIC_NAMES)


@dataclass(frozen=True, eq=False)
class WindowedResult:
    """The outcome of a terminal call (``reduce``, ``aggregate``, ...) of a
    :class:`~windowing.stream.WindowedStream`.

    All three DataFrames are filters of one persisted operator output, so the stateful replay
    runs once however many of them you use (``MEMORY_AND_DISK``; the first action computes
    it). Call :meth:`unpersist` (or use the result as a context manager) when done.

    Attributes
    ----------
    results
        Key column(s), ``window_start``, ``window_end``, the function's output columns, and
        ``max_timestamp`` (the result's event time).
    metrics
        One row with the :class:`BatchMetrics` counters as ``bigint`` columns.
    output
        The combined, tagged operator output (internal layout; for debugging).
    late_output_tag
        The tag given to ``side_output_late_data``, if any.
    """

    results: DataFrame
    metrics: DataFrame
    output: DataFrame = dataclasses.field(repr=False)
    late_output_tag: OutputTag | None = None
    late: DataFrame | None = dataclasses.field(default=None, repr=False)

    def get_side_output(self, tag: OutputTag) -> DataFrame:
        """The late rows for ``tag``: the input rows unchanged (same columns and types), plus
        ``late_watermark`` (the watermark when the row arrived; null before any watermark)
        and ``late_reason`` (``late``, ``null_event_time`` or ``null_arrival_order``)."""
        if not isinstance(tag, OutputTag):
            msg = f"tag must be an OutputTag, got {type(tag).__name__} {tag!r}"
            raise ValueError(msg)
        if self.late is None or tag != self.late_output_tag:
            msg = (
                f"no side output {tag!r}: request it with .side_output_late_data({tag!r}) "
                f"(this result has {self.late_output_tag!r})"
            )
            raise ValueError(msg)
        return self.late

    def collect_metrics(self) -> BatchMetrics:
        """Run the (cheap) metrics query and return the counters."""
        row = self.metrics.first()
        if row is None:
            return BatchMetrics()
        return BatchMetrics(**{n: int(row[n] or 0) for n in _METRIC_NAMES})

    def unpersist(self, blocking: bool = False) -> None:
        """Release the persisted operator output."""
        self.output.unpersist(blocking)

    def __enter__(self) -> WindowedResult:
        return self

    def __exit__(self, *exc: object) -> None:
        self.unpersist()


# ---------------------------------------------------------------------------- driver side
def _col(name: str) -> Column:
    return F.col("`" + name.replace("`", "``") + "`")


def _annotation_source(spec: WindowFunctionSpec) -> tuple[Any, bool] | None:
    """The method whose return annotation describes the outputs, and whether it returns
    many outputs (an iterable)."""
    wf = getattr(spec, "window_function", None)
    if wf is not None:
        if isinstance(wf, ProcessWindowFunction):
            return type(wf).process, True
        if isinstance(wf, WindowFunction):
            return type(wf).apply, True
        return None
    fn: Any = spec.function
    if spec.kind == "aggregate":
        return type(fn).get_result, False
    if spec.kind == "fold":
        return (type(fn).fold if isinstance(fn, FoldFunction) else fn), False
    if spec.kind == "process":
        return type(fn).process, True
    if spec.kind == "apply":
        return type(fn).apply, True
    return None


def _output_schema(
    spec: WindowFunctionSpec, output_schema: Any, input_schema: StructType, keys: tuple[str, ...]
) -> tuple[StructType, bool]:
    """The function's output fields, and whether they are the reduced input rows."""
    if spec.kind == "reduce" and getattr(spec, "window_function", None) is None:
        if output_schema is not None:
            msg = (
                "reduce: output_schema is only used with a window_function; a reduce without "
                "one returns rows of the input schema"
            )
            raise ValueError(msg)
        # The key columns come first from the key; window columns of an input that is itself
        # a window result are replaced by the new window's.
        fields = [
            f for f in input_schema.fields if f.name not in keys and f.name not in RESULT_COLUMNS
        ]
        return StructType([StructField(f.name, f.dataType, True) for f in fields]), True
    if output_schema is not None:
        return parse_output_schema(output_schema, "output_schema"), False
    source = _annotation_source(spec)
    inferred = None if source is None else schema_from_annotation(source[0], many=source[1])
    if inferred is None:
        what = (
            "its window_function"
            if getattr(spec, "window_function", None) is not None
            else f"the {spec.kind} function"
        )
        msg = (
            f"{spec.kind}: output_schema is required: the output of {what} is not the input "
            "row and its return annotation is missing or not a simple type; pass e.g. "
            "output_schema='total double, n bigint' (a DDL string or a StructType)"
        )
        raise ValueError(msg)
    return inferred, False


def _check_names(names: list[str], what: str) -> None:
    seen: set[str] = set()
    for n in names:
        if n in seen:
            msg = (
                f"{what}: column {n!r} appears twice; rename the input column or the "
                "output_schema field"
            )
            raise ValueError(msg)
        seen.add(n)


def _ms_to_time(column: Column, kind: str) -> Column:
    if kind == "timestamp":
        return F.when(
            column.between(_SPARK_MIN_MS, _SPARK_MAX_MS), F.timestamp_millis(column)
        ).otherwise(F.lit(None).cast(TimestampType()))
    return column


def _bucket_count(spark: SparkSession) -> int:
    """Buckets for the arrival-order watermark: the shuffle partitions, within [1, 1024]."""
    try:
        n = int(spark.conf.get("spark.sql.shuffle.partitions") or 8)
    except ValueError:  # e.g. "auto" on some platforms
        n = 8
    return min(max(n, 1), 1024)


def result_columns(
    results: list[Any], encode: Any, out_schema: StructType
) -> tuple[list[list[Any]], list[int | None], list[int | None], list[int | None]]:
    """Window results as columns: the encoded output columns, then window start, window end
    and result timestamp (shared by the batch replay and the streaming processor)."""
    out_columns: list[list[Any]] = [[] for _ in out_schema.fields]
    ws: list[int | None] = []
    we: list[int | None] = []
    mt: list[int | None] = []
    for r in results:
        try:
            values = encode(r.value)
        except Exception as exc:
            exc.add_note(
                f"while writing the result {r.value!r} of window {r.window!r} of key "
                f"{r.key!r} as a row of {out_schema.simpleString()}"
            )
            raise
        for column, v in zip(out_columns, values, strict=True):
            column.append(v)
        start, end = _window_bounds(r.window)
        ws.append(start)
        we.append(end)
        mt.append(r.timestamp)
    return out_columns, ws, we, mt


def combined_output_schema(
    key_fields: Any, out_fields: StructType, input_schema: StructType
) -> tuple[list[str], list[str], StructType]:
    """The one tagged output of the operator (results, late rows and metrics rows), shared by
    the batch replay and the streaming processor: ``(late columns, result columns, schema)``."""
    late_cols = [f"__pw_l{i}" for i in range(len(input_schema.fields))]
    result_cols = [f"__pw_r{i}" for i in range(len(out_fields.fields))]
    schema = StructType(
        [
            StructField(_KIND, ByteType(), False),
            *[StructField(k.name, k.dataType, True) for k in key_fields],
            StructField(_WS, LongType(), True),
            StructField(_WE, LongType(), True),
            StructField(_MT, LongType(), True),
            *[
                StructField(c, f.dataType, True)
                for c, f in zip(result_cols, out_fields.fields, strict=True)
            ],
            *[
                StructField(c, f.dataType, True)
                for c, f in zip(late_cols, input_schema.fields, strict=True)
            ],
            StructField(_LWM, LongType(), True),
            StructField(_LREASON, StringType(), True),
            *[StructField(c, LongType(), True) for c in _METRIC_COLUMNS],
        ]
    )
    return late_cols, result_cols, schema


def run_batch(
    stream: WindowedStream, spec: WindowFunctionSpec, output_schema: Any
) -> WindowedResult:
    """Validate ``stream`` with ``spec`` against the DataFrame's schema and build the batch
    plan (no Spark job runs here); see the module docstring."""
    source = stream.source
    df = source.df
    config = stream.config
    keys = tuple(stream.keys or ())
    if df.isStreaming:
        msg = (
            "run_batch needs a static DataFrame (df.isStreaming is True); streaming "
            "DataFrames run through windowing.spark.streaming.run_streaming"
        )
        raise NotImplementedError(msg)
    # The operator validates the assigner / trigger / evictor / function combination.
    WindowOperator(
        config.assigner,
        spec,
        trigger=config.trigger,
        evictor=config.evictor,
        allowed_lateness=config.allowed_lateness,
        late_output_tag=config.late_output_tag,
    )
    input_schema = df.schema
    ts_kind = column_time_kind(df, source.event_time, "event_time")
    arr_kind = (
        column_time_kind(df, source.arrival_order, "arrival_order")
        if source.arrival_order is not None
        else None
    )
    pt_kind = (
        column_time_kind(df, source.processing_time, "processing_time")
        if source.processing_time is not None
        else None
    )
    out_fields, reduced_rows = _output_schema(spec, output_schema, input_schema, keys)
    result_names = [*keys, "window_start", "window_end", *out_fields.names, "max_timestamp"]
    _check_names(result_names, "results")
    if config.late_output_tag is not None:
        _check_names([*input_schema.names, *LATE_COLUMNS], "late side output")
    key_fields = [input_schema[k] for k in keys]

    # -- internal columns -------------------------------------------------------------
    def millis(name: str, kind: str) -> Column:
        return F.unix_millis(_col(name)) if kind == "timestamp" else _col(name).cast("long")

    hashable = [_col(f.name) for f in input_schema.fields if not contains_map(f.dataType)]
    internal = [
        millis(source.event_time, ts_kind).alias(_TS),
        (F.xxhash64(*hashable) if hashable else F.lit(0).cast("long")).alias(_TB),
    ]
    if source.arrival_order is not None:
        arr = (
            F.unix_micros(_col(source.arrival_order))
            if arr_kind == "timestamp"
            else _col(source.arrival_order).cast("long")
        )
        internal.append(arr.alias(_ARR))
    if source.processing_time is not None:
        internal.append(millis(source.processing_time, pt_kind or "integral").alias(_PT))
    prepared = df.select(*[_col(c) for c in df.columns], *internal)
    spark = df.sparkSession
    if source.arrival_order is not None:
        prepared = add_prefix_max(
            prepared, order=_ARR, value=_TS, out=_WMAX, buckets=_bucket_count(spark)
        )

    # -- combined output schema ---------------------------------------------------------
    late_cols, result_cols, combined_schema = combined_output_schema(
        key_fields, out_fields, input_schema
    )
    tz = spark.conf.get("spark.sql.session.timeZone") or "UTC"
    replay = _Replay(
        assigner=config.assigner,
        spec=spec,
        trigger=config.trigger,
        evictor=config.evictor,
        allowed_lateness=config.allowed_lateness,
        late_output_tag=config.late_output_tag,
        keys=keys,
        input_names=list(input_schema.names),
        input_schema=input_schema,
        out_schema=out_fields,
        out_arrow_types=[to_arrow_type(f.dataType, timezone=tz) for f in out_fields.fields],
        reduced_rows=reduced_rows,
        watermark=source.watermark,
        has_arrival=source.arrival_order is not None,
        has_processing_time=source.processing_time is not None,
        result_cols=result_cols,
        late_cols=late_cols,
    )
    grouped = prepared.groupBy(*[_col(k) for k in keys]) if keys else prepared.groupBy()

    def replay_group(table: pa.Table) -> pa.Table:
        return replay(table)

    combined = grouped.applyInArrow(replay_group, schema=combined_schema).persist(
        StorageLevel.MEMORY_AND_DISK
    )

    results = combined.where(F.col(_KIND) == _RESULT).select(
        *[_col(k) for k in keys],
        _ms_to_time(F.col(_WS), ts_kind).alias("window_start"),
        _ms_to_time(F.col(_WE), ts_kind).alias("window_end"),
        *[F.col(c).alias(f.name) for c, f in zip(result_cols, out_fields.fields, strict=True)],
        _ms_to_time(F.col(_MT), ts_kind).alias("max_timestamp"),
    )
    late = None
    if config.late_output_tag is not None:
        late = combined.where(F.col(_KIND) == _LATE).select(
            *[F.col(c).alias(f.name) for c, f in zip(late_cols, input_schema.fields, strict=True)],
            _ms_to_time(F.col(_LWM), ts_kind).alias("late_watermark"),
            F.col(_LREASON).alias("late_reason"),
        )
    metrics = combined.where(F.col(_KIND) == _METRICS).agg(
        *[
            F.coalesce(F.sum(F.col(c)), F.lit(0)).cast("long").alias(n)
            for c, n in zip(_METRIC_COLUMNS, _METRIC_NAMES, strict=True)
        ]
    )
    return WindowedResult(
        results=results,
        metrics=metrics,
        output=combined,
        late_output_tag=config.late_output_tag,
        late=late,
    )


# ---------------------------------------------------------------------------- executor side
@dataclass(frozen=True, eq=False)
class _Replay:
    """The grouped-map function: replays one key's rows through a fresh WindowOperator.

    Shipped to executors with cloudpickle (with the assigner, trigger, evictor and functions).
    """

    assigner: Any
    spec: Any
    trigger: Any
    evictor: Any
    allowed_lateness: int
    late_output_tag: OutputTag | None
    keys: tuple[str, ...]
    input_names: list[str]
    input_schema: StructType
    out_schema: StructType
    out_arrow_types: list[pa.DataType]
    reduced_rows: bool
    watermark: Any  # a windowing.stream watermark strategy
    has_arrival: bool
    has_processing_time: bool
    result_cols: list[str]
    late_cols: list[str]

    def sort_keys(self) -> list[tuple[str, str, str]]:
        """Replay order: arrival order, else processing time, then event time, then the
        content hash (so that the order never depends on partitioning); nulls last."""
        if self.has_arrival:
            names = [_ARR, _TS, _TB]
        elif self.has_processing_time:
            names = [_PT, _TS, _TB]
        else:
            names = [_TS, _TB]
        return [(n, "ascending", "at_end") for n in names]

    def __call__(self, table: pa.Table) -> pa.Table:
        order = pc.sort_indices(table, sort_keys=self.sort_keys())
        table = table.take(order)
        return _replay_key(self, table)


def _key_of(replay: _Replay, table: pa.Table) -> Any:
    if not replay.keys:
        return None
    values = [arrow_to_python(table.column(k).slice(0, 1))[0] for k in replay.keys]
    return values[0] if len(values) == 1 else tuple(values)


def _rows(replay: _Replay, table: pa.Table) -> list[Any]:
    """The key's input rows as ``pyspark.sql.Row`` objects (built as ``Row`` builds them)."""
    names = replay.input_names
    columns = [arrow_to_python(table.column(n)) for n in names]
    new = tuple.__new__
    rows = []
    for values in zip(*columns, strict=True):
        row = new(Row, values)
        row.__fields__ = names
        rows.append(row)
    return rows


def _window_bounds(window: Any) -> tuple[int | None, int | None]:
    start = getattr(window, "start", None)
    end = getattr(window, "end", None)
    if not (isinstance(start, int) and isinstance(end, int)):
        return None, None
    return (
        start if -_INT64_MAX - 1 <= start <= _INT64_MAX else None,
        end if -_INT64_MAX - 1 <= end <= _INT64_MAX else None,
    )


def _tracking(items: list[tuple[Any, Any, Any]], current: list[Any]) -> Iterator[Any]:
    for item in items:
        current[0] = item
        yield item


def _replay_key(replay: _Replay, table: pa.Table) -> pa.Table:
    n = table.num_rows
    key = _key_of(replay, table)
    rows = _rows(replay, table)
    ts = table.column(_TS).to_pylist()
    wmax = table.column(_WMAX).to_pylist() if replay.has_arrival else None
    arrival = table.column(_ARR).to_pylist() if replay.has_arrival else None
    pts = table.column(_PT).to_pylist() if replay.has_processing_time else None
    tag = replay.late_output_tag
    op = WindowOperator(
        replay.assigner,
        replay.spec,
        trigger=replay.trigger,
        evictor=replay.evictor,
        allowed_lateness=replay.allowed_lateness,
        late_output_tag=tag,
    )
    event_time = op.is_event_time
    watermark_for = replay.watermark.current_watermark
    late_idx: list[int] = []
    late_wm: list[int | None] = []
    late_reason: list[str] = []
    null_ts = null_arr = 0
    pending: list[tuple[Any, Any, Any]] = []
    current: list[Any] = [None]

    def flush() -> None:
        if not pending:
            return
        current[0] = None
        try:
            op.process_elements(_tracking(pending, current))
        except Exception as exc:
            if current[0] is not None:
                value, t, _ = current[0]
                exc.add_note(
                    f"while processing the element {value!r} (event time {t}) of key {key!r} "
                    "in the Spark batch replay"
                )
            raise
        pending.clear()

    def advance(watermark: int, processing_time: int | None) -> None:
        try:
            if watermark > op.watermark:
                op.process_watermark(watermark)
            if processing_time is not None and processing_time > op.processing_time:
                op.advance_processing_time(processing_time)
        except Exception as exc:
            exc.add_note(
                f"while advancing the watermark to {watermark} / processing time to "
                f"{processing_time} for key {key!r} in the Spark batch replay"
            )
            raise

    for i in range(n):
        if arrival is not None and arrival[i] is None:
            null_arr += 1
            if tag is not None:
                late_idx.append(i)
                late_wm.append(None)
                late_reason.append(REASON_NULL_ARRIVAL_ORDER)
            continue
        wm = op.watermark
        if wmax is not None and wmax[i] is not None:
            wm = watermark_for(wmax[i])
        pt = pts[i] if pts is not None else None
        if wm > op.watermark or (pt is not None and pt > op.processing_time):
            flush()
            advance(wm, pt)
        t = ts[i]
        if t is None and event_time:
            null_ts += 1
            if tag is not None:
                late_idx.append(i)
                late_wm.append(op.watermark)
                late_reason.append(REASON_NULL_EVENT_TIME)
            continue
        pending.append((rows[i], t, key))
    flush()
    advance(MAX_TIMESTAMP, MAX_TIMESTAMP)

    for other, records in op.side_outputs.items():
        if other != tag and records:
            msg = (
                f"side output {other!r} from a ProcessWindowFunction's context.output() is not "
                "supported by the Spark batch runtime yet"
            )
            raise NotImplementedError(msg)
    if tag is not None:
        lates = op.side_outputs.get(tag, [])
        if lates:
            index = {id(r): i for i, r in enumerate(rows)}
            for e in lates:
                late_idx.append(index[id(e.value)])
                late_wm.append(e.watermark)
                late_reason.append(REASON_LATE)

    # -- results ----------------------------------------------------------------------------
    results = op.output
    n_res = len(results)
    n_late = len(late_idx)
    total = n_res + n_late + 1
    tail = [None] * (n_late + 1)
    encode = make_row_encoder(replay.input_schema if replay.reduced_rows else replay.out_schema)
    pick: Callable[[list[Any]], list[Any]]
    if replay.reduced_rows:
        kept = set(replay.out_schema.names)
        keep = [i for i, name in enumerate(replay.input_names) if name in kept]

        def pick(values: list[Any]) -> list[Any]:
            return [values[i] for i in keep]
    else:

        def pick(values: list[Any]) -> list[Any]:
            return values

    out_columns, ws, we, mt = result_columns(
        results, lambda value: pick(encode(value)), replay.out_schema
    )

    arrays: list[Any] = [pa.array([_RESULT] * n_res + [_LATE] * n_late + [_METRICS], pa.int8())]
    names: list[str] = [_KIND]
    first = pa.array([0] * total, pa.int64())
    for k in replay.keys:
        arrays.append(table.column(k).take(first))
        names.append(k)
    for name, values in ((_WS, ws), (_WE, we), (_MT, mt)):
        arrays.append(pa.array(values + tail, pa.int64()))
        names.append(name)
    for name, field, values, arrow_type in zip(
        replay.result_cols,
        replay.out_schema.fields,
        out_columns,
        replay.out_arrow_types,
        strict=True,
    ):
        try:
            arrays.append(pa.array(values + tail, arrow_type))
        except (pa.ArrowException, TypeError, ValueError) as exc:
            exc.add_note(
                f"while writing output column {field.name!r} ({field.dataType.simpleString()}) "
                f"for key {key!r}"
            )
            raise
        names.append(name)
    late_take = pa.array([None] * n_res + late_idx + [None], pa.int64())
    for name, input_name in zip(replay.late_cols, replay.input_names, strict=True):
        arrays.append(table.column(input_name).take(late_take))
        names.append(name)
    wm_out = [None if w is None or w == MIN_TIMESTAMP else w for w in late_wm]
    arrays.append(pa.array([None] * n_res + wm_out + [None], pa.int64()))
    names.append(_LWM)
    arrays.append(pa.array([None] * n_res + late_reason + [None], pa.string()))
    names.append(_LREASON)
    m = op.metrics
    left = sum(1 for _ in op.iter_windows(key))
    counters = {
        "num_input_rows": n,
        "num_elements": m.num_elements,
        "num_late_records_side_output": m.num_late_records_side_output,
        "num_late_records_dropped": m.num_late_records_dropped,
        "num_null_event_time": null_ts,
        "num_null_arrival_order": null_arr,
        "num_records_in_no_window": m.num_records_in_no_window,
        "num_windows_fired": m.num_windows_fired,
        "num_results": n_res,
        "num_windows_left_at_end": left,
        "num_keys": 1,
    }
    pad = [None] * (total - 1)
    for column_name, metric in zip(_METRIC_COLUMNS, _METRIC_NAMES, strict=True):
        arrays.append(pa.array([*pad, counters[metric]], pa.int64()))
        names.append(column_name)
    return pa.Table.from_arrays(arrays, names=names)
