"""Triggers on whole columns in the batch replay of vectorized aggregate functions: the built-in
triggers' forms and a user's :class:`VectorizedTrigger`, against the window operator calling
their per-row methods on the same jobs (every firing, early and at the end, with its window
and rows; purges; session windows firing as merged so far)."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from pyspark import cloudpickle as spark_cloudpickle
from pyspark.sql import SparkSession
from pyspark.sql import functions as F  # noqa: N812

from tests.spark.test_vectorized_evictors import FIRST_LAST, Amounts, FirstLast, events
from windowing import (
    ContinuousEventTimeTrigger,
    CountEvictor,
    CountTrigger,
    DeltaTrigger,
    EventTimeSessionWindows,
    EventTimeTrigger,
    HoppingEventTimeWindows,
    ProcessingTimeoutTrigger,
    PurgingTrigger,
    Trigger,
    TriggerResult,
    TumblingEventTimeWindows,
    VectorizedTrigger,
)
from windowing.evictors.vectorized import WindowRows
from windowing.spark.planning import ColumnarShape
from windowing.stream import DataStream
from windowing.triggers.vectorized import EndFirings, code

pytestmark = pytest.mark.spark

spark_cloudpickle.register_pickle_by_value(sys.modules[__name__])  # type: ignore[no-untyped-call]

AMOUNTS = "amounts string, n int"


class PerRow(Trigger[Any, Any]):
    """``trigger``'s behaviour, which only the window operator runs (no form on columns)."""

    def __init__(self, trigger: Trigger[Any, Any]) -> None:
        self.trigger = trigger

    def on_element(self, element: Any, timestamp: Any, window: Any, ctx: Any) -> Any:
        return self.trigger.on_element(element, timestamp, window, ctx)

    def on_event_time(self, time: int, window: Any, ctx: Any) -> Any:
        return self.trigger.on_event_time(time, window, ctx)

    def on_processing_time(self, time: int, window: Any, ctx: Any) -> Any:
        return self.trigger.on_processing_time(time, window, ctx)

    def can_merge(self) -> bool:
        return self.trigger.can_merge()

    def on_merge(self, window: Any, ctx: Any) -> None:
        self.trigger.on_merge(window, ctx)

    def clear(self, window: Any, ctx: Any) -> None:
        self.trigger.clear(window, ctx)


class BigAmounts(EventTimeTrigger, VectorizedTrigger[Any, Any]):
    """Fires and purges at each row of an amount above 35, and at the window's end; its
    per-row ``on_element`` fails, so a job can only have run on its form on columns."""

    def on_element(self, element: Any, timestamp: Any, window: Any, ctx: Any) -> Any:
        raise AssertionError("per row")

    def on_elements(self, rows: WindowRows, ctx: Any) -> Any:
        assert rows.table is not None and ctx.get_current_watermark() == -(2**63)
        big = rows.table.column("amount").to_numpy() > 35
        return np.where(big, code(TriggerResult.FIRE_AND_PURGE), 0)

    def on_end_of_input(self, rows: WindowRows, ctx: Any) -> Any:
        return EndFirings.once_each(rows, TriggerResult.FIRE)

    @property
    def vectorized_on_sessions(self) -> bool:
        return True


class BigAmountsPerRow(EventTimeTrigger):
    """:class:`BigAmounts` row by row."""

    def on_element(self, element: Any, timestamp: Any, window: Any, ctx: Any) -> Any:
        if element.amount > 35:
            return TriggerResult.FIRE_AND_PURGE
        return super().on_element(element, timestamp, window, ctx)


def _rise(old: Any, new: Any) -> float:
    return float(new.amount - old.amount)


def _rise_columns(old: pa.Table, new: pa.Table) -> Any:
    return pc.subtract(new["amount"], old["amount"])


TUMBLING = TumblingEventTimeWindows("2 seconds")
HOPPING = HoppingEventTimeWindows("2 seconds", "500 milliseconds")
SESSIONS = EventTimeSessionWindows("400 milliseconds")
CASES: dict[str, tuple[Any, Trigger[Any, Any]]] = {
    "count, tumbling": (TUMBLING, CountTrigger(3)),
    "purging count, hopping": (HOPPING, PurgingTrigger(CountTrigger(4))),
    "count, sessions": (SESSIONS, CountTrigger(3)),
    "purging count, sessions": (SESSIONS, PurgingTrigger(CountTrigger(5))),
    "continuous, hopping": (HOPPING, ContinuousEventTimeTrigger(300)),
    "continuous, sessions": (SESSIONS, ContinuousEventTimeTrigger(700)),
    "purging continuous, tumbling": (TUMBLING, PurgingTrigger(ContinuousEventTimeTrigger(250))),
    "delta, tumbling": (TUMBLING, DeltaTrigger(4, _rise, _rise_columns)),
    "timeout, hopping": (
        HOPPING,
        ProcessingTimeoutTrigger(ContinuousEventTimeTrigger(300), 50, clear_on_timeout=True),
    ),
    "user's, sessions": (SESSIONS, BigAmounts()),
}


#: The cases whose windows fire once each.
ONCE = ("purging continuous, tumbling", "timeout, hopping")


