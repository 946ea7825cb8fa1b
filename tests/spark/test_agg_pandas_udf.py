"""Spark's grouped-aggregate pandas UDFs in WindowedStream.agg: natively where every aggregate
is one (tumbling windows), in the window operator everywhere else (any assigner, trigger,
evictor, lateness, arrival order), each against Spark's own aggregate of the same meaning on
random data with nulls."""

from __future__ import annotations

import sys
from typing import Any

import pandas as pd
import pytest
from pyspark import cloudpickle as spark_cloudpickle
from pyspark.sql import SparkSession
from pyspark.sql import functions as F  # noqa: N812
from pyspark.sql.types import DecimalType, DoubleType, LongType, StringType, TimestampType
from test_agg import SCHEMA, SameAsDefault, random_rows, rows_of

from windowing import BoundedOutOfOrderness, OutputTag, TumblingEventTimeWindows, WindowedStream
from windowing.assigners import EventTimeSessionWindows, HoppingEventTimeWindows
from windowing.evictors import CountEvictor
from windowing.spark.planning import Route
from windowing.triggers import ContinuousEventTimeTrigger, CountTrigger

spark_cloudpickle.register_pickle_by_value(sys.modules[__name__])  # type: ignore[no-untyped-call]

pytestmark = pytest.mark.spark

LATE = OutputTag("late")


@F.pandas_udf(DoubleType())  # type: ignore[call-overload]
def mean_of(v: pd.Series) -> float:
    return float(v.mean())  # (NaN over no value: Spark's avg gives null there)


@F.pandas_udf(LongType())  # type: ignore[call-overload]
def count_of(v: pd.Series) -> int:
    return int(v.count())


@F.pandas_udf(StringType())  # type: ignore[call-overload]
def first_of(s: pd.Series) -> str | None:
    return None if len(s) == 0 else s.iloc[0]


@F.pandas_udf(DoubleType())  # type: ignore[call-overload]
def weighted(i: pd.Series, d: pd.Series) -> float:
    return float((i * d).sum(min_count=1))  # (NaN over no value, as Spark's null)


def _udfs() -> list[Any]:
    return [
        mean_of("i").alias("mean_i"),
        count_of("i").alias("n_i"),
        first_of("s").alias("first_s"),
        weighted(F.col("i") + 1, "d").alias("w"),
    ]


def _builtins() -> list[Any]:
    """Spark's aggregates with the same values: the UDF sees the rows in the replay order
    (``first`` of ``.agg`` is by event time, then arrival, then content)."""
    return [
        F.avg("i").alias("mean_i"),
        F.count("i").alias("n_i"),
        F.first("s").alias("first_s"),
        F.sum((F.col("i") + 1) * F.col("d")).alias("w"),
    ]


