"""Spark batch replay == the in-memory WindowOperatorHarness on the same input.

Each case generates a random event log (out-of-order and late events, a few rows without
event time), runs it through ``WindowedStream`` on Spark, replays the same rows through the
harness in arrival order with the bounded-out-of-orderness watermark computed here in plain
Python, and compares results and the late side output as multisets.
"""

from __future__ import annotations

import random
import sys
from collections.abc import Iterable, Sequence
from typing import Any

import pytest
from pyspark import cloudpickle as spark_cloudpickle
from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as F  # noqa: N812

from windowing import OutputTag
from windowing.assigners import (
    EventTimeSessionWindows,
    GlobalWindows,
    HoppingEventTimeWindows,
    SlidingDistinctAssigner,
    TumblingEventTimeWindows,
    TumblingProcessingTimeWindows,
    WindowAssigner,
)
from windowing.evictors import Evictor
from windowing.functions import AggregateFunction, ProcessWindowFunction
from windowing.spark.batch.replay_plan import WindowedResult
from windowing.spark.planning import Route
from windowing.state import ReducingStateDescriptor
from windowing.stream import BoundedOutOfOrderness, WindowedStream
from windowing.testing import WindowOperatorHarness
from windowing.time import MAX_TIMESTAMP, MIN_TIMESTAMP
from windowing.triggers import CountTrigger, Trigger, TriggerResult
from windowing.windows import TimestampedValue

pytestmark = pytest.mark.spark

# This module is not importable on the executors (pytest puts tests/spark on sys.path only
# in the driver): ship its functions and classes by value, as a user would for a module that
# is not installed on the cluster. Spark uses its own copy of cloudpickle (pyspark.cloudpickle).
spark_cloudpickle.register_pickle_by_value(sys.modules[__name__])  # type: ignore[no-untyped-call]

LATE = OutputTag("late")
SCHEMA = "user string, amount bigint, ts bigint, seq bigint"
DELAY = 500
LATENESS = 400


# ---------------------------------------------------------------------------- input
def make_events(seed: int, n: int = 160, *, ties: bool = False) -> list[Row]:
    """An event log in arrival order ``seq``: mostly in order, some out of order by less
    than the watermark delay, some much later, a few without event time."""
    rng = random.Random(seed)
    rows = []
    for seq in range(n):
        base = seq * 60
        r = rng.random()
        if r < 0.12:
            ts = base - rng.randint(1_500, 5_000)  # late (beyond delay + lateness)
        elif r < 0.45:
            ts = base - rng.randint(0, 900)  # out of order
        else:
            ts = base
        if ties:
            ts -= ts % 200  # many equal event times
        ts_value: int | None = None if rng.random() < 0.02 else ts
        rows.append(Row(user=rng.choice("abc"), amount=rng.randint(1, 9), ts=ts_value, seq=seq))
    return rows


def to_df(spark: SparkSession, rows: Sequence[Row], partitions: int = 3) -> DataFrame:
    return spark.createDataFrame([tuple(r) for r in rows], SCHEMA).repartition(partitions)


# ---------------------------------------------------------------------------- functions
def max_amount(a: Row, b: Row) -> Row:
    """Keep the row with the largest amount (earliest seq on ties)."""
    return a if (a.amount, -a.seq) >= (b.amount, -b.seq) else b


class SumCount(AggregateFunction[Row, tuple[int, int, int], tuple[int, int, int]]):
    def create_accumulator(self) -> tuple[int, int, int]:
        return (0, 0, 1 << 62)

    def add(self, value: Row, acc: tuple[int, int, int]) -> tuple[int, int, int]:
        return (acc[0] + value.amount, acc[1] + 1, min(acc[2], value.seq))

    def get_result(self, acc: tuple[int, int, int]) -> tuple[int, int, int]:
        return acc

    def merge(self, a: tuple[int, int, int], b: tuple[int, int, int]) -> tuple[int, int, int]:
        return (a[0] + b[0], a[1] + b[1], min(a[2], b[2]))


SUM_COUNT_SCHEMA = "total bigint, n bigint, first_seq bigint"


