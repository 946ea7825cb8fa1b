"""Window joins, coGroups and interval joins on Spark, against brute force in Python: tumbling,
sliding and session windows (sessions merge over both sides), inner joins, coGroups with an
empty side, interval bounds, late rows of each side in arrival order, and one streaming
window join equal to its batch replay."""

from __future__ import annotations

import json
import os
import random
import sys
from collections import Counter
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from pyspark import cloudpickle as spark_cloudpickle
from pyspark.sql import DataFrame, SparkSession

from tests.spark.frames import sized_frame
from windowing import (
    BoundedOutOfOrderness,
    EventTimeSessionWindows,
    OutputTag,
    SlidingEventTimeWindows,
    TumblingEventTimeWindows,
    WindowedStream,
)
from windowing.functions.joins import CoGroupFunction, JoinFunction, ProcessJoinFunction
from windowing.spark.streaming.query import write_results_and_late
from windowing.time import TimeUnit
from windowing.triggers import CountTrigger

pytestmark = pytest.mark.spark

spark_cloudpickle.register_pickle_by_value(sys.modules[__name__])  # type: ignore[no-untyped-call]

LEFT_SCHEMA = "k string, ts bigint, n bigint, arr bigint"
RIGHT_SCHEMA = "key string, t bigint, m bigint, arr bigint"
LATE = OutputTag("late")


def frames(
    spark: SparkSession,
    left: list[tuple[Any, ...]],
    right: list[tuple[Any, ...]],
    *,
    sized: bool = False,
) -> tuple[DataFrame, DataFrame]:
    """The two inputs; ``sized``: with a size Spark knows (the replay runs in one task)."""
    if sized:
        return sized_frame(spark, left, LEFT_SCHEMA), sized_frame(spark, right, RIGHT_SCHEMA)
    return spark.createDataFrame(left, LEFT_SCHEMA), spark.createDataFrame(right, RIGHT_SCHEMA)


def streams(
    left: DataFrame, right: DataFrame, *, arrival: bool = False, delay: int = 0
) -> tuple[Any, Any]:
    def stream(df: DataFrame, ts: str) -> Any:
        return WindowedStream.from_dataframe(
            df,
            event_time=ts,
            watermark=BoundedOutOfOrderness(delay),
            arrival_order="arr" if arrival else None,
        )

    return stream(left, "ts"), stream(right, "t")


def random_rows(seed: int, n: int = 30) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    rng = random.Random(seed)

    def rows(count: int) -> list[tuple[Any, ...]]:
        return [(rng.choice("abc"), rng.randrange(-25, 60), i, 0) for i in range(count)]

    return rows(rng.randrange(1, n)), rows(rng.randrange(1, n))


# ---------------------------------------------------------------------------- brute force
def windows_of(assigner: Any, ts: int) -> set[tuple[int, int]]:
    if isinstance(assigner, TumblingEventTimeWindows):
        start = ts - ts % assigner.size
        return {(start, start + assigner.size)}
    size, slide = assigner.size, assigner.slide
    return {(s, s + size) for s in range(ts - ts % slide, ts - size, -slide)}


def sessions(times: Iterable[int], gap: int) -> list[tuple[int, int]]:
    out: list[list[int]] = []
    for t in sorted(times):
        if out and t <= out[-1][1]:
            out[-1][1] = max(out[-1][1], t + gap)
        else:
            out.append([t, t + gap])
    return [(s, e) for s, e in out]


def window_groups(
    assigner: Any, left: list[tuple[Any, ...]], right: list[tuple[Any, ...]]
) -> dict[tuple[str, int, int], tuple[list[int], list[int]]]:
    """Each key and window with rows: (left values, right values)."""
    groups: dict[tuple[str, int, int], tuple[list[int], list[int]]] = {}
    if isinstance(assigner, EventTimeSessionWindows):
        for key in {r[0] for r in left + right}:
            times = [r[1] for r in left + right if r[0] == key]
            for s, e in sessions(times, assigner.gap):
                ls = [r[2] for r in left if r[0] == key and s <= r[1] < e]
                rs = [r[2] for r in right if r[0] == key and s <= r[1] < e]
                groups[(key, s, e)] = (ls, rs)
        return groups
    for side, rows in enumerate((left, right)):
        for key, ts, n, _ in rows:
            for s, e in windows_of(assigner, ts):
                groups.setdefault((key, s, e), ([], []))[side].append(n)
    return groups


