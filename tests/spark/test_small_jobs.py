"""Small jobs: a small input's batch replay in one task (no shuffle, one Spark job per read
of its cache) with the outcome of key groups, and plans built without recording the call
sites of the library's own columns."""

from __future__ import annotations

import random
import threading
from typing import Any

import pytest
from pyspark.sql import functions as F  # noqa: N812

from tests.spark.frames import Total, sized_frame
from windowing import BoundedOutOfOrderness, OutputTag, WindowedStream
from windowing.assigners import (
    EventTimeSessionWindows,
    HoppingEventTimeWindows,
    TumblingEventTimeWindows,
)

pytestmark = pytest.mark.spark

LATE = OutputTag("late")


def test_a_small_input_replays_in_one_task_with_the_outcome_of_key_groups(spark: Any) -> None:
    """One task (a sized input: no shuffle, the watermark's prefix maximum one window
    function) and key groups (rows from a list: no size) give the same results, late rows
    and counters: arrival order with null arrival orders and event times, lateness, late
    rows, a reduce; sessions in event-time order; a non-keyed stream."""
    rng = random.Random(7)
    rows = [
        (
            rng.choice(["a", "b", "c", None]),
            rng.randrange(50),
            None if rng.random() < 0.05 else rng.randrange(0, 400),
            None if rng.random() < 0.03 else rng.randrange(60),
        )
        for _ in range(300)
    ]
    schema = "k string, v bigint, ts bigint, arr bigint"

    def outcome(df: Any, job: str) -> tuple[Any, ...]:
        def source(arrival: bool) -> Any:
            return WindowedStream.from_dataframe(
                df,
                event_time="ts",
                arrival_order="arr" if arrival else None,
                watermark=BoundedOutOfOrderness(15),
            )

        def larger(a: Any, b: Any) -> Any:
            return b if (b.v, b.ts) > (a.v, a.ts) else a

        if job == "arrival":
            result = (
                source(True)
                .key_by("k")
                .window(TumblingEventTimeWindows(40))
                .allowed_lateness(20)
                .side_output_late_data(LATE)
                .reduce(larger)
            )
        elif job == "sessions":
            result = source(False).key_by("k").window(EventTimeSessionWindows(9)).reduce(larger)
        else:
            result = (
                source(True)
                .window_all(TumblingEventTimeWindows(40))
                .side_output_late_data(LATE)
                .reduce(larger)
            )
        with result:
            got = sorted(map(repr, result.results.collect()))
            late = sorted(map(repr, result.late.collect())) if result.late is not None else None
            return result.plan.one_task, got, late, result.collect_metrics()

    for job in ("arrival", "sessions", "non-keyed"):
        one_task, *outputs = outcome(sized_frame(spark, rows, schema), job)
        grouped, *expected = outcome(spark.createDataFrame(rows, schema), job)
        assert (one_task, grouped) == (True, False)
        assert outputs == expected, job
        assert expected[0], job  # results to compare
    assert expected[1], "late rows to compare"


def test_a_one_task_replay_has_no_shuffle_and_reads_its_cache_in_one_job(spark: Any) -> None:
    rows = [("a", 1, t, t) for t in range(50)]
    df = sized_frame(spark, rows, "k string, v bigint, ts bigint, arr bigint")
    result = (
        WindowedStream.from_dataframe(
            df, event_time="ts", arrival_order="arr", watermark=BoundedOutOfOrderness(3)
        )
        .key_by("k")
        .window(TumblingEventTimeWindows(10))
        .side_output_late_data(LATE)
        .reduce(lambda a, b: b)
    )
    assert result.plan.one_task
    plan = result.output._jdf.queryExecution().executedPlan().toString()
    assert "Exchange" not in plan and "MapInArrow" in plan
    sc = spark.sparkContext
    sc.setJobGroup("one-task", "one task")
    try:
        with result:
            assert len(result.results.collect()) == 5
    finally:
        sc.setJobGroup("other", "other")
    assert len(sc.statusTracker().getJobIdsForGroup("one-task")) == 1


def test_plans_are_built_without_recording_call_sites(spark: Any) -> None:
    import py4j.clientserver as clientserver
    from pyspark.errors import utils

    from windowing.spark.jobs import without_call_sites

    calls = 0
    send = clientserver.ClientServerConnection.send_command

    def counting(self: Any, command: Any, *args: Any, **kwargs: Any) -> Any:
        nonlocal calls
        calls += 1
        return send(self, command, *args, **kwargs)

    def cost(build: Any) -> int:
        nonlocal calls
        build()
        calls = 0
        build()
        return calls

    column = F.expr("a")
    before = utils.is_debugging_enabled()
    clientserver.ClientServerConnection.send_command = counting  # type: ignore[method-assign]
    try:
        recorded = cost(lambda: (column + 1).alias("b"))
        with without_call_sites():
            assert not utils.is_debugging_enabled()
            quiet = cost(lambda: (column + 1).alias("b"))
    finally:
        clientserver.ClientServerConnection.send_command = send  # type: ignore[method-assign]
    assert utils.is_debugging_enabled() == before
    if before:  # (the default)
        assert quiet * 3 < recorded, (quiet, recorded)
    # a failing build restores it too
    with pytest.raises(ValueError, match="boom"), without_call_sites():
        raise ValueError("boom")
    assert utils.is_debugging_enabled() == before
    # nested, and overlapping in two threads (A in, B in, A out, B out): the last out
    # restores it, and not before
    entered, leave_first = threading.Event(), threading.Event()

    def second() -> None:
        with without_call_sites():
            entered.set()
            leave_first.wait(10)

    with without_call_sites():
        with without_call_sites():
            assert not utils.is_debugging_enabled()
        assert not utils.is_debugging_enabled()
        thread = threading.Thread(target=second)
        thread.start()
        assert entered.wait(10)
    assert not utils.is_debugging_enabled()  # the second build is still under way
    leave_first.set()
    thread.join(10)
    assert utils.is_debugging_enabled() == before


