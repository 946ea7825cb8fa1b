"""Output shapes: timestamps, several key columns, window_all, global windows, the other
function kinds, metrics, and errors that name the key and window."""

from __future__ import annotations

import datetime as dt
import sys
from collections.abc import Iterable
from decimal import Decimal
from typing import Any, NamedTuple

import pytest
from pyspark import cloudpickle as spark_cloudpickle
from pyspark.errors import PythonException
from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as F  # noqa: N812

from tests.spark.builtin_paths import without_native_builtins
from windowing import OutputTag
from windowing.assigners import GlobalWindows, TumblingEventTimeWindows
from windowing.errors import NullResultWarning
from windowing.functions import AggregateFunction, ProcessWindowFunction, WindowFunction
from windowing.functions.aggregations import AggregationType, FieldAggregation
from windowing.stream import BoundedOutOfOrderness, WindowedStream
from windowing.triggers import CountTrigger, PurgingTrigger

pytestmark = pytest.mark.spark
spark_cloudpickle.register_pickle_by_value(sys.modules[__name__])  # type: ignore[no-untyped-call]

LATE = OutputTag("late")
UTC = dt.UTC


def at(seconds: float) -> dt.datetime:
    return dt.datetime(2024, 5, 1, tzinfo=UTC) + dt.timedelta(seconds=seconds)


@pytest.fixture(scope="module")
def clicks(spark: SparkSession) -> DataFrame:
    rows = [
        # user, page, t (s), arrival
        ("ann", "home", 1, 1),
        ("ann", "home", 3, 2),
        ("bob", "home", 2, 3),
        ("ann", "cart", 4, 4),
        ("ann", "home", 12, 5),
        ("bob", "home", 15, 6),
        ("ann", "home", 5, 7),  # late: watermark 15 - 2 - 1 = 12 >= window end 9.999
        ("bob", "cart", None, 8),  # no event time
        ("ann", "home", 13, None),  # no arrival order
    ]
    return spark.createDataFrame(
        [(u, p, None if s is None else at(s), a) for u, p, s, a in rows],
        "user string, page string, at timestamp, arrival bigint",
    )


def click_stream(df: DataFrame) -> Any:
    return WindowedStream.from_dataframe(
        df, event_time="at", watermark=BoundedOutOfOrderness("2 seconds"), arrival_order="arrival"
    )


class CountRows(AggregateFunction[Row, int, int]):
    def create_accumulator(self) -> int:
        return 0

    def add(self, value: Row, acc: int) -> int:
        return acc + 1

    def get_result(self, acc: int) -> int:
        return acc

    def merge(self, a: int, b: int) -> int:
        return a + b


class Views(NamedTuple):
    n: int
    pages: str


class ViewsPerWindow(ProcessWindowFunction[Row, Views, Any, Any]):
    def process(self, key: Any, context: Any, elements: Iterable[Row]) -> Iterable[Views]:
        items = list(elements)
        yield Views(len(items), ",".join(sorted(r.page for r in items)))


def test_timestamps_multi_column_keys_and_late_rows(clicks: DataFrame) -> None:
    result = (
        click_stream(clicks)
        .key_by("user", "page")
        .window(TumblingEventTimeWindows("10 seconds"))
        .side_output_late_data(LATE)
        .process(ViewsPerWindow())  # schema from the NamedTuple annotation
    )
    with result:
        schema = {f.name: f.dataType.simpleString() for f in result.results.schema.fields}
        assert schema == {
            "user": "string",
            "page": "string",
            "window_start": "timestamp",
            "window_end": "timestamp",
            "n": "bigint",
            "pages": "string",
            "max_timestamp": "timestamp",
        }
        got = {
            (r.user, r.page, r.ws, r.we, r.n, r.mt)
            for r in result.results.select(
                "user",
                "page",
                F.unix_millis("window_start").alias("ws"),
                F.unix_millis("window_end").alias("we"),
                "n",
                F.unix_millis("max_timestamp").alias("mt"),
            ).collect()
        }
        t0 = int(at(0).timestamp() * 1000)
        assert got == {
            ("ann", "home", t0, t0 + 10_000, 2, t0 + 9_999),
            ("ann", "cart", t0, t0 + 10_000, 1, t0 + 9_999),
            ("bob", "home", t0, t0 + 10_000, 1, t0 + 9_999),
            ("ann", "home", t0 + 10_000, t0 + 20_000, 1, t0 + 19_999),
            ("bob", "home", t0 + 10_000, t0 + 20_000, 1, t0 + 19_999),
        }
        late = result.get_side_output(LATE)
        assert late.schema.fields[:4] == clicks.schema.fields
        reasons = {
            (r.user, r.arrival, r.late_reason, r.wm)
            for r in late.select(
                "user", "arrival", "late_reason", F.unix_millis("late_watermark").alias("wm")
            ).collect()
        }
        assert reasons == {
            ("ann", 7, "late", t0 + 12_999),
            ("bob", 8, "null_event_time", t0 + 12_999),
            ("ann", None, "null_arrival_order", None),
        }
        m = result.collect_metrics()
        assert (m.num_input_rows, m.num_elements, m.num_results) == (9, 7, 5)
        assert (m.num_null_event_time, m.num_null_arrival_order) == (1, 1)
        assert m.num_late_records_side_output == 1
        assert m.num_keys == 4  # (bob, cart) only has a row without event time


