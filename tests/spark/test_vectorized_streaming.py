"""A streaming vectorized aggregate of tumbling windows or sessions on whole columns (each
window's rows held as an Arrow list, the firing windows handed to one ``add_groups`` call)
against the window operator's adapter (the batch replay in arrival order), and the items' own
rules."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from pyspark import cloudpickle as spark_cloudpickle
from pyspark.sql import SparkSession
from pyspark.sql import functions as F  # noqa: N812
from pyspark.sql.types import LongType, StructField, StructType

from tests.spark.test_spark_streaming import (
    DELAY,
    LATE,
    SCHEMA,
    SIZE,
    T0,
    make_batches,
    read,
    run,
    streamed_and_replayed,
    with_band_rows,
    write_files,
)
from windowing import (
    BoundedOutOfOrderness,
    EventTimeSessionWindows,
    HoppingEventTimeWindows,
    TumblingEventTimeWindows,
    VectorizedAggregateFunction,
    WindowedStream,
)
from windowing.evictors import CountEvictor, DeltaEvictor, TimeEvictor
from windowing.functions import Aggregate
from windowing.functions.vectorized import MAX_PENDING_ROWS, VectorizedAdapter
from windowing.job import WindowConfig
from windowing.spark import planning
from windowing.spark.columnar.hopping_accumulators import HoppingAccumulators
from windowing.spark.columnar.sessions import SessionAggregation
from windowing.spark.columnar.vectorized_items import (
    ROWS,
    EvictingItems,
    VectorizedItems,
    vectorized_rows,
)
from windowing.spark.planning import ColumnarShape, Route
from windowing.triggers import CountTrigger

pytestmark = pytest.mark.spark

spark_cloudpickle.register_pickle_by_value(sys.modules[__name__])  # type: ignore[no-untyped-call]


class CountSum(VectorizedAggregateFunction[Any, Any]):
    """The rows and the sum of ``amount`` (nulls count as 0), on numpy columns, many
    windows at once."""

    batch_format = "numpy"
    order_insensitive = True

    def create_accumulator(self) -> Any:
        return (0, 0)

    def add_batch(self, batch: Any, acc: Any) -> Any:
        x = np.nan_to_num(batch["amount"].astype(float))
        return (acc[0] + len(x), acc[1] + int(x.sum()))

    def merge(self, a: Any, b: Any) -> Any:
        return (a[0] + b[0], a[1] + b[1])

    def get_result(self, acc: Any) -> Any:
        return {"n": acc[0], "total": acc[1]}

    def add_groups(self, batch: Any, offsets: Any) -> Any:
        x = np.nan_to_num(batch["amount"].astype(float))
        return np.column_stack((np.diff(offsets), np.add.reduceat(x, offsets[:-1])))

    def get_results(self, accumulators: Any) -> Any:
        return {"n": accumulators[:, 0].astype(np.int64), "total": accumulators[:, 1]}


class Amounts(VectorizedAggregateFunction[Any, Any]):
    """The amounts in the order the function gets them (Arrow batches, ``add_batch`` only),
    ``None`` (no result) for windows of user ``c`` whose amounts sum to an odd number."""

    def create_accumulator(self) -> Any:
        return ("", ())

    def add_batch(self, batch: pa.Table, acc: Any) -> Any:
        return (batch.column("user")[0].as_py(), (*acc[1], *batch.column("amount").to_pylist()))

    def merge(self, a: Any, b: Any) -> Any:
        return (a[0] or b[0], (*a[1], *b[1]))

    def get_result(self, acc: Any) -> Any:
        if acc[0] == "c" and sum(v or 0 for v in acc[1]) % 2:
            return None
        return ",".join(map(str, acc[1]))


def _finish(function: Any, output: str, lateness: int, windows: Any = None) -> Any:
    def finish(keyed: Any) -> Any:
        assigner = TumblingEventTimeWindows(SIZE) if windows is None else windows
        stream = keyed.window(assigner).side_output_late_data(LATE)
        if lateness:
            stream = stream.allowed_lateness(lateness)
        return stream.aggregate(function, output_schema=output)

    return finish


def _source(spark: SparkSession, path: Path) -> Any:
    path.mkdir(parents=True, exist_ok=True)
    df = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).json(str(path))
    watermark = BoundedOutOfOrderness(DELAY)
    return WindowedStream.from_dataframe(df, event_time="ts", watermark=watermark).key_by("user")


def _on_columns(
    spark: SparkSession, tmp_path: Path, finish: Any, items: type, explained: str, seed: int
) -> dict[str, list[tuple[Any, ...]]]:
    """The outputs of ``finish`` streamed over :func:`make_batches` (band rows included),
    checked: planned on the columns holding ``items`` (``explained`` in its plan), equal to
    the operator's (the batch replay in arrival order), with late rows."""
    plan = finish(_source(spark, tmp_path / "plan")).plan
    assert plan.columnar is not None and isinstance(plan.columnar.items, items)
    assert explained in str(plan)
    streamed, replayed = streamed_and_replayed(
        spark, tmp_path, with_band_rows(make_batches(seed=seed)), finish
    )
    assert streamed == replayed
    assert streamed["late"], "late rows"
    return streamed


