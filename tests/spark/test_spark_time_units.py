"""Integral event times in seconds, microseconds and nanoseconds (``event_time_unit``).

Each job runs on event times in milliseconds and on the same instants in another unit (whole
seconds; microseconds and nanoseconds with a sub-millisecond part, which is floored away),
before and after 1970: the windows, results and late rows are the same, with the result
times in the column's unit (``TimeUnit.from_millis``), in every plan (native, the window
operator, columnar; in seconds) and in streaming. Then the SQL arithmetic against
``TimeUnit`` at the ends of ``long``, the check that warns when seconds are read as
milliseconds, and the errors for a wrong unit, raised before any Spark job.
"""

from __future__ import annotations

import json
import os
import sys
import uuid
import warnings
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from pyspark import cloudpickle as spark_cloudpickle
from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as F  # noqa: N812

from tests.spark.builtin_paths import without_native_builtins
from windowing import OutputTag
from windowing.assigners import (
    EventTimeSessionWindows,
    TumblingEventTimeWindows,
    TumblingProcessingTimeWindows,
)
from windowing.errors import EventTimeUnitWarning
from windowing.functions import ProcessWindowFunction
from windowing.spark.columns.units import SAMPLE_VALUES, millis_sql, unit_sql
from windowing.spark.planning import Route
from windowing.spark.streaming.query import write_results_and_late
from windowing.stream import BoundedOutOfOrderness, WindowedStream
from windowing.time import MAX_TIMESTAMP, MIN_TIMESTAMP, TimeUnit

pytestmark = pytest.mark.spark
spark_cloudpickle.register_pickle_by_value(sys.modules[__name__])  # type: ignore[no-untyped-call]

S, MS, US, NS = (
    TimeUnit.SECONDS,
    TimeUnit.MILLISECONDS,
    TimeUnit.MICROSECONDS,
    TimeUnit.NANOSECONDS,
)
LATE = OutputTag("late")
#: Event times in ms (whole seconds, some before 1970), in arrival order: the three last
#: arrive after the watermark (5 s behind the newest) passed their windows.
MS_TIMES = [
    -12_000,
    -1_000,
    0,
    1_000,
    4_000,
    9_000,
    10_000,
    11_000,
    19_000,
    23_000,
    47_000,
    51_000,
    -65_000,
    8_000,
    30_000,
]
#: Session gaps close between the groups of times above (5 s).
GAP = "5 seconds"


def in_unit(unit: TimeUnit, ms: int, i: int) -> int:
    """The instant ``ms`` in ``unit``, with a sub-millisecond part for the finer units."""
    if unit is S:
        return ms // 1_000
    if unit is US:
        return ms * 1_000 + (i * 137) % 1_000
    if unit is NS:
        return ms * 1_000_000 + (i * 7_919) % 1_000_000
    return ms


def frame(spark: SparkSession, unit: TimeUnit) -> DataFrame:
    """``seq`` (arrival order), ``user``, ``amount``, ``at`` (the instant in ms, to tell the
    rows apart) and ``ts`` in ``unit`` (an ``int`` for seconds, a ``bigint`` otherwise)."""
    rows = [(i, "ab"[i % 2], i + 1, ms, in_unit(unit, ms, i)) for i, ms in enumerate(MS_TIMES)]
    ts_type = "int" if unit is S else "bigint"
    return spark.createDataFrame(
        rows, f"seq bigint, user string, amount bigint, at bigint, ts {ts_type}"
    )


def larger(a: Row, b: Row) -> Row:
    return a if a.amount >= b.amount else b


class Span(ProcessWindowFunction[Row, Row, str, Any]):
    """The window's first and last values of the event-time column, as they are."""

    def process(self, key: str, context: Any, elements: Iterable[Row]) -> Iterable[Row]:
        times = [r.ts for r in elements]
        yield Row(first=min(times), last=max(times), n=len(times))


def keyed(df: DataFrame, unit: TimeUnit, **source: Any) -> Any:
    given = None if unit is MS else unit.value
    return WindowedStream.from_dataframe(
        df, event_time="ts", event_time_unit=given, **source
    ).key_by("user")


def columnar_sum(windowed: Any) -> Any:
    """The built-in sum on whole columns (the path of a small input)."""
    with without_native_builtins():
        return windowed.sum("amount")


