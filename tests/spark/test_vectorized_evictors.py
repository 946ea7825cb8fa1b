"""Evictors on whole columns in the batch replay of vectorized functions: the built-in
evictors' masks and a user's :class:`VectorizedEvictor`, against the window operator calling
their per-row methods on the same jobs."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from pyspark import cloudpickle as spark_cloudpickle
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812

from tests.spark.test_vectorized import OperatorTrigger, collected
from windowing import (
    CountEvictor,
    DeltaEvictor,
    EventTimeSessionWindows,
    HoppingEventTimeWindows,
    TimeEvictor,
    TumblingEventTimeWindows,
    VectorizedAggregateFunction,
    VectorizedProcessWindowFunction,
)
from windowing.evictors.vectorized import VectorizedEvictor, WindowRows
from windowing.spark.planning import ColumnarShape
from windowing.stream import DataStream

pytestmark = pytest.mark.spark

spark_cloudpickle.register_pickle_by_value(sys.modules[__name__])  # type: ignore[no-untyped-call]

T0 = 1_714_521_600_000
FIRST_LAST = "first bigint, last bigint, n bigint, wm bigint"


class Amounts(VectorizedAggregateFunction[Any, Any]):
    """The amounts of a window's rows in the order it gets them, and their count."""

    def create_accumulator(self) -> Any:
        return ()

    def add_batch(self, batch: pa.Table, acc: Any) -> Any:
        return (*acc, *batch.column("amount").to_pylist())

    def merge(self, a: Any, b: Any) -> Any:
        return (*a, *b)

    def get_result(self, acc: Any) -> Any:
        return (",".join(map(str, acc)), len(acc))


class FirstLast(VectorizedProcessWindowFunction):
    """A window's first and last ``amount`` and its number of rows (none for an empty
    window), with the watermark the function sees."""

    batch_format = "numpy"

    def process(self, key: Any, context: Any, batch: Any) -> Any:
        x = batch["amount"]
        if not len(x):
            return [(-1, -1, 0, context.current_watermark())]
        return [(int(x[0]), int(x[-1]), len(x), context.current_watermark())]


def _rise(old: Any, new: Any) -> float:
    return float(new.amount - old.amount)


def _rise_columns(old: pa.Table, new: pa.Table) -> Any:
    return pc.subtract(new["amount"], old["amount"])


class NotPerRow(VectorizedEvictor[Any, Any]):
    """Keeps the rows of an even ``amount`` and the window's newest; its per-row methods
    fail, so a job can only have run on its masks. ``empty``: keeps nothing of windows whose
    first amount is odd."""

    def __init__(self, empty: bool = False) -> None:
        self.empty = empty

    def evict_before(self, elements: Any, window: Any, ctx: Any) -> Any:
        if not self.empty:
            raise AssertionError("per row")
        if elements and elements[0].value.amount % 2:
            return []
        return [e for e in elements if e.value.amount % 2 == 0 or e is elements[-1]]

    def evict_after(self, elements: Any, window: Any, ctx: Any) -> Any:
        return elements

    def keep_before(self, rows: WindowRows, ctx: Any) -> Any:
        amount = rows.table.column("amount").to_numpy()
        keep = (amount % 2 == 0) | (rows.positions() == rows.per_row(rows.sizes()) - 1)
        if self.empty:
            first = rows.per_row(amount[rows.offsets[:-1][rows.sizes() > 0]])
            keep &= first % 2 == 0
        assert ctx.get_current_watermark() == 2**63 - 1
        return keep

    def keep_after(self, rows: WindowRows, ctx: Any) -> Any:
        return np.ones(len(rows), np.bool_)


def events(spark: SparkSession) -> DataFrame:
    """7 keys, a row every 23 ms (a key's every 161 ms) with pauses of 1 s every 100 rows:
    sessions of many rows, ties of amounts."""
    rid = F.col("id")
    return spark.range(2_400).select(
        (rid % 7).alias("key"),
        ((rid * 7919) % 41).alias("amount"),
        F.timestamp_millis(F.lit(T0) + rid * 23 + F.floor(rid / 100) * 1_000).alias("ts"),
    )