class Pair(JoinFunction[Any, Any, Any]):
    def join(self, first: Any, second: Any) -> tuple[int, int]:
        return (first.n, second.m)


class Sizes(CoGroupFunction[Any, Any, Any]):
    def co_group(self, first: list[Any], second: list[Any]) -> Iterator[tuple[int, int]]:
        yield (len(first), len(second))


ASSIGNERS = [
    TumblingEventTimeWindows(10),
    SlidingEventTimeWindows(20, 5),
    EventTimeSessionWindows(4),
]


@pytest.mark.parametrize("assigner", ASSIGNERS, ids=["tumbling", "sliding", "session"])
def test_window_join_and_co_group_are_brute_force(spark: SparkSession, assigner: Any) -> None:
    for seed in range(2):
        left_rows, right_rows = random_rows(seed)
        left, right = streams(*frames(spark, left_rows, right_rows))
        groups = window_groups(assigner, left_rows, right_rows)
        joined = (
            left.join(right)
            .where("k")
            .equal_to("key")
            .window(assigner)
            .apply(Pair(), output_schema="n bigint, m bigint")
        )
        got = Counter(tuple(r) for r in joined.results.collect())
        expected = Counter(
            (k, s, e, a, b, e - 1) for (k, s, e), (ls, rs) in groups.items() for a in ls for b in rs
        )
        assert got == expected
        assert any(not ls or not rs for ls, rs in groups.values())  # windows with one side
        grouped = (
            left.co_group(right)
            .where("k")
            .equal_to("key")
            .window(assigner)
            .apply(Sizes(), output_schema="lefts bigint, rights bigint")
        )
        got = Counter(tuple(r) for r in grouped.results.collect())
        expected = Counter(
            (k, s, e, len(ls), len(rs), e - 1) for (k, s, e), (ls, rs) in groups.items()
        )
        assert got == expected


def test_sessions_merge_over_both_sides(spark: SparkSession) -> None:
    left, right = streams(*frames(spark, [("a", 0, 0, 0), ("a", 6, 1, 0)], [("a", 3, 9, 0)]))
    result = (
        left.join(right)
        .where("k")
        .equal_to("key")
        .window(EventTimeSessionWindows(4))
        .apply(lambda a, b: (a.n, b.m), output_schema="n bigint, m bigint")
    )
    assert sorted(tuple(r) for r in result.results.collect()) == [
        ("a", 0, 10, 0, 9, 9),
        ("a", 0, 10, 1, 9, 9),
    ]


def test_inner_join_and_co_group_with_an_empty_side(spark: SparkSession) -> None:
    left, right = streams(*frames(spark, [("a", 1, 1, 0), ("b", 2, 2, 0)], [("a", 3, 3, 0)]))

    def both(lefts: list[Any], rights: list[Any]) -> list[tuple[list[int], list[int]]]:
        return [([r.n for r in lefts], [r.m for r in rights])]

    joined = left.join(right).where("k").equal_to("key").window(TumblingEventTimeWindows(10))
    assert [
        tuple(r) for r in joined.apply(Pair(), output_schema="n bigint, m bigint").results.collect()
    ] == [("a", 0, 10, 1, 3, 9)]
    grouped = (
        left.co_group(right)
        .where("k")
        .equal_to("key")
        .window(TumblingEventTimeWindows(10))
        .apply(both, output_schema="lefts array<bigint>, rights array<bigint>")
    )
    assert sorted(tuple(r) for r in grouped.results.collect()) == [
        ("a", 0, 10, [1], [3], 9),
        ("b", 0, 10, [2], [], 9),
    ]


