"""Failures and bad data (``docs/failures.md``).

``on_error("dead_letter")``: a failing element, firing or result goes to the dead-letter
output and the job goes on; with ``"fail"`` the error names where it was raised without
showing row values (unless ``show_values=True``); rows differing only by ``-0.0`` / ``0.0``
have one order.

The reference for a dead-lettered element is the same job on the input without that row: the
results must be equal (its event time still moves the watermark, so the reference keeps a
harmless row at the same event time and arrival order).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from pyspark import cloudpickle as spark_cloudpickle
from pyspark.sql import DataFrame, Row, SparkSession

from windowing import OutputTag
from windowing.assigners import EventTimeSessionWindows, TumblingEventTimeWindows
from windowing.functions import AggregateFunction, ProcessWindowFunction
from windowing.spark.streaming.query import write_results_and_late
from windowing.stream import BoundedOutOfOrderness, WindowedStream
from windowing.triggers import CountTrigger

pytestmark = pytest.mark.spark

spark_cloudpickle.register_pickle_by_value(sys.modules[__name__])  # type: ignore[no-untyped-call]

SCHEMA = "user string, amount bigint, ts bigint, seq bigint, token string"
LATE = OutputTag("late")


def add(a: Row, b: Row) -> Row:
    """Order-sensitive, and raises on a null amount (``int + None``)."""
    merged = a.asDict()
    merged.update(
        amount=(a.amount * 31 + b.amount) % 1_000_003, ts=max(a.ts, b.ts), seq=max(a.seq, b.seq)
    )
    return Row(**merged)


class Amounts(AggregateFunction):
    """Count, and an order-sensitive hash of the amounts; ``add`` raises on a null amount
    (called for every element, the first of a window too)."""

    def create_accumulator(self) -> tuple[int, int]:
        return (0, 0)

    def add(self, value: Any, acc: tuple[int, int]) -> tuple[int, int]:
        return (acc[0] + 1, (acc[1] * 31 + value.amount) % 1_000_003)

    def get_result(self, acc: tuple[int, int]) -> tuple[int, int]:
        return acc

    def merge(self, a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
        return (a[0] + b[0], (a[1] * 31 + b[1]) % 1_000_003)


AMOUNTS = "n bigint, h bigint"


def rows(poison: set[int], harmless: bool = False) -> list[tuple[Any, ...]]:
    """Rows of three users in arrival order ``seq``; the rows ``poison`` have a null amount
    (or, ``harmless``, the amount 0 and user ``zz`` of their own, so that they still move
    the watermark but touch no window of the others)."""
    out = []
    for seq in range(60):
        user = "abc"[seq % 3]
        ts = 1_000 * seq + (seq * 7919) % 2_500 - (4_000 if seq % 11 == 5 else 0)
        amount: int | None = seq % 13 + 1
        if seq in poison:
            if harmless:
                user, amount = "zz", 0
            else:
                amount = None
        out.append((user, amount, ts, seq, f"secret-{seq}"))
    return out


def stream(df: DataFrame, *, arrival: bool, assigner: Any = None) -> Any:
    return (
        WindowedStream.from_dataframe(
            df,
            event_time="ts",
            watermark=BoundedOutOfOrderness(1_000),
            arrival_order="seq" if arrival else None,
        )
        .key_by("user")
        .window(TumblingEventTimeWindows(5_000) if assigner is None else assigner)
    )


def sorted_rows(df: DataFrame, drop: tuple[str, ...] = ()) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in df.drop(*drop).collect())


@pytest.mark.parametrize("arrival", [False, True], ids=["event-order", "arrival-order"])
def test_a_failing_element_is_left_out_exactly(spark: SparkSession, arrival: bool) -> None:
    poison = {8, 20, 21}
    df = spark.createDataFrame(rows(poison), SCHEMA)
    job = stream(df, arrival=arrival).allowed_lateness(2_000).side_output_late_data(LATE)
    with job.on_error("dead_letter").aggregate(Amounts(), output_schema=AMOUNTS) as result:
        assert "on_error='dead_letter'" in str(result.plan)
        dead = result.dead_letters.collect()
        metrics = result.collect_metrics()
        got = sorted_rows(result.results)
        late = sorted_rows(result.get_side_output(LATE))
    assert sorted(r.seq for r in dead) == sorted(poison)
    assert {r.error_phase for r in dead} == {"element"}
    assert {r.error_class for r in dead} == {"TypeError"}
    assert all("NoneType" in r.error_message for r in dead)
    assert all(r.window_start is None and r.token == f"secret-{r.seq}" for r in dead)
    assert metrics.num_dead_letter_elements == len(poison)
    assert metrics.num_dead_letter_firings == metrics.num_dead_letter_results == 0
    n = len(rows(set()))
    assert metrics.num_elements + metrics.num_dead_letter_elements == n

    reference_df = spark.createDataFrame(rows(poison, harmless=True), SCHEMA)
    reference = stream(reference_df, arrival=arrival).allowed_lateness(2_000)
    with reference.side_output_late_data(LATE).aggregate(
        Amounts(), output_schema=AMOUNTS
    ) as expected:
        want = [r for r in sorted_rows(expected.results) if r[0] != "zz"]
        want_late = [r for r in sorted_rows(expected.get_side_output(LATE)) if r[0] != "zz"]
    assert got == want
    assert late == want_late
    assert got  # windows fired


class FailsOnSeven(ProcessWindowFunction):
    """Raises for a window whose amounts sum to a multiple of 7; yields the count and sum
    otherwise, and writes a side output first (taken back when it raises)."""

    def process(self, key: Any, context: Any, elements: Any) -> Any:
        values = [e.amount for e in elements]
        context.output(OutputTag("seen"), len(values))
        if sum(values) % 7 == 0:
            msg = f"a sum of {sum(values)}"
            raise ValueError(msg)
        yield (len(values), sum(values))


def test_a_failing_firing_emits_nothing_and_the_job_goes_on(spark: SparkSession) -> None:
    df = spark.createDataFrame(rows(set()), SCHEMA)
    seen = OutputTag("seen")
    job = stream(df, arrival=True).trigger(CountTrigger(2)).on_error("dead_letter")
    with job.process(
        FailsOnSeven(), output_schema="n bigint, total bigint", side_output_schemas={seen: "n int"}
    ) as result:
        dead = result.dead_letters.collect()
        metrics = result.collect_metrics()
        got = result.results.collect()
        seen_rows = result.get_side_output(seen).collect()
    assert dead, "some firings have a multiple of 7"
    assert {r.error_phase for r in dead} == {"window"}
    assert {r.error_class for r in dead} == {"ValueError"}
    assert all(r.user in "abc" and r.amount is None and r.token is None for r in dead)
    assert all(r.window_end - r.window_start == 5_000 for r in dead)
    assert metrics.num_dead_letter_firings == len(dead)
    assert metrics.num_windows_fired == len(got)
    assert all(r.total % 7 for r in got) and got
    assert len(seen_rows) == len(got)  # the failed firings' side outputs were taken back

    with pytest.raises(Exception, match="a sum of"):
        stream(df, arrival=True).trigger(CountTrigger(2)).process(
            FailsOnSeven(),
            output_schema="n bigint, total bigint",
            side_output_schemas={seen: "n int"},
        ).results.collect()


class Total(AggregateFunction):
    """Sums amounts; one key's total is beyond bigint."""

    def create_accumulator(self) -> int:
        return 0

    def add(self, value: Any, acc: int) -> int:
        return acc + value.amount * (2**63 if value.user == "b" else 1)

    def get_result(self, acc: int) -> int:
        return acc

    def merge(self, a: int, b: int) -> int:
        return a + b


