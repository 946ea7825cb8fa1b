"""A per-row ``AggregateFunction`` or ``ReduceFunction`` folded a record batch at a time in the
batch replay (``windowing.spark.columnar.row_fold``), against the window operator's path."""

from __future__ import annotations

import sys
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark import cloudpickle as spark_cloudpickle
from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as F  # noqa: N812
from pyspark.sql.types import LongType, StringType

from tests.spark.test_vectorized import (
    SHAPES,
    T0,
    OperatorTrigger,
    _layout,
    batch_windows,
    collected,
    harness_windows,
)
from windowing import (
    EventTimeSessionWindows,
    HoppingEventTimeWindows,
    OutputTag,
    TumblingEventTimeWindows,
)
from windowing.functions import Aggregate, AggregateFunction, ProcessWindowFunction, Reduce
from windowing.job import WindowConfig
from windowing.spark.columnar.row_fold import ProcessFold, RowFold, fold_of
from windowing.spark.columnar.vectorized import fold_plan
from windowing.spark.planning import ColumnarShape, Route
from windowing.state import ValueStateDescriptor
from windowing.stream import DataStream
from windowing.testing import WindowOperatorHarness

pytestmark = pytest.mark.spark

spark_cloudpickle.register_pickle_by_value(sys.modules[__name__])  # type: ignore[no-untyped-call]