class Describe(ProcessWindowFunction[Row, tuple[int, int, str], str, Any]):
    """Order-sensitive on purpose: the seqs in the order the window saw them."""

    def process(self, key: str, context: Any, elements: Iterable[Row]) -> Iterable[Any]:
        items = list(elements)
        yield (len(items), sum(r.amount for r in items), ",".join(str(r.seq) for r in items))


DESCRIBE_SCHEMA = "n bigint, total bigint, seqs string"


class EveryNthOrEnd(Trigger[Any, Any]):
    """A custom trigger: FIRE_AND_PURGE every ``n`` elements, FIRE at the window end."""

    COUNT: ReducingStateDescriptor[int] = ReducingStateDescriptor("count", lambda a, b: a + b)

    def __init__(self, n: int) -> None:
        self.n = n

    def on_element(self, element: Any, timestamp: Any, window: Any, ctx: Any) -> TriggerResult:
        count = ctx.get_partitioned_state(self.COUNT)
        count.add(1)
        if count.get() >= self.n:
            count.clear()
            return TriggerResult.FIRE_AND_PURGE
        ctx.register_event_time_timer(window.max_timestamp())
        return TriggerResult.CONTINUE

    def on_event_time(self, time: int, window: Any, ctx: Any) -> TriggerResult:
        return TriggerResult.FIRE if time == window.max_timestamp() else TriggerResult.CONTINUE

    def on_processing_time(self, time: int, window: Any, ctx: Any) -> TriggerResult:
        return TriggerResult.CONTINUE

    def clear(self, window: Any, ctx: Any) -> None:
        ctx.get_partitioned_state(self.COUNT).clear()
        ctx.delete_event_time_timer(window.max_timestamp())


class KeepNewest(Evictor[Any, Any]):
    """A custom evictor: before evaluation, keep the ``n`` elements with the largest
    timestamps (ties: later arrival)."""

    def __init__(self, n: int) -> None:
        self.n = n

    def evict_before(
        self, elements: Sequence[TimestampedValue[Any]], window: Any, ctx: Any
    ) -> Sequence[TimestampedValue[Any]]:
        ranked = sorted(enumerate(elements), key=lambda p: (p[1].timestamp or 0, p[0]))
        keep = {i for i, _ in ranked[-self.n :]}
        return [e for i, e in enumerate(elements) if i in keep]

    def evict_after(
        self, elements: Sequence[TimestampedValue[Any]], window: Any, ctx: Any
    ) -> Sequence[TimestampedValue[Any]]:
        return elements


# ---------------------------------------------------------------------------- reference
def harness_run(
    rows: Sequence[Row],
    *,
    assigner: WindowAssigner[Any, Any],
    function: Any,
    trigger: Any = None,
    evictor: Any = None,
    lateness: int = LATENESS,
    delay: int = DELAY,
    processing_time: bool = False,
    slicing: bool | None = None,
) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """Results and late rows of the harness, replayed in ``seq`` order with the watermark
    ``max(ts of earlier rows) - delay - 1``."""
    h = WindowOperatorHarness(
        assigner,
        function,
        trigger=trigger,
        evictor=evictor,
        allowed_lateness=lateness,
        late_output_tag=LATE,
        slicing=slicing,
    )
    late: list[tuple[Any, ...]] = []
    max_ts: int | None = None
    for r in sorted(rows, key=lambda r: r.seq):
        if max_ts is not None:
            h.process_watermark(max_ts - delay - 1)
        if processing_time:
            h.set_processing_time(r.seq * 60)
        if r.ts is None and assigner.is_event_time():
            wm = h.watermark
            late.append((*r, None if wm == MIN_TIMESTAMP else wm, "null_event_time"))
        else:
            h.process_element(r, r.ts, key=r.user)
        if r.ts is not None:
            max_ts = r.ts if max_ts is None else max(max_ts, r.ts)
    h.process_watermark(MAX_TIMESTAMP)
    h.set_processing_time(MAX_TIMESTAMP)
    results = []
    for res in h.extract_output():
        value = res.value
        if isinstance(value, Row):  # a reduced row: drop the key column
            value = tuple(v for n, v in zip(value.__fields__, value, strict=True) if n != "user")
        start = getattr(res.window, "start", None)
        end = getattr(res.window, "end", None)
        results.append((res.key, start, end, *value, res.timestamp))
    for e in h.extract_side_output(LATE):
        late.append((*e.value, None if e.watermark == MIN_TIMESTAMP else e.watermark, "late"))
    return sorted(results, key=repr), sorted(late, key=repr)


