"""Structured Streaming runtime: run a :class:`~windowing.stream.WindowedStream` over a
streaming DataFrame with ``transformWithStateInPandas`` (see ``docs/spark.md``).

The plan::

    input ──► add internal columns: event time in ms (__pw_ts), a content hash (__pw_tb),
              arrival order (__pw_arr) and processing time (__pw_pt) when given
          ──► withWatermark on a COPY of the event time (__pw_wm), projected away again, so
              Spark tracks the watermark but never drops a late row before the operator
          ──► the key group (__pw_kg): pmod(hash(keys), max_parallelism), 0 for window_all
          ──► groupBy(__pw_kg).transformWithStateInPandas(WindowProcessor, Append,
              EventTime | ProcessingTime)
          ──► one row per call: the call's tagged output (results, side outputs, late rows,
              metrics rows; the batch path's layout) as an Arrow IPC stream in one binary
              column
          ──► mapInArrow(unpack): the tagged output, observed as summed counters
              (``METRICS_NAME``; ``windowing_2``, ... for later stages of one query)

A stage over an earlier stage's results (consecutive windows, :mod:`~windowing.spark.
streaming.stages`) defines no watermark: the first stage's flows through, and its key calls
take their rows before the watermark moves, then fire.

A call handles one key group (Flink's key groups): its rows are split by key and each key
runs as its own operator call. For built-in aggregations of tumbling windows
(:mod:`windowing.spark.columnar.core`), the keys of the group whose rows the columns can take
(every key, in the common case) instead run together, on whole columns: their open windows
are one :class:`~windowing.spark.columnar.core.OpenWindows` for the group, and only the others
(a key with a null event time, an element within its allowed lateness, ...) run key by key.
Per key group and micro-batch the processor reads one ``ValueState`` (the group's columnar
windows, and for each key run by the operator its pickled
:class:`~windowing.operator.KeyState` with its due time), writes it once (or clears it when
nothing is left), and keeps exactly one Spark timer: the earliest due time of its windows,
in event time, or in processing time for a processing-time assigner without a
``processing_time`` column (``ProcessingTime`` mode, the micro-batch's wall clock).
State-store calls are round trips of 0.1-0.8 ms each; per key group they are a constant
number, however many keys it holds. With an idle timeout (:mod:`windowing.idleness`) the
query runs in ``ProcessingTime`` mode: a key group with pending windows looks at them again
every micro-batch, each key with its own clock
(:class:`~windowing.spark.streaming.clocks.KeyClocks`).

Watermarks: Spark's watermark ``W`` (``max event time of earlier batches - delay``) means
"rows with ``ts < W`` are late", which is Flink's watermark ``W - 1``, the value the batch
replay uses with an arrival order (``BoundedOutOfOrderness.current_watermark``). Spark's
watermark never goes below its initial ``0`` ("no watermark yet"), so the copy of the event
time it is defined on is shifted by :data:`WATERMARK_SHIFT_MS` (the epoch seen from
0001-01-01): Spark's watermark and timers are ``shift`` ahead of the operator's, and event
times before 1970 get the watermark the batch replay gives them.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F  # noqa: N812 - the PySpark convention
from pyspark.sql.pandas.types import to_arrow_schema, to_arrow_type
from pyspark.sql.streaming.stateful_processor import StatefulProcessor
from pyspark.sql.types import (
    DoubleType,
    FloatType,
    StructType,
)

from windowing.definition import JobDefinition
from windowing.functions.spec import with_input_schema
from windowing.job import InputWatermarks, Job, StreamSource
from windowing.records import OutputTag
from windowing.spark.batch.replay_plan import (
    build_layout,
)
from windowing.spark.columnar.vectorized_items import with_output
from windowing.spark.columns.frames import PACKED_SCHEMA, timestamps_as_micros, unpack
from windowing.spark.columns.inputs import TS as _TS
from windowing.spark.columns.inputs import internal_columns
from windowing.spark.columns.keys import (
    KEY_GROUP,
    key_group,
)
from windowing.spark.columns.metrics import NO_VALUE, STREAMING_METRICS
from windowing.spark.columns.null_results import null_result_accumulator
from windowing.spark.columns.output import (
    OutputLayout,
    col,
    counter_sql,
)
from windowing.spark.columns.units import StreamingUnitCheck, unit_checks_in
from windowing.spark.jobs import (
    idleness_of,
    streaming_key_groups,
    streaming_time_mode,
    uses_wall_clock,
)
from windowing.spark.streaming.clocks import WATERMARK_SHIFT_MS
from windowing.spark.streaming.config import ProcessorConfig
from windowing.spark.streaming.job_record import job_definition
from windowing.spark.streaming.processor import WindowProcessor
from windowing.spark.streaming.sinks import check_sink_paths, write_results_and_late
from windowing.spark.streaming.stages import (
    ALLOW_MULTIPLE,
    WATERMARK_COPY,
    check_later_stage,
    find_stages,
    plan_facts,
    register_stage,
    stage_metrics_name,
)
from windowing.spark.streaming.state_reader import read_state

if TYPE_CHECKING:
    from windowing.functions.spec import WindowFunctionSpec
    from windowing.spark.planning import SparkPlan

__all__ = [
    "METRICS_NAME",
    "ROCKSDB_PROVIDER",
    "StreamingWindowedResult",
    "check_sink_paths",
    "gauge_totals",
    "prepared_input",
    "run_streaming",
    "stateful_output",
    "use_rocksdb",
    "write_results_and_late",
]

#: The state store provider ``transformWithStateInPandas`` needs.
ROCKSDB_PROVIDER = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
#: The name of the observed metrics in ``query.lastProgress["observedMetrics"]``.
METRICS_NAME = "windowing"
_PROVIDER_CONF = "spark.sql.streaming.stateStore.providerClass"


def use_rocksdb(spark: Any) -> None:
    """Set the session's state store provider to RocksDB (:data:`ROCKSDB_PROVIDER`), which
    ``transformWithStateInPandas`` requires."""
    spark.conf.set(_PROVIDER_CONF, ROCKSDB_PROVIDER)


_GROUP = KEY_GROUP  # the key group: Spark's grouping column
_NAN = "__pw_nan"  # prefix of the NaN masks of float columns


@dataclass(frozen=True, eq=False)
class StreamingWindowedResult:
    """The outcome of :func:`run_streaming`.

    Attributes
    ----------
    output
        The streaming, tagged operator output (internal layout: results, side outputs, late
        rows and per-key, per-micro-batch metrics rows); with ``metrics_name``, observed.
    layout
        How to split ``output`` (or one ``foreachBatch`` batch of it).
    time_mode
        ``"EventTime"``, or ``"ProcessingTime"`` for a processing-time assigner without a
        ``processing_time`` column (the wall clock) or with an idle timeout.
    metrics_name
        The name of the observed metrics in ``query.lastProgress["observedMetrics"]``: the
        requested one, or for a later stage of a query of consecutive windows the first
        free suffix of it (``windowing_2``, ...; :mod:`windowing.spark.streaming.stages`).
    plan
        How the job runs (:class:`~windowing.spark.planning.SparkPlan`); :meth:`explain` prints it.
    config
        The stateful processor's configuration (:meth:`read_state` decodes the state with
        it).
    definition
        The job's definition, which its checkpoint records (a restart with a job whose
        state-shaping parts differ is refused: :mod:`windowing.spark.streaming.job_record`).
    upstream
        The windowing stages whose results feed this one in its query, the first first
        (Flink's consecutive windows; empty for a first stage).
    unit_checks
        The checks of the integral event-time columns without a declared unit that the
        query reads (this stage's input, a join's inputs, earlier stages' inputs), which
        :func:`write_results_and_late` makes on the first micro-batch with event times.
    project
        What the results become after the operator's (a window join's ``select``: its
        columns in place of each pair's rows), if anything.
    """

    output: DataFrame
    layout: OutputLayout
    plan: SparkPlan
    time_mode: str = "EventTime"
    metrics_name: str | None = METRICS_NAME
    config: ProcessorConfig | None = None
    definition: JobDefinition | None = None
    upstream: tuple[StreamingWindowedResult, ...] = ()
    unit_checks: tuple[StreamingUnitCheck, ...] = ()
    project: Callable[[DataFrame], DataFrame] | None = None

    @property
    def stages(self) -> tuple[StreamingWindowedResult, ...]:
        """The windowing stages of this result's query up to this one, the first first: the
        stages whose results feed it (``upstream``, found in its input's plan when they
        observe their metrics), then itself."""
        return (*self.upstream, self)

    def observed_metrics(self, progress: Any) -> dict[str, Any] | None:
        """This stage's metrics in one progress of its query (``query.lastProgress`` or an
        item of ``query.recentProgress``), under :attr:`metrics_name`; ``None`` when the
        progress has none (metrics off, or no micro-batch yet).

        Example::

            first.observed_metrics(query.lastProgress)["num_windows_fired"]
        """
        if progress is None or self.metrics_name is None:
            return None
        found = progress["observedMetrics"].get(self.metrics_name)
        return None if found is None else found.asDict()

    def read_state(self, checkpoint: str, batch_id: int | None = None) -> DataFrame:
        """The open windows of this query's state in ``checkpoint`` (a running or stopped
        query's), as written by micro-batch ``batch_id`` (default: the last committed one):
        per key and window, the key column(s), ``key_group``, ``window_start``,
        ``window_end``, ``state_form`` (``"elements"`` or ``"accumulator"``), ``num_rows_in``
        (the rows the window took in), ``num_stored_elements`` (the elements it keeps; null
        for an accumulator), ``event_timers``, ``processing_timers``, ``watermark`` and
        ``batch_id`` (``windowing.spark.streaming.state_reader``).

        Example::

            result.read_state("/chk/clicks").where("size(event_timers) > 0").show()
        """
        assert self.config is not None, "a result built by run_streaming"
        spark = self.output.sparkSession
        return read_state(spark, self.config, checkpoint, batch_id, stage=len(self.upstream))

    @property
    def late_output_tag(self) -> OutputTag | None:
        """The tag given to ``side_output_late_data``, if any."""
        return self.layout.late_output_tag

    def check_late_path(self, late_path: object) -> None:
        """Nothing to refuse: the late rows of ``side_output_late_data`` go to
        ``late_path`` (without it, late rows are dropped and counted, and nothing is
        written there)."""

    def explain(self) -> None:
        """Print how the job runs: the runtime, a columnar path if any, and the strategy the
        operator runs with its reason (``windowing.plan``)."""
        print(self.plan)

    def select_results(self, df: DataFrame) -> DataFrame:
        """The results of a tagged output ``df`` (streaming, or one ``foreachBatch`` batch):
        key column(s), ``window_start``, ``window_end``, function outputs, ``max_timestamp``."""
        results = self.layout.select_results(df)
        return results if self.project is None else self.project(results)

    def select_late(self, df: DataFrame) -> DataFrame:
        """The late rows of a tagged output ``df``: the input columns plus
        ``late_watermark`` and ``late_reason``."""
        return self.layout.select_late(df)

    def select_dead_letters(self, df: DataFrame) -> DataFrame:
        """The dead letters of a tagged output ``df`` (``on_error("dead_letter")``; see
        ``WindowedResult.dead_letters``)."""
        return self.layout.select_dead_letters(df)

    @property
    def dead_letters(self) -> DataFrame:
        """The dead letters as a streaming DataFrame (its own query; prefer
        :func:`write_results_and_late` with ``dead_letter_path``)."""
        return self.select_dead_letters(self.output)

    def select_side_output(self, df: DataFrame, tag: OutputTag) -> DataFrame:
        """The side output ``tag`` of a tagged output ``df`` (see :meth:`get_side_output`)."""
        return self.layout.select_side_output(df, tag)

    def select_metrics(self, df: DataFrame) -> DataFrame:
        """The metrics rows of a tagged output ``df`` (one per key and micro-batch; sum
        them). ``num_keys`` and ``num_windows_left_at_end`` are always 0 in streaming."""
        return self.layout.select_metrics(df)

    @property
    def results(self) -> DataFrame:
        """The results as a streaming DataFrame (its own query; prefer
        :func:`write_results_and_late` to run the operator once for all outputs)."""
        return self.select_results(self.output)

    def get_side_output(self, tag: OutputTag) -> DataFrame:
        """A side output as a streaming DataFrame: the late rows for the late tag, or the
        values of ``context.output(tag, ...)`` for a tag declared in ``side_output_schemas``
        (key column(s), ``window_start``, ``window_end``, the fields, ``max_timestamp``);
        ``ValueError`` for any other tag."""
        return self.layout.select_side_output(self.output, tag)


#: The largest epoch milliseconds ``timestamp_millis`` takes (it multiplies by 1,000).
_SPARK_MAX_MILLIS = (2**63 - 1) // 1_000


def watermark_source(ts: Column) -> Column:
    """The timestamp Spark's watermark is defined on: the event time (ms) shifted by
    :data:`WATERMARK_SHIFT_MS`, clamped to what a Spark timestamp holds (about +-292,000
    years): a bigint event time near the ends of ``long`` then moves Spark's watermark to its
    limit instead of failing every micro-batch with an overflow."""
    hi, lo = _SPARK_MAX_MILLIS, -_SPARK_MAX_MILLIS
    shifted = (
        F.when(ts > F.lit(hi - WATERMARK_SHIFT_MS), F.lit(hi))
        .when(ts < F.lit(lo - WATERMARK_SHIFT_MS), F.lit(lo))
        .otherwise(ts + F.lit(WATERMARK_SHIFT_MS))
    )
    return F.timestamp_millis(shifted)


def run_streaming(
    plan: SparkPlan,
    stream: Job,
    spec: WindowFunctionSpec,
    output_schema: Any = None,
    side_output_schemas: Mapping[OutputTag, Any] | None = None,
    *,
    metrics_name: str | None = METRICS_NAME,
) -> StreamingWindowedResult:
    """Build the streaming query of ``plan`` (route ``STREAMING``) for ``stream`` (whose
    source DataFrame is streaming) with the window function ``spec``
    (``functions.spec.Reduce(...)``, ``Aggregate(...)``, ...).

    ``output_schema`` and ``side_output_schemas`` are those of the builder's terminal calls.
    The counters of :data:`~windowing.spark.columns.metrics.STREAMING_METRICS` are observed under
    ``metrics_name`` (``None``: not observed). Sets the session's state store provider to
    RocksDB (``ROCKSDB_PROVIDER``), which ``transformWithStateInPandas`` requires.
    """
    source = stream.source
    df = source.df
    config = stream.config
    keys = tuple(stream.keys or ())
    if not df.isStreaming:
        msg = "run_streaming needs a streaming DataFrame; use the terminal calls for batch"
        raise ValueError(msg)
    if metrics_name is not None and (not isinstance(metrics_name, str) or not metrics_name):
        msg = f"metrics_name must be a non-empty str or None, got {metrics_name!r}"
        raise ValueError(msg)
    layout = build_layout(stream, spec, output_schema, side_output_schemas)
    key_groups = streaming_key_groups(stream)
    wall_clock = uses_wall_clock(stream)
    spark = df.sparkSession
    facts = plan_facts(df)
    # a later stage of the query: the watermark is the first stage's (stages.py); the inputs
    # of a join define their own watermarks as a first stage does, and are not one
    joined = isinstance(source.watermark, InputWatermarks)
    later = facts.after_a_stage and not wall_clock and not joined
    if later:
        check_later_stage(stream, facts, spark.conf.get(ALLOW_MULTIPLE, "true"))
    if metrics_name is not None:
        metrics_name = stage_metrics_name(metrics_name, facts.metric_names)
    use_rocksdb(spark)

    # the checks of the inputs its plan observes already (a join's sides, earlier stages)
    unit_checks = unit_checks_in(o.name for o in reversed(facts.observed))
    if source.event_time_unit is None:
        df, own = StreamingUnitCheck.observe(df, source.event_time)
        unit_checks += () if own is None else (own,)
    prepared, nan_masks = prepared_input(df, source)
    if not wall_clock and not later and not isinstance(source.watermark, InputWatermarks):
        # The watermark is defined on a copy of the event time that is projected away, so
        # Spark never drops a late row before the operator (docs/spark-internals.md). The inputs of
        # a join define their own, each on its input (windowing.spark.joins): Spark refuses a
        # second definition after them, and takes the smallest of theirs.
        prepared = (
            prepared.withColumn(WATERMARK_COPY, watermark_source(F.col(_TS)))
            .withWatermark(WATERMARK_COPY, f"{source.watermark.delay} milliseconds")
            .drop(WATERMARK_COPY)
        )
    internal = tuple(prepared.columns[len(df.columns) :])  # __pw_ts, __pw_tb[, ...][, __pw_nan0]
    tz = layout.timezone
    input_arrow = to_arrow_schema(layout.input_schema, timezone=tz)
    spec = with_input_schema(spec, input_arrow)  # a vectorized function's batches
    columnar = with_output(plan.columnar, layout.out_schema)  # a vectorized function's
    time_mode = streaming_time_mode(stream)
    definition = job_definition(
        stream, spec, layout, key_groups=key_groups, time_mode=time_mode, columnar=columnar
    )
    _, null_results = null_result_accumulator(spark, spec, dead_letter=layout.dead_letter)
    processor = WindowProcessor(
        ProcessorConfig(
            window=config,
            spec=spec,
            layout=layout,
            internal=internal,
            input_arrow=input_arrow,
            key_arrow_types=[
                to_arrow_type(layout.input_schema[k].dataType, timezone=tz) for k in keys
            ],
            wall_clock=wall_clock,
            key_groups=key_groups,
            nan_masks=nan_masks,
            columnar=columnar,
            idleness=idleness_of(stream),
            job_digest=definition.digest,
            null_results=null_results,
            later_stage=later,
            later_sides=source.watermark.following
            if isinstance(source.watermark, InputWatermarks)
            else (),
        )
    )
    output = stateful_output(prepared, keys, key_groups, processor, layout.schema, time_mode)
    if metrics_name is not None:
        output = output.observe(
            metrics_name, *layout.metric_totals(STREAMING_METRICS), *gauge_totals()
        )
    result = StreamingWindowedResult(
        output=output,
        layout=layout,
        plan=plan,
        time_mode=time_mode,
        metrics_name=metrics_name,
        config=processor.config,
        definition=definition,
        upstream=find_stages(facts),
        unit_checks=unit_checks,
    )
    register_stage(result)
    return result


def prepared_input(
    df: DataFrame, source: StreamSource
) -> tuple[DataFrame, tuple[tuple[str, tuple[str, ...]], ...]]:
    """A streaming input with the runtime's columns after its own: the internal columns
    (:func:`~windowing.spark.columns.inputs.internal_columns`, arrival order flat) and the
    NaN masks of its float columns (a stateful processor's pandas frames hold NaN and null
    alike), with those masks ``(column, float columns)``."""
    nan_masks = _nan_masks(df)
    prepared = df.select(
        *internal_columns(df, source, flat=True),
        *[_nan_mask(names).alias(name) for name, names in nan_masks],
    )
    return prepared, tuple(nan_masks)


def stateful_output(
    prepared: DataFrame,
    keys: Sequence[str],
    key_groups: int,
    processor: StatefulProcessor,
    schema: StructType,
    time_mode: str,
) -> DataFrame:
    """The tagged output of ``processor`` (of ``schema``) over ``prepared``
    (:func:`prepared_input`), called per key group of ``keys``: grouped by key group, after
    the columns the processor reads by position (no keys: one group, as a stateful operator
    needs a grouping column), in ``transformWithStateInPandas``, its packed output unpacked."""
    keyed = prepared.withColumn(_GROUP, key_group(keys, key_groups))
    grouped = timestamps_as_micros(keyed).groupBy(_GROUP)
    packed = grouped.transformWithStateInPandas(
        statefulProcessor=processor,
        outputStructType=PACKED_SCHEMA,
        outputMode="Append",
        timeMode=time_mode,
    )
    return packed.mapInArrow(unpack, schema=schema)


def gauge_totals(
    value: Callable[[str], str] = counter_sql, count: str = "open_windows"
) -> list[Column]:
    """Aggregates of a micro-batch's gauges
    (:data:`~windowing.spark.columns.metrics.STREAMING_GAUGES`; the lag is null without rows
    or a watermark), read by ``value`` (SQL text of a gauge by name) from the metrics rows;
    ``count``: the gauge summed as the state's size in items (open windows)."""

    def seen(name: str) -> str:
        found = value(name)
        return f"MAX(CASE WHEN {found} > {NO_VALUE}L THEN {found} END)"

    state, items = value("state_bytes"), value(count)
    lag = f"{seen('max_event_time')} - {seen('watermark')}"
    return [
        F.expr(f"CAST({lag} AS BIGINT) AS watermark_lag_ms"),
        F.expr(f"CAST(COALESCE(SUM({state}), 0) AS BIGINT) AS state_bytes"),
        F.expr(f"CAST(COALESCE(MAX({state}), 0) AS BIGINT) AS max_key_group_state_bytes"),
        F.expr(f"CAST(COALESCE(SUM({items}), 0) AS BIGINT) AS {count}"),
    ]


def _nan_masks(df: DataFrame) -> list[tuple[str, tuple[str, ...]]]:
    """The internal columns telling NaN from null in the float columns: ``(name, float
    columns)``, one bit per column (up to 63 per mask). Spark's pandas frames hold both as
    NaN."""
    floats = [f.name for f in df.schema.fields if isinstance(f.dataType, FloatType | DoubleType)]
    chunks = [tuple(floats[i : i + 63]) for i in range(0, len(floats), 63)]
    return [(f"{_NAN}{i}", names) for i, names in enumerate(chunks)]


def _nan_mask(names: Sequence[str]) -> Column:
    """Bit ``i`` set where the column ``names[i]`` holds NaN."""
    bits = [F.when(F.isnan(col(n)), F.lit(1 << i)).otherwise(F.lit(0)) for i, n in enumerate(names)]
    return functools.reduce(lambda a, b: a + b, bits).cast("long")


# ---------------------------------------------------------------------------- executor side
