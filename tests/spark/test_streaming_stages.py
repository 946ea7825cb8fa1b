"""Consecutive windowed operations in one streaming query (Flink's "consecutive windowed
operations"): a keyed tumbling sum, then a non-keyed tumbling max over its results (and a
third stage over those), in ONE query, equal to the batch replay of the same input, with
each stage's metrics under its own name, and a restart from the checkpoint equal to an
uninterrupted run.

JSON files are read one per micro-batch; the first stage's batch replay uses the file index
as ``arrival_order`` (the watermarks the stream sees), the later stages replay its results.
A last "sentinel" row far in the future moves the watermark past every window.
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
from pyspark.sql import functions as F  # noqa: N812

from windowing import OutputTag
from windowing.assigners import TumblingEventTimeWindows
from windowing.errors import EventTimeUnitWarning
from windowing.functions import AggregateFunction
from windowing.spark.streaming import write_results_and_late
from windowing.spark.streaming.checkpoint import JobChangedError
from windowing.stream import BoundedOutOfOrderness, DataStream, WindowedStream

pytestmark = pytest.mark.spark

spark_cloudpickle.register_pickle_by_value(sys.modules[__name__])  # type: ignore[no-untyped-call]

SCHEMA = "user string, amount bigint, ts bigint, batch bigint"
T0 = 1_700_000_000_000
DELAY = 2_000
SIZE = 5_000
LATE = OutputTag("late")
#: The sentinel's event time: its windows never fire in streaming (nothing moves past them).
FAR = T0 + 200_000


def make_batches(seed: int, n_batches: int = 5) -> list[list[dict[str, Any]]]:
    """Rows mostly in order, some out of order within the delay, a few late (the first
    stage's late side output); then the sentinel."""
    rng = random.Random(seed)
    batches = []
    for b in range(n_batches):
        rows = []
        for i in range(10):
            ts = T0 + b * 4_000 + rng.randint(-1_500, 1_500)
            if b >= 2 and i == 0:
                ts -= 12_000  # late for the first stage
            rows.append({"user": rng.choice("abcd"), "amount": rng.randint(1, 50), "ts": ts})
        batches.append(rows)
    batches.append([{"user": "~sentinel", "amount": 0, "ts": FAR}])
    for b, rows in enumerate(batches):
        for r in rows:
            r["batch"] = b
    return batches


def write_files(directory: Path, batches: list[list[dict[str, Any]]], first: int = 0) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for i, rows in enumerate(batches, start=first):
        path = directory / f"part-{i:04d}.json"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        t = 1_600_000_000 + i * 10  # the file source's order
        os.utime(path, (t, t))


class Spread(AggregateFunction):
    """The maxima of a window and their spread: (count, smallest, largest)."""

    def create_accumulator(self) -> tuple[int, int, int]:
        return (0, 2**62, -(2**62))

    def add(self, value: Any, acc: tuple[int, int, int]) -> tuple[int, int, int]:
        return (acc[0] + 1, min(acc[1], value.amount), max(acc[2], value.amount))

    def get_result(self, acc: tuple[int, int, int]) -> tuple[int, int, int]:
        return acc

    def merge(self, a: tuple[int, int, int], b: tuple[int, int, int]) -> tuple[int, int, int]:
        return (a[0] + b[0], min(a[1], b[1]), max(a[2], b[2]))


def first_stage(
    df: DataFrame, *, arrival: bool = False, size: int = SIZE, unit: str | None = None
) -> Any:
    """The keyed tumbling sum per user (Flink's docs: ``keyBy(...).window(...).reduce``)."""
    return (
        WindowedStream.from_dataframe(
            df,
            event_time="ts",
            event_time_unit=unit,
            watermark=BoundedOutOfOrderness(DELAY),
            arrival_order="batch" if arrival else None,
        )
        .key_by("user")
        .window(TumblingEventTimeWindows(size))
        .side_output_late_data(LATE)
        .sum("amount")
    )


def next_stage_input(result: Any) -> DataFrame:
    """A reduce's results as the next stage's input: its event time is the result's
    ``max_timestamp`` (the window's end - 1), renamed ``at``."""
    return result.results.select("user", "amount", F.col("max_timestamp").alias("at"))


def second_stage(first: Any, unit: str | None = None) -> Any:
    """The non-keyed tumbling max of the sums (Flink's docs: ``windowAll(...)``)."""
    return (
        DataStream.from_dataframe(next_stage_input(first), event_time="at", event_time_unit=unit)
        .window_all(TumblingEventTimeWindows(SIZE))
        .max("amount")
    )


def third_stage(second: Any) -> Any:
    """The spread of the maxima over windows twice as long."""
    return (
        DataStream.from_dataframe(next_stage_input(second), event_time="at")
        .window_all(TumblingEventTimeWindows(2 * SIZE))
        .aggregate(Spread(), output_schema="n bigint, lowest bigint, highest bigint")
    )


def stream(spark: SparkSession, source: Path) -> DataFrame:
    return spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).json(str(source))


