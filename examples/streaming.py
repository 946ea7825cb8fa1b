"""Streaming: Flink-style windows on Spark Structured Streaming, restartable.

A file source (JSON files dropped in ``<workdir>/incoming``, one file per micro-batch) goes
through per-user 10-second tumbling windows with a 3-second bounded out-of-orderness
watermark; ONE streaming query writes the window results and the late rows to two parquet
directories (``<workdir>/results/batch_id=N``, ``<workdir>/late/batch_id=N``).

Each run adds three new files and processes everything not yet processed
(``trigger(availableNow=True)``), then prints what the sinks hold. Run it twice to see it
continue from its checkpoint (``<workdir>/checkpoint``)::

    PYSPARK_PYTHON=.venv/bin/python .venv/bin/python examples/streaming.py /tmp/pw-stream
    PYSPARK_PYTHON=.venv/bin/python .venv/bin/python examples/streaming.py /tmp/pw-stream
"""

from __future__ import annotations

import json
import os
import random
import sys
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

from pyspark.sql import Row, SparkSession

from windowing import OutputTag
from windowing.assigners import TumblingEventTimeWindows
from windowing.spark.streaming.query import write_results_and_late
from windowing.stream import BoundedOutOfOrderness, WindowedStream

START = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
SCHEMA = "user string, amount bigint, purchased_at timestamp"
LATE = OutputTag("late")


def drop_files(incoming: Path, count: int = 3, per_file: int = 20) -> None:
    """Write ``count`` new JSON files; each covers the next 5 s of arrival time, with some
    events out of order and a few more than the watermark delay late."""
    incoming.mkdir(parents=True, exist_ok=True)
    first = len(list(incoming.glob("*.json")))
    rng = random.Random(first)
    for i in range(first, first + count):
        lines = []
        for j in range(per_file):
            arrival = START + timedelta(seconds=5 * i, milliseconds=250 * j)
            delay = rng.choice([0, 0, 0, 500, 1_000, 2_000, 12_000])
            at = arrival - timedelta(milliseconds=delay)
            row = {"user": rng.choice(["alice", "bob"]), "amount": rng.randint(1, 50)}
            row["purchased_at"] = at.isoformat()
            lines.append(json.dumps(row))
        path = incoming / f"purchases-{i:04d}.json"
        path.write_text("\n".join(lines) + "\n")
        os.utime(path, (1_700_000_000 + i, 1_700_000_000 + i))  # the file source's order


def add(a: Row, b: Row) -> Row:
    """Sum the amounts; keep the latest purchase time."""
    return Row(
        user=a.user, amount=a.amount + b.amount, purchased_at=max(a.purchased_at, b.purchased_at)
    )


def main(workdir: Path) -> None:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("pyspark-windowing-streaming")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.ui.enabled", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    drop_files(workdir / "incoming")

    purchases = (
        spark.readStream.schema(SCHEMA)
        .option("maxFilesPerTrigger", 1)
        .json(str(workdir / "incoming"))
    )
    stream = (
        WindowedStream.from_dataframe(
            purchases, event_time="purchased_at", watermark=BoundedOutOfOrderness("3 seconds")
        )
        .key_by("user")
        .window(TumblingEventTimeWindows("10 seconds"))
        .side_output_late_data(LATE)
    )
    result = stream.reduce(add)  # a streaming DataFrame, so a streaming result
    query = write_results_and_late(
        result,
        str(workdir / "results"),
        str(workdir / "late"),
        str(workdir / "checkpoint"),
        available_now=True,
    )
    query.awaitTermination()
    batches = [p["batchId"] for p in query.recentProgress]
    print(f"this run processed micro-batches {batches}")
    for name in ("results", "late"):
        path = workdir / name
        if not path.exists():
            print(f"{name}: nothing yet")
            continue
        df = spark.read.parquet(str(path))
        print(f"{name}: {df.count()} rows in {path}")
        df.orderBy("batch_id", *df.columns[:2]).show(10, truncate=False)
    spark.stop()


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp(prefix="pw-stream-")))