@pytest.mark.parametrize("sized", [False, True], ids=["key-groups", "one-task"])
def test_window_join_firings_and_late_rows_of_each_side_in_arrival_order(
    spark: SparkSession, sized: bool
) -> None:
    left_rows = [
        ("k", 1, 1, 0),
        ("k", 12, 2, 1),
        ("k", 25, 3, 3),
        ("k", 4, 4, 4),
        ("k", None, 5, 4),
    ]
    right_rows = [("k", 2, 1, 0), ("k", 11, 2, 1), ("k", 3, 3, 2), ("k", 26, 4, 3), ("k", 5, 5, 4)]
    left, right = streams(*frames(spark, left_rows, right_rows, sized=sized), arrival=True)
    result = (
        left.join(right)
        .where("k")
        .equal_to("key")
        .window(TumblingEventTimeWindows(10))
        .allowed_lateness(5)
        .side_output_late_data(LATE)
        .apply(Pair(), output_schema="n bigint, m bigint")
    )
    assert result.plan.one_task is sized  # (both ways to the watermark of two inputs)
    with result:
        got = Counter(tuple(r) for r in result.results.collect())
        late = sorted(
            (
                r.side,
                (r.left or r.right).n if r.side == "left" else r.right.m,
                r.event_time,
                r.late_watermark,
                r.late_reason,
            )
            for r in result.get_side_output(LATE).collect()
        )
    # [0, 10) fires at watermark min(12, 11) - 1 = 10 with (1, 1), again for the right row at
    # 3 within the lateness; at watermark min(25, 26) - 1 = 24 its cleanup time 14 has passed
    assert got == Counter(
        {
            ("k", 0, 10, 1, 1, 9): 2,
            ("k", 0, 10, 1, 3, 9): 1,
            ("k", 10, 20, 2, 2, 19): 1,
            ("k", 20, 30, 3, 4, 29): 1,
        }
    )
    assert late == [
        ("left", 4, 4, 24, "late"),
        ("left", 5, None, 24, "null_event_time"),
        ("right", 5, 5, 24, "late"),
    ]


def test_the_watermark_is_the_smaller_of_the_inputs(spark: SparkSession) -> None:
    # The right input's rows trail: its watermark holds the join's back, so the left row at 3
    # arriving after a left row at 50 is not late (Flink's rule for two inputs).
    left, right = streams(
        *frames(spark, [("k", 50, 1, 0), ("k", 3, 2, 1)], [("k", 2, 7, 0), ("k", 4, 8, 1)]),
        arrival=True,
    )
    result = (
        left.join(right)
        .where("k")
        .equal_to("key")
        .window(TumblingEventTimeWindows(10))
        .side_output_late_data(LATE)
        .apply(Pair(), output_schema="n bigint, m bigint")
    )
    assert sorted(tuple(r)[3:5] for r in result.results.collect()) == [(2, 7), (2, 8)]
    assert result.get_side_output(LATE).count() == 0


def test_each_input_has_its_own_watermark_delay(spark: SparkSession) -> None:
    # At arrival 1 the watermark is min(20 - 0, 25 - 10) - 1 = 14: the rows at 13 and 14 are
    # on time (with one delay of 0 for both, it would be 19, and both late)
    left_df, right_df = frames(
        spark, [("k", 20, 1, 0), ("k", 13, 2, 1)], [("k", 25, 7, 0), ("k", 14, 8, 1)]
    )
    left = WindowedStream.from_dataframe(
        left_df, event_time="ts", watermark=BoundedOutOfOrderness(0), arrival_order="arr"
    )
    right = WindowedStream.from_dataframe(
        right_df, event_time="t", watermark=BoundedOutOfOrderness(10), arrival_order="arr"
    )
    result = (
        left.join(right)
        .where("k")
        .equal_to("key")
        .window(TumblingEventTimeWindows(10))
        .side_output_late_data(LATE)
        .apply(Pair(), output_schema="n bigint, m bigint")
    )
    assert sorted(tuple(r)[1:5] for r in result.results.collect()) == [
        (10, 20, 2, 8),
        (20, 30, 1, 7),
    ]
    assert result.get_side_output(LATE).count() == 0


