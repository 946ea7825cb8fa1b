"""A window whose incremental result is ``None`` on Spark (``docs/failures.md``): nothing
emitted (Flink's rule), counted in ``num_null_results``, warned once per job on the driver
with the key and window of the first one (the executors report it through an accumulator),
and with ``on_error("dead_letter")`` a dead letter (``error_phase = 'null_result'``) per
window, in batch and in streaming."""

from __future__ import annotations

import json
import os
import pickle
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest
from pyspark import cloudpickle as spark_cloudpickle
from pyspark.sql import SparkSession

from windowing.assigners import TumblingEventTimeWindows
from windowing.errors import NullResultWarning
from windowing.functions import AggregateFunction
from windowing.spark.columns.null_results import (
    NullResultNotice,
    NullResultParam,
    NullResultReport,
)
from windowing.spark.streaming.query import write_results_and_late
from windowing.stream import BoundedOutOfOrderness, WindowedStream

pytestmark = pytest.mark.spark

spark_cloudpickle.register_pickle_by_value(sys.modules[__name__])  # type: ignore[no-untyped-call]

SCHEMA = "user string, amount bigint, ts bigint"
#: Key a: [0, 10 s) sums to 3 (None), [10 s, 20 s) to 4; key b: [0, 10 s) sums to 5 (None),
#: [20 s, 30 s) to 6.
ROWS = [("a", 1, 1_000), ("a", 2, 2_000), ("b", 5, 3_000), ("a", 4, 12_000), ("b", 6, 21_000)]
FIRST_WINDOW = "[0 (1970-01-01T00:00:00.000Z), 10000 (1970-01-01T00:00:10.000Z))"
FUNCTION = "AggregateFunction EvenSum.get_result returned None"


class EvenSum(AggregateFunction):
    """The sum of the amounts, ``None`` when it is odd."""

    def create_accumulator(self) -> int:
        return 0

    def add(self, value: Any, acc: int) -> int:
        return acc + value.amount

    def get_result(self, acc: int) -> Any:
        return acc if acc % 2 == 0 else None

    def merge(self, a: int, b: int) -> int:
        return a + b


def job(df: Any, *, dead_letter: bool = False) -> Any:
    stream = (
        WindowedStream.from_dataframe(df, event_time="ts", watermark=BoundedOutOfOrderness(1_000))
        .key_by("user")
        .window(TumblingEventTimeWindows(10_000))
    )
    if dead_letter:
        stream = stream.on_error("dead_letter")
    return stream.aggregate(EvenSum(), output_schema="total bigint")


def null_warnings(caught: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in caught if w.category is NullResultWarning]


def test_batch_warns_once_on_the_driver(spark: SparkSession) -> None:
    result = job(spark.createDataFrame(ROWS, SCHEMA))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = sorted((r.user, r.window_start, r.total) for r in result.results.collect())
    assert got == [("a", 10_000, 4), ("b", 20_000, 6)]
    (text,) = null_warnings(caught)  # warned as the first action ran, on the driver
    assert FUNCTION in text
    assert f"for window {FIRST_WINDOW} of key 'a'" in text or f"{FIRST_WINDOW} of key 'b'" in text
    assert "window" in text and "so far" in text and "on_error('dead_letter')" in text
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert result.results.count() == 2  # the replay runs again: no second warning
        metrics = result.collect_metrics()
    assert null_warnings(caught) == []
    assert metrics.num_null_results == 2
    assert metrics.num_windows_fired == 2
    assert result.dead_letters.count() == 0


def test_batch_dead_letters_hold_each_none_result(spark: SparkSession) -> None:
    result = job(spark.createDataFrame(ROWS, SCHEMA), dead_letter=True)
    with warnings.catch_warnings(record=True) as caught, result:
        warnings.simplefilter("always")
        dead = sorted(result.dead_letters.collect(), key=lambda r: r.user)
        metrics = result.collect_metrics()
        assert result.results.count() == 2
    (text,) = null_warnings(caught)
    assert "each is in the dead letters with error_phase 'null_result'" in text
    assert [tuple(r) for r in dead] == [
        (user, None, None, "null_result", "NullResultWarning", r.error_message, 0, 10_000)
        for user, r in zip("ab", dead, strict=True)
    ]
    assert dead[0].error_message.startswith(FUNCTION)
    assert metrics.num_null_results == 2
    assert metrics.num_dead_letter_firings == metrics.num_dead_letter_elements == 0


def test_the_driver_warns_once_and_executors_get_no_notice() -> None:
    notice = NullResultNotice("reduce function f", dead_letter=False)
    param = NullResultParam(notice)
    copy = pickle.loads(pickle.dumps(param))
    assert copy.notice is None  # an executor's copy: merges, never warns
    report = NullResultReport(2, "'k'", "[0, 10)")
    assert copy.addInPlace(NullResultReport(), report) == report
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        merged = param.addInPlace(report, NullResultReport(1, "'j'", "[10, 20)"))
        param.addInPlace(merged, report)
    assert merged == NullResultReport(3, "'k'", "[0, 10)")
    (text,) = null_warnings(caught)
    assert "reduce function f returned None for window [0, 10) of key 'k'" in text
    assert "3 windows so far" in text
    # without an accumulator (Spark Connect) the count alone, when the metrics are read
    notice = NullResultNotice("reduce function f", dead_letter=False)
    with pytest.warns(NullResultWarning, match="of key \\(not reported"):
        notice.warn(NullResultReport(4))


# -- streaming -------------------------------------------------------------------------------
def _write(directory: Path, batches: list[list[tuple[Any, ...]]]) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for i, batch in enumerate(batches):
        path = directory / f"part-{i:04d}.json"
        lines = [json.dumps(dict(zip(("user", "amount", "ts"), r, strict=True))) for r in batch]
        path.write_text("\n".join(lines) + "\n")
        t = 1_600_000_000 + i * 10
        os.utime(path, (t, t))


@pytest.mark.parametrize("dead_letter", [False, True], ids=["counted", "dead-letter"])
def test_streaming_warns_once_on_the_driver(
    spark: SparkSession, tmp_path: Path, dead_letter: bool
) -> None:
    # three micro-batches; the last moves the watermark past the windows of a and b
    _write(tmp_path / "src", [ROWS[:3], ROWS[3:], [("~", 0, 100_000)]])
    df = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).json(str(tmp_path / "src"))
    result = job(df, dead_letter=dead_letter)
    out = tmp_path / "out"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        query = write_results_and_late(
            result,
            str(out / "results"),
            None,
            str(out / "checkpoint"),
            dead_letter_path=str(out / "dead") if dead_letter else None,
            available_now=True,
        )
        query.awaitTermination(300)
    assert query.exception() is None
    (text,) = null_warnings(caught)
    assert FUNCTION in text and FIRST_WINDOW in text
    results = spark.read.parquet(str(out / "results"))
    assert sorted((r.user, r.window_start, r.total) for r in results.collect()) == [
        ("a", 10_000, 4),
        ("b", 20_000, 6),
    ]
    progress = [p["observedMetrics"]["windowing"] for p in query.recentProgress]
    assert sum(m["num_null_results"] for m in progress) == 2
    if dead_letter:
        dead = spark.read.parquet(str(out / "dead")).collect()
        assert sorted((r.user, r.error_phase, r.window_start, r.window_end) for r in dead) == [
            ("a", "null_result", 0, 10_000),
            ("b", "null_result", 0, 10_000),
        ]
