"""Structured Streaming runtime: run a :class:`~windowing.stream.WindowedStream` over a
streaming DataFrame with ``transformWithStateInPandas`` (see ``docs/spark.md``).

The plan::

    input ──► add internal columns: event time in ms (__pw_ts), a content hash (__pw_tb)
          ──► withWatermark on a COPY of the event time (__pw_wm), projected away again, so
              Spark tracks the watermark but never drops a late row before the operator
          ──► groupBy(keys).transformWithStateInPandas(_WindowProcessor, EventTime, Append)
          ──► the tagged output of the batch path: results, late rows, per-batch metrics

Per key and micro-batch the processor reads one ``ValueState`` (the pickled
:class:`~windowing.operator.KeyState` plus the event-time timer registered for it), writes it
once (or clears it when the key holds nothing), and keeps exactly one Spark event-time timer:
the key's next due operator timer.

Watermarks: Spark's watermark ``W`` (``max event time of earlier batches - delay``) means
"rows with ``ts < W`` are late", which is Flink's watermark ``W - 1``, the value the batch
replay uses with an arrival order (``BoundedOutOfOrderness.current_watermark``). Spark's
initial watermark ``0`` means "no watermark yet" (``MIN_TIMESTAMP``).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from pyspark import cloudpickle
from pyspark.sql import DataFrame, Row
from pyspark.sql import functions as F  # noqa: N812 - the PySpark convention
from pyspark.sql.pandas.types import to_arrow_schema, to_arrow_type
from pyspark.sql.streaming.query import StreamingQuery
from pyspark.sql.streaming.stateful_processor import StatefulProcessor, StatefulProcessorHandle
from pyspark.sql.types import (
    BinaryType,
    StructField,
    StructType,
)

from windowing.operator import WindowOperator
from windowing.records import OutputTag
from windowing.spark.batch import (
    _KIND,
    _LATE,
    _LREASON,
    _LWM,
    _METRIC_COLUMNS,
    _METRIC_NAMES,
    _METRICS,
    _MT,
    _RESULT,
    _TB,
    _TS,
    _WE,
    _WS,
    LATE_COLUMNS,
    REASON_LATE,
    REASON_NULL_EVENT_TIME,
    _check_names,
    _col,
    _ms_to_time,
    _output_schema,
    combined_output_schema,
    result_columns,
)
from windowing.spark.schema import (
    arrow_to_python,
    column_time_kind,
    contains_map,
    make_row_encoder,
)
from windowing.time import MIN_TIMESTAMP

if TYPE_CHECKING:
    from functions.spec import WindowFunctionSpec
    from windowing.stream import WindowedStream

__all__ = ["ROCKSDB_PROVIDER", "StreamingWindowedResult", "run_streaming", "write_results_and_late"]

#: The state store provider ``transformWithStateInPandas`` needs.
ROCKSDB_PROVIDER = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
_PROVIDER_CONF = "spark.sql.streaming.stateStore.providerClass"
_WM = "__pw_wm"
_STATE_SCHEMA = StructType([StructField("state", BinaryType(), True)])


@dataclass(frozen=True, eq=False)
class StreamingWindowedResult:
    """The outcome of :func:`run_streaming`.

    Attributes
    ----------
    output
        The streaming, tagged operator output (the batch path's layout: ``__pw_kind`` 0 =
        result, 1 = late row, 2 = per-key, per-micro-batch metrics).
    late_output_tag
        The tag given to ``side_output_late_data``, if any.
    """

    output: DataFrame
    late_output_tag: OutputTag | None
    keys: tuple[str, ...]
    ts_kind: str
    out_fields: StructType
    input_schema: StructType
    result_cols: list[str]
    late_cols: list[str]

    def select_results(self, df: DataFrame) -> DataFrame:
        """The results of a tagged output ``df`` (streaming, or one ``foreachBatch`` batch):
        key column(s), ``window_start``, ``window_end``, function outputs, ``max_timestamp``."""
        return df.where(F.col(_KIND) == _RESULT).select(
            *[_col(k) for k in self.keys],
            _ms_to_time(F.col(_WS), self.ts_kind).alias("window_start"),
            _ms_to_time(F.col(_WE), self.ts_kind).alias("window_end"),
            *[
                F.col(c).alias(f.name)
                for c, f in zip(self.result_cols, self.out_fields.fields, strict=True)
            ],
            _ms_to_time(F.col(_MT), self.ts_kind).alias("max_timestamp"),
        )

    def select_late(self, df: DataFrame) -> DataFrame:
        """The late rows of a tagged output ``df``: the input columns plus
        ``late_watermark`` and ``late_reason``."""
        return df.where(F.col(_KIND) == _LATE).select(
            *[
                F.col(c).alias(f.name)
                for c, f in zip(self.late_cols, self.input_schema.fields, strict=True)
            ],
            _ms_to_time(F.col(_LWM), self.ts_kind).alias("late_watermark"),
            F.col(_LREASON).alias("late_reason"),
        )

    def select_metrics(self, df: DataFrame) -> DataFrame:
        """The metrics rows of a tagged output ``df`` (one per key and micro-batch; sum
        them). ``num_keys`` and ``num_windows_left_at_end`` are always 0 in streaming."""
        return df.where(F.col(_KIND) == _METRICS).select(
            *[F.col(c).alias(n) for c, n in zip(_METRIC_COLUMNS, _METRIC_NAMES, strict=True)]
        )

    @property
    def results(self) -> DataFrame:
        """The results as a streaming DataFrame (its own query; prefer
        :func:`write_results_and_late` to run the operator once for both outputs)."""
        return self.select_results(self.output)

    def get_side_output(self, tag: OutputTag) -> DataFrame:
        """The late rows for ``tag`` as a streaming DataFrame."""
        if self.late_output_tag is None or tag != self.late_output_tag:
            msg = f"no side output {tag!r}: this result has {self.late_output_tag!r}"
            raise ValueError(msg)
        return self.select_late(self.output)


def run_streaming(
    stream: WindowedStream, spec: WindowFunctionSpec, output_schema: Any = None
) -> StreamingWindowedResult:
    """Build the streaming plan for ``stream`` (whose source DataFrame is streaming) with the
    window function ``spec`` (``functions.spec.Reduce(...)``, ``Aggregate(...)``, ...).

    Sets the session's state store provider to RocksDB (``ROCKSDB_PROVIDER``), which
    ``transformWithStateInPandas`` requires. Event time only: processing-time assigners,
    ``arrival_order`` and ``processing_time`` columns are rejected.
    """
    source = stream.source
    df = source.df
    config = stream.config
    keys = tuple(stream.keys or ())
    if not df.isStreaming:
        msg = "run_streaming needs a streaming DataFrame; use the terminal calls for batch"
        raise ValueError(msg)
    if source.arrival_order is not None or source.processing_time is not None:
        msg = (
            "run_streaming: arrival_order / processing_time columns are not supported; the "
            "micro-batches are the arrival order"
        )
        raise NotImplementedError(msg)
    op = WindowOperator(
        config.assigner,
        spec,
        trigger=config.trigger,
        evictor=config.evictor,
        allowed_lateness=config.allowed_lateness,
        late_output_tag=config.late_output_tag,
    )
    if not op.is_event_time:
        msg = "run_streaming: only event-time assigners are supported"
        raise NotImplementedError(msg)
    input_schema = df.schema
    ts_kind = column_time_kind(df, source.event_time, "event_time")
    out_fields, reduced_rows = _output_schema(spec, output_schema, input_schema, keys)
    _check_names(
        [*keys, "window_start", "window_end", *out_fields.names, "max_timestamp"], "results"
    )
    if config.late_output_tag is not None:
        _check_names([*input_schema.names, *LATE_COLUMNS], "late side output")
    spark = df.sparkSession
    spark.conf.set(_PROVIDER_CONF, ROCKSDB_PROVIDER)

    ts_col = (
        F.unix_millis(_col(source.event_time))
        if ts_kind == "timestamp"
        else _col(source.event_time).cast("long")
    )
    hashable = [_col(f.name) for f in input_schema.fields if not contains_map(f.dataType)]
    prepared = (
        df.select(
            *[_col(c) for c in df.columns],
            ts_col.alias(_TS),
            (F.xxhash64(*hashable) if hashable else F.lit(0).cast("long")).alias(_TB),
        )
        .withColumn(_WM, F.timestamp_millis(F.col(_TS)))
        .withWatermark(_WM, f"{source.watermark.delay} milliseconds")
        .drop(_WM)
    )

    key_fields = [input_schema[k] for k in keys]
    late_cols, result_cols, combined_schema = combined_output_schema(
        key_fields, out_fields, input_schema
    )
    tz = spark.conf.get("spark.sql.session.timeZone") or "UTC"
    processor = _WindowProcessor(
        _Config(
            assigner=config.assigner,
            spec=spec,
            trigger=config.trigger,
            evictor=config.evictor,
            allowed_lateness=config.allowed_lateness,
            late_output_tag=config.late_output_tag,
            keys=keys,
            input_schema=input_schema,
            input_arrow=to_arrow_schema(input_schema, timezone=tz),
            key_arrow_types=[to_arrow_type(f.dataType, timezone=tz) for f in key_fields],
            out_schema=out_fields,
            out_arrow_types=[to_arrow_type(f.dataType, timezone=tz) for f in out_fields.fields],
            reduced_rows=reduced_rows,
            combined_arrow=to_arrow_schema(combined_schema, timezone=tz),
        )
    )
    grouped = prepared.groupBy(*[_col(k) for k in keys]) if keys else prepared.groupBy()
    output = grouped.transformWithStateInPandas(
        statefulProcessor=processor,
        outputStructType=combined_schema,
        outputMode="Append",
        timeMode="EventTime",
    )
    return StreamingWindowedResult(
        output=output,
        late_output_tag=config.late_output_tag,
        keys=keys,
        ts_kind=ts_kind,
        out_fields=out_fields,
        input_schema=input_schema,
        result_cols=result_cols,
        late_cols=late_cols,
    )


def write_results_and_late(
    result: StreamingWindowedResult,
    results_path: str,
    late_path: str | None,
    checkpoint: str,
    *,
    available_now: bool = False,
    processing_time: str | None = None,
    query_name: str | None = None,
) -> StreamingQuery:
    """Start ONE streaming query that writes the results and the late rows to two parquet
    directories with ``foreachBatch``.

    Each micro-batch goes to ``<path>/batch_id=<N>`` with mode ``overwrite``, so a batch
    replayed after a failure replaces its own earlier partial output (idempotent per batch
    id); ``spark.read.parquet(path)`` reads all batches (with a ``batch_id`` column).
    Restart with the same ``checkpoint`` to continue where the query stopped.
    """

    def write_batch(batch: DataFrame, batch_id: int) -> None:
        batch = batch.persist()
        try:
            result.select_results(batch).write.mode("overwrite").parquet(
                f"{results_path}/batch_id={batch_id}"
            )
            if late_path is not None and result.late_output_tag is not None:
                result.select_late(batch).write.mode("overwrite").parquet(
                    f"{late_path}/batch_id={batch_id}"
                )
        finally:
            batch.unpersist()

    writer = result.output.writeStream.foreachBatch(write_batch).option(
        "checkpointLocation", checkpoint
    )
    if query_name is not None:
        writer = writer.queryName(query_name)
    if available_now:
        writer = writer.trigger(availableNow=True)
    elif processing_time is not None:
        writer = writer.trigger(processingTime=processing_time)
    return writer.start()


# ---------------------------------------------------------------------------- executor side
@dataclass(frozen=True, eq=False)
class _Config:
    assigner: Any
    spec: Any
    trigger: Any
    evictor: Any
    allowed_lateness: int
    late_output_tag: OutputTag | None
    keys: tuple[str, ...]
    input_schema: StructType
    input_arrow: pa.Schema
    key_arrow_types: list[pa.DataType]
    out_schema: StructType
    out_arrow_types: list[pa.DataType]
    reduced_rows: bool
    combined_arrow: pa.Schema


def _flink_watermark(spark_watermark_ms: int) -> int:
    """Spark's watermark (late when ``ts < W``; ``0`` = none yet) as the operator's
    (Flink's: late when ``ts <= W``)."""
    return MIN_TIMESTAMP if spark_watermark_ms <= 0 else spark_watermark_ms - 1


class _WindowProcessor(StatefulProcessor):
    """One ``WindowOperator`` per Python worker; per key one ValueState and one timer."""

    def __init__(self, config: _Config) -> None:
        self.config = config

    def init(self, handle: StatefulProcessorHandle) -> None:
        c = self.config
        self.handle = handle
        self.state = handle.getValueState("state", _STATE_SCHEMA)
        self.op = WindowOperator(
            c.assigner,
            c.spec,
            trigger=c.trigger,
            evictor=c.evictor,
            allowed_lateness=c.allowed_lateness,
            late_output_tag=c.late_output_tag,
        )
        self.encode = make_row_encoder(c.input_schema if c.reduced_rows else c.out_schema)
        names = c.input_schema.names
        kept = set(c.out_schema.names)
        self.keep = [i for i, n in enumerate(names) if n in kept] if c.reduced_rows else None

    # -- state ---------------------------------------------------------------------------
    def _load(self) -> tuple[int | None, Any]:
        value = self.state.get()
        if value is None or value[0] is None:
            return None, self.op.new_key_state()
        timer, ks = cloudpickle.loads(value[0])
        return timer, ks

    def _save(self, timer: int | None, ks: Any, *, timer_alive: bool) -> None:
        """Write the state once and keep one Spark timer at the next due operator timer.

        A timer is registered no earlier than ``W + 1`` (Spark watermark ``W``): operator
        timers at or below the current watermark fire at the next watermark advance, as in
        Flink and in the batch replay."""
        nxt = ks.next_event_time()
        new_timer = None
        if nxt is not None:
            current = self.spark_watermark
            new_timer = max(nxt + 1, current + 1) if nxt < 2**63 - 2 else None
        if timer_alive and timer is not None and timer != new_timer:
            self.handle.deleteTimer(timer)
        if new_timer is not None and new_timer != (timer if timer_alive else None):
            self.handle.registerTimer(new_timer)
        if ks.is_empty() and new_timer is None:
            self.state.clear()
        else:
            self.state.update((cloudpickle.dumps((new_timer, ks)),))  # type: ignore[no-untyped-call]

    # -- callbacks -------------------------------------------------------------------------
    def handleInputRows(  # noqa: N802 - Spark's name
        self,
        key: Any,
        rows: Iterator[pd.DataFrame],
        timerValues: Any,  # noqa: N803
    ) -> Any:
        c = self.config
        pdf = pd.concat(list(rows), ignore_index=True)
        # Columns by position (the input columns, then __pw_ts, __pw_tb): Spark hands
        # internal ("__pw_*") columns over as "_<i>".
        n_in = len(c.input_schema.names)
        pdf = pdf.iloc[:, : n_in + 2].set_axis([*c.input_schema.names, _TS, _TB], axis=1)
        table = pa.Table.from_pandas(
            pdf,
            schema=pa.schema(
                [*c.input_arrow, pa.field(_TS, pa.int64()), pa.field(_TB, pa.int64())]
            ),
            preserve_index=False,
            safe=False,
        )
        # The batch replay's order for rows that arrived together (same arrival order):
        # event time, then the content hash, nulls last; deterministic across re-executions.
        order = pc.sort_indices(
            table, sort_keys=[(_TS, "ascending"), (_TB, "ascending")], null_placement="at_end"
        )
        table = table.take(order)
        timer, ks = self._load()
        k = self._key(key)
        self._set_watermark(timerValues)
        op = self.op
        self._reset()
        self._fire(k, ks)
        names = c.input_schema.names
        columns = [arrow_to_python(table.column(n)) for n in names]
        ts = table.column(_TS).to_pylist()
        new = tuple.__new__
        late_rows: list[int] = []
        late_wm: list[int | None] = []
        late_reason: list[str] = []
        index: dict[int, int] = {}
        null_ts = 0
        for i, values in enumerate(zip(*columns, strict=True)):
            row = new(Row, values)
            row.__fields__ = names
            t = ts[i]
            if t is None:
                null_ts += 1
                if c.late_output_tag is not None:
                    late_rows.append(i)
                    late_wm.append(op.watermark)
                    late_reason.append(REASON_NULL_EVENT_TIME)
                continue
            index[id(row)] = i
            try:
                op.on_element(k, ks, row, t)
            except Exception as exc:
                exc.add_note(
                    f"while processing the element {row!r} (event time {t}) of key {k!r} "
                    "in the Spark streaming runtime"
                )
                raise
        if c.late_output_tag is not None:
            for e in op.side_outputs.get(c.late_output_tag, []):
                late_rows.append(index[id(e.value)])
                late_wm.append(e.watermark)
                late_reason.append(REASON_LATE)
        self._save(timer, ks, timer_alive=True)
        out = self._emit(key, table, late_rows, late_wm, late_reason, len(pdf), null_ts)
        if out is not None:
            yield out

    def handleExpiredTimer(  # noqa: N802 - Spark's name; called with keyword arguments
        self,
        key: Any,
        timerValues: Any,  # noqa: N803
        expiredTimerInfo: Any,  # noqa: N803
    ) -> Any:
        timer, ks = self._load()
        self._set_watermark(timerValues)
        self._reset()
        self._fire(self._key(key), ks)
        self._save(timer, ks, timer_alive=False)
        out = self._emit(key, None, [], [], [], 0, 0)
        if out is not None:
            yield out

    def close(self) -> None:
        pass

    # -- helpers ---------------------------------------------------------------------------
    def _key(self, key: Any) -> Any:
        if not self.config.keys:
            return None
        values = tuple(v.item() if hasattr(v, "item") else v for v in key)
        return values[0] if len(values) == 1 else values

    def _set_watermark(self, timer_values: Any) -> None:
        self.spark_watermark = int(timer_values.getCurrentWatermarkInMs())
        self.op.watermark = max(self.op.watermark, _flink_watermark(self.spark_watermark))

    def _reset(self) -> None:
        op = self.op
        op.output.clear()
        op.side_outputs.clear()
        op.metrics = type(op.metrics)()

    def _fire(self, key: Any, ks: Any) -> None:
        try:
            self.op.fire_timers(key, ks)
        except Exception as exc:
            exc.add_note(
                f"while firing timers at watermark {self.op.watermark} for key {key!r} in the "
                "Spark streaming runtime"
            )
            raise

    def _emit(
        self,
        key: Any,
        table: pa.Table | None,
        late_rows: list[int],
        late_wm: list[int | None],
        late_reason: list[str],
        n_input: int,
        null_ts: int,
    ) -> pd.DataFrame | None:
        c = self.config
        op = self.op
        for other, records in op.side_outputs.items():
            if other != c.late_output_tag and records:
                msg = (
                    f"side output {other!r} from a ProcessWindowFunction's context.output() "
                    "is not supported by the Spark streaming runtime yet"
                )
                raise NotImplementedError(msg)
        results = op.output
        m = op.metrics
        if not results and not late_rows and n_input == 0 and m.num_windows_fired == 0:
            return None
        n_res, n_late = len(results), len(late_rows)
        total = n_res + n_late + 1
        tail = [None] * (n_late + 1)
        keep = self.keep

        def encode(value: Any) -> list[Any]:
            values = self.encode(value)
            return values if keep is None else [values[i] for i in keep]

        out_columns, ws, we, mt = result_columns(results, encode, c.out_schema)
        arrays: list[Any] = [pa.array([_RESULT] * n_res + [_LATE] * n_late + [_METRICS], pa.int8())]
        key_values = [v.item() if hasattr(v, "item") else v for v in key]
        for v, t in zip(key_values, c.key_arrow_types, strict=True):
            arrays.append(pa.array([v] * total, t))
        for values in (ws, we, mt):
            arrays.append(pa.array(values + tail, pa.int64()))
        for values, t in zip(out_columns, c.out_arrow_types, strict=True):
            arrays.append(pa.array(values + tail, t))
        late_take = pa.array([None] * n_res + late_rows + [None], pa.int64())
        for i, f in enumerate(c.input_arrow):
            if table is None:
                arrays.append(pa.nulls(total, f.type))
            else:
                arrays.append(table.column(i).take(late_take))
        wm_out = [None if w is None or w == MIN_TIMESTAMP else w for w in late_wm]
        arrays.append(pa.array([None] * n_res + wm_out + [None], pa.int64()))
        arrays.append(pa.array([None] * n_res + late_reason + [None], pa.string()))
        counters = {
            "num_input_rows": n_input,
            "num_elements": m.num_elements,
            "num_late_records_side_output": m.num_late_records_side_output,
            "num_late_records_dropped": m.num_late_records_dropped,
            "num_null_event_time": null_ts,
            "num_null_arrival_order": 0,
            "num_records_in_no_window": m.num_records_in_no_window,
            "num_windows_fired": m.num_windows_fired,
            "num_results": n_res,
            "num_windows_left_at_end": 0,
            "num_keys": 0,
        }
        pad = [None] * (total - 1)
        for name in _METRIC_NAMES:
            arrays.append(pa.array([*pad, counters[name]], pa.int64()))
        out = pa.Table.from_arrays(arrays, schema=c.combined_arrow)
        return out.to_pandas(integer_object_nulls=True, date_as_object=True)
