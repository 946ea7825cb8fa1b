"""An arrival order of several columns (``from_dataframe(..., arrival_order=[...])``): the
same results, late rows and metrics as one column holding their rank, on every plan an
arrival order takes (the native tumbling and hopping plans, the window operator's replay,
sessions); rows with a null in any of them; the errors; and a Kafka-like source whose
partitions interleave, against a brute-force model of the watermark (``docs/spark.md``,
"Replaying a Kafka topic in batch")."""

from __future__ import annotations

import itertools
import json
import os
import random
import re
import sys
from collections import Counter
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from pyspark import cloudpickle as spark_cloudpickle
from pyspark.sql import DataFrame, Row, SparkSession, Window
from pyspark.sql import functions as F  # noqa: N812

from tests.spark.frames import Total
from windowing import (
    BoundedOutOfOrderness,
    DataStream,
    OutputTag,
    TumblingEventTimeWindows,
    WindowedStream,
)
from windowing.assigners import EventTimeSessionWindows, HoppingEventTimeWindows
from windowing.functions import AggregateFunction, ProcessWindowFunction
from windowing.spark.planning import Route
from windowing.spark.streaming import write_results_and_late
from windowing.time import TimeUnit

pytestmark = pytest.mark.spark
spark_cloudpickle.register_pickle_by_value(sys.modules[__name__])  # type: ignore[no-untyped-call]

LATE = OutputTag("late")
ARRIVAL = ["at", "part", "off"]
SCHEMA = "k string, amount bigint, ts bigint, at timestamp, part int, off bigint"
DELAY = 50


def order_sensitive(a: Row, b: Row) -> Row:
    """A reduce whose result depends on the order of the rows it meets."""
    return Row(
        k=a.k,
        amount=(a.amount * 31 + b.amount) % 1_000_003,
        ts=max(a.ts, b.ts),
        at=max(a.at, b.at),
        part=b.part,
        off=b.off,
        rank=b.rank,
    )


def rows(seed: int, n: int = 240) -> list[tuple[Any, ...]]:
    """Rows whose arrival (at, part, off) has ties in ``at`` (a second holds several rows),
    in ``(at, part)`` and in all three (rows that arrived together), and a few nulls (most
    in ``part``); event times mostly follow arrival, some far behind (late, or within the
    lateness)."""
    rng = random.Random(seed)
    base = datetime(2024, 5, 1, tzinfo=UTC)
    out = []
    for i in range(n):
        second = i // 6
        part = rng.randint(0, 2)
        off = rng.randint(0, 3) if rng.random() < 0.3 else i  # repeated offsets: ties
        ts = second * 20 + rng.randint(-30, 30)
        if rng.random() < 0.15:
            ts -= rng.choice([60, 150, 400])
        at: datetime | None = base + timedelta(seconds=second)
        if rng.random() < 0.05:
            part = None  # type: ignore[assignment]
        elif rng.random() < 0.02:
            off = None  # type: ignore[assignment]
        elif rng.random() < 0.02:
            at = None
        out.append((rng.choice("abc"), rng.randint(1, 9), ts, at, part, off))
    return out


def with_rank(spark: SparkSession, data: list[tuple[Any, ...]]) -> DataFrame:
    """The rows with ``rank``: the dense rank of (at, part, off) (one partition: a test's
    few rows), null when any of them is null. One column with the same order."""
    df = spark.createDataFrame(data, SCHEMA)
    present = F.col("at").isNotNull() & F.col("part").isNotNull() & F.col("off").isNotNull()
    rank = F.dense_rank().over(Window.orderBy("at", "part", "off"))
    return df.withColumn("rank", F.when(present, rank).cast("long"))


def stream(df: DataFrame, arrival: Any, assigner: Any, lateness: int = 100) -> Any:
    return (
        WindowedStream.from_dataframe(
            df, event_time="ts", watermark=BoundedOutOfOrderness(DELAY), arrival_order=arrival
        )
        .key_by("k")
        .window(assigner)
        .allowed_lateness(lateness)
        .side_output_late_data(LATE)
        .pane_info()
    )