def test_outputs_read_after_the_build_record_no_call_sites(
    spark: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The late rows and metrics of a result are built when first read, from the library's
    columns: no call site is recorded for them (each would cost ten calls to the JVM)."""
    from pyspark.errors import utils

    from windowing.spark.columns.output import OutputLayout

    recording: list[bool] = []
    for name in ("select_late", "select_metric_totals"):
        original = getattr(OutputLayout, name)

        def spy(self: Any, frame: Any, original: Any = original) -> Any:
            recording.append(utils.is_debugging_enabled())
            return original(self, frame)

        monkeypatch.setattr(OutputLayout, name, spy)
    rows = [(i, i % 3, i, 1_000 * i - (i % 4) * 900) for i in range(40)]
    df = sized_frame(spark, rows, "seq bigint, key bigint, amount bigint, t bigint")
    result = (
        WindowedStream.from_dataframe(df, event_time="t", arrival_order="seq")
        .key_by("key")
        .window(TumblingEventTimeWindows(1000))
        .side_output_late_data(LATE)
        .aggregate(Total(), output_schema="total bigint")
    )
    before = utils.is_debugging_enabled()
    assert recording == []  # not built yet
    result.get_side_output(LATE)
    _ = result.metrics
    assert recording == [False, False]
    assert utils.is_debugging_enabled() == before


def test_casts_by_type_name_give_the_type_and_others_keep_the_type_object(spark: Any) -> None:
    """``cast_as`` casts by name (one call to the JVM) exactly where the name parses back to
    the same type, and by ``DataType`` elsewhere: every type below comes out as asked."""
    from pyspark.sql import types as T  # noqa: N812

    from windowing.spark.columns.sql import cast_as, type_sql

    named = [
        T.BooleanType(),
        T.ByteType(),
        T.ShortType(),
        T.IntegerType(),
        T.LongType(),
        T.FloatType(),
        T.DoubleType(),
        T.DecimalType(38, 7),
        T.BinaryType(),
        T.DateType(),
        T.TimestampType(),
        T.TimestampNTZType(),
        T.StringType(),
    ]
    nested = [
        T.StringType("UNICODE_CI"),
        T.ArrayType(T.LongType()),
        T.StructType([T.StructField("a b", T.LongType()), T.StructField("c", T.StringType())]),
        T.MapType(T.StringType(), T.DoubleType()),
    ]
    assert all(type_sql(t) is not None for t in named)
    assert all(type_sql(t) is None for t in nested)
    types = named + nested
    row = spark.range(1).select(
        *[cast_as(F.lit(None), t).alias(f"c{i}") for i, t in enumerate(types)]
    )
    assert [f.dataType for f in row.schema.fields] == types


@pytest.mark.parametrize("assigner", ["tumbling", "hopping in arrival order", "sessions"])
def test_a_native_plan_builds_its_tagged_output_when_another_output_is_read(
    spark: Any, assigner: str
) -> None:
    """A native plan's terminal call builds its results alone: the union of all its
    outputs (which Spark analyzes in tens of milliseconds per branch) is built when another
    output is read or the result persisted, and from then on the results are a filter of it,
    so that a persisted result reads them from its cache. The outputs are the same either
    way."""
    rows = [(i, i % 3, i % 7, 1_000 * i - (i % 5) * 4_000) for i in range(60)]
    df = sized_frame(spark, rows, "seq bigint, key bigint, amount bigint, t bigint")
    window = {
        "tumbling": TumblingEventTimeWindows(4_000),
        "hopping in arrival order": HoppingEventTimeWindows(4_000, 1_000),
        "sessions": EventTimeSessionWindows(1_500),
    }[assigner]
    arrival = "seq" if assigner == "hopping in arrival order" else None

    def build() -> Any:
        source = WindowedStream.from_dataframe(
            df, event_time="t", arrival_order=arrival, watermark=BoundedOutOfOrderness(500)
        )
        return (
            source.key_by("key")
            .window(window)
            .allowed_lateness(2_000)
            .side_output_late_data(LATE)
            .agg(F.sum("amount").alias("total"))
        )

    def rows_of(frame: Any) -> list[tuple[Any, ...]]:
        return sorted((tuple(r) for r in frame.collect()), key=repr)

    fresh = build()
    assert fresh.plan.native and fresh.branches is not None and fresh.shared == ()
    results = rows_of(fresh.results)
    assert "output" not in vars(fresh) and "rest" not in vars(fresh.branches)
    late = rows_of(fresh.get_side_output(LATE))
    assert "output" in vars(fresh)  # another output read: the union is built
    assert rows_of(fresh.results) == results
    assert fresh.collect_metrics().num_results == len(results) > 10
    if arrival is not None:
        assert len(late) > 0  # rows behind their windows' cleanup
    result = build()
    result.unpersist()  # (never persisted: nothing built, nothing to release)
    assert "output" not in vars(result)
    with result:
        assert result.output.is_cached
        # read from the cache: the persisted output under the filter
        plan = result.results._jdf.queryExecution().withCachedData().toString()
        assert "InMemoryRelation" in plan
        assert rows_of(result.results) == results
        assert rows_of(result.get_side_output(LATE)) == late
    assert not result.output.is_cached
