"""Windows that take rows without event time (processing-time windows over a
``processing_time`` column): ``first`` / ``last`` / ``min_by`` / ``max_by`` put such rows last
in the replay order."""

from __future__ import annotations

import sys

from pyspark import cloudpickle as spark_cloudpickle
from pyspark.sql import SparkSession
from pyspark.sql import functions as F  # noqa: N812

from windowing import WindowedStream
from windowing.assigners import TumblingProcessingTimeWindows

spark_cloudpickle.register_pickle_by_value(sys.modules[__name__])  # type: ignore[no-untyped-call]


def test_picks_put_rows_without_event_time_last(spark: SparkSession) -> None:
    rows = [("a", 1, None, "x"), ("a", 2, 5, "y"), ("a", 3, None, "z"), ("a", 4, 7, "w")]
    df = spark.createDataFrame(rows, "k string, p long, t long, s string")
    source = WindowedStream.from_dataframe(df, event_time="t", processing_time="p")
    stream = source.key_by("k").window(TumblingProcessingTimeWindows(10))
    columns = [F.first("s").alias("first_s"), F.min_by("t", F.lit(0)).alias("tie")]
    # the operator compared a null event time with a time (TypeError) before
    operator = stream.agg(*columns)
    assert [tuple(r) for r in operator.results.select("first_s", "tie").collect()] == [("y", 5)]