def test_window_all_and_results_feed_another_stream(clicks: DataFrame) -> None:
    per_user = (
        click_stream(clicks)
        .key_by("user")
        .window(TumblingEventTimeWindows("10 seconds"))
        .aggregate(CountRows(), output_schema="views bigint")
    )
    with per_user:
        # a reduce returns input rows plus the window columns: the first window's are renamed
        # (or dropped) first; its result time is the event time of the second
        previous = per_user.results.withColumnRenamed("max_timestamp", "at").drop(
            "window_start", "window_end"
        )
        totals = (
            WindowedStream.from_dataframe(previous, event_time="at")
            .window_all(TumblingEventTimeWindows("20 seconds"))
            .reduce(lambda a, b: Row(**{**a.asDict(), "views": a.views + b.views}))
        )
        with totals:
            assert totals.results.columns == [
                "window_start",
                "window_end",
                "user",
                "views",
                "at",
                "max_timestamp",
            ]
            rows = totals.results.select(
                "views",
                F.unix_millis("window_start").alias("ws"),
                F.unix_millis("max_timestamp").alias("mt"),
            ).collect()
    t0 = int(at(0).timestamp() * 1000)
    assert [tuple(r) for r in rows] == [(6, t0, t0 + 19_999)]


class Labels(WindowFunction[Row, dict[str, Any], Any, Any]):
    def apply(self, key: Any, window: Any, elements: Iterable[Row]) -> Iterable[dict[str, Any]]:
        for e in elements:
            yield {"label": f"{key}:{e.page}", "start": None if window is None else 0}


def test_global_windows_fold_apply_and_reduce_with_window_function(
    spark: SparkSession, clicks: DataFrame
) -> None:
    stream = (
        WindowedStream.from_dataframe(clicks, event_time="at")
        .key_by("user")
        .window(GlobalWindows())
        .trigger(PurgingTrigger(CountTrigger(2)))
    )
    folded = stream.fold(
        "", lambda acc, r: acc + r.page[0], output_schema="letters string"
    )  # GlobalWindow: null window bounds; max_timestamp (the end of time) clamped
    applied = stream.apply(Labels(), output_schema="label string, start int")
    with_wf = stream.reduce(lambda a, b: b, window_function=LastPage(), output_schema="page string")
    with folded, applied, with_wf:
        f = folded.results.collect()
        assert sorted(r.letters for r in f) == ["ch", "hh", "hh", "hh"]
        last = "9999-12-31T23:59:59.999999"  # Spark's last instant
        bounds = {(r.window_start, r.window_end, r.max_timestamp.isoformat()) for r in f}
        assert bounds == {(None, None, last)}
        assert folded.collect_metrics().num_windows_left_at_end == 1  # bob's cart click
        assert len(applied.results.collect()) == 8
        assert [r.page for r in with_wf.results.collect()] == ["home"] * 4


class LastPage(ProcessWindowFunction[Row, str, Any, Any]):
    def process(self, key: Any, context: Any, elements: Iterable[Row]) -> Iterable[str]:
        for e in elements:
            yield e.page


class Boom(ProcessWindowFunction[Row, int, Any, Any]):
    def process(self, key: Any, context: Any, elements: Iterable[Row]) -> Iterable[int]:
        if key == "bob":
            msg = "boom"
            raise RuntimeError(msg)
        yield 1


def test_function_errors_name_the_key_and_window(clicks: DataFrame) -> None:
    result = (
        click_stream(clicks)
        .key_by("user")
        .window(TumblingEventTimeWindows("10 seconds"))
        .process(Boom())
    )
    with pytest.raises(PythonException) as info, result:
        result.results.collect()
    text = str(info.value)
    assert "RuntimeError: boom" in text
    assert "while evaluating window TimeWindow(start=1714521600000, end=1714521610000)" in text
    assert "of key 'bob'" in text


