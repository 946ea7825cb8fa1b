"""Structured Streaming of more windows == the batch replay: sessions, KIP-450 (sliding
distinct) and hopping windows, the built-in aggregations and ``.agg`` on accumulator columns
(tumbling, hopping, sessions, KIP-450, under a count trigger), ``window_all``, several keys
of a key group, float keys, a custom trigger and evictor, ``fold``, ``reduce`` and an
aggregate with a window function; each as a streaming query over micro-batch files and as
the batch replay with the micro-batch as arrival order (the helpers and the files' shape:
``test_spark_streaming.py``)."""

from __future__ import annotations

import math
import random
import sys
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
from pyspark import cloudpickle as spark_cloudpickle
from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as F  # noqa: N812

from tests.spark.test_spark_streaming import (
    DELAY,
    LATE,
    SCHEMA,
    SIZE,
    T0,
    CountSum,
    add,
    built_in_sum,
    in_order_batches,
    make_batches,
    read,
    run,
    streamed_and_replayed,
    with_band_rows,
    write_files,
)
from windowing import OutputTag
from windowing.assigners import (
    EventTimeSessionWindows,
    HoppingEventTimeWindows,
    SlidingDistinctAssigner,
    TumblingEventTimeWindows,
)
from windowing.evictors import Evictor
from windowing.functions import ProcessWindowFunction, WindowFunction
from windowing.spark.planning import ColumnarShape, Route
from windowing.spark.streaming.checkpoint import JobChangedError
from windowing.spark.streaming.query import write_results_and_late
from windowing.stream import BoundedOutOfOrderness, WindowedStream
from windowing.triggers import (
    CountTrigger,
    PurgingTrigger,
    Trigger,
    TriggerResult,
)

pytestmark = pytest.mark.spark

spark_cloudpickle.register_pickle_by_value(sys.modules[__name__])  # type: ignore[no-untyped-call]


BIG = OutputTag("big")


class AmountsWithBig(ProcessWindowFunction[Row, tuple[int, str], str, Any]):
    """Order-sensitive results; windows with a total >= 15 also go to the side output."""

    def process(self, key: str, context: Any, elements: Iterable[Row]) -> Iterable[Any]:
        items = list(elements)
        total = sum(r.amount for r in items)
        if total >= 15:
            context.output(BIG, (total, len(items)))
        yield (total, ",".join(str(r.amount) for r in items))


# 1969 alone (every time below 0) runs with ``slow``: around the epoch covers it and 0
@pytest.mark.parametrize(
    "t0",
    [-20_000, pytest.param(-86_400_000, marks=pytest.mark.slow)],
    ids=["around the epoch", "1969"],
)
def test_event_times_before_the_epoch_stream_as_they_replay(
    spark: SparkSession, tmp_path: Path, t0: int
) -> None:
    """Spark's watermark never goes below 0: streaming must still mark rows late and fire
    windows before the epoch as the batch replay does (and give the null-event-time row the
    same late_watermark)."""
    streamed, replayed = streamed_and_replayed(
        spark,
        tmp_path,
        make_batches(seed=4, t0=t0),
        lambda keyed: (
            keyed.window(TumblingEventTimeWindows(SIZE))
            .allowed_lateness(1_000)
            .side_output_late_data(LATE)
            .reduce(add)
        ),
    )
    assert streamed == replayed
    reasons = Counter(r[-1] for r in streamed["late"])
    assert reasons["late"] >= 2 and reasons["null_event_time"] == 1
    null_row = next(r for r in streamed["late"] if r[-1] == "null_event_time")
    assert null_row[-2] is not None  # the watermark of its micro-batch, as in the replay
    assert len(streamed["results"]) > 5


def test_session_windows_with_aggregate(spark: SparkSession, tmp_path: Path) -> None:
    streamed, replayed = streamed_and_replayed(
        spark,
        tmp_path,
        in_order_batches(seed=1),
        lambda keyed: (
            keyed.window(EventTimeSessionWindows(1_500))
            .side_output_late_data(LATE)
            .aggregate(CountSum(), output_schema="n bigint, total bigint")
        ),
    )
    assert streamed == replayed
    assert len(streamed["results"]) >= 4
    assert any(r[3] > 1 for r in streamed["results"]), "some sessions merged several rows"


