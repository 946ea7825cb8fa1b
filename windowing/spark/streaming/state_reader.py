"""The open state of a streaming query, read from its checkpoint as a DataFrame
(``StreamingWindowedResult.read_state``): per key and open window, how its state holds what
it took in, how many rows that was, what it keeps, and its pending timers, with the watermark
of the micro-batch that wrote the state.

Spark's state data source (``format("statestore")``, the ``key_group`` value state of the
query's ``transformWithStateInPandas`` operator) reads the key groups' state values; each is
decoded on the executors with the query's own window operator, so every strategy's windows
are listed as the operator sees them. The checkpoint may belong to a stopped query.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812 - the PySpark convention
from pyspark.sql.types import (
    ArrayType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from windowing.plan import StateForm
from windowing.spark.columnar.core import OpenWindows, window_listing
from windowing.spark.columns.failures import window_bounds
from windowing.spark.columns.keys import group_codes
from windowing.spark.columns.output import ms_to_time
from windowing.spark.io.ownership import WINDOWING
from windowing.spark.jobs import window_operator
from windowing.spark.streaming.checkpoint import STATE_VERSION, StateOwner, decode_entry, load_group
from windowing.spark.streaming.clocks import flink_watermark
from windowing.spark.streaming.config import ProcessorConfig
from windowing.spark.streaming.job_record import JOB_RECORD, JobRecord

__all__ = ["STATE_COLUMNS", "read_state"]

#: The columns after the key columns.
STATE_COLUMNS = (
    "key_group",
    "window_start",
    "window_end",
    "state_form",
    "num_rows_in",
    "num_stored_elements",
    "event_timers",
    "processing_timers",
    "watermark",
    "batch_id",
)

_STATE_VAR = "key_group"  # the processor's one value state


def read_state(
    spark: SparkSession,
    config: ProcessorConfig,
    checkpoint: str,
    batch_id: int | None = None,
    *,
    stage: int = 0,
) -> DataFrame:
    """The open windows in the state of the query whose processor is configured by
    ``config``, as written by micro-batch ``batch_id`` (default: the last committed one) to
    ``checkpoint``: one row per key and window with the key column(s), ``key_group``,
    ``window_start``, ``window_end`` (null for windows without bounds: global, count),
    ``state_form`` (``"elements"``: the window keeps its elements, a process function's or
    any with an evictor; ``"accumulator"``: one reduced value, accumulator or fold),
    ``num_rows_in`` (the rows its contents took in since they were created, 0 after a purge;
    null where not counted: KIP-450 sliding windows, windows of a state written by an earlier
    version), ``num_stored_elements`` (the elements it keeps; null for an accumulator),
    ``event_timers`` and ``processing_timers`` (the window's pending timers: event time as the
    event-time column's type, processing time in epoch ms), ``watermark`` (the operator's
    watermark during that micro-batch; null before the first) and ``batch_id``. ``stage``: the
    position of the processor's stage in a query of several windowing stages (0: the
    first), whose state is that of Spark's operator the checkpoint's job record names."""
    layout = config.layout
    batch = _last_committed(spark, checkpoint) if batch_id is None else batch_id
    if batch is None:
        msg = f"checkpoint={checkpoint!r} has no committed micro-batch to read the state of"
        raise ValueError(msg)
    record = _job_record(spark, checkpoint)
    stages = (None,) if record is None else record.all_stages
    if stage >= len(stages):
        msg = (
            f"checkpoint={checkpoint!r} holds a query of {len(stages)} windowing stage(s); "
            f"this result is stage {stage + 1} of its query, so not of that one"
        )
        raise ValueError(msg)
    operator = 0 if record is None else record.operator_id(stage)
    recorded = stages[stage]
    raw = (
        spark.read.format("statestore")
        .option("stateVarName", _STATE_VAR)
        .option("operatorId", operator)
        .option("batchId", batch)
        .load(checkpoint)
        .select(F.col("key.__pw_kg").alias("kg"), F.col("value.state").alias("state"))
    )
    key_fields = [StructField(k, layout.input_schema[k].dataType, True) for k in layout.keys]
    schema = StructType(
        [
            *key_fields,
            StructField("key_group", IntegerType(), True),
            StructField("window_start", LongType(), True),
            StructField("window_end", LongType(), True),
            StructField("state_form", StringType(), True),
            StructField("num_rows_in", LongType(), True),
            StructField("num_stored_elements", LongType(), True),
            StructField("event_timers", ArrayType(LongType(), False), True),
            StructField("processing_timers", ArrayType(LongType(), False), True),
        ]
    )
    arrow_schema = pa.schema(
        [
            *[pa.field(k, t) for k, t in zip(layout.keys, config.key_arrow_types, strict=True)],
            pa.field("key_group", pa.int32()),
            pa.field("window_start", pa.int64()),
            pa.field("window_end", pa.int64()),
            pa.field("state_form", pa.string()),
            pa.field("num_rows_in", pa.int64()),
            pa.field("num_stored_elements", pa.int64()),
            pa.field("event_timers", pa.list_(pa.int64())),
            pa.field("processing_timers", pa.list_(pa.int64())),
        ]
    )

    owner = StateOwner(
        _query_id(spark, checkpoint),
        checkpoint,
        () if recorded is None else (recorded.definition.digest, *recorded.earlier_digests),
        record is not None and (record.created_layout or 0) >= STATE_VERSION,
    )

    def decode(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        reader = _GroupReader(config, owner)
        for rb in batches:
            rows = [
                row
                for kg, blob in zip(*(c.to_pylist() for c in rb.columns), strict=True)
                for row in reader.rows(kg, blob)
            ]
            if rows:
                columns = list(zip(*rows, strict=True))
                yield pa.RecordBatch.from_arrays(
                    [pa.array(list(c), f.type) for c, f in zip(columns, arrow_schema, strict=True)],
                    schema=arrow_schema,
                )

    watermark = _watermark(spark, checkpoint, batch)
    kind = layout.ts_kind
    timers = F.transform(F.col("event_timers"), lambda t: ms_to_time(t, kind))
    return raw.mapInArrow(decode, schema=schema).select(
        *[F.col(f"`{k}`") for k in layout.keys],
        "key_group",
        ms_to_time(F.col("window_start"), kind, clamp=True).alias("window_start"),
        ms_to_time(F.col("window_end"), kind, clamp=True).alias("window_end"),
        "state_form",
        "num_rows_in",
        "num_stored_elements",
        timers.alias("event_timers") if kind == "timestamp" else F.col("event_timers"),
        "processing_timers",
        ms_to_time(F.lit(watermark).cast("long"), kind).alias("watermark"),
        F.lit(batch).cast("long").alias("batch_id"),
    )


class _GroupReader:
    """Decodes key groups' state values into rows (one operator per Python worker)."""

    def __init__(self, config: ProcessorConfig, owner: StateOwner) -> None:
        self.config = config
        self.owner = owner
        self.op = window_operator(config.window, config.spec, count_rows=True)

    def rows(self, kg: int, blob: bytes | None) -> Iterator[tuple[Any, ...]]:
        if blob is None:
            return
        c, owner = self.config, self.owner
        scope = owner.scope(kg)
        _, entries, windows = load_group(
            blob, c.key_groups, scope, c.job_digest, accepted=owner.accepted, bound=owner.bound
        )
        for key, _, data, *_ in entries.values():
            ks = decode_entry(data, scope)
            if ks is None:  # a key that only keeps its idle clock
                continue
            if isinstance(ks, OpenWindows):
                yield from self._open_windows(kg, ks)
            else:
                yield from self._key_state(kg, key, ks)
        if windows is not None:
            yield from self._open_windows(kg, windows)

    def _keys(self, key: Any) -> tuple[Any, ...]:
        n = len(self.config.layout.keys)
        if n == 0:
            return ()
        return (key,) if n == 1 else tuple(key)

    def _key_state(self, kg: int, key: Any, ks: Any) -> Iterator[tuple[Any, ...]]:
        for summary in self.op.window_summaries(ks):
            start, end = window_bounds(summary.window)
            yield (
                *self._keys(key),
                kg,
                start,
                end,
                summary.state_form.value,
                summary.num_rows_in,
                summary.num_stored_elements,
                list(summary.event_timers),
                list(summary.processing_timers),
            )

    def _open_windows(self, kg: int, windows: OpenWindows) -> Iterator[tuple[Any, ...]]:
        """Windows of the columnar state (a built-in aggregation's), as the operator would
        hold them: one reduced record each, named by the key columns of its items."""
        plan = self.config.columnar
        assert plan is not None
        keys = self.config.layout.keys
        key_values = [windows.rows.column(k).to_pylist() for k in keys]
        # a key's items are contiguous: list each key's windows on its own
        codes = group_codes(windows.rows.select(keys), keys)
        cuts = [0, *(np.flatnonzero(codes[1:] != codes[:-1]) + 1).tolist(), len(windows)]
        for lo, hi in itertools.pairwise(cuts):
            for i, start, end, pending in window_listing(plan, windows.slice(lo, hi)):
                yield (
                    *[values[lo + i] for values in key_values],
                    kg,
                    start,
                    end,
                    StateForm.ACCUMULATOR.value,
                    None,
                    None,
                    pending,
                    [],
                )


