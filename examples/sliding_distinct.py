"""KIP-450 sliding windows on a Spark DataFrame: "everything within 10 seconds of each other".

For each card, ``SlidingDistinctAssigner("10 seconds")`` creates one window per distinct set of
payments that lie within 10 s of each other (Kafka Streams' ``SlidingWindows``), where hopping
windows with a 1 ms advance would create 10,000 mostly duplicate windows per payment. With
``OnWindowCloseTrigger`` each window is emitted once, when it can no longer change; windows
holding three or more payments flag a burst. Sliding windows include both ends: a window
``[start; end]`` has ``window_start = start``, ``max_timestamp = end`` and, as every window here,
an exclusive ``window_end = end + 1``.

Run it with ``.venv/bin/python examples/sliding_distinct.py``.
"""

from __future__ import annotations

import os
import random
import sys
from typing import NamedTuple

from pyspark.sql import SparkSession
from pyspark.sql import functions as F  # noqa: N812

from windowing import OutputTag
from windowing.assigners import SlidingDistinctAssigner
from windowing.functions import AggregateFunction
from windowing.stream import BoundedOutOfOrderness, WindowedStream
from windowing.triggers import OnWindowCloseTrigger


class Burst(NamedTuple):
    payments: int
    total: int


class CountAndSum(AggregateFunction[object, Burst, Burst]):
    """Number and total amount of the payments in a window."""

    def create_accumulator(self) -> Burst:
        return Burst(0, 0)

    def add(self, value: object, accumulator: Burst) -> Burst:
        return Burst(accumulator.payments + 1, accumulator.total + value.amount)  # type: ignore[attr-defined]

    def get_result(self, accumulator: Burst) -> Burst:
        return accumulator

    def merge(self, a: Burst, b: Burst) -> Burst:
        return Burst(a.payments + b.payments, a.total + b.total)


def payments(n: int = 300, seed: int = 3) -> list[tuple[int, str, int, int]]:
    rng = random.Random(seed)
    rows, ts = [], 0
    for seq in range(n):
        ts += rng.choice([200, 1_500, 4_000, 9_000, 15_000])
        jitter = rng.choice([0, 0, 0, 800, 2_500])  # some arrive out of order
        rows.append(
            (seq, rng.choice(["card-1", "card-2", "card-3"]), rng.randint(5, 90), ts - jitter)
        )
    return rows


def main() -> None:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("windowing-sliding-distinct")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    df = spark.createDataFrame(payments(), "seq bigint, card string, amount int, ts bigint")
    late = OutputTag("late")
    result = (
        WindowedStream.from_dataframe(
            df, event_time="ts", watermark=BoundedOutOfOrderness("2 seconds"), arrival_order="seq"
        )
        .key_by("card")
        .window(SlidingDistinctAssigner("10 seconds", grace="1 second"))
        .trigger(OnWindowCloseTrigger())  # one final result per window (Kafka's emit-on-close)
        .side_output_late_data(late)
        .aggregate(CountAndSum())
    )
    with result:
        windows = result.results
        print(f"{windows.count()} sliding windows for {df.count()} payments")
        print("Bursts (3 or more payments within 10 s):")
        windows.where(F.col("payments") >= 3).orderBy("card", "window_start").show(
            10, truncate=False
        )
        print(f"late payments: {result.get_side_output(late).count()}")
    spark.stop()


if __name__ == "__main__":
    main()