class Trail(AggregateFunction[Any, tuple[int, ...], str]):
    """The ``x`` of a window's rows in the order ``add`` gets them (order-sensitive; ``-1``
    where accumulators were merged), ``None``
    for windows of key 3 holding an odd number of rows when ``odd_none``."""

    def __init__(self, odd_none: bool = False) -> None:
        self.odd_none = odd_none

    def create_accumulator(self) -> tuple[int, ...]:
        return ()

    def add(self, value: Any, accumulator: tuple[int, ...]) -> tuple[int, ...]:
        return (*accumulator, value.x)

    def merge(self, a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
        return (*a, -1, *b)  # a merge shows in the result

    def get_result(self, accumulator: tuple[int, ...]) -> str | None:
        if self.odd_none and len(accumulator) % 2 and accumulator[0] % 10 == 3:
            return None
        return ",".join(map(str, accumulator))


class Failing(AggregateFunction[Any, int, int]):
    """Fails adding the row with ``x == bad_x``, or (``bad_x`` None) taking a result."""

    def __init__(self, bad_x: int | None) -> None:
        self.bad_x = bad_x

    def create_accumulator(self) -> int:
        return 0

    def add(self, value: Any, accumulator: int) -> int:
        if value.x == self.bad_x:
            raise ArithmeticError(f"bad row {value.x}")
        return accumulator + 1

    def merge(self, a: int, b: int) -> int:
        return a + b

    def get_result(self, accumulator: int) -> int:
        if self.bad_x is None:
            raise ArithmeticError("bad result")
        return accumulator


class Tagged(ProcessWindowFunction[Any, Any, Any, Any]):
    """A window function over an incremental result: the window's start, the key's count of
    windows so far (per-key state) and the result (a reduce's: its ``x``)."""

    def process(self, key: Any, context: Any, elements: Any) -> Any:
        seen = context.global_state().get_state(SEEN)
        nth = (seen.value() or 0) + 1
        seen.update(nth)
        (result,) = elements
        value = result if isinstance(result, str) else str(result.x)
        yield (context.window().start, nth, value)


def rows(spark: SparkSession, n: int = 1_500) -> DataFrame:
    rid = F.col("id")
    return spark.range(n).select(
        (rid % 10).alias("key"),
        rid.alias("x"),
        ((rid * 7919) % 101).alias("amount"),
        F.timestamp_millis(
            F.lit(T0) + rid * 37 + F.floor(rid / 7) * 50 + F.floor(rid / 100) * 1_000
        ).alias("ts"),
    )


def _latest(a: Row, b: Row) -> Row:
    """A reduce that depends on the order: the later row, its amount summed."""
    return Row(key=b.key, x=b.x, amount=a.amount + b.amount, ts=b.ts)


ASSIGNERS = {
    "tumbling": lambda: TumblingEventTimeWindows("2 seconds"),
    "hopping": lambda: HoppingEventTimeWindows("3 seconds", "1 second"),
    "hopping_even": lambda: HoppingEventTimeWindows("2 seconds", "2 seconds"),
    # a key's rows 420 or 470 ms apart, all rows 37 or 87 ms apart: sessions of several rows
    "sessions": lambda: EventTimeSessionWindows("450 milliseconds"),
    "sessions_all": lambda: EventTimeSessionWindows("45 milliseconds"),
}


@pytest.mark.differential(ColumnarShape.TUMBLING, ColumnarShape.HOPPING, ColumnarShape.SESSIONS)
@pytest.mark.parametrize(
    ("shape", "keyed"),
    [
        ("tumbling", True),
        ("hopping", True),
        ("hopping_even", False),
        ("sessions", True),
        ("sessions", False),
    ],
)
def test_a_fold_gives_the_operators_results(
    spark: SparkSession, tiny_batches: None, shape: str, keyed: bool
) -> None:
    """Order-sensitive aggregate and reduce: each window's rows in replay order, however a
    key's rows are batched and carried; a ``None`` result goes to the operator, which counts
    it."""
    stream = DataStream.from_dataframe(rows(spark), event_time="ts")

    def run(trigger: Any, kind: str) -> Any:
        assigner = ASSIGNERS[
            f"{shape}_all" if f"{shape}_all" in ASSIGNERS and not keyed else shape
        ]()
        windowed = stream.key_by("key").window(assigner) if keyed else stream.window_all(assigner)
        if trigger is not None:
            windowed = windowed.trigger(trigger)
        if kind == "reduce":
            return windowed.reduce(_latest)
        return windowed.aggregate(Trail(odd_none=True), output_schema="trail string")

    for kind in ("aggregate", "reduce"):
        fast, operator = run(None, kind), run(OperatorTrigger(), kind)
        assert fast.plan.route is Route.BATCH_REPLAY
        assert isinstance(fast.plan.columnar.function, RowFold), str(fast.plan)
        assert operator.plan.columnar is None
        kind_name = "AggregateFunction Trail" if kind == "aggregate" else "ReduceFunction"
        assert kind_name in str(fast.plan) and "no operator per key" in str(fast.plan)
        got = collected(fast)
        assert len(got) > 30
        assert got == collected(operator)
        if kind == "aggregate":
            assert any("," in str(r[-2]) for r in got)  # windows of several rows
            fast_nulls = fast.metrics.collect()[0].num_null_results
            assert fast_nulls == operator.metrics.collect()[0].num_null_results
            if keyed:
                assert fast_nulls > 0


def test_an_order_insensitive_hopping_aggregate_keeps_the_operators_panes(
    spark: SparkSession,
) -> None:
    """The operator merges partials of panes for an order-insensitive function: not a fold
    (the same arithmetic, in another order, could round floats otherwise)."""

    class Count(Trail):
        order_insensitive = True

    windowed = DataStream.from_dataframe(rows(spark, 100), event_time="ts").key_by("key")
    hopping = windowed.window(HoppingEventTimeWindows("3 seconds", "1 second"))
    assert hopping.aggregate(Count(), output_schema="trail string").plan.columnar is None
    tumbling = windowed.window(TumblingEventTimeWindows("3 seconds"))
    plan = tumbling.aggregate(Count(), output_schema="trail string").plan
    assert isinstance(plan.columnar.function, RowFold)


@pytest.mark.parametrize(
    ("bad_x", "note"),
    [(317, "while adding the element with timestamp 1714521616979 "), (None, "while evaluating")],
    ids=["add", "get_result"],
)
def test_a_fold_names_the_key_and_window_of_an_error_as_the_operator(
    spark: SparkSession, bad_x: int | None, note: str
) -> None:
    windowed = (
        DataStream.from_dataframe(rows(spark, 400), event_time="ts")
        .key_by("key")
        .window(TumblingEventTimeWindows("2 seconds"))
    )
    fast = windowed.aggregate(Failing(bad_x))
    operator = windowed.trigger(OperatorTrigger()).aggregate(Failing(bad_x))
    assert isinstance(fast.plan.columnar.function, RowFold)
    notes = []
    for result in (fast, operator):
        with pytest.raises(Exception, match="bad r") as info:
            result.results.collect()
        notes.append([line for line in str(info.value).splitlines() if line.startswith("while")])
    assert notes[0] == notes[1]
    assert notes[0][0].startswith(note)
    assert notes[0][0].endswith("of key 7" if bad_x else "of key 0")


def test_the_plan_takes_per_row_functions_only() -> None:
    """A window function, another trigger, dynamic-gap sessions or a streaming job: not a
    fold."""
    tumbling = TumblingEventTimeWindows(10)
    config = WindowConfig(tumbling, None, None, 0)
    assert fold_of(Aggregate(Trail())) is not None
    assert fold_of(Reduce(_latest)) is not None
    with_window = fold_of(Aggregate(Trail(), window_function=Tagged()))
    assert isinstance(with_window, RowFold) and isinstance(with_window.window_function, Tagged)
    assert fold_plan(config, Aggregate(Trail()), streaming=True) is None
    dynamic = WindowConfig(EventTimeSessionWindows.with_dynamic_gap(lambda r: 5), None, None, 0)
    assert fold_plan(dynamic, Aggregate(Trail()), streaming=False) is None
    assert (
        fold_plan(
            WindowConfig(tumbling, OperatorTrigger(), None, 0), Aggregate(Trail()), streaming=False
        )
        is None
    )


@settings(max_examples=60)
@given(
    shape=st.sampled_from(sorted(SHAPES)),
    data=st.lists(st.tuples(st.integers(0, 3), st.integers(-30, 60)), max_size=40),
    reduce=st.booleans(),
)
def test_the_fold_of_a_batch_is_the_operators(shape: str, data: list[Any], reduce: bool) -> None:
    """A batch's folds, each over its window's rows in replay order, are the results the
    operator fires at the end of input (no Spark job)."""
    data = sorted(data)  # by key, then event time: the replay's order
    assigner = SHAPES[shape]()
    fn: Any = (lambda a, b: Row(x=a.x * 3 + b.x)) if reduce else Trail()
    spec = Reduce(fn) if reduce else Aggregate(fn)
    plan = fold_plan(WindowConfig(assigner, None, None, 0), spec, streaming=False)
    assert plan is not None and isinstance(plan.function, RowFold)
    harness = WindowOperatorHarness(assigner, spec)
    value = (lambda v: v.x) if reduce else (lambda v: v)
    expected = harness_windows(harness, data, value)
    layout = _layout(x=LongType()) if reduce else _layout(trail=StringType())
    assert batch_windows(plan, data, layout) == expected


# ----------------------------------------------------------------------- window functions
BIG = OutputTag("big")
SEEN = ValueStateDescriptor("seen", None)
PROCESS_OUTPUT = "x bigint, nth bigint, wm bigint, pt bigint, start bigint, n bigint, trail string"


class TopRows(ProcessWindowFunction[Any, Any, Any, Any]):
    """Per window: the two rows of largest ``amount`` (none for every third window of a
    key: a per-key counter), with the context's clocks and window and the rows' ``x`` in
    the order ``process`` gets them; the row count of windows of more than 2 rows to a side
    output."""

    def process(self, key: Any, context: Any, elements: Any) -> Any:
        seen = context.global_state().get_state(SEEN)
        nth = (seen.value() or 0) + 1
        seen.update(nth)
        rows = list(elements)
        if len(rows) > 2:
            context.output(BIG, len(rows))
        if not nth % 3:
            return []
        trail = ",".join(str(r.x) for r in rows)
        top = sorted(rows, key=lambda r: (-r.amount, r.x))[:2]
        wm, pt = context.current_watermark(), context.current_processing_time()
        start = context.window().start
        return [(r.x, nth, wm, pt, start, len(rows), trail) for r in top]


class Cleared(ProcessWindowFunction[Any, Any, Any, Any]):
    """Counts its windows' rows in per-window state and adds them up in ``clear`` (a per-key
    counter of cleared rows, read by the next window)."""

    def process(self, key: Any, context: Any, elements: Any) -> Any:
        rows = list(elements)
        context.window_state().get_state(SEEN).update(len(rows))
        cleared = context.global_state().get_state(ValueStateDescriptor("cleared", 0))
        yield {"n": len(rows), "cleared": cleared.value()}

    def clear(self, context: Any) -> None:
        cleared = context.global_state().get_state(ValueStateDescriptor("cleared", 0))
        cleared.update(cleared.value() + context.window_state().get_state(SEEN).value())


@pytest.mark.differential(ColumnarShape.TUMBLING, ColumnarShape.HOPPING, ColumnarShape.SESSIONS)
@pytest.mark.parametrize("shape", ["tumbling", "hopping", "sessions"])
def test_a_window_function_per_window_gives_the_operators_outputs(
    spark: SparkSession, tiny_batches: None, shape: str
) -> None:
    """Outputs, per-key state, clocks, the rows in replay order, side outputs and metrics
    as the operator's, however a key's rows are batched and carried."""
    stream = DataStream.from_dataframe(rows(spark), event_time="ts").key_by("key")

    def run(trigger: Any) -> Any:
        windowed = stream.window(ASSIGNERS[shape]())
        if trigger is not None:
            windowed = windowed.trigger(trigger)
        return windowed.process(
            TopRows(), output_schema=PROCESS_OUTPUT, side_output_schemas={BIG: "bigint"}
        )

    fast, operator = run(None), run(OperatorTrigger())
    assert isinstance(fast.plan.columnar.function, ProcessFold), str(fast.plan)
    assert "ProcessWindowFunction TopRows" in str(fast.plan)
    assert operator.plan.columnar is None
    got = collected(fast)
    assert len(got) > 30 and any("," in r[-2] for r in got)
    assert got == collected(operator)
    big = sorted(tuple(r) for r in fast.get_side_output(BIG).collect())
    assert big == sorted(tuple(r) for r in operator.get_side_output(BIG).collect())
    assert len(big) > 0
    assert fast.metrics.collect()[0] == operator.metrics.collect()[0]


def test_a_window_functions_clear_follows_each_window_without_lateness(
    spark: SparkSession,
) -> None:
    """``clear`` after each ``process`` (no lateness: one timer); with a lateness the
    operator orders the cleanups."""
    stream = DataStream.from_dataframe(rows(spark, 600), event_time="ts").key_by("key")

    def run(trigger: Any, lateness: int = 0) -> Any:
        windowed = stream.window(TumblingEventTimeWindows("2 seconds")).allowed_lateness(lateness)
        if trigger is not None:
            windowed = windowed.trigger(trigger)
        return windowed.process(Cleared(), output_schema="n bigint, cleared bigint")

    fast, operator = run(None), run(OperatorTrigger())
    assert isinstance(fast.plan.columnar.function, ProcessFold)
    got = collected(fast)
    assert got == collected(operator) and max(r[-2] for r in got) > 0
    assert run(None, 1_000).plan.columnar is None


def test_a_window_functions_wrong_output_is_named_as_the_operator_names_it(
    spark: SparkSession,
) -> None:
    class Wrong(ProcessWindowFunction[Any, Any, Any, Any]):
        def process(self, key: Any, context: Any, elements: Any) -> Any:
            return 5  # not an iterable

    stream = (
        DataStream.from_dataframe(rows(spark, 100), event_time="ts")
        .key_by("key")
        .window(TumblingEventTimeWindows("2 seconds"))
    )
    messages = []
    for result in (
        stream.process(Wrong(), output_schema="n bigint"),
        stream.trigger(OperatorTrigger()).process(Wrong(), output_schema="n bigint"),
    ):
        with pytest.raises(Exception, match="must return an iterable of outputs") as info:
            result.results.collect()
        messages.append(
            [line for line in str(info.value).splitlines() if "iterable" in line or "while" in line]
        )
    assert messages[0] == messages[1]


@pytest.mark.differential(ColumnarShape.TUMBLING, ColumnarShape.HOPPING, ColumnarShape.SESSIONS)
@pytest.mark.parametrize("shape", ["tumbling", "hopping", "sessions"])
def test_a_fold_then_its_window_function_gives_the_operators_outputs(
    spark: SparkSession, tiny_batches: None, shape: str
) -> None:
    """An aggregate or a reduce with a ``ProcessWindowFunction`` given each window's result:
    the fold, then one call per window with its context and per-key state."""
    stream = DataStream.from_dataframe(rows(spark), event_time="ts").key_by("key")
    schema = "start bigint, nth bigint, value string"

    def run(trigger: Any, kind: str) -> Any:
        windowed = stream.window(ASSIGNERS[shape]())
        if trigger is not None:
            windowed = windowed.trigger(trigger)
        if kind == "reduce":
            return windowed.reduce(_latest, Tagged(), output_schema=schema)
        return windowed.aggregate(Trail(), Tagged(), output_schema=schema)

    for kind in ("aggregate", "reduce"):
        fast, operator = run(None, kind), run(OperatorTrigger(), kind)
        assert isinstance(fast.plan.columnar.function, RowFold), str(fast.plan)
        assert "and ProcessWindowFunction Tagged" in str(fast.plan)
        got = collected(fast)
        assert len(got) > 30 and max(r[-3] for r in got) > 5
        assert got == collected(operator)
        assert fast.metrics.collect()[0] == operator.metrics.collect()[0]
