"""A window join's ``select``: its native plan (Spark's equi-join on key and window) against
the window operator's ``apply`` with a join function returning the same columns, on random
rows (null keys, rows without event time, windows at the ends of time); the operator's
``select`` where the native plan does not apply; mistakes reported before any job."""

from __future__ import annotations

import random
import sys
from typing import Any

import pytest
from pyspark import cloudpickle as spark_cloudpickle
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812

from windowing import BoundedOutOfOrderness, OutputTag, TumblingEventTimeWindows, WindowedStream
from windowing.assigners import EventTimeSessionWindows, HoppingEventTimeWindows
from windowing.evictors import CountEvictor
from windowing.spark.planning import Route
from windowing.time import MAX_TIMESTAMP, MIN_TIMESTAMP

pytestmark = pytest.mark.spark

spark_cloudpickle.register_pickle_by_value(sys.modules[__name__])  # type: ignore[no-untyped-call]

LEFT_SCHEMA = "k string, ts bigint, n bigint, arr bigint"
RIGHT_SCHEMA = "key string, t bigint, m bigint, arr bigint"
LATE = OutputTag("late")
NEAR_ENDS = [MIN_TIMESTAMP, MIN_TIMESTAMP + 3, MAX_TIMESTAMP - 4, MAX_TIMESTAMP]


def random_rows(seed: int) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """Both sides' rows: keys a, b, c or null, times in a few windows, at the ends of time
    or null, each row numbered."""
    rng = random.Random(seed)

    def rows(count: int) -> list[tuple[Any, ...]]:
        out = []
        for i in range(count):
            t = rng.choice([*([None] * 1), *NEAR_ENDS, *range(-25, 60)])
            out.append((rng.choice(["a", "b", "c", None]), t, i, i))
        return out

    return rows(rng.randrange(5, 40)), rows(rng.randrange(5, 40))


def joined(spark: SparkSession, seed: int, *, arrival: bool = False) -> Any:
    left, right = random_rows(seed)
    lf = spark.createDataFrame(left, LEFT_SCHEMA)
    rf = spark.createDataFrame(right, RIGHT_SCHEMA)

    def stream(df: DataFrame, ts: str) -> Any:
        return WindowedStream.from_dataframe(
            df,
            event_time=ts,
            watermark=BoundedOutOfOrderness(3),
            arrival_order="arr" if arrival else None,
        )

    return stream(lf, "ts").join(stream(rf, "t")).where("k").equal_to("key")


def outputs(result: Any) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]], Any]:
    with result:
        results = sorted((tuple(r) for r in result.results.collect()), key=repr)
        late = sorted((tuple(r) for r in result.get_side_output(LATE).collect()), key=repr)
        return results, late, result.collect_metrics()


def pair(left: Any, right: Any) -> tuple[Any, ...]:
    return (left.n, right.m, left.n * 10 + right.m)


PAIR_SCHEMA = "n bigint, m bigint, nm bigint"


def selected() -> tuple[Any, ...]:
    """The columns of :func:`pair` as ``select`` takes them (built once a session runs)."""
    return ("left.n", F.col("right.m"), (F.col("left.n") * 10 + F.col("right.m")).alias("nm"))


