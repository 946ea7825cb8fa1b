"""Idle keys (``WindowedStream.idle_timeout``): a key's windows close when its input goes
quiet, in streaming (the micro-batch clock, ``ProcessingTime`` mode) and in the batch replay
(the ``processing_time`` column); the key's clock survives a restart."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from pyspark import cloudpickle as spark_cloudpickle
from pyspark.sql import Row, SparkSession

from windowing import OutputTag
from windowing.assigners import TumblingEventTimeWindows, TumblingProcessingTimeWindows
from windowing.spark.streaming.query import write_results_and_late
from windowing.stream import BoundedOutOfOrderness, WindowedStream

pytestmark = pytest.mark.spark

spark_cloudpickle.register_pickle_by_value(sys.modules[__name__])  # type: ignore[no-untyped-call]

LATE = OutputTag("late")
SCHEMA = "user string, amount bigint, ts bigint, pt bigint"
T0 = 1_700_000_000_000
DELAY = 2_000
SIZE = 1_000
TIMEOUT = 3_000
TRIGGER_MS = 500


def total(a: Row, b: Row) -> Row:
    return Row(user=a.user, amount=a.amount + b.amount, ts=max(a.ts, b.ts), pt=max(a.pt, b.pt))


# ---------------------------------------------------------------------------- batch replay
def replay(spark: SparkSession, rows: list[tuple[Any, ...]], idle: int | None) -> Any:
    df = spark.createDataFrame(rows, SCHEMA)
    stream = (
        WindowedStream.from_dataframe(
            df,
            event_time="ts",
            watermark=BoundedOutOfOrderness(DELAY),
            arrival_order="pt",
            processing_time="pt",
        )
        .key_by("user")
        .window(TumblingEventTimeWindows(SIZE))
        .side_output_late_data(LATE)
    )
    if idle is not None:
        stream = stream.idle_timeout(idle)
    return stream.reduce(total)


def collect(result: Any) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    with result:
        results = sorted(tuple(r) for r in result.results.collect())
        late = sorted(tuple(r) for r in result.get_side_output(LATE).collect())
    return results, late


def test_batch_replay_closes_a_quiet_keys_windows(spark: SparkSession) -> None:
    rows = [
        ("a", 1, T0 + 100, 0),
        ("a", 2, T0 + 900, 0),
        ("b", 7, T0 + 50, 0),
        ("b", 8, T0 + 2_500, 1_000),  # the stream's watermark: T0 + 499 (a's T0 + 500 is on time)
        # a was quiet for 10 s: its watermark is T0 + 900 + 10_000 - DELAY - 1 before this row
        ("a", 4, T0 + 500, 10_000),
        ("a", 5, T0 + 9_500, 10_000),
    ]
    results, late = collect(replay(spark, rows, idle=TIMEOUT))
    idle_watermark = T0 + 900 + 10_000 - DELAY - 1
    assert late == [("a", 4, T0 + 500, 10_000, idle_watermark, "late")]
    assert ("a", T0, T0 + SIZE, 3, T0 + 900, 0, T0 + SIZE - 1) in results
    assert ("a", T0 + 9_000, T0 + 10_000, 5, T0 + 9_500, 10_000, T0 + 9_999) in results

    # without the timeout the quiet time changes nothing: the late row is on time
    results, late = collect(replay(spark, rows, idle=None))
    assert late == []
    assert ("a", T0, T0 + SIZE, 7, T0 + 900, 10_000, T0 + SIZE - 1) in results


def test_batch_replay_below_the_timeout_is_not_idle(spark: SparkSession) -> None:
    rows = [
        ("a", 1, T0 + 100, 0),
        ("a", 4, T0 + 500, TIMEOUT - 1),  # quiet for less than the timeout: on time
        ("a", 5, T0 + 600, 2 * TIMEOUT),  # quiet for the timeout since the last row: late
    ]
    results, late = collect(replay(spark, rows, idle=TIMEOUT))
    assert results == [("a", T0, T0 + SIZE, 5, T0 + 500, TIMEOUT - 1, T0 + SIZE - 1)]
    assert [(r[0], r[1], r[4]) for r in late] == [("a", 5, T0 + 500 + TIMEOUT + 1 - DELAY - 1)]


def test_idle_timeout_is_checked_before_any_job(spark: SparkSession) -> None:
    df = spark.createDataFrame([("a", 1, T0, 0)], SCHEMA)
    keyed = WindowedStream.from_dataframe(df, event_time="ts").key_by("user")
    windowed = keyed.window(TumblingEventTimeWindows(SIZE))
    with pytest.raises(ValueError, match="processing_time"):
        windowed.idle_timeout("3 seconds")
    with_pt = WindowedStream.from_dataframe(df, event_time="ts", processing_time="pt")
    tumbling = with_pt.key_by("user").window(TumblingEventTimeWindows(SIZE))
    with pytest.raises(ValueError, match=r"idle_timeout: timeout must be > 0, got 0"):
        tumbling.idle_timeout(0)
    with pytest.raises(ValueError, match="processing time"):
        with_pt.key_by("user").window(TumblingProcessingTimeWindows(SIZE)).idle_timeout(1_000)
    plan = str(tumbling.idle_timeout("3 seconds").plan())
    assert "quiet for 3000 ms" in plan and "'pt'" in plan


# ---------------------------------------------------------------------------- streaming
def write_file(directory: Path, index: int, rows: list[tuple[Any, ...]]) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    names = ("user", "amount", "ts", "pt")
    path = directory / f"part-{index:04d}.json"
    tmp = directory / f".part-{index:04d}.tmp"
    tmp.write_text("".join(json.dumps(dict(zip(names, r, strict=True))) + "\n" for r in rows))
    t = 1_600_000_000 + index * 10
    os.utime(tmp, (t, t))
    tmp.rename(path)  # the file source never sees a partial file


def streaming_result(spark: SparkSession, source: Path) -> Any:
    df = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).json(str(source))
    return (
        WindowedStream.from_dataframe(df, event_time="ts", watermark=BoundedOutOfOrderness(DELAY))
        .key_by("user")
        .window(TumblingEventTimeWindows(SIZE))
        .side_output_late_data(LATE)
        .idle_timeout(TIMEOUT)
        .reduce(total)
    )


def start(spark: SparkSession, source: Path, out: Path) -> Any:
    result = streaming_result(spark, source)
    assert result.time_mode == "ProcessingTime"
    return write_results_and_late(
        result,
        str(out / "results"),
        str(out / "late"),
        str(out / "checkpoint"),
        processing_time=f"{TRIGGER_MS} milliseconds",
    )


def read(spark: SparkSession, path: Path) -> list[Row]:
    if not list(path.glob("batch_id=*/*.parquet")):
        return []  # no micro-batch wrote rows yet
    return sorted(spark.read.parquet(str(path)).collect(), key=repr)


def wait_for(predicate: Any, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.2)


def batch_times(query: Any) -> dict[int, float]:
    """Micro-batch id -> its timestamp (epoch seconds)."""
    from datetime import datetime

    return {
        p["batchId"]: datetime.fromisoformat(p["timestamp"].replace("Z", "+00:00")).timestamp()
        for p in query.recentProgress
    }


def test_streaming_quiet_input_closes_windows_and_restart_keeps_the_clock(
    spark: SparkSession, tmp_path: Path
) -> None:
    src, out = tmp_path / "src", tmp_path / "out"
    write_file(src, 0, [("a", 1, T0 + 100, 0), ("a", 2, T0 + 900, 0), ("b", 7, T0 + 500, 0)])
    query = start(spark, src, out)
    try:
        # With the input quiet, only the keys' idle clocks move: both windows fire once the
        # keys have been quiet for the timeout (then T0 + 900 + 3_000 - DELAY - 1 > T0 + 999).
        wait_for(lambda: len(read(spark, out / "results")) == 2, 60)
        times = batch_times(query)
        fired = {r.batch_id for r in read(spark, out / "results")}
        assert len(fired) == 1
        fired_at = times[fired.pop()]
        data_at = times[0]
        assert fired_at - data_at >= TIMEOUT / 1000
        # ... in the first micro-batch whose clock is at least the timeout after the data's.
        # A micro-batch's clock (Spark's processing time, which the processor reads) is set
        # after its progress timestamp, within its trigger: the data's clock is at most the
        # first micro-batch's duration after data_at, so every micro-batch that did not fire
        # started less than the timeout plus that duration after it.
        first = min(query.recentProgress, key=lambda p: p["batchId"])
        slack = first["durationMs"]["triggerExecution"] / 1000
        earlier = [t for b, t in times.items() if data_at < t < fired_at]
        assert all(t - data_at < TIMEOUT / 1000 + slack for t in earlier)
        assert query.exception() is None
    finally:
        query.stop()
    got = {(r.user, r.window_start, r.amount) for r in read(spark, out / "results")}
    assert got == {("a", T0, 3), ("b", T0, 7)}

    # Restart from the checkpoint: nothing fires again, and a row for a's closed window is
    # late against a's own clock, which the checkpoint kept (the stream's watermark,
    # T0 + 900 - DELAY, would take it).
    write_file(src, 1, [("a", 4, T0 + 300, 0)])
    query = start(spark, src, out)
    try:
        wait_for(lambda: read(spark, out / "late"), 60)
        time.sleep(2 * TRIGGER_MS / 1000)
        assert query.exception() is None
    finally:
        query.stop()
    got = sorted((r.user, r.window_start, r.amount) for r in read(spark, out / "results"))
    assert got == [("a", T0, 3), ("b", T0, 7)]
    (late,) = read(spark, out / "late")
    assert (late.user, late.amount, late.late_reason) == ("a", 4, "late")
    assert late.late_watermark >= T0 + 900 + TIMEOUT - DELAY - 1

    # The batch replay with the rows' arrival times gives the same windows and late row.
    rows = [("a", 1, T0 + 100, 0), ("a", 2, T0 + 900, 0), ("b", 7, T0 + 500, 0)]
    results, late_rows = collect(replay(spark, [*rows, ("a", 4, T0 + 300, 60_000)], TIMEOUT))
    streamed = sorted(tuple(r)[:-1] for r in read(spark, out / "results"))  # no batch_id
    assert results == streamed
    assert [(r[0], r[1], r[5]) for r in late_rows] == [("a", 4, "late")]


def test_available_now_is_refused_where_it_would_never_end(
    spark: SparkSession, tmp_path: Path
) -> None:
    write_file(tmp_path / "src", 0, [("a", 1, T0, 0)])
    result = streaming_result(spark, tmp_path / "src")
    out = tmp_path / "out"
    with pytest.raises(ValueError, match="available_now=True never ends in ProcessingTime mode"):
        write_results_and_late(result, str(out / "r"), None, str(out / "c"), available_now=True)
    assert not out.exists()
    assert "time mode ProcessingTime" in str(result.plan)