def test_a_result_beyond_bigint_is_a_dead_letter_or_names_key_window_and_field(
    spark: SparkSession,
) -> None:
    df = spark.createDataFrame(rows(set()), SCHEMA)
    job = stream(df, arrival=False)
    with job.on_error("dead_letter").aggregate(Total(), output_schema="total bigint") as result:
        dead = result.dead_letters.collect()
        got = result.results.collect()
        metrics = result.collect_metrics()
    assert dead and {r.error_phase for r in dead} == {"result"}
    assert {r.user for r in dead} == {"b"}
    assert metrics.num_dead_letter_results == len(dead) == metrics.num_windows_fired - len(got)
    assert {r.user for r in got} == {"a", "c"}

    with pytest.raises(Exception) as info:
        job.aggregate(Total(), output_schema="total bigint").results.collect()
    text = str(info.value)
    assert "output column 'total' (bigint) of window TimeWindow(" in text
    assert "of key 'b'" in text


def test_error_notes_hide_row_values_unless_asked(spark: SparkSession) -> None:
    df = spark.createDataFrame(rows({8}), SCHEMA)
    with pytest.raises(Exception) as info:
        stream(df, arrival=False).aggregate(Amounts(), output_schema=AMOUNTS).results.collect()
    text = str(info.value)
    assert "of key 'c'" in text and "event time" in text
    assert "secret-8" not in text
    assert "show_values=True" in text
    with pytest.raises(Exception) as info:
        job = stream(df, arrival=False).on_error("fail", show_values=True)
        job.aggregate(Amounts(), output_schema=AMOUNTS).results.collect()
    assert "secret-8" in str(info.value)


