"""Built-in aggregations on Spark (``sum``, ``min``, ``max``, ``min_by``, ``max_by``).

In batch they run as native Spark plans where the job allows one
(``test_native_builtins.py``); without one (here: :func:`without_native_builtins`, the path
of a small input or a streaming job), tumbling, hopping and session event-time windows
replayed in event-time order are computed on whole columns
(``windowing/spark/columnar/core.py``, ``hopping.py``, ``sessions.py``) and every other case
runs the operator. Both must give the operator's results, so each case here runs the same
aggregation through the operator (a plain reduce calling the same ``FieldAggregation``) and
compares results and metrics.
"""

from __future__ import annotations

import math
import random
import sys
from typing import Any

import pyarrow as pa
import pytest
from pyspark import cloudpickle as spark_cloudpickle
from pyspark.sql import DataFrame, Row, SparkSession

from tests.columnar_plans import columnar_plan
from tests.spark.builtin_paths import without_native_builtins
from tests.spark.test_vectorized import OperatorTrigger
from windowing.assigners import (
    EventTimeSessionWindows,
    HoppingEventTimeWindows,
    TumblingEventTimeWindows,
)
from windowing.functions import AggregationType, FieldAggregation, Reduce
from windowing.job import WindowConfig
from windowing.spark.columnar.core import columnar_results
from windowing.spark.planning import ColumnarShape, Route, columnar_shape
from windowing.stream import BoundedOutOfOrderness, WindowedStream

pytestmark = pytest.mark.spark
spark_cloudpickle.register_pickle_by_value(sys.modules[__name__])  # type: ignore[no-untyped-call]

SCHEMA = "user string, amount bigint, small int, score double, ts bigint, seq bigint"


def make_rows(seed: int, n: int = 300) -> list[tuple[Any, ...]]:
    """Event times around 0 (negative too) with many ties, equal amounts and scores."""
    rng = random.Random(seed)
    rows = []
    for seq in range(n):
        ts = rng.randint(-3_000, 6_000)
        if rng.random() < 0.3:
            ts -= ts % 500
        rows.append(
            (
                rng.choice("abcd"),
                rng.randint(-5, 5),
                rng.randint(-3, 3),
                rng.choice([-1.5, 0.0, 2.25, 7.0, float("inf")]),
                ts,
                seq,
            )
        )
    return rows


def stream(df: DataFrame) -> Any:
    return WindowedStream.from_dataframe(df, event_time="ts").key_by("user")


def through_operator(df: DataFrame, assigner: Any, fn: FieldAggregation) -> Any:
    """The same aggregation as a plain reduce on the window operator (a trigger of its own:
    neither the columns nor the replay's fold apply)."""
    windowed = stream(df).window(assigner).trigger(OperatorTrigger())
    return windowed.reduce(lambda a, b: fn.reduce(a, b))


def collected(result: Any) -> list[Row]:
    return sorted(result.results.collect(), key=lambda r: (r.user, r.window_start))


CASES = [
    (AggregationType.SUM, "amount", True),
    (AggregationType.SUM, "small", True),
    (AggregationType.MIN, "amount", True),
    (AggregationType.MAX, "score", True),
    (AggregationType.MIN, "score", True),
    (AggregationType.MIN_BY, "amount", True),
    (AggregationType.MAX_BY, "score", False),
    (AggregationType.MAX_BY, "amount", True),
    (AggregationType.MIN_BY, "score", False),
]


SHAPES = {
    "tumbling": TumblingEventTimeWindows(1_000, offset=300),
    "hopping": HoppingEventTimeWindows(2_000, 500, offset=300),
    "hopping-uneven": HoppingEventTimeWindows(1_300, 500),
    "session": EventTimeSessionWindows(120),
}


@pytest.mark.differential(ColumnarShape.TUMBLING, ColumnarShape.HOPPING, ColumnarShape.SESSIONS)
@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.parametrize(("kind", "field", "first"), CASES)
def test_columnar_results_equal_the_operators(
    spark: SparkSession, kind: AggregationType, field: str, first: bool, shape: str
) -> None:
    rows = make_rows(len(CASES) + CASES.index((kind, field, first)))
    df = spark.createDataFrame(rows, SCHEMA).repartition(3)
    assigner = SHAPES[shape]
    # every key's rows take the columnar path (the operator is not what is compared here)
    fn = FieldAggregation(kind, field, first)
    plan = columnar_shape(WindowConfig(assigner), Reduce(fn), None, streaming=False)
    assert plan is not None
    position = SCHEMA.split(", ").index(next(c for c in SCHEMA.split(", ") if c.startswith(field)))
    for user in "abcd":
        mine = sorted((r for r in rows if r[0] == user), key=lambda r: r[4])
        times = pa.chunked_array([pa.array([r[4] for r in mine], pa.int64())])
        values = pa.chunked_array([pa.array([r[position] for r in mine])])
        assert columnar_results(plan, times, values) is not None
    windowed = stream(df).window(assigner)
    method = getattr(windowed, kind.value)
    with without_native_builtins():
        fast = method(field, first) if kind.picks_element else method(field)
    assert fast.output.count() > 0
    assert fast.plan.columnar_shape is ColumnarShape(
        {"tumbling": "tumbling", "hopping": "hopping", "session": "sessions"}[shape.split("-")[0]]
    )
    reference = through_operator(df, assigner, fn)
    assert reference.plan.columnar is None
    assert collected(fast) == collected(reference)
    assert fast.collect_metrics() == reference.collect_metrics()