def test_sliding_distinct_windows_with_process_and_side_output(
    spark: SparkSession, tmp_path: Path
) -> None:
    streamed, replayed = streamed_and_replayed(
        spark,
        tmp_path,
        in_order_batches(seed=2),
        lambda keyed: (
            keyed.window(SlidingDistinctAssigner(3_000, grace=500))
            .side_output_late_data(LATE)
            .process(
                AmountsWithBig(),
                output_schema="total bigint, amounts string",
                side_output_schemas={BIG: "total bigint, n bigint"},
            )
        ),
        side_outputs=[BIG],
    )
    assert streamed == replayed
    assert streamed["results"] and streamed["big"]
    assert {r[3] for r in streamed["big"]} <= {r[3] for r in streamed["results"]}


# The batch replay of these built-ins runs as the native arrival-order plan (its own tests
# hold it to the window operator).
@pytest.mark.differential(Route.STREAMING, ColumnarShape.TUMBLING, Route.NATIVE_TUMBLING_ARRIVAL)
# Each aggregation kind and both lateness cases once over the three window shapes (this test
# and the next): every case is a streaming query of eight micro-batches.
@pytest.mark.parametrize(("aggregation", "lateness"), [("sum", 3_000), ("min", 0)])
def test_built_in_aggregations_of_tumbling_windows(
    spark: SparkSession, tmp_path: Path, aggregation: str, lateness: int
) -> None:
    """Streaming computes built-in aggregations of tumbling windows on whole columns while a
    call allows it and with the operator otherwise (a null amount; rows that fire their
    window on arrival), converting the key's state each way: the outputs equal the batch
    replay's."""

    def finish(keyed: Any) -> Any:
        stream = keyed.window(TumblingEventTimeWindows(SIZE)).side_output_late_data(LATE)
        if lateness:
            stream = stream.allowed_lateness(lateness)
        return getattr(stream, aggregation)("amount")

    batches = with_band_rows(make_batches(seed=5))
    streamed, replayed = streamed_and_replayed(spark, tmp_path, batches, finish)
    assert streamed == replayed
    fired_on_arrival = [r for r in streamed["results"] if r[0] == "a" and r[1] == T0 + 20_000]
    if lateness:
        assert len(fired_on_arrival) == 2  # at the watermark, then again with the late row
    else:
        assert ("a", 7, T0 + 25_000) in [r[:3] for r in streamed["late"]]
    assert {r[-1] for r in streamed["late"]} >= {"late", "null_event_time"}


@pytest.mark.differential(Route.STREAMING, ColumnarShape.TUMBLING, Route.NATIVE_TUMBLING_ARRIVAL)
@pytest.mark.parametrize("lateness", [3_000, 0])
def test_agg_columns_of_tumbling_windows(
    spark: SparkSession, tmp_path: Path, lateness: int
) -> None:
    """Streaming computes ``.agg`` of tumbling windows on accumulator columns while a call
    allows it and with the operator otherwise (rows that fire their window on arrival),
    converting the key's accumulators each way: the outputs equal the batch replay's,
    nulls, counts of nothing and late rows included."""

    def finish(keyed: Any) -> Any:
        stream = keyed.window(TumblingEventTimeWindows(SIZE)).side_output_late_data(LATE)
        if lateness:
            stream = stream.allowed_lateness(lateness)
        return stream.agg(
            F.count("*").alias("n"),
            F.count("amount").alias("valued"),
            F.sum("amount").alias("total"),
            F.avg("amount").alias("mean"),
            F.min("amount").alias("low"),
            F.max(F.col("amount") / 2).alias("high"),
            F.count_if(F.col("amount") > 3).alias("big"),
            F.bool_or(F.col("amount") > 5).alias("any_big"),
        )

    batches = with_band_rows(make_batches(seed=5))
    batches[1].append({"user": "n", "amount": None, "ts": T0 + 3_000, "batch": 1})
    df = spark.readStream.schema(SCHEMA).json(str(tmp_path))
    plan = finish(WindowedStream.from_dataframe(df, event_time="ts").key_by("user")).plan
    assert plan.columnar is not None and "accumulator columns" in str(plan)
    streamed, replayed = streamed_and_replayed(spark, tmp_path, batches, finish)
    assert streamed == replayed
    nothing = [r for r in streamed["results"] if r[0] == "n"]
    assert [r[3:11] for r in nothing] == [(1, 0, None, None, None, None, 0, None)]
    fired_on_arrival = [r for r in streamed["results"] if r[0] == "a" and r[1] == T0 + 20_000]
    if lateness:
        assert len(fired_on_arrival) == 2  # at the watermark, then again with the late row
    else:
        assert ("a", 7, T0 + 25_000) in [r[:3] for r in streamed["late"]]


