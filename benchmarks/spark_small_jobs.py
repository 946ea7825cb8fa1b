"""Small jobs: how long building a job takes on the driver, and a 1,000-row job end to end
next to Spark's native windows on the same session.

For each plan (a native ``.agg``, the same in arrival order with lateness and a late side
output, hopping and session ``.agg``, KIP-450 ``.agg``, the columnar built-in ``.sum``, and the
window operator with a ``reduce``, an ``AggregateFunction``, a ``ProcessWindowFunction`` and a
reduce in arrival order):

* build: the median time of the builder chain through its terminal call (``from_dataframe``
  ... ``.agg(...)``), which plans the job and builds its Spark plan (no Spark job runs), and
  the calls it makes to the JVM (py4j round trips);
* end to end: building, then collecting the results (and the late rows where the job has a
  side output) of N rows (default 1,000) over 10 keys, the median of ``--repeat`` runs;
* jobs: the Spark jobs of one end-to-end run, ours and native;
* native plans: the build of each ``.agg`` as the native plan a larger input gets
  (``spark.windowing.smallInputBytes`` at 0), with its calls to the JVM and its CPU time
  on the two threads that build it (this Python thread and the JVM thread py4j pins to it):
  the build's time on a quiet machine, where wall time on a loaded one also counts the
  waits for a core;
* native: Spark's ``groupBy(key, window(...) | session_window(...)).agg(sum)`` on the same
  rows, built and collected the same way, run in turns with ours, and the ratio
  ``native / ours`` (1.0 is as fast).

The rows are a cached DataFrame of ``key bigint, amount bigint, t bigint (epoch ms), seq
bigint`` built once (not timed). Run it on a quiet machine; compare ratios of one run.

    .venv/bin/python benchmarks/spark_small_jobs.py
    .venv/bin/python benchmarks/spark_small_jobs.py --rows 1000 --repeat 7
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import py4j.java_gateway as gateway
from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as F  # noqa: N812

from windowing import (
    AggregateFunction,
    BoundedOutOfOrderness,
    OutputTag,
    ProcessWindowFunction,
    WindowedStream,
)
from windowing.assigners import (
    EventTimeSessionWindows,
    HoppingEventTimeWindows,
    SlidingDistinctAssigner,
    TumblingEventTimeWindows,
    TumblingProcessingTimeWindows,
)
from windowing.evictors import CountEvictor
from windowing.triggers import ContinuousEventTimeTrigger, CountTrigger

LATE = OutputTag("late")


class SumAmount(AggregateFunction[Row, int, int]):
    def create_accumulator(self) -> int:
        return 0

    def add(self, value: Row, accumulator: int) -> int:
        return accumulator + int(value.amount)

    def get_result(self, accumulator: int) -> int:
        return accumulator

    def merge(self, a: int, b: int) -> int:
        return a + b


class CountRows(ProcessWindowFunction):
    def process(self, key: Any, context: Any, elements: Any) -> Any:
        yield sum(1 for _ in elements)


class Calls:
    """Counts the driver's calls to the JVM (py4j round trips)."""

    def __init__(self) -> None:
        self.n = 0
        original = gateway.GatewayClient.send_command

        def counting(client: Any, command: Any, *args: Any, **kwargs: Any) -> Any:
            # (not py4j's releases of garbage-collected JVM references, sent when Python
            # collects them, whichever build made them)
            if not command.startswith(gateway.proto.MEMORY_COMMAND_NAME):
                self.n += 1
            return original(client, command, *args, **kwargs)

        gateway.GatewayClient.send_command = counting  # type: ignore[method-assign]