def test_on_error_validates_its_arguments(spark: SparkSession) -> None:
    job = stream(spark.createDataFrame(rows(set()), SCHEMA), arrival=False)
    with pytest.raises(ValueError, match="on_error must be one of 'fail', 'dead_letter'"):
        job.on_error("skip")
    with pytest.raises(ValueError, match="show_values must be a bool"):
        job.on_error("fail", show_values="yes")  # type: ignore[arg-type]
    # without dead letters the output is empty, with the same columns
    result = job.reduce(add)
    assert result.dead_letters.count() == 0
    assert result.dead_letters.columns == [
        *["user", "amount", "ts", "seq", "token"],
        "error_phase",
        "error_class",
        "error_message",
        "window_start",
        "window_end",
    ]


def test_a_reduce_finds_a_bad_first_element_at_the_next_one(spark: SparkSession) -> None:
    # A reduce function is not called for a window's first element: a bad first element is
    # only found when the next one is reduced with it, and that element is the dead letter.
    df = spark.createDataFrame([("a", None, 1, 0, "x"), ("a", 2, 2, 1, "y")], SCHEMA)
    result = stream(df, arrival=False).on_error("dead_letter").reduce(add)
    assert [(r.seq, r.error_phase) for r in result.dead_letters.collect()] == [(1, "element")]
    assert [(r.amount, r.seq) for r in result.results.collect()] == [(None, 0)]


def test_sessions_with_dead_letters(spark: SparkSession) -> None:
    poison = {4, 30}
    df = spark.createDataFrame(rows(poison), SCHEMA)
    job = stream(df, arrival=True, assigner=EventTimeSessionWindows(1_500))
    with job.on_error("dead_letter").aggregate(Amounts(), output_schema=AMOUNTS) as result:
        got = sorted_rows(result.results)
        assert sorted(r.seq for r in result.dead_letters.collect()) == sorted(poison)
    reference_df = spark.createDataFrame(rows(poison, harmless=True), SCHEMA)
    expected = stream(reference_df, arrival=True, assigner=EventTimeSessionWindows(1_500))
    want = expected.aggregate(Amounts(), output_schema=AMOUNTS).results
    assert got == [r for r in sorted_rows(want) if r[0] != "zz"]


# -- streaming -------------------------------------------------------------------------------
STREAM_SCHEMA = "user string, amount bigint, ts bigint, seq bigint, token string"


def _write(directory: Path, batches: list[list[tuple[Any, ...]]]) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    names = STREAM_SCHEMA.replace(" bigint", "").replace(" string", "").split(", ")
    for i, batch in enumerate(batches):
        path = directory / f"part-{i:04d}.json"
        path.write_text("".join(json.dumps(dict(zip(names, r, strict=True))) + "\n" for r in batch))
        t = 1_600_000_000 + i * 10
        os.utime(path, (t, t))