def outcome(result: Any) -> tuple[list[Any], list[Any], Any]:
    with result:
        results = sorted((tuple(r) for r in result.results.collect()), key=repr)
        late = sorted((tuple(r) for r in result.get_side_output(LATE).collect()), key=repr)
        return results, late, result.collect_metrics()


FINISHES = {
    "tumbling agg": (
        TumblingEventTimeWindows(100),
        lambda s: s.agg(
            F.sum("amount").alias("total"), F.first("amount").alias("first"), F.max_by("off", "ts")
        ),
        Route.NATIVE_TUMBLING_ARRIVAL,
    ),
    "tumbling agg, no lateness": (
        TumblingEventTimeWindows(100),
        lambda s: s.allowed_lateness(0).agg(F.sum("amount"), F.last("amount").alias("last")),
        Route.NATIVE_TUMBLING_ARRIVAL,
    ),
    "reduce": (
        TumblingEventTimeWindows(100),
        lambda s: s.reduce(order_sensitive),
        Route.BATCH_REPLAY,
    ),
    "aggregate": (
        TumblingEventTimeWindows(100),
        lambda s: s.aggregate(Total(), output_schema="total bigint"),
        Route.BATCH_REPLAY,
    ),
    "hopping agg": (
        HoppingEventTimeWindows(150, 50),
        lambda s: s.agg(F.count("*").alias("n"), F.sum("amount").alias("total")),
        Route.NATIVE_HOPPING_ARRIVAL,
    ),
    "session agg": (
        EventTimeSessionWindows(25),
        # the operator's picks: ties in event time broken by every arrival column
        lambda s: s.agg(F.sum("amount").alias("total"), F.first("off"), F.max_by("part", "ts")),
        Route.BATCH_REPLAY,
    ),
}


@pytest.mark.parametrize("name", list(FINISHES))
def test_several_columns_equal_their_rank(spark: SparkSession, name: str) -> None:
    """Each plan gives the same results (panes included), late rows (reasons and
    watermarks) and metrics with the three columns as with one column of their rank; rows
    with a null in any of them (mostly the second) go to the late output as
    ``null_arrival_order``."""
    assigner, finish, route = FINISHES[name]
    df = with_rank(spark, rows(seed=len(name)))
    several = finish(stream(df, ARRIVAL, assigner))
    one = finish(stream(df, "rank", assigner))
    assert several.plan.route is one.plan.route is route
    got, expected = outcome(several), outcome(one)
    assert got == expected
    results, late, metrics = got
    late_firings = len(results) > len({r[:3] for r in results})
    assert late_firings == ("no lateness" not in name)
    reasons = Counter(r[-1] for r in late)
    assert reasons["late"] > 0
    nulls = df.where("rank IS NULL").count()
    assert reasons["null_arrival_order"] == metrics.num_null_arrival_order == nulls > 0


def in_microseconds(row: tuple[Any, ...], rng: random.Random) -> tuple[Any, ...]:
    """``row`` with its event time (ms) in microseconds, a random part of the millisecond
    added (which ``event_time_unit="us"`` floors away)."""
    ts = row[2]
    return (*row[:2], None if ts is None else ts * 1_000 + rng.randrange(1_000), *row[3:])