@pytest.mark.differential(Route.STREAMING, ColumnarShape.SESSIONS)
def test_agg_columns_of_session_windows(spark: SparkSession, tmp_path: Path) -> None:
    """Streaming computes ``.agg`` of sessions on accumulator columns (sessions merging
    across micro-batches, a null amount, late rows): the outputs equal the batch replay's
    (the window operator)."""

    def finish(keyed: Any) -> Any:
        stream = keyed.window(EventTimeSessionWindows(2_500)).side_output_late_data(LATE)
        return stream.agg(
            F.count("*").alias("n"),
            F.sum("amount").alias("total"),
            F.avg("amount").alias("mean"),
            F.max("amount").alias("high"),
        )

    batches = with_band_rows(make_batches(seed=7))
    df = spark.readStream.schema(SCHEMA).json(str(tmp_path))
    plan = finish(WindowedStream.from_dataframe(df, event_time="ts").key_by("user")).plan
    assert plan.columnar_shape is ColumnarShape.SESSIONS and "accumulator" in str(plan)
    streamed, replayed = streamed_and_replayed(spark, tmp_path, batches, finish)
    assert streamed == replayed
    assert streamed["late"] and any(r[3] > 1 for r in streamed["results"])


@pytest.mark.differential(Route.STREAMING, ColumnarShape.HOPPING)
def test_agg_columns_of_hopping_windows(spark: SparkSession, tmp_path: Path) -> None:
    """Streaming computes ``.agg`` of hopping windows on accumulator columns of panes while a
    call allows it and with the operator's panes otherwise (rows that fire a window on
    arrival within the allowed lateness), converting the key's panes each way: the outputs
    equal the batch replay's, nulls and late rows included."""

    def finish(keyed: Any) -> Any:
        stream = (
            keyed.window(HoppingEventTimeWindows(6_000, 2_000))
            .allowed_lateness(3_000)
            .side_output_late_data(LATE)
        )
        return stream.agg(
            F.count("*").alias("n"),
            F.sum("amount").alias("total"),
            F.min("amount").alias("low"),
            F.max(F.col("amount") / 2).alias("high"),
            F.count_if(F.col("amount") > 3).alias("big"),
            F.bool_and(F.col("amount") > 1).alias("all_big"),
        )

    batches = with_band_rows(make_batches(seed=5))
    df = spark.readStream.schema(SCHEMA).json(str(tmp_path))
    plan = finish(WindowedStream.from_dataframe(df, event_time="ts").key_by("user")).plan
    assert plan.columnar_shape is ColumnarShape.HOPPING and "pane of 2000 ms" in str(plan)
    streamed, replayed = streamed_and_replayed(spark, tmp_path, batches, finish)
    assert streamed == replayed
    assert streamed["late"] and any(r[3] > 2 for r in streamed["results"])
    # a row fires its ended windows on arrival: windows of "a" fire twice
    starts = [r[1] for r in streamed["results"] if r[0] == "a"]
    assert len(starts) > len(set(starts))