def test_triggers_see_the_tagged_rows(
    spark: SparkSession, capsys: pytest.CaptureFixture[str]
) -> None:
    left, right = streams(
        *frames(spark, [("a", 1, 1, 0), ("a", 2, 2, 0)], [("a", 3, 5, 0), ("a", 4, 6, 0)])
    )
    joined = (
        left.join(right)
        .where("k")
        .equal_to("key")
        .window(TumblingEventTimeWindows(10))
        .trigger(CountTrigger(3))  # fires at the third row of either side
    )
    joined.explain()
    assert "route: batch-replay" in capsys.readouterr().out
    result = joined.apply(Pair(), output_schema="n bigint, m bigint")
    # event-time order 1, 2, 3: fires (1, 5), (2, 5); the fourth row does not fire again
    assert sorted(tuple(r)[3:5] for r in result.results.collect()) == [(1, 5), (2, 5)]


def test_timestamps_and_key_expressions(spark: SparkSession) -> None:
    from pyspark.sql import functions as F  # noqa: N812

    t0 = datetime(2024, 1, 1, tzinfo=UTC)
    left = spark.createDataFrame([("A", t0, 1)], "name string, at timestamp, n bigint")
    right = spark.createDataFrame([("a", t0, 2)], "user string, seen timestamp, m bigint")
    result = (
        WindowedStream.from_dataframe(left, event_time="at")
        .join(WindowedStream.from_dataframe(right, event_time="seen"))
        .where(F.lower("name").alias("user"))
        .equal_to("user")
        .window(TumblingEventTimeWindows("1 minute"))
        .apply(Pair(), output_schema="n bigint, m bigint")
    )
    row = result.results.collect()[0]
    # (collect() gives naive times in the session time zone, UTC here)
    assert (row.user, row.window_start, row.n, row.m) == ("a", t0.replace(tzinfo=None), 1, 2)


def test_mistakes_are_reported_before_any_job(spark: SparkSession) -> None:
    left, right = streams(*frames(spark, [("a", 1, 1, 0)], [("a", 1, 1, 0)]))
    with pytest.raises(ValueError, match="equal_to: unknown column 'nope'"):
        left.join(right).where("k").equal_to("nope")
    with pytest.raises(ValueError, match=r"equal_to: the key 'm' \(bigint\).*'k' \(string\)"):
        left.join(right).where("k").equal_to("m")
    with pytest.raises(ValueError, match="give as many on each side"):
        left.join(right).where("k", "n").equal_to("key")
    with pytest.raises(ValueError, match="output_schema is required"):
        left.join(right).where("k").equal_to("key").window(TumblingEventTimeWindows(5)).apply(
            lambda a, b: (a, b)
        )
    with pytest.raises(ValueError, match="must be a DataStream"):
        left.join(right.key_by("key"))
    stamped = WindowedStream.from_dataframe(
        spark.createDataFrame([("a", datetime(2024, 1, 1, tzinfo=UTC))], "key string, t timestamp"),
        event_time="t",
    )
    with pytest.raises(ValueError, match="event_time columns differ in type"):
        left.join(stamped).where("k").equal_to("key")
    with pytest.raises(ValueError, match="lower_bound must be <= upper_bound"):
        left.key_by("k").interval_join(right.key_by("key")).between(3, 2)


def seconds(df: DataFrame, ts: str, unit: str | None = "s", **source: Any) -> Any:
    return WindowedStream.from_dataframe(
        df, event_time=ts, event_time_unit=unit, arrival_order="arr", **source
    )


