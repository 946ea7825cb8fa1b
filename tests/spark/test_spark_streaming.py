"""Structured Streaming runtime (``windowing.spark.streaming``) == the batch replay.

JSON files are written to a directory and read with ``maxFilesPerTrigger=1``, so file ``i`` is
micro-batch ``i``; the batch replay with ``arrival_order`` = the file index sees exactly the
watermarks the streaming query sees. A final "sentinel" key far in the future advances the
watermark past every window, so all windows of the other keys fire in streaming too.
"""

from __future__ import annotations

import json
import os
import random
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from pyspark import cloudpickle as spark_cloudpickle
from pyspark.sql import DataFrame, Row, SparkSession

from assigners import TumblingEventTimeWindows
from windowing import OutputTag
from windowing.spark.streaming import write_results_and_late
from windowing.stream import BoundedOutOfOrderness, WindowedStream

pytestmark = pytest.mark.spark

spark_cloudpickle.register_pickle_by_value(sys.modules[__name__])  # type: ignore[no-untyped-call]

LATE = OutputTag("late")
SCHEMA = "user string, amount bigint, ts bigint, batch bigint"
T0 = 1_700_000_000_000
DELAY = 2_000
SIZE = 10_000
SENTINEL = "~sentinel"


def add(a: Row, b: Row) -> Row:
    return Row(
        user=a.user,
        amount=(a.amount * 31 + b.amount) % 1_000_003,  # order-sensitive on purpose
        ts=max(a.ts, b.ts),
        batch=max(a.batch, b.batch),
    )


def make_batches(seed: int, n_batches: int = 4) -> list[list[dict[str, Any]]]:
    """Mostly in order, some rows out of order by less than the delay, some late; then a
    sentinel batch that moves the watermark past every window."""
    rng = random.Random(seed)
    batches = []
    for b in range(n_batches):
        rows = []
        for i in range(12):
            ts = T0 + b * 6_000 + rng.randint(-1_500, 1_500)
            if rng.random() < 0.1 or (b >= 2 and i == 0):
                ts -= 15_000  # late
            rows.append({"user": rng.choice("abc"), "amount": rng.randint(1, 9), "ts": ts})
        batches.append(rows)
    far = T0 + n_batches * 6_000 + 100_000
    # The watermark it sets applies from the next batch: availableNow runs one last no-data
    # batch for it, whose expired timers fire every other window.
    batches.append([{"user": SENTINEL, "amount": 0, "ts": far}])
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


def run(spark: SparkSession, source: Path, out: Path) -> None:
    result = build(spark, source)
    query = write_results_and_late(
        result,
        str(out / "results"),
        str(out / "late"),
        str(out / "checkpoint"),
        available_now=True,
    )
    query.awaitTermination()
    assert query.exception() is None


def read(spark: SparkSession, path: Path) -> list[tuple[Any, ...]]:
    if not path.exists():
        return []
    df = spark.read.parquet(str(path)).drop("batch_id")
    return sorted(tuple(r) for r in df.collect() if r["user"] != SENTINEL)


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
        late = sorted(tuple(r) for r in result.get_side_output(LATE).collect())
    return res, late


def frame_rows(df: DataFrame) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in df.collect())


@pytest.fixture(scope="module")
def uninterrupted(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Any:
    batches = make_batches(7)
    base = tmp_path_factory.mktemp("stream_full")
    write_files(base / "src", batches)
    run(spark, base / "src", base / "out")
    return batches, read(spark, base / "out" / "results"), read(spark, base / "out" / "late")


def test_streaming_equals_batch_replay(spark: SparkSession, uninterrupted: Any) -> None:
    batches, results, late = uninterrupted
    expected_results, expected_late = batch_expected(spark, batches)
    assert results
    assert late, "the generated input has late rows"
    assert Counter(results) == Counter(expected_results)
    assert Counter(late) == Counter(expected_late)


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
    batches, results, late = uninterrupted
    src, out = tmp_path / "src", tmp_path / "out"
    write_files(src, batches[:3])
    run(spark, src, out)
    first = read(spark, out / "results")
    write_files(src, batches[3:], first=3)
    run(spark, src, out)  # same checkpoint: continues with the new files
    assert len(first) < len(results)
    assert Counter(read(spark, out / "results")) == Counter(results)
    assert Counter(read(spark, out / "late")) == Counter(late)
