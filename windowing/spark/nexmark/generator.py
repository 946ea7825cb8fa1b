"""Nexmark's people, auctions and bids as Spark DataFrames (:class:`NexmarkGenerator`).

Every event is computed from its position in ``spark.range`` with column expressions: no
Python runs per row, no data goes through the driver, and the partitions are independent, so
any number of events generates at the speed of the cluster. The integer rules (which event a
number is, ids, times, out-of-order groups) are :mod:`windowing.nexmark`'s.

The random draws are hashes of the seed and the event number
(:mod:`windowing.spark.nexmark.columns`): the reference's distributions, not its numbers.
"""

from __future__ import annotations

import functools
from typing import Literal

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812 - the PySpark convention
from pyspark.sql.types import StructType

from windowing.nexmark import (
    AUCTION_PROPORTION,
    OUT_OF_ORDER_MULTIPLIER,
    PERSON_PROPORTION,
    EventType,
    NexmarkConfig,
)
from windowing.spark.nexmark.columns import EventColumns, integral_div
from windowing.spark.nexmark.micro_batches import NexmarkMicroBatches, write_micro_batches

__all__ = ["NexmarkGenerator", "NexmarkTable"]

_KINDS = {"persons": EventType.PERSON, "auctions": EventType.AUCTION, "bids": EventType.BID}
_STRUCTS = {EventType.PERSON: "person", EventType.AUCTION: "auction", EventType.BID: "bid"}

#: The tables of :class:`NexmarkGenerator`: the unified events, or one kind.
NexmarkTable = Literal["events", "persons", "auctions", "bids"]
TABLES: tuple[NexmarkTable, ...] = ("events", "persons", "auctions", "bids")


