"""Structured Streaming runtime (``windowing.spark.streaming.query``) == the batch replay.

JSON files are written to a directory and read with ``maxFilesPerTrigger=1``, so file ``i`` is
micro-batch ``i``; the batch replay with ``arrival_order`` = the file index sees exactly the
watermarks the streaming query sees. A final "sentinel" key far in the future advances the
watermark past every window, so all windows of the other keys fire in streaming too.

Also: observed metrics in the query progress, side outputs, arrival order and processing
time (a column, or the wall clock), and session / sliding-distinct / hopping windows.
"""

from __future__ import annotations

import functools
import json
import os
import random
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable
from datetime import UTC, timedelta
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from pyspark import cloudpickle as spark_cloudpickle
from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as F  # noqa: N812
from pyspark.sql.types import DoubleType

from windowing import OutputTag
from windowing.assigners import (
    EventTimeSessionWindows,
    HoppingEventTimeWindows,
    SlidingDistinctAssigner,
    TumblingEventTimeWindows,
    TumblingProcessingTimeWindows,
)
from windowing.functions import AggregateFunction, ProcessWindowFunction
from windowing.spark.columns.frames import from_ipc
from windowing.spark.columns.keys import NAN_KEY, state_key
from windowing.spark.columns.metrics import STREAMING_METRICS
from windowing.spark.streaming.query import METRICS_NAME, WATERMARK_SHIFT_MS, write_results_and_late
from windowing.stream import BoundedOutOfOrderness, WindowedStream
from windowing.triggers import (
    AnyOf,
    CountTrigger,
    EventTimeTrigger,
)

pytestmark = pytest.mark.spark

spark_cloudpickle.register_pickle_by_value(sys.modules[__name__])  # type: ignore[no-untyped-call]

LATE = OutputTag("late")
SCHEMA = "user string, amount bigint, ts bigint, batch bigint"
T0 = 1_700_000_000_000
DELAY = 2_000
SIZE = 10_000
SENTINEL = "~sentinel"
#: Spark's watermark and timers run this far ahead of the event time (see streaming.py).
SHIFT = WATERMARK_SHIFT_MS


def add(a: Row, b: Row) -> Row:
    return Row(
        user=a.user,
        amount=(a.amount * 31 + b.amount) % 1_000_003,  # order-sensitive on purpose
        ts=max(a.ts, b.ts),
        batch=max(a.batch, b.batch),
    )


def make_batches(seed: int, n_batches: int = 4, t0: int = T0) -> list[list[dict[str, Any]]]:
    """Mostly in order, some rows out of order by less than the delay, some late; then a
    sentinel batch that moves the watermark past every window."""
    rng = random.Random(seed)
    batches = []
    for b in range(n_batches):
        rows = []
        for i in range(12):
            ts = t0 + b * 6_000 + rng.randint(-1_500, 1_500)
            if rng.random() < 0.1 or (b >= 2 and i == 0):
                ts -= 15_000  # late
            rows.append({"user": rng.choice("abc"), "amount": rng.randint(1, 9), "ts": ts})
        batches.append(rows)
    far = t0 + n_batches * 6_000 + 100_000
    # The watermark it sets applies from the next batch: availableNow runs one last no-data
    # batch for it, whose expired timers fire every other window.
    batches.append([{"user": SENTINEL, "amount": 0, "ts": far}])
    batches[1].append({"user": "b", "amount": 4, "ts": None})  # no event time
    for b, rows in enumerate(batches):
        for r in rows:
            r["batch"] = b
    return batches


def write_files(directory: Path, batches: list[list[dict[str, Any]]], first: int = 0) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for i, rows in enumerate(batches, start=first):
        path = directory / f"part-{i:04d}.json"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        t = 1_600_000_000 + i * 10  # distinct modification times: the file source's order
        os.utime(path, (t, t))


def build(spark: SparkSession, source: Path) -> Any:
    df = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).json(str(source))
    stream = (
        WindowedStream.from_dataframe(df, event_time="ts", watermark=BoundedOutOfOrderness(DELAY))
        .key_by("user")
        .window(TumblingEventTimeWindows(SIZE))
        .side_output_late_data(LATE)
    )
    return stream.reduce(add)  # a streaming DataFrame: the builder runs run_streaming


def run(
    spark: SparkSession,
    source: Path,
    out: Path,
    result: Any = None,
    side_outputs: Iterable[OutputTag] = (),
) -> Counter[str]:
    """Run ``result`` (default: :func:`build`) until the input is exhausted; returns the sums
    of the observed metrics over all micro-batches."""
    result = build(spark, source) if result is None else result
    query = write_results_and_late(
        result,
        str(out / "results"),
        str(out / "late"),
        str(out / "checkpoint"),
        available_now=True,
        side_output_paths={tag: str(out / tag.name) for tag in side_outputs},
    )
    query.awaitTermination()
    assert query.exception() is None
    totals: Counter[str] = Counter()
    for progress in query.recentProgress:
        observed = progress["observedMetrics"].get(METRICS_NAME)
        if observed is not None:
            # the counters sum over micro-batches (the gauges do not)
            totals.update({k: v for k, v in observed.asDict().items() if k in STREAMING_METRICS})
    return totals


def read(spark: SparkSession, path: Path) -> list[tuple[Any, ...]]:
    if not path.exists():
        return []
    df = spark.read.parquet(str(path)).drop("batch_id")
    return sorted((tuple(r) for r in df.collect() if not_sentinel(r)), key=repr)


def not_sentinel(row: Row) -> bool:
    """Whether ``row`` is not the sentinel's (rows without a user column are kept)."""
    return bool(row.asDict().get("user") != SENTINEL)


def batch_expected(
    spark: SparkSession, batches: list[list[dict[str, Any]]]
) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    rows = [Row(**r) for b in batches for r in b]
    df = spark.createDataFrame(rows, SCHEMA)
    result = (
        WindowedStream.from_dataframe(
            df, event_time="ts", watermark=BoundedOutOfOrderness(DELAY), arrival_order="batch"
        )
        .key_by("user")
        .window(TumblingEventTimeWindows(SIZE))
        .side_output_late_data(LATE)
        .reduce(add)
    )
    with result:
        res = sorted(tuple(r) for r in result.results.collect() if r["user"] != SENTINEL)
        late = sorted((tuple(r) for r in result.get_side_output(LATE).collect()), key=repr)
    return res, late