def plans(df: DataFrame) -> dict[str, tuple[Callable[[], Any], Callable[[], DataFrame]]]:
    """Each plan: (build ours, build the native comparison)."""

    def source(arrival: bool = False) -> Any:
        if arrival:
            return WindowedStream.from_dataframe(
                df, event_time="t", arrival_order="seq", watermark=BoundedOutOfOrderness(200)
            )
        return WindowedStream.from_dataframe(df, event_time="t")

    ts = F.timestamp_millis("t")

    def native(window: Any) -> Callable[[], DataFrame]:
        return lambda: df.groupBy("key", window).agg(F.sum("amount").alias("total"))

    tumbling, hopping = TumblingEventTimeWindows(10_000), HoppingEventTimeWindows(10_000, 2_000)
    sessions = EventTimeSessionWindows(500)
    total = F.sum("amount").alias("total")
    return {
        "tumbling .agg": (
            lambda: source().key_by("key").window(tumbling).agg(total),
            native(F.window(ts, "10 seconds")),
        ),
        "tumbling .agg, arrival, lateness, late rows": (
            lambda: (
                source(True)
                .key_by("key")
                .window(tumbling)
                .allowed_lateness(1000)
                .side_output_late_data(LATE)
                .agg(total)
            ),
            native(F.window(ts, "10 seconds")),
        ),
        "hopping .agg": (
            lambda: source().key_by("key").window(hopping).agg(total),
            native(F.window(ts, "10 seconds", "2 seconds")),
        ),
        "session .agg": (
            lambda: source().key_by("key").window(sessions).agg(total),
            native(F.session_window(ts, "500 milliseconds")),
        ),
        "KIP-450 .agg": (
            lambda: (
                source().key_by("key").window(SlidingDistinctAssigner(10_000, grace=0)).agg(total)
            ),
            native(F.window(ts, "10 seconds")),
        ),
        "tumbling .sum (columnar)": (
            lambda: source().key_by("key").window(tumbling).sum("amount"),
            native(F.window(ts, "10 seconds")),
        ),
        "tumbling .reduce": (
            lambda: source().key_by("key").window(tumbling).reduce(_larger),
            native(F.window(ts, "10 seconds")),
        ),
        "tumbling .aggregate": (
            lambda: source().key_by("key").window(tumbling).aggregate(SumAmount()),
            native(F.window(ts, "10 seconds")),
        ),
        "session .process": (
            lambda: (
                source().key_by("key").window(sessions).process(CountRows(), output_schema="bigint")
            ),
            native(F.session_window(ts, "500 milliseconds")),
        ),
        "tumbling .reduce, arrival, lateness, late rows": (
            lambda: (
                source(True)
                .key_by("key")
                .window(tumbling)
                .allowed_lateness(1000)
                .side_output_late_data(LATE)
                .reduce(_larger)
            ),
            native(F.window(ts, "10 seconds")),
        ),
    }


def _larger(a: Row, b: Row) -> Row:
    return b if b.amount > a.amount else a


def collect_ours(result: Any) -> int:
    with result:
        n = len(result.results.collect())
        if result.late_output_tag is not None:
            n += len(result.get_side_output(result.late_output_tag).collect())
    return n


