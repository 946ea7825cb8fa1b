"""Spark's idioms: ``key_by`` with Column expressions, and results with Spark's ``window``
struct (a drop-in replacement for ``groupBy(window(...))``)."""

from __future__ import annotations

import sys
from datetime import UTC, datetime, timedelta

import pytest
from pyspark import cloudpickle as spark_cloudpickle
from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as F  # noqa: N812

from windowing import OutputTag
from windowing.assigners import TumblingEventTimeWindows
from windowing.stream import BoundedOutOfOrderness, WindowedStream

pytestmark = pytest.mark.spark

spark_cloudpickle.register_pickle_by_value(sys.modules[__name__])  # type: ignore[no-untyped-call]

T0 = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def events(spark: SparkSession) -> DataFrame:
    rows = (
        [("Ann", "de", 3, T0 + timedelta(seconds=s), s) for s in (0, 4, 9)]
        + [("ann", "fr", 5, T0 + timedelta(seconds=s), 10 + s) for s in (2, 12, 25)]
        + [("Bob", "de", 7, T0 + timedelta(seconds=s), 20 + s) for s in (1, 31)]
    )
    rows.append(("Bob", "de", 1, T0 - timedelta(seconds=60), 100))  # late with arrival order
    return spark.createDataFrame(
        rows, "user string, country string, amount int, at timestamp, seq int"
    )


def total(a: Row, b: Row) -> Row:
    d = a.asDict()
    d["amount"] = a.amount + b.amount
    return Row(**d)


def test_key_by_a_column_expression(events: DataFrame) -> None:
    late = OutputTag("late")

    def run(df: DataFrame, *keys: object) -> tuple[list[Row], list[Row], list[str]]:
        result = (
            WindowedStream.from_dataframe(
                df, event_time="at", watermark=BoundedOutOfOrderness(0), arrival_order="seq"
            )
            .key_by(*keys)  # type: ignore[arg-type]
            .window(TumblingEventTimeWindows("10 seconds"))
            .side_output_late_data(late)
            .agg(F.sum("amount").alias("total"))
        )
        got = sorted(result.results.collect())
        return got, result.get_side_output(late).collect(), result.results.columns

    got, late_rows, columns = run(events, F.lower("user"))
    want, want_late, _ = run(events.withColumn("lower(user)", F.lower("user")), "lower(user)")
    assert columns[0] == "lower(user)"
    assert got == want and late_rows == want_late
    assert {r["lower(user)"] for r in got} == {"ann", "bob"}
    assert late_rows and "lower(user)" in late_rows[0].asDict()
    # a plain column reference is the column itself, next to a name
    got2, _, columns2 = run(events, F.col("country"), "user")
    assert columns2[:2] == ["country", "user"]
    assert got2 == run(events, "country", "user")[0]


def test_key_by_rejects_ambiguous_or_wrong_keys(events: DataFrame) -> None:
    stream = WindowedStream.from_dataframe(events, event_time="at")
    with pytest.raises(ValueError, match=r"named 'user', as a column of the DataFrame it is not"):
        stream.key_by(F.lower("user").alias("user"))
    with pytest.raises(ValueError, match=r"keys must be column names \(str\) or Columns, got int"):
        stream.key_by(3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="key_by: unknown column 'nope'"):
        stream.key_by("nope")
    with pytest.raises(ValueError, match="cannot evaluate"):
        stream.key_by(F.col("nope"))
    with pytest.raises(ValueError, match="given twice"):
        stream.key_by("user", F.col("user"))


def test_window_struct_is_spark_groupby_window(events: DataFrame) -> None:
    spark_native = events.groupBy("user", F.window("at", "10 seconds")).agg(
        F.sum("amount").alias("total"), F.count("*").alias("n")
    )
    stream = (
        WindowedStream.from_dataframe(events, event_time="at")
        .key_by("user")
        .window(TumblingEventTimeWindows("10 seconds"))
        .window_struct()
    )
    ours = stream.agg(F.sum("amount").alias("total"), F.count("*").alias("n")).results
    assert ours.schema.simpleString() == spark_native.schema.simpleString()  # nullability aside
    assert sorted(ours.collect()) == sorted(spark_native.collect())
    # the window operator path gives the same columns
    reduced = stream.reduce(total).results
    assert reduced.columns == ["user", "window", "country", "amount", "at", "seq"]
    assert reduced.schema["window"].dataType == spark_native.schema["window"].dataType
    with pytest.raises(ValueError, match="window_struct: name must be"):
        stream.window_struct("")
    with pytest.raises(ValueError, match="column 'amount' appears twice"):
        stream.window_struct("amount").reduce(total)
