"""What the job scripts (``connect_job.py``, ``cluster_job.py``) share: run a windowed stream
over rows written as one JSON file, to completion, and read its results."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pyspark.sql import Row, SparkSession

from windowing.spark.streaming.query import write_results_and_late
from windowing.stream import BoundedOutOfOrderness, KeyedStream, WindowedStream


def run_stream(
    spark: SparkSession,
    rows: Sequence[tuple[Any, ...]],
    schema: str,
    build: Callable[[KeyedStream], Any],
) -> list[Row]:
    """The results of ``build`` (a terminal call on the stream keyed by ``user``, event time
    ``ts``, no out-of-orderness) over ``rows`` read as a stream of one JSON file."""
    src = Path(tempfile.mkdtemp())
    (src / "in").mkdir()
    names = [part.split()[0] for part in schema.split(",")]
    lines = [json.dumps(dict(zip(names, r, strict=True))) + "\n" for r in rows]
    (src / "in" / "a.json").write_text("".join(lines))
    sdf = spark.readStream.schema(schema).json(str(src / "in"))
    stream = WindowedStream.from_dataframe(
        sdf, event_time="ts", watermark=BoundedOutOfOrderness(0)
    ).key_by("user")
    result = build(stream)
    query = write_results_and_late(result, str(src / "r"), None, str(src / "c"), available_now=True)
    query.awaitTermination(300)
    return spark.read.parquet(str(src / "r")).collect()