@pytest.mark.differential(Route.NATIVE_WINDOW_JOIN, Route.BATCH_REPLAY)
@pytest.mark.parametrize(
    ("seed", "assigner", "lateness"),
    [
        (1, TumblingEventTimeWindows(10), 0),
        (2, TumblingEventTimeWindows(7, 3), 5),
        (3, TumblingEventTimeWindows(10, -4), MAX_TIMESTAMP),
        (5, HoppingEventTimeWindows(10, 4), 0),
        (4, HoppingEventTimeWindows(7, 2, 1), 5),
        (7, HoppingEventTimeWindows(6, 4, 1), MAX_TIMESTAMP),
        (2, HoppingEventTimeWindows(10, 10), 3),
    ],
    ids=[
        "tumbling size 10",
        "tumbling offset 3 lateness 5",
        "tumbling lateness to the end of time",
        "hopping 10 every 4",
        "hopping 7 every 2 offset 1 lateness 5",
        "hopping 6 every 4 offset 1 lateness to the end of time",
        "hopping with its slide equal to its size",
    ],
)
def test_native_select_equals_the_operators_join_function(
    spark: SparkSession, seed: int, assigner: Any, lateness: int
) -> None:
    """Pairs, late rows (no event time) and every metric of the native plan equal the window
    operator's with a join function computing the same columns: hopping windows too, where
    each row is in several windows (and is counted once), and windows at the ends of time."""

    def window(j: Any) -> Any:
        return j.window(assigner).allowed_lateness(lateness).side_output_late_data(LATE)

    native = window(joined(spark, seed)).select(*selected())
    assert native.plan.route is Route.NATIVE_WINDOW_JOIN
    operator = window(joined(spark, seed)).apply(pair, output_schema=PAIR_SCHEMA)
    assert operator.plan.route is Route.BATCH_REPLAY
    got, want = outputs(native), outputs(operator)
    assert got == want
    assert got[0], "some pairs"
    assert any(r[0] is None for r in got[0]), "null keys join each other"
    names = ["k", "window_start", "window_end", "n", "m", "nm", "max_timestamp"]
    assert native.results.columns == names
    left, right = random_rows(seed)
    assert got[2].num_input_rows == len(left) + len(right)  # each row once, copies or not
    if isinstance(assigner, HoppingEventTimeWindows) and assigner.size > assigner.slide:
        pairs = {(r[3], r[4]) for r in got[0]}
        assert len(got[0]) > len(pairs), "a pair in several windows"


@pytest.mark.parametrize(
    "assigner",
    [HoppingEventTimeWindows(4, 10), HoppingEventTimeWindows(9, 3, 2)],
    ids=["gaps between windows", "a window ending at the start of time"],
)
def test_hopping_joins_the_native_plan_refuses_run_in_the_operator(
    spark: SparkSession, assigner: Any
) -> None:
    """Rows in no window (a metric the join has no branch for) and the window ending at
    the start of time (its rows fire one by one) are the window operator's."""
    chosen = joined(spark, 9).window(assigner).side_output_late_data(LATE).select(*selected())
    assert chosen.plan.route is Route.BATCH_REPLAY
    reason = "gaps between them" if assigner.size < assigner.slide else "start of time"
    assert reason in chosen.plan.reason
    applied = joined(spark, 9).window(assigner).side_output_late_data(LATE)
    assert outputs(chosen) == outputs(applied.apply(pair, output_schema=PAIR_SCHEMA))


@pytest.mark.differential(Route.BATCH_REPLAY)
@pytest.mark.parametrize("how", ["evictor", "arrival order", "sessions"])
def test_select_runs_in_the_operator_where_the_native_plan_does_not_apply(
    spark: SparkSession, how: str
) -> None:
    """An evictor, an arrival order (late rows, late firings) and sessions: the operator
    gives each pair and the columns are selected from them, as its join function would."""

    def window(j: Any) -> Any:
        if how == "sessions":
            return j.window(EventTimeSessionWindows(4)).side_output_late_data(LATE)
        w = j.window(TumblingEventTimeWindows(10)).side_output_late_data(LATE)
        return w.evictor(CountEvictor(3)) if how == "evictor" else w.allowed_lateness(5)

    arrival = how == "arrival order"
    chosen = window(joined(spark, 4, arrival=arrival)).select(*selected())
    assert chosen.plan.route is Route.BATCH_REPLAY
    assert "no native join" in chosen.plan.reason
    applied = window(joined(spark, 4, arrival=arrival)).apply(pair, output_schema=PAIR_SCHEMA)
    got = outputs(chosen)
    assert got == outputs(applied)
    assert got[0]