def _normalized(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """NaN (a pandas mean over no value) as null, floats rounded (sums in another order)."""
    out = []
    for row in rows:
        values = []
        for v in row:
            if isinstance(v, float):
                v = None if v != v else round(v, 9)
            values.append(v)
        out.append(tuple(values))
    return sorted(out, key=repr)


CASES = {
    "hopping": lambda s: s.window(HoppingEventTimeWindows(20, 5)),
    "sessions": lambda s: s.window(EventTimeSessionWindows(4)),
    "count trigger": lambda s: s.window(TumblingEventTimeWindows(10)).trigger(CountTrigger(3)),
    "count evictor": lambda s: s.window(TumblingEventTimeWindows(10)).evictor(CountEvictor(2)),
    "continuous": lambda s: s.window(TumblingEventTimeWindows(20)).trigger(
        ContinuousEventTimeTrigger(5)
    ),
    "lateness": lambda s: (
        s.window(TumblingEventTimeWindows(10)).allowed_lateness(15).side_output_late_data(LATE)
    ),
}


@pytest.mark.parametrize("arrival", [False, True])
@pytest.mark.parametrize("case", sorted(CASES))
def test_pandas_udfs_give_the_window_operator_what_spark_aggregates_give(
    spark: SparkSession, case: str, arrival: bool
) -> None:
    """Every firing (early, on time, late; after eviction) calls the UDFs with the window's
    contents, as the operator's own aggregates see them."""
    rows = [(*r, n) for n, r in enumerate(random_rows(seed=len(case) + arrival, n=300))]
    df = spark.createDataFrame(rows, f"{SCHEMA}, seq long")
    options: dict[str, Any] = {}
    if arrival:
        options = {"arrival_order": "seq", "watermark": BoundedOutOfOrderness(40)}

    def run(columns: list[Any]) -> Any:
        stream = WindowedStream.from_dataframe(df, event_time="t", **options).key_by("k")
        return CASES[case](stream).agg(*columns)

    ours, theirs = run(_udfs()), run(_builtins())
    # the window operator, but for tumbling windows in event-time order (Spark's own groupBy)
    native = case == "lateness" and not arrival
    assert (ours.plan.route is Route.NATIVE_TUMBLING) == native, ours.plan.reason
    # (Spark's own groupBy hands a UDF the rows in no specified order: no first row there)
    order_free = ["first_s"] if native else []
    got = _normalized(rows_of(ours.results.drop(*order_free)))
    assert got == _normalized(rows_of(theirs.results.drop(*order_free)))
    assert len(got) > 5
    if case == "lateness":
        assert rows_of(ours.get_side_output(LATE)) == rows_of(theirs.get_side_output(LATE))


def test_pandas_udfs_alone_run_in_sparks_own_groupby(spark: SparkSession) -> None:
    """Tumbling windows in event-time order: Spark's AggregateInPandas computes them (one
    call per window), with the window operator's results; beside a built-in aggregate, the
    window operator runs them (Spark runs no other aggregate in the same ``agg``)."""
    df = spark.createDataFrame(random_rows(seed=5, n=300), SCHEMA)

    def run(*columns: Any) -> Any:
        stream = WindowedStream.from_dataframe(df, event_time="t").key_by("k")
        return stream.window(TumblingEventTimeWindows(10)).agg(*columns)

    native = run(mean_of("i").alias("mean_i"), count_of("i").alias("n_i"))
    assert native.plan.route is Route.NATIVE_TUMBLING
    builtins = run(F.avg("i").alias("mean_i"), F.count("i").alias("n_i"))
    assert _normalized(rows_of(native.results)) == _normalized(rows_of(builtins.results))
    mixed = run(mean_of("i").alias("mean_i"), F.count("i").alias("n_i"))
    assert mixed.plan.route is Route.BATCH_REPLAY
    assert "pandas UDF aggregates run natively only alone" in mixed.plan.reason
    assert _normalized(rows_of(mixed.results)) == _normalized(rows_of(builtins.results))


@F.pandas_udf(TimestampType())  # type: ignore[call-overload]
def latest(when: pd.Series) -> pd.Timestamp:
    return when.max()


@F.pandas_udf(DecimalType(12, 2))  # type: ignore[call-overload]
def total(m: pd.Series) -> Any:
    return m.dropna().sum()


@F.pandas_udf(LongType())  # type: ignore[call-overload]
def mean_as_long(d: pd.Series) -> float:
    return float(d.mean())  # (a fraction: truncated with unsafe casts allowed)


def test_the_window_operator_converts_as_sparks_own_groupby(spark: SparkSession) -> None:
    """The same UDFs in Spark's own groupBy and in the window operator (a trigger subclass
    forces it), in a session time zone other than UTC and with unsafe casts allowed:
    timestamps in and out, decimals, a fraction returned as ``long``."""
    rows = [(*r, None if r[1] is None else r[1] * 3_600_000) for r in random_rows(seed=9)]
    df = spark.createDataFrame(rows, f"{SCHEMA}, ms long").withColumn(
        "when", F.timestamp_millis("ms")
    )
    columns = [
        latest("when").alias("latest"),
        total("m").alias("total"),
        mean_as_long("d").alias("mean_d"),
    ]
    spark.conf.set("spark.sql.session.timeZone", "America/New_York")
    spark.conf.set("spark.sql.execution.pandas.convertToArrowArraySafely", "false")
    try:

        def run(trigger: Any) -> Any:
            stream = WindowedStream.from_dataframe(df, event_time="t").key_by("k")
            windowed = stream.window(TumblingEventTimeWindows(10))
            return (windowed.trigger(trigger) if trigger else windowed).agg(*columns)

        native, operator = run(None), run(SameAsDefault())
        assert native.plan.route is Route.NATIVE_TUMBLING
        assert operator.plan.operator is not None
        got = rows_of(operator.results)
        assert got == rows_of(native.results) and len(got) > 10
        assert any(r[3] is not None for r in got) and any(r[4] is not None for r in got)
    finally:
        spark.conf.set("spark.sql.session.timeZone", "UTC")
        spark.conf.unset("spark.sql.execution.pandas.convertToArrowArraySafely")


def test_a_udf_that_raises_names_itself(spark: SparkSession) -> None:
    """A pandas UDF's own error reaches the user with its message."""

    @F.pandas_udf(DoubleType())  # type: ignore[call-overload]
    def broken(v: pd.Series) -> float:
        raise ZeroDivisionError("broken on purpose")

    df = spark.createDataFrame(random_rows(seed=2, n=50), SCHEMA)
    stream = WindowedStream.from_dataframe(df, event_time="t").key_by("k")
    result = stream.window(HoppingEventTimeWindows(20, 5)).agg(broken("d").alias("b"))
    with pytest.raises(Exception, match="broken on purpose"):
        result.results.collect()


def test_a_firing_whose_udf_raises_is_a_dead_letter_and_the_others_fire_with_pane_info(
    spark: SparkSession,
) -> None:
    """Under ``on_error("dead_letter")`` a firing whose UDF raises is a dead letter naming
    its window; the other firings are results, with their pane (early firings of a count
    trigger, then the last)."""

    @F.pandas_udf(DoubleType())  # type: ignore[call-overload]
    def picky(v: pd.Series) -> float:
        if v.max() > 25:
            raise ValueError("too big")
        return float(v.sum())

    df = spark.range(30).select(
        (F.col("id") % 3).alias("k"), (F.col("id") * 1.0).alias("v"), (F.col("id") * 100).alias("t")
    )
    result = (
        WindowedStream.from_dataframe(df, event_time="t")
        .key_by("k")
        .window(TumblingEventTimeWindows(1000))
        .trigger(CountTrigger(2))
        .pane_info()
        .on_error("dead_letter")
        .agg(picky("v").alias("s"))
    )
    dead = result.dead_letters.select("k", "error_class", "error_message", "window_start")
    # window [2000, 3000): key 2 holds 20, 23, 26, 29 (its second firing sees 29); keys 0
    # and 1 fire once there, over 21, 24 and 22, 25
    assert [tuple(r) for r in dead.collect()] == [(2, "ValueError", "too big", 2000)]
    rows = result.results.where("window_start = 0 AND k = 0").orderBy("pane_index").collect()
    # key 0's rows at 0, 300, 600, 900 ms (values 0, 3, 6, 9): fired after 2 and 4 rows
    assert [(r.s, r.pane_index) for r in rows] == [(3.0, 0), (18.0, 1)]