def both(df: DataFrame, assigner: Any, evictor: Any, finish: Any) -> tuple[Any, Any]:
    def job(trigger: Any) -> Any:
        windowed = DataStream.from_dataframe(df, event_time="ts").key_by("key").window(assigner)
        if trigger is not None:
            windowed = windowed.trigger(trigger)
        return finish(windowed.evictor(evictor))

    return job(None), job(OperatorTrigger())


CASES = {
    "count, hopping": (HoppingEventTimeWindows("2 seconds", "500 milliseconds"), CountEvictor(4)),
    "time after, tumbling": (TumblingEventTimeWindows("1 second"), TimeEvictor(300, True)),
    "time, sessions": (EventTimeSessionWindows("400 milliseconds"), TimeEvictor(700)),
    "delta, tumbling": (
        TumblingEventTimeWindows("2 seconds"),
        DeltaEvictor(10, _rise, vectorized_delta=_rise_columns),
    ),
}


@pytest.mark.differential(ColumnarShape.TUMBLING, ColumnarShape.HOPPING, ColumnarShape.SESSIONS)
@pytest.mark.parametrize("function", ["aggregate", "process"])
def test_built_in_evictors_on_columns_give_the_operators_results(
    spark: SparkSession, small_batches: None, function: str
) -> None:
    df = events(spark)
    for case, (assigner, evictor) in CASES.items():
        if function == "aggregate":
            fast, operator = both(
                df,
                assigner,
                evictor,
                lambda w: w.aggregate(Amounts(), output_schema="amounts string, n int"),
            )
        else:
            fast, operator = both(
                df, assigner, evictor, lambda w: w.process(FirstLast(), output_schema=FIRST_LAST)
            )
        assert fast.plan.columnar is not None and operator.plan.columnar is None, case
        assert f"evicting with {evictor!r} on columns" in str(fast.plan)
        results = collected(fast)
        assert results == collected(operator), case
        n = [r[4] if function == "aggregate" else r[5] for r in results]
        assert min(n) > 0 and len(results) > 60, case
        if case == "count, hopping":
            assert max(n) == 4
        if case == "time, sessions":  # 700 ms of a key's rows (a row every 161 ms), not 16 s
            assert max(n) == 5


def test_delta_evictor_without_vectorized_delta_runs_per_row(spark: SparkSession) -> None:
    fast, _ = both(
        events(spark),
        TumblingEventTimeWindows("2 seconds"),
        DeltaEvictor(10, _rise),
        lambda w: w.aggregate(Amounts(), output_schema="amounts string, n int"),
    )
    assert fast.plan.columnar is None


@pytest.mark.differential(ColumnarShape.TUMBLING)
def test_a_users_evictor_runs_on_its_masks_and_empty_windows_on_the_operator(
    spark: SparkSession, small_batches: None
) -> None:
    df = events(spark)
    assigner = TumblingEventTimeWindows("1 second")
    only_masks = (
        DataStream.from_dataframe(df, event_time="ts")
        .key_by("key")
        .window(assigner)
        .evictor(NotPerRow())
        .process(FirstLast(), output_schema=FIRST_LAST)
    )
    results = collected(only_masks)  # its per-row methods would fail
    assert len(results) > 60 and all(r[3] % 2 == 0 or r[5] == 1 for r in results)
    assert "evicting with NotPerRow() on columns" in str(only_masks.plan)
    # windows the evictor empties: process gets no rows, an aggregate's go to the operator
    for finish in (
        lambda w: w.process(FirstLast(), output_schema=FIRST_LAST),
        lambda w: w.aggregate(Amounts(), output_schema="amounts string, n int"),
    ):
        fast, operator = both(df, assigner, NotPerRow(empty=True), finish)
        got = collected(fast)
        assert got == collected(operator) and len(got) > 60
        assert any(r[4 if len(r) == 6 else 5] == 0 for r in got)


class WrongMask(NotPerRow):
    def keep_before(self, rows: WindowRows, ctx: Any) -> Any:
        return np.ones(len(rows) + 1, np.bool_)


def test_a_wrong_mask_fails_naming_the_evictor(spark: SparkSession) -> None:
    result = (
        DataStream.from_dataframe(events(spark), event_time="ts")
        .key_by("key")
        .window(TumblingEventTimeWindows("1 second"))
        .evictor(WrongMask())
        .process(FirstLast(), output_schema=FIRST_LAST)
    )
    with pytest.raises(Exception, match=r"WrongMask.keep_before must return a boolean mask"):
        result.results.collect()
