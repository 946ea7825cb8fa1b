"""Grouped-aggregate pandas UDFs in ``.agg``: what each path costs next to Spark's own
``groupBy(key, window(ts, size)).agg(udf)`` on the same cached rows.

``--rows`` rows (default 1,000,000) over ``--keys`` keys (default 1,000), event times over one
hour, 10 s tumbling windows; a pandas UDF taking the mean of ``amount``:

* Spark: ``groupBy(key, window(ts, "10 seconds")).agg(mean_udf("amount"))`` (Spark's
  ``AggregateInPandas``: one Python call per window);
* ours, native: ``.agg(mean_udf("amount"))`` (route ``native-tumbling``: the same Spark
  operator);
* ours, window operator: the same with ``.trigger(OnTime())``, a subclass of the default
  trigger, which the planner cannot read, so the window operator runs the job (one Python
  call per firing, the rows kept per window: the path of every other trigger, evictor and
  of streaming);
* for scale, ``.agg(F.avg("amount"))`` with the same trigger (the window operator's own
  ``avg``, per row).

Each is written to Spark's ``noop`` sink, in turns with Spark's, ``--repeat`` times
(median); ratios are Spark's time over ours, of one run (compare them, not absolute times,
on a shared machine).

    .venv/bin/python benchmarks/spark_pandas_udf.py
    .venv/bin/python benchmarks/spark_pandas_udf.py --rows 200000 --keys 100000
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

import pandas as pd
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812
from pyspark.sql.types import DoubleType
from spark_small_jobs import local_spark, paired_medians

from windowing import WindowedStream
from windowing.assigners import TumblingEventTimeWindows
from windowing.triggers import EventTimeTrigger


class OnTime(EventTimeTrigger):
    """The default trigger under another class: the window operator runs the job."""


@F.pandas_udf(DoubleType())  # type: ignore[call-overload]
def mean_udf(amount: pd.Series) -> float:
    return float(amount.mean())


def rows(spark: SparkSession, n: int, keys: int) -> DataFrame:
    df = spark.range(n).selectExpr(
        f"pmod(xxhash64(id, 1), {keys}) AS key",
        "pmod(xxhash64(id, 2), 100) AS amount",
        "1700000000000 + pmod(xxhash64(id, 3), 3600000) AS t",
    )
    df = df.cache()
    df.count()
    return df


def written(df: DataFrame) -> Callable[[], Any]:
    return lambda: df.write.format("noop").mode("overwrite").save()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=1_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    spark = local_spark()
    df = rows(spark, args.rows, args.keys)
    window = F.window(F.timestamp_millis("t"), "10 seconds")
    spark_own = df.groupBy("key", window).agg(mean_udf("amount").alias("m"))

    def ours(column: Any, trigger: Any = None) -> DataFrame:
        stream = WindowedStream.from_dataframe(df, event_time="t").key_by("key")
        windowed = stream.window(TumblingEventTimeWindows(10_000))
        result = (windowed.trigger(trigger) if trigger else windowed).agg(column.alias("m"))
        print(f"  ({result.plan.route.value})", flush=True)
        return result.results

    print(f"{args.rows:,} rows, {args.keys:,} keys, 10 s tumbling windows, median of {args.repeat}")
    runs = {
        "pandas UDF, native": ours(mean_udf("amount")),
        "pandas UDF, window operator": ours(mean_udf("amount"), OnTime()),
        "F.avg, window operator": ours(F.avg("amount"), OnTime()),
    }
    header = f"{'ours':50s} {'ours s':>8s} {'Spark s':>8s} {'Spark / ours':>12s}"
    print(header)
    print("-" * len(header))
    for name, frame in runs.items():
        mine, theirs = paired_medians(written(frame), written(spark_own), args.repeat)
        print(f"{name:50s} {mine:8.2f} {theirs:8.2f} {theirs / mine:12.2f}", flush=True)


if __name__ == "__main__":
    main()
