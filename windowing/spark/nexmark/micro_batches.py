"""Nexmark's events as micro-batch files a stream replays (:class:`NexmarkMicroBatches`):
one parquet file per micro-batch, written in stream order."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType

from windowing.spark.io.files import Files

if TYPE_CHECKING:
    from windowing.spark.nexmark.generator import NexmarkGenerator, NexmarkTable

__all__ = ["NexmarkMicroBatches", "write_micro_batches"]


@dataclass(frozen=True)
class NexmarkMicroBatches:
    """The micro-batch files :meth:`NexmarkGenerator.write_micro_batches
    <windowing.spark.nexmark.NexmarkGenerator.write_micro_batches>` wrote: ``batches`` parquet
    files in ``folder``, the events at the stream positions ``[i * events_per_batch, (i + 1) *
    events_per_batch)`` in the ``i``-th, written in that order.

    Example::

        replay = generator.write_micro_batches("/data/bids", table="bids",
                                               events_per_batch=100_000)
        query = replay.read_stream(spark).writeStream.trigger(availableNow=True)...
    """

    folder: str
    table: str
    batches: int
    events_per_batch: int
    schema: StructType

    def read_stream(self, spark: SparkSession) -> DataFrame:
        """The files as a streaming DataFrame, one file per micro-batch
        (``maxFilesPerTrigger=1``): Spark's file source takes files in the order they were
        written, so micro-batch ``i`` holds the events of file ``i``."""
        reader = spark.readStream.schema(self.schema).option("maxFilesPerTrigger", 1)
        return reader.parquet(self.folder)


def write_micro_batches(
    generator: NexmarkGenerator,
    folder: str,
    *,
    table: NexmarkTable,
    events_per_batch: int,
    with_event_number: bool,
) -> NexmarkMicroBatches:
    """Write ``generator``'s ``table`` into ``folder``, one parquet file per
    ``events_per_batch`` positions of the stream, one Spark job per file, in order."""
    if isinstance(events_per_batch, bool) or not isinstance(events_per_batch, int):
        msg = f"write_micro_batches: events_per_batch must be an int >= 1, got {events_per_batch!r}"
        raise TypeError(msg)
    if events_per_batch < 1:
        msg = f"write_micro_batches: events_per_batch must be an int >= 1, got {events_per_batch}"
        raise ValueError(msg)
    files = Files(generator.spark)
    present = sorted(n for n in files.names(folder) if not n.startswith(("_", ".")))
    if present:
        shown = ", ".join(present[:3]) + (", ..." if len(present) > 3 else "")
        msg = (
            f"write_micro_batches: folder {folder!r} already holds files ({shown}); a stream "
            "would replay them too: give a new or empty folder"
        )
        raise ValueError(msg)
    total = generator.config.num_events
    batches = -(-total // events_per_batch)
    # Check the table's name before the first job.
    schema = generator.table(table, end=0, with_event_number=with_event_number).schema
    for index in range(batches):
        start = index * events_per_batch
        end = min(start + events_per_batch, total)
        frame = generator.table(
            table, start=start, end=end, with_event_number=with_event_number, num_partitions=1
        )
        # One file: the events table is a union of one table per kind.
        frame.coalesce(1).write.mode("append").parquet(folder)
    return NexmarkMicroBatches(folder, table, batches, events_per_batch, schema)
