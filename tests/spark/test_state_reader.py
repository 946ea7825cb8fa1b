"""``StreamingWindowedResult.read_state``: the open windows of a stopped query's checkpoint,
per key and window, with their contents, pending timers and the watermark."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from pyspark import cloudpickle as spark_cloudpickle
from pyspark.sql import SparkSession

from windowing.assigners import (
    EventTimeSessionWindows,
    HoppingEventTimeWindows,
    TumblingEventTimeWindows,
)
from windowing.functions import AggregateFunction, ProcessWindowFunction
from windowing.spark.planning import ColumnarShape
from windowing.spark.streaming.query import METRICS_NAME, write_results_and_late
from windowing.spark.streaming.state_reader import STATE_COLUMNS
from windowing.stream import BoundedOutOfOrderness, WindowedStream

pytestmark = pytest.mark.spark

spark_cloudpickle.register_pickle_by_value(sys.modules[__name__])  # type: ignore[no-untyped-call]

SCHEMA = "user string, amount bigint, ts bigint"


class Count(ProcessWindowFunction):
    def process(self, key: Any, context: Any, elements: Any) -> Any:
        yield len(list(elements))


class SumAndCount(AggregateFunction):
    """An accumulator that is a list of two numbers, not two elements."""

    def create_accumulator(self) -> list[int]:
        return [0, 0]

    def add(self, value: Any, acc: list[int]) -> list[int]:
        return [acc[0] + value.amount, acc[1] + 1]

    def get_result(self, acc: list[int]) -> tuple[int, int]:
        return (acc[0], acc[1])

    def merge(self, a: list[int], b: list[int]) -> list[int]:
        return [a[0] + b[0], a[1] + b[1]]


def keep_first(a: Any, b: Any) -> Any:
    return a


def count_with_lateness(keyed: Any) -> Any:
    """Tumbling windows of 5 s with 2 s of allowed lateness, counting with a process
    function (windows keep their elements)."""
    window = keyed.window(TumblingEventTimeWindows(5_000)).allowed_lateness(2_000)
    return window.process(Count(), output_schema="n bigint")


def reduce_with_lateness(keyed: Any) -> Any:
    """The windows of :func:`count_with_lateness` with a reduce (one reduced row each)."""
    return keyed.window(TumblingEventTimeWindows(5_000)).allowed_lateness(2_000).reduce(keep_first)


def aggregate_with_lateness(keyed: Any) -> Any:
    """The windows of :func:`count_with_lateness` with an aggregate (one accumulator each)."""
    window = keyed.window(TumblingEventTimeWindows(5_000)).allowed_lateness(2_000)
    return window.aggregate(SumAndCount(), output_schema="total bigint, n bigint")


#: Two files, two micro-batches: the second moves the watermark to 12_000 - 1_000.
BATCHES = [
    [("a", 1, 1_000), ("a", 2, 3_000), ("b", 3, 4_000), ("a", 4, 6_000)],
    [("b", 5, 12_000), ("a", 6, 11_000), ("c", 7, 14_500)],
]


def _run(
    spark: SparkSession, tmp_path: Path, build: Any, batches: list[list[Any]] = BATCHES
) -> tuple[Any, str]:
    result, checkpoint, _ = _run_query(spark, tmp_path, build, batches)
    return result, checkpoint


def _run_query(
    spark: SparkSession, tmp_path: Path, build: Any, batches: list[list[Any]] = BATCHES
) -> tuple[Any, str, Any]:
    src = tmp_path / "src"
    src.mkdir()
    for i, batch in enumerate(batches):
        path = src / f"part-{i}.json"
        path.write_text(
            "".join(
                json.dumps(dict(zip(("user", "amount", "ts"), r, strict=True))) + "\n"
                for r in batch
            )
        )
        os.utime(path, (1_600_000_000 + i, 1_600_000_000 + i))
    df = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).json(str(src))
    stream = WindowedStream.from_dataframe(
        df, event_time="ts", watermark=BoundedOutOfOrderness(1_000)
    ).key_by("user")
    result = build(stream)
    checkpoint = str(tmp_path / "checkpoint")
    query = write_results_and_late(
        result, str(tmp_path / "r"), None, checkpoint, available_now=True
    )
    query.awaitTermination(300)
    assert query.exception() is None
    return result, checkpoint, query


@pytest.mark.parametrize(
    ("build", "form"),
    [
        (count_with_lateness, "elements"),
        (reduce_with_lateness, "accumulator"),
        (aggregate_with_lateness, "accumulator"),
    ],
    ids=["process", "reduce", "aggregate"],
)
def test_read_state_of_a_stopped_query(
    spark: SparkSession, tmp_path: Path, build: Any, form: str
) -> None:
    """Each open window with the rows it took in, whatever its state holds: the elements,
    or one accumulator (a list of two numbers here, not two elements)."""
    result, checkpoint = _run(spark, tmp_path, build)
    state = result.read_state(checkpoint)
    assert state.columns == ["user", *STATE_COLUMNS]
    rows = sorted(
        (
            r.user,
            r.window_start,
            r.window_end,
            r.state_form,
            r.num_rows_in,
            r.num_stored_elements,
            list(r.event_timers),
            list(r.processing_timers),
        )
        for r in state.collect()
    )
    # watermark after the last data batch: 14_500 - 1_000 - 1 (the operator's, Flink's)
    watermarks = {r.watermark for r in state.collect()}
    batch_ids = {r.batch_id for r in state.collect()}
    assert len(watermarks) == 1 and len(batch_ids) == 1
    (wm,) = watermarks
    # Open: windows not yet cleaned up (end - 1 + lateness > wm); fired ones keep only their
    # cleanup timer, unfired ones both.
    expected = []
    contents = {
        ("a", 0): 2,
        ("a", 5_000): 1,
        ("b", 0): 1,
        ("a", 10_000): 1,
        ("b", 10_000): 1,
        ("c", 10_000): 1,
    }
    for (user, start), n in sorted(contents.items()):
        end = start + 5_000
        cleanup = end - 1 + 2_000
        if cleanup <= wm:
            continue
        timers = ([end - 1] if end - 1 > wm else []) + [cleanup]
        stored = n if form == "elements" else None
        expected.append((user, start, end, form, n, stored, timers, []))
    assert rows == sorted(expected)
    assert rows  # some windows are open
    with pytest.raises(ValueError, match="has no committed micro-batch"):
        result.read_state(str(tmp_path / "nothing")).collect()


def test_read_state_of_sessions_and_aggregates(spark: SparkSession, tmp_path: Path) -> None:
    result, checkpoint = _run(
        spark, tmp_path, lambda s: s.window(EventTimeSessionWindows(3_000)).sum("amount")
    )
    rows = sorted(
        (r.user, r.window_start, r.window_end, r.state_form, r.num_stored_elements)
        for r in result.read_state(checkpoint).collect()
    )
    # sessions still open at the watermark 13_499: b [12000, 15000), a [11000, 14000),
    # c [14500, 17500); each keeps one reduced row
    assert rows == [
        ("a", 11_000, 14_000, "accumulator", None),
        ("b", 12_000, 15_000, "accumulator", None),
        ("c", 14_500, 17_500, "accumulator", None),
    ]


def test_read_state_counts_the_rows_of_merged_sessions(spark: SparkSession, tmp_path: Path) -> None:
    """Sessions merged within a micro-batch and across micro-batches (a row bridging two
    sessions) took in the rows of all their parts."""
    batches = [
        [("a", 1, 1_000), ("a", 2, 2_500), ("b", 3, 1_000)],
        # a: [1000, 5500) grows to [1000, 7000); b: [5000, 8000) is bridged to [1000, 4000)
        [("a", 4, 4_000), ("b", 5, 5_000), ("b", 6, 3_500)],
    ]
    result, checkpoint = _run(
        spark,
        tmp_path,
        lambda s: s.window(EventTimeSessionWindows(3_000)).reduce(keep_first),
        batches,
    )
    rows = sorted(
        (r.user, r.window_start, r.window_end, r.state_form, r.num_rows_in, r.num_stored_elements)
        for r in result.read_state(checkpoint).collect()
    )
    assert rows == [
        ("a", 1_000, 7_000, "accumulator", 3, None),
        ("b", 1_000, 8_000, "accumulator", 3, None),
    ]
    # after the first micro-batch: a's session of two rows, b's of one
    first = sorted(
        (r.user, r.window_start, r.window_end, r.num_rows_in)
        for r in result.read_state(checkpoint, batch_id=0).collect()
    )
    assert first == [("a", 1_000, 5_500, 2), ("b", 1_000, 4_000, 1)]


def test_read_state_of_columnar_windows_and_an_earlier_batch(
    spark: SparkSession, tmp_path: Path
) -> None:
    result, checkpoint = _run(
        spark, tmp_path, lambda s: s.window(TumblingEventTimeWindows(5_000)).sum("amount")
    )
    assert result.plan.columnar is not None  # the columnar streaming state
    last = result.read_state(checkpoint).collect()
    (wm,) = {r.watermark for r in last}
    rows = sorted((r.user, r.window_start, r.state_form, list(r.event_timers)) for r in last)
    assert rows == [
        (u, s, "accumulator", [s + 4_999]) for u, s in [("a", 10_000), ("b", 10_000), ("c", 10_000)]
    ]
    assert wm == 13_499
    # after micro-batch 0 nothing had fired (no watermark yet)
    first = result.read_state(checkpoint, batch_id=0).collect()
    assert {r.batch_id for r in first} == {0}
    assert {r.watermark for r in first} == {None}
    assert sorted((r.user, r.window_start) for r in first) == [("a", 0), ("a", 5_000), ("b", 0)]


def test_read_state_of_hopping_windows_on_columns(spark: SparkSession, tmp_path: Path) -> None:
    """The columnar state of hopping windows holds panes; the state lists the windows the
    operator would hold: those with a pane that are not cleaned up."""
    result, checkpoint = _run(
        spark,
        tmp_path,
        lambda s: s.window(HoppingEventTimeWindows(5_000, 1_000)).sum("amount"),
    )
    assert result.plan.columnar_shape is ColumnarShape.HOPPING
    last = result.read_state(checkpoint).collect()
    assert {r.watermark for r in last} == {13_499}
    rows = sorted(
        (r.user, r.window_start, r.window_end, r.state_form, list(r.event_timers)) for r in last
    )
    # windows ending after the watermark with an element: a@11000, b@12000, c@14500
    starts = {"a": [9_000, 10_000, 11_000], "b": [9_000, 10_000, 11_000, 12_000]}
    starts["c"] = [10_000, 11_000, 12_000, 13_000, 14_000]
    expected = [
        (u, s, s + 5_000, "accumulator", [s + 4_999]) for u, ss in starts.items() for s in ss
    ]
    assert rows == sorted(expected)


def test_gauges_in_the_query_progress(spark: SparkSession, tmp_path: Path) -> None:
    """Each micro-batch reports the watermark lag, the state it wrote and the open windows
    of the key groups it called; where it called every group holding state, the open
    windows are those read_state lists for that batch."""
    result, checkpoint, query = _run_query(
        spark,
        tmp_path,
        count_with_lateness,
    )
    progress = {p["batchId"]: p["observedMetrics"][METRICS_NAME] for p in query.recentProgress}
    first, second = progress[0], progress[1]
    # batch 0: rows up to ts 6_000, no watermark yet; batch 1: newest 14_500, the watermark
    # from batch 0 (6_000 - 1_000 - 1)
    assert first["watermark_lag_ms"] is None
    assert second["watermark_lag_ms"] == 14_500 - (6_000 - 1_000 - 1)
    for batch, metrics in ((0, first), (1, second)):
        assert metrics["state_bytes"] > 0
        assert metrics["max_key_group_state_bytes"] <= metrics["state_bytes"]
        assert metrics["open_windows"] == result.read_state(checkpoint, batch).count()
    assert (first["open_windows"], second["open_windows"]) == (3, 6)