def spark_run(result: WindowedResult) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    results = sorted((tuple(r) for r in result.results.collect()), key=repr)
    late = sorted((tuple(r) for r in result.get_side_output(LATE).collect()), key=repr)
    return results, late


def stream(df: DataFrame, **source: Any) -> Any:
    source.setdefault("watermark", BoundedOutOfOrderness(DELAY))
    source.setdefault("arrival_order", "seq")
    return WindowedStream.from_dataframe(df, event_time="ts", **source)


# ---------------------------------------------------------------------------- the matrix
ASSIGNERS: dict[str, tuple[Any, Any]] = {
    "tumbling": (TumblingEventTimeWindows(1_000), None),
    "hopping": (HoppingEventTimeWindows(1_500, 500), None),
    "session": (EventTimeSessionWindows(250), None),
    "global_count": (GlobalWindows(), CountTrigger(4)),
}
FUNCTIONS = ("reduce", "aggregate", "process")


@pytest.mark.differential(Route.BATCH_REPLAY)
@pytest.mark.parametrize("kind", FUNCTIONS)
@pytest.mark.parametrize("family", list(ASSIGNERS))
def test_spark_batch_equals_harness(spark: SparkSession, family: str, kind: str) -> None:
    assigner, trigger = ASSIGNERS[family]
    rows = make_events(seed=list(ASSIGNERS).index(family) * 10 + FUNCTIONS.index(kind))
    windowed = stream(to_df(spark, rows)).key_by("user").window(assigner)
    if trigger is not None:
        windowed = windowed.trigger(trigger)
    windowed = windowed.allowed_lateness(LATENESS).side_output_late_data(LATE)
    function: Any
    if kind == "reduce":
        result, function = windowed.reduce(max_amount), max_amount
    elif kind == "aggregate":
        result = windowed.aggregate(SumCount(), output_schema=SUM_COUNT_SCHEMA)
        function = SumCount()
    else:
        result = windowed.process(Describe(), output_schema=DESCRIBE_SCHEMA)
        function = Describe()
    with result:
        got = spark_run(result)
        metrics = result.collect_metrics()
    want = harness_run(rows, assigner=assigner, function=function, trigger=trigger)
    assert got == want
    assert got[0], "the case should produce results"
    if assigner.is_event_time():
        assert any(r[-1] == "late" for r in got[1]), "the case should produce late rows"
    assert metrics.num_input_rows == len(rows)
    assert metrics.num_results == len(got[0])
    assert metrics.num_late_records_side_output + metrics.num_null_event_time == len(got[1])
    assert metrics.num_keys == len({r.user for r in rows})


def test_custom_trigger_and_evictor_run_on_executors(spark: SparkSession) -> None:
    rows = make_events(seed=11)
    assigner = TumblingEventTimeWindows(2_000)
    trigger, evictor = EveryNthOrEnd(3), KeepNewest(2)
    result = (
        stream(to_df(spark, rows))
        .key_by("user")
        .window(assigner)
        .trigger(trigger)
        .evictor(evictor)
        .allowed_lateness(LATENESS)
        .side_output_late_data(LATE)
        .process(Describe(), output_schema=DESCRIBE_SCHEMA)
    )
    with result:
        got = spark_run(result)
    want = harness_run(
        rows, assigner=assigner, function=Describe(), trigger=trigger, evictor=evictor
    )
    assert got == want
    assert all(r[3] <= 2 for r in got[0])  # the evictor kept at most two elements


def test_processing_time_windows(spark: SparkSession) -> None:
    rows = make_events(seed=5)
    df = to_df(spark, rows).withColumn("arrived", F.col("seq") * 60)
    assigner = TumblingProcessingTimeWindows(1_000)
    result = (
        stream(df, processing_time="arrived")
        .key_by("user")
        .window(assigner)
        .side_output_late_data(LATE)
        .aggregate(SumCount(), output_schema=SUM_COUNT_SCHEMA)
    )
    with result:
        got = spark_run(result)
    want = harness_run(rows, assigner=assigner, function=SumCount(), processing_time=True)
    assert got == want
    assert not got[1]  # processing-time windows are never late


