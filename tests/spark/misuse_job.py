"""A streaming job ``test_chaos.py`` starts to misuse output folders:
``misuse_job.py <src> <results> <late> <checkpoint> [hold]`` writes windows over the JSON
files in ``src`` with ``write_results_and_late``. Without ``hold`` it ends when every file
is in (``availableNow``); with ``hold`` it prints ``started`` once the query runs and stops
when its standard input closes. A query refused before it starts prints ``refused: <the
error>`` and exits with 3."""

from __future__ import annotations

import os
import sys

from pyspark.sql import SparkSession

from windowing import OutputTag
from windowing.assigners import TumblingEventTimeWindows
from windowing.spark.streaming.query import write_results_and_late
from windowing.stream import BoundedOutOfOrderness, WindowedStream

SCHEMA = "user string, amount bigint, ts bigint, file bigint"
REFUSED = 3


def main(src: str, results: str, late: str, checkpoint: str, hold: bool) -> int:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (
        SparkSession.builder.master("local[1]")
        .config("spark.sql.shuffle.partitions", "1")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    df = spark.readStream.schema(SCHEMA).json(src)
    result = (
        WindowedStream.from_dataframe(df, event_time="ts", watermark=BoundedOutOfOrderness(500))
        .key_by("user")
        .window(TumblingEventTimeWindows(1_000))
        .side_output_late_data(OutputTag("late"))
        .sum("amount")
    )
    try:
        query = write_results_and_late(
            result,
            results,
            late,
            checkpoint,
            available_now=not hold,
            processing_time="500 milliseconds" if hold else None,
        )
    except ValueError as exc:
        print(f"refused: {exc}", flush=True)
        return REFUSED
    if hold:
        print("started", flush=True)
        sys.stdin.read()
        query.stop()
    else:
        query.awaitTermination()
    failed = query.exception()
    spark.stop()
    return 1 if failed is not None else 0


if __name__ == "__main__":
    args = sys.argv[1:]
    sys.exit(main(*args[:4], hold=args[4:] == ["hold"]))