def test_the_plan_applies_only_to_built_in_aggregations_with_the_default_trigger() -> None:
    from windowing.spark.columnar.hopping import HoppingAggregation
    from windowing.spark.columnar.tumbling import TumblingAggregation
    from windowing.triggers import CountTrigger, EventTimeTrigger

    total = FieldAggregation(AggregationType.SUM, "amount")
    tumbling = TumblingEventTimeWindows(10)
    assert isinstance(columnar_plan(tumbling, Reduce(total), None, None), TumblingAggregation)
    assert columnar_plan(tumbling, Reduce(total), EventTimeTrigger(), None) is not None
    assert columnar_plan(tumbling, Reduce(total), CountTrigger(2), None) is None
    hopping = columnar_plan(HoppingEventTimeWindows(10, 5), Reduce(total), None, None)
    assert isinstance(hopping, HoppingAggregation)
    assert columnar_plan(tumbling, Reduce(lambda a, b: a), None, None) is None


def test_values_the_columns_cannot_hold_take_the_operator(spark: SparkSession) -> None:
    """Nulls, a sum beyond the column type, float sums, NaN: the operator's results."""
    rows = [
        ("a", None, 100, 1.5, 5, 0),
        ("a", 3, 100, float("nan"), 7, 1),
        ("b", 2, 2_000_000_000, 0.1, 5, 2),
        ("b", 4, 2_000_000_000, 0.2, 6, 3),
        ("c", 1, 1, 0.1, 3, 4),
        ("c", 1, 1, 0.2, 4, 5),
        ("c", 1, 1, 0.3, 8, 6),
    ]
    df = spark.createDataFrame(rows, SCHEMA)
    tumbling = stream(df).window(TumblingEventTimeWindows(10))
    with without_native_builtins():
        total, float_total = tumbling.sum("amount"), tumbling.sum("score")
        highest, lowest, overflow = (
            tumbling.max("score"),
            tumbling.min("score"),
            tumbling.sum("small"),
        )
    by_user = {r.user: r for r in total.results.collect()}
    assert (by_user["a"].amount, by_user["b"].amount, by_user["c"].amount) == (3, 6, 3)
    assert {r.user: r.score for r in float_total.results.collect()}["c"] == (0.1 + 0.2 + 0.3)
    # NaN is above every number (Java's Double.compareTo), whatever the order of the rows
    assert math.isnan({r.user: r.score for r in highest.results.collect()}["a"])
    assert {r.user: r.score for r in lowest.results.collect()}["a"] == 1.5
    with pytest.raises(Exception, match="small"):  # the int sum overflows its column
        overflow.results.collect()


def test_builder_validates_the_field(spark: SparkSession) -> None:
    df = spark.createDataFrame(make_rows(1, 5), SCHEMA)
    windowed = stream(df).window(TumblingEventTimeWindows(10))
    with pytest.raises(ValueError, match="sum: unknown column 'nope'"):
        windowed.sum("nope")
    with pytest.raises(ValueError, match="sum: field 'user' has type string"):
        keyed_by_seq = WindowedStream.from_dataframe(df, event_time="ts").key_by("seq")
        keyed_by_seq.window(TumblingEventTimeWindows(10)).sum("user")
    with pytest.raises(ValueError, match="max: field 'user' is a key column"):
        windowed.max("user")
    with pytest.raises(ValueError, match="min_by: field position 9 is out of range"):
        windowed.min_by(9)
    assert windowed.max_by(1).results.columns == [
        "user",
        "window_start",
        "window_end",
        "amount",
        "small",
        "score",
        "ts",
        "seq",
        "max_timestamp",
    ]


def test_other_windows_and_arrival_order_run_the_operator(spark: SparkSession) -> None:
    rows = make_rows(7, 120)
    df = spark.createDataFrame(rows, SCHEMA)
    gaps = HoppingEventTimeWindows(500, 2_000)  # slide > size: rows in no window
    with without_native_builtins():
        result = stream(df).window(gaps).max_by("amount")
        replayed = (
            WindowedStream.from_dataframe(
                df, event_time="ts", arrival_order="seq", watermark=BoundedOutOfOrderness(400)
            )
            .key_by("user")
            .window(TumblingEventTimeWindows(1_000))
            .sum("amount")
        )
    assert result.plan.route is replayed.plan.route is Route.BATCH_REPLAY
    assert result.plan.columnar is None
    got = collected(result)
    want = collected(through_operator(df, gaps, FieldAggregation(AggregationType.MAX_BY, "amount")))
    assert got == want and got
    assert result.collect_metrics().num_records_in_no_window > 0
    expected = (
        WindowedStream.from_dataframe(
            df, event_time="ts", arrival_order="seq", watermark=BoundedOutOfOrderness(400)
        )
        .key_by("user")
        .window(TumblingEventTimeWindows(1_000))
        .reduce(lambda a, b: Row(**{**a.asDict(), "amount": a.amount + b.amount}))
    )
    assert collected(replayed) == collected(expected)


def test_rows_keep_their_field_names() -> None:
    from windowing.spark.columns.schema import row_class

    plain_a, plain_b = Row(user="a", amount=2), Row(user="b", amount=5)
    summed = FieldAggregation(AggregationType.SUM, "amount").reduce(plain_a, plain_b)
    assert summed == Row(user="a", amount=7) and summed.asDict() == {"user": "a", "amount": 7}
    make = row_class(("user", "amount"))
    fast_a = tuple.__new__(make, ("a", 2))
    fast_b = tuple.__new__(make, ("b", 5))
    smallest = FieldAggregation(AggregationType.MIN, 1).reduce(fast_b, fast_a)
    assert type(smallest) is make and smallest.user == "b" and smallest.amount == 2
    assert FieldAggregation(AggregationType.MAX_BY, "amount").reduce(fast_a, fast_b) is fast_b
