"""WindowedStream.agg over KIP-450 sliding windows (SlidingDistinctAssigner): the native plan
(windowing/spark/native/sliding.py) against the window operator running Kafka's algorithm, on
random data (results, late rows, metrics, pane info), in both of its forms (range frames;
the join of windows to rows), and the jobs that keep the window operator."""

from __future__ import annotations

import random
import sys
from typing import Any

import pytest
from pyspark import cloudpickle as spark_cloudpickle
from pyspark.sql import SparkSession
from pyspark.sql import functions as F  # noqa: N812
from test_agg import (
    LATE,
    SCHEMA,
    SameAsDefault,
    aggregates,
    arrival_rows,
    assert_same_rows,
    fuzz_seeds,
    random_rows,
    rows_of,
)

from windowing import BoundedOutOfOrderness, WindowedStream
from windowing.assigners import SlidingDistinctAssigner
from windowing.evictors import CountEvictor
from windowing.spark.native.parts import FRAMED_MAX_SIZE
from windowing.spark.planning import Route
from windowing.time import MAX_TIMESTAMP, MIN_TIMESTAMP
from windowing.triggers import EventTimeTrigger
from windowing.triggers.emit import OnWindowCloseTrigger

spark_cloudpickle.register_pickle_by_value(sys.modules[__name__])  # type: ignore[no-untyped-call]

FRAMES, JOIN = Route.NATIVE_KIP450, Route.NATIVE_KIP450_JOINED


def windowable() -> list[Any]:
    """The aggregates with a window-function form (no DISTINCT): the range-frame form."""
    return [c for c in aggregates() if "distinct" not in repr(c)]


def compare(stream: Any, columns: list[Any], form: Route) -> tuple[list[Any], Any]:
    """The native plan (in ``form``) and the window operator give the same results, late rows
    and metrics; returns the operator's results and metrics."""
    native = stream.agg(*columns)
    operator = stream.trigger(SameAsDefault()).agg(*columns)
    assert native.plan.native and native.plan.operator is None
    assert native.plan.route is form
    assert not operator.plan.native
    assert operator.plan.operator.strategy.value == "kafka-sliding"
    with native, operator:
        assert native.results.schema == operator.results.schema
        pane_columns = ["pane_index", "timing"]
        assert (native.results.columns[-2:] == pane_columns) == stream.config.pane_info
        want = rows_of(operator.results)
        assert_same_rows(rows_of(native.results), want)
        assert rows_of(native.get_side_output(LATE)) == rows_of(operator.get_side_output(LATE))
        metrics = operator.collect_metrics()
        assert native.collect_metrics() == metrics
    return want, metrics


@pytest.mark.differential(Route.NATIVE_KIP450, Route.NATIVE_KIP450_JOINED)
@pytest.mark.parametrize(
    ("seed", "size", "grace", "extreme", "keyed", "spread", "form"),
    [
        (1, 10, 0, False, True, 60, FRAMES),
        (2, 10, 0, False, True, 60, JOIN),
        (3, 0, 0, False, True, 20, FRAMES),
        (4, 7, 5, False, False, 300, FRAMES),
        (5, 25, 3, False, True, 60, JOIN),
        (6, 3, 0, True, True, 60, FRAMES),
        (7, 3, 4, True, True, 60, FRAMES),
        (8, 3, 4, True, True, 60, JOIN),
        (9, FRAMED_MAX_SIZE, 2**62, True, True, 60, FRAMES),
        (10, 2**62, 2**62, True, True, 60, JOIN),
        (11, MAX_TIMESTAMP, MAX_TIMESTAMP, True, True, 60, JOIN),
        (12, 1, 2**62, True, False, 60, FRAMES),
    ],
    ids=[
        "size 10",
        "size 10, count distinct",
        "size 0",
        "window_all, grace",
        "grace, count distinct",
        "ends of time, records at MIN late",
        "ends of time, records at MIN fire per row",
        "ends of time, count distinct",
        "largest size of the range frames",
        "size 2**62",
        "size MAX",
        "window_all at the ends of time",
    ],
)
def test_native_sliding_equals_the_window_operator(
    spark: SparkSession,
    seed: int,
    size: int,
    grace: int,
    extreme: bool,
    keyed: bool,
    spread: int,
    form: Route,
) -> None:
    rows = random_rows(seed, n=300, extreme=extreme, spread=spread)
    df = spark.createDataFrame(rows, SCHEMA)
    source = WindowedStream.from_dataframe(df, event_time="t")
    assigner = SlidingDistinctAssigner(size, grace=grace)
    windowed = source.key_by("k").window(assigner) if keyed else source.window_all(assigner)
    stream = windowed.side_output_late_data(LATE)
    want, metrics = compare(stream, windowable() if form == FRAMES else aggregates(), form)
    assert len(want) > 10
    starts = {r[1 if keyed else 0] for r in want}
    if not extreme:
        assert 0 in starts or size == 0  # Kafka's early window [0; size]
        assert any(s is not None and s < 0 for s in starts)  # and windows below 0
    if extreme and grace == 0:
        assert metrics.num_late_records_side_output > 0  # records at MIN
    if extreme and grace > 0:
        fired_at_min = [r for r in want if r[-1] == MIN_TIMESTAMP]
        assert len(fired_at_min) > 1  # the window at MIN fired once per record
    if size >= 2**62:
        assert metrics.num_windows_left_at_end > 0  # their cleanup time saturates


