"""A windowed job on a multi-process cluster started here (``local-cluster[2,1,1024]``: a
master, two workers, executors in JVMs of their own with their own Python workers), with a
trigger and an evictor defined in this script (shipped by value with cloudpickle, as a user's
own classes are). Run as a script by ``test_spark_cluster.py``; prints one JSON line."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from job_streams import run_stream  # a script next to this one
from pyspark.sql import SparkSession

from windowing.assigners import TumblingEventTimeWindows
from windowing.evictors import Evictor
from windowing.functions import ProcessWindowFunction
from windowing.state import ValueStateDescriptor
from windowing.stream import WindowedStream
from windowing.triggers import Trigger, TriggerResult

SCHEMA = "user string, amount bigint, ts bigint"
ROWS = [
    (u, a, t)
    for u, a, t in [
        ("a", 1, 1_000),
        ("a", 2, 2_000),
        ("a", 3, 3_000),
        ("b", 4, 1_500),
        ("b", 5, 2_500),
        ("a", 6, 12_000),
    ]
]


SEEN = ValueStateDescriptor("seen", default=0)


class EveryTwo(Trigger):
    """Fires and purges at every second element of a window (a user's own trigger)."""

    def on_element(self, element: Any, timestamp: Any, window: Any, ctx: Any) -> TriggerResult:
        state = ctx.get_partitioned_state(SEEN)
        n = (state.value() or 0) + 1
        if n == 2:
            state.clear()
            return TriggerResult.FIRE_AND_PURGE
        state.update(n)
        return TriggerResult.CONTINUE

    def on_event_time(self, time: int, window: Any, ctx: Any) -> TriggerResult:
        return TriggerResult.CONTINUE

    def on_processing_time(self, time: int, window: Any, ctx: Any) -> TriggerResult:
        return TriggerResult.CONTINUE

    def clear(self, window: Any, ctx: Any) -> None:
        ctx.get_partitioned_state(SEEN).clear()


class DropSmallest(Evictor):
    """Evicts the element with the smallest amount before the function (a user's own)."""

    def evict_before(self, elements: Any, window: Any, ctx: Any) -> Any:
        ordered = sorted(elements, key=lambda e: e.value.amount)
        return ordered[1:]

    def evict_after(self, elements: Any, window: Any, ctx: Any) -> Any:
        return elements


class Pids(ProcessWindowFunction):
    def process(self, key: Any, context: Any, elements: Any) -> Any:
        yield (sum(e.amount for e in elements), os.getpid())


def main() -> dict[str, Any]:
    spark = (
        SparkSession.builder.master("local-cluster[2,1,1024]")
        .config("spark.sql.shuffle.partitions", "4")
        .getOrCreate()
    )
    df = spark.createDataFrame(ROWS, SCHEMA).repartition(4)
    windowed = (
        WindowedStream.from_dataframe(df, event_time="ts")
        .key_by("user")
        .window(TumblingEventTimeWindows(10_000))
        .trigger(EveryTwo())
        .evictor(DropSmallest())
    )
    rows = windowed.process(Pids(), output_schema="total bigint, pid bigint").results.collect()
    out: dict[str, Any] = {
        "batch": sorted([r.user, r.window_start, r.total] for r in rows),
        "driver_pid": os.getpid(),
        "pids": sorted({r.pid for r in rows}),
        "executors": spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size(),
    }
    srows = run_stream(
        spark,
        ROWS,
        SCHEMA,
        lambda keyed: (
            keyed.window(TumblingEventTimeWindows(10_000))
            .trigger(EveryTwo())
            .evictor(DropSmallest())
            .process(Pids(), output_schema="total bigint, pid bigint")
        ),
    )
    out["streaming"] = sorted([r.user, r.window_start, r.total] for r in srows)
    spark.stop()
    return out


if __name__ == "__main__":
    print(json.dumps(main()), file=sys.stdout, flush=True)
