"""Window joins: the native plan of a window join's ``select`` next to Spark's own join of
two sides on the key and ``window(...)``, on the same cached rows.

Two sides of ``--rows`` rows each (default 200,000) over ``--keys`` keys (default 1,000),
event times spread over one hour; for tumbling windows of 10 s and hopping windows of 10 s
every 2 s:

* ours: ``left.join(right).where("key").equal_to("key").window(...).select(
  F.col("left.amount").alias("a"), F.col("right.amount").alias("b"))`` (route
  ``native-window-join``);
* Spark: each side with ``window(ts, size[, slide])`` (a hopping window copies each row into
  its ``size / slide`` windows), joined on the key and the window.

Both are written to Spark's ``noop`` sink (the pairs are computed, nothing is kept), in
turns, ``--repeat`` times (median); the pair counts are checked equal. Ratios are of one run
(compare them, not absolute times, on a shared machine).

    .venv/bin/python benchmarks/spark_window_join.py
    .venv/bin/python benchmarks/spark_window_join.py --rows 1000000 --repeat 3
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812
from spark_small_jobs import local_spark, paired_medians

from windowing import WindowedStream
from windowing.assigners import HoppingEventTimeWindows, TumblingEventTimeWindows


def sides(spark: SparkSession, rows: int, keys: int) -> tuple[DataFrame, DataFrame]:
    """Two cached sides: ``key``, ``amount``, ``t`` (epoch ms over one hour)."""

    def side(seed: int) -> DataFrame:
        df = spark.range(rows).selectExpr(
            f"pmod(xxhash64(id, {seed}), {keys}) AS key",
            f"pmod(xxhash64(id, {seed + 1}), 100) AS amount",
            f"1700000000000 + pmod(xxhash64(id, {seed + 2}), 3600000) AS t",
        )
        df = df.cache()
        df.count()
        return df

    return side(1), side(11)


def ours(left: DataFrame, right: DataFrame, windows: Any) -> DataFrame:
    a = WindowedStream.from_dataframe(left, event_time="t")
    b = WindowedStream.from_dataframe(right, event_time="t")
    result = a.join(b).where("key").equal_to("key").window(windows)
    selected = result.select(F.col("left.amount").alias("a"), F.col("right.amount").alias("b"))
    assert selected.plan.route.value == "native-window-join", selected.plan.route
    return selected.results


def spark_join(left: DataFrame, right: DataFrame, size: str, slide: str | None) -> DataFrame:
    def windowed(df: DataFrame, name: str) -> DataFrame:
        ts = F.timestamp_millis("t")
        w = F.window(ts, size) if slide is None else F.window(ts, size, slide)
        return df.select("key", F.col("amount").alias(name), w.alias("w"))

    return windowed(left, "a").join(windowed(right, "b"), ["key", "w"])


def noop(df: DataFrame) -> None:
    df.write.format("noop").mode("overwrite").save()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=200_000, help="rows per side")
    parser.add_argument("--keys", type=int, default=1_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    spark = local_spark(**{"spark.sql.session.timeZone": "UTC"})
    left, right = sides(spark, args.rows, args.keys)
    cases = [
        ("tumbling 10 s", TumblingEventTimeWindows(10_000), "10 seconds", None),
        (
            "hopping 10 s every 2 s",
            HoppingEventTimeWindows(10_000, 2_000),
            "10 seconds",
            "2 seconds",
        ),
    ]
    print(f"{args.rows:,} rows per side, {args.keys:,} keys, median of {args.repeat}")
    header = f"{'windows':24s} {'pairs':>12s} {'ours s':>8s} {'Spark s':>8s} {'vs Spark':>10s}"
    print(header)
    print("-" * len(header))
    for name, windows, size, slide in cases:
        mine, theirs = ours(left, right, windows), spark_join(left, right, size, slide)
        pairs = mine.count()
        assert pairs == theirs.count(), (name, pairs, theirs.count())
        t_ours, t_spark = paired_medians(
            lambda m=mine: noop(m), lambda t=theirs: noop(t), args.repeat
        )
        ratio = t_spark / t_ours
        print(f"{name:24s} {pairs:12,d} {t_ours:8.2f} {t_spark:8.2f} {ratio:9.2f}x")
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"load average: {load}")


if __name__ == "__main__":
    main()
