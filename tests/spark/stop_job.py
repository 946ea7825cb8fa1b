"""A streaming job for ``test_quiet_stop.py``, in a Spark of its own at Spark's default log
levels (its console is what a user sees): ``stop_job.py <base>``.

Two queries written with ``write_results_and_late``, one after the other, each with a second
micro-batch whose window function reaches a row it takes its time on: the first is stopped
while that micro-batch runs; on the second the window function raises on that row (a real
failure). Markers on stdout delimit the parts of the console: ``stop: started`` once the
slow row is reached, ``stop: stopping`` before ``stop()``, ``stop: stopped`` a few seconds
after it returns (what the stopped micro-batch's tasks still report comes before it);
``fail: started`` once the failing query reaches its row (it may have failed already) and
``fail: ended`` once it has ended; then a JSON line."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from pyspark.sql import Row, SparkSession

from windowing.assigners import TumblingEventTimeWindows
from windowing.functions import AggregateFunction
from windowing.spark.streaming import write_results_and_late
from windowing.stream import BoundedOutOfOrderness, DataStream

#: The row of the second micro-batch the window function takes its time on.
SLOW_SEQ = 107
#: The error of the failing query.
FAILURE = f"the count cannot take row {SLOW_SEQ}"


class SlowCount(AggregateFunction[Row, int, int]):
    """A count that touches ``marker`` on one row, then sleeps (or raises, ``fail``)."""

    def __init__(self, fail: bool, marker: str) -> None:
        self.fail = fail
        self.marker = marker

    def create_accumulator(self) -> int:
        return 0

    def add(self, value: Row, acc: int) -> int:
        if value.seq == SLOW_SEQ:
            Path(self.marker).touch()
            if self.fail:
                raise RuntimeError(FAILURE)
            time.sleep(120)
        return acc + 1

    def get_result(self, acc: int) -> int:
        return acc

    def merge(self, a: int, b: int) -> int:
        return a + b


def say(text: str) -> None:
    print(text, flush=True)


def start(spark: SparkSession, base: Path, fail: bool) -> Any:
    """The query over two files (one per micro-batch), once it reaches the slow row."""
    src = base / "src"
    src.mkdir(parents=True)
    for i in range(2):
        path = src / f"{i}.json"
        rows = [{"user": "k", "ts": 100 * i + j, "seq": 100 * i + j} for j in range(20)]
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        os.utime(path, (1_600_000_000 + i * 10, 1_600_000_000 + i * 10))
    df = spark.readStream.schema("user string, ts bigint, seq bigint")
    df = df.option("maxFilesPerTrigger", 1).json(str(src))
    result = (
        DataStream.from_dataframe(df, event_time="ts", watermark=BoundedOutOfOrderness(10))
        .key_by("user")
        .window(TumblingEventTimeWindows(1_000))
        .aggregate(SlowCount(fail, str(base / "slow")), output_schema="n bigint")
    )
    query = write_results_and_late(
        result, str(base / "out"), None, str(base / "chk"), processing_time="100 milliseconds"
    )
    deadline = time.time() + 600
    while time.time() < deadline and not (base / "slow").exists():
        time.sleep(0.2)
    return query


def outcome(query: Any, base: Path) -> dict[str, Any]:
    return {
        "active": query.isActive,
        "exception": None if query.exception() is None else str(query.exception()),
        "committed": sorted(n for n in os.listdir(base / "chk" / "commits") if n[0] != "."),
    }


def main(base: Path) -> dict[str, Any]:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (
        SparkSession.builder.master("local[1]")
        .config("spark.sql.shuffle.partitions", "1")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )  # Spark's default log levels: no setLogLevel
    stopped = start(spark, base / "stopped", fail=False)
    say("stop: started")
    say("stop: stopping")
    stopped.stop()
    time.sleep(5)  # what the stopped micro-batch's tasks still report comes before the marker
    say("stop: stopped")
    failing = start(spark, base / "failing", fail=True)
    say("fail: started")
    error = None
    try:
        failing.awaitTermination(300)
    except Exception as exc:
        error = str(exc)
    say("fail: ended")
    out = {
        "stopped": outcome(stopped, base / "stopped"),
        "failing": {**outcome(failing, base / "failing"), "error": error},
    }
    spark.stop()
    return out


if __name__ == "__main__":
    print(json.dumps(main(Path(sys.argv[1]))), flush=True)