@pytest.fixture(scope="module")
def uninterrupted(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Any:
    batches = make_batches(7)
    base = tmp_path_factory.mktemp("stream_full")
    write_files(base / "src", batches)
    metrics = run(spark, base / "src", base / "out")
    results = read(spark, base / "out" / "results")
    return batches, results, read(spark, base / "out" / "late"), metrics


def _split_keys(table: Any, keys: list[str]) -> list[tuple[Any, Any]]:
    """``(key, rows)`` of each key of ``table``."""
    from windowing.spark.columns import frames

    table, ranges = frames.key_ranges(table, keys)
    return [(k, table.slice(lo, hi - lo)) for k, lo, hi in ranges]


def test_streaming_equals_batch_replay(spark: SparkSession, uninterrupted: Any) -> None:
    batches, results, late, _ = uninterrupted
    expected_results, expected_late = batch_expected(spark, batches)
    assert results
    assert {r[-1] for r in late} == {"late", "null_event_time"}
    assert Counter(results) == Counter(expected_results)
    assert Counter(late) == Counter(expected_late)


def test_observed_metrics_in_the_query_progress(uninterrupted: Any) -> None:
    batches, results, late, metrics = uninterrupted
    reasons = Counter(r[-1] for r in late)
    assert metrics["num_input_rows"] == sum(len(b) for b in batches)
    assert metrics["num_late_records_side_output"] == reasons["late"] > 0
    assert metrics["num_null_event_time"] == reasons["null_event_time"] == 1
    assert metrics["num_windows_fired"] == metrics["num_results"] == len(results) > 0
    assert metrics["num_late_records_dropped"] == metrics["num_null_arrival_order"] == 0
    assert "num_keys" not in metrics


def test_late_row_in_later_file_reaches_late_output(spark: SparkSession, tmp_path: Path) -> None:
    batches = [
        [{"user": "a", "amount": 1, "ts": T0 + 1_000}],
        [{"user": "b", "amount": 2, "ts": T0 + 30_000}],  # watermark -> T0 + 28_000
        [{"user": "a", "amount": 5, "ts": T0 + 2_000}],  # late, in a later file
    ]
    for b, rows in enumerate(batches):
        for r in rows:
            r["batch"] = b
    write_files(tmp_path / "src", batches)
    run(spark, tmp_path / "src", tmp_path / "out")
    late = read(spark, tmp_path / "out" / "late")
    assert late == [("a", 5, T0 + 2_000, 2, T0 + 30_000 - DELAY - 1, "late")]
    results = read(spark, tmp_path / "out" / "results")
    # The window [T0, T0 + 10s) of 'a' fired once, with only the on-time row.
    assert ("a", T0, T0 + SIZE, 1, T0 + 1_000, 0, T0 + SIZE - 1) in results


def test_restart_from_checkpoint(spark: SparkSession, tmp_path: Path, uninterrupted: Any) -> None:
    batches, results, late, _ = uninterrupted
    src, out = tmp_path / "src", tmp_path / "out"
    write_files(src, batches[:3])
    run(spark, src, out)
    first = read(spark, out / "results")
    write_files(src, batches[3:], first=3)
    run(spark, src, out)  # same checkpoint: continues with the new files
    assert len(first) < len(results)
    assert Counter(read(spark, out / "results")) == Counter(results)
    assert Counter(read(spark, out / "late")) == Counter(late)


def built_in_sum(
    spark: SparkSession,
    source: Path,
    key_groups: int = 128,
    windows: Any = None,
    *,
    agg: bool = False,
) -> Any:
    """The built-in sum of ``windows`` (tumbling ones by default) per user over the files
    in ``source`` (``agg``: ``.agg`` of the sum, the count and the mean instead)."""
    df = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).json(str(source))
    stream = (
        WindowedStream.from_dataframe(df, event_time="ts", watermark=BoundedOutOfOrderness(DELAY))
        .key_by("user")
        .window(TumblingEventTimeWindows(SIZE) if windows is None else windows)
        .side_output_late_data(LATE)
        .max_parallelism(key_groups)
    )
    if agg:
        if isinstance(windows, HoppingEventTimeWindows):
            stream = stream.slicing(True)  # panes for the avg too (a sum of doubles)
        return stream.agg(F.sum("amount"), F.count("*").alias("n"), F.avg("amount"))
    return stream.sum("amount")


@pytest.mark.parametrize(
    ("windows", "agg"),
    [
        (None, False),
        (None, True),
        pytest.param(HoppingEventTimeWindows(SIZE, 2_000), False, marks=pytest.mark.slow),
        (HoppingEventTimeWindows(SIZE, 2_000), True),
        (EventTimeSessionWindows(2_500), False),
        pytest.param(EventTimeSessionWindows(2_500), True, marks=pytest.mark.slow),
        (SlidingDistinctAssigner(SIZE, grace=1_000), True),
    ],
    ids=[
        "tumbling",
        "tumbling-agg",
        "hopping",
        "hopping-agg",
        "session",
        "session-agg",
        "kip450-agg",
    ],
)
def test_restart_with_state_on_whole_columns(
    spark: SparkSession, tmp_path: Path, windows: Any, agg: bool
) -> None:
    """The column path's state (OpenWindows in the state store: windows, panes, sessions or
    the accumulators of ``.agg``, hopping ones per pane, KIP-450 ones per window of Kafka's
    store) survives a restart from the checkpoint: the results equal those of one
    uninterrupted query."""
    batches = make_batches(11)
    whole, parts = tmp_path / "whole", tmp_path / "parts"
    write_files(whole / "src", batches)
    result = built_in_sum(spark, whole / "src", windows=windows, agg=agg)
    assert result.plan.columnar is not None
    run(spark, whole / "src", whole / "out", result)
    write_files(parts / "src", batches[:2])
    run(
        spark,
        parts / "src",
        parts / "out",
        built_in_sum(spark, parts / "src", windows=windows, agg=agg),
    )
    first = read(spark, parts / "out" / "results")
    write_files(parts / "src", batches[2:], first=2)
    run(
        spark,
        parts / "src",
        parts / "out",
        built_in_sum(spark, parts / "src", windows=windows, agg=agg),
    )
    expected = read(spark, whole / "out" / "results")
    assert 0 < len(first) < len(expected)
    assert Counter(read(spark, parts / "out" / "results")) == Counter(expected)
    assert Counter(read(spark, parts / "out" / "late")) == Counter(
        read(spark, whole / "out" / "late")
    )


# ---------------------------------------------------------------------------- shared helpers
class CountSum(AggregateFunction[Row, tuple[int, int], tuple[int, int]]):
    def create_accumulator(self) -> tuple[int, int]:
        return (0, 0)

    def add(self, value: Row, acc: tuple[int, int]) -> tuple[int, int]:
        return (acc[0] + 1, acc[1] + value.amount)

    def get_result(self, acc: tuple[int, int]) -> tuple[int, int]:
        return acc

    def merge(self, a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
        return (a[0] + b[0], a[1] + b[1])


def in_order_batches(
    seed: int, n_batches: int = 2, per_batch: int = 10
) -> list[list[dict[str, Any]]]:
    """Rows in event-time order, gaps of 0.2-2.5 s, then the sentinel."""
    rng = random.Random(seed)
    ts = T0
    batches = []
    for _ in range(n_batches):
        rows = []
        for _ in range(per_batch):
            ts += rng.randint(200, 2_500)
            rows.append({"user": rng.choice("ab"), "amount": rng.randint(1, 9), "ts": ts})
        batches.append(rows)
    batches.append([{"user": SENTINEL, "amount": 0, "ts": ts + 100_000}])
    for b, rows in enumerate(batches):
        for r in rows:
            r["batch"] = b
    return batches


def streamed_and_replayed(
    spark: SparkSession,
    tmp_path: Path,
    batches: list[list[dict[str, Any]]],
    finish: Callable[[Any], Any],
    side_outputs: Iterable[OutputTag] = (),
    *,
    keyed: bool = True,
) -> tuple[dict[str, list[tuple[Any, ...]]], dict[str, list[tuple[Any, ...]]]]:
    """Outputs (results, late, side outputs by name) of ``finish(stream keyed by user)`` (or
    of ``finish(stream)`` with ``keyed=False``) run as a streaming query over ``batches`` and
    as the batch replay with ``arrival_order="batch"``."""

    def by_user(stream: Any) -> Any:
        return stream.key_by("user") if keyed else stream

    write_files(tmp_path / "src", batches)
    df = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).json(str(tmp_path / "src"))
    watermark = BoundedOutOfOrderness(DELAY)
    stream = by_user(WindowedStream.from_dataframe(df, event_time="ts", watermark=watermark))
    run(spark, tmp_path / "src", tmp_path / "out", finish(stream), side_outputs)
    names = ["results", "late", *[t.name for t in side_outputs]]
    streamed = {n: read(spark, tmp_path / "out" / n) for n in names}

    static = spark.createDataFrame([Row(**r) for b in batches for r in b], SCHEMA)
    result = finish(
        by_user(
            WindowedStream.from_dataframe(
                static, event_time="ts", watermark=watermark, arrival_order="batch"
            )
        )
    )
    with result:
        frames = {"results": result.results, "late": result.get_side_output(LATE)}
        frames.update({t.name: result.get_side_output(t) for t in side_outputs})
        replayed = {
            n: sorted((tuple(r) for r in f.collect() if not_sentinel(r)), key=repr)
            for n, f in frames.items()
        }
    return streamed, replayed


