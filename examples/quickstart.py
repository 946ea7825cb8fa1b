"""Quickstart: Flink-style event-time windows on a Spark DataFrame.

Generates a small purchase log with out-of-order and late events, then runs a batch job on an
embedded local Spark:

* per user, 10-second tumbling windows on the purchase time;
* watermarks trail the largest event time seen by 3 seconds, replayed in the order the events
  arrived (the ``offset`` column), so the job sees what a streaming run would have seen;
* windows accept late events for 5 more seconds (late firings update them); later events go
  to the late side output instead of being dropped;
* an ``AggregateFunction`` sums the amounts.

Run it with ``./dev example`` or ``.venv/bin/python examples/quickstart.py``.
"""

from __future__ import annotations

import os
import random
import sys
from datetime import UTC, datetime, timedelta
from typing import NamedTuple

from pyspark.sql import Row, SparkSession
from pyspark.sql import functions as F  # noqa: N812

from windowing import OutputTag
from windowing.assigners import TumblingEventTimeWindows
from windowing.functions import AggregateFunction
from windowing.stream import BoundedOutOfOrderness, WindowedStream

START = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


def event_log(n: int = 400, seed: int = 7) -> list[tuple[int, str, int, datetime | None]]:
    """``(offset, user, amount, purchased_at)``: one event every 250 ms of arrival time; most
    arrive on time, some up to 2 s out of order, some 12-20 s late, one without a time."""
    rng = random.Random(seed)
    rows = []
    for offset in range(n):
        arrival = START + timedelta(milliseconds=250 * offset)
        delay = rng.choice([0, 0, 0, 0, 0, 500, 1_000, 2_000, 12_000, 20_000])
        at: datetime | None = arrival - timedelta(milliseconds=delay)
        if offset == 123:
            at = None  # a broken client: no event time
        rows.append((offset, rng.choice(["alice", "bob", "carol"]), rng.randint(1, 50), at))
    return rows


class Spend(NamedTuple):
    total: int
    purchases: int


class SumAmounts(AggregateFunction[Row, Spend, Spend]):
    """Total amount and number of purchases; ``-> Spend`` gives the output columns."""

    def create_accumulator(self) -> Spend:
        return Spend(0, 0)

    def add(self, value: Row, accumulator: Spend) -> Spend:
        return Spend(accumulator.total + value.amount, accumulator.purchases + 1)

    def get_result(self, accumulator: Spend) -> Spend:
        return accumulator

    def merge(self, a: Spend, b: Spend) -> Spend:
        return Spend(a.total + b.total, a.purchases + b.purchases)


def local_spark() -> SparkSession:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("windowing-quickstart")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def main() -> None:
    spark = local_spark()
    purchases = spark.createDataFrame(
        event_log(), "offset bigint, user string, amount int, purchased_at timestamp"
    )
    late = OutputTag("late-purchases")

    windows = (
        WindowedStream.from_dataframe(
            purchases,
            event_time="purchased_at",
            watermark=BoundedOutOfOrderness("3 seconds"),
            arrival_order="offset",
        )
        .key_by("user")
        .window(TumblingEventTimeWindows("10 seconds"))
        .allowed_lateness("5 seconds")
        .side_output_late_data(late)
    )
    result = windows.aggregate(SumAmounts())

    with result:  # persists the operator output once, releases it at the end
        print("Spend per user and 10-second window:")
        result.results.orderBy("window_start", "user").show(20, truncate=False)

        print("Late purchases (input rows, plus the watermark that made them late):")
        result.get_side_output(late).orderBy("offset").show(20, truncate=False)

        m = result.collect_metrics()
        print(
            f"{m.num_input_rows} rows: {m.num_elements} windowed, "
            f"{m.num_late_records_side_output} late, {m.num_null_event_time} without event "
            f"time; {m.num_windows_fired} window firings -> {m.num_results} results"
        )
        # A late firing emits the window again, with the late purchase included.
        updated = result.results.groupBy("user", "window_start").count().where(F.col("count") > 1)
        print(f"windows emitted again by late firings: {updated.count()}")

    # The same windows with Spark's own aggregate functions: a native Spark plan, the same
    # firings and late rows, and no row goes through Python.
    spark_functions = windows.agg(
        F.sum("amount").alias("spend"), F.count("*").alias("purchases"), F.max("amount")
    )
    print("With .agg(F.sum, F.count, F.max):", spark_functions.plan.reason.split(":")[0])
    spark_functions.results.orderBy("window_start", "user").show(20, truncate=False)
    spark.stop()


if __name__ == "__main__":
    main()
