"""Arrival order on Spark: how many Spark jobs one action runs (adaptive query execution on,
the default 200 shuffle partitions), that the plans make Spark log no warning, and that the
arrival cutoffs aggregated in one task or in parallel, and data at the ends of time, give
the window operator's results (``docs/spark-internals.md``, "Computing the watermark")."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from pyspark import cloudpickle as spark_cloudpickle
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812

import windowing.spark.native.windows as native_module
from tests.spark.frames import Total
from windowing import BoundedOutOfOrderness, OutputTag, TumblingEventTimeWindows, WindowedStream
from windowing.time import MAX_TIMESTAMP, MIN_TIMESTAMP
from windowing.triggers import EventTimeTrigger

pytestmark = pytest.mark.spark
spark_cloudpickle.register_pickle_by_value(sys.modules[__name__])  # type: ignore[no-untyped-call]

LATE = OutputTag("late")
JOB = Path(__file__).with_name("warnings_job.py")


class SameAsDefault(EventTimeTrigger):
    """The default trigger under another class: the window operator runs the job."""


def events(spark: SparkSession, n: int = 3_000, seed: int = 7) -> DataFrame:
    """``n`` rows of 20 keys in arrival order ``seq``, event times mostly rising, some far
    behind (late, or within the lateness). Built from ``spark.range``, so Spark knows its
    size, as it does for files and tables."""
    behind = (
        "element_at(array(0, 0, 0, 5, 40, 300, 900, 3000), "
        "CAST(1 + pmod(xxhash64(id, {s}), 8) AS INT))"
    )
    return spark.range(n).selectExpr(
        f"pmod(xxhash64(id, {seed}), 20) AS key",
        f"1 + pmod(xxhash64(id, {seed + 1}), 9) AS amount",
        f"id * 10 - {behind.format(s=seed + 2)} AS ts",
        "id AS seq",
    )


def windowed(df: DataFrame, lateness: int = 500) -> Any:
    return (
        WindowedStream.from_dataframe(
            df, event_time="ts", arrival_order="seq", watermark=BoundedOutOfOrderness(100)
        )
        .key_by("key")
        .window(TumblingEventTimeWindows(1_000))
        .allowed_lateness(lateness)
        .side_output_late_data(LATE)
    )


@pytest.fixture
def default_partitions(spark: SparkSession) -> Iterator[None]:
    """Spark's defaults for a user's session: 200 shuffle partitions, AQE coalescing them."""
    conf = spark.conf
    before = conf.get("spark.sql.shuffle.partitions")
    conf.set("spark.sql.shuffle.partitions", "200")
    assert conf.get("spark.sql.adaptive.enabled") == "true"
    assert conf.get("spark.sql.adaptive.coalescePartitions.enabled") == "true"
    try:
        yield
    finally:
        conf.set("spark.sql.shuffle.partitions", before or "2")


def jobs_of(spark: SparkSession, action: Callable[[], object]) -> int:
    """The Spark jobs ``action`` runs (every job of the action carries its job group:
    shuffle stages, broadcasts and subqueries too)."""
    sc = spark.sparkContext
    group = f"pw-jobs-{uuid.uuid4().hex}"
    sc.setJobGroup(group, "counting jobs")
    try:
        action()
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
        sc.setLocalProperty("spark.job.description", None)  # type: ignore[arg-type]
    return len(sc.statusTracker().getJobIdsForGroup(group))


def rows_of(df: DataFrame) -> list[tuple[Any, ...]]:
    return sorted((tuple(r) for r in df.collect()), key=repr)


def noop(df: DataFrame) -> None:
    df.write.format("noop").mode("overwrite").save()


@pytest.mark.parametrize("lateness", [0, 500], ids=["no lateness", "late firings"])
@pytest.mark.usefixtures("default_partitions")
def test_native_plan_in_arrival_order_runs_three_jobs(spark: SparkSession, lateness: int) -> None:
    """The results: the arrival cutoffs (one task, broadcast), the shuffle of the
    aggregation, the result stage. The late rows alone: the cutoffs, the windows' arrival
    runs (a second broadcast), the shuffle that meets each late row with the rows of the
    window holding its watermark's maximum, the result stage. Spark's own
    groupBy(window()) runs two."""
    result = windowed(events(spark), lateness).agg(F.sum("amount").alias("total"))
    assert result.plan.native
    assert jobs_of(spark, lambda: noop(result.results)) == 3
    assert jobs_of(spark, lambda: noop(result.results)) == 3  # again: the same plan
    assert jobs_of(spark, lambda: noop(result.get_side_output(LATE))) == 4
    native = (
        events(spark)
        .groupBy("key", F.window(F.timestamp_millis("ts"), "1 second"))
        .agg(F.sum("amount"))
    )
    assert jobs_of(spark, lambda: noop(native)) == 2
    firings = result.results.count()
    windows = result.results.select("key", "window_start").distinct().count()
    assert (firings > windows) == (lateness > 0)  # late firings, or one firing per window
    assert result.get_side_output(LATE).count() > 0


@pytest.mark.parametrize(
    ("one_task", "few_rows"),
    [(True, True), (True, False), (False, False)],
    ids=["one task", "one task, semi-join", "parallel cutoffs"],
)
@pytest.mark.usefixtures("default_partitions")
def test_a_persisted_result_reads_its_outputs_from_the_shared_parts(
    spark: SparkSession, one_task: bool, few_rows: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``with result:`` caches the windows' arrival cutoffs and the results, not the tagged
    output (whose branches would each compute the input again). Outputs and metrics are
    those of the unpersisted result and the late rows the operator's, also when the
    parallel cutoffs meet the late rows only with the rows of the windows they ask about."""
    if not one_task:
        monkeypatch.setattr("windowing.spark.columns.watermark.ONE_TASK_BYTES", 0)
    if not few_rows:
        monkeypatch.setattr("windowing.spark.native.windows.few_rows_enough", lambda df: False)
    df = events(spark, 6_000)
    fresh = windowed(df).agg(F.sum("amount").alias("total"))
    expected = [rows_of(fresh.results), rows_of(fresh.get_side_output(LATE))]
    expected_metrics = fresh.metrics.collect()
    result = windowed(df).agg(F.sum("amount").alias("total"))
    assert result.branches is not None
    result.unpersist()  # (never persisted: nothing to release, nothing built for it)
    assert "rest" not in vars(result.branches)  # the other outputs: built when first needed
    parts = result.cached_parts()
    assert len(parts) == 4  # the cutoffs, the results, the counters, the late rows
    with result:
        assert all(df.is_cached for df in parts)
        results = rows_of(result.results)
        # the late rows, after the results: their own jobs only, small ones (the windows'
        # arrival runs, the late rows before their watermarks, cached; the shuffle meeting
        # them with the input rows: all of them for a small input, else those of the
        # windows they ask about, after a broadcast of those windows and their runs)
        late_jobs = jobs_of(spark, lambda: noop(result.get_side_output(LATE)))
        assert late_jobs == (5 if few_rows else 9)
        got = [results, rows_of(result.get_side_output(LATE))]
        assert result.metrics.collect() == expected_metrics
    assert not any(df.is_cached for df in parts)
    assert got == expected
    assert len(expected[1]) > 20 and {r[-1] for r in expected[1]} == {"late"}
    operator = windowed(df).trigger(SameAsDefault()).agg(F.sum("amount").alias("total"))
    assert rows_of(operator.get_side_output(LATE)) == expected[1]


