"""Batch replay: run a :class:`~windowing.stream.WindowedStream` over a static DataFrame.

The plan (see ``docs/spark.md``)::

    input ──► add internal columns: event time in ms, arrival order, processing time,
              a content hash (tie-breaker), and with an arrival order the prefix-max watermark
          ──► the key group (__pw_kg): pmod(hash(keys), groups), 0 for window_all
          ──► groupBy(__pw_kg).applyInArrow(replay)
          ──► one combined output: results, late rows and metrics, tagged
          ──► results / late side output / metrics DataFrames (filters of that output; lazy,
              like any DataFrame: ``result.persist()`` or ``with result:`` computes it once)

``replay`` runs on the executors, once per key group (Flink's key groups: a Python call costs
about a millisecond, so one call per key would dominate with many keys): it sorts the group's
rows by key and replay order, and replays each key on one
:class:`~windowing.operator.WindowOperator` (the same one the test harness drives): the key's
rows in arrival order with the watermark a streaming run would have seen, then the watermark
and processing time at ``MAX_TIMESTAMP`` (end of input). Each key starts from a fresh clock
and state, so results never depend on how keys are grouped. The group's outputs form one
tagged table; rows become Python objects a chunk of whole keys at a time.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from itertools import repeat
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructField, StructType

from windowing.errors import ErrorPolicy
from windowing.functions.base import FoldFunction, ProcessWindowFunction, WindowFunction
from windowing.functions.spec import WindowFunctionSpec
from windowing.idleness import Idleness
from windowing.job import Job, WindowConfig
from windowing.operator import WindowOperator
from windowing.plan import JobPlan
from windowing.records import OutputTag
from windowing.spark.columnar import ColumnarPlan, columnar_results
from windowing.spark.failures import (
    DEAD_LETTER_COLUMNS,
    DeadRows,
    ElementFailedError,
    raise_element_error,
    split_results,
)
from windowing.spark.inputs import ARR as _ARR
from windowing.spark.inputs import PT as _PT
from windowing.spark.inputs import TB as _TB
from windowing.spark.inputs import TS as _TS
from windowing.spark.inputs import WMAX as _WMAX
from windowing.spark.inputs import internal_columns
from windowing.spark.keys import KEY_GROUP, KeySegments, key_group, key_segments, key_value
from windowing.spark.metrics import METRIC_NAMES, BatchMetrics
from windowing.spark.operator_rows import operator_counters
from windowing.spark.output import (
    LATE_COLUMNS,
    PANE_COLUMNS,
    REASON_NULL_ARRIVAL_ORDER,
    REASON_NULL_EVENT_TIME,
    RESULT_COLUMNS,
    LateRows,
    OutputLayout,
)
from windowing.spark.plans import (
    batch_key_groups,
    idleness_of,
    job_columnar,
    plan_job,
    shuffle_partitions,
    window_operator,
)
from windowing.spark.schema import (
    arrow_to_python,
    column_time_kind,
    parse_output_schema,
    schema_from_annotation,
    table_rows,
)
from windowing.spark.side_outputs import check_names, no_side_output, parse_side_output_schemas
from windowing.spark.watermark import add_prefix_max
from windowing.time import MAX_TIMESTAMP, MIN_TIMESTAMP

__all__ = ["BatchMetrics", "WindowedResult", "run_batch"]


def replay_order(*, arrival: bool, processing_time: bool) -> list[tuple[str, str, str]]:
    """Pyarrow sort keys of the replay order inside a key: arrival order, else processing
    time, then event time, then the content hash (never dependent on partitioning); nulls
    last."""
    first = [_ARR] if arrival else [_PT] if processing_time else []
    return [(n, "ascending", "at_end") for n in (*first, _TS, _TB)]


@dataclass(frozen=True, eq=False)
class WindowedResult:
    """The outcome of a terminal call (``reduce``, ``aggregate``, ...) of a
    :class:`~windowing.stream.WindowedStream`.

    All its DataFrames are filters of one operator output. Like any DataFrame they are lazy:
    each action runs the replay again, unless the output is persisted. To read several of
    them (results, the late rows, metrics), persist it: :meth:`persist` (release it with
    :meth:`unpersist`), or use the result as a context manager, which persists on entry and
    unpersists on exit::

        with stream.aggregate(Total()) as result:
            result.results.write.parquet(...)
            result.get_side_output(late).write.parquet(...)
            print(result.collect_metrics())

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
    side_outputs
        The DataFrame of each tag declared in ``side_output_schemas``.
    plan
        How the job runs (:class:`~windowing.plan.JobPlan`); :meth:`explain` prints it.
    dead_letters
        The errors routed by ``on_error("dead_letter")``: the input columns (key columns
        always, the others for a failing element), ``error_phase``, ``error_class``,
        ``error_message``, ``window_start``, ``window_end``; empty without it.
    """

    results: DataFrame
    metrics: DataFrame
    output: DataFrame = dataclasses.field(repr=False)
    plan: JobPlan = dataclasses.field(repr=False)
    late_output_tag: OutputTag | None = None
    late: DataFrame | None = dataclasses.field(default=None, repr=False)
    side_outputs: Mapping[OutputTag, DataFrame] = dataclasses.field(
        default_factory=dict, repr=False
    )
    dead_letters: DataFrame | None = dataclasses.field(default=None, repr=False)

    @classmethod
    def of_output(cls, output: DataFrame, layout: OutputLayout, plan: JobPlan) -> WindowedResult:
        """The result whose DataFrames are filters of the tagged ``output`` laid out as
        ``layout`` (the batch replay's, or a native plan's built with Spark SQL)."""
        tag = layout.late_output_tag
        return cls(
            plan=plan,
            results=layout.select_results(output),
            metrics=layout.select_metric_totals(output),
            output=output,
            late_output_tag=tag,
            late=None if tag is None else layout.select_late(output),
            side_outputs={t: layout.select_side_output(output, t) for t in layout.side_tags},
            dead_letters=layout.select_dead_letters(output),
        )

    def explain(self) -> None:
        """Print how the job runs: the runtime, a columnar path if any, and the strategy the
        operator runs with its reason (``windowing.plan``)."""
        print(self.plan)

    def get_side_output(self, tag: OutputTag) -> DataFrame:
        """A side output by tag.

        For the tag of ``side_output_late_data``: the late input rows unchanged (same columns
        and types), plus ``late_watermark`` (the watermark when the row arrived; null before
        any watermark) and ``late_reason`` (``late``, ``null_event_time`` or
        ``null_arrival_order``). For a tag declared in ``side_output_schemas``: the values of
        ``context.output(tag, value)`` as key column(s), ``window_start``, ``window_end``,
        the schema's fields and ``max_timestamp``. Any other tag: ``ValueError``.
        """
        if not isinstance(tag, OutputTag):
            msg = f"tag must be an OutputTag, got {type(tag).__name__} {tag!r}"
            raise ValueError(msg)
        if self.late is not None and tag == self.late_output_tag:
            return self.late
        side = self.side_outputs.get(tag)
        if side is None:
            raise no_side_output(tag, [self.late_output_tag, *self.side_outputs])
        return side

    def collect_metrics(self) -> BatchMetrics:
        """Run the metrics query and return the counters (from the persisted output when
        the result is persisted; otherwise the replay runs for it)."""
        row = self.metrics.first()
        if row is None:
            return BatchMetrics()
        return BatchMetrics(**{n: int(row[n] or 0) for n in METRIC_NAMES})

    def persist(self, storage_level: StorageLevel = StorageLevel.MEMORY_AND_DISK) -> WindowedResult:
        """Persist the operator output, so that the first action on any of the result's
        DataFrames runs the replay and later ones read it; returns this result."""
        self.output.persist(storage_level)
        return self

    def unpersist(self, blocking: bool = False) -> None:
        """Release the persisted operator output."""
        self.output.unpersist(blocking)

    def __enter__(self) -> WindowedResult:
        return self.persist()

    def __exit__(self, *exc: object) -> None:
        self.unpersist()


# ---------------------------------------------------------------------------- driver side
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
        # The key columns come first from the key; an input column named like a window
        # column would be replaced by it: refused, never silent.
        for f in input_schema.fields:
            if f.name in RESULT_COLUMNS:
                msg = (
                    f"{spec.kind}: the input has a column {f.name!r}, the name of a result "
                    f"column ({', '.join(RESULT_COLUMNS)}): a reduce returns input rows plus "
                    f"these, so it would be replaced. Rename it first, e.g. "
                    f"df.withColumnRenamed({f.name!r}, 'previous_{f.name}') (for example when "
                    "windowing the results of another window)"
                )
                raise ValueError(msg)
        fields = [f for f in input_schema.fields if f.name not in keys]
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


def prefix_max_buckets(spark: SparkSession) -> int:
    """Arrival buckets of the watermark's prefix maximum: the shuffle partitions, within
    [1, 64] (each row carries the bucket bounds for a moment: more buckets would cost more
    than they balance)."""
    return min(max(shuffle_partitions(spark), 1), 64)


def build_layout(
    stream: Job,
    spec: WindowFunctionSpec | None,
    output_schema: Any,
    side_output_schemas: Any,
) -> OutputLayout:
    """Validate ``stream`` with ``spec`` and the schemas against the DataFrame's schema (no
    Spark job runs), and return the layout of the tagged output. ``spec=None``: a native
    plan computes ``output_schema``'s fields (no window operator)."""
    source = stream.source
    df = source.df
    config = stream.config
    keys = tuple(stream.keys or ())
    if spec is not None:
        # The operator validates the assigner / trigger / evictor / function combination.
        window_operator(config, spec)
    input_schema = df.schema
    ts_kind = column_time_kind(df, source.event_time, "event_time")
    for name, parameter in (
        (source.arrival_order, "arrival_order"),
        (source.processing_time, "processing_time"),
    ):
        if name is not None:
            column_time_kind(df, name, parameter)
    out_fields, reduced_rows = (
        (parse_output_schema(output_schema, "output_schema"), False)
        if spec is None
        else _output_schema(spec, output_schema, input_schema, keys)
    )
    result_names = (
        [*keys, "window_start", "window_end", *out_fields.names, "max_timestamp"]
        if config.window_struct is None
        else [*keys, config.window_struct, *out_fields.names]
    ) + (list(PANE_COLUMNS) if config.pane_info else [])
    check_names(result_names, "results")
    if config.late_output_tag is not None:
        check_names([*input_schema.names, *LATE_COLUMNS], "late side output")
    dead_letter = config.on_error is ErrorPolicy.DEAD_LETTER
    if dead_letter:
        check_names([*input_schema.names, *DEAD_LETTER_COLUMNS], "dead-letter output")
    sides = parse_side_output_schemas(
        side_output_schemas, late_output_tag=config.late_output_tag, keys=keys
    )
    return OutputLayout(
        keys=keys,
        input_schema=input_schema,
        out_schema=out_fields,
        reduced_rows=reduced_rows,
        ts_kind=ts_kind,
        late_output_tag=config.late_output_tag,
        side_outputs=sides,
        timezone=df.sparkSession.conf.get("spark.sql.session.timeZone") or "UTC",
        dead_letter=dead_letter,
        show_values=config.show_values,
        window_struct=config.window_struct,
        pane_info=config.pane_info,
    )


