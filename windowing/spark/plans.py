"""How a job runs on Spark, in words: the :class:`~windowing.plan.JobPlan` that
``result.explain()`` and ``WindowedStream.explain()`` print. No Spark job runs."""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql import SparkSession
from pyspark.sql.pandas.types import to_arrow_schema

from windowing.assigners import is_processing_time_assigner
from windowing.errors import ErrorPolicy
from windowing.functions.spec import WindowFunctionSpec
from windowing.idleness import Idleness
from windowing.job import Job, StreamSource, WindowConfig
from windowing.operator import WindowOperator
from windowing.plan import JobPlan, plan_operator
from windowing.spark.columnar import ColumnarPlan, describe
from windowing.spark.columnar_plans import columnar_plan

__all__ = [
    "batch_key_groups",
    "columnar_text",
    "idleness_of",
    "job_columnar",
    "plan_job",
    "shuffle_partitions",
    "streaming_key_groups",
    "streaming_time_mode",
    "uses_wall_clock",
    "window_operator",
]


def window_operator(window: WindowConfig, spec: WindowFunctionSpec) -> WindowOperator:
    """The window operator of ``window`` with the function ``spec`` (validates the
    combination)."""
    return WindowOperator(
        window.assigner,
        spec,
        trigger=window.trigger,
        evictor=window.evictor,
        allowed_lateness=window.allowed_lateness,
        late_output_tag=window.late_output_tag,
        slicing=window.slicing,
        on_error=window.on_error,
        pane_info=window.pane_info,
    )


def shuffle_partitions(spark: SparkSession) -> int:
    """``spark.sql.shuffle.partitions`` (8 when it is not a number, e.g. ``auto``)."""
    try:
        return int(spark.conf.get("spark.sql.shuffle.partitions") or 8)
    except ValueError:
        return 8


def uses_wall_clock(job: Job) -> bool:
    """Whether a streaming job runs on the wall clock (a processing-time assigner without a
    ``processing_time`` column: Spark's ProcessingTime mode)."""
    return is_processing_time_assigner(job.config.assigner) and job.source.processing_time is None


def idleness_of(job: Job) -> Idleness | None:
    """The job's idle rule (``WindowedStream.idle_timeout``), if any."""
    timeout = job.config.idle_timeout
    return None if timeout is None else Idleness(timeout, job.source.watermark)


def streaming_time_mode(job: Job) -> str:
    """The ``timeMode`` of a streaming job's stateful step: ``ProcessingTime`` on the wall
    clock or with an idle timeout (a micro-batch every trigger interval, even without
    input), else ``EventTime``."""
    return "ProcessingTime" if uses_wall_clock(job) or idleness_of(job) else "EventTime"


def streaming_key_groups(job: Job) -> int:
    """The key groups of a streaming job's state (one for a non-keyed stream)."""
    return job.config.max_parallelism if job.keys else 1


def batch_key_groups(job: Job) -> int:
    """The key groups of a batch replay: one Python call each."""
    spark = job.source.df.sparkSession
    return max(job.config.max_parallelism, shuffle_partitions(spark))


def job_columnar(job: Job, spec: WindowFunctionSpec, input_arrow: pa.Schema) -> ColumnarPlan | None:
    """The aggregation the runtime computes on whole columns, if any: a built-in aggregation
    of tumbling, hopping or session windows
    (:func:`~windowing.spark.columnar_plans.columnar_plan`), when the rows are
    not replayed by a processing-time column, nor in arrival order (batch), nor on the wall
    clock (streaming), errors are not dead-lettered (every element goes through the
    guarded operator), keys have no idle clock of their own and firings are not counted
    (``pane_info``)."""
    source, config = job.source, job.config
    if source.processing_time is not None or config.on_error is ErrorPolicy.DEAD_LETTER:
        return None
    if config.idle_timeout is not None or config.pane_info:
        return None  # keys with clocks of their own / firings counted per window
    if uses_wall_clock(job) if source.df.isStreaming else source.arrival_order is not None:
        return None
    return columnar_plan(
        config.assigner,
        spec,
        config.trigger,
        config.evictor,
        config.allowed_lateness,
        input_arrow,
        streaming=source.df.isStreaming,
        slicing=config.slicing,
    )


def plan_job(job: Job, spec: WindowFunctionSpec | None, *, native: str | None = None) -> JobPlan:
    """The plan of ``job`` with the window function ``spec``; ``native``: the reason a
    native Spark plan runs it (``windowing.spark.native``), then no operator runs."""
    source, config = job.source, job.config
    if native is not None:
        return JobPlan(native, None)
    assert spec is not None, "a job without a native plan needs a window function"
    operator = plan_operator(
        config.assigner,
        config.trigger,
        config.evictor,
        spec,
        config.allowed_lateness,
        config.slicing,
        guarded=config.on_error is ErrorPolicy.DEAD_LETTER,
        pane_info=config.pane_info,
    )
    columnar = job_columnar(job, spec, to_arrow_schema(source.df.schema, timezone="UTC"))
    columnar_words = None if columnar is None else columnar_text(columnar)
    if source.df.isStreaming:
        mode = streaming_time_mode(job)
        runtime = (
            f"streaming: transformWithStateInPandas over {streaming_key_groups(job)} key groups, "
            f"time mode {mode}, the watermark of {source.watermark!r} across micro-batches"
            f"{_idle_text(job)}"
        )
        return JobPlan(runtime, operator, columnar_words)
    runtime = batch_runtime_text(source, batch_key_groups(job)) + _idle_text(job)
    return JobPlan(runtime, operator, columnar_words)


def _idle_text(job: Job) -> str:
    """The idle rule, in words (empty without one)."""
    timeout = job.config.idle_timeout
    if timeout is None:
        return ""
    clock = (
        "the micro-batch clock"
        if job.source.df.isStreaming
        else f"the processing_time column {job.source.processing_time!r}"
    )
    return (
        f"; a key quiet for {timeout} ms on {clock} moves its own watermark with the quiet "
        "time (idle_timeout)"
    )


def batch_runtime_text(source: StreamSource, groups: int) -> str:
    """The batch replay, in words."""
    order = (
        f"in arrival order ({source.arrival_order!r}) with the watermark a streaming run "
        f"would have seen ({source.watermark!r}), then the end of input"
        if source.arrival_order is not None
        else "in event-time order, then the end of input (no arrival order: nothing is "
        "late, Flink's batch mode)"
    )
    return (
        f"batch replay: rows grouped into {groups} key groups (groupBy + applyInArrow), "
        f"each key's rows replayed {order}"
    )


def columnar_text(plan: ColumnarPlan) -> str:
    """A columnar aggregation, in words."""
    return describe(plan)
