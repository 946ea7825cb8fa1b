"""Vectorized window functions on Spark: the batch replay's path (one ``process`` per window
on a slice of a record batch) against the window operator's (the adapter), with Flink's
context (window, clocks, per-window and per-key state, side outputs), Spark's native
aggregates, mistakes, and a streaming query."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from pyspark import cloudpickle as spark_cloudpickle
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812

from tests.spark.test_spark_streaming import LATE, in_order_batches, streamed_and_replayed
from tests.spark.test_vectorized import OperatorTrigger, collected
from windowing import (
    EventTimeSessionWindows,
    HoppingEventTimeWindows,
    OutputTag,
    TumblingEventTimeWindows,
    VectorizedProcessWindowFunction,
)
from windowing.spark.planning import ColumnarShape, Route
from windowing.state import ValueStateDescriptor
from windowing.stream import DataStream

pytestmark = pytest.mark.spark

spark_cloudpickle.register_pickle_by_value(sys.modules[__name__])  # type: ignore[no-untyped-call]

T0 = 1_714_521_600_000
BIG = OutputTag("big")
SEEN = ValueStateDescriptor("seen", None)
OUTPUT = "amount bigint, nth bigint, wm bigint, pt bigint, start bigint, rows bigint"


class TopTwo(VectorizedProcessWindowFunction):
    """The two largest amounts of a window (none for every third window of a key: the
    key's count of windows is per-key state), with the context's clocks and window; the
    number of rows of windows of more than 5 rows to a side output."""

    def process(self, key: Any, context: Any, batch: pa.Table) -> Any:
        seen = context.global_state().get_state(SEEN)
        nth = (seen.value() or 0) + 1
        seen.update(nth)
        k = min(2, batch.num_rows) if nth % 3 else 0
        top = batch.slice(0, 0)
        if k:
            top = batch.take(pc.select_k_unstable(batch, k, [("amount", "descending")]))
        if batch.num_rows > 5:
            context.output(BIG, batch.num_rows)
        return {
            "amount": top.column("amount"),
            "nth": [nth] * k,
            "wm": [context.current_watermark()] * k,
            "pt": [context.current_processing_time()] * k,
            "start": [context.window().start] * k,
            "rows": [batch.num_rows] * k,
        }


class Summary(VectorizedProcessWindowFunction):
    """Rows, largest and mean amount of a window as one pandas row."""

    batch_format = "pandas"

    def process(self, key: Any, context: Any, batch: Any) -> Any:
        import pandas as pd

        amount = batch["amount"]
        return pd.DataFrame({"n": [len(batch)], "top": [amount.max()], "mean": [amount.mean()]})


class Counted(VectorizedProcessWindowFunction):
    """Counts its windows in per-window state and reports it in ``clear`` (a per-key
    counter of cleared windows, read by the next window)."""

    batch_format = "numpy"

    def process(self, key: Any, context: Any, batch: Any) -> Any:
        context.window_state().get_state(SEEN).update(len(batch["amount"]))
        cleared = context.global_state().get_state(ValueStateDescriptor("cleared", 0))
        return [(int(batch["amount"].sum()), cleared.value())]

    def clear(self, context: Any) -> None:
        cleared = context.global_state().get_state(ValueStateDescriptor("cleared", 0))
        cleared.update(cleared.value() + context.window_state().get_state(SEEN).value())


def events(spark: SparkSession, n: int = 3_000, keys: int = 7) -> DataFrame:
    rid = F.col("id")
    return spark.range(n).select(
        (rid % keys).alias("key"),
        ((rid * 7919) % 101).alias("amount"),
        F.timestamp_millis(F.lit(T0) + rid * 23).alias("ts"),
    )


def both(df: DataFrame, assigner: Any, finish: Any, lateness: int = 0) -> tuple[Any, Any]:
    """``finish`` of the job on whole columns, and on the window operator."""

    def job(trigger: Any) -> Any:
        windowed = DataStream.from_dataframe(df, event_time="ts").key_by("key").window(assigner)
        if trigger is not None:
            windowed = windowed.trigger(trigger)
        return finish(windowed.allowed_lateness(lateness))

    fast, operator = job(None), job(OperatorTrigger())
    assert operator.plan.columnar is None
    return fast, operator


def metrics(result: Any) -> dict[str, Any]:
    return result.metrics.collect()[0].asDict()


@pytest.mark.differential(ColumnarShape.TUMBLING)
def test_one_call_per_window_gives_the_operators_outputs_state_and_side_outputs(
    spark: SparkSession, small_batches: None
) -> None:
    df = events(spark)
    fast, operator = both(
        df,
        TumblingEventTimeWindows("2 seconds"),
        lambda w: w.process(TopTwo(), output_schema=OUTPUT, side_output_schemas={BIG: "bigint"}),
    )
    assert fast.plan.route is Route.BATCH_REPLAY
    plan = str(fast.plan)
    assert "VectorizedProcessWindowFunction TopTwo" in plan and "one process call" in plan
    results = collected(fast)
    assert results == collected(operator)
    assert {r[5] for r in results} == {2**63 - 1} and {r[6] for r in results} == {0}
    assert all(r[4] % 3 for r in results) and max(r[4] for r in results) > 20  # every third: none
    big = sorted(tuple(r) for r in fast.get_side_output(BIG).collect())
    assert big == sorted(tuple(r) for r in operator.get_side_output(BIG).collect())
    assert len(big) > 100
    counts = metrics(fast)
    assert counts == metrics(operator)
    assert counts["num_results"] == len(results) < counts["num_windows_fired"] * 2


@pytest.mark.differential(ColumnarShape.TUMBLING)
def test_a_pandas_row_per_window_is_sparks_own_aggregation(
    spark: SparkSession, small_batches: None
) -> None:
    df = events(spark, 2_000)
    result = (
        DataStream.from_dataframe(df, event_time="ts")
        .key_by("key")
        .window(TumblingEventTimeWindows("5 seconds"))
        .process(Summary(), output_schema="n bigint, top bigint, mean double")
    )
    assert result.plan.columnar is not None
    native = df.groupBy("key", F.window("ts", "5 seconds")).agg(
        F.count("*"), F.max("amount"), F.avg("amount")
    )
    expected = sorted((r[0], r[1].start, r[1].end, *r[2:]) for r in native.collect())
    got = [r[:6] for r in collected(result)]
    assert len(got) > 40
    assert [r[:5] for r in got] == [r[:5] for r in expected]
    assert [r[5] for r in got] == pytest.approx([r[5] for r in expected], rel=1e-12)


@pytest.mark.differential(ColumnarShape.HOPPING, ColumnarShape.SESSIONS)
@pytest.mark.parametrize(
    "assigner",
    [HoppingEventTimeWindows("4 seconds", "1 second"), EventTimeSessionWindows("500 milliseconds")],
    ids=["hopping", "sessions"],
)
def test_hopping_windows_and_sessions_and_keys_going_on_in_the_operator(
    spark: SparkSession, tiny_batches: None, assigner: Any
) -> None:
    """Batches of 7 rows: a key's windows span batches; hopping keys of more than 150 rows go
    on in the operator, taking their per-key state (the window count) with them."""
    rid = F.col("id")
    df = spark.range(1_200).select(
        F.when(rid % 10 < 5, 0).otherwise(rid % 10).alias("key"),
        ((rid * 7919) % 101).alias("amount"),
        F.timestamp_millis(F.lit(T0) + rid * 23 + F.floor(rid / 100) * 1_000).alias("ts"),
    )
    fast, operator = both(
        df,
        assigner,
        lambda w: w.process(TopTwo(), output_schema=OUTPUT, side_output_schemas={BIG: "bigint"}),
    )
    assert fast.plan.columnar is not None
    results = collected(fast)
    assert len(results) > 50 and max(r[4] for r in results) > 10
    assert results == collected(operator)
    assert metrics(fast) == metrics(operator)


@pytest.mark.differential(ColumnarShape.TUMBLING)
def test_a_key_going_on_in_the_operator_takes_its_per_key_state(
    spark: SparkSession, tiny_batches: None
) -> None:
    """Key 0's first windows are evaluated on whole columns; its window of 400 rows is more
    than the replay carries, so the key goes on in the operator, with its count of windows."""
    rid = F.col("id")
    sparse = rid < 60  # 100 ms apart, then 400 rows in one second
    ts = F.when(sparse, rid * 100).otherwise(6_000 + (rid - 60) * 2)
    df = spark.range(460).select(
        F.when(rid % 3 == 0, 1).otherwise(0).alias("key"),
        ((rid * 7919) % 101).alias("amount"),
        F.timestamp_millis(F.lit(T0) + ts).alias("ts"),
    )
    fast, operator = both(
        df,
        TumblingEventTimeWindows("1 second"),
        lambda w: w.process(TopTwo(), output_schema=OUTPUT, side_output_schemas={BIG: "bigint"}),
    )
    results = collected(fast)
    assert [r[4] for r in results if r[0] == 0][-1] == 7  # the key's 7th window
    assert results == collected(operator)
    assert metrics(fast) == metrics(operator)


@pytest.mark.differential(ColumnarShape.TUMBLING)
def test_clear_follows_process_without_lateness_and_runs_in_the_operator_with_it(
    spark: SparkSession, small_batches: None
) -> None:
    df = events(spark, 1_500)
    schema = "total bigint, cleared bigint"
    fast, operator = both(
        df,
        TumblingEventTimeWindows("1 second"),
        lambda w: w.process(Counted(), output_schema=schema),
    )
    assert fast.plan.columnar is not None
    results = collected(fast)
    assert results == collected(operator)
    assert max(r[4] for r in results) > 100  # the rows of the key's cleared windows
    late = (
        DataStream.from_dataframe(df, event_time="ts")
        .key_by("key")
        .window(TumblingEventTimeWindows("1 second"))
        .allowed_lateness("3 seconds")
        .process(Counted(), output_schema=schema)
    )
    assert late.plan.columnar is None  # cleanups among other windows' firings: timers
    assert len(collected(late)) == len(results)


def test_per_window_state_of_sessions_and_wrong_outputs_are_refused(spark: SparkSession) -> None:
    df = events(spark, 200)
    windowed = DataStream.from_dataframe(df, event_time="ts").key_by("key")
    sessions = windowed.window(EventTimeSessionWindows("1 second"))
    fast = sessions.process(Counted(), output_schema="total bigint, cleared bigint")
    assert fast.plan.columnar is not None
    with pytest.raises(Exception, match="Per-window state is not allowed"):
        fast.results.collect()
    tumbling = windowed.window(TumblingEventTimeWindows("1 second"))
    with pytest.raises(ValueError, match="output_schema is required"):
        tumbling.process(Summary())
    wrong = tumbling.process(Summary(), output_schema="n bigint, largest bigint, mean double")
    with pytest.raises(Exception, match=r"Summary\.process returned the columns"):
        wrong.results.collect()

    class ToLate(VectorizedProcessWindowFunction):
        def process(self, key: Any, context: Any, batch: Any) -> Any:
            context.output(LATE, 1)

    to_late = tumbling.side_output_late_data(LATE).process(ToLate(), output_schema="n bigint")
    assert to_late.plan.columnar is not None
    with pytest.raises(Exception, match="is the late data tag"):
        to_late.results.collect()


def test_streaming_runs_the_adapter(spark: SparkSession, tmp_path: Path) -> None:
    """A streaming query (the window operator, through the adapter, the rows in the state
    between micro-batches) gives the batch replay's results."""

    class Spread(VectorizedProcessWindowFunction):
        batch_format = "numpy"

        def process(self, key: Any, context: Any, batch: Any) -> Any:
            amount = np.sort(batch["amount"])
            return {"low": amount[:1], "high": amount[-1:], "n": [len(amount)]}

    streamed, replayed = streamed_and_replayed(
        spark,
        tmp_path,
        in_order_batches(seed=5, n_batches=3),
        lambda keyed: (
            keyed.window(TumblingEventTimeWindows(4_000))
            .side_output_late_data(LATE)
            .process(Spread(), output_schema="low bigint, high bigint, n bigint")
        ),
    )
    assert streamed == replayed
    assert any(r[5] > 1 for r in streamed["results"]), "windows of several rows"


class Returns(VectorizedProcessWindowFunction):
    """Returns ``make(batch)`` for each window (``batch_format`` as given)."""

    def __init__(self, make: Any, fmt: str = "pandas") -> None:
        self.make = make
        self.batch_format = fmt  # type: ignore[misc]

    def process(self, key: Any, context: Any, batch: Any) -> Any:
        return self.make(batch)


def _paths(function: Any, fields: str, table: pa.Table) -> tuple[Any, Any]:
    """The outputs of ``function`` over two windows of ``table`` (rows 0-2 and 3-4), on
    whole columns and through the operator's adapter (its values encoded as the replay
    encodes them): each a list of rows, or the exception raised."""
    import pandas as pd  # noqa: F401 - the functions build frames
    from pyspark.sql import types as T  # noqa: N812

    from windowing.functions.vectorized_process import VectorizedProcessAdapter
    from windowing.spark.columnar.vectorized_process import (
        KeyStates,
        encoded_columns,
        process_windows,
    )
    from windowing.windows import TimeWindow

    name, type_name = fields.split()
    kinds = {
        "double": T.DoubleType(),
        "bigint": T.LongType(),
        "timestamp": T.TimestampType(),
        "string": T.StringType(),
    }
    schema = T.StructType([T.StructField(name, kinds[type_name], True)])
    offsets, starts, ends = np.array([0, 3, 5]), np.array([0, 10]), np.array([10, 20])

    def fast() -> Any:
        done = process_windows(
            function,
            table,
            offsets,
            (starts, ends),
            ["k", "k"],
            ["k", "k"],
            KeyStates(False),
            schema,
            False,
        )
        return done.table.to_pylist()

    def operator() -> Any:
        adapter = VectorizedProcessAdapter(function, table.schema)

        class Ctx:
            def __init__(self, w: Any) -> None:
                self.w = w

            def window(self) -> Any:
                return self.w

        values: list[Any] = []
        for (lo, hi), s, e in zip([(0, 3), (3, 5)], starts, ends, strict=True):
            values += adapter.process(
                "k", Ctx(TimeWindow(s, e)), table.slice(lo, hi - lo).to_pylist()
            )
        columns = encoded_columns(values, schema)
        return pa.Table.from_arrays(columns, names=list(schema.names)).to_pylist()

    def outcome(run: Any) -> Any:
        try:
            return run()
        except Exception as exc:
            return type(exc).__name__

    return outcome(fast), outcome(operator)


OUTPUT_CASES = {
    "int into double": (lambda b: {"v": [1, 2]}, "v double"),
    "float into bigint": (lambda b: {"v": [1.0]}, "v bigint"),
    "int into timestamp": (lambda b: {"v": [10]}, "v timestamp"),
    "int into string": (lambda b: pa.table({"v": [7]}), "v string"),
    "bool into bigint": (lambda b: {"v": np.array([True])}, "v bigint"),
    "NaN in a pandas Series": (
        lambda b: {"v": __import__("pandas").Series([1.0, float("nan")])},
        "v double",
    ),
    "NA in a nullable Series": (
        lambda b: {"v": __import__("pandas").Series([1, None], dtype="Int64")},
        "v bigint",
    ),
    "no column": (lambda b: {}, "v bigint"),
    "an empty frame": (lambda b: __import__("pandas").DataFrame(), "v bigint"),
    "the first row by position": (lambda b: {"v": [int(b["x"][0])]}, "v bigint"),
    "ints with a null elsewhere": (lambda b: {"v": [str(b["y"].dtype)]}, "v string"),
}


@pytest.mark.parametrize("case", sorted(OUTPUT_CASES))
def test_outputs_on_whole_columns_are_what_the_operator_makes_of_them(case: str) -> None:
    make, fields = OUTPUT_CASES[case]
    table = pa.table({"x": [1, 2, 3, 4, 5], "y": pa.array([1, 2, 3, None, 5], pa.int64())})
    fast, operator = _paths(Returns(make), fields, table)
    assert fast == operator