def run_batch(
    stream: Job,
    spec: WindowFunctionSpec,
    output_schema: Any,
    side_output_schemas: Any = None,
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
    layout = build_layout(stream, spec, output_schema, side_output_schemas)
    prepared = df.select(*internal_columns(df, source))
    # One Python call per key group (Flink's key groups), its keys replayed one by one.
    groups = batch_key_groups(stream)
    prepared = prepared.withColumn(KEY_GROUP, key_group(keys, groups))
    if source.arrival_order is not None:
        # (shuffled by key group already: the groupBy below adds no shuffle)
        prepared = add_prefix_max(
            prepared,
            order=_ARR,
            value=_TS,
            out=_WMAX,
            group=KEY_GROUP,
            groups=groups,
            buckets=prefix_max_buckets(df.sparkSession),
        )
    replay = _Replay(
        window=config,
        spec=spec,
        keys=keys,
        input_names=list(layout.input_schema.names),
        layout=layout,
        watermark=source.watermark,
        has_arrival=source.arrival_order is not None,
        has_processing_time=source.processing_time is not None,
        columnar=job_columnar(
            stream, spec, to_arrow_schema(layout.input_schema, timezone=layout.timezone)
        ),
        idleness=idleness_of(stream),
    )
    grouped = prepared.groupBy(KEY_GROUP)

    def replay_group(table: pa.Table) -> pa.Table:
        return replay(table)

    combined = grouped.applyInArrow(replay_group, schema=layout.schema)
    return WindowedResult.of_output(combined, layout, plan_job(stream, spec))


# ---------------------------------------------------------------------------- executor side
#: Rows converted to Python objects at a time (whole keys; a larger key is one chunk).
_CHUNK_ROWS = 65_536


@dataclass(frozen=True, eq=False)
class _Replay:
    """The grouped-map function: replays each key of one key group through a WindowOperator,
    one key after another.

    Shipped to executors with cloudpickle (with the assigner, trigger, evictor and functions).
    """

    window: WindowConfig
    spec: Any
    keys: tuple[str, ...]
    input_names: list[str]
    layout: OutputLayout
    watermark: Any  # a windowing.stream watermark strategy
    has_arrival: bool
    has_processing_time: bool
    # Results computed on whole columns (rows in event-time order only: job_columnar).
    columnar: ColumnarPlan | None = None
    # Keys' own idle clocks on the processing_time column (``idle_timeout``).
    idleness: Idleness | None = None

    def __call__(self, table: pa.Table) -> pa.Table:
        order = replay_order(arrival=self.has_arrival, processing_time=self.has_processing_time)
        segments = key_segments(table, self.keys, order)
        out = _replay_group(self, segments)
        # Columns copied from the input (keys, late rows) carry the session time zone; Spark
        # wants UTC back. Same instants: a cast of the type only.
        schema = self.layout.arrow_schema
        return out if out.schema.equals(schema) else out.cast(schema)

    def operator(self) -> WindowOperator:
        return window_operator(self.window, self.spec)


def _replay_group(replay: _Replay, segments: KeySegments) -> pa.Table:
    table = segments.table
    # A columnar plan exists only for rows replayed in event-time order (job_columnar).
    if replay.columnar is not None and table.column(_TS).null_count == 0:
        columnar = _replay_columnar(replay, segments)
        if columnar is not None:
            return columnar
    return _GroupReplay(replay, segments).run()


def _replay_columnar(replay: _Replay, segments: KeySegments) -> pa.Table | None:
    """The tagged output of an in-order replay computed on whole columns (see
    :mod:`windowing.spark.columnar`), or ``None`` when the operator must run."""
    plan = replay.columnar
    assert plan is not None
    table = segments.table
    found = columnar_results(plan, table.column(_TS), table.column(plan.field), segments.codes)
    if found is None:
        return None
    rows = pa.array(found.rows, pa.int64())
    columns = []
    for field in replay.layout.out_schema.fields:
        if found.field_values is not None and field.name == plan.field:
            columns.append(pa.array(found.field_values))
        else:
            columns.append(table.column(field.name).take(rows).combine_chunks())
    starts = pa.array(found.starts, pa.int64())
    ends = pa.array(found.ends, pa.int64())
    n, fired = table.num_rows, len(found.starts)
    counters = {
        "num_input_rows": n,
        "num_elements": n,
        "num_windows_fired": fired,
        "num_results": fired,
        "num_keys": len(segments),
    }

    def key_columns(total: int) -> list[pa.Array]:
        # the results: their own rows; the metrics row: any row of the group
        take = found.rows if total == fired else np.zeros(total, np.int64)
        return [table.column(k).take(take).combine_chunks() for k in replay.keys]

    batches = replay.layout.tagged_result_batches(
        key_columns=key_columns,
        bounds=(starts, ends, pc.subtract(ends, 1)),
        columns=columns,
        counters=counters,
    )
    return pa.Table.from_batches(batches)


class _GroupReplay:
    """One key group's replay on one operator: each key's rows in replay order with the
    watermark a streaming run would have seen, then the end of input; the outputs of all
    keys gathered into one tagged table (the key columns taken from each key's first row)."""

    def __init__(self, replay: _Replay, segments: KeySegments) -> None:
        self.replay = replay
        self.segments = segments
        self.op = replay.operator()
        self.results: list[Any] = []
        self.result_rows: list[int] = []  # the first row of each result's key
        self.sides: dict[OutputTag, list[Any]] = {t: [] for t in replay.layout.side_tags}
        self.side_rows: dict[OutputTag, list[int]] = {t: [] for t in replay.layout.side_tags}
        self.late = LateRows()
        self.dead = DeadRows()
        self.dead_rows: list[int] = []  # the first row of each dead letter's key
        self.null_ts = self.null_arr = self.left_at_end = 0

    def run(self) -> pa.Table:
        replay, segments = self.replay, self.segments
        table = segments.table
        starts = segments.starts
        first_key: Any = None
        # Convert whole keys to Python objects a chunk of rows at a time.
        k = 0
        while k < len(segments):
            lo = starts[k]
            last = k + 1
            while last < len(segments) and starts[last + 1] - lo <= _CHUNK_ROWS:
                last += 1
            chunk = _Chunk(replay, table, lo, starts[last])
            for j in range(k, last):
                key = chunk.key(starts[j])
                if j == 0:
                    first_key = key
                self._replay_key(chunk, key, starts[j], starts[j + 1])
            k = last
        counters = operator_counters(self.op, table.num_rows, self.null_ts, self.null_arr)
        counters["num_results"] = len(self.results)
        counters["num_windows_left_at_end"] = self.left_at_end
        counters["num_keys"] = len(segments)
        layout = replay.layout
        key_rows = [*self.result_rows]
        for tag in layout.side_tags:
            key_rows += self.side_rows[tag]
        key_rows += [*self.late.rows, *self.dead_rows, 0]  # the metrics row: any row
        take = pa.array(key_rows, pa.int64())

        def key_columns(total: int) -> list[pa.Array]:
            assert total == len(key_rows)
            return [table.column(name).take(take).combine_chunks() for name in replay.keys]

        def tagged() -> pa.Table:
            return layout.tagged_table(
                key=first_key,
                key_columns=key_columns,
                results=self.results,
                side_outputs=self.sides,
                late_source=table,
                late=self.late,
                counters=counters,
                dead=self.dead if layout.dead_letter else None,
            )

        if not layout.dead_letter:
            return tagged()
        try:
            return tagged()
        except Exception:  # a result that is not a row of the output schema: dead letters
            bad = split_results(self.results, layout.check_result)
        for i, letter in bad:
            self.dead.add(letter)
            self.dead_rows.append(self.result_rows[i])
        drop = {i for i, _ in bad}
        keep = [i for i in range(len(self.results)) if i not in drop]
        self.results = [self.results[i] for i in keep]
        self.result_rows = [self.result_rows[i] for i in keep]
        counters["num_results"] = len(self.results)
        key_rows = [*self.result_rows]
        for tag in layout.side_tags:
            key_rows += self.side_rows[tag]
        key_rows += [*self.late.rows, *self.dead_rows, 0]
        take = pa.array(key_rows, pa.int64())
        return tagged()

    def _replay_key(self, chunk: _Chunk, key: Any, lo: int, hi: int) -> None:
        """Replay rows ``lo`` to ``hi`` (one key) of the group's table; with dead letters,
        a row whose processing raises is left out and the key replayed again without it."""
        op = self.op
        letters = op.dead_letters
        if letters is None:
            self._replay_key_once(chunk, key, lo, hi, {})
            return
        skipped: dict[int, Any] = {}  # row -> DeadLetter
        metrics = dataclasses.replace(op.metrics)
        late = (len(self.late.rows), self.null_ts, self.null_arr)
        while True:
            try:
                self._replay_key_once(chunk, key, lo, hi, skipped)
                break
            except ElementFailedError as failed:
                op.metrics = dataclasses.replace(metrics)
                self.null_ts, self.null_arr = late[1], late[2]
                for column in (self.late.rows, self.late.watermarks, self.late.reasons):
                    del column[late[0] :]
                op.output.clear()
                op.side_outputs.clear()
                letters.clear()
                op.backend.remove(key)
                op.scheduler.forget(key)
                skipped[failed.row] = failed.letter
        for row, letter in sorted(skipped.items()):
            self.dead.add(letter, row)
            self.dead_rows.append(row)
        for letter in letters:
            self.dead.add(letter)
            self.dead_rows.append(lo)
        letters.clear()

    def _replay_key_once(
        self, chunk: _Chunk, key: Any, lo: int, hi: int, skipped: Mapping[int, Any]
    ) -> None:
        """Replay rows ``lo`` to ``hi`` of the group's table but the rows ``skipped``."""
        replay, op = self.replay, self.op
        tag = replay.window.late_output_tag
        rows, ts = chunk.rows(lo, hi), chunk.ts(lo, hi)
        wmax, arrival, pts = chunk.wmax(lo, hi), chunk.arrival(lo, hi), chunk.pts(lo, hi)
        event_time = op.is_event_time
        watermark_for = replay.watermark.current_watermark
        late = self.late
        pending: list[tuple[Any, Any, Any]] = []
        pending_rows: list[int] = []  # their rows, with dead letters
        guarded = op.dead_letters is not None
        n_results = len(op.output)
        op.watermark, op.processing_time = MIN_TIMESTAMP, 0  # a key of its own

        def flush(to_end: bool = False) -> None:
            before = op.metrics.num_elements  # counted as each element starts
            try:
                if to_end:
                    op.process_to_end(key, pending)
                elif pending:
                    op.process_elements(pending)
            except Exception as exc:
                failed = op.metrics.num_elements - before - 1
                where = "the Spark batch replay"
                raise_element_error(
                    exc,
                    failed,
                    pending,
                    pending_rows,
                    key,
                    where,
                    guarded=guarded,
                    show_values=replay.window.show_values,
                )
            pending.clear()
            pending_rows.clear()

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

        nulls = event_time and None in ts
        if arrival is None and pts is None and not nulls and not skipped:
            # Event-time order, no arrival order: the key's input, then the end of input.
            pending.extend(zip(rows, ts, repeat(key, len(rows)), strict=True))
            if guarded:
                pending_rows.extend(range(lo, hi))
            flush(to_end=True)
        elif arrival is None and pts is None and not nulls:
            for i, row in enumerate(rows):
                if lo + i not in skipped:
                    pending.append((row, ts[i], key))
                    pending_rows.append(lo + i)
            flush(to_end=True)
        else:
            idleness = replay.idleness
            newest: int | None = None  # the key's largest event time so far (idleness)
            last: int | None = None  # when its last row arrived (idleness)
            for i, row in enumerate(rows):
                if arrival is not None and arrival[i] is None:
                    self.null_arr += 1
                    if tag is not None:
                        late.add(lo + i, None, REASON_NULL_ARRIVAL_ORDER)
                    continue
                wm = op.watermark
                if wmax is not None and wmax[i] is not None:
                    wm = watermark_for(wmax[i])
                pt = pts[i] if pts is not None else None
                t = ts[i]
                if idleness is not None and pt is not None:
                    # the key's own clock moved while it was quiet (windowing.idleness)
                    wm = max(wm, idleness.watermark_at(newest, last, pt))
                    last = pt
                    if t is not None:
                        newest = t if newest is None else max(newest, t)
                if wm > op.watermark or (pt is not None and pt > op.processing_time):
                    flush()
                    advance(wm, pt)
                if t is None and event_time:
                    self.null_ts += 1
                    if tag is not None:
                        late.add(lo + i, op.watermark, REASON_NULL_EVENT_TIME)
                    continue
                if lo + i in skipped:
                    continue  # a dead letter (its watermark advance happened)
                pending.append((row, t, key))
                if guarded:
                    pending_rows.append(lo + i)
            flush()
            advance(MAX_TIMESTAMP, MAX_TIMESTAMP)

        sides = op.side_outputs
        if tag is not None:
            lates = sides.pop(tag, None)
            if lates:
                late.add_late_elements(lates, {id(r): lo + i for i, r in enumerate(rows)})
        for side_tag, records in sides.items():
            replay.layout.check_side_output(side_tag, records, key)
            self.sides[side_tag].extend(records)
            self.side_rows[side_tag].extend([lo] * len(records))
        sides.clear()
        output = op.output
        self.results.extend(output[n_results:] if n_results else output)
        self.result_rows.extend([lo] * (len(output) - n_results))
        output.clear()
        self.left_at_end += sum(1 for _ in op.iter_windows(key))
        op.backend.remove(key)  # the key's input has ended


class _Chunk:
    """Rows ``lo`` to ``hi`` of a group's table (whole keys) as Python objects: the input
    rows as ``Row``s, the event time, arrival order, processing time and watermark columns."""

    def __init__(self, replay: _Replay, table: pa.Table, lo: int, hi: int) -> None:
        part = table.slice(lo, hi - lo)
        self.lo = lo
        self._rows: list[Any] = table_rows(part, replay.input_names)
        self._ts: list[Any] = part.column(_TS).to_pylist()
        self._wmax: list[Any] | None = (
            part.column(_WMAX).to_pylist() if replay.has_arrival else None
        )
        self._arrival: list[Any] | None = (
            part.column(_ARR).to_pylist() if replay.has_arrival else None
        )
        self._pts: list[Any] | None = (
            part.column(_PT).to_pylist() if replay.has_processing_time else None
        )
        self._keys = [arrow_to_python(part.column(k)) for k in replay.keys]

    def key(self, row: int) -> Any:
        i = row - self.lo
        return key_value([values[i] for values in self._keys])

    def rows(self, lo: int, hi: int) -> list[Any]:
        return self._rows[lo - self.lo : hi - self.lo]

    def ts(self, lo: int, hi: int) -> list[Any]:
        return self._ts[lo - self.lo : hi - self.lo]

    def wmax(self, lo: int, hi: int) -> list[Any] | None:
        return None if self._wmax is None else self._wmax[lo - self.lo : hi - self.lo]

    def arrival(self, lo: int, hi: int) -> list[Any] | None:
        return None if self._arrival is None else self._arrival[lo - self.lo : hi - self.lo]

    def pts(self, lo: int, hi: int) -> list[Any] | None:
        return None if self._pts is None else self._pts[lo - self.lo : hi - self.lo]