@pytest.mark.differential(
    ColumnarShape.COUNT_TRIGGER, Route.NATIVE_TUMBLING_COUNTS, Route.NATIVE_HOPPING_COUNTS
)
@pytest.mark.parametrize(
    ("purging", "hopping"),
    [
        pytest.param(False, False, marks=pytest.mark.slow),
        (True, False),
        pytest.param(False, True, marks=pytest.mark.slow),
    ],
)
def test_agg_columns_under_a_count_trigger(
    spark: SparkSession, tmp_path: Path, purging: bool, hopping: bool
) -> None:
    """Streaming computes ``.agg`` of tumbling (or hopping) windows under a count trigger on
    accumulator columns (each window's accumulators and count, its firings as ranges of its
    rows) while a call allows it, with the operator otherwise (a null event time), converting
    a key's windows each way: the outputs equal the batch replay's, late rows included."""
    trigger: Any = PurgingTrigger(CountTrigger(2)) if purging else CountTrigger(2)
    assigner: Any = (
        HoppingEventTimeWindows(SIZE, SIZE // 2) if hopping else TumblingEventTimeWindows(SIZE)
    )

    def finish(keyed: Any) -> Any:
        stream = keyed.window(assigner).trigger(trigger)
        return (
            stream.allowed_lateness(3_000)
            .side_output_late_data(LATE)
            .agg(
                F.count("*").alias("n"),
                F.sum("amount").alias("total"),
                F.min("amount").alias("low"),
                F.avg("amount").alias("mean"),
            )
        )

    batches = with_band_rows(make_batches(seed=9))
    df = spark.readStream.schema(SCHEMA).json(str(tmp_path))
    plan = finish(WindowedStream.from_dataframe(df, event_time="ts").key_by("user")).plan
    assert plan.columnar_shape is ColumnarShape.COUNT_TRIGGER
    assert "CountTrigger(2)" in str(plan)
    streamed, replayed = streamed_and_replayed(spark, tmp_path, batches, finish)
    assert streamed == replayed
    assert streamed["late"]
    starts = [r[1] for r in streamed["results"]]
    assert len(starts) > len(set(starts))  # windows that fired more than once


@pytest.mark.differential(ColumnarShape.KIP450)
def test_agg_columns_of_kip450_windows(spark: SparkSession, tmp_path: Path) -> None:
    """Streaming computes ``.agg`` of KIP-450 windows on accumulator columns of Kafka's store
    while a key's rows come after its store and the watermark, and with Kafka's algorithm in
    the operator otherwise (rows out of order across micro-batches, within the grace, late),
    converting the key's store each way: the outputs equal the batch replay's, which runs
    Kafka's algorithm in the micro-batches' order."""

    def finish(keyed: Any) -> Any:
        stream = keyed.window(SlidingDistinctAssigner(4_000, grace=3_000))
        return stream.side_output_late_data(LATE).agg(
            F.count("*").alias("n"),
            F.sum("amount").alias("total"),
            F.min("amount").alias("low"),
            F.avg("amount").alias("mean"),
            F.bool_or(F.col("amount") > 8).alias("any_big"),
        )

    batches = with_band_rows(make_batches(seed=8))
    df = spark.readStream.schema(SCHEMA).json(str(tmp_path))
    plan = finish(WindowedStream.from_dataframe(df, event_time="ts").key_by("user")).plan
    assert plan.columnar_shape is ColumnarShape.KIP450 and "Kafka's window store" in str(plan)
    streamed, replayed = streamed_and_replayed(spark, tmp_path, batches, finish)
    assert streamed == replayed
    assert streamed["late"] and any(r[3] > 2 for r in streamed["results"])


@pytest.mark.differential(Route.STREAMING, ColumnarShape.HOPPING, ColumnarShape.SESSIONS)
@pytest.mark.parametrize(
    ("windows", "aggregation", "lateness"),
    [
        # without lateness, with ``slow``: the cases with lateness also fire without it
        pytest.param("hopping", "sum", 0, marks=pytest.mark.slow),
        ("hopping", "max_by", 3_000),
        ("session", "min_by", 3_000),
        pytest.param("session", "max", 0, marks=pytest.mark.slow),
    ],
)
def test_built_in_aggregations_of_hopping_and_session_windows(
    spark: SparkSession, tmp_path: Path, windows: str, aggregation: str, lateness: int
) -> None:
    """Built-in aggregations of hopping windows (panes) and sessions run on whole columns
    while a call allows it and with the operator otherwise (a null amount; rows that fire a
    window on arrival; rows merging sessions of earlier micro-batches), converting the key's
    state each way: the outputs equal the batch replay's, which runs the operator."""
    assigner: Any = (
        HoppingEventTimeWindows(SIZE, 2_500)
        if windows == "hopping"
        else EventTimeSessionWindows(1_500)
    )

    def finish(keyed: Any) -> Any:
        stream = keyed.window(assigner).side_output_late_data(LATE)
        if lateness:
            stream = stream.allowed_lateness(lateness)
        return getattr(stream, aggregation)("amount")

    batches = with_band_rows(make_batches(seed=9))
    streamed, replayed = streamed_and_replayed(spark, tmp_path, batches, finish)
    assert streamed == replayed
    assert streamed["results"]
    df = spark.readStream.schema(SCHEMA).json(str(tmp_path / "src"))
    keyed = WindowedStream.from_dataframe(df, event_time="ts").key_by("user")
    shape = finish(keyed).plan.columnar_shape
    assert shape is {"hopping": ColumnarShape.HOPPING, "session": ColumnarShape.SESSIONS}[windows]


@pytest.mark.parametrize("function", ["sum", "reduce", "agg"])
def test_window_all(spark: SparkSession, tmp_path: Path, function: str) -> None:
    """A non-keyed stream (one group): the built-in sum and ``.agg`` on whole columns and a
    reduce through the operator give the batch replay's outputs."""

    def finish(stream: Any) -> Any:
        windowed = stream.window_all(TumblingEventTimeWindows(SIZE)).side_output_late_data(LATE)
        if function == "agg":
            return windowed.agg(F.sum("amount").alias("total"), F.count("*").alias("n"))
        return windowed.sum("amount") if function == "sum" else windowed.reduce(add)

    batches = make_batches(seed=9)
    streamed, replayed = streamed_and_replayed(spark, tmp_path, batches, finish, keyed=False)
    if function == "agg":  # no user column: the sentinel's window, which the replay fires
        sentinel = batches[-1][0]["ts"] // SIZE * SIZE
        replayed["results"] = [r for r in replayed["results"] if r[0] != sentinel]
    assert streamed == replayed
    assert len(streamed["results"]) >= 3
    assert {r[-1] for r in streamed["late"]} >= {"late", "null_event_time"}


@pytest.mark.parametrize("function", ["sum", "reduce"])
def test_several_keys_in_one_key_group(spark: SparkSession, tmp_path: Path, function: str) -> None:
    """With one key group every key shares one state value and one timer: a call with the
    rows of some keys also fires the due windows of the others, and the outputs equal the
    batch replay's, on the column path (sum) and through the operator (reduce)."""

    def finish(keyed: Any) -> Any:
        stream = (
            keyed.window(TumblingEventTimeWindows(SIZE))
            .side_output_late_data(LATE)
            .max_parallelism(1)
        )
        return stream.sum("amount") if function == "sum" else stream.reduce(add)

    batches = make_batches(seed=13)
    streamed, replayed = streamed_and_replayed(spark, tmp_path, batches, finish)
    assert streamed == replayed
    assert {r[0] for r in streamed["results"]} == {"a", "b", "c"}
    assert {r[-1] for r in streamed["late"]} >= {"late", "null_event_time"}


def test_restart_with_another_max_parallelism_fails(spark: SparkSession, tmp_path: Path) -> None:
    """The number of key groups is fixed by the first run, as in Flink: a restart from the
    checkpoint with another one fails with a message naming both, and writes nothing."""
    batches = make_batches(seed=3)
    src, out = tmp_path / "src", tmp_path / "out"

    def query(key_groups: int) -> Any:
        result = built_in_sum(spark, src, key_groups)
        return write_results_and_late(
            result, str(out / "results"), None, str(out / "ckpt"), available_now=True
        )

    write_files(src, batches[:2])
    first = query(8)
    first.awaitTermination()
    assert first.exception() is None
    done = read(spark, out / "results")
    write_files(src, batches[2:], first=2)
    with pytest.raises(JobChangedError, match=r"max_parallelism: 8 -> 16"):
        query(16)  # refused before it starts (the checkpoint's record of the job)
    assert read(spark, out / "results") == done
    # started without write_results_and_late: refused by the state in the first micro-batch
    again = (
        built_in_sum(spark, src, 16)
        .output.writeStream.foreachBatch(lambda df, i: df.collect())
        .option("checkpointLocation", str(out / "ckpt"))
        .trigger(availableNow=True)
        .start()
    )
    with pytest.raises(Exception, match=r"has 8 key groups.*max_parallelism 16"):
        again.awaitTermination()
    assert read(spark, out / "results") == done


def test_float_keys_and_nan_as_in_spark(spark: SparkSession, tmp_path: Path) -> None:
    """-0.0 and 0.0 are one key (Spark's grouping equality), also when the key groups are
    computed from hashes; NaN and null are keys of their own, and NaN values stay NaN (not
    null) although Spark's pandas frames hold both as NaN. Results and late rows equal the
    batch replay's."""
    schema = "k double, amount bigint, x double, ts bigint, batch bigint"
    nan = float("nan")
    keys = [-0.0, 0.0, 1.5, None, nan]
    rng = random.Random(2)
    batches = [
        [
            {
                "k": rng.choice(keys),
                "amount": rng.randint(1, 9),
                "x": rng.choice([nan, None, 0.5]),
                "ts": T0 + b * 6_000 + i * 400 - (15_000 if i == 3 else 0),  # one late row
            }
            for i in range(12)
        ]
        for b in range(3)
    ]
    batches.append([{"k": 99.0, "amount": 0, "x": 0.0, "ts": T0 + 200_000}])
    for b, rows in enumerate(batches):
        for r in rows:
            r["batch"] = b
    write_files(tmp_path / "src", batches)

    def finish(df: DataFrame, **source: Any) -> Any:
        return (
            WindowedStream.from_dataframe(
                df, event_time="ts", watermark=BoundedOutOfOrderness(DELAY), **source
            )
            .key_by("k")
            .window(TumblingEventTimeWindows(SIZE))
            .side_output_late_data(LATE)
            .max_parallelism(3)
            .max_by("amount")
        )

    def canonical(v: Any) -> Any:
        return "NaN" if isinstance(v, float) and v != v else v

    def rows(frame: DataFrame) -> list[tuple[Any, ...]]:
        got = [
            tuple(canonical(v) for v in (r.k, r.window_start, r.amount, r.x, r.ts))
            for r in frame.collect()
            if r.k != 99.0
        ]
        return sorted(
            got, key=lambda r: repr((r[0] is None, r[0] == "NaN", r[1:])) + repr(r[0] or 0.0 + 0.0)
        )

    def late_rows(frame: DataFrame) -> list[tuple[Any, ...]]:
        return sorted((tuple(canonical(v) for v in r) for r in frame.collect()), key=repr)

    df = spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).json(str(tmp_path / "src"))
    run(spark, tmp_path / "src", tmp_path / "out", finish(df))
    got = rows(spark.read.parquet(str(tmp_path / "out" / "results")).drop("batch_id"))
    got_late = late_rows(spark.read.parquet(str(tmp_path / "out" / "late")).drop("batch_id"))
    static = spark.createDataFrame([Row(**r) for b in batches for r in b], schema)
    with finish(static, arrival_order="batch") as result:
        expected = rows(result.results)
        expected_late = late_rows(result.get_side_output(LATE))
    assert got == expected  # -0.0 == 0.0
    assert got_late == expected_late
    assert {r[0] for r in got} >= {0.0, None, "NaN"}
    assert "NaN" in {r[3] for r in got} and None in {r[3] for r in got}
    zero = [r for r in got if r[0] == 0.0]
    assert len(zero) == len({r[1] for r in zero}) > 0  # one result per window for 0.0
    assert all(math.copysign(1.0, r[0]) == 1.0 for r in zero)  # the key is 0.0, never -0.0
    assert len(got_late) == 2  # the early row of the first batch is not late: no watermark yet