def _log_entries(spark: SparkSession, folder: str) -> DataFrame:
    """The lines of a checkpoint log folder with their batch id (the file name)."""
    name = F.regexp_extract(F.input_file_name(), r"/(\d+)$", 1)
    return (
        spark.read.text(folder)
        .select(name.alias("file"), "value")
        .where(F.col("file") != "")
        .select(F.col("file").cast("long").alias("batch"), "value")
    )


def _query_id(spark: SparkSession, checkpoint: str) -> str:
    """The query's id (Spark's ``metadata`` file of the checkpoint), which its state is
    bound to."""
    try:
        rows = spark.read.text(f"{checkpoint}/metadata").collect()
    except Exception:  # no metadata: a checkpoint of no query yet
        return ""
    for row in rows:
        text = row.value.strip()
        if text.startswith("{"):
            return str(json.loads(text).get("id", ""))
    return ""


def _job_record(spark: SparkSession, checkpoint: str) -> JobRecord | None:
    """The checkpoint's record of its job (``None`` without one)."""
    try:
        path = f"{checkpoint}/{WINDOWING}/{JOB_RECORD}"
        found = spark.read.text(path, wholetext=True).collect()
    except Exception:  # no record: a checkpoint of a version that kept none
        return None
    return JobRecord.from_json(found[0].value) if found else None


def _last_committed(spark: SparkSession, checkpoint: str) -> int | None:
    try:
        row = _log_entries(spark, f"{checkpoint}/commits").agg(F.max("batch")).first()
    except Exception:  # no commits folder yet
        return None
    return None if row is None or row[0] is None else int(row[0])


def _watermark(spark: SparkSession, checkpoint: str, batch: int) -> int | None:
    """The operator's watermark during micro-batch ``batch`` (from the offset log)."""
    lines = _log_entries(spark, f"{checkpoint}/offsets").where(F.col("batch") == batch)
    for row in lines.collect():
        text = row.value.strip()
        if text.startswith("{") and "batchWatermarkMs" in text:
            spark_ms = int(json.loads(text)["batchWatermarkMs"])
            wm = flink_watermark(spark_ms)
            return None if spark_ms <= 0 else wm
    return None