@pytest.mark.differential(Route.STREAMING, ColumnarShape.TUMBLING)
@pytest.mark.parametrize("lateness", [0, 3_000])
def test_counts_and_sums_on_columns_equal_the_operator(
    spark: SparkSession, tmp_path: Path, lateness: int
) -> None:
    """Out-of-order micro-batches, late rows, a row without event time, a null amount and
    (with lateness) windows firing again: the columns give the operator's outputs."""
    finish = _finish(CountSum(), "n bigint, total bigint", lateness)
    streamed = _on_columns(spark, tmp_path, finish, VectorizedItems, "add_groups", seed=5)
    assert any(r[3] > 1 for r in streamed["results"]), "windows of several rows"
    again = Counter((r[0], r[1]) for r in streamed["results"])
    assert (max(again.values()) > 1) == bool(lateness), "late firings with lateness only"


@pytest.mark.differential(Route.STREAMING, ColumnarShape.SESSIONS)
def test_sessions_of_an_order_insensitive_function_on_columns(
    spark: SparkSession, tmp_path: Path
) -> None:
    """Sessions merging across micro-batches (their rows one list), late rows and (with
    lateness) late firings of merged sessions: the operator's outputs."""
    finish = _finish(CountSum(), "n bigint, total bigint", 3_000, EventTimeSessionWindows(2_500))
    plan = finish(_source(spark, tmp_path / "plan")).plan
    assert plan.columnar is not None and plan.columnar.shape is ColumnarShape.SESSIONS
    streamed, replayed = streamed_and_replayed(
        spark, tmp_path, with_band_rows(make_batches(seed=6)), finish
    )
    assert streamed == replayed
    assert any(r[3] > 2 for r in streamed["results"]), "sessions of several rows"
    assert streamed["late"], "late rows"


@pytest.mark.differential(Route.STREAMING, ColumnarShape.HOPPING)
def test_hopping_windows_of_an_order_insensitive_function_on_panes_of_rows(
    spark: SparkSession, tmp_path: Path
) -> None:
    """Hopping windows kept as the operator keeps them for such a function (panes), each
    pane's rows held: late rows, rows that fire their windows on arrival (lateness: the
    operator's calls, the panes converted each way) give the operator's outputs."""
    windows = HoppingEventTimeWindows(SIZE, 2_500)
    finish = _finish(CountSum(), "n bigint, total bigint", 3_000, windows)
    streamed = _on_columns(spark, tmp_path, finish, VectorizedItems, "one item per pane", seed=9)
    assert any(r[3] > 2 for r in streamed["results"]), "windows of several panes' rows"


@pytest.mark.differential(Route.STREAMING, ColumnarShape.TUMBLING)
def test_rows_in_arrival_order_and_none_results_as_the_operator(
    spark: SparkSession, tmp_path: Path
) -> None:
    """An order-sensitive function sees a window's rows in the operator's order across
    micro-batches (the held rows first, then each batch's), and a ``None`` result leaves the
    call to the operator, which emits nothing for that window."""
    batches = make_batches(seed=8, n_batches=6)
    streamed, replayed = streamed_and_replayed(
        spark, tmp_path, batches, _finish(Amounts(), "amounts string", 2_000)
    )
    assert streamed == replayed
    assert any("," in r[3] for r in streamed["results"])
    fired = {(r[0], r[1]) for r in streamed["results"]}
    totals: Counter[tuple[str, int]] = Counter()
    for rows in batches:
        for r in rows:
            if r["user"] == "c" and r["ts"] is not None:
                totals["c", r["ts"] - (r["ts"] - T0) % SIZE] += r["amount"]
    assert any(total % 2 and key not in fired for key, total in totals.items())