class FireOnBigAmount(Trigger[Any, Any]):
    """A custom trigger: FIRE when an element's amount is at least ``threshold``, and at the
    window's end (an event-time timer)."""

    def __init__(self, threshold: int) -> None:
        self.threshold = threshold

    def on_element(self, element: Any, timestamp: Any, window: Any, ctx: Any) -> TriggerResult:
        ctx.register_event_time_timer(window.max_timestamp())
        return TriggerResult.FIRE if element.amount >= self.threshold else TriggerResult.CONTINUE

    def on_event_time(self, time: int, window: Any, ctx: Any) -> TriggerResult:
        return TriggerResult.FIRE if time == window.max_timestamp() else TriggerResult.CONTINUE

    def on_processing_time(self, time: int, window: Any, ctx: Any) -> TriggerResult:
        return TriggerResult.CONTINUE

    def clear(self, window: Any, ctx: Any) -> None:
        ctx.delete_event_time_timer(window.max_timestamp())


class DropOddAmounts(Evictor[Any, Any]):
    """A custom evictor: after each evaluation, remove the elements with odd amounts."""

    def evict_before(self, elements: Any, window: Any, ctx: Any) -> Any:
        return elements

    def evict_after(self, elements: Any, window: Any, ctx: Any) -> Any:
        return [e for e in elements if e.value.amount % 2 == 0]