def test_inputs_in_seconds_join_as_milliseconds_and_give_seconds_back(
    spark: SparkSession,
) -> None:
    """The rows of the test of firings and late rows above, their times in seconds and the
    durations in seconds: the same windows, pairs and late rows, every time in seconds (each
    input's watermark reads its own column in its unit)."""
    left_df, right_df = frames(
        spark,
        [("k", 1, 1, 0), ("k", 12, 2, 1), ("k", 25, 3, 3), ("k", 4, 4, 4), ("k", None, 5, 4)],
        [("k", 2, 1, 0), ("k", 11, 2, 1), ("k", 3, 3, 2), ("k", 26, 4, 3), ("k", 5, 5, 4)],
    )
    result = (
        seconds(left_df, "ts")
        .join(seconds(right_df, "t"))
        .where("k")
        .equal_to("key")
        .window(TumblingEventTimeWindows("10 seconds"))
        .allowed_lateness("5 seconds")
        .side_output_late_data(LATE)
        .apply(Pair(), output_schema="n bigint, m bigint")
    )
    with result:
        got = Counter(tuple(r) for r in result.results.collect())
        late = sorted(
            (
                r.side,
                r.left.n if r.side == "left" else r.right.m,
                r.event_time,
                r.late_watermark,
                r.late_reason,
            )
            for r in result.get_side_output(LATE).collect()
        )
    assert got == Counter(
        {
            ("k", 0, 10, 1, 1, 9): 2,
            ("k", 0, 10, 1, 3, 9): 1,
            ("k", 10, 20, 2, 2, 19): 1,
            ("k", 20, 30, 3, 4, 29): 1,
        }
    )
    # the watermark min(25 s, 26 s) - 1 ms is 24.999 s: 24 in seconds, at or before it
    assert late == [
        ("left", 4, 4, 24, "late"),
        ("left", 5, None, 24, "null_event_time"),
        ("right", 5, 5, 24, "late"),
    ]


@pytest.mark.parametrize("arrival", [False, True], ids=["range join", "replay"])
def test_an_interval_join_in_seconds(spark: SparkSession, arrival: bool) -> None:
    """Bounds are durations; the function's timestamps are the operator's milliseconds, the
    results' max_timestamp and late watermark are in the inputs' unit (seconds)."""
    left_late = OutputTag("left-late")
    left_df, right_df = frames(
        spark,
        [("a", 10, 1, 0), ("a", 19, 2, 2), ("a", 8, 3, 3)],
        [("a", 9, 1, 1), ("a", 20, 2, 2), ("a", 17, 3, 3), ("a", 19, 4, 4)],
    )

    def side(df: DataFrame, ts: str) -> Any:
        stream = WindowedStream.from_dataframe(
            df, event_time=ts, event_time_unit="s", arrival_order="arr" if arrival else None
        )
        return stream.key_by(df.columns[0])

    result = (
        side(left_df, "ts")
        .interval_join(side(right_df, "t"))
        .between("-2 seconds", "2 seconds")
        .side_output_left_late_data(left_late)
        .process(Timed(), output_schema=INTERVAL_OUT)
    )
    with result:
        got = sorted(tuple(r) for r in result.results.collect())
        lefts = [tuple(r) for r in result.get_side_output(left_late).collect()]
    if arrival:  # as the test of late rows below: the left row at 8 s is late
        assert got == [
            ("a", 1, 1, 10_000, 9_000, 10),
            ("a", 2, 2, 19_000, 20_000, 20),
            ("a", 2, 4, 19_000, 19_000, 19),
        ]
        assert lefts == [("a", 8, 3, 3, 18, "late")]
    else:  # no watermark: every pair within 2 s
        assert got == [
            ("a", 1, 1, 10_000, 9_000, 10),
            ("a", 2, 2, 19_000, 20_000, 20),
            ("a", 2, 3, 19_000, 17_000, 19),
            ("a", 2, 4, 19_000, 19_000, 19),
            ("a", 3, 1, 8_000, 9_000, 9),
        ]
        assert lefts == []