def test_timestamps_and_keys_by_expression(spark: SparkSession) -> None:
    """Timestamp event times give timestamp bounds; a key expression names the key column;
    the columns may read the key."""
    left = spark.createDataFrame(
        [("x", 1_000, 1), ("x", 4_000, 2), ("y", 1_500, 3)], "u string, ms bigint, v bigint"
    ).withColumn("at", F.timestamp_millis("ms"))
    right = spark.createDataFrame(
        [("X", 2_000, "p"), ("Y", 9_000, "q")], "u string, ms bigint, w string"
    ).withColumn("at", F.timestamp_millis("ms"))
    result = (
        WindowedStream.from_dataframe(left, event_time="at")
        .join(WindowedStream.from_dataframe(right, event_time="at"))
        .where(F.upper("u").alias("user"))
        .equal_to(F.col("u").alias("user"))
        .window(TumblingEventTimeWindows("3 seconds"))
        .select(F.lower("user").alias("lower"), "left.v", "right.w")
    )
    assert result.plan.route is Route.NATIVE_WINDOW_JOIN
    rows = [tuple(r) for r in result.results.collect()]
    ws = F.timestamp_millis(F.lit(0))
    start = result.results.sparkSession.range(1).select(ws).first()[0]
    assert [(r[0], r[3], r[4], r[5]) for r in rows] == [("X", "x", 1, "p")]
    assert rows[0][1] == start and rows[0][6].year == 1970
    # the sides' fields reach the join as columns: no struct of each side's row is built
    # (with timestamps, a column of the event time in milliseconds kept Spark from merging
    # the selects, and every row's struct crossed the shuffle)
    optimized = result.results._jdf.queryExecution().optimizedPlan().toString()
    assert "struct(" not in optimized, optimized


@pytest.mark.parametrize(
    "windows",
    [TumblingEventTimeWindows("10 seconds"), HoppingEventTimeWindows("10 seconds", "5 seconds")],
    ids=["tumbling", "hopping"],
)
def test_a_join_of_an_earlier_windows_results_filters_each_row_once(
    spark: SparkSession, windows: Any
) -> None:
    """A join of an earlier window's results (Nexmark q8: the sellers of each window joined
    with the people): the pairs, and a plan whose filters on the inputs stay as small as the
    event time's null check. Spark pushes a null check of a join's window down to the scan
    with the window's expression substituted, and over an earlier window's ``max_timestamp``
    (its own window's expression) that check held hundreds of copies of the event time."""
    people = spark.createDataFrame(
        [(1, "ann", 1_000), (2, "bob", 12_000), (3, "cy", 3_000), (1, "ann2", 25_000)],
        "id bigint, name string, ms bigint",
    ).withColumn("at", F.timestamp_millis("ms"))
    sales = spark.createDataFrame(
        [(1, 2_000), (1, 9_000), (2, 5_000), (3, 7_000), (1, 21_000)], "seller bigint, ms bigint"
    ).withColumn("at", F.timestamp_millis("ms"))
    active = (
        WindowedStream.from_dataframe(sales, event_time="at")
        .key_by("seller")
        .window(TumblingEventTimeWindows("10 seconds"))
        .count()
        .results.select("seller", "max_timestamp")
    )
    result = (
        WindowedStream.from_dataframe(people, event_time="at")
        .join(WindowedStream.from_dataframe(active, event_time="max_timestamp"))
        .where("id")
        .equal_to("seller")
        .window(windows)
        .select("left.name")
    )
    assert result.plan.route is Route.NATIVE_WINDOW_JOIN
    got = sorted((r["id"], r["window_start"].second, r["name"]) for r in result.results.collect())
    if isinstance(windows, TumblingEventTimeWindows):
        # sellers 1 and 3 in [0, 10), 1 in [20, 30); bob (2) joined in [10, 20), sold in [0, 10)
        assert got == [(1, 0, "ann"), (1, 20, "ann2"), (3, 0, "cy")]
    else:  # the sellers' max timestamps 9.999 s (in [0, 10), [5, 15)) and 29.999 s (in
        # [20, 30), [25, 35)); bob's 12 s is in [5, 15) and [10, 20)
        assert got == [(1, 0, "ann"), (1, 20, "ann2"), (1, 25, "ann2"), (2, 5, "bob"), (3, 0, "cy")]
    optimized = result.results._jdf.queryExecution().optimizedPlan().toString()
    assert optimized.count("pmod(") < 40, optimized


def test_mistakes_are_reported_before_any_job(spark: SparkSession) -> None:
    j = joined(spark, 5).window(TumblingEventTimeWindows(10))
    with pytest.raises(ValueError, match="at least one column"):
        j.select()
    with pytest.raises(ValueError, match=r"cannot evaluate .*left.nope"):
        j.select("left.nope")
    with pytest.raises(ValueError, match=r"\['k'\] repeat a name or a column of the results"):
        j.select(F.col("left.n").alias("k"))
    with pytest.raises(ValueError, match=r"\['n'\] repeat"):
        j.select("left.n", "left.n")
    with pytest.raises(ValueError, match=r"names .* or Columns, got int 3"):
        j.select(3)
    left, right = random_rows(5)
    lf = WindowedStream.from_dataframe(spark.createDataFrame(left, LEFT_SCHEMA), event_time="ts")
    rf = WindowedStream.from_dataframe(spark.createDataFrame(right, RIGHT_SCHEMA), event_time="t")
    grouped = lf.co_group(rf).where("k").equal_to("key").window(TumblingEventTimeWindows(10))
    with pytest.raises(ValueError, match=r"co_group\(...\).select: a coGroup has no pairs"):
        grouped.select("left.n")