def test_reduce_errors_name_the_key_and_element(clicks: DataFrame) -> None:
    def fail_for_cart(a: Row, b: Row) -> Row:
        if b.page == "cart":
            msg = "no carts"
            raise ValueError(msg)
        return b

    result = (
        click_stream(clicks)
        .key_by("user")
        .window(TumblingEventTimeWindows("10 seconds"))
        .reduce(fail_for_cart)
    )
    with pytest.raises(PythonException) as info, result:
        result.results.collect()
    text = str(info.value)
    assert "ValueError: no carts" in text
    assert "of key 'ann' in the Spark batch replay" in text
    assert "page='cart'" not in text  # row values only with show_values=True
    assert "row values hidden" in text


def test_wrong_output_types_are_reported_not_truncated(clicks: DataFrame) -> None:
    result = (
        click_stream(clicks)
        .key_by("user")
        .window(TumblingEventTimeWindows("10 seconds"))
        .aggregate(CountRows(), output_schema="views bigint")
    )
    halves = (
        click_stream(clicks)
        .key_by("user")
        .window(TumblingEventTimeWindows("10 seconds"))
        .fold(0.5, lambda acc, r: acc + 1, output_schema="views bigint")
    )
    with result, halves:
        assert result.results.count() == 4
        with pytest.raises(PythonException) as info:
            halves.results.collect()
    assert "field 'views': expected an int for bigint, got float" in str(info.value)


def test_nested_types_round_trip_and_null_keys(spark: SparkSession) -> None:
    schema = (
        "k string, ts bigint, seq bigint, price decimal(10,2), day date, "
        "tags array<string>, attrs map<string,int>, loc struct<lat:double,lon:double>"
    )
    rows = [
        (
            k,
            ts,
            seq,
            Decimal(f"{seq}.25"),
            dt.date(2024, 1, 1 + seq),
            [f"t{seq}"],
            {"n": seq},
            (1.0 * seq, 2.0),
        )
        for seq, (k, ts) in enumerate(
            [("x", 100), (None, 150), ("x", 900), (None, 1_200), ("x", 5_000), ("x", 50)]
        )
    ]
    df = spark.createDataFrame(rows, schema)

    def newest(a: Row, b: Row) -> Row:
        assert isinstance(a.loc, Row) and isinstance(a.attrs, dict) and isinstance(a.tags, list)
        return b if b.seq > a.seq else a

    result = (
        WindowedStream.from_dataframe(df, event_time="ts", arrival_order="seq")
        .key_by("k")
        .window(TumblingEventTimeWindows(1_000))
        .side_output_late_data(LATE)
        .reduce(newest)
    )
    with result:
        got = {
            (r.k, r.window_start, r.seq, r.price, r.attrs["n"], r.loc.lat, tuple(r.tags))
            for r in result.results.collect()
        }
        late = result.get_side_output(LATE).collect()
    assert got == {
        ("x", 0, 2, Decimal("2.25"), 2, 2.0, ("t2",)),
        (None, 0, 1, Decimal("1.25"), 1, 1.0, ("t1",)),
        (None, 1_000, 3, Decimal("3.25"), 3, 3.0, ("t3",)),
        ("x", 5_000, 4, Decimal("4.25"), 4, 4.0, ("t4",)),
    }
    assert [tuple(r)[:-2] for r in late] == [tuple(df.where("seq = 5").first())]  # type: ignore[arg-type]


def test_empty_input(spark: SparkSession) -> None:
    df = spark.createDataFrame([], "k string, ts bigint")
    result = (
        WindowedStream.from_dataframe(df, event_time="ts")
        .window_all(TumblingEventTimeWindows(1_000))
        .side_output_late_data(LATE)
        .reduce(lambda a, b: a)
    )
    with result:
        assert result.results.count() == 0
        assert result.get_side_output(LATE).count() == 0
        assert result.collect_metrics().num_input_rows == 0


def test_count_window_on_the_builder_matches_the_harness(spark: Any) -> None:
    from windowing.count_windows import count_window
    from windowing.stream import DataStream
    from windowing.testing import WindowOperatorHarness

    rows = [(i, "k" if i % 3 else "j", i * 10) for i in range(20)]
    df = spark.createDataFrame(rows, "v bigint, key string, ts bigint")
    result = (
        DataStream.from_dataframe(df, event_time="ts", arrival_order="v")
        .key_by("key")
        .count_window(4, slide=2)
        .reduce(lambda a, b: a.__class__(v=a.v + b.v, key=a.key, ts=max(a.ts, b.ts)))
    )
    with result:
        got = sorted((r["key"], r["v"]) for r in result.results.collect())
    spec = count_window(4, slide=2)
    h = WindowOperatorHarness(spec.assigner, lambda a, b: a + b, **spec.options())
    for v, key, ts in rows:
        h.process_element(v, ts, key=key)
    assert got == sorted((r.key, r.value) for r in h.extract_output())
    assert len(got) > 0