@pytest.mark.parametrize("small", [False, True], ids=["key groups", "one task"])
@pytest.mark.usefixtures("default_partitions")
def test_batch_replay_in_arrival_order_runs_four_jobs_or_one(
    spark: SparkSession, small: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The window operator's replay needs each row's exact watermark (a process function or
    trigger can read it): the arrival quantiles, the shuffle by arrival bucket (the maximum
    of earlier rows inside a bucket), the shuffle by key group (with each bucket's maximum,
    for earlier buckets), and the result stage running the operator. Three would need the
    rows in arrival order without a quantile pass (docs/spark-internals.md explains why not).
    A small input (one key group) runs in one task: one job, no shuffle."""
    if not small:  # (this input in several key groups, as a larger one would be)
        monkeypatch.setattr("windowing.spark.jobs.BYTES_PER_KEY_GROUP", 4_096)
    result = windowed(events(spark)).aggregate(Total(), output_schema="total bigint")
    assert result.plan.one_task is small
    jobs = 1 if small else 4
    assert jobs_of(spark, lambda: noop(result.results)) == jobs
    assert jobs_of(spark, lambda: noop(result.results)) == jobs
    assert jobs_of(spark, lambda: noop(result.output)) == jobs  # results, late rows, metrics
    assert result.results.count() > 0


@pytest.mark.parametrize("native", [True, False], ids=["native plan", "batch replay"])
@pytest.mark.usefixtures("default_partitions")
def test_a_persisted_result_is_read_in_few_tasks(spark: SparkSession, native: bool) -> None:
    """A persisted output is cached with its shuffles coalesced: reading the late rows or
    the metrics after the results runs a few tasks, not one per default shuffle partition
    of every branch (over 400 for the native plan), and the session's setting is back."""
    key = "spark.sql.optimizer.canChangeCachedPlanOutputPartitioning"
    before = spark.conf.get(key)
    stream = windowed(events(spark, n=600))
    result = (
        stream.agg(F.sum("amount").alias("total"))
        if native
        else stream.aggregate(Total(), output_schema="total bigint")
    )
    assert result.plan.native == native
    with result:
        assert spark.conf.get(key) == before
        assert result.results.count() > 0
        cached = result.cached_parts()
        assert all(df.is_cached for df in cached)
        assert max(df.rdd.getNumPartitions() for df in cached) <= 20
        assert result.get_side_output(LATE).count() > 0
        assert result.collect_metrics().num_input_rows == 600


@pytest.mark.slow  # about 30 s: ./dev test-slow
@pytest.mark.usefixtures("default_partitions")
def test_parallel_cutoffs_give_the_same_results(
    spark: SparkSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An input too large for one task aggregates the cutoffs in parallel: one more job
    (the aggregate's shuffle), the same results, late rows and metrics."""
    stream = windowed(events(spark, seed=11))
    one_task = stream.agg(F.sum("amount").alias("total"), F.max("ts"))
    monkeypatch.setattr(native_module, "one_task_enough", lambda df: False)
    parallel = stream.agg(F.sum("amount").alias("total"), F.max("ts"))
    assert jobs_of(spark, lambda: noop(parallel.results)) == 4
    with one_task, parallel:
        assert rows_of(parallel.results) == rows_of(one_task.results)
        late = rows_of(parallel.get_side_output(LATE))
        assert late == rows_of(one_task.get_side_output(LATE))
        assert parallel.collect_metrics() == one_task.collect_metrics()
    assert late


def extreme_rows(seed: int) -> list[tuple[Any, ...]]:
    """Rows at the ends of time and around them, in a random arrival order with ties; a
    few without event time or arrival."""
    rng = random.Random(seed)
    times = [MIN_TIMESTAMP, MIN_TIMESTAMP + 1, MIN_TIMESTAMP + 7, -5, 0, 3, 11]
    times += [MAX_TIMESTAMP - 9, MAX_TIMESTAMP - 1, MAX_TIMESTAMP]
    rows = []
    for i in range(120):
        t: int | None = rng.choice(times) + rng.choice([0, 0, 1, 2]) * (1 if i % 2 else -1)
        t = None if rng.random() < 0.04 else min(max(t, MIN_TIMESTAMP), MAX_TIMESTAMP)
        a: int | None = None if rng.random() < 0.03 else rng.randint(0, 60)
        m = Decimal(rng.randint(-99, 99))
        rows.append((rng.choice("ab"), t, rng.randint(-3, 3), m, rng.choice("xyz"), a))
    return rows


@pytest.mark.parametrize(
    ("seed", "size", "offset", "delay", "lateness"),
    [
        (1, 10, 3, 0, 0),
        (2, 10, 3, 2, 7),
        pytest.param(3, 7, -2, 2**62, 0, marks=pytest.mark.slow),
        pytest.param(4, 7, 0, 3, 2**62, marks=pytest.mark.slow),
        pytest.param(5, 2**62, 5, 2**62, 2**62, marks=pytest.mark.slow),
        (6, 1, 0, 0, 1),
    ],
)
def test_ends_of_time_in_arrival_order(
    spark: SparkSession, seed: int, size: int, offset: int, delay: int, lateness: int
) -> None:
    """The cutoffs' shifted event times saturate at the ends of time: the native plan equals
    the window operator there, with huge delays and lateness, and a decimal average
    rounded to scale 4 (one rounding, half up)."""
    df = spark.createDataFrame(
        extreme_rows(seed), "k string, t long, i int, m decimal(12,0), s string, a long"
    )
    stream = (
        WindowedStream.from_dataframe(
            df, event_time="t", arrival_order="a", watermark=BoundedOutOfOrderness(delay)
        )
        .key_by("k")
        .window(TumblingEventTimeWindows(size, offset))
        .allowed_lateness(lateness)
        .side_output_late_data(LATE)
    )
    columns = [
        F.count("*").alias("n"),
        F.sum("i").alias("sum_i"),
        F.avg("m").alias("avg_m"),
        F.sum("m").alias("sum_m"),
        F.min("s").alias("min_s"),
        F.last("s").alias("last_s"),
        F.max_by("s", "i").alias("max_by"),
        F.bool_or(F.col("i") > 2).alias("any_big"),
    ]
    native = stream.agg(*columns)
    operator = stream.trigger(SameAsDefault()).agg(*columns)
    assert native.plan.native and not operator.plan.native
    with native, operator:
        assert rows_of(native.results) == rows_of(operator.results)
        assert rows_of(native.get_side_output(LATE)) == rows_of(operator.get_side_output(LATE))
        assert native.collect_metrics() == operator.collect_metrics()


def duplicated_rows(seed: int) -> list[tuple[Any, ...]]:
    """Rows of two keys in arrival order with disorder, some far behind (late firings or
    late rows), and about a third of them twice or thrice: identical rows (same arrival,
    event time and content)."""
    rng = random.Random(seed)
    rows: list[tuple[Any, ...]] = []
    for a in range(150):
        t = a // 2 - (rng.randint(10, 60) if rng.random() < 0.3 else rng.randint(-3, 3))
        row = (rng.choice("ab"), t, a, rng.randint(-4, 9))
        rows += [row] * rng.choice([1, 1, 2, 3])
    rng.shuffle(rows)
    return rows


def windowed_pane(df: DataFrame) -> Any:
    return (
        WindowedStream.from_dataframe(
            df, event_time="t", arrival_order="arr", watermark=BoundedOutOfOrderness(2)
        )
        .key_by("k")
        .window(TumblingEventTimeWindows(10))
        .allowed_lateness(25)
        .side_output_late_data(LATE)
        .pane_info()
    )


@pytest.mark.parametrize("seed", [1, 2])
def test_identical_late_rows_fire_once_each(spark: SparkSession, seed: int) -> None:
    """Identical rows behind the watermark are each a late firing in the replay: the native
    plan fires once per row (not once per distinct row), with the operator's panes."""
    df = spark.createDataFrame(duplicated_rows(seed), "k string, t long, arr long, v long")
    stream = windowed_pane(df)
    columns = [F.sum("v").alias("total"), F.count("*").alias("n"), F.last("v")]
    native = stream.agg(*columns)
    operator = stream.trigger(SameAsDefault()).agg(*columns)
    assert native.plan.native and not operator.plan.native
    with native, operator:
        got = rows_of(native.results)
        assert got == rows_of(operator.results)
        assert rows_of(native.get_side_output(LATE)) == rows_of(operator.get_side_output(LATE))
        assert native.collect_metrics() == operator.collect_metrics()
    # the data has identical late rows: without the copies there are fewer late firings
    late = sum(1 for r in got if r[-1] == "LATE")
    distinct = windowed_pane(df.dropDuplicates()).agg(*columns)
    assert 0 < distinct.results.where("timing = 'LATE'").count() < late


def test_no_spark_warnings_from_arrival_order_plans() -> None:
    """A job (``warnings_job.py``, its own Spark session at log level WARN, Spark's default
    partitions) runs the native plan and the batch replay in arrival order: the driver log
    holds no warning from our plans (such as WindowExec's "No Partition Defined")."""
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    env["PYTHONPATH"] = os.pathsep.join([str(JOB.parents[2]), env.get("PYTHONPATH", "")])
    done = subprocess.run(
        [sys.executable, str(JOB)], capture_output=True, text=True, env=env, timeout=900
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "job done:" in done.stdout
    warnings = [
        line
        for line in done.stderr.splitlines()
        if " WARN " in line and not any(ok in line for ok in _ENVIRONMENT_WARNINGS)
    ]
    assert warnings == []


#: Warnings about the machine or Spark's own startup, not about a plan.
_ENVIRONMENT_WARNINGS = (
    "Utils: Your hostname",
    "Utils: Set SPARK_LOCAL_IP",
    "NativeCodeLoader",
    "SparkConf: Note that spark.local.dir",
)