def test_streaming_poison_row_in_batch_three_of_six(spark: SparkSession, tmp_path: Path) -> None:
    data = rows({25})  # seq 25 is in micro-batch 2 (the third)
    batches = [data[i * 10 : (i + 1) * 10] for i in range(6)]
    batches.append([("~", 0, 10**7, 60, "end")])  # moves the watermark past every window
    _write(tmp_path / "src", batches)
    df = (
        spark.readStream.schema(STREAM_SCHEMA)
        .option("maxFilesPerTrigger", 1)
        .json(str(tmp_path / "src"))
    )
    result = (
        stream(df, arrival=False)
        .on_error("dead_letter")
        .aggregate(Amounts(), output_schema=AMOUNTS)
    )
    out = tmp_path / "out"
    with pytest.raises(ValueError, match="dead_letter_path"):
        write_results_and_late(
            result, str(out / "r"), None, str(out / "c"), dead_letter_path=str(out / "r")
        )
    query = write_results_and_late(
        result,
        str(out / "results"),
        None,
        str(out / "checkpoint"),
        dead_letter_path=str(out / "dead"),
        available_now=True,
    )
    query.awaitTermination(300)
    assert query.exception() is None
    dead = spark.read.parquet(str(out / "dead")).collect()
    assert [(r.seq, r.error_phase, r.batch_id) for r in dead] == [(25, "element", 2)]
    results = spark.read.parquet(str(out / "results"))
    assert results.agg({"batch_id": "max"}).first()[0] >= 5  # batches after the poison ran
    got = sorted_rows(results.where("user != '~'"), drop=("batch_id",))

    # == the batch replay with the same watermarks (arrival order = the file index)
    replay_rows = [(*r, i) for i, batch in enumerate(batches) for r in batch]
    replay_df = spark.createDataFrame(replay_rows, STREAM_SCHEMA + ", file bigint")
    replay = (
        WindowedStream.from_dataframe(
            replay_df, event_time="ts", watermark=BoundedOutOfOrderness(1_000), arrival_order="file"
        )
        .key_by("user")
        .window(TumblingEventTimeWindows(5_000))
        .on_error("dead_letter")
        .aggregate(Amounts(), output_schema=AMOUNTS)
    )
    want = sorted_rows(replay.results.where("user != '~'"))
    assert got == want
    assert [r.seq for r in replay.dead_letters.collect()] == [25]


# -- -0.0 and 0.0 ----------------------------------------------------------------------------
def keep_first(a: Row, b: Row) -> Row:
    return a


def test_rows_differing_only_by_the_sign_of_zero_have_one_order(spark: SparkSession) -> None:
    data = [("k", 5, -0.0), ("k", 5, 0.0)]
    schema = "k string, ts bigint, x double"
    # Spark hashes them alike: without the sign in the content hash they would tie
    zeros = spark.createDataFrame([(-0.0,), (0.0,)], "x double").selectExpr("xxhash64(x) AS h")
    assert len({r.h for r in zeros.collect()}) == 1
    got = set()
    for rows_in in (data, data[::-1]):
        for partitions in (1, 3):
            df = spark.createDataFrame(rows_in, schema).repartition(partitions)
            job = (
                WindowedStream.from_dataframe(df, event_time="ts")
                .key_by("k")
                .window(TumblingEventTimeWindows(10))
            )
            (row,) = job.reduce(keep_first).results.collect()
            got.add(str(row.x))
    assert len(got) == 1, got


def test_streaming_failure_names_key_and_time_without_values(
    spark: SparkSession, tmp_path: Path
) -> None:
    _write(tmp_path / "src", [rows(set())[:10], rows({15})[10:20]])
    df = (
        spark.readStream.schema(STREAM_SCHEMA)
        .option("maxFilesPerTrigger", 1)
        .json(str(tmp_path / "src"))
    )
    result = stream(df, arrival=False).aggregate(Amounts(), output_schema=AMOUNTS)
    out = tmp_path / "out"
    query = write_results_and_late(
        result, str(out / "results"), None, str(out / "checkpoint"), available_now=True
    )
    with pytest.raises(Exception) as info:
        query.awaitTermination(300)
    text = str(info.value)
    assert "of key 'a' in the Spark streaming runtime" in text  # seq 15 is user 'a'
    assert "secret-15" not in text