@pytest.mark.parametrize(
    ("seed", "size", "grace", "keyed", "form"),
    [
        (41, 10, 0, True, FRAMES),
        (42, 3, 4, True, FRAMES),
        (43, 3, 4, False, FRAMES),
        pytest.param(44, 3, 4, True, JOIN, marks=pytest.mark.slow),
        pytest.param(45, MAX_TIMESTAMP, 2**62, True, JOIN, marks=pytest.mark.slow),
    ],
    ids=[
        "size 10, records at MIN late",
        "records at MIN fire per row",
        "window_all, records at MIN fire per row",
        "count distinct, records at MIN fire per row",
        "size MAX",
    ],
)
def test_pane_info_equals_the_window_operator(
    spark: SparkSession, seed: int, size: int, grace: int, keyed: bool, form: Route
) -> None:
    """With ``pane_info()`` the plan gives each result the operator's pane: every window fires
    once, on time, at the end of input; with a grace the window at the start of time fires
    per record at MIN, late, numbered in replay order."""
    rows = random_rows(seed, n=300, extreme=True)
    source = WindowedStream.from_dataframe(spark.createDataFrame(rows, SCHEMA), event_time="t")
    assigner = SlidingDistinctAssigner(size, grace=grace)
    windowed = source.key_by("k").window(assigner) if keyed else source.window_all(assigner)
    stream = windowed.side_output_late_data(LATE).pane_info()
    want, _ = compare(stream, windowable() if form == FRAMES else aggregates(), form)
    at_min = [r for r in want if r[-3] == MIN_TIMESTAMP]  # max_timestamp
    others = [r for r in want if r[-3] != MIN_TIMESTAMP]
    assert len(others) > 10
    assert {r[-2:] for r in others} == {(0, "ON_TIME")}
    if grace == 0:
        assert not at_min
    else:
        assert {r[-1] for r in at_min} == {"LATE"}
        assert max(r[-2] for r in at_min) >= 1


def test_worked_example(spark: SparkSession) -> None:
    """docs/sliding-distinct.md's example (size 10, records at 105, 108, 112, 121), a tie,
    and Kafka's early window for records in [0, size)."""
    rows = [("a", t, 1, None, None, None) for t in (105, 108, 112, 121, 112)]
    rows += [("b", t, 1, None, None, None) for t in (5, 8, 12, 21)]
    df = spark.createDataFrame(rows, SCHEMA)
    stream = (
        WindowedStream.from_dataframe(df, event_time="t")
        .key_by("k")
        .window(SlidingDistinctAssigner(10, grace=0))
    )
    result = stream.agg(F.count("*").alias("n"))
    assert result.plan.native
    got = [r[:4] for r in rows_of(result.results)]
    want = [
        ("a", 95, 106, 1),
        ("a", 98, 109, 2),
        ("a", 102, 113, 4),
        ("a", 106, 117, 3),
        ("a", 109, 120, 2),
        ("a", 111, 122, 3),
        ("a", 113, 124, 1),
        ("b", 0, 11, 2),  # Kafka's [0; 10], not [-5; 5] and [-2; 8]
        ("b", 2, 13, 3),
        ("b", 6, 17, 2),
        ("b", 9, 20, 1),
        ("b", 11, 22, 2),
        ("b", 13, 24, 1),
    ]
    assert got == sorted(want, key=repr)
    assert result.collect_metrics().num_windows_fired == len(want)


def test_native_sliding_runs_no_python(spark: SparkSession) -> None:
    df = spark.createDataFrame(random_rows(21), SCHEMA)
    windowed = (
        WindowedStream.from_dataframe(df, event_time="t")
        .key_by("k")
        .window(SlidingDistinctAssigner(10, grace=3))
        .side_output_late_data(LATE)
    )
    for columns in ([F.sum("i"), F.first("s")], [F.count_distinct("i")]):
        result = windowed.agg(*columns)
        assert result.plan.native
        for frame in (result.results, result.get_side_output(LATE), result.metrics):
            plan = frame._jdf.queryExecution().executedPlan().toString()
            assert "Python" not in plan and "Arrow" not in plan, plan