# ---------------------------------------------------------------------------- independence
def _order_sensitive_job(
    df: DataFrame, *, arrival: bool, key_groups: int = 128
) -> list[tuple[Any, ...]]:
    source: dict[str, Any] = {"watermark": BoundedOutOfOrderness(DELAY)}
    source["arrival_order"] = "batch" if arrival else None
    result = (
        WindowedStream.from_dataframe(df, event_time="ts", **source)
        .key_by("user")
        .window(TumblingEventTimeWindows(1_000))
        .max_parallelism(key_groups)
        .trigger(CountTrigger(3))
        .allowed_lateness(LATENESS)
        .side_output_late_data(LATE)
        .process(Describe(), output_schema=DESCRIBE_SCHEMA)
    )
    with result:
        out = sorted(tuple(r) for r in result.results.collect())
        out += sorted((tuple(r) for r in result.get_side_output(LATE).collect()), key=repr)
    return out


@pytest.mark.parametrize("arrival", [True, False], ids=["arrival_batches", "event_time_order"])
def test_results_do_not_depend_on_partitioning(spark: SparkSession, arrival: bool) -> None:
    rows = make_events(seed=3, n=200, ties=True)
    base = spark.createDataFrame([tuple(r) for r in rows], SCHEMA).withColumn(
        "batch", F.col("seq") / 7
    )
    base = base.withColumn("batch", F.col("batch").cast("long"))  # 7 rows arrive together
    previous = spark.conf.get("spark.sql.shuffle.partitions") or "2"
    outputs = []
    try:
        # every key in one Python call (one key group), then keys spread over 128 groups
        for partitions, groups in ((1, 1), (8, 128)):
            spark.conf.set("spark.sql.shuffle.partitions", str(partitions))
            job = _order_sensitive_job(
                base.repartition(partitions), arrival=arrival, key_groups=groups
            )
            outputs.append(job)
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", previous)
    assert outputs[0] == outputs[1]
    assert len(outputs[0]) > 20


def test_sliding_distinct_windows(spark: SparkSession) -> None:
    """KIP-450 windows (inclusive ends, represented as TimeWindow(start, end + 1)) run through
    the same replay; grace plays the role of allowed lateness."""
    rows = make_events(seed=21)
    assigner = SlidingDistinctAssigner(700, grace=LATENESS)
    result = (
        stream(to_df(spark, rows))
        .key_by("user")
        .window(assigner)
        .side_output_late_data(LATE)
        .aggregate(SumCount(), output_schema=SUM_COUNT_SCHEMA)
    )
    with result:
        got = spark_run(result)
    want = harness_run(rows, assigner=assigner, function=SumCount(), lateness=0)
    assert got == want
    assert got[0] and got[1]


def fold_amounts(a: Row, b: Row) -> Row:
    """An order-sensitive reduce: ``amount`` as a base-31 number of the amounts combined."""
    return Row(user=a.user, amount=(a.amount * 31 + b.amount) % 1_000_003, ts=a.ts, seq=a.seq)


def test_slicing_false_reaches_the_executors(spark: SparkSession) -> None:
    """``.slicing(False)``: sliding-distinct windows keep per-window contents combined in
    arrival order, on the executors as in the harness (and unlike the default layout)."""
    rows = make_events(seed=23)
    assigner = SlidingDistinctAssigner(700, grace=LATENESS)
    windowed = stream(to_df(spark, rows)).key_by("user").window(assigner)
    outputs = {}
    for slicing in (True, False):
        result = windowed.slicing(slicing).side_output_late_data(LATE).reduce(fold_amounts)
        with result:
            got = spark_run(result)
        want = harness_run(
            rows, assigner=assigner, function=fold_amounts, lateness=0, slicing=slicing
        )
        assert got == want
        outputs[slicing] = got[0]
    assert outputs[True] != outputs[False]  # the input has out-of-order records in a window