@pytest.mark.differential(Route.NATIVE_WINDOW_JOIN, Route.BATCH_REPLAY)
def test_stars_and_float_keys_as_the_operator_gives_them(spark: SparkSession) -> None:
    """``right.*`` gives every field of the right row, on the native route as through the
    operator; float keys -0.0 and 0.0 join (one key, as Spark groups them: the native plan
    gives 0.0, as Spark's groupBy, the operator the value of a row), NaN keys join each
    other."""
    nan = float("nan")
    left = spark.createDataFrame(
        [(-0.0, 1, 1), (0.0, 2, 2), (nan, 3, 3), (1.5, 4, 4)], "k double, ts bigint, n bigint"
    )
    right = spark.createDataFrame(
        [(0.0, 5, 10, "a"), (nan, 6, 20, "b"), (-0.0, 7, 30, "c")],
        "key double, t bigint, m bigint, s string",
    )

    def window(evictor: bool) -> Any:
        w = (
            WindowedStream.from_dataframe(left, event_time="ts")
            .join(WindowedStream.from_dataframe(right, event_time="t"))
            .where("k")
            .equal_to("key")
            .window(TumblingEventTimeWindows(10))
            .side_output_late_data(LATE)
        )
        return w.evictor(CountEvictor(100)) if evictor else w

    native = window(False).select("left.n", "right.*")
    operator = window(True).select("left.n", "right.*")
    assert native.plan.route is Route.NATIVE_WINDOW_JOIN
    assert operator.plan.route is Route.BATCH_REPLAY
    assert native.results.columns == operator.results.columns
    assert native.results.columns[3:7] == ["n", "key", "t", "m"]
    got, want = outputs(native), outputs(operator)

    def comparable(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
        # NaN equal to NaN; -0.0 equal to 0.0 (Python's ==)
        return sorted(
            (tuple("NaN" if v != v else v for v in r) for r in rows),
            key=lambda r: repr(tuple(0.0 if v == 0 and isinstance(v, float) else v for v in r)),
        )

    assert comparable(got[0]) == comparable(want[0])
    assert got[2] == want[2]
    keys = sorted(repr(r[0]) for r in got[0])
    assert keys == sorted(["0.0"] * 4 + ["nan"])  # 2 x 2 pairs of zeros, one of NaN


def test_hopping_windows_of_huge_sizes_join_as_in_the_operator(spark: SparkSession) -> None:
    """Windows longer than half of time, their size and slide coprime (panes of 1 ms): the
    first window start of a row is found without overflowing a long (a row's first pane,
    relative to its block, is far below 0 there)."""
    assigner = HoppingEventTimeWindows(5_000_000_000_000_000_001, 4_999_999_999_999_999_999)
    times = [5_046_409_699_864_790_775, MIN_TIMESTAMP, MAX_TIMESTAMP, 0, -7, None]
    left = spark.createDataFrame([("a", t, i, i) for i, t in enumerate(times)], LEFT_SCHEMA)
    right = spark.createDataFrame([("a", t, i, i) for i, t in enumerate(times)], RIGHT_SCHEMA)

    def window() -> Any:
        def stream(df: DataFrame, ts: str) -> Any:
            return WindowedStream.from_dataframe(df, event_time=ts)

        joined = stream(left, "ts").join(stream(right, "t")).where("k").equal_to("key")
        return joined.window(assigner).side_output_late_data(LATE)

    native = window().select(*selected())
    assert native.plan.route is Route.NATIVE_WINDOW_JOIN
    got = outputs(native)
    assert got == outputs(window().apply(pair, output_schema=PAIR_SCHEMA))
    assert (0, 0, 0) in {r[3:6] for r in got[0]}  # the row at 5.05e18 with itself