def test_without_a_late_tag_late_rows_are_counted_and_carry_no_columns(clicks: DataFrame) -> None:
    from windowing.functions import Aggregate
    from windowing.spark.batch.replay_plan import build_layout

    windowed = click_stream(clicks).key_by("user").window(TumblingEventTimeWindows("10 seconds"))
    counted = windowed.aggregate(CountRows())
    assert not any(c.startswith("__pw_l") for c in counted.output.columns)
    metrics = counted.collect_metrics()
    # the late click, the click without event time and the one without arrival order
    assert metrics.num_late_records_dropped == 1
    assert (metrics.num_null_event_time, metrics.num_null_arrival_order) == (1, 1)
    layout = build_layout(windowed, Aggregate(CountRows()), None, None)
    late = layout.select_late(counted.output)
    assert late.columns == [*clicks.columns, "late_watermark", "late_reason"]
    assert late.count() == 0


class CartViews(AggregateFunction[Row, int, Any]):
    """Views of the cart page; ``None`` (no result, as in Flink) for a window without any."""

    def create_accumulator(self) -> int:
        return 0

    def add(self, value: Row, acc: int) -> int:
        return acc + (value.page == "cart")

    def get_result(self, acc: int) -> Any:
        return acc or None

    def merge(self, a: int, b: int) -> int:
        return a + b


def test_none_results_emit_no_row_and_are_counted(clicks: DataFrame) -> None:
    result = (
        click_stream(clicks)
        .key_by("user")
        .window(TumblingEventTimeWindows("10 seconds"))
        .aggregate(CartViews(), output_schema="carts bigint")
    )
    with result, pytest.warns(NullResultWarning, match=r"CartViews\.get_result returned None"):
        rows = result.results.select("user", "carts").collect()
        m = result.collect_metrics()
    assert sorted(tuple(r) for r in rows) == [("ann", 1)]
    # windows without a cart view: bob [0, 10), ann [10, 20), bob [10, 20)
    assert m.num_null_results == 3
    assert m.num_windows_fired == m.num_results == 1


def test_explain_names_runtime_columnar_path_and_strategy(
    clicks: DataFrame, spark: SparkSession, tmp_path: Any, capsys: Any
) -> None:
    from windowing.plan import Strategy
    from windowing.results import WindowingResult
    from windowing.spark.planning import ColumnarShape, Route

    windowed = click_stream(clicks).key_by("user").window(TumblingEventTimeWindows(10_000))
    result = windowed.aggregate(CountRows())
    assert isinstance(result, WindowingResult)
    assert result.plan.operator.strategy is Strategy.ALIGNED
    assert result.plan.route is Route.BATCH_REPLAY and "'arrival'" in result.plan.reason
    assert result.plan.columnar is None  # arrival order: the operator replays every row
    result.explain()
    printed = capsys.readouterr().out
    assert "strategy: aligned" in printed and "route: batch-replay" in printed
    # No arrival order and a built-in sum: whole Arrow columns.
    in_time_order = WindowedStream.from_dataframe(clicks.withColumn("n", F.lit(1)), event_time="at")
    summed = in_time_order.key_by("user").window(TumblingEventTimeWindows(10_000))
    native = summed.sum("n").plan
    assert native.route is Route.NATIVE_TUMBLING and native.columnar is None
    assert "the window's first row in replay order (first by event time, content hash)" in (
        native.reason
    )
    assert summed.plan(FieldAggregation(AggregationType.SUM, "n")) == native
    with without_native_builtins():  # a small input: whole Arrow columns
        columnar = summed.sum("n").plan
    assert columnar.columnar_shape is ColumnarShape.TUMBLING
    assert columnar.columnar is not None and columnar.columnar.field == "n"
    assert summed.plan().operator.strategy is Strategy.ALIGNED  # a plain reduce
    summed.explain(CountRows())  # an AggregateFunction: folded per record batch
    assert "columnar: AggregateFunction CountRows on tumbling" in capsys.readouterr().out
    # Streaming: the same protocol.
    clicks.write.parquet(str(tmp_path / "src"))
    streaming_df = spark.readStream.schema(clicks.schema).parquet(str(tmp_path / "src"))
    live = (
        WindowedStream.from_dataframe(streaming_df, event_time="at")
        .key_by("user")
        .window(TumblingEventTimeWindows(10_000))
        .process(ViewsPerWindow())
    )
    assert isinstance(live, WindowingResult)
    assert live.plan.route is Route.STREAMING and "over 128 key groups" in live.plan.reason
    assert live.plan.operator.strategy is Strategy.ALIGNED
    assert not live.plan.operator.direct_result


