"""``write_results_and_late``'s sinks: file formats whose readers see committed
micro-batches only, catalog tables written once per batch id, any other batch writer."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from pyspark import cloudpickle as spark_cloudpickle
from pyspark.sql import Row, SparkSession

from windowing import OutputTag
from windowing.assigners import TumblingEventTimeWindows
from windowing.spark.io.files import Files
from windowing.spark.streaming.sinks import (
    STAGING,
    FileSink,
    FormatSink,
    TableSink,
    WindowedQuery,
    write_results_and_late,
)
from windowing.stream import BoundedOutOfOrderness, WindowedStream

pytestmark = pytest.mark.spark

spark_cloudpickle.register_pickle_by_value(sys.modules[__name__])  # type: ignore[no-untyped-call]

LATE = OutputTag("late")
SCHEMA = "user string, amount bigint, ts bigint"
T0 = 1_700_000_000_000


def write_files(directory: Path, batches: list[list[tuple[Any, ...]]]) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for i, rows in enumerate(batches):
        path = directory / f"part-{i:04d}.json"
        names = ("user", "amount", "ts")
        path.write_text("".join(json.dumps(dict(zip(names, r, strict=True))) + "\n" for r in rows))
        t = 1_600_000_000 + i * 10
        os.utime(path, (t, t))


BATCHES = [
    [("a", 1, T0 + 100), ("b", 2, T0 + 200)],
    [("a", 3, T0 + 1_500), ("b", 4, T0 + 2_500)],  # watermark -> T0 + 1_500
    [("a", 5, T0 + 50), ("c", 6, T0 + 9_000)],  # a's row is late
]


def result_of(spark: SparkSession, src: Path) -> Any:
    df = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).json(str(src))
    return (
        WindowedStream.from_dataframe(df, event_time="ts", watermark=BoundedOutOfOrderness(1_000))
        .key_by("user")
        .window(TumblingEventTimeWindows(1_000))
        .side_output_late_data(LATE)
        .sum("amount")
    )


def run(spark: SparkSession, tmp: Path, results: Any, late: Any) -> WindowedQuery:
    write_files(tmp / "src", BATCHES)
    query = write_results_and_late(
        result_of(spark, tmp / "src"), results, late, str(tmp / "chk"), available_now=True
    )
    query.awaitTermination()
    assert query.exception() is None
    return query


# (user, window_start, sum, batch_id): batch 2 sees the watermark T0 + 1_500, the last
# (no-data) batch 3 sees T0 + 8_000; c's window stays open
EXPECTED = [("a", T0, 1, 2), ("a", T0 + 1_000, 3, 3), ("b", T0, 2, 2), ("b", T0 + 2_000, 4, 3)]


def test_parquet_batches_are_published_once_committed(spark: SparkSession, tmp_path: Path) -> None:
    query = run(spark, tmp_path, str(tmp_path / "results"), str(tmp_path / "late"))
    assert isinstance(query, WindowedQuery) and not query.isActive
    results = spark.read.parquet(str(tmp_path / "results"))
    got = sorted((r.user, r.window_start, r.amount, r.batch_id) for r in results.collect())
    assert got == EXPECTED
    late = spark.read.parquet(str(tmp_path / "late")).collect()
    assert [(r.user, r.amount, r.batch_id) for r in late] == [("a", 5, 2)]
    # every staged batch was moved into place: nothing is left waiting
    for out in ("results", "late"):
        assert not list((tmp_path / out / STAGING).glob("batch_id=*"))
        commits = (tmp_path / "chk" / "commits").iterdir()
        committed = {int(p.name) for p in commits if p.name.isdigit()}
        published = {int(p.name.split("=")[1]) for p in (tmp_path / out).glob("batch_id=*")}
        assert published <= committed


def test_a_reader_sees_no_batch_the_checkpoint_has_not_committed(
    spark: SparkSession, tmp_path: Path
) -> None:
    sink = FileSink(str(tmp_path / "out"))
    frame = spark.createDataFrame([Row(x=1)])
    for batch in range(4):
        sink.write(frame.selectExpr(f"{batch} AS x"), batch)
    # nothing is visible before a commit
    assert not list((tmp_path / "out").glob("batch_id=*"))
    sink.publish(Files(spark), {0, 1})
    seen = spark.read.parquet(str(tmp_path / "out")).collect()
    assert sorted((r.x, r.batch_id) for r in seen) == [(0, 0), (1, 1)]
    # a batch written again before its commit (a replay after a failure) replaces its rows
    sink.write(frame.selectExpr("30 AS x"), 3)
    sink.publish(Files(spark), {0, 1, 2, 3})
    seen = spark.read.parquet(str(tmp_path / "out")).collect()
    assert sorted((r.x, r.batch_id) for r in seen) == [(0, 0), (1, 1), (2, 2), (30, 3)]


def test_other_file_formats_with_options(spark: SparkSession, tmp_path: Path) -> None:
    csv = FileSink(str(tmp_path / "results"), "csv", {"header": "true"})
    run(spark, tmp_path, csv, FileSink(str(tmp_path / "late"), "json"))
    header = next((tmp_path / "results").glob("batch_id=*/*.csv")).read_text().splitlines()[0]
    assert header.startswith("user,window_start,window_end,amount")
    results = spark.read.option("header", "true").csv(str(tmp_path / "results"))
    got = sorted(
        (r.user, int(r.window_start), int(r.amount), r.batch_id) for r in results.collect()
    )
    assert got == EXPECTED
    late = spark.read.json(str(tmp_path / "late")).collect()
    assert [(r.user, r.amount, r.late_reason) for r in late] == [("a", 5, "late")]


def test_a_call_wide_format_applies_to_every_path(spark: SparkSession, tmp_path: Path) -> None:
    write_files(tmp_path / "src", BATCHES)
    query = write_results_and_late(
        result_of(spark, tmp_path / "src"),
        str(tmp_path / "results"),
        str(tmp_path / "late"),
        str(tmp_path / "chk"),
        available_now=True,
        format="json",
    )
    query.awaitTermination()
    assert len(spark.read.json(str(tmp_path / "results")).collect()) == len(EXPECTED)
    assert spark.read.json(str(tmp_path / "late")).count() == 1


def test_catalog_tables_once_per_batch_id(spark: SparkSession, tmp_path: Path) -> None:
    spark.sql("DROP TABLE IF EXISTS window_results")
    try:
        sink = TableSink("window_results", "parquet")
        run(spark, tmp_path, sink, None)
        got = sorted(
            (r.user, r.window_start, r.amount, r.batch_id)
            for r in spark.table("window_results").collect()
        )
        assert got == EXPECTED
        # a batch replayed after a failure replaces its own partition
        batch = spark.table("window_results").where("batch_id = 2").drop("batch_id")
        sink.write(batch.localCheckpoint(), 2)
        assert spark.table("window_results").count() == len(EXPECTED)
    finally:
        spark.sql("DROP TABLE IF EXISTS window_results")


def test_any_batch_writer_gets_a_batch_id_column(spark: SparkSession, tmp_path: Path) -> None:
    sink = FormatSink("json", {"path": str(tmp_path / "appended")})
    run(spark, tmp_path, sink, None)
    rows = spark.read.json(str(tmp_path / "appended")).collect()
    assert sorted((r.user, r.window_start, r.amount, r.batch_id) for r in rows) == EXPECTED


def test_sinks_are_checked_before_the_query_starts(spark: SparkSession, tmp_path: Path) -> None:
    write_files(tmp_path / "src", BATCHES)
    result = result_of(spark, tmp_path / "src")
    chk = str(tmp_path / "chk")
    with pytest.raises(ValueError, match="late_path writes the same table as results_path"):
        write_results_and_late(result, TableSink("t"), TableSink("T"), chk)
    inner = FileSink(str(tmp_path / "results" / "late"), "json")
    with pytest.raises(ValueError, match=r"late_path=.* lies inside results_path"):
        write_results_and_late(result, str(tmp_path / "results"), inner, chk)
    with pytest.raises(ValueError, match="format must be a non-empty data source name"):
        FileSink(str(tmp_path / "x"), "")
    with pytest.raises(ValueError, match="late_path must be a non-empty path or a Sink"):
        write_results_and_late(result, str(tmp_path / "results"), 3, chk)  # type: ignore[arg-type]
    assert not (tmp_path / "chk").exists()