@pytest.mark.parametrize(
    ("assigner", "route"),
    [
        (TumblingEventTimeWindows(100), Route.NATIVE_TUMBLING_ARRIVAL),
        (EventTimeSessionWindows(25), Route.BATCH_REPLAY),
    ],
    ids=["native tumbling", "operator sessions"],
)
def test_rows_of_one_millisecond_in_microseconds_are_ordered_by_every_arrival_column(
    spark: SparkSession, assigner: Any, route: Route
) -> None:
    """Event times in microseconds are floored to the operator's milliseconds: rows within
    one millisecond tie, and first / last follow the arrival-order columns, not the
    microseconds. The same results and late rows as the milliseconds, times in
    microseconds."""
    data = [(*r[:2], None if r[2] is None else r[2] // 10 * 10, *r[3:]) for r in rows(seed=7)]
    ties = Counter((r[0], r[2]) for r in data if r[2] is not None)
    assert sum(n - 1 for n in ties.values()) > 30  # many rows share a key and a millisecond
    rng = random.Random(7)
    frames = {
        "ms": with_rank(spark, data),
        "us": with_rank(spark, [in_microseconds(r, rng) for r in data]),
    }

    def finish(unit: str) -> Any:
        source = WindowedStream.from_dataframe(
            frames[unit],
            event_time="ts",
            event_time_unit=unit,
            watermark=BoundedOutOfOrderness(DELAY),
            arrival_order=ARRIVAL,
        )
        return (
            source.key_by("k")
            .window(assigner)
            .allowed_lateness(100)
            .side_output_late_data(LATE)
            .agg(
                F.sum("amount").alias("total"),
                F.first("amount").alias("first"),
                F.last("off").alias("last"),
            )
        )

    micro, milli = finish("us"), finish("ms")
    assert micro.plan.route is milli.plan.route is route
    us = TimeUnit.MICROSECONDS

    def converted(df: DataFrame, unit: str) -> list[tuple[Any, ...]]:
        out = []
        for r in df.drop("ts").collect():
            d = r.asDict()
            if unit == "ms":
                for name, bound in (("window_start", True), ("window_end", True)):
                    if name in d:
                        d[name] = us.from_millis(d[name], bound=bound)
                for name in ("max_timestamp", "late_watermark"):
                    if d.get(name) is not None:
                        d[name] = us.from_millis(d[name])
            out.append(tuple(d.items()))
        return sorted(out, key=repr)

    with micro, milli:
        assert converted(micro.results, "us") == converted(milli.results, "ms")
        late = converted(micro.get_side_output(LATE), "us")
        assert late == converted(milli.get_side_output(LATE), "ms")
        assert len(late) > 5


def test_explain_names_every_arrival_column(spark: SparkSession) -> None:
    df = with_rank(spark, rows(seed=1, n=10))
    plan = stream(df, ARRIVAL, TumblingEventTimeWindows(100)).plan(Total())
    assert "arrival order (['at', 'part', 'off'])" in str(plan)
    # a list of one column is that column
    single = stream(df, ["rank"], TumblingEventTimeWindows(100))
    assert single.source.arrival_order == "rank"


@pytest.mark.parametrize(
    ("arrival", "message"),
    [
        ([], "arrival_order: give at least one column name, got []"),
        (["at", "nope"], "arrival_order[1]: unknown column 'nope'"),
        (["at", "k"], "arrival_order[1]: column 'k' has type string"),
        (["part", "off", "part"], "arrival_order: column 'part' appears twice"),
        ({"at", "off"}, "arrival_order must be a column name or a list of column names, got set"),
        (["at", 3], "arrival_order[1] must be a column name (a non-empty str), got 3"),
    ],
)
def test_arrival_order_errors(spark: SparkSession, arrival: Any, message: str) -> None:
    df = spark.createDataFrame([], SCHEMA)
    with pytest.raises(ValueError, match=re.escape(message)):
        DataStream.from_dataframe(df, event_time="ts", arrival_order=arrival)


# ---------------------------------------------------------------------------- Kafka-like
KAFKA_SCHEMA = "partition int, offset bigint, timestamp timestamp, user string, ts bigint"
KAFKA_DELAY = 2_000
KAFKA_SIZE = 10_000


def kafka_records(seed: int) -> list[tuple[Any, ...]]:
    """Three partitions of one topic, read as ``spark.read.format("kafka")`` gives them:
    offsets from 0 in each partition, the append ``timestamp`` rising in each, the
    partitions interleaved in time. The payload's event time ``ts`` follows the append time,
    but partition 2 is a slow producer: its events are about 15 s behind the others."""
    rng = random.Random(seed)
    base = datetime(2024, 5, 1, tzinfo=UTC)
    out = []
    for partition in range(3):
        clock = rng.randint(0, 500)
        for offset in range(40):
            clock += rng.randint(100, 1_500)
            if rng.random() < 0.2:
                clock -= clock % 1_000  # whole seconds: ties in timestamp across partitions
            ts = clock - (15_000 if partition == 2 else 0) + rng.randint(-1_500, 1_500)
            at = base + timedelta(milliseconds=clock)
            out.append((partition, offset, at, rng.choice("ab"), ts))
    rng.shuffle(out)  # a DataFrame has no order
    return out


def brute_force(
    records: list[tuple[Any, ...]],
) -> tuple[dict[tuple[str, int], int], list[tuple[int, int, int]]]:
    """Flink's watermark over the arrival order (timestamp, partition, offset): a record
    sees ``max(event time of records strictly earlier) - delay - 1``; a record whose window
    has ended by then (``end - 1 <= watermark``, no lateness) is late. Returns each
    (user, window start)'s number of records added, and the late records as (partition,
    offset, the watermark they saw)."""

    def arrival(r: tuple[Any, ...]) -> tuple[Any, ...]:
        return (r[2], r[0], r[1])

    counts: Counter[tuple[str, int]] = Counter()
    late = []
    seen_max: int | None = None
    for _, group in itertools.groupby(sorted(records, key=arrival), key=arrival):
        together = list(group)  # arrived together: the same watermark
        watermark = None if seen_max is None else seen_max - KAFKA_DELAY - 1
        for partition, offset, _, user, ts in together:
            start = ts - ts % KAFKA_SIZE
            if watermark is not None and start + KAFKA_SIZE - 1 <= watermark:
                late.append((partition, offset, watermark))
            else:
                counts[(user, start)] += 1
        seen_max = max([r[4] for r in together] + ([] if seen_max is None else [seen_max]))
    return dict(counts), sorted(late)


def test_replaying_a_kafka_topic(spark: SparkSession) -> None:
    """A batch replay of three interleaved partitions in the order (timestamp, partition,
    offset) sees Flink's watermark over that order: the slow partition's records behind the
    others' are late, exactly as the brute force says; the native plan and the window
    operator agree."""
    records = kafka_records(seed=3)
    counts, late = brute_force(records)
    assert Counter(p for p, _, _ in late)[2] > len(late) // 2  # mostly the slow partition
    df = spark.createDataFrame(records, KAFKA_SCHEMA).repartition(4)
    stream = (
        WindowedStream.from_dataframe(
            df,
            event_time="ts",
            watermark=BoundedOutOfOrderness(KAFKA_DELAY),
            arrival_order=["timestamp", "partition", "offset"],
        )
        .key_by("user")
        .window(TumblingEventTimeWindows(KAFKA_SIZE))
        .side_output_late_data(LATE)
    )
    native = stream.count()
    operator = stream.aggregate(CountRows(), output_schema="count bigint")
    assert native.plan.native and not operator.plan.native
    for result in (native, operator):
        with result:
            got = {(r.user, r.window_start): r["count"] for r in result.results.collect()}
            rows_late = result.get_side_output(LATE).collect()
        assert got == counts
        assert sorted((r.partition, r.offset, r.late_watermark) for r in rows_late) == late
        assert {r.late_reason for r in rows_late} == {"late"}


class CountRows(AggregateFunction[Any, int, int]):
    def create_accumulator(self) -> int:
        return 0

    def add(self, value: Any, accumulator: int) -> int:
        return accumulator + 1

    def get_result(self, accumulator: int) -> int:
        return accumulator

    def merge(self, a: int, b: int) -> int:
        return a + b


# ---------------------------------------------------------------------------- streaming
T0 = 1_700_000_000_000
STREAM_SCHEMA = "partition int, user string, ts bigint"
STREAM_DELAY = 2_000
STREAM_SIZE = 10_000


def spark_rule(batches: list[list[dict[str, Any]]]) -> tuple[Counter[Any], list[Any]]:
    """Spark's watermark in Flink's terms: during micro-batch ``n``, the largest event time
    of micro-batches ``< n`` over every partition, minus the delay, minus 1 (``MIN`` before
    any). Returns the count of each (user, window start) over the rows not late, and the
    late rows as (partition, ts, watermark)."""
    counts: Counter[Any] = Counter()
    late = []
    seen: int | None = None
    for rows in batches:
        watermark = None if seen is None else seen - STREAM_DELAY - 1
        for r in rows:
            start = r["ts"] - r["ts"] % STREAM_SIZE
            if watermark is not None and start + STREAM_SIZE - 1 <= watermark:
                late.append((r["partition"], r["ts"], watermark))
            else:
                counts[(r["user"], start)] += 1
        seen = max([r["ts"] for r in rows] + ([] if seen is None else [seen]))
    return counts, sorted(late)


def per_partition_minimum(batches: list[list[dict[str, Any]]]) -> list[Any]:
    """Flink's rule for the same rows: each partition's watermark follows its own largest
    event time, and the operator's is the minimum over the partitions (here every
    partition has rows from the first micro-batch on). The late rows, as in
    :func:`spark_rule`."""
    seen: dict[int, int] = {}
    late = []
    for rows in batches:
        watermark = min(seen.values()) - STREAM_DELAY - 1 if seen else None
        for r in rows:
            start = r["ts"] - r["ts"] % STREAM_SIZE
            if watermark is not None and start + STREAM_SIZE - 1 <= watermark:
                late.append((r["partition"], r["ts"], watermark))
        for r in rows:
            seen[r["partition"]] = max(seen.get(r["partition"], r["ts"]), r["ts"])
    return sorted(late)


def test_streaming_watermark_is_the_maximum_over_partitions(
    spark: SparkSession, tmp_path: Any
) -> None:
    """Each micro-batch reads two files, one per partition of a topic: partition 0 a fast
    producer, partition 1 a slow one whose events are about 35 s behind. Spark's
    watermark is the largest event time over all partitions minus the delay, from the
    next micro-batch on, so the slow partition's rows of the second micro-batch are late
    (Flink's minimum over partitions would have held the watermark back for them)."""
    fast = [[50_000, 51_000], [55_000, 56_500], [200_000]]  # the last: moves the watermark on
    slow = [[10_000, 12_000, 21_000], [14_000, 20_500, 31_000], []]
    batches = [
        [{"partition": 0, "user": "a", "ts": T0 + t} for t in f]
        + [{"partition": 1, "user": u, "ts": T0 + t} for u, t in zip("bab", s, strict=False)]
        for f, s in zip(fast, slow, strict=True)
    ]
    src = tmp_path / "src"
    src.mkdir()
    files = []
    for b, rows in enumerate(batches):
        for p in (0, 1):
            part = [r for r in rows if r["partition"] == p]
            if not part:
                continue
            path = src / f"b{b}-p{p}.json"
            path.write_text("".join(json.dumps(r) + "\n" for r in part))
            t = 1_600_000_000 + len(files) * 10  # the file source's order
            os.utime(path, (t, t))
            files.append(str(path))
    # the two files of a micro-batch are two input partitions
    assert spark.read.schema(STREAM_SCHEMA).json(files[:2]).rdd.getNumPartitions() == 2
    df = spark.readStream.schema(STREAM_SCHEMA).option("maxFilesPerTrigger", 2).json(str(src))
    result = (
        WindowedStream.from_dataframe(
            df, event_time="ts", watermark=BoundedOutOfOrderness(STREAM_DELAY)
        )
        .key_by("user")
        .window(TumblingEventTimeWindows(STREAM_SIZE))
        .side_output_late_data(LATE)
        .count()
    )
    out = tmp_path / "out"
    query = write_results_and_late(
        result, str(out / "results"), str(out / "late"), str(out / "chk"), available_now=True
    )
    query.awaitTermination()
    assert query.exception() is None
    assert [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]] == [
        len(b) for b in batches
    ]
    counts, late = spark_rule(batches)
    got = spark.read.parquet(str(out / "results")).collect()
    far = T0 + 200_000 - 200_000 % STREAM_SIZE  # the last row's window never closes
    assert {(r.user, r.window_start - T0): r["count"] for r in got} == {
        (u, s - T0): n for (u, s), n in counts.items() if s != far
    }
    rows_late = spark.read.parquet(str(out / "late")).collect()
    assert sorted((r.partition, r.ts, r.late_watermark) for r in rows_late) == late
    watermark = T0 + 51_000 - STREAM_DELAY - 1
    assert late == [(1, T0 + t, watermark) for t in (14_000, 20_500, 31_000)]
    assert per_partition_minimum(batches) == []  # Flink: nothing late


class Arrived(ProcessWindowFunction[Any, Any, Any, Any]):
    """The ids in the order the window received them."""

    def process(self, key: Any, context: Any, elements: Iterable[Row]) -> Iterable[Any]:
        items = list(elements)
        yield (len(items), ",".join(str(r.id) for r in items))


def test_several_columns_order_a_micro_batch(spark: SparkSession, tmp_path: Any) -> None:
    """In streaming, each key's rows of a micro-batch are replayed in the order of the
    columns (here the reverse of the ids), as in the batch replay; a null in the second
    column is a ``null_arrival_order`` row; the checkpoint records the list."""
    schema = "user string, ts bigint, id bigint, p bigint, o bigint"
    rows = [
        {"user": "a", "ts": T0 + 1_000 + i, "id": i, "p": 1 - i // 3, "o": 3 - i % 3}
        for i in range(6)
    ]
    rows.append({"user": "a", "ts": T0 + 1_100, "id": 6, "p": None, "o": 0})
    batches = [rows[:3], rows[3:], [{"user": "~", "ts": T0 + 100_000, "id": 7, "p": 0, "o": 0}]]
    src = tmp_path / "src"
    src.mkdir()
    for i, part in enumerate(batches):
        path = src / f"part-{i}.json"
        path.write_text("".join(json.dumps(r) + "\n" for r in part))
        os.utime(path, (1_600_000_000 + i * 10, 1_600_000_000 + i * 10))

    def finish(df: DataFrame) -> Any:
        return (
            WindowedStream.from_dataframe(
                df,
                event_time="ts",
                watermark=BoundedOutOfOrderness(2_000),
                arrival_order=["p", "o"],
            )
            .key_by("user")
            .window(TumblingEventTimeWindows(10_000))
            .side_output_late_data(LATE)
            .process(Arrived(), output_schema="n bigint, ids string")
        )

    df = spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).json(str(src))
    out = tmp_path / "out"
    query = write_results_and_late(
        finish(df), str(out / "results"), str(out / "late"), str(out / "chk"), available_now=True
    )
    query.awaitTermination()
    assert query.exception() is None
    results = spark.read.parquet(str(out / "results")).where("user = 'a'").collect()
    # micro-batch by micro-batch, then (p, o) within one: 2, 1, 0 then 5, 4, 3
    assert [(r.n, r.ids) for r in results] == [(6, "2,1,0,5,4,3")]
    late = spark.read.parquet(str(out / "late")).collect()
    assert [(r.id, r.late_reason) for r in late] == [(6, "null_arrival_order")]
    record = json.loads((out / "chk" / "windowing" / "job.json").read_text())
    assert record["job"]["arrival_order"] == ["p", "o"]
