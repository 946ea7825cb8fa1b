"""A user-defined Trigger running on Spark: fire on count or on event time, whichever first.

``CountOrEndOfWindow(n)`` emits a window's readings in batches of ``n`` as soon as they are
complete (early firings), and whatever is left when the watermark passes the end of the window.
Each firing purges, so every reading is reported exactly once.

The trigger keeps its state (the count) through ``ctx.get_partitioned_state``, never on
``self``: one trigger object serves every key and window, and is shipped to the executors
with cloudpickle. The same class runs unchanged in the in-memory harness, which this example
uses at the end to check the Spark results.

Run it with ``.venv/bin/python examples/custom_trigger.py``.
"""

from __future__ import annotations

import os
import random
import sys
from collections.abc import Iterable
from typing import Any, NamedTuple

from pyspark import cloudpickle as spark_cloudpickle
from pyspark.sql import Row, SparkSession

from windowing.assigners import TumblingEventTimeWindows
from windowing.functions import ProcessWindowFunction
from windowing.state import ReducingStateDescriptor
from windowing.stream import BoundedOutOfOrderness, WindowedStream
from windowing.testing import WindowOperatorHarness
from windowing.time import MAX_TIMESTAMP
from windowing.triggers import OnMergeContext, Trigger, TriggerContext, TriggerResult

if __name__ != "__main__":
    # Classes of the script's __main__ module are shipped by value automatically. When this
    # file is imported as a module that the executors cannot import, ship it by value too.
    # Spark uses its own copy of cloudpickle.
    spark_cloudpickle.register_pickle_by_value(sys.modules[__name__])  # type: ignore[no-untyped-call]


class CountOrEndOfWindow(Trigger[Any, Any]):
    """FIRE_AND_PURGE after every ``max_count`` elements of a window, and when the watermark
    passes the window's end (whichever comes first).

    >>> from windowing.testing import TriggerHarness
    >>> from windowing.windows import TimeWindow
    >>> h = TriggerHarness(CountOrEndOfWindow(2))
    >>> w = TimeWindow(0, 60_000)
    >>> [h.process_element(v, 1_000, w).name for v in "abc"]
    ['CONTINUE', 'FIRE_AND_PURGE', 'CONTINUE']
    >>> h.advance_watermark_for(59_999, w).name
    'FIRE_AND_PURGE'
    """

    COUNT: ReducingStateDescriptor[int] = ReducingStateDescriptor("count", lambda a, b: a + b)

    def __init__(self, max_count: int) -> None:
        if max_count <= 0:
            msg = f"max_count must be > 0, got {max_count!r}"
            raise ValueError(msg)
        self.max_count = max_count

    def on_element(
        self, element: Any, timestamp: int | None, window: Any, ctx: TriggerContext
    ) -> TriggerResult:
        if window.max_timestamp() <= ctx.get_current_watermark():
            return TriggerResult.FIRE_AND_PURGE  # a late element (within allowed lateness)
        ctx.register_event_time_timer(window.max_timestamp())
        count = ctx.get_partitioned_state(self.COUNT)
        count.add(1)
        if count.get() >= self.max_count:
            count.clear()
            return TriggerResult.FIRE_AND_PURGE
        return TriggerResult.CONTINUE

    def on_event_time(self, time: int, window: Any, ctx: TriggerContext) -> TriggerResult:
        if time == window.max_timestamp():
            ctx.get_partitioned_state(self.COUNT).clear()
            return TriggerResult.FIRE_AND_PURGE
        return TriggerResult.CONTINUE

    def on_processing_time(self, time: int, window: Any, ctx: TriggerContext) -> TriggerResult:
        return TriggerResult.CONTINUE

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window: Any, ctx: OnMergeContext) -> None:
        ctx.merge_partitioned_state(self.COUNT)
        if window.max_timestamp() > ctx.get_current_watermark():
            ctx.register_event_time_timer(window.max_timestamp())

    def clear(self, window: Any, ctx: TriggerContext) -> None:
        ctx.delete_event_time_timer(window.max_timestamp())
        ctx.get_partitioned_state(self.COUNT).clear()

    def __repr__(self) -> str:
        return f"CountOrEndOfWindow({self.max_count})"


class Batch(NamedTuple):
    readings: int
    mean_celsius: float
    fired_by: str


class Summarize(ProcessWindowFunction[Row, Batch, str, Any]):
    """One output per firing; the watermark tells why the window fired."""

    def process(self, key: str, context: Any, elements: Iterable[Row]) -> Iterable[Batch]:
        temps = [e.celsius for e in elements]
        ended = context.current_watermark() >= context.window().max_timestamp()
        yield Batch(len(temps), round(sum(temps) / len(temps), 2), "time" if ended else "count")


def readings(n: int = 300, seed: int = 3) -> list[tuple[int, str, float, int]]:
    """``(seq, sensor, celsius, ts_ms)``: one reading per second per sensor, slightly out of
    order."""
    rng = random.Random(seed)
    return [
        (
            seq,
            sensor := rng.choice(["boiler", "attic"]),
            round((60.0 if sensor == "boiler" else 18.0) + rng.gauss(0, 2), 1),
            seq * 1_000 - rng.choice([0, 0, 0, 1_500]),
        )
        for seq in range(n)
    ]


def harness_results(rows: list[tuple[int, str, float, int]], delay: int) -> list[tuple[Any, ...]]:
    """The same job in the in-memory harness, watermark = max event time seen - delay - 1."""
    h = WindowOperatorHarness(
        TumblingEventTimeWindows("1 minute"), Summarize(), trigger=CountOrEndOfWindow(25)
    )
    high = None
    for seq, sensor, celsius, ts in rows:
        if high is not None:
            h.process_watermark(high - delay - 1)
        h.process_element(Row(seq=seq, sensor=sensor, celsius=celsius, ts=ts), ts, key=sensor)
        high = ts if high is None else max(high, ts)
    h.process_watermark(MAX_TIMESTAMP)
    return sorted((r.key, r.window.start, *r.value) for r in h.extract_output())


def main() -> None:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("windowing-custom-trigger")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    rows = readings()
    df = spark.createDataFrame(rows, "seq bigint, sensor string, celsius double, ts bigint")

    result = (
        WindowedStream.from_dataframe(
            df, event_time="ts", watermark=BoundedOutOfOrderness("2 seconds"), arrival_order="seq"
        )
        .key_by("sensor")
        .window(TumblingEventTimeWindows("1 minute"))
        .trigger(CountOrEndOfWindow(25))  # the window trigger, not Spark's micro-batch trigger
        .process(Summarize())  # output columns from the Batch NamedTuple
    )
    with result:
        result.results.orderBy("sensor", "window_start", "fired_by").show(30, truncate=False)
        spark_rows = sorted(
            (r.sensor, r.window_start, r.readings, r.mean_celsius, r.fired_by)
            for r in result.results.collect()
        )
    print("harness agrees with Spark:", spark_rows == harness_results(rows, delay=2_000))
    spark.stop()


if __name__ == "__main__":
    main()
