"""The built-in aggregations (``.sum`` / ``.min`` / ``.max`` / ``.min_by`` / ``.max_by``) as
native Spark plans against the window operator (the reference: the same built-in under a
trigger that is the default one in another class), on small random data with nulls, ties,
``-0.0`` and NaN: results, late rows and metrics, for every route a built-in takes."""

from __future__ import annotations

import contextlib
import random
import sys
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest
from pyspark import cloudpickle as spark_cloudpickle
from pyspark.sql import DataFrame, SparkSession

from windowing import BoundedOutOfOrderness, OutputTag, TumblingEventTimeWindows, WindowedStream
from windowing.assigners import (
    EventTimeSessionWindows,
    HoppingEventTimeWindows,
    SlidingDistinctAssigner,
)
from windowing.evictors import CountEvictor, TimeEvictor
from windowing.spark.planning import BUILTIN_PATH_CONF, Route
from windowing.time import MIN_TIMESTAMP
from windowing.triggers import (
    ContinuousEventTimeTrigger,
    CountTrigger,
    EventTimeTrigger,
    PurgingTrigger,
)

spark_cloudpickle.register_pickle_by_value(sys.modules[__name__])  # type: ignore[no-untyped-call]

LATE = OutputTag("late")
SCHEMA = "k string, t long, i bigint, n int, d double, s string, m decimal(10,2), a long"
NAN = float("nan")


class SameAsDefault(EventTimeTrigger):
    """The default trigger under another class: the window operator runs the built-in."""


def random_rows(seed: int, n: int = 120, *, extreme: bool = False) -> list[tuple[Any, ...]]:
    """Keys a / b / null; event times with ties, some null; fields with nulls and ties (floats
    with ``-0.0``, ``0.0`` and NaN); an arrival column ``a`` mostly rising with event time,
    with ties, a few rows far behind (late) and a few null."""
    rng = random.Random(seed)
    rows = []
    for seq in range(n):
        t: int | None = seq // 3 - rng.choice([0, 0, 0, 1, 4, 12, 30])
        if extreme and rng.random() < 0.2:
            t = MIN_TIMESTAMP + rng.choice([0, 1])
        if rng.random() < 0.04:
            t = None
        rows.append(
            (
                None if rng.random() < 0.05 else rng.choice("ab"),
                t,
                None if rng.random() < 0.15 else rng.randint(-3, 3),
                None if rng.random() < 0.15 else rng.randint(-3, 3),
                None if rng.random() < 0.15 else rng.choice([-0.0, 0.0, 1.5, NAN, -2.0]),
                None if rng.random() < 0.15 else rng.choice("xyz"),
                None if rng.random() < 0.15 else Decimal(rng.randint(-99, 99)) / 10,
                None if rng.random() < 0.03 else seq // 2,
            )
        )
    return rows


def rows_of(df: DataFrame) -> list[str]:
    """Rows as text (NaN equal to NaN, ``-0.0`` told from ``0.0``), sorted."""
    return sorted(repr(tuple(r)) for r in df.collect())


def compare(windowed: Any, method: str, *args: Any, late: bool = False) -> list[str]:
    """The built-in ``method(*args)`` natively and in the window operator: the same results
    (columns, names, types, values), late rows and metrics. Returns the native route's name
    and the results (as text)."""
    with builtin_path("native"):  # (the planner may prefer whole columns)
        native = getattr(windowed, method)(*args)
    operator = getattr(windowed.trigger(SameAsDefault()), method)(*args)
    assert native.plan.native and native.plan.operator is None, native.plan
    assert operator.plan.route is Route.BATCH_REPLAY
    with native, operator:
        assert native.results.schema == operator.results.schema
        want = rows_of(operator.results)
        assert rows_of(native.results) == want
        assert len(want) > 3
        if late:
            late_rows = rows_of(operator.get_side_output(LATE))
            assert rows_of(native.get_side_output(LATE)) == late_rows
            assert late_rows
        assert native.collect_metrics() == operator.collect_metrics()
    return [native.plan.route.value, *want]


