"""Batch replay: run a :class:`~windowing.stream.WindowedStream` over a static DataFrame.

The plan (see ``docs/spark-internals.md``)::

    input ──► add internal columns: event time in ms, arrival order, processing time,
              a content hash (tie-breaker), and with an arrival order the prefix-max watermark
          ──► the key group (__pw_kg): pmod(hash(keys), groups), 0 for window_all
          ──► repartition(__pw_kg).sortWithinPartitions(__pw_kg, keys, replay order)
          ──► groupBy(__pw_kg).applyInArrow(replay over record batches)
              (a small input, one key group: coalesce(1), no repartition, mapInArrow)
          ──► one combined output: results, late rows and metrics, tagged
          ──► results / late side output / metrics DataFrames (filters of that output; lazy,
              like any DataFrame: ``result.persist()`` or ``with result:`` computes it once;
              read them from the result after persisting it)

``replay`` (:mod:`windowing.spark.batch.replay`) runs on the executors, once per key group (Flink's
key groups: a Python call costs about a millisecond, so one call per key would dominate with
many keys). Spark sorts the group's rows by key and replay order (arrival order, else
processing time, then event time, then the content hash; nulls last) and hands them to Python
as record batches; the grouped exchange keeps that sort (the repartition is the grouping's
shuffle, and a sort by the key group alone is satisfied by it). Each key is replayed on one
:class:`~windowing.operator.WindowOperator` (the same one the test harness drives) as its
rows stream in: in arrival order with the watermark a streaming run would have seen, then
the watermark and processing time at ``MAX_TIMESTAMP`` (end of input). Each key starts from a
fresh clock and state, so results never depend on how keys are grouped or batched.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyspark
from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812 - the PySpark convention
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructField, StructType

from windowing.errors import ErrorPolicy
from windowing.functions.base import FoldFunction, ProcessWindowFunction, WindowFunction
from windowing.functions.spec import Aggregate, Process, WindowFunctionSpec, with_input_schema
from windowing.job import InputWatermarks, Job, StreamSource, WindowConfig
from windowing.records import OutputTag
from windowing.spark.batch.replay import Replay
from windowing.spark.columns.failures import DEAD_LETTER_COLUMNS
from windowing.spark.columns.inputs import ARR as _ARR
from windowing.spark.columns.inputs import TB as _TB
from windowing.spark.columns.inputs import TS as _TS
from windowing.spark.columns.inputs import WMAX as _WMAX
from windowing.spark.columns.inputs import flat_arrival, internal_columns, replay_order
from windowing.spark.columns.keys import KEY_GROUP, key_group
from windowing.spark.columns.metrics import METRIC_NAMES, BatchMetrics
from windowing.spark.columns.null_results import (
    NullResultNotice,
    NullResultReport,
    null_result_accumulator,
)
from windowing.spark.columns.output import (
    LATE_COLUMNS,
    PANE_COLUMNS,
    RESULT_COLUMNS,
    OutputLayout,
    col,
)
from windowing.spark.columns.schema import (
    arrival_order_columns,
    column_time_kind,
    parse_output_schema,
    schema_from_annotation,
)
from windowing.spark.columns.side_outputs import (
    check_names,
    no_side_output,
    parse_side_output_schemas,
)
from windowing.spark.columns.sql import cast_as, quoted
from windowing.spark.columns.watermark import add_inputs_watermark, add_prefix_max
from windowing.spark.jobs import (
    idleness_of,
    shuffle_partitions,
    window_operator,
    without_call_sites,
)

if TYPE_CHECKING:
    from windowing.spark.planning import SparkPlan

__all__ = [
    "BatchMetrics",
    "OtherOutputs",
    "OutputBranches",
    "WindowedResult",
    "replay_order",
    "result_names",
    "run_batch",
    "streams_record_batches",
    "tagged_union",
]

#: Whether adaptive execution may change a cached plan's output partitioning (Spark: false).
_CACHED_PARTITIONING = "spark.sql.optimizer.canChangeCachedPlanOutputPartitioning"


def tagged_union(layout: OutputLayout, branches: Sequence[DataFrame]) -> DataFrame:
    """The tagged output of a native plan: the rows of its ``branches`` (each with its own
    columns of ``layout``, :class:`~windowing.spark.columns.output.SqlBranches`) by name, a
    branch's missing columns null, in the layout's order."""
    out = branches[0]
    for branch in branches[1:]:
        out = out.unionByName(branch, allowMissingColumns=True)
    present = set(out.columns)
    fields = layout.schema.fields
    if all(f.name in present for f in fields):
        return out.selectExpr(*[quoted(f.name) for f in fields])
    return out.select(
        *[
            col(f.name) if f.name in present else cast_as(F.lit(None), f.dataType).alias(f.name)
            for f in fields
        ]
    )


@dataclass(frozen=True, eq=False)
class OtherOutputs:
    """A native plan's output rows besides its results: the metrics rows, the late rows,
    and the parts of them a persisted result caches."""

    metrics: tuple[DataFrame, ...]
    late: tuple[DataFrame, ...] = ()
    shared: tuple[DataFrame, ...] = ()


@dataclass(frozen=True, eq=False)
class OutputBranches:
    """A native plan's output rows by output (each with its own columns of the tagged
    layout, :class:`~windowing.spark.columns.output.SqlBranches`): the results, and the
    other outputs built when first needed (``others``: on reading the metrics or the late
    rows, or on persisting the result; a job read for its results alone never builds them,
    and Spark analyzes each step of a plan as it is built)."""

    results: DataFrame
    others: Callable[[], OtherOutputs]

    @functools.cached_property
    @without_call_sites()  # (built when first read: the library's columns, not the user's)
    def rest(self) -> OtherOutputs:
        """The other outputs (built on first use)."""
        return self.others()

    def of(self, kind: str) -> tuple[DataFrame, ...]:
        """The branches of output ``kind`` (``metrics`` or ``late``; none of another)."""
        if kind == "metrics":
            return self.rest.metrics
        return self.rest.late if kind == "late" else ()


@dataclass(frozen=True, eq=False)
class WindowedResult:
    """The outcome of a terminal call (``reduce``, ``aggregate``, ...) of a
    :class:`~windowing.stream.WindowedStream`.

    All its DataFrames are filters of one operator output (a native plan's: once built, see
    :attr:`branches`; or, for a native plan with shared parts, of its branches). Read them
    from the result after persisting it: a native plan's ``results`` taken before are its
    results branch alone, not cached. Like any DataFrame they are lazy:
    each action runs the replay again, unless the output is persisted. To read several of
    them (results, the late rows, metrics), persist it: :meth:`persist` (release it with
    :meth:`unpersist`), or use the result as a context manager, which persists on entry and
    unpersists on exit::

        with stream.aggregate(Total()) as result:
            result.results.write.parquet(...)
            result.get_side_output(late).write.parquet(...)
            print(result.collect_metrics())

    ``metrics``, ``late``, ``side_outputs`` and ``dead_letters`` (the errors routed by
    ``on_error("dead_letter")``) are built when first read.

    Attributes
    ----------
    output
        The combined, tagged operator output (internal layout; for debugging).
    layout
        How ``output`` splits into the outputs.
    plan
        How the job runs (:class:`~windowing.spark.planning.SparkPlan`); :meth:`explain` prints it.
    """

    #: The results as the terminal call built them (:attr:`results` reads them).
    built_results: DataFrame = dataclasses.field(repr=False)
    layout: OutputLayout = dataclasses.field(repr=False)
    plan: SparkPlan = dataclasses.field(repr=False)
    #: Warns once about windows whose incremental result was ``None`` (a job with a reduce,
    #: aggregate or fold run by the window operator; else ``None``).
    null_notice: NullResultNotice | None = dataclasses.field(default=None, repr=False)
    #: The parts of a native plan that several outputs read, which :meth:`persist` caches
    #: (so that reading one output computes only its own branch, and the others reuse what
    #: it computed), with those of the other outputs (:meth:`cached_parts`); empty: the
    #: tagged output itself is cached.
    shared: tuple[DataFrame, ...] = dataclasses.field(default=(), repr=False)
    #: A native plan's output rows kept apart by output; ``None``: every output is a filter
    #: of the tagged output. With :attr:`shared` each output is selected from its own
    #: branches (no union of all of them to analyze); without, only the results are, until
    #: the tagged output is built (by reading another output, or by :meth:`persist`, which
    #: caches it), and from then on every output is a filter of it.
    branches: OutputBranches | None = dataclasses.field(default=None, repr=False)
    _tagged: DataFrame | None = dataclasses.field(default=None, repr=False)

    @classmethod
    def of_output(
        cls,
        output: DataFrame,
        layout: OutputLayout,
        plan: SparkPlan,
        null_notice: NullResultNotice | None = None,
        shared: tuple[DataFrame, ...] = (),
    ) -> WindowedResult:
        """The result whose DataFrames are filters of the tagged ``output`` laid out as
        ``layout`` (the batch replay's, or a native plan's built with Spark SQL; ``shared``:
        the parts its outputs share, which :meth:`persist` caches). Only ``results`` is built
        here; the other outputs when first read (PySpark analyzes a DataFrame when it builds
        it: several analyses of the whole plan saved per call)."""
        return cls(
            built_results=layout.select_results(output),
            layout=layout,
            plan=plan,
            null_notice=null_notice,
            shared=shared,
            _tagged=output,
        )

    @classmethod
    def of_branches(
        cls,
        branches: OutputBranches,
        layout: OutputLayout,
        plan: SparkPlan,
        shared: tuple[DataFrame, ...],
    ) -> WindowedResult:
        """The result of a native plan built from its ``branches``. With parts
        ``shared`` by its outputs (which :meth:`persist` caches, so each output may read
        its own branches and still reuse what another computed), each output is selected
        from its branches alone; without (``()``), the results are, until :attr:`output`
        is built: reading another output or persisting the result builds it, and every
        output is a filter of it from then on (a persisted result computes all of them in
        one job). Spark analyzes a union of all branches, each with its copy of the plan's
        input, in tens of milliseconds per branch: a job read for its results alone never
        builds it."""
        return cls(
            built_results=layout.select_results(branches.results, tagged=False),
            layout=layout,
            plan=plan,
            shared=shared,
            branches=branches,
        )

    @property
    def results(self) -> DataFrame:
        """Key column(s), ``window_start``, ``window_end``, the function's output columns,
        and ``max_timestamp`` (the result's event time). Read it after :meth:`persist`
        (or inside ``with result:``) to read the persisted output."""
        if self._tagged_later and "output" in vars(self):
            return self._results_of_output
        return self.built_results

    @property
    def _tagged_later(self) -> bool:
        """Whether the outputs become filters of :attr:`output` once it is built (a
        native plan's branches with no shared parts)."""
        return self.branches is not None and not self.shared

    @functools.cached_property
    @without_call_sites()
    def _results_of_output(self) -> DataFrame:
        return self.layout.select_results(self.output)

    @functools.cached_property
    @without_call_sites()
    def output(self) -> DataFrame:
        """The combined, tagged output (internal layout; for debugging)."""
        if self._tagged is not None:
            return self._tagged
        assert self.branches is not None
        b = self.branches
        return tagged_union(self.layout, [b.results, *b.rest.metrics, *b.rest.late])

    def _source(self, kind: str) -> DataFrame:
        """What the output ``kind`` (``metrics``, ``late`` or another) is selected from: the
        tagged output, or with :attr:`branches` the branches of that kind (the results
        branch for an output a native plan has no rows of, such as dead letters: it has
        only results)."""
        if self.branches is None or self._tagged_later:
            return self.output
        frames = self.branches.of(kind)
        if not frames:
            return self.branches.results
        return functools.reduce(DataFrame.unionByName, frames)

    @property
    def late_output_tag(self) -> OutputTag | None:
        """The tag given to ``side_output_late_data``, if any."""
        return self.layout.late_output_tag

    @functools.cached_property
    @without_call_sites()
    def metrics(self) -> DataFrame:
        """One row with the :class:`BatchMetrics` counters as ``bigint`` columns."""
        return self.layout.select_metric_totals(self._source("metrics"))

    @functools.cached_property
    @without_call_sites()
    def late(self) -> DataFrame | None:
        """The late side output (see :meth:`get_side_output`), or ``None`` without
        ``side_output_late_data``."""
        tag = self.layout.late_output_tag
        return None if tag is None else self.layout.select_late(self._source("late"))

    @functools.cached_property
    @without_call_sites()
    def side_outputs(self) -> Mapping[OutputTag, DataFrame]:
        """The DataFrame of each tag declared in ``side_output_schemas``."""
        source = self._source("side")
        return {t: self.layout.select_side_output(source, t) for t in self.layout.side_tags}

    @functools.cached_property
    @without_call_sites()
    def dead_letters(self) -> DataFrame:
        """The errors routed by ``on_error("dead_letter")`` (empty without it)."""
        return self.layout.select_dead_letters(self._source("dead_letters"))

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
        the result is persisted; otherwise the replay runs for it). Windows whose result was
        ``None`` warn here if the job has not warned yet (Spark Connect, which has no
        accumulators to report them as the replay runs)."""
        row = self.metrics.first()
        if row is None:
            return BatchMetrics()
        metrics = BatchMetrics(**{n: int(row[n] or 0) for n in METRIC_NAMES})
        if self.null_notice is not None:
            self.null_notice.warn(NullResultReport(metrics.num_null_results), stacklevel=2)
        return metrics

    @without_call_sites()
    def persist(self, storage_level: StorageLevel = StorageLevel.MEMORY_AND_DISK) -> WindowedResult:
        """Persist the operator output, so that the first action on any of the result's
        DataFrames read from it afterwards runs the replay and later ones read it; returns
        this result. A native
        plan of tumbling windows in arrival order persists the parts its outputs share
        instead (:meth:`cached_parts`: the windows' arrival cutoffs, the late rows before
        their watermarks, the results and the counters): reading the results then computes
        only them, and the late rows or metrics read afterwards reuse those parts.

        The output is cached with adaptive execution free to coalesce its shuffle partitions
        (``spark.sql.optimizer.canChangeCachedPlanOutputPartitioning``, set for this call
        only): Spark's default keeps every shuffle's ``spark.sql.shuffle.partitions`` in a
        cached plan, and each later read of the output would run a task per partition of
        every branch (over 400 with the default 200, for a few rows). The tagged output has
        no partitioning a later query could reuse. A replay in one task has no shuffle for
        adaptive execution to change: its output is cached without it (``spark.sql.adaptive.
        enabled`` off for this call), which saves a Spark job per read of the cache."""
        conf = self.results.sparkSession.conf
        key, value = (
            ("spark.sql.adaptive.enabled", "false")
            if self.plan.one_task
            else (_CACHED_PARTITIONING, "true")
        )
        before = conf.get(key, None)
        conf.set(key, value)
        done: list[DataFrame] = []
        try:
            for df in self.cached_parts():
                df.persist(storage_level)
                done.append(df)
        except BaseException:
            for df in reversed(done):
                df.unpersist()
            raise
        finally:
            if before is None:
                conf.unset(key)
            else:
                conf.set(key, before)
        return self

    def unpersist(self, blocking: bool = False) -> None:
        """Release the persisted operator output."""
        if self._tagged_later:
            parts = (self.output,) if "output" in vars(self) else ()  # (persist builds it)
        else:
            built = self.branches is None or "rest" in vars(self.branches)
            parts = self.cached_parts() if built else self.shared  # (persist builds the rest)
        for df in reversed(parts):  # the frames built on others first
            df.unpersist(blocking)

    def cached_parts(self) -> tuple[DataFrame, ...]:
        """What :meth:`persist` caches: :attr:`shared` (with the shared parts of the other
        outputs, built then), else the tagged output."""
        if self.branches is not None and self.shared:
            return (*self.shared, *self.branches.rest.shared)
        return self.shared or (self.output,)

    def __enter__(self) -> WindowedResult:
        return self.persist()

    def __exit__(self, *exc: object) -> None:
        self.unpersist()


# ---------------------------------------------------------------------------- driver side
def result_names(keys: Sequence[str], config: WindowConfig, outputs: Sequence[str]) -> list[str]:
    """The results' columns, in order: the keys, the window (``window_start``,
    ``window_end``, or ``config.window_struct``), the function's ``outputs``,
    ``max_timestamp`` (not with a window struct), and with pane info the pane columns."""
    window_first, window_last = (
        (["window_start", "window_end"], ["max_timestamp"])
        if config.window_struct is None
        else ([config.window_struct], [])
    )
    panes = list(PANE_COLUMNS) if config.pane_info else []
    return [*keys, *window_first, *outputs, *window_last, *panes]


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
    if isinstance(spec, Process) and spec.vectorized is not None:
        return None  # its outputs are a table's rows: output_schema names the columns
    fn: Any = spec.user_function if isinstance(spec, Aggregate) else spec.function
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


def arrival_watermark(
    prepared: DataFrame, source: StreamSource, groups: int, *, one_task: bool = False
) -> DataFrame:
    """``prepared`` (the internal columns and the key group) plus the prefix maximum the
    watermark of each row comes from (``__pw_wmax``; per input and combined for
    :class:`~windowing.job.InputWatermarks`), partitioned by key group. ``one_task``:
    ``prepared`` is in one partition, which one arrival bucket keeps (no shuffle)."""
    buckets = 1 if one_task else prefix_max_buckets(prepared.sparkSession)
    if isinstance(source.watermark, InputWatermarks):
        return add_inputs_watermark(
            prepared,
            inputs=source.watermark,
            order=_ARR,
            value=_TS,
            out=_WMAX,
            group=KEY_GROUP,
            groups=groups,
            buckets=buckets,
            one_task=one_task,
        )
    return add_prefix_max(
        prepared,
        order=_ARR,
        value=_TS,
        out=_WMAX,
        group=KEY_GROUP,
        groups=groups,
        buckets=buckets,
        one_task=one_task,
    )


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
    arrival_order_columns(df, source.arrival_order)
    if source.processing_time is not None:
        column_time_kind(df, source.processing_time, "processing_time")
    out_fields, reduced_rows = (
        (parse_output_schema(output_schema, "output_schema"), False)
        if spec is None
        else _output_schema(spec, output_schema, input_schema, keys)
    )
    check_names(result_names(keys, config, out_fields.names), "results")
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
        time_unit=source.event_unit,
    )


def run_batch(
    plan: SparkPlan,
    stream: Job,
    spec: WindowFunctionSpec,
    output_schema: Any,
    side_output_schemas: Any = None,
) -> WindowedResult:
    """Validate ``stream`` with ``spec`` against the DataFrame's schema and build the batch
    replay of ``plan`` (route ``BATCH_REPLAY``; no Spark job runs here); see the module
    docstring."""
    source = stream.source
    df = source.df
    config = stream.config
    keys = tuple(stream.keys or ())
    if df.isStreaming:
        msg = (
            "run_batch needs a static DataFrame (df.isStreaming is True); streaming "
            "DataFrames run through windowing.spark.streaming.query.run_streaming"
        )
        raise NotImplementedError(msg)
    layout = build_layout(stream, spec, output_schema, side_output_schemas)
    # One Python call per key group (Flink's key groups), its keys replayed one by one; a
    # small input in one task, without a shuffle (every step below keeps its one partition).
    groups = plan.key_groups or 1
    prepared = df.select(*internal_columns(df, source))
    if plan.one_task:
        prepared = prepared.coalesce(1)
    # Spark drops a constant from a sort (the key group of window_all, or of constant keys)
    # and then sorts by the grouping column again, with an external sort that does not keep
    # the order of equal rows once it spills: ``+ pmod(content hash, 1)`` (always 0) keeps
    # the key group a column of the data, so the sort below satisfies the grouping.
    kg = key_group(keys, groups) + F.pmod(col(_TB), F.lit(1))
    prepared = prepared.withColumn(KEY_GROUP, kg)
    if source.arrival_order is not None:
        # (shuffled by key group already: the sort and groupBy below add no shuffle)
        prepared = arrival_watermark(prepared, source, groups, one_task=plan.one_task)
    notice, null_results = null_result_accumulator(
        df.sparkSession, spec, dead_letter=layout.dead_letter
    )
    # several arrival-order columns: one bigint column each for the Python side
    arrival = len(source.arrival_columns)
    prepared = flat_arrival(prepared, arrival)
    input_arrow = to_arrow_schema(layout.input_schema, timezone=layout.timezone)
    replay = Replay(
        window=config,
        spec=with_input_schema(spec, input_arrow),  # a vectorized function's batches
        keys=keys,
        input_names=list(layout.input_schema.names),
        layout=layout,
        watermark=source.watermark,
        arrival_parts=arrival,
        has_processing_time=source.processing_time is not None,
        columnar=plan.columnar,
        idleness=idleness_of(stream),
        null_results=null_results,
    )
    # Rows sorted by key and replay order by Spark within each key group's partition: the
    # grouped exchange keeps the sort (one shuffle, no other sort). With an arrival order the
    # prefix maximum has shuffled the rows by key group already.
    order = replay_order(arrival=arrival, processing_time=source.processing_time is not None)
    shuffled = (
        prepared
        if source.arrival_order is not None or plan.one_task
        else prepared.repartition(col(KEY_GROUP))
    )
    ordered = shuffled.sortWithinPartitions(
        col(KEY_GROUP), *[col(k) for k in keys], *[col(n).asc_nulls_last() for n, _, _ in order]
    )

    def replay_batches(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        return replay.batches(batches)

    if plan.one_task:  # the one partition is the one key group
        combined = ordered.mapInArrow(replay_batches, schema=layout.schema)
    elif streams_record_batches():
        combined = ordered.groupBy(KEY_GROUP).applyInArrow(replay_batches, schema=layout.schema)
    else:  # PySpark 4.0: the group as one table (same results; not bounded by batches)

        def replay_table(table: pa.Table) -> pa.Table:
            return replay.table(table)

        combined = ordered.groupBy(KEY_GROUP).applyInArrow(replay_table, schema=layout.schema)
    return WindowedResult.of_output(combined, layout, plan, notice)


def streams_record_batches(version: str | None = None) -> bool:
    """Whether this PySpark's ``applyInArrow`` takes a function over an iterator of record
    batches (4.1+), so that a key group's rows reach Python a batch at a time."""
    parts = (version or pyspark.__version__).split(".")
    try:
        return (int(parts[0]), int(parts[1])) >= (4, 1)
    except (ValueError, IndexError):
        return True
