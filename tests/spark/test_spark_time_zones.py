"""Any session time zone: the same instants out as with a UTC session, across clock changes.

Spark hands Python timestamps in the session time zone and wants them back in UTC. Each case
runs a job in a UTC session and in a session whose zone changes its clocks inside the data
(Europe/Berlin, America/New_York: spring forward and fall back), and compares every output
column, timestamps as microseconds since the epoch.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from pyspark import cloudpickle as spark_cloudpickle
from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as F  # noqa: N812
from pyspark.sql.types import TimestampType

from windowing import OutputTag
from windowing.assigners import (
    EventTimeSessionWindows,
    HoppingEventTimeWindows,
    TumblingEventTimeWindows,
)
from windowing.functions import ProcessWindowFunction
from windowing.spark.streaming.query import write_results_and_late
from windowing.stream import BoundedOutOfOrderness, WindowedStream

pytestmark = pytest.mark.spark
spark_cloudpickle.register_pickle_by_value(sys.modules[__name__])  # type: ignore[no-untyped-call]

ZONES = ["Europe/Berlin", "America/New_York"]
LATE = OutputTag("late")
SCHEMA = "seq bigint, user string, amount bigint, ts timestamp, seen_at timestamp"
#: UTC instants where the zones change their clocks (spring forward, fall back).
CHANGES = [
    datetime(2024, 3, 31, 1, 0, tzinfo=UTC),  # Berlin 02:00 -> 03:00
    datetime(2024, 3, 10, 7, 0, tzinfo=UTC),  # New York 02:00 -> 03:00
    datetime(2024, 10, 27, 1, 0, tzinfo=UTC),  # Berlin 03:00 -> 02:00
    datetime(2024, 11, 3, 6, 0, tzinfo=UTC),  # New York 02:00 -> 01:00
]


def make_rows() -> list[tuple[Any, ...]]:
    """Events every 7 minutes from 2 h before to 2 h after each clock change, arriving in
    ``seq`` order; every ninth arrives 50 minutes late. ``seen_at`` is another timestamp
    column (reaches results of reduce and the built-ins, and the late rows)."""
    rows: list[tuple[Any, ...]] = []
    for change in CHANGES:
        for i in range(35):
            at = change + timedelta(minutes=7 * i - 120, seconds=i % 3, microseconds=i)
            if i % 9 == 8:
                at -= timedelta(minutes=50)
            seen = at + timedelta(hours=1, milliseconds=i)
            rows.append((len(rows), "ab"[i % 2], i % 5 + 1, at, seen))
    return rows


@contextmanager
def session_zone(spark: SparkSession, zone: str) -> Iterator[None]:
    previous = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", zone)
    try:
        yield
    finally:
        spark.conf.set("spark.sql.session.timeZone", previous)


def instants(df: DataFrame) -> list[tuple[Any, ...]]:
    """All rows, timestamp columns as epoch microseconds (independent of any zone), sorted."""
    cols = [
        F.unix_micros(F.col(f.name)).alias(f.name)
        if isinstance(f.dataType, TimestampType)
        else F.col(f.name)
        for f in df.schema.fields
    ]
    return sorted((tuple(r) for r in df.select(*cols).collect()), key=repr)


def stream(df: DataFrame, arrival: bool) -> Any:
    source = WindowedStream.from_dataframe(
        df,
        event_time="ts",
        watermark=BoundedOutOfOrderness("20 minutes"),
        arrival_order="seq" if arrival else None,
    )
    return source.key_by("user")


def later(a: Row, b: Row) -> Row:
    return a if a.seen_at >= b.seen_at else b


class Bounds(ProcessWindowFunction[Row, Row, str, Any]):
    """The window's bounds and its elements' first and last times, as datetimes."""

    def process(self, key: str, context: Any, elements: Iterable[Row]) -> Iterable[Row]:
        times = sorted(r.ts for r in elements)
        w = context.window()
        start = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=w.start)
        yield Row(start=start, first=times[0], last=times[-1], n=len(times))


BOUNDS_SCHEMA = "start timestamp, first timestamp, last timestamp, n bigint"

JOBS: dict[str, Callable[[DataFrame], Any]] = {
    "reduce, late rows": lambda df: (
        stream(df, True)
        .window(TumblingEventTimeWindows("1 hour"))
        .allowed_lateness("10 minutes")
        .side_output_late_data(LATE)
        .reduce(later)
    ),
    "sum": lambda df: stream(df, False).window(TumblingEventTimeWindows("1 hour")).sum("amount"),
    "min, late rows": lambda df: (
        stream(df, True)
        .window(TumblingEventTimeWindows("30 minutes"))
        .side_output_late_data(LATE)
        .min("amount")
    ),
    "max": lambda df: (
        stream(df, False).window(HoppingEventTimeWindows("1 hour", "20 minutes")).max("amount")
    ),
    "min_by": lambda df: (
        stream(df, False).window(TumblingEventTimeWindows("1 hour")).min_by("amount")
    ),
    "max_by, late rows": lambda df: (
        stream(df, True)
        .window(EventTimeSessionWindows("10 minutes"))
        .side_output_late_data(LATE)
        .max_by("amount", first=False)
    ),
    "process": lambda df: (
        stream(df, True)
        .window(TumblingEventTimeWindows("1 hour"))
        .process(Bounds(), output_schema=BOUNDS_SCHEMA)
    ),
}


@pytest.mark.parametrize("zone", ZONES)
@pytest.mark.parametrize("job", list(JOBS))
def test_batch_outputs_are_the_utc_sessions(spark: SparkSession, zone: str, job: str) -> None:
    rows = make_rows()
    outputs = {}
    for name in ("UTC", zone):
        with session_zone(spark, name):
            result = JOBS[job](spark.createDataFrame(rows, SCHEMA))
            with result:
                late = result.late
                outputs[name] = (
                    instants(result.results),
                    None if late is None else instants(late),
                )
    results, late = outputs["UTC"]
    assert len(results) > 10
    if "late rows" in job:
        assert late, "the data has late rows"
    assert outputs[zone] == outputs["UTC"]


def test_streaming_outputs_are_the_utc_sessions(spark: SparkSession, tmp_path: Path) -> None:
    """A streaming reduce with late rows over files whose rows cross the clock changes."""
    src = tmp_path / "src"
    src.mkdir()
    rows = make_rows()
    for i in range(4):
        path = src / f"part-{i:04d}.json"
        chunk = rows[i * 35 : (i + 1) * 35]
        path.write_text(
            "".join(
                json.dumps(
                    {
                        "seq": r[0],
                        "user": r[1],
                        "amount": r[2],
                        "ts": r[3].isoformat(),
                        "seen_at": r[4].isoformat(),
                    }
                )
                + "\n"
                for r in chunk
            )
        )
        os.utime(path, (1_600_000_000 + i * 10,) * 2)
    outputs = {}
    for zone in ("UTC", "Europe/Berlin"):
        with session_zone(spark, zone):
            df = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).json(str(src))
            result = (
                stream(df, False)
                .window(TumblingEventTimeWindows("1 hour"))
                .side_output_late_data(LATE)
                .reduce(later)
            )
            out = tmp_path / zone.replace("/", "_")
            query = write_results_and_late(
                result,
                str(out / "results"),
                str(out / "late"),
                str(out / "ckpt"),
                available_now=True,
            )
            query.awaitTermination()
            assert query.exception() is None
            outputs[zone] = (
                instants(spark.read.parquet(str(out / "results")).drop("batch_id")),
                instants(spark.read.parquet(str(out / "late")).drop("batch_id")),
            )
    assert len(outputs["UTC"][0]) > 10
    assert outputs["UTC"][1], "the files have late rows"
    for got, want in zip(outputs["Europe/Berlin"], outputs["UTC"], strict=True):
        assert [r for r in got if r not in want] == [r for r in want if r not in got]
        assert got == want
