"""Vectorized aggregate functions on Spark: the batch replay's record-batch path (one
``add_groups`` / ``get_results`` per batch) against the window operator's path (the adapter),
Spark's native aggregates, and a streaming query."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark import cloudpickle as spark_cloudpickle
from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as F  # noqa: N812
from pyspark.sql.types import DoubleType, LongType, StringType, StructField, StructType

from tests.spark.test_spark_streaming import LATE, in_order_batches, streamed_and_replayed
from windowing import (
    EventTimeSessionWindows,
    EventTimeTrigger,
    HoppingEventTimeWindows,
    TumblingEventTimeWindows,
    VectorizedAggregateFunction,
)
from windowing.functions import Aggregate
from windowing.job import WindowConfig
from windowing.spark.columnar.vectorized import result_columns, vectorized_plan
from windowing.spark.columns.output import OutputLayout
from windowing.spark.planning import ColumnarShape, Route
from windowing.stream import DataStream
from windowing.testing import WindowOperatorHarness

pytestmark = pytest.mark.spark

spark_cloudpickle.register_pickle_by_value(sys.modules[__name__])  # type: ignore[no-untyped-call]

T0 = 1_714_521_600_000
OUTPUT = "mean double, var double"


class MeanVar(VectorizedAggregateFunction[Any, Any]):
    """Mean and population variance of ``amount`` (count, mean, sum of squared
    deviations); ``add_groups`` / ``get_results`` with numpy."""

    batch_format = "numpy"

    def create_accumulator(self) -> Any:
        return (0, 0.0, 0.0)

    def add_batch(self, batch: Any, acc: Any) -> Any:
        x = batch["amount"].astype(float)
        return self.merge(acc, (len(x), float(x.mean()), float(((x - x.mean()) ** 2).sum())))

    def merge(self, a: Any, b: Any) -> Any:
        n = a[0] + b[0]
        if n == 0:
            return a
        d = b[1] - a[1]
        return (n, a[1] + d * b[0] / n, a[2] + b[2] + d * d * a[0] * b[0] / n)

    def get_result(self, acc: Any) -> Any:
        return {"mean": acc[1], "var": acc[2] / acc[0]}

    def add_groups(self, batch: Any, offsets: Any) -> Any:
        x, n = batch["amount"].astype(float), np.diff(offsets)
        mean = np.add.reduceat(x, offsets[:-1]) / n
        m2 = np.add.reduceat((x - np.repeat(mean, n)) ** 2, offsets[:-1])
        return np.column_stack((n, mean, m2))

    def get_results(self, accumulators: Any) -> Any:
        return {"mean": accumulators[:, 1], "var": accumulators[:, 2] / accumulators[:, 0]}


class Described(VectorizedAggregateFunction[Any, Any]):
    """Arrow batches, ``add_batch`` only: the rows' count, the sum of ``amount``, the batch's
    column types (the same on both paths) and ``None`` for windows of key 3 with an odd sum
    (no result: the operator counts them)."""

    def create_accumulator(self) -> Any:
        return (0, 0, "", None)

    def add_batch(self, batch: pa.Table, acc: Any) -> Any:
        total = sum(batch.column("amount").to_pylist())
        types = ",".join(str(t) for t in batch.schema.types)
        return (acc[0] + batch.num_rows, acc[1] + total, types, batch.column("key")[0].as_py())

    def merge(self, a: Any, b: Any) -> Any:
        return (a[0] + b[0], a[1] + b[1], b[2] or a[2], a[3] if a[3] is not None else b[3])

    def get_result(self, acc: Any) -> Any:
        if acc[3] == 3 and acc[1] % 2:
            return None
        return (acc[0], acc[1], acc[2])


class Collect(VectorizedAggregateFunction[Any, Any]):
    """The ``x`` of a window's rows, in the order it gets them."""

    def create_accumulator(self) -> Any:
        return ()

    def add_batch(self, batch: pa.Table, acc: Any) -> Any:
        return (*acc, *batch.column("x").to_pylist())

    def merge(self, a: Any, b: Any) -> Any:
        return (*a, *b)

    def get_result(self, acc: Any) -> Any:
        return ",".join(map(str, acc))


class OperatorTrigger(EventTimeTrigger):
    """``EventTimeTrigger``'s behaviour, which only the window operator runs (its
    ``on_element`` is its own, without a form on columns)."""

    def on_element(self, element: Any, timestamp: int | None, window: Any, ctx: Any) -> Any:
        return super().on_element(element, timestamp, window, ctx)


def events(spark: SparkSession, n: int = 3_000, keys: int = 7) -> DataFrame:
    rid = F.col("id")
    return spark.range(n).select(
        (rid % keys).alias("key"),
        ((rid * 7919) % 101).alias("amount"),
        F.timestamp_millis(F.lit(T0) + rid * 23).alias("ts"),
        F.lit("x").alias("tag"),
    )


def collected(result: Any) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in result.results.collect())