@contextlib.contextmanager
def builtin_path(path: str) -> Iterator[None]:
    """Built-ins planned inside the block take ``path`` where they can."""
    spark = SparkSession.active()
    spark.conf.set(BUILTIN_PATH_CONF, path)
    try:
        yield
    finally:
        spark.conf.unset(BUILTIN_PATH_CONF)


def source(df: DataFrame, *, arrival: bool = False) -> Any:
    if arrival:
        return WindowedStream.from_dataframe(
            df, event_time="t", arrival_order="a", watermark=BoundedOutOfOrderness(3)
        )
    return WindowedStream.from_dataframe(df, event_time="t")


@pytest.mark.differential(Route.NATIVE_TUMBLING)
@pytest.mark.parametrize(
    ("method", "args"),
    [("min_by", ("d", False)), ("sum", ("i",))],
)
def test_tumbling_windows(spark: SparkSession, method: str, args: tuple[Any, ...]) -> None:
    """Nulls (an all-null window gives its first row), ties (the first or last row in replay
    order), ``-0.0`` below ``0.0`` and NaN above every number."""
    df = spark.createDataFrame(random_rows(1), SCHEMA)
    windowed = source(df).key_by("k").window(TumblingEventTimeWindows(6, 1))
    assert compare(windowed.side_output_late_data(LATE), method, *args)[0] == "native-tumbling"


#: The columns of fixed width (no string field): the first row's columns aggregate by hash.
FIXED = ["k", "t", "i", "n", "d", "m", "a"]


@pytest.mark.differential(Route.NATIVE_TUMBLING, Route.NATIVE_HOPPING_DISJOINT)
@pytest.mark.parametrize(
    ("assigner", "method", "args", "extreme"),
    [
        (TumblingEventTimeWindows(6, 1), "sum", ("i",), False),
        (TumblingEventTimeWindows(4), "min", ("n",), False),
        (TumblingEventTimeWindows(10, 3), "max", ("m",), True),
        (HoppingEventTimeWindows(3, 5, 1), "sum", ("n",), False),
        (TumblingEventTimeWindows(6, 1), "max_by", ("i", False), False),
        (TumblingEventTimeWindows(4), "min_by", ("n",), False),
        (TumblingEventTimeWindows(10, 3), "max_by", ("m",), True),
        (HoppingEventTimeWindows(3, 5, 1), "min_by", ("a", False), False),
    ],
    ids=[
        "sum",
        "min",
        "max, ends of time",
        "disjoint hopping",
        "max_by, the last of equal rows",
        "min_by",
        "max_by of a decimal, ends of time",
        "min_by, disjoint hopping",
    ],
)
def test_by_hash_in_steps(
    spark: SparkSession, assigner: Any, method: str, args: tuple[Any, ...], extreme: bool
) -> None:
    """Fields of fixed width, no sort, after one shuffle: the first row's columns as
    first(...) by event time, then the content hash, in two hash aggregates (per key, window
    and event time, then per key and window); the row min_by / max_by picks in three (per
    key, window, value and event time; per key, window and value; per key and window).
    Many rows tie on event time and on the value."""
    df = spark.createDataFrame(random_rows(7, extreme=extreme), SCHEMA).select(*FIXED)
    windowed = source(df).key_by("k").window(assigner).side_output_late_data(LATE)
    route, *_ = compare(windowed, method, *args)
    assert route in ("native-tumbling", "native-hopping-disjoint")
    plan = getattr(windowed, method)(*args)
    assert plan.plan.native and "by hash aggregates" in plan.plan.reason
    executed = plan.results._jdf.queryExecution().executedPlan().toString()
    assert "HashAggregate" in executed and "Sort" not in executed


