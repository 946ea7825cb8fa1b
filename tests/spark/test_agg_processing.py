"""WindowedStream.agg of tumbling processing-time windows over a ``processing_time`` column:
the native plan (``native-tumbling-processing``) against the window operator in the batch
replay, on random data with many rows at a window's max timestamp, rows without processing
time or event time, several keys and window_all, offsets and the ends of time."""

from __future__ import annotations

import random
import sys
from decimal import Decimal
from typing import Any

import pytest
from pyspark import cloudpickle as spark_cloudpickle
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812

from windowing import OutputTag, WindowedStream
from windowing.assigners import TumblingProcessingTimeWindows
from windowing.spark.planning import Route
from windowing.time import MAX_TIMESTAMP
from windowing.triggers import ProcessingTimeTrigger

spark_cloudpickle.register_pickle_by_value(sys.modules[__name__])  # type: ignore[no-untyped-call]

LATE = OutputTag("late")
SCHEMA = "k string, p long, t long, i int, s string, m decimal(10,2)"


class SameAsDefault(ProcessingTimeTrigger):
    """The default trigger under another class: the planner must run the window operator."""


def aggregates() -> list[Any]:
    return [
        F.count("*").alias("n"),
        F.count("i"),
        F.count_distinct("i").alias("distinct_i"),
        F.sum("i").alias("sum_i"),
        F.sum("m").alias("sum_m"),
        F.avg("m").alias("avg_m"),
        F.min("s"),
        F.max("t"),
        F.first("s").alias("first_s"),
        F.first("s", ignorenulls=True).alias("first_nn"),
        F.last("t").alias("last_t"),
        F.min_by("s", "i").alias("min_by"),
        F.max_by("s", "i").alias("max_by"),
        F.count_if(F.col("i") > 0).alias("positive"),
    ]


def random_rows(seed: int, size: int, offset: int, *, extreme: bool) -> list[tuple[Any, ...]]:
    """Processing times with many repeats at a window's max timestamp (``e - 1``), some
    negative (before the clock's start, 0), some null; event times null now and then."""
    rng = random.Random(seed)
    rows = []
    for _ in range(300):
        roll = rng.random()
        p: int | None
        if roll < 0.1:
            p = None
        elif roll < 0.4:
            p = rng.randint(-2, 6) * size + offset + size - 1  # a window's max timestamp
        else:
            p = rng.randint(-15, 6 * size)
        if extreme and rng.random() < 0.3:
            p = rng.choice([MAX_TIMESTAMP, MAX_TIMESTAMP - 1, MAX_TIMESTAMP - size - 1])
        t = None if rng.random() < 0.1 else rng.randint(-50, 50)
        i = None if rng.random() < 0.1 else rng.randint(-5, 5)  # ties for min_by / max_by
        s = None if rng.random() < 0.15 else rng.choice("uvwxyz")
        m = None if rng.random() < 0.1 else Decimal(rng.randint(-999, 999)) / 100
        key = None if rng.random() < 0.05 else rng.choice("abc")  # a null key is a key too
        rows.append((key, p, t, i, s, m))
    return rows


def rows_of(df: DataFrame) -> list[tuple[Any, ...]]:
    return sorted((tuple(r) for r in df.collect()), key=repr)


@pytest.mark.differential(Route.NATIVE_TUMBLING_PROCESSING)
@pytest.mark.parametrize(
    ("seed", "size", "offset", "keyed", "extreme"),
    [(1, 10, 0, True, False), (2, 7, 3, False, False), (3, 10, -4, True, True)],
    ids=["size 10, no null processing time", "window_all, offset 3", "ends of time, offset -4"],
)
def test_native_plan_equals_the_window_operator(
    spark: SparkSession, seed: int, size: int, offset: int, keyed: bool, extreme: bool
) -> None:
    df = spark.createDataFrame(random_rows(seed, size, offset, extreme=extreme), SCHEMA)
    if seed == 1:  # a column that cannot be null: the plan without the keys' largest times
        df = df.withColumn("p", F.coalesce("p", F.lit(offset + size - 1)))
        assert not df.schema["p"].nullable
    source = WindowedStream.from_dataframe(df, event_time="t", processing_time="p")
    assigner = TumblingProcessingTimeWindows(size, offset)
    windowed = source.key_by("k").window(assigner) if keyed else source.window_all(assigner)
    stream = windowed.side_output_late_data(LATE).pane_info()
    native = stream.agg(*aggregates())
    operator = stream.trigger(SameAsDefault()).agg(*aggregates())
    assert native.plan.route is Route.NATIVE_TUMBLING_PROCESSING
    assert "route: native-tumbling-processing" in str(native.plan)
    assert operator.plan.route is Route.BATCH_REPLAY
    assert "is not the default ProcessingTimeTrigger" in operator.plan.reason
    with native, operator:
        assert native.results.schema == operator.results.schema
        want = rows_of(operator.results)
        assert rows_of(native.results) == want
        assert rows_of(native.get_side_output(LATE)) == rows_of(operator.get_side_output(LATE))
        late_columns = [*df.columns, "late_watermark", "late_reason"]
        assert native.get_side_output(LATE).columns == late_columns
        metrics = operator.collect_metrics()
        assert native.collect_metrics() == metrics
    # the cases the data must hold: a window firing twice (rows at its max timestamp after
    # others: ON_TIME then LATE), rows without event time
    timing = native.results.columns.index("timing")
    start = native.results.columns.index("window_start")
    firings = {(r[0], r[start]) for r in want if r[timing] == "ON_TIME"}
    assert any((r[0], r[start]) in firings for r in want if r[timing] == "LATE")
    assert metrics.num_elements == 300 and metrics.num_null_event_time == 0
    assert metrics.num_late_records_side_output == 0
    if extreme:
        assert metrics.num_windows_left_at_end > 0  # rows at MAX_TIMESTAMP never fire
        assert MAX_TIMESTAMP in {r[start + 1] for r in want}  # the clamped window fired


def test_picks_put_rows_without_event_time_last(spark: SparkSession) -> None:
    rows = [("a", 1, None, "x"), ("a", 2, 5, "y"), ("a", 3, None, "z"), ("a", 4, 7, "w")]
    df = spark.createDataFrame(rows, "k string, p long, t long, s string")
    source = WindowedStream.from_dataframe(df, event_time="t", processing_time="p")
    stream = source.key_by("k").window(TumblingProcessingTimeWindows(10))
    columns = [F.first("s").alias("first_s"), F.min_by("t", F.lit(0)).alias("tie")]
    # the operator compared a null event time with a time (TypeError) before
    operator = stream.trigger(SameAsDefault()).agg(*columns)
    native = stream.agg(*columns)
    assert [tuple(r) for r in operator.results.select("first_s", "tie").collect()] == [("y", 5)]
    assert [tuple(r) for r in native.results.select("first_s", "tie").collect()] == [("y", 5)]


def test_the_planner_says_why_the_window_operator_runs(spark: SparkSession) -> None:
    df = spark.createDataFrame([("a", 1, 5, 0)], "k string, t long, p long, seq long")
    windows = TumblingProcessingTimeWindows(10)
    ordered = WindowedStream.from_dataframe(df, event_time="t", processing_time="p")
    arrival = WindowedStream.from_dataframe(
        df, event_time="t", processing_time="p", arrival_order="seq"
    )
    count = F.count("*").alias("n")
    assert ordered.key_by("k").window(windows).agg(count).plan.native
    plan = arrival.key_by("k").window(windows).agg(count).plan
    assert plan.route is Route.BATCH_REPLAY
    assert "not the native plan (native-tumbling-processing): rows in arrival order" in plan.reason
