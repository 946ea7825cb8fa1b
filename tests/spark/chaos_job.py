"""A streaming job killed and restarted by ``test_chaos.py``: windows over the JSON files
in ``<base>/src`` (one file per micro-batch) written with ``write_results_and_late`` to
``<base>/out``, checkpoint ``<base>/chk``; ends when every file is in (``availableNow``)."""

from __future__ import annotations

import os
import sys

from pyspark.sql import SparkSession

from windowing import OutputTag
from windowing.assigners import TumblingEventTimeWindows
from windowing.spark.streaming.query import write_results_and_late
from windowing.stream import BoundedOutOfOrderness, WindowedStream

SCHEMA = "user string, amount bigint, ts bigint, file bigint"
LATE = OutputTag("late")
DELAY = 500
SIZE = 1_000


def main(base: str) -> None:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    df = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).json(f"{base}/src")
    result = (
        WindowedStream.from_dataframe(df, event_time="ts", watermark=BoundedOutOfOrderness(DELAY))
        .key_by("user")
        .window(TumblingEventTimeWindows(SIZE))
        .side_output_late_data(LATE)
        .sum("amount")
    )
    query = write_results_and_late(
        result, f"{base}/out/results", f"{base}/out/late", f"{base}/chk", available_now=True
    )
    query.awaitTermination()
    assert query.exception() is None
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1])