def with_band_rows(batches: list[list[dict[str, Any]]]) -> list[list[dict[str, Any]]]:
    """``batches`` (:func:`make_batches`) with a null amount and, before the sentinel, two
    batches: the first moves the watermark to T0 + 30.5 s, the second holds rows of windows
    that end before it (late without allowed lateness; with 3 s, they fire on arrival)."""
    *head, sentinel = (list(rows) for rows in batches)
    head[2].append({"user": "a", "amount": None, "ts": T0 + 12_500})
    head.append(
        [
            {"user": "c", "amount": 1, "ts": T0 + 32_500},
            {"user": "a", "amount": 2, "ts": T0 + 22_000},
        ]
    )
    head.append(
        [
            {"user": "a", "amount": 7, "ts": T0 + 25_000},
            {"user": "b", "amount": 3, "ts": T0 + 21_000},
        ]
    )
    out = [*head, sentinel]
    for b, rows in enumerate(out):
        for r in rows:
            r["batch"] = b
    return out


# ---------------------------------------------------------------------------- arrival, clocks
class Arrived(ProcessWindowFunction[Row, tuple[int, str], str, Any]):
    """The sequence numbers in the order the window received them."""

    def process(self, key: str, context: Any, elements: Iterable[Row]) -> Iterable[Any]:
        items = list(elements)
        yield (len(items), ",".join(str(r.seq) for r in items))


def test_arrival_order_within_a_micro_batch(spark: SparkSession, tmp_path: Path) -> None:
    schema = "user string, ts bigint, seq bigint"
    # Event times within a batch are closer than the delay: no window closes mid-batch, so
    # the batch replay by `seq` sees the same watermarks as the micro-batches.
    batches = [
        [
            {"user": "a", "ts": T0 + 1_500, "seq": 0},
            {"user": "a", "ts": T0 + 1_000, "seq": 1},
            {"user": "a", "ts": T0 + 1_200, "seq": 2},
            {"user": "a", "ts": T0 + 1_100, "seq": None},  # no arrival order
        ],
        [{"user": "a", "ts": T0 + 2_000, "seq": 4}, {"user": "a", "ts": T0 + 1_900, "seq": 3}],
        [{"user": SENTINEL, "ts": T0 + 100_000, "seq": 5}],
    ]
    write_files(tmp_path / "src", batches)

    def finish(df: DataFrame) -> Any:
        return (
            WindowedStream.from_dataframe(
                df, event_time="ts", watermark=BoundedOutOfOrderness(DELAY), arrival_order="seq"
            )
            .key_by("user")
            .window(TumblingEventTimeWindows(SIZE))
            .side_output_late_data(LATE)
            .process(Arrived(), output_schema="n bigint, seqs string")
        )

    df = spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).json(str(tmp_path / "src"))
    metrics = run(spark, tmp_path / "src", tmp_path / "out", finish(df))
    results = read(spark, tmp_path / "out" / "results")
    late = read(spark, tmp_path / "out" / "late")
    assert results == [("a", T0, T0 + SIZE, 5, "0,1,2,3,4", T0 + SIZE - 1)]
    assert late == [("a", T0 + 1_100, None, None, "null_arrival_order")]
    assert metrics["num_null_arrival_order"] == 1

    replay = finish(spark.createDataFrame([Row(**r) for b in batches for r in b], schema))
    with replay:
        assert read_frame(replay.results) == results
        assert read_frame(replay.get_side_output(LATE)) == late


def read_frame(df: DataFrame) -> list[tuple[Any, ...]]:
    return sorted((tuple(r) for r in df.collect() if r["user"] != SENTINEL), key=repr)


def test_processing_time_column_drives_processing_time_windows(
    spark: SparkSession, tmp_path: Path
) -> None:
    schema = "user string, amount bigint, ts bigint, arrived bigint"
    rng = random.Random(5)
    batches = [
        [
            {"user": rng.choice("ab"), "amount": rng.randint(1, 9), "ts": None, "arrived": a}
            for a in range(b * 1_000, b * 1_000 + 1_000, 130)
        ]
        for b in range(2)
    ]
    # One row per key far ahead on the processing-time clock: closes every earlier window.
    batches.append([{"user": u, "amount": 0, "ts": None, "arrived": 100_000} for u in "ab"])
    write_files(tmp_path / "src", batches)

    def finish(df: DataFrame) -> Any:
        return (
            WindowedStream.from_dataframe(df, event_time="ts", processing_time="arrived")
            .key_by("user")
            .window(TumblingProcessingTimeWindows(700))
            .side_output_late_data(LATE)
            .aggregate(CountSum(), output_schema="n bigint, total bigint")
        )

    df = spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).json(str(tmp_path / "src"))
    metrics = run(spark, tmp_path / "src", tmp_path / "out", finish(df))
    results = [r for r in read(spark, tmp_path / "out" / "results") if r[1] < 50_000]
    replay = finish(spark.createDataFrame([Row(**r) for b in batches for r in b], schema))
    with replay:
        expected = [r for r in read_frame(replay.results) if r[1] < 50_000]
    assert results == expected
    assert sum(r[3] for r in results) == sum(len(b) for b in batches[:2])
    assert not read(spark, tmp_path / "out" / "late")  # no event time is fine here
    assert metrics["num_null_event_time"] == 0


def test_processing_time_windows_on_the_wall_clock(spark: SparkSession, tmp_path: Path) -> None:
    batches = [[{"user": u, "amount": 1, "ts": T0, "batch": b} for u in "aab"] for b in range(2)]
    write_files(tmp_path / "src", batches)
    df = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).json(str(tmp_path / "src"))
    result = (
        WindowedStream.from_dataframe(df, event_time="ts")
        .key_by("user")
        .window(TumblingProcessingTimeWindows(500))
        .aggregate(CountSum(), output_schema="n bigint, total bigint")
    )
    assert result.time_mode == "ProcessingTime"
    query = (
        result.results.writeStream.format("memory")
        .queryName("wall_clock_windows")
        .outputMode("append")
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(processingTime="200 milliseconds")
        .start()
    )
    try:
        # processAllAvailable() would not return: ProcessingTime mode always asks for another
        # micro-batch. The windows fire in later micro-batches, once the clock passes them.
        deadline = time.monotonic() + 180
        while True:
            rows = spark.table("wall_clock_windows").collect()
            if sum(r.n for r in rows) >= 6 or time.monotonic() > deadline:
                break
            time.sleep(0.3)
    finally:
        query.stop()
    per_user = Counter[str]()
    for r in rows:
        per_user[r.user] += r.n
    assert per_user == {"a": 4, "b": 2}
    assert {r.window_end - r.window_start for r in rows} == {500}