def test_inputs_of_other_units_are_refused(spark: SparkSession) -> None:
    """The joined stream holds both inputs' times in one column: one unit, or a clear
    error naming both columns."""
    left_df, right_df = frames(spark, [("a", 1, 1, 0)], [("a", 1, 1, 0)])
    with pytest.raises(
        ValueError,
        match="join: the event_time columns differ in unit: 'ts' of the left input is epoch "
        "seconds, 't' of the right input epoch milliseconds",
    ):
        seconds(left_df, "ts").join(seconds(right_df, "t", None)).where("k").equal_to("key")
    interval = (
        seconds(left_df, "ts", "us")
        .key_by("k")
        .interval_join(seconds(right_df, "t", "ns").key_by("key"))
    )
    with pytest.raises(ValueError, match="'ts' of the left input is epoch microseconds"):
        interval.between(0, 1).process(Timed(), output_schema=INTERVAL_OUT)
    with pytest.raises(ValueError, match="processing_time columns differ in unit"):
        seconds(left_df, "ts", processing_time="arr", processing_time_unit="s").join(
            seconds(right_df, "t", processing_time="arr")
        ).where("k").equal_to("key")
    # declared milliseconds and the default are one unit
    joined = seconds(left_df, "ts", "ms").join(seconds(right_df, "t", None))
    union = joined.where("k").equal_to("key").union
    assert union.source.event_unit is TimeUnit.MILLISECONDS


# ---------------------------------------------------------------------------- interval join
class Timed(ProcessJoinFunction[Any, Any, Any]):
    def process_element(self, left: Any, right: Any, context: Any) -> Iterator[Any]:
        yield (left.n, right.m, context.left_timestamp(), context.right_timestamp())


INTERVAL_OUT = "n bigint, m bigint, lt bigint, rt bigint"


def interval_pairs(
    left: list[tuple[Any, ...]], right: list[tuple[Any, ...]], lo: int, hi: int
) -> Counter[tuple[Any, ...]]:
    return Counter(
        (a[0], a[2], b[2], a[1], b[1], max(a[1], b[1]))
        for a in left
        for b in right
        if a[0] == b[0] and lo <= b[1] - a[1] <= hi
    )


@pytest.mark.parametrize(
    ("lower", "upper", "lower_inclusive", "upper_inclusive"),
    [(-5, 5, True, True), (-5, 5, False, False), (-12, -3, True, False), (0, 2, True, True)],
)
def test_interval_join_is_every_pair_within_the_bounds(
    spark: SparkSession, lower: int, upper: int, lower_inclusive: bool, upper_inclusive: bool
) -> None:
    left_rows, right_rows = random_rows(3, 40)
    left, right = streams(*frames(spark, left_rows, right_rows))
    joined = left.key_by("k").interval_join(right.key_by("key")).between(lower, upper)
    if not lower_inclusive:
        joined = joined.lower_bound_exclusive()
    if not upper_inclusive:
        joined = joined.upper_bound_exclusive()
    result = joined.process(Timed(), output_schema=INTERVAL_OUT)
    lo = lower if lower_inclusive else lower + 1
    hi = upper if upper_inclusive else upper - 1
    expected = interval_pairs(left_rows, right_rows, lo, hi)
    assert expected  # the data has pairs within the bounds
    assert Counter(tuple(r) for r in result.results.collect()) == expected
    # with an arrival order where every row arrives at once, nothing is late either
    left, right = streams(*frames(spark, left_rows, right_rows), arrival=True)
    replayed = left.key_by("k").interval_join(right.key_by("key")).between(lower, upper)
    replayed = replayed if lower_inclusive else replayed.lower_bound_exclusive()
    replayed = replayed if upper_inclusive else replayed.upper_bound_exclusive()
    result = replayed.process(Timed(), output_schema=INTERVAL_OUT)
    assert Counter(tuple(r) for r in result.results.collect()) == expected