@pytest.mark.differential(Route.STREAMING, ColumnarShape.TUMBLING)
@pytest.mark.parametrize("before", ["columns", "operator"])
def test_restart_from_the_checkpoint_with_held_rows(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, before: str
) -> None:
    """The held rows (the columnar state) survive a restart, and a checkpoint of the
    operator's state (as earlier versions ran these jobs) goes on with the columns: the
    outputs equal those of one uninterrupted query."""
    batches = make_batches(11)
    finish = _finish(CountSum(), "n bigint, total bigint", 0)
    whole, parts = tmp_path / "whole", tmp_path / "parts"
    write_files(whole / "src", batches)
    run(spark, whole / "src", whole / "out", finish(_source(spark, whole / "src")))
    write_files(parts / "src", batches[:2])
    with monkeypatch.context() as patch:
        if before == "operator":
            patch.setattr(planning, "vectorized_rows", lambda *args: None)
        earlier = finish(_source(spark, parts / "src"))
        assert (earlier.plan.columnar is None) == (before == "operator")
        run(spark, parts / "src", parts / "out", earlier)
    first = read(spark, parts / "out" / "results")
    write_files(parts / "src", batches[2:], first=2)
    run(spark, parts / "src", parts / "out", finish(_source(spark, parts / "src")))
    expected = read(spark, whole / "out" / "results")
    assert 0 < len(first) < len(expected)
    assert Counter(read(spark, parts / "out" / "results")) == Counter(expected)
    assert Counter(read(spark, parts / "out" / "late")) == Counter(
        read(spark, whole / "out" / "late")
    )


def _rise(old: Any, new: Any) -> float:
    return float((new.amount or 0) - (old.amount or 0))


def _rise_columns(old: pa.Table, new: pa.Table) -> Any:
    return pc.subtract(pc.fill_null(new["amount"], 0), pc.fill_null(old["amount"], 0))


EVICTORS = {
    "count": CountEvictor(2),
    "count-after": CountEvictor(2, do_evict_after=True),
    "time": TimeEvictor(1_500),
    "delta": DeltaEvictor(4, _rise, vectorized_delta=_rise_columns),
}


@pytest.mark.differential(Route.STREAMING, ColumnarShape.TUMBLING)
@pytest.mark.parametrize(
    ("evictor", "function"),
    [("count", "agg"), ("count-after", "vectorized"), ("time", "vectorized"), ("delta", "agg")],
)
def test_evictors_of_tumbling_windows_on_held_rows(
    spark: SparkSession, tmp_path: Path, evictor: str, function: str
) -> None:
    """``.agg`` columns and a vectorized aggregate over the rows an evictor's mask keeps of
    a window's rows in arrival order (late rows, a row without event time, a null amount):
    the evicting operator's outputs."""

    def finish(keyed: Any) -> Any:
        stream = (
            keyed.window(TumblingEventTimeWindows(SIZE))
            .evictor(EVICTORS[evictor])
            .side_output_late_data(LATE)
        )
        if function == "agg":
            return stream.agg(F.count("*").alias("n"), F.sum("amount").alias("total"))
        return stream.aggregate(CountSum(), output_schema="n bigint, total bigint")

    explained = "keeps (its mask on columns)"
    streamed = _on_columns(spark, tmp_path, finish, EvictingItems, explained, seed=4)
    if evictor == "count":
        assert max(r[3] for r in streamed["results"]) == 2, "at most two rows kept"


# ---------------------------------------------------------------------------- the items
def _items(function: Any = None) -> VectorizedItems:
    out = StructType([StructField("n", LongType()), StructField("total", LongType())])
    return VectorizedItems(function or CountSum(), ("user",), out)


def _rows(users: list[str], amounts: list[int]) -> pa.Table:
    return pa.table({"user": users, "amount": pa.array(amounts, pa.int64())})


