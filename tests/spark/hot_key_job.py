"""Jobs of ``test_hot_keys.py`` that need a Spark of their own (a JSON line on stdout).

``memory <base>``: batch, with ``spark.executor.pyspark.memory`` set: one key's rows through a
reduce (its state is one value per window: it completes) and through a process function
holding a window larger than the worker's memory (a ``WindowStateTooLargeError`` naming the
key and the window).

``stop <base>``: streaming, a hot key written with ``write_results_and_late`` and stopped
while a micro-batch is being written (the window function is slow on one row).
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

from pyspark.sql import Row, SparkSession
from pyspark.sql import functions as F  # noqa: N812

from windowing.assigners import TumblingEventTimeWindows
from windowing.functions import AggregateFunction, ProcessWindowFunction
from windowing.spark.streaming.query import write_results_and_late
from windowing.stream import BoundedOutOfOrderness, DataStream

HOT_ROWS = 3_000_000
STREAM_ROWS = 50_000
SLOW_SEQ = STREAM_ROWS + 7  # a row of the second micro-batch


class CountAll(ProcessWindowFunction[Row, tuple[int], int, Any]):
    def process(self, key: int, context: Any, elements: Any) -> Any:
        yield (sum(1 for _ in elements),)


def longest(a: Row, b: Row) -> Row:
    return a if len(a.pad) >= len(b.pad) else b


class SlowCount(AggregateFunction[Row, int, int]):
    """A count that takes its time on one row."""

    def create_accumulator(self) -> int:
        return 0

    def add(self, value: Row, acc: int) -> int:
        if value.seq == SLOW_SEQ:
            time.sleep(60)
        return acc + 1

    def get_result(self, acc: int) -> int:
        return acc

    def merge(self, a: int, b: int) -> int:
        return a + b


def spark_session(**conf: str) -> SparkSession:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = (
        SparkSession.builder.master("local[1]")
        .config("spark.sql.shuffle.partitions", "1")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.session.timeZone", "UTC")
    )
    for name, value in conf.items():
        builder = builder.config(name, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def memory() -> dict[str, Any]:
    spark = spark_session(**{"spark.executor.pyspark.memory": "700m"})
    df = spark.range(HOT_ROWS).select(
        F.lit(7).alias("k"), F.col("id").alias("ts"), F.repeat(F.lit("y"), 200).alias("pad")
    )
    windowed = DataStream.from_dataframe(df, event_time="ts").key_by("k")
    reduced = windowed.window(TumblingEventTimeWindows(10**12)).reduce(longest)
    out: dict[str, Any] = {"reduce_rows": reduced.results.count()}
    whole = windowed.window(TumblingEventTimeWindows(10**12)).process(
        CountAll(), output_schema="n bigint"
    )
    try:
        out["process"] = whole.results.collect()
    except Exception as exc:
        out["error"] = str(exc)
    spark.stop()
    return out


def stop(base: str) -> dict[str, Any]:
    spark = spark_session()
    rows = spark.range(2 * STREAM_ROWS).select(
        F.lit("hot").alias("user"), F.col("id").alias("ts"), F.col("id").alias("seq")
    )
    batch = F.floor(F.col("seq") / STREAM_ROWS)
    rows.withColumn("b", batch).write.partitionBy("b").json(f"{base}/src")
    for i in range(2):  # one file per micro-batch, in order
        part = f"{base}/src/b={i}"
        (name,) = [n for n in os.listdir(part) if n.endswith(".json")]
        os.rename(f"{part}/{name}", f"{base}/src/{i}.json")
    df = spark.readStream.schema("user string, ts bigint, seq bigint")
    df = df.option("maxFilesPerTrigger", 1).json(f"{base}/src/*.json")
    result = (
        DataStream.from_dataframe(df, event_time="ts", watermark=BoundedOutOfOrderness(10))
        .key_by("user")
        .window(TumblingEventTimeWindows(1_000))
        .aggregate(SlowCount(), output_schema="n bigint")
    )
    query = write_results_and_late(
        result, f"{base}/out", None, f"{base}/chk", processing_time="100 milliseconds"
    )
    deadline = time.time() + 300
    while time.time() < deadline:
        progress = [p["batchId"] for p in query.recentProgress]
        if progress and max(progress) >= 0 and query.status["isTriggerActive"]:
            break  # the first micro-batch is in; the second is running
        time.sleep(0.2)
    time.sleep(5)  # well inside the second micro-batch's write (the slow row)
    query.stop()
    out = {
        "exception": None if query.exception() is None else str(query.exception()),
        "active": query.isActive,
        "committed": sorted(n for n in os.listdir(f"{base}/chk/commits") if n[0] != "."),
    }
    spark.stop()
    return out


if __name__ == "__main__":
    what, base = sys.argv[1], sys.argv[2]
    found = memory() if what == "memory" else stop(base)
    print(json.dumps(found))