def test_large_call_outputs_are_packed_in_slices() -> None:
    """A processor call's tagged output travels as Arrow IPC blobs; a large one is cut into
    several rows so that no Arrow batch of the binary column nears its 2 GiB offsets."""
    import pyarrow as pa

    from windowing.spark.columns import frames

    small = pa.table({"a": pa.array(range(10)), "b": pa.array(["x"] * 10)})
    assert len(frames.pack(small)) == 1
    big = pa.table({"a": pa.array(range(40_000)), "b": pa.array(["y" * 10] * 40_000)})
    packed = frames.pack(big)
    assert len(packed) > 1
    assert all(len(blob) <= 2 * frames._PACK_LIMIT for blob in packed[frames.PACKED])
    batch = pa.RecordBatch.from_pandas(packed, preserve_index=False)
    unpacked = pa.Table.from_batches(list(frames.unpack(iter([batch, batch.slice(0, 0)]))))
    assert unpacked.equals(big)


def test_large_outputs_of_record_batches_are_packed_in_slices() -> None:
    import pyarrow as pa

    from windowing.spark.columns import frames

    big = pa.table({"a": pa.array(range(40_000)), "b": pa.array(["y" * 10] * 40_000)})
    batches = big.to_batches(max_chunksize=15_000)
    packed = frames.pack(batches)
    assert len(packed) > 1
    batch = pa.RecordBatch.from_pandas(packed, preserve_index=False)
    assert pa.Table.from_batches(list(frames.unpack(iter([batch])))).equals(big)


def test_a_call_yields_one_frame_for_all_its_outputs() -> None:
    """The key calls' output and the group's metrics row travel in one frame (Spark converts
    each frame at a fixed cost), as IPC streams of their own: the metrics row's null columns
    may have other types; an empty output adds no row."""
    import pyarrow as pa

    from windowing.spark.columns import frames

    keys = pa.table({"a": pa.array([1, 2]), "b": pa.array(["x", "y"])})
    metrics = pa.table({"a": pa.nulls(1, pa.int64()), "b": pa.nulls(1, pa.null())})
    packed = frames.pack(keys.to_batches(), [], metrics.to_batches())
    assert len(packed) == 2
    blobs = list(packed[frames.PACKED])
    assert from_ipc(blobs[0]).equals(keys)
    assert from_ipc(blobs[1]).equals(metrics)
    assert len(frames.pack([], [])) == 0


@pytest.mark.parametrize("nulls", [False, True])
def test_input_frames_become_tables_in_replay_order(nulls: bool) -> None:
    """The processor's frame -> Arrow conversion (numpy, sorted with numpy when the order
    columns hold no nulls; timestamps from their epoch microseconds) equals pandas -> Arrow
    with pyarrow's own sort, nulls last."""
    import pandas as pd
    import pyarrow as pa
    import pyarrow.compute as pc

    from windowing.spark.batch.replay_plan import replay_order
    from windowing.spark.columns import frames
    from windowing.time import MIN_TIMESTAMP

    rng = random.Random(5)
    n = 60
    ms = [rng.randint(0, 6) for _ in range(n)]
    tb = [rng.randint(-4, 4) for _ in range(n)]
    if nulls:
        ms[7] = ms[20] = None
    micros = [None if m is None else (1_700_000_000_000 + m) * 1000 + 7 for m in ms]
    frame = {
        "user": [rng.choice(["a", "b", None]) for _ in range(n)],
        "x": [rng.choice([1.5, -0.0, float("nan")]) for _ in range(n)],
        "ts": micros,
        "_3": ms,
        "_4": tb,
    }
    schema = pa.schema(
        [
            ("user", pa.string()),
            ("x", pa.float64()),
            ("ts", pa.timestamp("us", tz="UTC")),
            ("__pw_ts", pa.int64()),
            ("__pw_tb", pa.int64()),
        ]
    )
    order = replay_order(arrival=False, processing_time=False)
    expected = pa.Table.from_arrays(
        [pa.array(frame[f.name if i < 3 else f"_{i}"], f.type) for i, f in enumerate(schema)],
        schema=schema,
    )
    x = expected.column("x")
    expected = expected.set_column(1, "x", pc.if_else(pc.is_nan(x), pa.scalar(None, x.type), x))
    expected = expected.take(pc.sort_indices(expected, sort_keys=order))
    # Spark's frame: the timestamps as micros, MIN_TIMESTAMP for null (never null itself)
    pdf = pd.DataFrame({**frame, "ts": [MIN_TIMESTAMP if m is None else m for m in micros]})
    got = frames.input_table(pdf, schema, order)
    assert got.equals(expected)
    assert got.column("x").null_count == expected.column("x").null_count > 0  # NaN -> null
    assert got.column("ts").null_count == (2 if nulls else 0)


def test_rows_of_a_key_group_split_by_key() -> None:
    """Inside a key group, rows split by key with Spark's grouping equality (nulls equal,
    -0.0 == 0.0, several columns, a struct column) and keep their order within a key."""
    import pyarrow as pa

    table = pa.table(
        {
            "k": pa.array([2.0, -0.0, None, 0.0, 2.0, None, -0.0]),
            "s": pa.array(["x", "y", "x", "y", "z", "x", "y"]),
            "n": pa.array(range(7)),
        }
    )
    split = {repr(k): rows.column("n").to_pylist() for k, rows in _split_keys(table, ["k"])}
    assert split == {"2.0": [0, 4], "0.0": [1, 3, 6], "None": [2, 5]}  # 0.0, as Spark shows it
    split = {k: rows.column("n").to_pylist() for k, rows in _split_keys(table, ["k", "s"])}
    assert split == {(2.0, "x"): [0], (2.0, "z"): [4], (-0.0, "y"): [1, 3, 6], (None, "x"): [2, 5]}
    nested = pa.table(
        {
            "p": pa.array([{"a": 1}, {"a": 2}, {"a": 1}, None]),
            "n": pa.array(range(4)),
        }
    )
    split = {repr(k): rows.column("n").to_pylist() for k, rows in _split_keys(nested, ["p"])}
    assert sorted(split.values()) == [[0, 2], [1], [3]]
    assert [(k, t.num_rows) for k, t in _split_keys(table, [])] == [(None, 7)]
    assert state_key(float("nan")) == state_key(float("nan"))
    assert state_key((1, [float("nan"), -0.0])) == (1, (NAN_KEY, 0.0))