def _process(windowed: Any, function: Any, schema: str) -> Any:
    return windowed.process(function, output_schema=schema)


def job(df: Any, assigner: Any, trigger: Any, finish: Any = None) -> Any:
    windowed = DataStream.from_dataframe(df, event_time="ts").key_by("key").window(assigner)
    windowed = windowed.trigger(trigger)
    if finish is not None:
        return finish(windowed)
    return windowed.aggregate(Amounts(), output_schema=AMOUNTS)


@pytest.mark.differential(ColumnarShape.TUMBLING, ColumnarShape.HOPPING, ColumnarShape.SESSIONS)
def test_triggers_on_columns_give_the_operators_firings(
    spark: SparkSession, small_batches: None
) -> None:
    df = events(spark)
    for case, (assigner, trigger) in CASES.items():
        fast = job(df, assigner, trigger)
        per_row = BigAmountsPerRow() if isinstance(trigger, BigAmounts) else PerRow(trigger)
        operator = job(df, assigner, per_row)
        assert fast.plan.columnar is not None and operator.plan.columnar is None, case
        assert f"firing by {trigger!r} on columns" in str(fast.plan), case
        results = sorted(tuple(r) for r in fast.results.collect())
        assert results == sorted(tuple(r) for r in operator.results.collect()), case
        fired = fast.metrics.collect()[0].num_windows_fired
        assert fired == operator.metrics.collect()[0].num_windows_fired == len(results), case
        windows = {(r[0], r[1]) for r in results}
        if case in ONCE:  # the first timer firing purged, or cleared the timers
            assert len(results) == len(windows) > 20
        else:  # windows fire more than once
            assert len(results) > len(windows) > 20, case


def test_jobs_the_forms_do_not_cover_run_per_row(spark: SparkSession) -> None:
    df = events(spark)
    per_row = [
        job(df, TUMBLING, DeltaTrigger(40, _rise)),  # no vectorized_delta
        job(df, TUMBLING, CountTrigger(3), lambda w: _process(w, FirstLast(), FIRST_LAST)),
        job(
            df,
            TUMBLING,
            CountTrigger(3),
            lambda w: w.evictor(CountEvictorPerRow(2)).aggregate(Amounts(), output_schema=AMOUNTS),
        ),
    ]
    assert [r.plan.columnar for r in per_row] == [None] * 3


class WrongCodes(BigAmounts):
    def on_elements(self, rows: WindowRows, ctx: Any) -> Any:
        return np.full(len(rows), 7)


def test_wrong_codes_fail_naming_the_trigger(spark: SparkSession) -> None:
    result = job(events(spark), TUMBLING, WrongCodes())
    with pytest.raises(Exception, match=r"WrongCodes.on_elements must return a result code"):
        result.results.collect()


class CountEvictorPerRow(CountEvictor):
    """``CountEvictor``, only per row (its own ``evict``, without a mask)."""

    def evict(self, elements: Any) -> Any:
        return super().evict(elements)


AGG_CASES: dict[str, tuple[Any, Any, Any]] = {
    "count, sessions": (SESSIONS, CountTrigger(3), None),
    "purging count, sessions": (SESSIONS, PurgingTrigger(CountTrigger(4)), None),
    "delta, tumbling": (TUMBLING, DeltaTrigger(4, _rise, _rise_columns), None),
    "count evictor, sessions": (SESSIONS, None, CountEvictor(3)),
    "count and count evictor, sessions": (SESSIONS, CountTrigger(3), CountEvictor(2)),
}


@pytest.mark.differential(ColumnarShape.TUMBLING, ColumnarShape.SESSIONS)
def test_agg_columns_with_triggers_and_evictors_on_columns(
    spark: SparkSession, small_batches: None
) -> None:
    """``.agg`` columns (sum, count, max of a double with a NaN, avg) under triggers and
    evictors no native plan takes: the accumulator columns, a key whose windows meet the NaN
    on the operator, the operator's outcome."""
    df = events(spark).withColumn(
        "price", F.when(F.col("amount") == 17, F.lit(float("nan"))).otherwise(F.col("amount") / 4)
    )
    aggs = [
        F.sum("amount").alias("total"),
        F.count("*").alias("n"),
        F.max("price").alias("top"),
        F.avg("amount").alias("mean"),
    ]
    for case, (assigner, trigger, evictor) in AGG_CASES.items():

        def run(per_row: bool, a: Any = assigner, t: Any = trigger, e: Any = evictor) -> Any:
            w = DataStream.from_dataframe(df, event_time="ts").key_by("key").window(a)
            if t is not None:
                w = w.trigger(PerRow(t) if per_row else t)
            if e is not None:
                w = w.evictor(CountEvictorPerRow(e.max_count) if per_row else e)
            return w.agg(*aggs)

        fast, operator = run(False), run(True)
        assert fast.plan.columnar is not None and operator.plan.columnar is None, case
        assert ".agg columns (sum, count, max, avg) as accumulator columns" in str(fast.plan)
        results = sorted(map(repr, fast.results.collect()))
        assert results == sorted(map(repr, operator.results.collect())), case
        assert len(results) > 100 and any("nan" in r for r in results), case
