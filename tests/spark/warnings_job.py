"""A job for ``test_arrival_plans.py``: its own local Spark session with Spark's defaults
(200 shuffle partitions, adaptive execution) and log level WARN, running the native plans
(``.agg``, a built-in aggregation) and the batch replay in arrival order (results, late
rows, metrics). The test reads the driver log this job writes to stderr."""

from __future__ import annotations

import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from pyspark.sql import Row, SparkSession
from pyspark.sql import functions as F  # noqa: N812

from windowing import (
    BoundedOutOfOrderness,
    OutputTag,
    TumblingEventTimeWindows,
    WindowedStream,
)

LATE = OutputTag("late")


def smaller(a: Row, b: Row) -> Row:
    return b if b.amount < a.amount else a


def main() -> None:
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("pyspark-windowing-warnings")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("WARN")
    rng = random.Random(3)
    rows = [
        (rng.randrange(5), rng.randint(1, 9), seq * 10 - rng.choice([0, 0, 40, 900]), seq)
        for seq in range(400)
    ]
    df = spark.createDataFrame(rows, "key bigint, amount bigint, ts bigint, seq bigint")
    stream = (
        WindowedStream.from_dataframe(
            df, event_time="ts", arrival_order="seq", watermark=BoundedOutOfOrderness(100)
        )
        .key_by("key")
        .window(TumblingEventTimeWindows(1_000))
        .allowed_lateness(300)
        .side_output_late_data(LATE)
    )
    counts = []
    for result in (
        stream.agg(F.sum("amount").alias("total")),  # native
        stream.min_by("amount"),  # native: a built-in aggregation
        stream.reduce(smaller),  # the batch replay
    ):
        with result:
            counts.append(result.results.count())
            counts.append(result.get_side_output(LATE).count())
            counts.append(result.collect_metrics().num_results)
    spark.stop()
    print("job done:", counts)


if __name__ == "__main__":
    main()
