"""Pane info in Spark jobs (``WindowedStream.pane_info()``): the ``pane_index`` and
``timing`` result columns, from the window operator and from the native plans (which must
give the operator's panes), and the final value per window a sink keeps."""

from __future__ import annotations

import random
import sys
from typing import Any

import pytest
from pyspark import cloudpickle as spark_cloudpickle
from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F  # noqa: N812

from windowing import (
    BoundedOutOfOrderness,
    EventTimeSessionWindows,
    HoppingEventTimeWindows,
    OutputTag,
    SlidingDistinctAssigner,
    TumblingEventTimeWindows,
    WindowedStream,
)
from windowing.time import MIN_TIMESTAMP
from windowing.triggers import EventTimeTrigger

spark_cloudpickle.register_pickle_by_value(sys.modules[__name__])  # type: ignore[no-untyped-call]

LATE = OutputTag("late")
SCHEMA = "k string, t long, arr long, v long"


class SameAsDefault(EventTimeTrigger):
    """The default trigger under another class: the window operator runs the job."""


def rows_of(df: DataFrame) -> list[tuple[Any, ...]]:
    return sorted((tuple(r) for r in df.collect()), key=repr)


def random_rows(seed: int, n: int = 300, at_min: bool = False) -> list[tuple[Any, ...]]:
    """Mostly in arrival order with disorder, some rows far behind (late or late firings)."""
    rng = random.Random(seed)
    rows = []
    for a in range(n):
        t: int | None = a // 2 + rng.randint(-8, 8)
        if rng.random() < 0.1:
            t = a // 2 - rng.randint(10, 60)
        if at_min and rng.random() < 0.1:
            t = MIN_TIMESTAMP
        if rng.random() < 0.03:
            t = None
        key = None if rng.random() < 0.05 else rng.choice("abc")
        rows.append((key, t, a if rng.random() > 0.02 else None, rng.randint(-5, 9)))
    return rows


def compare(stream: Any) -> list[tuple[Any, ...]]:
    """Run ``stream``'s ``.agg`` natively and on the window operator: equal results (pane
    columns included), late rows and metrics; returns the results."""
    columns = [F.sum("v").alias("total"), F.count("*").alias("n"), F.max_by("v", "t")]
    native = stream.agg(*columns)
    operator = stream.trigger(SameAsDefault()).agg(*columns)
    assert native.plan.native and not operator.plan.native
    with native, operator:
        assert native.results.columns[-2:] == ["pane_index", "timing"]
        assert native.results.schema == operator.results.schema
        got = rows_of(native.results)
        assert got == rows_of(operator.results)
        assert rows_of(native.get_side_output(LATE)) == rows_of(operator.get_side_output(LATE))
        assert native.collect_metrics() == operator.collect_metrics()
    return got


@pytest.mark.parametrize("lateness", [0, 15, 200])
def test_native_tumbling_in_arrival_order_numbers_its_firings(
    spark: SparkSession, lateness: int
) -> None:
    df = spark.createDataFrame(random_rows(lateness + 1), SCHEMA)
    stream = (
        WindowedStream.from_dataframe(
            df, event_time="t", arrival_order="arr", watermark=BoundedOutOfOrderness(3)
        )
        .key_by("k")
        .window(TumblingEventTimeWindows(10, 2))
        .allowed_lateness(lateness)
        .side_output_late_data(LATE)
        .pane_info()
    )
    got = compare(stream)
    timings = {r[-1] for r in got}
    assert timings == ({"ON_TIME"} if lateness == 0 else {"ON_TIME", "LATE"})
    if lateness:
        assert max(r[-2] for r in got) >= 2