def test_aggregates_only_spark_computes_run_natively(spark: SparkSession) -> None:
    """Functions the window operator does not know run in the join form: their windows are
    the operator's (same rows per window)."""
    df = spark.createDataFrame(random_rows(22, n=200), SCHEMA)
    windowed = (
        WindowedStream.from_dataframe(df, event_time="t")
        .key_by("k")
        .window(SlidingDistinctAssigner(6, grace=0))
    )
    native = windowed.agg(F.sort_array(F.collect_list("i")).alias("all_i"), F.sum("i") + 1)
    assert native.plan.route is JOIN
    operator = windowed.trigger(SameAsDefault()).agg(F.count("i").alias("n"), F.sum("i"))
    got = [(*r[:3], len(r[3]), None if r[4] is None else r[4] - 1) for r in rows_of(native.results)]
    assert sorted(got, key=repr) == sorted((r[:5] for r in rows_of(operator.results)), key=repr)
    assert len(got) > 10


def test_explain_names_the_plan(spark: SparkSession, capsys: pytest.CaptureFixture[str]) -> None:
    df = spark.createDataFrame(random_rows(23, n=20), SCHEMA)
    windowed = (
        WindowedStream.from_dataframe(df, event_time="t")
        .key_by("k")
        .window(SlidingDistinctAssigner("10 ms", grace=0))
    )
    windowed.agg(F.sum("i")).explain()
    out = capsys.readouterr().out
    assert "native Spark plan: KIP-450 sliding windows" in out
    assert f"route: {FRAMES.value}" in out
    assert "operator: none" in out
    assert windowed.trigger(EventTimeTrigger()).agg(F.sum("i")).plan.native  # the default


def test_jobs_that_keep_the_window_operator(spark: SparkSession) -> None:
    """Arrival order (Kafka's algorithm depends on it), the record timeline (slicing=True:
    KIP-450's definition), other triggers, evictors: the window operator."""
    df = spark.createDataFrame(arrival_rows(24, n=80), SCHEMA + ", a long")
    source = WindowedStream.from_dataframe(
        df, event_time="t", arrival_order="a", watermark=BoundedOutOfOrderness(2)
    )
    assigner = SlidingDistinctAssigner(10, grace=5)
    in_arrival_order = source.key_by("k").window(assigner).side_output_late_data(LATE)
    result = in_arrival_order.agg(F.sum("i").alias("total"))
    assert not result.plan.native
    assert result.plan.operator is not None
    assert result.plan.operator.strategy.value == "kafka-sliding"
    with result:
        assert result.results.count() > 0
        assert result.collect_metrics().num_late_records_side_output > 0
    ordered = WindowedStream.from_dataframe(df, event_time="t").key_by("k").window(assigner)
    for stream in (
        ordered.slicing(True),
        ordered.trigger(OnWindowCloseTrigger()),
        ordered.evictor(CountEvictor(2)),
    ):
        assert not stream.agg(F.sum("i")).plan.native
    assert ordered.slicing(False).agg(F.sum("i")).plan.native  # Kafka's algorithm too


def test_grace_and_allowed_lateness_must_agree(spark: SparkSession) -> None:
    df = spark.createDataFrame(random_rows(25, n=20), SCHEMA)
    windowed = (
        WindowedStream.from_dataframe(df, event_time="t")
        .key_by("k")
        .window(SlidingDistinctAssigner(10, grace=5))
    )
    with pytest.raises(ValueError, match=r"allowed_lateness=3 differs from the grace 5 ms"):
        windowed.allowed_lateness(3).agg(F.sum("i"))
    same = windowed.allowed_lateness(5).agg(F.sum("i"))
    assert same.plan.native


@pytest.mark.parametrize("seed", fuzz_seeds([31, 47, 59], 3_000))
def test_random_sliding_configurations_agree(spark: SparkSession, seed: int) -> None:
    """A random shape (size, grace, keys or window_all, data near the ends of time, the
    aggregates of either form): the native plan equals the window operator."""
    rng = random.Random(seed)
    extreme = rng.random() < 0.3
    spread = rng.choice([10, 30, 300, 3000])
    rows = random_rows(seed, n=rng.randint(20, 300), extreme=extreme, spread=spread)
    source = WindowedStream.from_dataframe(spark.createDataFrame(rows, SCHEMA), event_time="t")
    size = rng.choice([0, 1, rng.randint(1, 40), rng.randint(1, 400), 2**62, MAX_TIMESTAMP])
    grace = rng.choice([0, 0, 3, 2**62])
    assigner = SlidingDistinctAssigner(size, grace=grace)
    keyed = rng.random() < 0.8
    windowed = source.key_by("k").window(assigner) if keyed else source.window_all(assigner)
    framed = size <= FRAMED_MAX_SIZE and rng.random() < 0.7
    columns = windowable() if framed else aggregates()
    stream = windowed.side_output_late_data(LATE).pane_info(rng.random() < 0.3)
    compare(stream, columns, FRAMES if framed else JOIN)