class Amounts(WindowFunction[Row, tuple[int, str], str, Any]):
    def apply(self, key: str, window: Any, inputs: Iterable[Row]) -> Iterable[tuple[int, str]]:
        amounts = [r.amount for r in inputs]
        yield (sum(amounts), ",".join(map(str, amounts)))


def test_custom_trigger_and_evictor_with_apply(spark: SparkSession, tmp_path: Path) -> None:
    """Trigger and evictor subclasses defined in this module run on the executors in a
    streaming query as in the batch replay (early firings, eviction between firings,
    allowed lateness and late rows)."""
    streamed, replayed = streamed_and_replayed(
        spark,
        tmp_path,
        make_batches(seed=3),
        lambda keyed: (
            keyed.window(TumblingEventTimeWindows(SIZE))
            .trigger(FireOnBigAmount(7))
            .evictor(DropOddAmounts())
            .allowed_lateness(4_000)
            .side_output_late_data(LATE)
            .apply(Amounts(), output_schema="total bigint, amounts string")
        ),
    )
    assert streamed == replayed
    assert len(streamed["results"]) > len({(r[0], r[1]) for r in streamed["results"]})  # refired


def test_count_windows_with_fold(spark: SparkSession, tmp_path: Path) -> None:
    """Count windows (global windows, purging count trigger) and a fold: no event time in the
    windows, the same outputs streamed and replayed."""
    streamed, replayed = streamed_and_replayed(
        spark,
        tmp_path,
        in_order_batches(seed=6, n_batches=3),
        lambda keyed: (
            keyed.count_window(3, slide=2)
            .side_output_late_data(LATE)
            .fold(0, lambda acc, r: acc * 10 + r.amount, output_schema="digits bigint")
        ),
    )
    assert streamed == replayed
    assert streamed["results"] and all(r[1] is None for r in streamed["results"])