TEN = TumblingEventTimeWindows("10 seconds")
JOBS: dict[str, Callable[[DataFrame, TimeUnit], Any]] = {
    "agg (native tumbling)": lambda df, u: (
        keyed(df, u).window(TEN).agg(F.sum("amount").alias("total"), F.count("*").alias("n"))
    ),
    "reduce (operator)": lambda df, u: keyed(df, u).window(TEN).reduce(larger),
    "sum (columnar)": lambda df, u: columnar_sum(keyed(df, u).window(TEN)),
    "sessions (native)": lambda df, u: (
        keyed(df, u)
        .window(EventTimeSessionWindows(GAP))
        .agg(F.sum("amount").alias("total"), F.max("at").alias("newest"))
    ),
    "sessions (operator)": lambda df, u: (
        keyed(df, u).window(EventTimeSessionWindows(GAP)).reduce(larger)
    ),
    "late rows (arrival order)": lambda df, u: (
        keyed(df, u, arrival_order="seq", watermark=BoundedOutOfOrderness("5 seconds"))
        .window(TEN)
        .side_output_late_data(LATE)
        .reduce(larger)
    ),
}
ROUTES = {
    "agg (native tumbling)": Route.NATIVE_TUMBLING,
    "sessions (native)": Route.NATIVE_SESSIONS,
}

#: Result and late columns holding times of the operator's clock: (name, is a window bound).
TIME_COLUMNS = {
    "window_start": True,
    "window_end": True,
    "max_timestamp": False,
    "late_watermark": False,
}


def rows_in(unit: TimeUnit, df: DataFrame) -> list[tuple[Any, ...]]:
    """``df``'s rows without the event-time column (in its own unit), sorted."""
    return sorted((tuple(r) for r in df.drop("ts").collect()), key=repr)


#: The collected rows of a DataFrame, with its column names.
Collected = tuple[list[str], list[Row]]


def collected(df: DataFrame) -> Collected:
    return df.columns, df.collect()


def converted(unit: TimeUnit, output: Collected) -> list[tuple[Any, ...]]:
    """The rows of a job on millisecond event times with their times in ``unit``, without
    the event-time column."""
    columns, rows = output
    names = [c for c in columns if c != "ts"]
    return sorted(
        (
            tuple(
                r[n]
                if n not in TIME_COLUMNS or r[n] is None
                else unit.from_millis(r[n], bound=TIME_COLUMNS[n])
                for n in names
            )
            for r in rows
        ),
        key=repr,
    )


@pytest.fixture(scope="module")
def millisecond_outputs(spark: SparkSession) -> dict[str, Any]:
    """Each job's results and late rows on millisecond event times, and its plan."""
    outputs = {}
    for name, job in JOBS.items():
        result = job(frame(spark, MS), MS)
        with result:
            late = result.late
            outputs[name] = (
                collected(result.results),
                None if late is None else collected(late),
                result.plan,
            )
    return outputs


#: Every plan in seconds; the finer units (the same conversion, floored on the way in) in a
#: native plan and in the window operator with late rows.
CASES = [(job, S) for job in JOBS] + [
    (job, unit)
    for unit in (US, NS)
    for job in ("agg (native tumbling)", "late rows (arrival order)")
]


@pytest.mark.parametrize(
    ("job", "unit"), CASES, ids=lambda v: v.value if isinstance(v, TimeUnit) else v
)
def test_a_unit_gives_the_windows_of_milliseconds_in_the_unit(
    spark: SparkSession, millisecond_outputs: dict[str, Any], job: str, unit: TimeUnit
) -> None:
    want_results, want_late, want_plan = millisecond_outputs[job]
    result = JOBS[job](frame(spark, unit), unit)
    assert result.plan.route is want_plan.route
    assert result.plan.route is ROUTES.get(job, Route.BATCH_REPLAY)
    assert (result.plan.columnar is None) == (want_plan.columnar is None)
    if job == "sum (columnar)":
        assert result.plan.columnar is not None
    with result:
        got = rows_in(unit, result.results)
        want = converted(unit, want_results)
        assert len(want) >= 6
        assert got == want
        if want_late is not None:
            late = rows_in(unit, result.late)
            assert len(late) == 3  # the three last arrivals
            assert late == converted(unit, want_late)
        # the results' times are of the column's type
        types = dict(result.results.dtypes)
        assert types["window_start"] == types["window_end"] == "bigint"


@pytest.mark.parametrize(
    ("unit", "size"),
    [(S, "1500 milliseconds"), (S, "10 seconds"), (US, "10 seconds"), (NS, "1 second")],
    ids=lambda v: v.value if isinstance(v, TimeUnit) else v,
)
def test_the_column_values_of_a_window_lie_in_its_bounds(
    spark: SparkSession, unit: TimeUnit, size: str
) -> None:
    """``window_start <= t < window_end`` for every row's own value ``t``, and
    ``max_timestamp == window_end - 1``, even for windows that are no whole seconds."""
    result = (
        keyed(frame(spark, unit), unit)
        .window(TumblingEventTimeWindows(size))
        .process(Span(), output_schema="first bigint, last bigint, n bigint")
    )
    rows = result.results.collect()
    assert sum(r.n for r in rows) == len(MS_TIMES)
    for r in rows:
        assert r.window_start <= r.first <= r.last < r.window_end, r
        assert r.max_timestamp == r.window_end - 1, r