def test_timestamps_in_a_session_time_zone_other_than_utc(
    spark: SparkSession, tmp_path: Path
) -> None:
    """Spark hands the processor TimestampType values as wall-clock times of the session
    time zone: they reach the results and the late rows as the same instants as the input,
    on the operator and on the column path."""
    src = tmp_path / "src"
    src.mkdir()
    files = [
        [("a", 1, "2024-05-01T12:00:01Z"), ("a", 2, "2024-05-01T12:00:02Z")],
        [("b", 1, "2024-05-01T13:00:00Z")],
        [("a", 3, "2024-05-01T12:00:03Z"), ("b", 1, "2024-05-01T14:00:00Z")],  # a late row
    ]
    for i, rows in enumerate(files):
        path = src / f"part-{i:04d}.json"
        path.write_text(
            "".join(json.dumps({"user": u, "n": n, "ts": t}) + "\n" for u, n, t in rows)
        )
        os.utime(path, (1_600_000_000 + i * 10,) * 2)

    def pick(a: Row, b: Row) -> Row:
        return a if a.n >= b.n else b

    previous = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "America/New_York")
    try:
        outputs = {}
        for name, finish in (
            ("operator", lambda s: s.reduce(pick)),
            ("columns", lambda s: s.max_by("n")),
        ):
            df = (
                spark.readStream.schema("user string, n bigint, ts timestamp")
                .option("maxFilesPerTrigger", 1)
                .json(str(src))
            )
            stream = (
                WindowedStream.from_dataframe(
                    df, event_time="ts", watermark=BoundedOutOfOrderness(1_000)
                )
                .key_by("user")
                .window(TumblingEventTimeWindows(10_000))
                .side_output_late_data(LATE)
            )
            out = tmp_path / name
            query = write_results_and_late(
                finish(stream),
                str(out / "results"),
                str(out / "late"),
                str(out / "ckpt"),
                available_now=True,
            )
            query.awaitTermination()
            assert query.exception() is None
            outputs[name] = out
    finally:
        spark.conf.set("spark.sql.session.timeZone", previous)
    from datetime import datetime

    def instant(text: str) -> datetime:
        return (
            datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC).replace(tzinfo=None)
        )

    for out in outputs.values():
        results = spark.read.parquet(str(out / "results")).where("user = 'a'").collect()
        assert [(r.n, r.ts) for r in results] == [(2, instant("2024-05-01T12:00:02Z"))]
        assert results[0].window_start == instant("2024-05-01T12:00:00Z")
        late = spark.read.parquet(str(out / "late")).collect()
        assert [(r.user, r.n, r.ts) for r in late] == [("a", 3, instant("2024-05-01T12:00:03Z"))]


class _FakeValueState:
    def __init__(self) -> None:
        self.value: tuple[Any, ...] | None = None

    def get(self) -> tuple[Any, ...] | None:
        return self.value

    def update(self, value: tuple[Any, ...]) -> None:
        self.value = value

    def clear(self) -> None:
        self.value = None


class _FakeHandle:
    def __init__(self) -> None:
        self.state = _FakeValueState()
        self.timers: set[int] = set()

    def getValueState(self, name: str, schema: Any) -> _FakeValueState:  # noqa: N802
        return self.state

    def registerTimer(self, t: int) -> None:  # noqa: N802
        self.timers.add(t)

    def deleteTimer(self, t: int) -> None:  # noqa: N802
        self.timers.discard(t)


class _TimerValues:
    def __init__(self, watermark: int) -> None:
        self.watermark = watermark

    def getCurrentWatermarkInMs(self) -> int:  # noqa: N802
        return self.watermark

    def getCurrentProcessingTimeInMs(self) -> int:  # noqa: N802
        return 0


def processor_of(
    spark: SparkSession,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    finish: Callable[[Any], Any],
) -> tuple[Any, _FakeHandle]:
    """The streaming processor the builder makes for ``finish(windowed stream)`` (keyed by
    user, tumbling windows), initialised with a fake state handle."""
    from windowing.spark.streaming import processor as runtime_processor

    configs: list[Any] = []
    original = runtime_processor.WindowProcessor.__init__

    def capture(self: Any, config: Any) -> None:
        configs.append(config)
        original(self, config)

    monkeypatch.setattr(runtime_processor.WindowProcessor, "__init__", capture)
    write_files(tmp_path / "src", [[{"user": "a", "amount": 1, "ts": T0, "batch": 0}]])
    df = spark.readStream.schema(SCHEMA).json(str(tmp_path / "src"))
    keyed = WindowedStream.from_dataframe(df, event_time="ts", watermark=BoundedOutOfOrderness(0))
    finish(keyed.key_by("user").window(TumblingEventTimeWindows(SIZE)))
    (config,) = configs
    processor = runtime_processor.WindowProcessor(config)
    handle = _FakeHandle()
    processor.init(handle)  # type: ignore[arg-type]
    return processor, handle


def call_processor(
    processor: Any, watermark: int, rows: list[tuple[str, int | None, int]]
) -> list[tuple[Any, ...]]:
    """One handleInputRows call of a key group with ``rows`` (user, amount, ts): the
    results as (user, window start, amount)."""
    import pandas as pd

    from windowing.spark.columns import frames

    frame = pd.DataFrame(
        {
            "user": [u for u, _, _ in rows],
            "amount": [a for _, a, _ in rows],
            "ts": [t for _, _, t in rows],
            "batch": [0] * len(rows),
            "_4": [t for _, _, t in rows],
            "_5": list(range(len(rows))),
            "_6": [0] * len(rows),  # the key group
        }
    )
    out = processor.handleInputRows((0,), iter([frame]), _TimerValues(watermark))
    tables = [from_ipc(blob) for f in out for blob in f[frames.PACKED]]
    results = []
    for t in tables:
        kinds = t.column("__pw_kind").to_pylist()
        users = t.column("user").to_pylist()
        starts = t.column("__pw_ws").to_pylist()
        amounts = t.column("__pw_r0").to_pylist()
        results += [
            (u, s, a) for k, u, s, a in zip(kinds, users, starts, amounts, strict=True) if k == 0
        ]
    return sorted(results)


def group_scope() -> Any:
    """Where the processor's key group 0 state belongs outside a Spark task (no query)."""
    from windowing.spark.streaming.checkpoint import StateOwner

    return StateOwner().scope(0)


def legacy_value(plain: Any, users: list[Any]) -> bytes:
    """A state value as versions before format 3 wrote it: format 2, the plain part naming
    the user objects by index, signed with the state key if one is set (without a scope)."""
    import hashlib
    import hmac
    import pickle

    from windowing.engine import encoding

    payload = pickle.dumps((plain, pickle.dumps(users, protocol=5)), protocol=5)
    header = encoding.MAGIC + bytes((2,))
    key = encoding.state_key()
    if key is None:
        return header + b"\x00" + payload
    tag = hmac.new(key, header + payload, hashlib.sha256).digest()
    return header + bytes((32,)) + tag + payload


def stored_key_states(handle: _FakeHandle) -> dict[Any, Any]:
    """The key states in the fake handle's key group value: each key run by the operator's
    own state, and for the keys in the group's columnar windows, those windows (one
    OpenWindows for all of them)."""
    from windowing.spark.streaming import checkpoint

    assert handle.state.value is not None
    data = handle.state.value[0]
    assert data[:4] == b"PWST"  # the versioned encoding, not a pickle
    scope = group_scope()
    version, key_groups, timer, entries, windows, job = checkpoint.decode_group(data, scope)
    assert (version, key_groups) == (checkpoint.STATE_VERSION, 128) and job is not None
    assert handle.timers == ({timer} if timer is not None else set())
    states = {k: checkpoint.decode_entry(e[2], scope) for k, e in entries.items()}
    if windows is not None:
        in_columns = set(windows.rows.column("user").to_pylist())
        assert not in_columns & set(states), "a key in both forms"
        states.update(dict.fromkeys(in_columns, windows))
    return states