def test_hopping_windows_with_reduce(spark: SparkSession, tmp_path: Path) -> None:
    streamed, replayed = streamed_and_replayed(
        spark,
        tmp_path,
        in_order_batches(seed=3),
        lambda keyed: (
            keyed.window(HoppingEventTimeWindows(3_000, 1_000))
            .side_output_late_data(LATE)
            .reduce(add)
        ),
    )
    assert streamed == replayed
    assert len(streamed["results"]) > 10


class AverageWithCount(ProcessWindowFunction[tuple[int, int], tuple[int, float], str, Any]):
    """Turns the pre-aggregated (count, total) of a window into (count, average)."""

    def process(
        self, key: str, context: Any, elements: Iterable[tuple[int, int]]
    ) -> Iterable[tuple[int, float]]:
        ((n, total),) = list(elements)
        yield (n, total / n)


def test_hopping_windows_with_aggregate_and_window_function(
    spark: SparkSession, tmp_path: Path
) -> None:
    """Incremental aggregation with a process window function on hopping windows, with
    ``slicing(True)`` and ``slicing(False)``, with late rows."""
    for slicing in (True, False):
        streamed, replayed = streamed_and_replayed(
            spark,
            tmp_path / str(slicing),
            make_batches(seed=8),
            lambda keyed, slicing=slicing: (
                keyed.window(HoppingEventTimeWindows(6_000, 2_000))
                .slicing(slicing)
                .allowed_lateness(2_000)
                .side_output_late_data(LATE)
                .aggregate(CountSum(), AverageWithCount(), output_schema="n bigint, mean double")
            ),
        )
        assert streamed == replayed
        assert len(streamed["results"]) > 10 and streamed["late"]