@pytest.mark.differential(Route.NATIVE_SESSIONS)
def test_sessions_split_by_event_time(spark: SparkSession) -> None:
    """Sessions of fixed-width columns: the first row per key, session and event time, then
    per key and session, beside the session's first and last event times (the rows are
    partitioned by key already, by the sort that finds the sessions)."""
    df = spark.createDataFrame(random_rows(9), SCHEMA).select(*FIXED)
    windowed = source(df).key_by("k").window(EventTimeSessionWindows(2))
    assert compare(windowed, "sum", "i")[0] == "native-sessions"


def test_the_planner_takes_the_faster_path(spark: SparkSession) -> None:
    """Where whole columns also apply: the native plan, by hash or (a pick by a struct key:
    a float min_by, a first row with a string column) sorting, each measured as fast or
    faster;
    ``spark.windowing.builtinPath`` forces either path. No Spark job runs."""
    df = spark.createDataFrame(random_rows(8, 10), SCHEMA)
    windowed = source(df).key_by("k").window(TumblingEventTimeWindows(10))
    fixed = source(df.select(*FIXED)).key_by("k").window(TumblingEventTimeWindows(10))
    for plan in (fixed.sum("i").plan, fixed.max_by("i").plan):
        assert plan.native and "by hash aggregates in steps after one shuffle" in plan.reason
        assert "measured as fast as whole columns or faster" in plan.reason
    for plan in (fixed.max_by("d").plan, windowed.sum("i").plan):
        assert plan.native and "Spark sorts every row for it" in plan.reason
    with builtin_path("columnar"):
        for plan in (fixed.sum("i").plan, windowed.max_by("i").plan):
            assert plan.route is Route.BATCH_REPLAY and plan.columnar is not None
            assert "on whole columns (spark.windowing.builtinPath = columnar" in plan.reason
        # where whole columns do not apply (in arrival order), the native plan all the same
        arrival = source(df, arrival=True).key_by("k").window(TumblingEventTimeWindows(10))
        assert arrival.max_by("i").plan.native
        assert "whole columns do not apply" in arrival.max_by("i").plan.reason
    with builtin_path("fastest"), pytest.raises(ValueError, match="builtinPath must be one of"):
        _ = fixed.sum("i").plan


@pytest.mark.differential(Route.NATIVE_TUMBLING)
def test_the_window_at_the_start_of_time_fires_per_row(spark: SparkSession) -> None:
    df = spark.createDataFrame(random_rows(2, extreme=True), SCHEMA)
    windowed = source(df).key_by("k").window(TumblingEventTimeWindows(10, 3)).allowed_lateness(3)
    route, *results = compare(windowed, "max", "d")
    assert route == "native-tumbling"
    assert any(f", {MIN_TIMESTAMP + 1}, " in r for r in results)  # its firings, per row


@pytest.mark.differential(Route.NATIVE_TUMBLING_ARRIVAL)
def test_arrival_order_with_lateness_and_late_rows(spark: SparkSession) -> None:
    """Ties to the last row in arrival order (not event time); a firing per late row, on top
    of the window's rows so far; rows past the lateness to the side output."""
    df = spark.createDataFrame(random_rows(3), SCHEMA)
    windowed = (
        source(df, arrival=True)
        .key_by("k")
        .window(TumblingEventTimeWindows(10))
        .allowed_lateness(4)
        .side_output_late_data(LATE)
    )
    assert compare(windowed, "max_by", "i", False, late=True)[0] == "native-tumbling-arrival"


@pytest.mark.differential(Route.NATIVE_HOPPING)
def test_hopping_windows(spark: SparkSession) -> None:
    """Panes: each window's picks merged from its panes' (by their replay-order keys)."""
    df = spark.createDataFrame(random_rows(4), SCHEMA)
    windowed = source(df).key_by("k").window(HoppingEventTimeWindows(8, 3, 1))
    assert compare(windowed, "max_by", "s")[0] == "native-hopping"