def test_interval_join_late_rows_of_each_side_in_arrival_order(spark: SparkSession) -> None:
    left_late, right_late = OutputTag("left-late"), OutputTag("right-late")
    left_rows = [("a", 10, 1, 0), ("a", 19, 2, 2), ("a", 8, 3, 3), ("a", None, 4, 3)]
    right_rows = [("a", 9, 1, 1), ("a", 20, 2, 2), ("a", 17, 3, 3), ("a", 19, 4, 4)]
    left, right = streams(*frames(spark, left_rows, right_rows), arrival=True)
    result = (
        left.key_by("k")
        .interval_join(right.key_by("key"))
        .between(-2, 2)
        .side_output_left_late_data(left_late)
        .side_output_right_late_data(right_late)
        .process(Timed(), output_schema=INTERVAL_OUT)
    )
    with result:
        got = sorted(tuple(r) for r in result.results.collect())
        lefts = sorted((tuple(r) for r in result.get_side_output(left_late).collect()), key=repr)
        rights = sorted(tuple(r) for r in result.get_side_output(right_late).collect())
        metrics = result.collect_metrics()
    # arrival 1: no watermark yet (the right input had none); arrival 2: min(10, 9) - 1 = 8;
    # arrival 3 and 4: min(19, 20) - 1 = 18, the left row at 10 has left its buffer at 12
    assert got == [("a", 1, 1, 10, 9, 10), ("a", 2, 2, 19, 20, 20), ("a", 2, 4, 19, 19, 19)]
    assert lefts == [("a", 8, 3, 3, 18, "late"), ("a", None, 4, 3, 18, "null_event_time")]
    assert rights == [("a", 17, 3, 3, 18, "late")]
    assert metrics == {
        "num_elements": 7,
        "num_pairs": 3,
        "num_results": 3,
        "num_late_left": 2,
        "num_late_right": 1,
    }


def test_interval_join_without_arrival_order_sends_rows_without_time_to_the_late_output(
    spark: SparkSession,
) -> None:
    tag = OutputTag("left-late")
    left, right = streams(*frames(spark, [("a", None, 1, 0), ("a", 5, 2, 0)], [("a", 5, 3, 0)]))
    result = (
        left.key_by("k")
        .interval_join(right.key_by("key"))
        .between(0, 0)
        .side_output_left_late_data(tag)
        .process(lambda a, b: (a.n, b.m), output_schema="n bigint, m bigint")
    )
    assert [tuple(r) for r in result.results.collect()] == [("a", 2, 3, 5)]
    assert [tuple(r) for r in result.get_side_output(tag).collect()] == [
        ("a", None, 1, 0, None, "null_event_time")
    ]
    assert result.collect_metrics()["num_late_left"] == 1
    with pytest.raises(ValueError, match="no side output"):
        result.get_side_output(OutputTag("other"))


# ---------------------------------------------------------------------------- streaming
def write_batches(directory: Path, batches: list[list[dict[str, Any]]]) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for i, rows in enumerate(batches):
        path = directory / f"part-{i:04d}.json"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        t = 1_600_000_000 + i * 10  # distinct modification times: the file source's order
        os.utime(path, (t, t))


def stream_batches(seed: int) -> tuple[list[list[dict[str, Any]]], list[list[dict[str, Any]]]]:
    rng = random.Random(seed)
    lefts, rights = [], []
    for b in range(4):
        for side, name in ((lefts, "n"), (rights, "m")):
            rows = []
            for i in range(6):
                ts = b * 8 + rng.randrange(-4, 4) - (12 if rng.random() < 0.15 else 0)
                rows.append({"k": rng.choice("ab"), "ts": ts, name: b * 10 + i, "arr": b})
            side.append(rows)
    # late on both sides: the watermark is past 12 (the window [0, 10) cleaned up) by now
    lefts[3].append({"k": "a", "ts": 1, "n": 99, "arr": 3})
    rights[3].append({"k": "b", "ts": 2, "m": 99, "arr": 3})
    # far in the future on both sides: the watermark passes every window
    lefts.append([{"k": "~", "ts": 1_000, "n": -1, "arr": 4}])
    rights.append([{"k": "~", "ts": 1_000, "m": -1, "arr": 4}])
    return lefts, rights