class NexmarkGenerator:
    """Nexmark's events (people, auctions, bids) as Spark DataFrames, computed from
    ``spark.range`` with column expressions.

    The event numbers, ids, times, proportions, hot auctions, bidders and sellers, auction
    lengths and the out-of-order groups follow the reference generator exactly (Beam's
    ``Generator``; see :mod:`windowing.nexmark`); the random draws are hashes of the seed
    and the event number, with the reference's distributions but not its numbers (see
    :mod:`windowing.spark.nexmark.columns`). The same configuration gives the same events,
    in batch (:meth:`events`, :meth:`persons`, :meth:`auctions`, :meth:`bids`) and as
    micro-batch files a stream replays (:meth:`write_micro_batches`). Building a DataFrame
    runs no Spark job; each job draws the pools of random characters and the channels'
    urls from the driver (a few hundred kilobytes).

    Parameters
    ----------
    spark
        The session the DataFrames belong to.
    config
        What to generate (default: :class:`~windowing.nexmark.NexmarkConfig`'s defaults).

    Example::

        generator = NexmarkGenerator(spark, NexmarkConfig(num_events=10_000_000))
        bids = generator.bids()           # auction, bidder, price, channel, url, date_time, extra
        bids.groupBy("auction").count().show()
    """

    def __init__(self, spark: SparkSession, config: NexmarkConfig | None = None) -> None:
        if config is not None and not isinstance(config, NexmarkConfig):
            msg = f"NexmarkGenerator: config must be a NexmarkConfig, got {config!r}"
            raise TypeError(msg)
        self.spark = spark
        self.config = config if config is not None else NexmarkConfig()

    @functools.cached_property
    def _columns(self) -> EventColumns:
        return EventColumns.of(self.spark, self.config)

    def _numbered(self, start: int, end: int, partitions: int | None) -> DataFrame:
        """The ``event_number`` of each of the positions ``[start, end)``, in order."""
        config = self.config
        position = F.col("id")
        size = config.out_of_order_group_size
        if size == 1:
            number = position
        else:
            scrambled = F.pmod(position * OUT_OF_ORDER_MULTIPLIER, F.lit(size))
            number = integral_div(position, size) * size + scrambled
        return self.spark.range(start, end, 1, partitions).select(number.alias("event_number"))

    def _table(
        self, table: NexmarkTable, numbered: DataFrame, with_event_number: bool
    ) -> DataFrame:
        columns = self._columns
        if table != "events":
            return _kind(columns, _KINDS[table], numbered, with_event_number)
        # One table per kind, each its own compiled stage: as one projection, with each
        # kind's columns under a condition, the generated methods outgrow what the JVM
        # compiles (8,000 bytes of bytecode) and run interpreted, several times slower.
        first = ["event_number"] if with_event_number else []
        frames = {kind: _kind(columns, kind, numbered, True) for kind in EventType}
        types = {kind: StructType(frame.schema.fields[1:]) for kind, frame in frames.items()}
        parts = []
        for kind, frame in frames.items():
            structs = [
                (
                    F.struct(*frame.columns[1:])
                    if other == kind
                    else F.lit(None).cast(types[other])
                ).alias(_STRUCTS[other])
                for other in EventType
            ]
            event_type = F.lit(int(kind)).alias("event_type")
            # date_time twice (in the struct and on its own): Spark then keeps this
            # projection apart from the one computing the fields, whose generated code stays
            # small enough.
            parts.append(frame.select(*first, event_type, *structs, F.col("date_time")))
        return parts[0].unionAll(parts[1]).unionAll(parts[2])

    def events(self, *, with_event_number: bool = False) -> DataFrame:
        """Every event, as Flink Nexmark's ``datagen`` table: ``event_type`` (0 person, 1
        auction, 2 bid: :class:`~windowing.nexmark.EventType`), the ``person``, ``auction``
        and ``bid`` structs (the one of the event's kind set, the others null) and the
        event's ``date_time``. The union of one table per kind: the people's partitions,
        then the auctions', then the bids', each kind in stream order.

        ``with_event_number``: first an ``event_number`` column, the number the event is
        derived from (its position in the stream unless out-of-order groups scramble it)."""
        return self.table("events", with_event_number=with_event_number)

    def persons(self, *, with_event_number: bool = False) -> DataFrame:
        """The people: ``id, name, email_address, credit_card, city, state, date_time,
        extra``."""
        return self.table("persons", with_event_number=with_event_number)

    def auctions(self, *, with_event_number: bool = False) -> DataFrame:
        """The auctions: ``id, item_name, description, initial_bid, reserve, date_time,
        expires, seller, category, extra``."""
        return self.table("auctions", with_event_number=with_event_number)

    def bids(self, *, with_event_number: bool = False) -> DataFrame:
        """The bids: ``auction, bidder, price, channel, url, date_time, extra``."""
        return self.table("bids", with_event_number=with_event_number)

    def table(
        self,
        table: NexmarkTable,
        *,
        start: int = 0,
        end: int | None = None,
        with_event_number: bool = False,
        num_partitions: int | None = None,
    ) -> DataFrame:
        """One of the tables (``"events"``, ``"persons"``, ``"auctions"``, ``"bids"``) of
        the events at the stream positions ``[start, end)`` (default: all), in
        ``num_partitions`` partitions (default: the configuration's)."""
        if table not in TABLES:
            msg = f"NexmarkGenerator: table must be one of {', '.join(TABLES)}, got {table!r}"
            raise ValueError(msg)
        total = self.config.num_events
        stop = total if end is None else end
        if not 0 <= start <= stop <= total:
            msg = (
                f"NexmarkGenerator: the positions [start, end) must lie in [0, {total}], got "
                f"start={start!r}, end={end!r}"
            )
            raise ValueError(msg)
        partitions = self.config.num_partitions if num_partitions is None else num_partitions
        numbered = self._numbered(start, stop, partitions)
        return self._table(table, numbered, with_event_number)

    def write_micro_batches(
        self,
        folder: str,
        *,
        table: NexmarkTable = "events",
        events_per_batch: int = 100_000,
        with_event_number: bool = False,
    ) -> NexmarkMicroBatches:
        """Write ``table`` into ``folder`` (new or empty) as parquet files of
        ``events_per_batch`` consecutive stream positions each (the last one shorter), in
        stream order: :meth:`NexmarkMicroBatches.read_stream
        <windowing.spark.nexmark.NexmarkMicroBatches.read_stream>` replays them, one file per
        micro-batch. Each file is one Spark job of one task (a file is a micro-batch); a
        table of one kind holds that kind's events of the positions, possibly none."""
        return write_micro_batches(
            self,
            folder,
            table=table,
            events_per_batch=events_per_batch,
            with_event_number=with_event_number,
        )


def _kind(
    columns: EventColumns, kind: EventType, numbered: DataFrame, with_event_number: bool
) -> DataFrame:
    """The events of one kind among ``numbered``, in its order."""
    number, offset = columns.number, columns.offset
    if kind == EventType.PERSON:
        condition, named = offset < PERSON_PROPORTION, columns.person
    elif kind == EventType.AUCTION:
        condition = offset >= PERSON_PROPORTION
        condition &= offset < PERSON_PROPORTION + AUCTION_PROPORTION
        named = columns.auction
    else:
        condition = offset >= PERSON_PROPORTION + AUCTION_PROPORTION
        named = columns.bid
    parts = numbered.where(condition).select(number, *named.named_parts())
    return parts.select(*([number] if with_event_number else []), *named.columns)