def test_windows_items_concatenate_in_order_per_key_and_window() -> None:
    items = _items()
    held = items.items_of(_rows(["a", "b"], [1, 2]))
    new = items.items_of(_rows(["b", "a", "a"], [3, 4, 5]))
    group = np.array([0, 0, 0, 10, 0])  # a's 5 is another window
    codes = np.array([0, 1, 1, 0, 0])
    starts, carriers, reduced = items.reduce(group, pa.concat_tables([held, new]), codes) or (
        None,
        None,
        None,
    )
    assert reduced is not None and starts is not None and carriers is not None
    assert starts.tolist() == [0, 10, 0] and carriers.tolist() == [0, 3, 1]
    assert reduced.column("user").to_pylist() == ["a", "a", "b"]
    lists = reduced.column(ROWS).to_pylist()
    assert [[r["amount"] for r in rows] for rows in lists] == [[1, 5], [4], [2, 3]]
    results = items.results_of(reduced)
    assert results is not None
    assert results.to_pydict() == {"user": ["a", "a", "b"], "n": [2, 1, 2], "total": [6, 4, 5]}
    accumulators = items.records_of(reduced)
    assert [(acc, [r.amount for r in rows]) for acc, rows in accumulators] == [
        ((0, 0), [1, 5]),
        ((0, 0), [4]),
        ((0, 0), [2, 3]),
    ]
    assert accumulators[0][1][0].user == "a"


def test_a_hopping_windows_panes_give_their_rows_one_after_the_other() -> None:
    items = _items()
    panes = items.reduce(
        np.array([0, 10, 10, 20, 0]),
        items.items_of(_rows(["a", "a", "a", "a", "b"], [1, 2, 3, 4, 5])),
        np.array([0, 0, 0, 0, 1]),
    )
    assert panes is not None  # a's panes 0: [1], 10: [2, 3], 20: [4]; b's pane 0: [5]
    windows = items.reduce_ranges(panes[2], np.array([0, 1, 3]), np.array([2, 3, 4]))
    assert windows is not None
    lists = windows.column(ROWS).to_pylist()
    assert [[r["amount"] for r in rows] for rows in lists] == [[1, 2, 3], [2, 3, 4], [5]]
    assert windows.column("user").to_pylist() == ["a", "a", "b"]


def test_a_window_beyond_the_adapters_rows_or_a_none_result_goes_to_the_operator() -> None:
    items = _items()
    n = MAX_PENDING_ROWS + 1
    many = items.items_of(_rows(["a"] * n, [1] * n))
    assert items.reduce(np.zeros(n, np.int64), many, None) is None
    fits = items.reduce(np.zeros(n - 1, np.int64), many.slice(0, n - 1), None)
    assert fits is not None and fits[2].num_rows == 1

    class NoResult(CountSum):
        def get_results(self, accumulators: Any) -> Any:
            return [None] * len(accumulators)

    none = _items(NoResult())
    one = none.reduce(np.zeros(1, np.int64), none.items_of(_rows(["a"], [1])), None)
    assert one is not None and none.results_of(one[2]) is None


def test_only_tumbling_windows_of_the_default_trigger_take_the_rows_plan() -> None:
    spec = Aggregate(VectorizedAdapter(CountSum()))
    tumbling = TumblingEventTimeWindows(SIZE)
    plan = vectorized_rows(WindowConfig(tumbling, None, None, 0), spec, ("user",))
    assert plan is not None and isinstance(plan.items, VectorizedItems)
    hopping = WindowConfig(HoppingEventTimeWindows(SIZE, 1_000), None, None, 0)
    assert isinstance(vectorized_rows(hopping, spec, ()), HoppingAccumulators)
    sessions = WindowConfig(EventTimeSessionWindows(1_000), None, None, 0)
    assert isinstance(vectorized_rows(sessions, spec, ()), SessionAggregation)
    in_order = Aggregate(VectorizedAdapter(Amounts()))  # its rows' order matters
    assert vectorized_rows(sessions, in_order, ()) is None
    assert vectorized_rows(hopping, in_order, ()) is None
    counted = WindowConfig(tumbling, CountTrigger(3), None, 0)
    assert vectorized_rows(counted, spec, ()) is None
    evicting = vectorized_rows(WindowConfig(tumbling, None, CountEvictor(2), 0), spec, ())
    assert evicting is not None and isinstance(evicting.items, EvictingItems)
    late_firings = WindowConfig(tumbling, None, CountEvictor(2), 1_000)  # rows left to fire
    assert vectorized_rows(late_firings, spec, ()) is None

    class PerRow(CountEvictor):
        def evict(self, elements: Any) -> Any:
            return super().evict(elements)

    assert vectorized_rows(WindowConfig(tumbling, None, PerRow(2), 0), spec, ()) is None
    with pytest.raises(RuntimeError, match="with_output"):
        VectorizedItems(CountSum(), ()).results_of(pa.table({ROWS: pa.array([[]])}))