@pytest.mark.parametrize(
    ("unit", "how"), [(None, "apply"), ("s", "select")], ids=["milliseconds", "seconds"]
)
def test_streaming_window_join_equals_its_batch_replay(
    spark: SparkSession, tmp_path: Path, unit: str | None, how: str
) -> None:
    """In milliseconds with a join function, and the same numbers as seconds with durations
    of seconds and the pairs' columns selected (``select``): each input's own watermark
    reads its column in its unit."""
    ms = 1 if unit is None else 1_000  # the durations' unit
    lefts, rights = stream_batches(5)
    write_batches(tmp_path / "left", lefts)
    write_batches(tmp_path / "right", rights)
    left_schema, right_schema = (
        "k string, ts bigint, n bigint, arr bigint",
        ("k string, ts bigint, m bigint, arr bigint"),
    )

    def join(left_df: DataFrame, right_df: DataFrame, arrival: str | None) -> Any:
        def stream(df: DataFrame) -> Any:
            return WindowedStream.from_dataframe(
                df,
                event_time="ts",
                event_time_unit=unit,
                watermark=BoundedOutOfOrderness(2 * ms),
                arrival_order=arrival,
            )

        return (
            stream(left_df)
            .join(stream(right_df))
            .where("k")
            .equal_to("k")
            .window(TumblingEventTimeWindows(10 * ms))
            .allowed_lateness(3 * ms)
            .side_output_late_data(LATE)
        )

    def finish(joined: Any) -> Any:
        if how == "select":
            return joined.select("left.n", "right.m")
        return joined.apply(lambda a, b: (a.n, b.m), output_schema="n bigint, m bigint")

    def read_stream(name: str, schema: str) -> DataFrame:
        return (
            spark.readStream.schema(schema)
            .option("maxFilesPerTrigger", 1)
            .json(str(tmp_path / name))
        )

    result = finish(
        join(read_stream("left", left_schema), read_stream("right", right_schema), None)
    )
    # an input without a declared unit is checked on its own, named by its side
    checks = sorted((c.column, c.where) for c in result.unit_checks)
    assert checks == ([] if unit else [("ts", "the left input"), ("ts", "the right input")])
    query = write_results_and_late(
        result,
        str(tmp_path / "out" / "results"),
        str(tmp_path / "out" / "late"),
        str(tmp_path / "out" / "checkpoint"),
        available_now=True,
    )
    query.awaitTermination()
    assert query.exception() is None
    streamed = Counter(
        tuple(r)
        for r in spark.read.parquet(str(tmp_path / "out" / "results")).drop("batch_id").collect()
        if r.k != "~"
    )
    late_path = tmp_path / "out" / "late"
    streamed_late = (
        Counter(
            (r.side, r.event_time, r.late_watermark)
            for r in spark.read.parquet(str(late_path)).collect()
        )
        if late_path.exists()
        else Counter()
    )

    batch_left = spark.createDataFrame([r for b in lefts for r in b], left_schema)
    batch_right = spark.createDataFrame([r for b in rights for r in b], right_schema)
    replay = finish(join(batch_left, batch_right, "arr"))
    with replay:
        expected = Counter(tuple(r) for r in replay.results.collect() if r.k != "~")
        expected_late = Counter(
            (r.side, r.event_time, r.late_watermark) for r in replay.get_side_output(LATE).collect()
        )
    assert streamed
    assert streamed == expected
    assert expected_late  # some rows were late
    assert streamed_late == expected_late
    assert {r[1:3] for r in expected} >= {(0, 10), (10, 20)}  # in the unit of the inputs
    for check in result.unit_checks:  # observed with the micro-batches of its input
        assert any(p["observedMetrics"].get(check.name) for p in query.recentProgress)