def test_a_key_returns_to_columns_after_an_operator_call(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The processor of a built-in aggregation keeps a key's state as OpenWindows; a call the
    columns cannot decide (a null amount) stores the operator's KeyState, which goes through
    the state store pickled (its rows come back as plain Rows) and converts back at the next
    call."""
    from windowing.operator import KeyState
    from windowing.spark.columnar.core import OpenWindows

    processor, handle = processor_of(spark, tmp_path, monkeypatch, lambda w: w.sum("amount"))
    assert processor.config.columnar is not None
    call = functools.partial(call_processor, processor)
    assert call(0, [("a", 1, T0), ("a", 2, T0 + 1)]) == []
    assert isinstance(stored_key_states(handle)["a"], OpenWindows)
    assert call(0, [("a", None, T0 + 2), ("a", 4, T0 + SIZE)]) == []  # a null: the operator
    assert isinstance(stored_key_states(handle)["a"], KeyState)
    # the windows fire at the watermark, on columns again
    got = call(T0 + 2 * SIZE + 1 + SHIFT, [("a", 8, T0 + 2 * SIZE)])
    assert got == [("a", T0, 3), ("a", T0 + SIZE, 4)]
    assert isinstance(stored_key_states(handle)["a"], OpenWindows)
    assert handle.timers == {T0 + 3 * SIZE + SHIFT}


def test_checkpoints_of_the_pickled_layout_still_load(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A key group's state written by layout 3 (a pickle, key states pickled) continues as it
    would have under the opt-in (a pickle names internal classes: only a full unpickler reads
    it); the next write is the versioned encoding."""
    import pickle

    from windowing.engine import encoding
    from windowing.spark.streaming import checkpoint

    processor, handle = processor_of(spark, tmp_path, monkeypatch, lambda w: w.reduce(add))
    call = functools.partial(call_processor, processor)
    assert call(0, [("a", 1, T0), ("b", 2, T0 + SIZE), ("a", 3, T0 + 5)]) == []
    scope = group_scope()
    _, key_groups, timer, entries, windows, _ = checkpoint.decode_group(
        handle.state.value[0], scope
    )
    legacy_entries = {
        k: (key, due, pickle.dumps(checkpoint.decode_entry(blob, scope)), clock)
        for k, (key, due, blob, clock, *_) in entries.items()
    }
    handle.state.value = (pickle.dumps((3, key_groups, timer, legacy_entries, windows)),)
    # A pickle cannot be authenticated: refused while a state key is set; without one, only
    # under the opt-in.
    with monkeypatch.context() as signed:
        signed.setenv(encoding.STATE_KEY_ENV, "a key")
        with pytest.raises(encoding.StateAuthenticationError, match="layout 2 or 3"):
            call(T0 + SIZE + 1 + SHIFT, [("b", 5, T0 + SIZE + 7)])
    with pytest.raises(encoding.UntrustedStateError, match=f"layout 2 or 3.*{encoding.TRUST_ENV}"):
        call(T0 + SIZE + 1 + SHIFT, [("b", 5, T0 + SIZE + 7)])
    monkeypatch.setenv(encoding.TRUST_ENV, "1")
    got = call(T0 + SIZE + 1 + SHIFT, [("b", 5, T0 + SIZE + 7)])
    assert got == [("a", T0, (1 * 31 + 3) % 1_000_003)]
    assert handle.state.value[0][:4] == b"PWST"
    monkeypatch.delenv(encoding.TRUST_ENV)
    assert handle.state.value[0][5] == 0  # unsigned plain data: loads without the opt-in
    assert set(stored_key_states(handle)) == {"b"}


@pytest.mark.parametrize("function", ["sum", "reduce"])
def test_one_timer_per_key_group(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, function: str
) -> None:
    """Two keys in one key group share one state value and one timer, at the earlier due
    time; a call with rows of one key also fires the other's due windows."""
    processor, handle = processor_of(
        spark,
        tmp_path,
        monkeypatch,
        lambda w: w.sum("amount") if function == "sum" else w.reduce(add),
    )
    call = functools.partial(call_processor, processor)
    assert call(0, [("a", 1, T0), ("b", 2, T0 + SIZE), ("a", 3, T0 + 5)]) == []
    assert set(stored_key_states(handle)) == {"a", "b"}
    assert handle.timers == {T0 + SIZE + SHIFT}  # a's window ends first
    # rows of b only; the watermark has passed a's window: it fires in this call
    got = call(T0 + SIZE + 1 + SHIFT, [("b", 5, T0 + SIZE + 7)])
    amount_a = 4 if function == "sum" else (1 * 31 + 3) % 1_000_003
    assert got == [("a", T0, amount_a)]
    assert set(stored_key_states(handle)) == {"b"}  # a holds nothing now
    assert handle.timers == {T0 + 2 * SIZE + SHIFT}


def test_writing_only_the_results(spark: SparkSession, tmp_path: Path) -> None:
    """With no late path and no side outputs the batch feeds one output (not persisted);
    the results and the observed metrics are those of the full writer."""
    batches = in_order_batches(seed=4)
    write_files(tmp_path / "src", batches)

    def query(out: Path, late: Path | None) -> Any:
        df = (
            spark.readStream.schema(SCHEMA)
            .option("maxFilesPerTrigger", 1)
            .json(str(tmp_path / "src"))
        )
        result = (
            WindowedStream.from_dataframe(
                df, event_time="ts", watermark=BoundedOutOfOrderness(DELAY)
            )
            .key_by("user")
            .window(TumblingEventTimeWindows(SIZE))
            .side_output_late_data(LATE)
            .reduce(add)
        )
        q = write_results_and_late(
            result,
            str(out / "results"),
            None if late is None else str(late),
            str(out / "ckpt"),
            available_now=True,
        )
        q.awaitTermination()
        assert q.exception() is None
        fired = sum(
            p["observedMetrics"][METRICS_NAME]["num_windows_fired"]
            for p in q.recentProgress
            if METRICS_NAME in p["observedMetrics"]
        )
        return read(spark, out / "results"), fired

    only, only_fired = query(tmp_path / "only", None)
    full, full_fired = query(tmp_path / "full", tmp_path / "full" / "late")
    assert only == full
    assert only_fired == full_fired >= len(only) > 0


def test_timestamps_in_the_repeated_hour_keep_their_instants() -> None:
    """When clocks go back, two instants share each wall-clock time of the repeated hour, and
    Spark's pandas frames would give only the wall-clock time. Timestamp columns reach the
    processor as epoch microseconds and come back as the same instants, before the epoch
    and beyond pandas' nanosecond range too."""
    from datetime import datetime

    import pandas as pd
    import pyarrow as pa

    from windowing.spark.batch.replay_plan import replay_order
    from windowing.spark.columns import frames

    zone = "America/New_York"
    instants = [
        datetime(2024, 11, 3, 5, 30, 0, 123_456, tzinfo=UTC),  # 01:30:00.123456 EDT
        datetime(2024, 11, 3, 6, 30, 0, 123_456, tzinfo=UTC),  # 01:30:00.123456 EST
        datetime(1969, 12, 31, 23, 59, 59, 999_999, tzinfo=UTC),  # before the epoch
        datetime(9999, 12, 31, 23, 59, 59, 999_999, tzinfo=UTC),  # not a pandas Timestamp
    ]
    epoch = datetime(1970, 1, 1, tzinfo=UTC)
    micros = [(t - epoch) // timedelta(microseconds=1) for t in instants]
    pdf = pd.DataFrame(
        {
            "ts": micros,
            "other": micros[::-1],
            "_2": [m // 1000 for m in micros],  # unix_millis: floor
            "_3": [0, 1, 2, 3],
        }
    )
    schema = pa.schema(
        [
            ("ts", pa.timestamp("us", tz=zone)),
            ("other", pa.timestamp("us", tz=zone)),
            ("__pw_ts", pa.int64()),
            ("__pw_tb", pa.int64()),
        ]
    )
    order = replay_order(arrival=False, processing_time=False)
    table = frames.input_table(pdf, schema, order)
    assert table.schema == schema
    # as UTC: Python never finds a time of a repeated hour equal to one of another zone
    ts, other = ([t.astimezone(UTC) for t in table.column(c).to_pylist()] for c in ("ts", "other"))
    assert sorted(zip(ts, other, strict=True)) == sorted(zip(instants, instants[::-1], strict=True))


def test_agg_streams_as_it_replays(spark: SparkSession, tmp_path: Path) -> None:
    """``agg`` with Spark's aggregate functions in streaming (the window operator computes
    them, with allowed lateness: late firings, late rows) equals the batch replay; the late
    rows keep the input columns only."""

    def finish(keyed: Any) -> Any:
        return (
            keyed.window(TumblingEventTimeWindows(SIZE))
            .allowed_lateness(3_000)
            .side_output_late_data(LATE)
            .agg(
                F.sum("amount").alias("total"),
                F.count("*").alias("n"),
                F.max_by("batch", "amount").alias("batch_of_max"),
                F.first("amount").alias("first_amount"),
                F.avg(F.col("amount") * 2).alias("mean2"),
            )
        )

    batches = with_band_rows(make_batches(seed=11))
    streamed, replayed = streamed_and_replayed(spark, tmp_path, batches, finish)
    assert streamed == replayed
    assert len(streamed["results"]) > 5 and streamed["late"]
    assert all(len(r) == len(SCHEMA.split(",")) + 2 for r in streamed["late"])
    late_firings = Counter(r[:2] for r in streamed["results"])
    assert max(late_firings.values()) >= 2  # a window fired again with a late row


@F.pandas_udf(DoubleType())  # type: ignore[call-overload]
def spread_of(amount: pd.Series, ts: pd.Series) -> float:
    """An order-sensitive pandas UDF: the last amount minus the first (by replay order)."""
    amounts = amount.dropna()
    return float(amounts.iloc[-1] - amounts.iloc[0]) if len(amounts) else float("nan")


def test_pandas_udf_aggregates_stream_as_they_replay(spark: SparkSession, tmp_path: Path) -> None:
    """A grouped-aggregate pandas UDF in ``agg`` streams in the window operator (its rows in
    the state between micro-batches, late firings included) as the batch replay computes
    it, order-sensitive as it is."""

    def finish(keyed: Any) -> Any:
        return (
            keyed.window(TumblingEventTimeWindows(SIZE))
            .allowed_lateness(3_000)
            .side_output_late_data(LATE)
            .agg(spread_of("amount", "ts").alias("spread"), F.count("*").alias("n"))
        )

    batches = with_band_rows(make_batches(seed=12))
    streamed, replayed = streamed_and_replayed(spark, tmp_path, batches, finish)
    assert streamed == replayed
    assert len(streamed["results"]) > 5 and streamed["late"]
    spreads = [r[3] for r in streamed["results"]]  # (user, start, end, spread, n, max ts)
    assert any(isinstance(v, float) and v == v and v != 0.0 for v in spreads)


def test_bigint_event_times_at_the_ends_of_long_stream_as_they_replay(
    spark: SparkSession, tmp_path: Path
) -> None:
    """Event times near -2**63 and 2**63 (bigint) do not stop the query: Spark's watermark
    stops at the largest timestamp it holds. Everything equals the batch replay except the
    window at the end of time, which a streaming run keeps open (no end of input)."""
    batches = in_order_batches(seed=31, n_batches=3)
    batches[0].append({"user": "a", "amount": 5, "ts": -(2**63) + 5, "batch": 0})
    batches[1].append({"user": "b", "amount": 7, "ts": 2**63 - 5, "batch": 1})

    def finish(keyed: Any) -> Any:
        return keyed.window(TumblingEventTimeWindows(SIZE)).side_output_late_data(LATE).reduce(add)

    streamed, replayed = streamed_and_replayed(spark, tmp_path, batches, finish)
    open_at_end = [r for r in replayed["results"] if r[-1] == 2**63 - 1]
    assert len(open_at_end) == 1
    assert sorted(streamed["results"], key=repr) == [
        r for r in replayed["results"] if r not in open_at_end
    ]
    # the window at the start of time starts below -2**63: its start is clamped, never null
    assert [r[1] for r in streamed["results"] if r[4] == -(2**63) + 5] == [-(2**63)]
    # the window at the end ends past 2**63 - 1: its end is clamped (replay: end of input)
    assert [r[2] for r in open_at_end] == [2**63 - 1]
    # the same rows are late; the watermark that made them late is Spark's limit in streaming
    assert [r[:-2] + r[-1:] for r in streamed["late"]] == [
        r[:-2] + r[-1:] for r in replayed["late"]
    ]
    assert streamed["late"]  # the rows after the jump are late in both
    assert {r[-2] for r in streamed["late"] if r[-1] == "late"} == {
        (2**63 - 1) // 1_000 - WATERMARK_SHIFT_MS - DELAY - 1
    }


def test_timestamps_of_any_year_stream_as_they_replay(spark: SparkSession, tmp_path: Path) -> None:
    """Timestamps Spark accepts but pandas' nanoseconds cannot hold (years 1, 1600, 9999), in
    the event time and in another column, stream as the batch replay computes them (except
    the window ending after 9999, still open at the end of a stream)."""
    schema = "user string, ts timestamp, born timestamp, amount bigint, batch bigint"
    files = [
        [
            ("a", "1600-01-01T00:00:00Z", "0001-01-01T00:00:00Z", 1),
            ("a", "2024-01-01T00:00:01Z", "9999-12-31T23:59:59Z", 2),
        ],
        [
            ("b", "2024-01-01T00:00:20Z", None, 3),
            ("a", "9999-12-31T23:59:59Z", "0001-01-01T00:00:00Z", 4),
        ],
        [("a", "2024-01-01T00:00:30Z", "1600-06-01T00:00:00Z", 5)],  # late: after 9999
    ]
    source = tmp_path / "src"
    write_files(
        source,
        [
            [{"user": u, "ts": t, "born": b, "amount": n, "batch": i} for u, t, b, n in rows]
            for i, rows in enumerate(files)
        ],
    )

    def windowed(df: DataFrame, **kw: Any) -> Any:
        stream = WindowedStream.from_dataframe(
            df, event_time="ts", watermark=BoundedOutOfOrderness(DELAY), **kw
        )
        return (
            stream.key_by("user")
            .window(TumblingEventTimeWindows(SIZE))
            .side_output_late_data(LATE)
            .reduce(lambda a, b: a if a.amount >= b.amount else b)
        )

    def as_text(df: DataFrame) -> list[str]:
        cols = [c for c in df.columns if c != "batch_id"]
        return sorted(r[0] for r in df.selectExpr(f"to_json(struct({', '.join(cols)}))").collect())

    streaming_df = spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).json(str(source))
    run(spark, source, tmp_path / "out", windowed(streaming_df))
    streamed = {
        n: as_text(spark.read.parquet(str(tmp_path / "out" / n))) for n in ("results", "late")
    }
    static = spark.read.schema(schema).json(str(source))
    result = windowed(static, arrival_order="batch")
    replayed = {"results": as_text(result.results), "late": as_text(result.get_side_output(LATE))}
    open_at_end = [r for r in replayed["results"] if '"window_start":"9999-12-31' in r]
    assert len(open_at_end) == 1
    assert '"window_end":"9999-12-31T23:59:59.999' in open_at_end[0]  # clamped, not null
    assert streamed["results"] == [r for r in replayed["results"] if r not in open_at_end]
    assert streamed["late"] == replayed["late"] and len(streamed["late"]) == 1
    assert any('"born":"0001-01-01' in r for r in streamed["results"])
    assert any('"window_start":"1600-01-01' in r for r in streamed["results"])


def test_a_window_starting_before_year_1_streams_with_its_start_clamped(
    spark: SparkSession, tmp_path: Path
) -> None:
    """A one-day window with a 12 h offset around 0001-01-01T00:00:00.001 starts before
    Spark's first instant: streamed, its start is clamped to year 1 (never null), as the
    batch replay gives it."""
    schema = "user string, ts timestamp, amount bigint, batch bigint"
    files = [
        [{"user": "a", "ts": "0001-01-01T00:00:00.001Z", "amount": 1, "batch": 0}],
        [{"user": "a", "ts": "0001-01-03T00:00:00Z", "amount": 2, "batch": 1}],
    ]
    write_files(tmp_path / "src", files)

    def windowed(df: DataFrame, **kw: Any) -> Any:
        stream = WindowedStream.from_dataframe(df, event_time="ts", **kw)
        day = TumblingEventTimeWindows("1 day", offset="12 hours")
        return stream.key_by("user").window(day).side_output_late_data(LATE).sum("amount")

    streaming_df = spark.readStream.schema(schema).option("maxFilesPerTrigger", 1)
    run(
        spark,
        tmp_path / "src",
        tmp_path / "out",
        windowed(streaming_df.json(str(tmp_path / "src"))),
    )
    first = ("CAST(window_start AS STRING) AS s", "CAST(window_end AS STRING) AS e", "amount")
    streamed = spark.read.parquet(str(tmp_path / "out" / "results")).selectExpr(*first)
    assert [tuple(r) for r in streamed.collect()] == [
        ("0001-01-01 00:00:00", "0001-01-01 12:00:00", 1)
    ]
    static = spark.read.schema(schema).json(str(tmp_path / "src"))
    replayed = windowed(static, arrival_order="batch").results.selectExpr(*first).collect()
    assert ("0001-01-01 00:00:00", "0001-01-01 12:00:00", 1) in [tuple(r) for r in replayed]


def test_checkpoints_without_window_counts_still_load(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A key group's state of layout 4 (no open-window count per key) continues as it would
    have; its keys are counted once, at the next write (layout 5)."""
    from windowing.spark.streaming import checkpoint

    processor, handle = processor_of(spark, tmp_path, monkeypatch, lambda w: w.reduce(add))
    call = functools.partial(call_processor, processor)
    assert call(0, [("a", 1, T0), ("b", 2, T0 + SIZE), ("a", 3, T0 + 5)]) == []
    scope = group_scope()
    _, key_groups, timer, entries, _, _ = checkpoint.decode_group(handle.state.value[0], scope)
    assert {k: e[4] for k, e in entries.items()} == {"a": 1, "b": 1}
    users: list[Any] = []
    items = []
    for k, (key, due, blob, clock, *_) in entries.items():
        users += [k, key]
        items.append((len(users) - 2, len(users) - 1, due, blob, clock))
    plain = ("group", 4, key_groups, timer, items, None)
    handle.state.value = (legacy_value(plain, users),)
    got = call(T0 + SIZE + 1 + SHIFT, [("b", 5, T0 + SIZE + 7)])
    assert got == [("a", T0, (1 * 31 + 3) % 1_000_003)]
    version, _, _, entries, _, _ = checkpoint.decode_group(handle.state.value[0], scope)
    assert version == checkpoint.STATE_VERSION
    assert {k: e[4] for k, e in entries.items()} == {"b": 1}


class ContinuousCount(ProcessWindowFunction[Row, int, str, Any]):
    def process(self, key: str, context: Any, elements: Any) -> Any:
        yield len(list(elements))


# reduce with ``slow``: the operator's pane numbering is the same for every function (its
# unit tests), and process takes the path that keeps rows
@pytest.mark.parametrize("function", [pytest.param("reduce", marks=pytest.mark.slow), "process"])
def test_pane_info_streams_as_it_replays(
    spark: SparkSession, tmp_path: Path, function: str
) -> None:
    """pane_index and timing of each firing: early (a count trigger), on time, late within
    the allowed lateness; a streaming run gives the batch replay's panes."""

    def finish(keyed: Any) -> Any:
        windowed = (
            keyed.window(TumblingEventTimeWindows(SIZE))
            .allowed_lateness(20_000)
            .side_output_late_data(LATE)
            .pane_info()
        )
        if function == "reduce":
            return windowed.reduce(add)
        early = AnyOf(CountTrigger(3), EventTimeTrigger())
        return windowed.trigger(early).process(ContinuousCount(), output_schema="n bigint")

    streamed, replayed = streamed_and_replayed(spark, tmp_path, make_batches(seed=5), finish)
    assert streamed == replayed
    timings = Counter(r[-1] for r in streamed["results"])
    assert timings["ON_TIME"] >= 3 and timings["LATE"] >= 1, timings
    assert (timings["EARLY"] >= 1) == (function == "process"), timings
    # per key and window, the panes are numbered 0, 1, 2, ... in order of firing
    panes: dict[tuple[Any, ...], list[int]] = {}
    for r in streamed["results"]:
        panes.setdefault(r[:3], []).append(r[-2])
    assert all(sorted(p) == list(range(len(p))) for p in panes.values())


def test_checkpoints_of_layout_6_with_columnar_windows_still_load(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A key group's state of layout 6 (columnar windows of tumbling windows only, encoded
    without a kind) continues as it would have, and is rewritten in the current layout."""
    from windowing.engine.encoding import open_state
    from windowing.spark.streaming import checkpoint

    processor, handle = processor_of(spark, tmp_path, monkeypatch, lambda w: w.sum("amount"))
    call = functools.partial(call_processor, processor)
    assert call(0, [("a", 1, T0), ("b", 2, T0 + SIZE), ("a", 3, T0 + 5)]) == []
    scope = group_scope()
    plain, _ = open_state(handle.state.value[0], scope)
    _, _, key_groups, timer, items, windows, _ = plain
    assert windows is not None and items == []  # every key on columns
    layout_6_windows = open_state(windows, scope)[0]
    assert len(layout_6_windows) == 4  # ("open", starts, rows, fired watermark): no kind
    handle.state.value = (legacy_value(("group", 6, key_groups, timer, [], windows), []),)
    got = call(T0 + SIZE + 1 + SHIFT, [("b", 5, T0 + SIZE + 7)])
    assert got == [("a", T0, 4)]
    version, _, _, _, again, _ = checkpoint.decode_group(handle.state.value[0], scope)
    assert version == checkpoint.STATE_VERSION == 8
    assert again is not None and again.kind == "tumbling"