def median_seconds(action: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def median_cpu_seconds(spark: SparkSession, action: Callable[[], Any], repeat: int) -> float:
    """The median CPU time of ``action`` on this thread and the JVM thread serving its calls
    (py4j pins one to each Python thread): a build runs on one of them at a time."""
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    threads = jvm.java.lang.management.ManagementFactory.getThreadMXBean()
    times = []
    for _ in range(repeat):
        jvm_start, start = threads.getCurrentThreadCpuTime(), time.thread_time()
        action()
        jvm_ns = threads.getCurrentThreadCpuTime() - jvm_start
        times.append(time.thread_time() - start + jvm_ns / 1e9)
    return statistics.median(times)


def paired_medians(
    ours: Callable[[], Any], theirs: Callable[[], Any], repeat: int
) -> tuple[float, float]:
    """The median times of ``ours`` and ``theirs`` run in turns (a change of the machine's
    load during the runs weighs on both alike)."""
    times: tuple[list[float], list[float]] = ([], [])
    for _ in range(repeat):
        for action, out in ((ours, times[0]), (theirs, times[1])):
            start = time.perf_counter()
            action()
            out.append(time.perf_counter() - start)
    return statistics.median(times[0]), statistics.median(times[1])


def local_spark(**conf: str) -> SparkSession:
    """The benchmarks' session: ``local[2]``, no UI or progress bars, errors only in the log,
    the workers on this Python; ``conf``: more settings."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
    builder = builder.config("spark.ui.showConsoleProgress", "false")
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--only", default=None, help="plans whose name contains this text")
    args = parser.parse_args()
    spark = local_spark()
    n = args.rows
    df = spark.range(n).select(
        F.col("id").alias("seq"),
        (F.col("id") % 10).alias("key"),
        (F.col("id") % 97).alias("amount"),
        (F.lit(1_700_000_000_000) + F.col("id") * 100 - (F.col("id") * 7919) % 300)
        .cast("long")
        .alias("t"),
    )
    df = df.cache()
    df.count()
    calls = Calls()
    header = (
        f"{'plan':48s} {'build s':>8s} {'JVM calls':>9s} {'ours s':>8s} {'native s':>8s} "
        f"{'native/ours':>11s} {'jobs':>5s} {'native':>6s}"
    )
    print(f"{n:,} rows, 10 keys, median of {args.repeat} runs")
    print(header)
    print("-" * len(header))
    for name, (ours, native) in plans(df).items():
        if args.only and args.only not in name:
            continue
        ours()  # warm up: first-use imports and JVM classes
        collect_ours(ours())
        native().collect()
        build = median_seconds(ours, args.repeat)
        before = calls.n
        ours()
        jvm_calls = calls.n - before
        end_to_end, spark_native = paired_medians(
            lambda ours=ours: collect_ours(ours()),
            lambda native=native: native().collect(),
            args.repeat,
        )
        spark.sparkContext.setJobGroup(name, name)
        collect_ours(ours())
        jobs = len(spark.sparkContext.statusTracker().getJobIdsForGroup(name))
        spark.sparkContext.setJobGroup("native " + name, name)
        native().collect()
        native_jobs = len(spark.sparkContext.statusTracker().getJobIdsForGroup("native " + name))
        print(
            f"{name:48s} {build:8.3f} {jvm_calls:9d} {end_to_end:8.3f} {spark_native:8.3f} "
            f"{spark_native / end_to_end:11.2f} {jobs:5d} {native_jobs:6d}"
        )
    native_plan_builds(spark, df, calls, args)


def native_only_plans(df: DataFrame) -> dict[str, Callable[[], Any]]:
    """The other native routes (built only): count and continuous triggers, a count
    evictor, hopping windows in arrival order and disjoint, processing-time windows,
    KIP-450 windows joined to their rows, and a window join's ``select`` (tumbling and
    hopping windows)."""
    tumbling, total = TumblingEventTimeWindows(10_000), F.sum("amount").alias("total")
    timed = df.withColumn("p", F.col("t") + 5)

    def keyed(arrival: bool = False, frame: DataFrame = df, **kw: Any) -> Any:
        source = WindowedStream.from_dataframe(
            frame,
            event_time="t",
            arrival_order="seq" if arrival else None,
            watermark=BoundedOutOfOrderness(200),
            **kw,
        )
        return source.key_by("key")

    def joined(windows: Any = tumbling) -> Any:
        left = WindowedStream.from_dataframe(df, event_time="t")
        right = WindowedStream.from_dataframe(df.withColumnRenamed("key", "k"), event_time="t")
        both = left.join(right).where("key").equal_to("k").window(windows)
        return both.select(F.col("left.amount"))

    return {
        "tumbling .agg, CountTrigger(100)": lambda: (
            keyed().window(tumbling).trigger(CountTrigger(100)).agg(total)
        ),
        "tumbling .agg, CountEvictor(10)": lambda: (
            keyed().window(tumbling).evictor(CountEvictor(10)).agg(total)
        ),
        "tumbling .agg, arrival, CountTrigger(100)": lambda: (
            keyed(True).window(tumbling).trigger(CountTrigger(100)).agg(total)
        ),
        "tumbling .agg, continuous 1 s": lambda: (
            keyed().window(tumbling).trigger(ContinuousEventTimeTrigger(1_000)).agg(total)
        ),
        "hopping .agg, arrival, lateness, late rows": lambda: (
            keyed(True)
            .window(HoppingEventTimeWindows(10_000, 2_000))
            .allowed_lateness(1000)
            .side_output_late_data(LATE)
            .agg(total)
        ),
        "hopping .agg, disjoint (2 s every 10 s)": lambda: (
            keyed().window(HoppingEventTimeWindows(2_000, 10_000)).agg(total)
        ),
        "processing-time tumbling .agg": lambda: (
            keyed(frame=timed, processing_time="p")
            .window(TumblingProcessingTimeWindows(10_000))
            .agg(total)
        ),
        "KIP-450 .agg, count distinct (joined)": lambda: (
            keyed()
            .window(SlidingDistinctAssigner(10_000, grace=0))
            .agg(F.count_distinct("amount").alias("n"))
        ),
        "window join .select": joined,
        "hopping window join .select": lambda: joined(HoppingEventTimeWindows(10_000, 2_000)),
    }


def native_plan_builds(spark: SparkSession, df: DataFrame, calls: Calls, args: Any) -> None:
    """The build of each ``.agg`` as the native plan an input above
    ``spark.windowing.smallInputBytes`` gets (the setting at 0 for these builds), and of
    the other native routes (:func:`native_only_plans`)."""
    print()
    print("native plans (an input above spark.windowing.smallInputBytes), build only")
    header = f"{'plan':48s} {'build s':>8s} {'CPU s':>6s} {'JVM calls':>9s}  route"
    print(header)
    print("-" * (len(header) + 20))
    spark.conf.set("spark.windowing.smallInputBytes", "0")
    builds = {name: ours for name, (ours, _) in plans(df).items() if ".agg" in name}
    builds.update(native_only_plans(df))
    try:
        for name, ours in builds.items():
            if args.only and args.only not in name:
                continue
            ours()
            build = median_seconds(ours, args.repeat)
            cpu = median_cpu_seconds(spark, ours, args.repeat)
            before = calls.n
            route = ours().plan.route.value
            print(f"{name:48s} {build:8.3f} {cpu:6.3f} {calls.n - before:9d}  {route}")
    finally:
        spark.conf.unset("spark.windowing.smallInputBytes")


if __name__ == "__main__":
    main()