@pytest.mark.parametrize(
    "assigner",
    [
        TumblingEventTimeWindows(10, 3),
        EventTimeSessionWindows(1),
        HoppingEventTimeWindows(10, 3, 1),
        SlidingDistinctAssigner(10, grace=5),
    ],
)
def test_native_event_time_order_fires_on_time_and_the_start_of_time_late(
    spark: SparkSession, assigner: Any
) -> None:
    """Without arrival order every window fires once, on time, at the end of input; the
    window ending at MIN + 1 is behind the first watermark and fires per row, late."""
    df = spark.createDataFrame(random_rows(7, at_min=True), SCHEMA)
    stream = (
        WindowedStream.from_dataframe(df, event_time="t")
        .key_by("k")
        .window(assigner)
        .allowed_lateness(5)
        .side_output_late_data(LATE)
        .pane_info()
    )
    got = compare(stream)
    at_min = [r for r in got if r[-3] == MIN_TIMESTAMP]  # max_timestamp
    others = [r for r in got if r[-3] != MIN_TIMESTAMP]
    assert {r[-1] for r in others} == {"ON_TIME"} and {r[-2] for r in others} == {0}
    assert at_min and {r[-1] for r in at_min} == {"LATE"}
    assert max(r[-2] for r in at_min) >= 1


def test_keep_the_final_value_per_window(spark: SparkSession) -> None:
    """The docs' example: the last firing of each window is its final value."""
    rows = [("a", 1, 0, 1), ("a", 5, 1, 2), ("a", 20, 2, 3), ("a", 3, 3, 4), ("a", 4, 4, 5)]
    df = spark.createDataFrame(rows, SCHEMA)
    result = (
        WindowedStream.from_dataframe(
            df, event_time="t", arrival_order="arr", watermark=BoundedOutOfOrderness(0)
        )
        .key_by("k")
        .window(TumblingEventTimeWindows(10))
        .allowed_lateness(25)
        .pane_info()
        .agg(F.sum("v").alias("total"))
    )
    panes = result.results.select("window_start", "total", "pane_index", "timing").collect()
    assert sorted(tuple(r) for r in panes) == [
        (0, 3, 0, "ON_TIME"),
        (0, 7, 1, "LATE"),
        (0, 12, 2, "LATE"),
        (20, 3, 0, "ON_TIME"),
    ]
    last = Window.partitionBy("k", "window_start", "window_end").orderBy(F.desc("pane_index"))
    final = (
        result.results.withColumn("rank", F.row_number().over(last))
        .where("rank = 1")
        .select("window_start", "total")
    )
    assert rows_of(final) == [(0, 12), (20, 3)]


def test_pane_info_with_the_window_struct_and_a_bad_value(spark: SparkSession) -> None:
    df = spark.createDataFrame([("a", 1, 0, 1)], SCHEMA)
    windowed = (
        WindowedStream.from_dataframe(df, event_time="t")
        .key_by("k")
        .window(TumblingEventTimeWindows(10))
    )
    result = windowed.window_struct().pane_info().agg(F.sum("v").alias("total"))
    assert result.results.columns == ["k", "window", "total", "pane_index", "timing"]
    assert rows_of(result.results.select("total", "pane_index", "timing")) == [(1, 0, "ON_TIME")]
    with pytest.raises(ValueError, match="pane_info: enabled must be a bool, got str 'yes'"):
        windowed.pane_info("yes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="'timing' appears twice"):
        windowed.pane_info().agg(F.count("*").alias("timing"))


@pytest.mark.parametrize("lateness", [0, 15])
def test_native_hopping_in_arrival_order_numbers_its_firings(
    spark: SparkSession, lateness: int
) -> None:
    df = spark.createDataFrame(random_rows(lateness + 3), SCHEMA)
    stream = (
        WindowedStream.from_dataframe(
            df, event_time="t", arrival_order="arr", watermark=BoundedOutOfOrderness(3)
        )
        .key_by("k")
        .window(HoppingEventTimeWindows(10, 4, 2))
        .allowed_lateness(lateness)
        .side_output_late_data(LATE)
        .pane_info()
    )
    columns = [F.sum("v").alias("total"), F.count("*").alias("n")]
    native = stream.agg(*columns)
    operator = stream.trigger(SameAsDefault()).agg(*columns)
    assert native.plan.native and not operator.plan.native
    with native, operator:
        got = rows_of(native.results)
        assert got == rows_of(operator.results)
        assert native.collect_metrics() == operator.collect_metrics()
    assert {r[-1] for r in got} == ({"ON_TIME"} if lateness == 0 else {"ON_TIME", "LATE"})
    if lateness:
        assert max(r[-2] for r in got) >= 2