@pytest.mark.differential(Route.NATIVE_SESSIONS, Route.NATIVE_KIP450)
@pytest.mark.parametrize(
    ("assigner", "method", "args"),
    [
        (EventTimeSessionWindows(1), "sum", ("m",)),
        (SlidingDistinctAssigner(4, grace=0), "max_by", ("d", False)),
    ],
    ids=["sessions", "KIP-450"],
)
def test_sessions_and_kip450_windows(
    spark: SparkSession, assigner: Any, method: str, args: tuple[Any, ...]
) -> None:
    df = spark.createDataFrame(random_rows(5), SCHEMA)
    route = compare(source(df).window_all(assigner), method, *args)[0]
    assert route == ("native-sessions" if method == "sum" else "native-kip450")


def test_a_sum_beyond_its_type_fails_the_query_naming_the_field(spark: SparkSession) -> None:
    """Exact whatever the order of additions: the partial sums may leave ``bigint``."""
    big = 2**62
    rows = [("a", 1, big, 2**30), ("a", 2, big, 2**30), ("a", 3, -big, 2**30)]
    df = spark.createDataFrame(rows, "k string, t long, i bigint, n int")
    windowed = source(df).key_by("k").window(TumblingEventTimeWindows(10))
    total = windowed.sum("i")
    assert total.plan.route is Route.NATIVE_TUMBLING
    assert [r.i for r in total.results.collect()] == [big]
    with pytest.raises(Exception, match=r"the sum of 'n' in a window, 3221225472, does not fit"):
        windowed.sum("n").results.collect()
    # bigint: the high and low 32 bits' sums recombined in bigint, at and past its ends
    edges = [("a", 1, -big, 0), ("a", 2, -big, 0), ("b", 1, big - 1, 0), ("b", 2, big, 0)]
    edges += [("c", 1, -big, 0), ("c", 2, -big, 0), ("c", 3, -1, 0)]
    df = spark.createDataFrame(edges, "k string, t long, i bigint, n int")
    fits = source(df.where("k != 'c'")).key_by("k").window(TumblingEventTimeWindows(10))
    assert sorted(r.i for r in fits.sum("i").results.collect()) == [-(2**63), 2**63 - 1]
    beyond = source(df.where("k = 'c'")).key_by("k").window(TumblingEventTimeWindows(10))
    with pytest.raises(Exception, match=r"'i' in a window, -9223372036854775809, does not fit"):
        beyond.sum("i").results.collect()


def test_what_spark_cannot_compute_exactly_keeps_its_path(spark: SparkSession) -> None:
    """No Spark job runs: the plans only."""
    rows = [(*r, r[6]) for r in random_rows(6, 10)]
    df = spark.createDataFrame(rows, SCHEMA + ", w decimal(20,2)")
    windowed = source(df).key_by("k").window(TumblingEventTimeWindows(10))
    for field, why in [
        ("d", "a sum of a double field depends on the order of its additions"),
        ("w", "Python decimals round sums past 28 digits"),
    ]:
        plan = windowed.sum(field).plan
        assert plan.route is Route.BATCH_REPLAY and "; no native plan: a sum of a" in plan.reason
        assert why in plan.reason
    assert windowed.min("d").plan.native and windowed.max_by("w").plan.native
    assert windowed.trigger(EventTimeTrigger()).sum("i").plan.native
    # count triggers and evictors as for .agg (test_native_counts.py)
    counts = Route.NATIVE_TUMBLING_COUNTS
    assert windowed.trigger(CountTrigger(2)).sum("i").plan.route is counts
    assert windowed.evictor(CountEvictor(2)).sum("i").plan.route is counts
    # the jobs no native plan runs (as for .agg): the window operator, or whole columns
    assert not windowed.trigger(PurgingTrigger(ContinuousEventTimeTrigger(5))).sum("i").plan.native
    assert not windowed.trigger(CountTrigger(2)).evictor(TimeEvictor(5)).sum("i").plan.native
    hopping = source(df, arrival=True).key_by("k").window(HoppingEventTimeWindows(8, 3))
    assert not hopping.max("i").plan.native  # in arrival order: running sums only