def test_explain_states_one_order_and_the_watermark_it_has(clicks: DataFrame) -> None:
    """``explain()`` states the one order in which a key's rows reach the operator (the
    replay's, not "arrival order" for rows replayed in event-time order), and a job with a
    watermark strategy but no arrival order is told why it has no effect (never "without a
    watermark")."""
    add = lambda a, b: a  # noqa: E731
    ten = TumblingEventTimeWindows(10_000)
    delay = BoundedOutOfOrderness("2 seconds")

    def plan_text(**kw: Any) -> str:
        source = WindowedStream.from_dataframe(clicks, event_time="at", **kw)
        return str(source.key_by("user").window(ten).reduce(add).plan)

    in_time_order = plan_text(watermark=delay)
    assert "element order: event-time order" in in_time_order
    assert "replayed in event-time order" in in_time_order
    assert "element order: arrival order" not in in_time_order
    assert "replayed in arrival order" not in in_time_order
    assert "BoundedOutOfOrderness(delay=2000)) has no order to follow" in in_time_order
    assert "without a watermark" not in in_time_order
    in_arrival_order = plan_text(watermark=delay, arrival_order="arrival")
    assert "element order: arrival order ('arrival')" in in_arrival_order
    assert "event-time order" not in in_arrival_order
    assert "one pass" not in in_arrival_order
    timed = WindowedStream.from_dataframe(
        clicks.withColumn("pt", F.col("arrival")), event_time="at", processing_time="pt"
    )
    by_processing_time = str(timed.key_by("user").window(ten).reduce(add).plan)
    assert "element order: processing-time order ('pt')" in by_processing_time
    assert "rows replayed in processing-time order ('pt')" in by_processing_time
    assert "event-time order" not in by_processing_time


MIN_LONG, MAX_LONG = -(2**63), 2**63 - 1


@pytest.mark.parametrize("function", ["agg", "reduce"], ids=["native", "operator"])
def test_window_bounds_beyond_the_column_type_are_clamped_not_null(
    spark: SparkSession, function: str
) -> None:
    """A window reaching past the ends of ``long`` (bigint event times) or of Spark's
    timestamps (years 1 to 9999) has its bounds clamped to the column type's range, never
    null: in the native plans and in the operator's replay."""

    def results(df: DataFrame, assigner: Any) -> list[tuple[Any, ...]]:
        stream = WindowedStream.from_dataframe(df, event_time="ts").key_by("k").window(assigner)
        out = (
            stream.agg(F.sum("v").alias("v"))
            if function == "agg"
            else stream.reduce(lambda a, b: Row(k=a.k, ts=a.ts, v=a.v + b.v))
        )
        times = [F.col(c).cast("string") for c in ("window_start", "window_end", "max_timestamp")]
        rows = out.results.select(*times, "v").collect()  # text: the session's time zone, UTC
        return sorted((tuple(r) for r in rows), key=repr)

    longs = spark.createDataFrame(
        [("a", MIN_LONG + 5, 1), ("a", MAX_LONG - 5, 2), ("b", 0, 3)], "k string, ts bigint, v long"
    )
    assert results(longs, TumblingEventTimeWindows(10)) == sorted(
        [
            (str(MIN_LONG), str(MIN_LONG + 8), str(MIN_LONG + 7), 1),  # starts below -2**63
            (str(MAX_LONG - 7), str(MAX_LONG), str(MAX_LONG), 2),  # ends past 2**63 - 1
            ("0", "10", "9", 3),
        ],
        key=repr,
    )
    times = spark.createDataFrame(
        [("a", "0001-01-01 00:00:00.001", 1), ("a", "9999-12-31 23:59:59.999", 2)],
        "k string, ts string, v long",
    ).withColumn("ts", F.to_timestamp("ts"))
    day = TumblingEventTimeWindows("1 day", offset="12 hours")
    last = "9999-12-31 23:59:59.999999"  # Spark's last instant
    assert results(times, day) == sorted(
        [
            ("0001-01-01 00:00:00", "0001-01-01 12:00:00", "0001-01-01 11:59:59.999", 1),
            ("9999-12-31 12:00:00", last, last, 2),
        ],
        key=repr,
    )