def run(last: Any, out: Path, *, late: bool = False) -> Any:
    """Run ``last`` until the input is exhausted, its results (and, ``late``, its late rows)
    under ``out``."""
    late_path = str(out / "late") if late else None
    query = write_results_and_late(
        last, str(out / "results"), late_path, str(out / "checkpoint"), available_now=True
    )
    query.awaitTermination()
    assert query.exception() is None
    return query


def rows(df: DataFrame, per_ms: int = 1) -> Counter[tuple[Any, ...]]:
    """The rows of windows before the sentinel's (which only the batch replay fires), their
    times in a unit of ``per_ms`` milliseconds."""
    found = df.where(F.col("window_end") <= F.lit((FAR - 2 * SIZE) // per_ms)).drop("batch_id")
    return Counter(tuple(r) for r in found.select(sorted(found.columns)).collect())


def written(spark: SparkSession, out: Path, per_ms: int = 1) -> Counter[tuple[Any, ...]]:
    return rows(spark.read.parquet(str(out / "results")), per_ms)


def batch_replay(spark: SparkSession, batches: list[list[dict[str, Any]]], n: int) -> Any:
    """The last of ``n`` stages replayed in batch over all the rows."""
    df = spark.createDataFrame([Row(**r) for b in batches for r in b], SCHEMA)
    result = first_stage(df, arrival=True)
    if n >= 2:
        result = second_stage(result)
    if n >= 3:
        result = third_stage(result)
    return rows(result.results)


def totals(query: Any, name: str) -> Counter[str]:
    found: Counter[str] = Counter()
    for progress in query.recentProgress:
        metrics = progress["observedMetrics"].get(name)
        if metrics is not None:
            found.update({k: v for k, v in metrics.asDict().items() if k.startswith("num_") and v})
    return found


@pytest.fixture(scope="module")
def batches() -> list[list[dict[str, Any]]]:
    return make_batches(3)


@pytest.fixture(scope="module")
def two_stages(
    spark: SparkSession, batches: list[list[dict[str, Any]]], tmp_path_factory: Any
) -> Any:
    base = tmp_path_factory.mktemp("two_stages")
    write_files(base / "src", batches)
    first = first_stage(stream(spark, base / "src"))
    second = second_stage(first)
    query = run(second, base / "out")
    return first, second, query, written(spark, base / "out")


def test_two_stages_equal_the_batch_replay(
    spark: SparkSession, batches: list[list[dict[str, Any]]], two_stages: Any
) -> None:
    first, second, _, results = two_stages
    expected = batch_replay(spark, batches, 2)
    assert len(expected) >= 5
    assert results == expected
    assert second.upstream == (first,) and second.stages == (first, second)
    assert second.plan.columnar is None  # a later stage runs key by key: rows first
    assert "first stage" in second.plan.reason


def test_each_stage_reports_its_own_metrics(
    batches: list[list[dict[str, Any]]], two_stages: Any
) -> None:
    first, second, query, results = two_stages
    assert (first.metrics_name, second.metrics_name) == ("windowing", "windowing_2")
    assert list(query.stage_metrics()) == ["windowing", "windowing_2"]
    one, two = totals(query, "windowing"), totals(query, "windowing_2")
    assert one["num_input_rows"] == sum(len(b) for b in batches)
    assert one["num_late_records_side_output"] > 0
    # the second stage's input is the first's results, no more, no less, and none is late
    assert two["num_input_rows"] == one["num_results"]
    assert two["num_late_records_side_output"] + two["num_late_records_dropped"] == 0
    assert two["num_results"] == sum(results.values())
    for progress in query.recentProgress:
        by_stage = query.stage_metrics(progress)
        assert by_stage["windowing"] == first.observed_metrics(progress)
        # results reach the second stage in the micro-batch that fired them, and each
        # window the second stage can fire fires then too (the watermark is the same)
        assert by_stage["windowing_2"]["num_input_rows"] == by_stage["windowing"]["num_results"]


def test_three_stages_equal_the_batch_replay(
    spark: SparkSession, batches: list[list[dict[str, Any]]], tmp_path: Path
) -> None:
    write_files(tmp_path / "src", batches)
    first = first_stage(stream(spark, tmp_path / "src"))
    third = third_stage(second_stage(first))
    query = run(third, tmp_path / "out")
    expected = batch_replay(spark, batches, 3)
    assert len(expected) >= 2
    assert written(spark, tmp_path / "out") == expected
    assert [s.metrics_name for s in third.stages] == ["windowing", "windowing_2", "windowing_3"]
    assert list(query.stage_metrics()) == ["windowing", "windowing_2", "windowing_3"]
    assert (
        totals(query, "windowing_3")["num_input_rows"]
        == totals(query, "windowing_2")["num_results"]
    )


def test_a_restart_of_two_stages_equals_an_uninterrupted_run(
    spark: SparkSession,
    batches: list[list[dict[str, Any]]],
    two_stages: Any,
    tmp_path: Path,
) -> None:
    """Each stage's state (two operators of one checkpoint) survives a restart: the results
    equal the uninterrupted run's; the checkpoint records both stages, and a changed first
    stage is refused before the query starts."""
    _, _, _, uninterrupted = two_stages
    src, out = tmp_path / "src", tmp_path / "out"
    write_files(src, batches[:3])
    first = first_stage(stream(spark, src))
    run(second_stage(first), out)
    before = written(spark, out)
    open_windows = first.read_state(str(out / "checkpoint"))
    assert "user" in open_windows.columns and open_windows.count() > 0
    record = json.loads((out / "checkpoint" / "windowing" / "job.json").read_text())
    assert [s["job"]["keys"] for s in record["stages"]] == [[["user", "string"]]]
    assert record["job"]["keys"] == []
    write_files(src, batches[3:], first=3)
    changed = first_stage(stream(spark, src), size=2 * SIZE)
    with pytest.raises(JobChangedError, match=r"stage 1 of 2"):
        run(second_stage(changed), out)
    again = first_stage(stream(spark, src))
    run(second_stage(again), out)
    assert 0 < sum(before.values()) < sum(uninterrupted.values())
    assert written(spark, out) == uninterrupted


def test_a_later_stage_takes_the_first_stages_watermark(
    spark: SparkSession, tmp_path: Path
) -> None:
    """A later stage defines no watermark of its own (Spark allows one per query path):
    a delay or an idle timeout of its own is refused before any Spark job."""
    write_files(tmp_path / "src", make_batches(1, 1))
    results = next_stage_input(first_stage(stream(spark, tmp_path / "src")))
    with pytest.raises(ValueError, match=r"watermark=BoundedOutOfOrderness.*leave watermark= out"):
        DataStream.from_dataframe(
            results, event_time="at", watermark=BoundedOutOfOrderness(1_000)
        ).window_all(TumblingEventTimeWindows(SIZE)).max("amount")
    with pytest.raises(ValueError, match=r"idle_timeout.*first stage"):
        DataStream.from_dataframe(results, event_time="at").window_all(
            TumblingEventTimeWindows(SIZE)
        ).idle_timeout("10 seconds").max("amount")


def other_batches(batches: list[list[dict[str, Any]]]) -> list[list[dict[str, Any]]]:
    """A second input beside ``batches``: per micro-batch a few rows of its users at times
    from just before its start to past its largest (so this input's watermark never holds
    the first input's back, and none of its rows is late), then the same sentinel."""
    rng = random.Random(7)
    out = []
    for b in range(len(batches) - 1):
        out.append(
            [
                {
                    "user": rng.choice("abcd"),
                    "amount": 100 + i,
                    "ts": T0 + b * 4_000 + t,
                    "batch": b,
                }
                for i, t in enumerate(sorted(rng.randint(-500, 1_600) for _ in range(4)))
            ]
        )
    out.append([{"user": "~sentinel", "amount": 0, "ts": FAR, "batch": len(batches) - 1}])
    return out


def pairs_of(stage: Any, other: DataFrame) -> Any:
    """A window join of the first stage's sums (at their ``max_timestamp``) with the other
    input's rows, per user and tumbling window of 2 x ``SIZE``: (sum, amount) per pair."""
    sums = DataStream.from_dataframe(next_stage_input(stage), event_time="at")
    rows = DataStream.from_dataframe(other, event_time="ts", watermark=BoundedOutOfOrderness(DELAY))
    return (
        sums.join(rows)
        .where("user")
        .equal_to("user")
        .window(TumblingEventTimeWindows(2 * SIZE))
        .side_output_late_data(LATE)
        .apply(lambda s, r: (s.amount, r.amount), output_schema="total bigint, amount bigint")
    )


def test_a_join_of_an_earlier_stages_results(
    spark: SparkSession, batches: list[list[dict[str, Any]]], tmp_path: Path
) -> None:
    """A streaming window join takes an earlier window's results of the same query as an
    input (Flink's window join after a window): that input has the earlier stage's
    watermark, the other its own, and the join the smaller (Spark's global watermark with
    the policy ``min``). Each micro-batch the join takes the earlier stage's results first
    (what it emitted as the watermark passed its windows), then fires, then takes the other
    input's rows. With nothing late at the join, its pairs are the batch join of the first
    stage's batch replay with the other input."""
    others = other_batches(batches)
    write_files(tmp_path / "src", batches)
    write_files(tmp_path / "other", others)
    first = first_stage(stream(spark, tmp_path / "src"))
    joined = pairs_of(first, stream(spark, tmp_path / "other"))
    assert joined.config.later_sides == ("left",)
    run(joined, tmp_path / "out", late=True)
    streamed = written(spark, tmp_path / "out")

    static = spark.createDataFrame([Row(**r) for b in batches for r in b], SCHEMA)
    other = spark.createDataFrame([Row(**r) for b in others for r in b], SCHEMA)
    replayed = pairs_of(first_stage(static, arrival=True), other)
    expected = rows(replayed.results)
    assert len(expected) > 10
    assert streamed == expected
    late = tmp_path / "out" / "late"
    assert not late.exists() or spark.read.parquet(str(late)).count() == 0


def test_a_join_of_an_earlier_stages_results_takes_its_rows_first(
    spark: SparkSession, tmp_path: Path
) -> None:
    """In the micro-batch where the earlier stage emits a window's result, the join takes
    that result before the watermark moves, and the other input's row of the same micro-batch
    after: a row of the other input behind the new watermark is late (the late side output),
    the earlier stage's result is not."""
    # micro-batch 2 (its watermark from batch 1): stage 1 emits the sum of [T0, T0 + SIZE),
    # which the join takes, then fires its window [T0, T0 + 2 SIZE) with the other input's
    # row at T0; micro-batch 3 (after the sentinels): stage 1 emits the sum of
    # [T0 + 3 SIZE, T0 + 4 SIZE), which the join pairs with the row at T0 + 3 SIZE, and the
    # other input's row at T0 + 1 comes after its window fired: late
    first_rows = [
        [{"user": "a", "amount": 1, "ts": T0, "batch": 0}],
        [{"user": "a", "amount": 2, "ts": T0 + 3 * SIZE, "batch": 1}],
        [{"user": "~sentinel", "amount": 0, "ts": FAR, "batch": 2}],
        [{"user": "~sentinel", "amount": 0, "ts": FAR, "batch": 3}],
    ]
    other_rows = [
        [{"user": "a", "amount": 10, "ts": T0, "batch": 0}],
        [{"user": "a", "amount": 20, "ts": T0 + 3 * SIZE, "batch": 1}],
        [{"user": "~sentinel", "amount": 0, "ts": FAR, "batch": 2}],
        [{"user": "a", "amount": 30, "ts": T0 + 1, "batch": 3}],
    ]
    write_files(tmp_path / "src", first_rows)
    write_files(tmp_path / "other", other_rows)
    first = first_stage(stream(spark, tmp_path / "src"))
    joined = pairs_of(first, stream(spark, tmp_path / "other"))
    run(joined, tmp_path / "out", late=True)
    results = spark.read.parquet(str(tmp_path / "out" / "results"))
    got = sorted((r.user, r.total, r.amount) for r in results.collect() if r.user == "a")
    # the first window's sum (1) pairs with the other input's row at T0 (10); the second
    # window's sum (2) with the row at T0 + 3 SIZE (20)
    assert got == [("a", 1, 10), ("a", 2, 20)]
    late = spark.read.parquet(str(tmp_path / "out" / "late")).collect()
    assert [(r.right.amount if r.right else None) for r in late] == [30]


def test_an_interval_join_of_an_earlier_stages_results_is_refused(
    spark: SparkSession, tmp_path: Path
) -> None:
    """An interval join (its own runtime) does not take an earlier window's results of the
    same query: refused before any Spark job, naming the side. A window join's side that
    sets a watermark of its own is refused too (it has the earlier stage's)."""
    write_files(tmp_path / "src", make_batches(1, 1))
    results = DataStream.from_dataframe(
        next_stage_input(first_stage(stream(spark, tmp_path / "src"))), event_time="at"
    )
    raw = DataStream.from_dataframe(stream(spark, tmp_path / "src"), event_time="ts")
    with pytest.raises(ValueError, match=r"interval_join: the right input holds an earlier"):
        raw.key_by("user").interval_join(results.key_by("user")).between(-1_000, 1_000).process(
            lambda a, b: (a.amount,), output_schema="amount bigint"
        )
    delayed = DataStream.from_dataframe(
        next_stage_input(first_stage(stream(spark, tmp_path / "src"))),
        event_time="at",
        watermark=BoundedOutOfOrderness(1_000),
    )
    with pytest.raises(ValueError, match=r"join: the left input: watermark=.*leave watermark="):
        delayed.co_group(raw).where("user").equal_to("user").window(
            TumblingEventTimeWindows(SIZE)
        ).apply(lambda k, a, b: [(len(list(a)),)], output_schema="n bigint")


# ---------------------------------------------------------------------------- units
def in_seconds(batches: list[list[dict[str, Any]]]) -> list[list[dict[str, Any]]]:
    return [[{**r, "ts": r["ts"] // 1_000} for r in b] for b in batches]


def test_two_stages_in_seconds_equal_the_batch_replay(
    spark: SparkSession, batches: list[list[dict[str, Any]]], tmp_path: Path
) -> None:
    """The first stage's result times are in seconds, and the second stage declares them:
    its rows (a window's last second, on the millisecond clock its first millisecond) are
    never late, and the results equal the batch replay in seconds."""
    seconds = in_seconds(batches)
    write_files(tmp_path / "src", seconds)
    first = first_stage(stream(spark, tmp_path / "src"), unit="s")
    second = second_stage(first, "s")
    query = run(second, tmp_path / "out")
    df = spark.createDataFrame([Row(**r) for b in seconds for r in b], SCHEMA)
    expected = rows(second_stage(first_stage(df, arrival=True, unit="s"), "s").results, 1_000)
    assert len(expected) >= 5
    assert written(spark, tmp_path / "out", 1_000) == expected
    widths = spark.read.parquet(str(tmp_path / "out" / "results")).select(
        F.col("window_end") - F.col("window_start")
    )
    assert {r[0] for r in widths.collect()} == {SIZE // 1_000}  # in seconds
    two = totals(query, "windowing_2")
    assert two["num_input_rows"] == totals(query, "windowing")["num_results"] > 0
    assert two["num_late_records_side_output"] + two["num_late_records_dropped"] == 0


def test_a_later_stage_declares_the_unit_of_the_results_it_reads(
    spark: SparkSession, tmp_path: Path
) -> None:
    """After a stage in seconds, a later stage of an integral event time without a unit
    would read seconds as milliseconds, far behind the watermark: refused before the query
    starts. A declared unit is taken as given."""
    write_files(tmp_path / "src", in_seconds(make_batches(1, 1)))
    first = first_stage(stream(spark, tmp_path / "src"), unit="s")
    with pytest.raises(
        ValueError,
        match=r"event_time_unit: this stream is the results of an earlier window, whose times "
        r"are epoch seconds \(the event_time_unit='s' of its input\).*pass event_time_unit='s'",
    ):
        second_stage(first)
    assert second_stage(first, "s").upstream == (first,)
    assert second_stage(first, "ms").upstream == (first,)  # converted by hand, say


def test_a_query_of_two_stages_checks_the_first_stages_input(
    spark: SparkSession, tmp_path: Path
) -> None:
    """The query is written through its last stage, and its listener checks every input
    its plan observes: the first stage's undeclared column of epoch seconds warns too."""
    write_files(tmp_path / "src", in_seconds(make_batches(1, 1)))
    first = first_stage(stream(spark, tmp_path / "src"))  # seconds read as milliseconds
    second = second_stage(first)
    assert [c.column for c in first.unit_checks] == ["ts"]
    assert second.unit_checks[0] == first.unit_checks[0]
    assert [c.column for c in second.unit_checks] == ["ts", "at"]
    with pytest.warns(EventTimeUnitWarning) as caught:
        run(second, tmp_path / "out")
    columns = {str(w.message).split("'")[1] for w in caught}
    assert "ts" in columns  # the first stage's input