def approx(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """Rows whose floats compare within float rounding (sums in another order)."""

    def close(v: Any) -> Any:
        return pytest.approx(v, rel=1e-9) if isinstance(v, float) else v

    return [tuple(map(close, r)) for r in rows]


@pytest.mark.differential(ColumnarShape.TUMBLING)
def test_record_batches_give_the_operators_and_sparks_results(
    spark: SparkSession, small_batches: None
) -> None:
    df = events(spark)
    windowed = DataStream.from_dataframe(df, event_time="ts").key_by("key")
    fast = windowed.window(TumblingEventTimeWindows("5 seconds")).aggregate(
        MeanVar(), output_schema=OUTPUT
    )
    plan = str(fast.plan)
    assert fast.plan.route is Route.BATCH_REPLAY
    assert "VectorizedAggregateFunction MeanVar" in plan and "add_groups" in plan
    operator = (
        windowed.window(TumblingEventTimeWindows("5 seconds"))
        .trigger(OperatorTrigger())
        .aggregate(MeanVar(), output_schema=OUTPUT)
    )
    assert operator.plan.columnar is None
    results = collected(fast)
    assert len(results) > 20
    assert results == approx(collected(operator))
    native = df.groupBy("key", F.window("ts", "5 seconds")).agg(
        F.avg("amount").alias("mean"), F.var_pop("amount").alias("var")
    )
    expected = sorted(
        (r.key, r.window.start, r.window.end, r.mean, r.var) for r in native.collect()
    )
    assert [r[:5] for r in results] == approx(expected)


@pytest.mark.differential(ColumnarShape.TUMBLING)
def test_default_add_groups_none_results_and_null_event_times(
    spark: SparkSession, small_batches: None
) -> None:
    """Arrow batches of the input columns' types on both paths; a ``None`` result and a null
    event time send their rows to the operator, which counts them."""
    df = events(spark, 1_500).withColumn(
        "ts", F.when((F.col("key") == 6) & (F.col("amount") < 9), None).otherwise(F.col("ts"))
    )

    def run(trigger: Any) -> Any:
        windowed = (
            DataStream.from_dataframe(df, event_time="ts")
            .key_by("key")
            .window(TumblingEventTimeWindows("3 seconds"))
        )
        if trigger is not None:
            windowed = windowed.trigger(trigger)
        return windowed.aggregate(Described(), output_schema="n bigint, total bigint, types string")

    fast, operator = run(None), run(OperatorTrigger())
    assert fast.plan.columnar is not None and operator.plan.columnar is None
    results = collected(fast)
    assert results == collected(operator)
    assert {r[-2] for r in results} == {"int64,int64,timestamp[us, tz=UTC],string"}
    metrics = fast.metrics.collect()[0]
    assert metrics.num_null_results > 0
    assert metrics.num_null_results == operator.metrics.collect()[0].num_null_results
    assert metrics.num_null_event_time == df.where("ts IS NULL").count() > 0


@pytest.mark.differential(ColumnarShape.HOPPING, ColumnarShape.SESSIONS)
@pytest.mark.parametrize(
    "assigner",
    [HoppingEventTimeWindows("4 seconds", "1 second"), EventTimeSessionWindows("500 milliseconds")],
    ids=["hopping", "sessions"],
)
def test_hopping_windows_and_sessions_a_batch_at_a_time(
    spark: SparkSession, tiny_batches: None, assigner: Any
) -> None:
    """Each window's rows in replay order (an order-sensitive function), as the operator
    gives them, however a key's rows are batched and carried."""
    rid = F.col("id")  # a second's pause every 100 rows: sessions of about 12 rows a key
    df = spark.range(1_200).select(
        F.when(rid % 10 < 5, 0).otherwise(rid % 10).alias("key"),  # 600 rows, 5 x 120
        ((rid * 7919) % 101).alias("x"),
        F.timestamp_millis(F.lit(T0) + rid * 23 + F.floor(rid / 100) * 1_000).alias("ts"),
    )

    def run(trigger: Any) -> Any:
        windowed = DataStream.from_dataframe(df, event_time="ts").key_by("key").window(assigner)
        if trigger is not None:
            windowed = windowed.trigger(trigger)
        return windowed.aggregate(Collect(), output_schema="rows string")

    fast, operator = run(None), run(OperatorTrigger())
    assert fast.plan.columnar is not None and operator.plan.columnar is None
    results = collected(fast)
    assert len(results) > 50 and any("," in r[3] for r in results)
    assert results == collected(operator)


def test_streaming_runs_the_adapter(spark: SparkSession, tmp_path: Path) -> None:
    """A streaming query (the window operator, through the adapter, its accumulators in the
    state between micro-batches) gives the batch replay's results."""

    class Total(VectorizedAggregateFunction[Any, Any]):
        batch_format = "pandas"

        def create_accumulator(self) -> Any:
            return (0, 0)

        def add_batch(self, batch: Any, acc: Any) -> Any:
            return (acc[0] + len(batch), acc[1] + int(batch["amount"].sum()))

        def merge(self, a: Any, b: Any) -> Any:
            return (a[0] + b[0], a[1] + b[1])

        def get_result(self, acc: Any) -> Any:
            return acc

    streamed, replayed = streamed_and_replayed(
        spark,
        tmp_path,
        in_order_batches(seed=3, n_batches=3),
        lambda keyed: (
            keyed.window(TumblingEventTimeWindows(4_000))
            .side_output_late_data(LATE)
            .aggregate(Total(), output_schema="n bigint, total bigint")
        ),
    )
    assert streamed == replayed
    assert any(r[3] > 1 for r in streamed["results"]), "windows of several rows"


def _layout(**fields: Any) -> OutputLayout:
    """The layout of results with ``fields`` (name: Spark type), no keys or inputs."""
    schema = StructType([StructField(name, dtype, True) for name, dtype in fields.items()])
    return OutputLayout((), StructType([]), schema, False, "timestamp", None)


@pytest.mark.parametrize(
    "results",
    [
        {"n": np.array([1, 2]), "mean": [0.5, 1.5]},
        pa.table({"mean": [0.5, 1.5], "n": [1, 2]}),
        pa.table({"mean": [0.5, 1.5], "n": [1, 2]}).to_pandas(),
        [(1, 0.5), {"n": 2, "mean": 1.5}],
    ],
    ids=["dict", "arrow", "pandas", "sequence"],
)
def test_get_results_as_columns_or_results(results: Any) -> None:
    columns = result_columns(
        MeanVar(), results, _layout(n=LongType(), mean=DoubleType()).out_schema
    )
    assert columns is not None
    assert [c.to_pylist() for c in columns] == [[1, 2], [0.5, 1.5]]


def test_one_field_results_as_an_array_and_none_results_to_the_operator() -> None:
    layout = _layout(value=DoubleType())
    (column,) = result_columns(MeanVar(), np.array([0.5, 1.5]), layout.out_schema) or [None]
    assert column is not None and column.to_pylist() == [0.5, 1.5]
    assert result_columns(MeanVar(), [0.5, None], layout.out_schema) is None


def test_get_results_of_other_fields_names_the_function() -> None:
    with pytest.raises(ValueError, match="columns \\['total'\\] for the output fields") as info:
        result_columns(MeanVar(), {"total": [1]}, _layout(n=LongType()).out_schema)
    assert "MeanVar.get_results" in "".join(info.value.__notes__)


SHAPES = {
    "tumbling": lambda: TumblingEventTimeWindows(10, offset=3),
    "hopping": lambda: HoppingEventTimeWindows(10, 4, offset=-1),
    "hopping_even": lambda: HoppingEventTimeWindows(9, 3),
    "sessions": lambda: EventTimeSessionWindows(5),
}


@settings(max_examples=60)
@given(
    shape=st.sampled_from(sorted(SHAPES)),
    rows=st.lists(st.tuples(st.integers(0, 3), st.integers(-30, 60)), max_size=40),
)
def test_the_groups_of_a_batch_are_the_operators_windows(shape: str, rows: list[Any]) -> None:
    """A batch's (key, window) groups, each in replay order, are the windows the operator
    fires at the end of input (no Spark job)."""
    rows = sorted(rows)  # by key, then event time: the replay's order
    assigner = SHAPES[shape]()
    plan = vectorized_plan(
        WindowConfig(assigner, None, None, 0), Aggregate(Collect()), streaming=False
    )
    assert plan is not None and plan.shape.value in shape
    harness = WindowOperatorHarness(assigner, Collect())
    assert batch_windows(plan, rows, _layout(rows=StringType())) == harness_windows(harness, rows)


def harness_windows(
    harness: WindowOperatorHarness, rows: list[Any], value: Any = lambda v: v
) -> list[tuple[Any, ...]] | None:
    """The harness's windows of the sorted ``(key code, time)`` rows, elements ``Row(x=i)``
    (``i`` the row's position), as sorted ``(key, start, end, value(result))``; ``None``
    for no row."""
    for x, (code, t) in enumerate(rows):
        harness.process_element(Row(x=x), t, code)
    harness.process_watermark(10_000)
    found = [
        (r.key, r.window.start, r.window.end, value(r.value)) for r in harness.extract_output()
    ]
    return sorted(found) if rows else None


def batch_windows(plan: Any, rows: list[Any], layout: OutputLayout) -> list[tuple[Any, ...]] | None:
    """A columnar plan's results over a batch of the sorted ``(key code, time)`` rows, one
    column ``x`` (the row's position), as sorted ``(key code, start, end, first output
    column)``; ``None`` when the plan leaves the batch to the operator."""
    codes = np.array([c for c, _ in rows], np.int64)
    table = pa.table({"x": pa.array(range(len(rows)), pa.int64())})
    times = pa.chunked_array([pa.array([t for _, t in rows], pa.int64())])
    found = plan.results(table, times, codes, layout)
    if found is None:
        return None
    got = zip(
        codes[found.rows], found.starts, found.ends, found.columns[0].to_pylist(), strict=True
    )
    return sorted((int(k), int(s), int(e), v) for k, s, e, v in got)
