"""A windowed job run through Spark Connect (``SparkSession.builder.remote("local[2]")``):
batch (native ``.agg``, the window operator with late rows, a pandas UDF in ``.agg``) and a
streaming query. Run as a script by ``test_spark_connect.py`` (its own process, so that the suite's
classic session is untouched); prints one JSON line of results."""

from __future__ import annotations

import json
import sys
from typing import Any

import pandas as pd
from job_streams import run_stream  # a script next to this one
from pyspark.sql import Row, SparkSession
from pyspark.sql import functions as F  # noqa: N812
from pyspark.sql.types import DoubleType

from windowing import OutputTag
from windowing.assigners import TumblingEventTimeWindows
from windowing.stream import BoundedOutOfOrderness, WindowedStream

SCHEMA = "user string, amount bigint, ts bigint, seq bigint"
ROWS = [("a", 1, 1_000, 0), ("a", 2, 2_000, 1), ("b", 3, 12_000, 2), ("a", 4, 500, 3)]


def add(a: Row, b: Row) -> Row:
    d = a.asDict()
    d["amount"] = a.amount + b.amount
    return Row(**d)


def mean_of(v: pd.Series) -> float:
    """A grouped-aggregate pandas UDF's function (a Series in, a scalar out)."""
    return float(v.mean())


def main() -> dict[str, Any]:
    spark = SparkSession.builder.remote("local[2]").getOrCreate()
    spark.conf.set("spark.sql.shuffle.partitions", "2")
    out: dict[str, Any] = {"session": type(spark).__module__}
    df = spark.createDataFrame(ROWS, SCHEMA)
    late = OutputTag("late")
    stream = (
        WindowedStream.from_dataframe(
            df, event_time="ts", watermark=BoundedOutOfOrderness(0), arrival_order="seq"
        )
        .key_by("user")
        .window(TumblingEventTimeWindows(10_000))
        .side_output_late_data(late)
    )
    agg = stream.agg(F.sum("amount").alias("total")).results
    out["agg"] = sorted([r.user, r.window_start, r.total] for r in agg.collect())
    result = stream.reduce(add)
    out["reduce"] = sorted([r.user, r.window_start, r.amount] for r in result.results.collect())
    out["late"] = sorted([r.user, r.seq] for r in result.get_side_output(late).collect())

    # a grouped-aggregate pandas UDF beside another aggregate: the window operator calls it
    mean = F.pandas_udf(mean_of, DoubleType())
    both = stream.agg(mean("amount").alias("mean"), F.count("*").alias("n"))
    out["pandas_udf"] = sorted([r.user, r.mean, r.n] for r in both.results.collect())
    out["pandas_udf_late"] = sorted([r.user, r.seq] for r in both.get_side_output(late).collect())

    rows = run_stream(
        spark,
        ROWS,
        SCHEMA,
        lambda keyed: keyed.window(TumblingEventTimeWindows(10_000)).sum("amount"),
    )
    out["streaming"] = sorted([r.user, r.window_start, r.amount] for r in rows)
    return out


if __name__ == "__main__":
    print(json.dumps(main()), file=sys.stdout, flush=True)
