"""Mistakes are reported as ValueError naming the column or parameter, before any Spark job."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession

from windowing import OutputTag
from windowing.assigners import (
    EventTimeSessionWindows,
    GlobalWindows,
    TumblingEventTimeWindows,
    TumblingProcessingTimeWindows,
)
from windowing.functions import AggregateFunction, ProcessWindowFunction
from windowing.stream import BoundedOutOfOrderness, DataStream, WindowedStream
from windowing.triggers import CountTrigger

pytestmark = pytest.mark.spark

TUMBLING = TumblingEventTimeWindows(1_000)
ALERTS = OutputTag("alerts")


@pytest.fixture(scope="module")
def events(spark: SparkSession) -> DataFrame:
    return spark.createDataFrame(
        [("a", 1, 1_000, 0, 1.5, "x")],
        "user string, amount bigint, ts bigint, seq bigint, score double, label string",
    )


@pytest.fixture
def no_jobs(spark: SparkSession) -> Iterator[None]:
    """Fails the test if a Spark job ran while it executed."""
    tracker = spark.sparkContext.statusTracker()
    group = "windowing-validation"
    spark.sparkContext.setJobGroup(group, "validation must not run jobs")
    try:
        yield
    finally:
        jobs = tracker.getJobIdsForGroup(group)
        spark.sparkContext.setJobGroup("", "")
        assert not jobs, f"validation ran Spark jobs {jobs}"


class Untyped(AggregateFunction[Any, Any, Any]):
    def create_accumulator(self) -> Any:
        return 0

    def add(self, value: Any, acc: Any) -> Any:
        return acc + value.amount

    def get_result(self, acc):  # type: ignore[no-untyped-def]  # no annotation on purpose
        return acc

    def merge(self, a: Any, b: Any) -> Any:
        return a + b


class Total(AggregateFunction[Any, int, float]):
    def create_accumulator(self) -> int:
        return 0

    def add(self, value: Any, acc: int) -> int:
        return acc + int(value.amount)

    def get_result(self, acc: int) -> float:
        return acc / 2

    def merge(self, a: int, b: int) -> int:
        return a + b


class CountAll(ProcessWindowFunction[Any, int, Any, Any]):
    def process(self, key: Any, context: Any, elements: Iterable[Any]) -> Iterable[int]:
        yield sum(1 for _ in elements)


def keyed(df: DataFrame, **kw: Any) -> Any:
    return WindowedStream.from_dataframe(df, event_time="ts", **kw).key_by("user")


CASES: dict[str, tuple[Callable[[DataFrame], Any], str]] = {
    "unknown key column": (lambda df: keyed(df.drop("user")), r"key_by: unknown column 'user'"),
    "key_by nothing": (
        lambda df: WindowedStream.from_dataframe(df, event_time="ts").key_by(),
        r"key_by: give at least one column",
    ),
    "unknown event-time column": (
        lambda df: WindowedStream.from_dataframe(df, event_time="when"),
        r"event_time: unknown column 'when'",
    ),
    "string event time": (
        lambda df: WindowedStream.from_dataframe(df, event_time="label"),
        r"event_time: column 'label' has type string",
    ),
    "double arrival order": (
        lambda df: WindowedStream.from_dataframe(df, event_time="ts", arrival_order="score"),
        r"arrival_order: column 'score' has type double",
    ),
    "unknown processing-time column": (
        lambda df: WindowedStream.from_dataframe(df, event_time="ts", processing_time="pt"),
        r"processing_time: unknown column 'pt'",
    ),
    "bad watermark": (
        lambda df: WindowedStream.from_dataframe(df, event_time="ts", watermark=5),  # type: ignore[arg-type]
        r"watermark must be BoundedOutOfOrderness",
    ),
    "negative delay": (lambda df: BoundedOutOfOrderness(-1), r"delay must be >= 0, got -1"),
    "processing-time assigner without column": (
        lambda df: keyed(df).window(TumblingProcessingTimeWindows(1_000)),
        r"processing-time assigner.*processing_time='<column>'",
    ),
    "not an assigner": (
        lambda df: keyed(df).window("tumbling"),
        r"assigner must be a WindowAssigner",
    ),
    "not a trigger": (
        lambda df: keyed(df).window(TUMBLING).trigger("count"),
        r"trigger must be a Trigger, got str 'count'",
    ),
    "negative lateness": (
        lambda df: keyed(df).window(TUMBLING).allowed_lateness(-5),
        r"allowed_lateness must be >= 0, got -5",
    ),
    "zero key groups": (
        lambda df: keyed(df).window(TUMBLING).max_parallelism(0),
        r"max_parallelism: key_groups must be in \[1, 32768\], got 0",
    ),
    "key groups not an int": (
        lambda df: keyed(df).window(TUMBLING).max_parallelism(2.5),  # type: ignore[arg-type]
        r"max_parallelism: key_groups must be an int, got float 2.5",
    ),
    "aggregate without schema": (
        lambda df: keyed(df).window(TUMBLING).aggregate(Untyped()),
        r"aggregate: output_schema is required",
    ),
    "bad DDL": (
        lambda df: keyed(df).window(TUMBLING).aggregate(Untyped(), output_schema="total doubel"),
        r"output_schema: cannot parse 'total doubel'",
    ),
    "output field clashes with key": (
        lambda df: keyed(df).window(TUMBLING).aggregate(Untyped(), output_schema="user string"),
        r"results: column 'user' appears twice",
    ),
    "output field clashes with window column": (
        lambda df: (
            keyed(df).window(TUMBLING).aggregate(Untyped(), output_schema="window_end bigint")
        ),
        r"results: column 'window_end' appears twice",
    ),
    "reduce with output_schema": (
        lambda df: keyed(df).window(TUMBLING).reduce(lambda a, b: a, output_schema="x bigint"),
        r"reduce: output_schema is only used with a window_function",
    ),
    "reduce of a non-callable": (
        lambda df: keyed(df).window(TUMBLING).reduce(3),
        r"reduce: function must be a ReduceFunction or a callable",
    ),
    "fold with sessions": (
        lambda df: (
            keyed(df)
            .window(EventTimeSessionWindows(10))
            .fold(0, lambda acc, r: acc + r.amount, output_schema="total bigint")
        ),
        r"fold cannot be used with the merging window assigner",
    ),
    "reduce of an input with a window_start column": (
        lambda df: (
            keyed(df.withColumnRenamed("label", "window_start"))
            .window(TUMBLING)
            .reduce(lambda a, b: a)
        ),
        r"reduce: the input has a column 'window_start'.*withColumnRenamed\('window_start'",
    ),
    "built-in sum of an input with a max_timestamp column": (
        lambda df: (
            keyed(df.withColumnRenamed("label", "max_timestamp")).window(TUMBLING).sum("amount")
        ),
        r"reduce: the input has a column 'max_timestamp'",
    ),
    "late column clash": (
        lambda df: (
            keyed(df.withColumnRenamed("label", "late_reason"))
            .window(TUMBLING)
            .side_output_late_data(OutputTag("late"))
            .reduce(lambda a, b: a)
        ),
        r"late side output: column 'late_reason' appears twice",
    ),
    "side_output_schemas not a mapping": (
        lambda df: keyed(df).window(TUMBLING).process(CountAll(), side_output_schemas=["x"]),  # type: ignore[arg-type]
        r"side_output_schemas must be a mapping of OutputTag to a schema",
    ),
    "side output schema for the late tag": (
        lambda df: (
            keyed(df)
            .window(TUMBLING)
            .side_output_late_data(OutputTag("late"))
            .process(CountAll(), side_output_schemas={OutputTag("late"): "x bigint"})
        ),
        r"side_output_schemas: OutputTag\(name='late'\) is the tag of side_output_late_data",
    ),
    "bad side output DDL": (
        lambda df: (
            keyed(df).window(TUMBLING).process(CountAll(), side_output_schemas={ALERTS: "a strin"})
        ),
        r"side_output_schemas\[OutputTag\(name='alerts'\)\]: cannot parse 'a strin'",
    ),
    "side output field clashes with key": (
        lambda df: (
            keyed(df).window(TUMBLING).process(CountAll(), side_output_schemas={ALERTS: "user int"})
        ),
        r"side output 'alerts': column 'user' appears twice",
    ),
    "undeclared side output": (
        lambda df: (
            keyed(df)
            .window(TUMBLING)
            .process(CountAll(), side_output_schemas={ALERTS: "level string"})
            .get_side_output(OutputTag("other"))
        ),
        r"no side output OutputTag\(name='other'\).*side_output_schemas=",
    ),
    "reserved column prefix": (
        lambda df: WindowedStream.from_dataframe(
            df.withColumnRenamed("label", "__pw_x"), event_time="ts"
        ),
        r"column '__pw_x' starts with '__pw_'",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_value_errors_before_any_job(events: DataFrame, no_jobs: None, case: str) -> None:
    build, message = CASES[case]
    with pytest.raises(ValueError, match=message):
        build(events)


def test_window_on_a_non_keyed_stream_is_a_type_error(events: DataFrame, no_jobs: None) -> None:
    with pytest.raises(TypeError, match=re.escape("call .key_by(<columns>).window(...)")):
        DataStream.from_dataframe(events, event_time="ts").window(TUMBLING)


def test_building_a_valid_job_runs_no_spark_job(events: DataFrame, no_jobs: None) -> None:
    late = OutputTag("late")
    result = (
        keyed(events, arrival_order="seq", watermark=BoundedOutOfOrderness("1 second"))
        .window(GlobalWindows())
        .trigger(CountTrigger(2))
        .side_output_late_data(late)
        .process(CountAll())  # output schema inferred from -> Iterable[int]
    )
    assert result.results.columns == [
        "user",
        "window_start",
        "window_end",
        "value",
        "max_timestamp",
    ]
    assert result.get_side_output(late).columns == [
        *events.columns,
        "late_watermark",
        "late_reason",
    ]
    with pytest.raises(ValueError, match=r"no side output OutputTag\(name='other'\)"):
        result.get_side_output(OutputTag("other"))
    result.unpersist()
    with_alerts = (
        keyed(events)
        .window(TUMBLING)
        .process(CountAll(), side_output_schemas={ALERTS: "level string, score double"})
    )
    assert with_alerts.get_side_output(ALERTS).columns == [
        "user",
        "window_start",
        "window_end",
        "level",
        "score",
        "max_timestamp",
    ]
    with_alerts.unpersist()


def test_streaming_plans_validate_before_any_job(
    spark: SparkSession, tmp_path: Path, no_jobs: None
) -> None:
    df = spark.readStream.schema("user string, amount bigint, ts bigint").json(str(tmp_path))
    stream = WindowedStream.from_dataframe(df, event_time="ts").key_by("user")
    result = stream.window(TUMBLING).process(
        CountAll(), side_output_schemas={ALERTS: "level string"}
    )
    assert result.get_side_output(ALERTS).columns == [
        "user",
        "window_start",
        "window_end",
        "level",
        "max_timestamp",
    ]
    with pytest.raises(ValueError, match=r"no side output OutputTag\(name='other'\)"):
        result.get_side_output(OutputTag("other"))
    # A streaming DataFrame without processing_time column: processing time = the wall clock.
    wall = stream.window(TumblingProcessingTimeWindows(1_000)).process(CountAll())
    assert wall.time_mode == "ProcessingTime"
    assert result.time_mode == "EventTime"


def test_output_schema_inferred_from_annotation(events: DataFrame, no_jobs: None) -> None:
    result = keyed(events).window(TUMBLING).aggregate(Total())
    assert [(f.name, f.dataType.simpleString()) for f in result.results.schema.fields][-2:] == [
        ("value", "double"),
        ("max_timestamp", "bigint"),
    ]
    result.unpersist()


def test_builder_is_immutable(events: DataFrame) -> None:
    base = keyed(events).window(TUMBLING)
    with_lateness = base.allowed_lateness("2 seconds")
    assert base.config.allowed_lateness == 0
    assert with_lateness.config.allowed_lateness == 2_000
    assert base.config.max_parallelism == 128  # Flink's default
    assert base.max_parallelism(7).config.max_parallelism == 7
    with pytest.raises(AttributeError):
        base.keys = ("x",)  # type: ignore[misc, unused-ignore]
