"""How a job runs on Spark, in words: the :class:`~windowing.plan.JobPlan` that
``result.explain()`` and ``WindowedStream.explain()`` print. No Spark job runs."""

from __future__ import annotations

from pyspark.sql import SparkSession
from pyspark.sql.pandas.types import to_arrow_schema

from windowing.assigners import is_processing_time_assigner
from windowing.functions.spec import WindowFunctionSpec
from windowing.job import Job, StreamSource
from windowing.plan import JobPlan, plan_operator
from windowing.spark.columnar import ColumnarAggregation, columnar_plan

__all__ = ["columnar_text", "plan_job", "shuffle_partitions"]


def shuffle_partitions(spark: SparkSession) -> int:
    """``spark.sql.shuffle.partitions`` (8 when it is not a number, e.g. ``auto``)."""
    try:
        return int(spark.conf.get("spark.sql.shuffle.partitions") or 8)
    except ValueError:
        return 8


def plan_job(job: Job, spec: WindowFunctionSpec) -> JobPlan:
    """The plan of ``job`` with the window function ``spec``."""
    source, config = job.source, job.config
    df = source.df
    operator = plan_operator(
        config.assigner,
        config.trigger,
        config.evictor,
        spec,
        config.allowed_lateness,
        config.slicing,
    )
    if df.isStreaming:
        wall_clock = is_processing_time_assigner(config.assigner) and source.processing_time is None
        groups = config.max_parallelism if job.keys else 1
        runtime = (
            f"streaming: transformWithStateInPandas over {groups} key groups, time mode "
            f"{'ProcessingTime' if wall_clock else 'EventTime'}, the watermark of "
            f"{source.watermark!r} across micro-batches"
        )
        columnar = (
            None if wall_clock or source.processing_time is not None else _columnar(job, spec)
        )
        return JobPlan(runtime, operator, None if columnar is None else columnar_text(columnar))
    groups = max(config.max_parallelism, shuffle_partitions(df.sparkSession))
    columnar = None if source.arrival_order is not None else _columnar(job, spec)
    return JobPlan(
        batch_runtime_text(source, groups),
        operator,
        None if columnar is None else columnar_text(columnar),
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


def columnar_text(plan: ColumnarAggregation) -> str:
    """A columnar aggregation, in words."""
    return (
        f"built-in {plan.aggregation.value} of {plan.field!r} on tumbling windows of "
        f"{plan.size} ms computed on whole Arrow columns per key group (keys the columns "
        "cannot take, e.g. near the ends of time, run through the operator)"
    )


def _columnar(job: Job, spec: WindowFunctionSpec) -> ColumnarAggregation | None:
    config = job.config
    return columnar_plan(
        config.assigner,
        spec,
        config.trigger,
        config.evictor,
        config.allowed_lateness,
        to_arrow_schema(job.source.df.schema, timezone="UTC"),
    )
