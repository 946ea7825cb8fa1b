"""Side outputs of ``context.output(tag, value)`` in the batch replay: same values as the
in-memory harness, carried by the one persisted output (the replay runs once), and an
undeclared tag fails the task with an error naming it."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import Any

import pytest
from pyspark import cloudpickle as spark_cloudpickle
from pyspark.errors import PythonException
from pyspark.sql import DataFrame, Row, SparkSession

from windowing import OutputTag
from windowing.assigners import TumblingEventTimeWindows
from windowing.functions import AggregateFunction, ProcessWindowFunction
from windowing.stream import BoundedOutOfOrderness, WindowedStream
from windowing.testing import WindowOperatorHarness
from windowing.time import MAX_TIMESTAMP

pytestmark = pytest.mark.spark
spark_cloudpickle.register_pickle_by_value(sys.modules[__name__])  # type: ignore[no-untyped-call]

LATE = OutputTag("late")
BIG = OutputTag("big")
BIG_SCHEMA = "n bigint, total bigint"
ROWS = [
    # user, amount, ts, seq
    ("a", 5, 100, 0),
    ("a", 7, 300, 1),
    ("b", 1, 200, 2),
    ("a", 2, 1_200, 3),
    ("b", 9, 1_500, 4),
    ("b", 8, 1_700, 5),
    ("a", 4, 400, 6),  # late: watermark 1_700 - 100 - 1 >= 999
]


class SplitBig(ProcessWindowFunction[Row, int, str, Any]):
    """Results: the element count; side output ``BIG``: windows whose total is >= 10."""

    def process(self, key: str, context: Any, elements: Iterable[Row]) -> Iterable[int]:
        items = list(elements)
        total = sum(r.amount for r in items)
        if total >= 10:
            context.output(BIG, Row(n=len(items), total=total))
        yield len(items)


class Total(AggregateFunction[Row, int, int]):
    def create_accumulator(self) -> int:
        return 0

    def add(self, value: Row, acc: int) -> int:
        return acc + int(value.amount)

    def get_result(self, acc: int) -> int:
        return acc

    def merge(self, a: int, b: int) -> int:
        return a + b


class Flag(ProcessWindowFunction[int, int, str, Any]):
    """A window function after an aggregate, writing to an undeclared tag."""

    def process(self, key: str, context: Any, elements: Iterable[int]) -> Iterable[int]:
        for total in elements:
            context.output(OutputTag("undeclared"), total)
            yield total


@pytest.fixture(scope="module")
def events(spark: SparkSession) -> DataFrame:
    return spark.createDataFrame(ROWS, "user string, amount bigint, ts bigint, seq bigint")


def windowed(df: DataFrame) -> Any:
    return (
        WindowedStream.from_dataframe(
            df, event_time="ts", watermark=BoundedOutOfOrderness(100), arrival_order="seq"
        )
        .key_by("user")
        .window(TumblingEventTimeWindows(1_000))
        .side_output_late_data(LATE)
    )


def test_side_output_equals_harness_and_the_replay_runs_once(
    spark: SparkSession, events: DataFrame
) -> None:
    evaluations = spark.sparkContext.accumulator(0)

    class Counted(SplitBig):
        def process(self, key: str, context: Any, elements: Iterable[Row]) -> Iterable[int]:
            evaluations.add(1)
            return super().process(key, context, elements)

    result = windowed(events).process(
        Counted(), output_schema="n bigint", side_output_schemas={BIG: BIG_SCHEMA}
    )
    with result:
        side = result.get_side_output(BIG)
        assert side.columns == ["user", "window_start", "window_end", "n", "total", "max_timestamp"]
        results = sorted(tuple(r) for r in result.results.collect())
        big = sorted(tuple(r) for r in side.collect())
        late = [r.seq for r in result.get_side_output(LATE).collect()]
        metrics = result.collect_metrics()

    h = WindowOperatorHarness(
        TumblingEventTimeWindows(1_000), SplitBig(), late_output_tag=LATE, allowed_lateness=0
    )
    max_ts = None
    for user, amount, ts, seq in ROWS:
        if max_ts is not None:
            h.process_watermark(max_ts - 100 - 1)
        h.process_element(Row(user=user, amount=amount, ts=ts, seq=seq), ts, key=user)
        max_ts = ts if max_ts is None else max(max_ts, ts)
    h.process_watermark(MAX_TIMESTAMP)

    def flat(records: list[Any]) -> list[tuple[Any, ...]]:
        return sorted(
            (r.key, r.window.start, r.window.end, *tuple(r.value), r.timestamp)
            if isinstance(r.value, Row)
            else (r.key, r.window.start, r.window.end, r.value, r.timestamp)
            for r in records
        )

    assert results == flat(h.extract_output())
    assert big == flat(h.extract_side_output(BIG))
    assert big == [("a", 0, 1_000, 2, 12, 999), ("b", 1_000, 2_000, 2, 17, 1_999)]
    assert late == [6]
    assert metrics.num_windows_fired == len(results) == 4
    # Results, side output, late rows and metrics came from one persisted replay.
    assert evaluations.value == metrics.num_windows_fired


def test_an_undeclared_tag_fails_the_task_naming_it(events: DataFrame) -> None:
    result = windowed(events).aggregate(Total(), Flag(), output_schema="total bigint")
    with pytest.raises(PythonException) as info, result:
        result.results.collect()
    text = str(info.value)
    assert "side output OutputTag(name='undeclared') has no schema" in text
    assert "side_output_schemas=" in text