EDGES = [
    MIN_TIMESTAMP,
    MIN_TIMESTAMP + 1,
    -(MAX_TIMESTAMP // 1_000) - 1,
    -(MAX_TIMESTAMP // 1_000),
    -(MAX_TIMESTAMP // 1_000_000) - 1,
    -(MAX_TIMESTAMP // 1_000_000),
    -1_000_001,
    -1_000,
    -999,
    -1,
    0,
    1,
    999,
    1_000,
    1_000_001,
    MAX_TIMESTAMP // 1_000_000,
    MAX_TIMESTAMP // 1_000_000 + 1,
    (MAX_TIMESTAMP - 999) // 1_000,
    (MAX_TIMESTAMP - 999) // 1_000 + 1,
    MAX_TIMESTAMP // 1_000,
    MAX_TIMESTAMP // 1_000 + 1,
    MAX_TIMESTAMP - 1,
    MAX_TIMESTAMP,
]


@pytest.mark.parametrize("unit", list(TimeUnit), ids=lambda u: u.value)
def test_the_sql_arithmetic_is_time_units_at_the_ends_of_long(
    spark: SparkSession, unit: TimeUnit
) -> None:
    """In ANSI mode (Spark 4's default), so an overflow would fail the query."""
    assert spark.conf.get("spark.sql.ansi.enabled") == "true"
    df = spark.createDataFrame([(v,) for v in EDGES], "v bigint")
    got = df.select(
        "v",
        F.expr(millis_sql("v", unit)).alias("ms"),
        F.expr(unit_sql("v", unit)).alias("instant"),
        F.expr(unit_sql("v", unit, bound=True)).alias("bound"),
    ).collect()
    for r in got:
        assert r.ms == unit.to_millis(r.v), r
        assert r.instant == unit.from_millis(r.v), r
        assert r.bound == unit.from_millis(r.v, bound=True), r


def test_small_integral_types_in_seconds_are_read(spark: SparkSession) -> None:
    df = spark.createDataFrame([("a", 1, 7)], "user string, amount bigint, ts smallint")
    result = keyed(df, S).window(TEN).agg(F.sum("amount").alias("total"))
    assert [tuple(r) for r in result.results.collect()] == [("a", 0, 10, 1, 9)]


def test_a_streaming_query_reads_the_unit(spark: SparkSession, tmp_path: Path) -> None:
    """Seconds in files, one per micro-batch, against the batch replay of the same instants
    in milliseconds with the file as arrival order (the replay a stream equals)."""
    batches = [
        [(0, 1), (3, 2), (9, 3)],
        [(11, 4), (2, 5), (14, 6)],  # 2 s: behind the watermark (9 s - 5 s), not late
        [(25, 7)],
        [(-7, 9), (31, 10), (1, 8)],  # late: the watermark (25 s - 5 s) passed [0, 10)
        [(100, 0)],  # moves the watermark past every window
    ]
    src = tmp_path / "src"
    src.mkdir()
    rows = []
    for b, batch in enumerate(batches):
        lines = [{"user": "a", "amount": amount, "ts": ts, "batch": b} for ts, amount in batch]
        rows += [(d["user"], d["amount"], d["ts"] * 1_000, b) for d in lines]
        path = src / f"part-{b:04d}.json"
        path.write_text("".join(json.dumps(d) + "\n" for d in lines))
        os.utime(path, (1_600_000_000 + b * 10,) * 2)
    schema = "user string, amount bigint, ts bigint, batch bigint"
    delay = BoundedOutOfOrderness("5 seconds")

    def job(df: DataFrame, unit: str | None, **source: Any) -> Any:
        return (
            WindowedStream.from_dataframe(
                df, event_time="ts", event_time_unit=unit, watermark=delay, **source
            )
            .key_by("user")
            .window(TEN)
            .side_output_late_data(LATE)
            .agg(F.sum("amount").alias("total"), F.count("*").alias("n"))
        )

    stream = spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).json(str(src))
    query = write_results_and_late(
        job(stream, "s"),
        str(tmp_path / "results"),
        str(tmp_path / "late"),
        str(tmp_path / "checkpoint"),
        available_now=True,
    )
    query.awaitTermination()
    assert query.exception() is None
    got_results = rows_in(S, spark.read.parquet(str(tmp_path / "results")).drop("batch_id"))
    got_late = rows_in(S, spark.read.parquet(str(tmp_path / "late")).drop("batch_id"))

    replay = job(spark.createDataFrame(rows, schema), None, arrival_order="batch")
    with replay:
        want_results = [r for r in converted(S, collected(replay.results)) if r[1] < 100]
        want_late = converted(S, collected(replay.late))
    assert got_results == want_results
    assert [r[:3] for r in got_results] == [
        ("a", 0, 10),
        ("a", 10, 20),
        ("a", 20, 30),
        ("a", 30, 40),
    ]
    assert got_late == want_late
    assert sorted(r[1] for r in got_late) == [8, 9]  # amounts of the rows at 1 s and -7 s


# --------------------------------------------------------------------------- the check


@contextmanager
def jobs_counted(spark: SparkSession) -> Iterator[list[int]]:
    """The Spark jobs run inside the block (filled in at its end)."""
    sc = spark.sparkContext
    group = f"pw-units-{uuid.uuid4().hex}"
    sc.setJobGroup(group, "counting jobs")
    found: list[int] = []
    try:
        yield found
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
        sc.setLocalProperty("spark.job.description", None)  # type: ignore[arg-type]
        found.extend(sc.statusTracker().getJobIdsForGroup(group))


def local_frame(spark: SparkSession, times: list[int]) -> DataFrame:
    """A DataFrame of driver data held in its plan (Spark reads it without a job)."""
    return spark.createDataFrame(pd.DataFrame({"user": ["a"] * len(times), "sent_at": times}))


@pytest.mark.parametrize(
    ("unit", "first"),
    [(S, 1_700_000_000), (US, 1_700_000_000_000_000), (NS, 1_700_000_000_000_000_000)],
    ids=lambda v: v.value if isinstance(v, TimeUnit) else "",
)
def test_values_of_another_unit_read_as_milliseconds_warn_once_naming_the_column(
    spark: SparkSession, unit: TimeUnit, first: int
) -> None:
    df = local_frame(spark, [first, first + 60 * (first // 1_700_000_000)])
    with jobs_counted(spark) as jobs, pytest.warns(EventTimeUnitWarning) as caught:
        WindowedStream.from_dataframe(df, event_time="sent_at")
    assert len(caught) == 1
    text = str(caught[0].message)
    assert "event_time column 'sent_at'" in text
    assert "2023-11-14T22:13:20.000Z" in text
    assert f"event_time_unit={unit.value!r}" in text
    assert caught[0].filename == __file__  # points at the caller's line
    assert not jobs, "data held in the plan is read without a Spark job"


def test_a_file_input_is_sampled_with_one_small_job(spark: SparkSession, tmp_path: Path) -> None:
    path = str(tmp_path / "events")
    rows = [("a", 1_700_000_000 + i) for i in range(3 * SAMPLE_VALUES)]
    spark.createDataFrame(rows, "user string, ts bigint").repartition(3).write.parquet(path)
    df = spark.read.parquet(path)
    with jobs_counted(spark) as jobs, pytest.warns(EventTimeUnitWarning, match="'ts'"):
        WindowedStream.from_dataframe(df, event_time="ts")
    assert len(jobs) == 1


@pytest.mark.parametrize(
    ("times", "unit"),
    [
        ([0, 1_000, 100_000], None),  # the small milliseconds of tests
        ([1_700_000_000_000, 1_700_000_060_000], None),  # milliseconds of 2023
        ([1_700_000_000, 1_700_000_060], "s"),  # seconds, declared
        ([1_700_000_000, 1_700_000_060], "ms"),  # declared milliseconds: not checked
        ([5, 1_700_000_000], None),  # not all in the seconds' band
    ],
)
def test_no_warning_for_milliseconds_or_a_declared_unit(
    spark: SparkSession, times: list[int], unit: str | None
) -> None:
    df = local_frame(spark, times)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        stream = WindowedStream.from_dataframe(df, event_time="sent_at", event_time_unit=unit)
    assert stream.source.event_unit is TimeUnit.of(unit or "ms")


def test_inputs_that_cost_a_shuffle_or_rows_of_python_objects_are_not_sampled(
    spark: SparkSession,
) -> None:
    seconds = [("a", 1_700_000_000), ("b", 1_700_000_060)]
    shuffled = local_frame(spark, [1_700_000_000]).groupBy("user").agg(F.max("sent_at").alias("ts"))
    python_rows = spark.createDataFrame(seconds, "user string, ts bigint")
    same = F.udf(lambda v: v, "bigint")
    python_function = local_frame(spark, [1_700_000_000]).select(
        "user", same("sent_at").alias("ts")
    )
    for df in (shuffled, python_rows, python_function):
        with jobs_counted(spark) as jobs, warnings.catch_warnings():
            warnings.simplefilter("error")
            WindowedStream.from_dataframe(df, event_time="ts")
        assert not jobs


def test_a_streaming_query_checks_its_first_micro_batch(
    spark: SparkSession, tmp_path: Path
) -> None:
    """The range of each micro-batch's event times is observed with the micro-batch, and
    the query of ``write_results_and_late`` warns on the first one (from its listener)."""
    src = tmp_path / "src"
    src.mkdir()
    for b in range(2):
        lines = [{"user": "a", "sent_at": 1_700_000_000 + 60 * b + i} for i in range(3)]
        path = src / f"part-{b:04d}.json"
        path.write_text("".join(json.dumps(d) + "\n" for d in lines))
        os.utime(path, (1_600_000_000 + b * 10,) * 2)
    df = spark.readStream.schema("user string, sent_at bigint").json(str(src))

    def job(unit: str | None) -> Any:
        stream = WindowedStream.from_dataframe(df, event_time="sent_at", event_time_unit=unit)
        return stream.key_by("user").window(TEN).agg(F.count("*").alias("n"))

    assert job("ms").unit_checks == ()  # a declared unit is not checked
    result = job(None)
    (check,) = result.unit_checks
    assert (check.column, check.where) == ("sent_at", None)
    with pytest.warns(EventTimeUnitWarning, match="event_time column 'sent_at'") as caught:
        query = write_results_and_late(
            result,
            str(tmp_path / "results"),
            str(tmp_path / "late"),
            str(tmp_path / "checkpoint"),
            available_now=True,
        )
        query.awaitTermination()
    assert query.exception() is None
    assert len(caught) == 1
    assert "event_time_unit='s'" in str(caught[0].message)
    observed = [p["observedMetrics"].get(check.name) for p in query.recentProgress]
    assert next(tuple(r) for r in observed if r is not None) == (1_700_000_000, 1_700_000_062)


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("source", "message"),
    [
        (
            {"event_time": "ts", "event_time_unit": "sec"},
            "event_time_unit must be one of 's', 'ms', 'us', 'ns', got str 'sec'",
        ),
        (
            {"event_time": "ts", "event_time_unit": 1000},
            "event_time_unit must be one of .* got int 1000",
        ),
        (
            {"event_time": "at", "event_time_unit": "s"},
            "event_time_unit='s': column 'at' is a timestamp, which has no unit to declare",
        ),
        (
            {"event_time": "ts", "processing_time": "at", "processing_time_unit": "ms"},
            "processing_time_unit='ms': column 'at' is a timestamp",
        ),
        (
            {"event_time": "ts", "processing_time_unit": "us"},
            "processing_time_unit='us' is given without a processing_time column",
        ),
        (
            {"event_time": "ts", "processing_time": "ts", "processing_time_unit": "minutes"},
            "processing_time_unit must be one of",
        ),
    ],
)
def test_a_wrong_unit_fails_before_any_spark_job(
    spark: SparkSession, source: dict[str, Any], message: str
) -> None:
    df = spark.createDataFrame([("a", 1, None)], "user string, ts bigint, at timestamp")
    with jobs_counted(spark) as jobs, pytest.raises(ValueError, match=message):
        WindowedStream.from_dataframe(df, **source)
    assert not jobs


def test_processing_time_has_its_own_unit(spark: SparkSession) -> None:
    """Processing time in seconds, event time in milliseconds: processing-time windows of
    10 s split rows seen at 2 s, 9 s and 14 s (read as milliseconds, one window would hold
    them all); their bounds are given in the event time's unit, as every result time."""
    df = spark.createDataFrame(
        [("a", 1, 500, 2), ("a", 2, 600, 9), ("a", 3, 700, 14)],
        "user string, amount bigint, ts bigint, seen int",
    )
    result = (
        WindowedStream.from_dataframe(
            df, event_time="ts", processing_time="seen", processing_time_unit="s"
        )
        .key_by("user")
        .window(TumblingProcessingTimeWindows("10 seconds"))
        .agg(F.sum("amount").alias("total"))
    )
    got = result.results.select("window_start", "window_end", "total").collect()
    assert sorted(tuple(r) for r in got) == [(0, 10_000, 3), (10_000, 20_000, 3)]
