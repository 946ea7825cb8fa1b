"""What the Nexmark queries read from the generator's tables: one kind of event out of the
unified events table (:func:`events_of_kind`), and when each event arrives in a replay
(:func:`with_arrival`).

A query reads the same columns from a batch table and from a stream of the generator's
micro-batch files, so both functions take either."""

from __future__ import annotations

from typing import Literal

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F  # noqa: N812 - the PySpark convention

from windowing.nexmark import EventType, NexmarkConfig
from windowing.spark.nexmark.columns import integral_div

__all__ = ["ARRIVAL_TIME", "MICRO_BATCH", "STREAM_POSITION", "events_of_kind", "with_arrival"]

#: The column :func:`with_arrival` adds: the event's position in the stream.
STREAM_POSITION = "stream_position"
#: The column :func:`with_arrival` adds: when the event arrives in a replay at the rate.
ARRIVAL_TIME = "arrival_time"
#: The column :func:`with_arrival` adds: the micro-batch file holding the event.
MICRO_BATCH = "micro_batch"

_KINDS: dict[str, EventType] = {
    "persons": EventType.PERSON,
    "auctions": EventType.AUCTION,
    "bids": EventType.BID,
}
_STRUCTS = {EventType.PERSON: "person", EventType.AUCTION: "auction", EventType.BID: "bid"}
_EVENT_COLUMNS = ("event_type", "person", "auction", "bid", "date_time")


def events_of_kind(events: DataFrame, kind: Literal["persons", "auctions", "bids"]) -> DataFrame:
    """The events of one kind out of the unified events table (static or streaming), as
    :meth:`NexmarkGenerator.persons <windowing.spark.nexmark.NexmarkGenerator.persons>`,
    ``auctions`` or ``bids`` give them, after the table's other columns (``event_number``,
    the columns of :func:`with_arrival`).

    Example::

        bids = events_of_kind(replay.read_stream(spark), "bids")
    """
    if kind not in _KINDS:
        msg = f"events_of_kind: kind must be one of {', '.join(_KINDS)}, got {kind!r}"
        raise ValueError(msg)
    missing = [c for c in _EVENT_COLUMNS if c not in events.columns]
    if missing:
        msg = (
            f"events_of_kind: events must be the unified events table (NexmarkGenerator."
            f"events()); columns {missing} are missing from {events.columns}"
        )
        raise ValueError(msg)
    event_type = _KINDS[kind]
    others = [c for c in events.columns if c not in _EVENT_COLUMNS]
    struct = _STRUCTS[event_type]
    return events.where(F.col("event_type") == int(event_type)).select(*others, f"{struct}.*")


def with_arrival(
    frame: DataFrame, config: NexmarkConfig, *, events_per_batch: int | None = None
) -> DataFrame:
    """``frame`` (any of the generator's tables, with its ``event_number`` column: static
    or streaming) with when each event arrives in a replay:

    - ``stream_position``: the event's position in the stream
      (:meth:`NexmarkConfig.stream_position <windowing.nexmark.NexmarkConfig.stream_position>`);
      with out-of-order groups it differs from the event number;
    - ``arrival_time``: the time of that position at the configured rate, a ``timestamp``:
      when the reference generator emits the event (its wall-clock time, relative to its
      start), while the event carries the time of its number in ``date_time``;
    - ``micro_batch`` (with ``events_per_batch``): the micro-batch file of
      :meth:`NexmarkGenerator.write_micro_batches
      <windowing.spark.nexmark.NexmarkGenerator.write_micro_batches>` holding the event, so a
      batch replay with it as arrival order sees the watermarks a stream of those files sees.

    Example::

        bids = with_arrival(generator.bids(with_event_number=True), generator.config)
        # q12's processing time in batch: the arrival time
    """
    if "event_number" not in frame.columns:
        msg = (
            "with_arrival: frame needs the event_number column (generate it with "
            f"with_event_number=True); it has {frame.columns}"
        )
        raise ValueError(msg)
    if events_per_batch is not None and (
        isinstance(events_per_batch, bool) or not isinstance(events_per_batch, int)
    ):
        msg = f"with_arrival: events_per_batch must be an int >= 1, got {events_per_batch!r}"
        raise TypeError(msg)
    if events_per_batch is not None and events_per_batch < 1:
        msg = f"with_arrival: events_per_batch must be an int >= 1, got {events_per_batch}"
        raise ValueError(msg)
    position = stream_position(F.col("event_number"), config)
    delay = config.inter_event_delay_us
    millis = F.lit(config.base_time) + integral_div(F.col(STREAM_POSITION) * delay, 1000)
    out = frame.withColumn(STREAM_POSITION, position).withColumn(
        ARRIVAL_TIME, F.timestamp_millis(millis)
    )
    if events_per_batch is not None:
        out = out.withColumn(MICRO_BATCH, integral_div(F.col(STREAM_POSITION), events_per_batch))
    return out


def stream_position(number: Column, config: NexmarkConfig) -> Column:
    """The stream position of the event ``number`` (a column), as
    :meth:`NexmarkConfig.stream_position <windowing.nexmark.NexmarkConfig.stream_position>`."""
    size = config.out_of_order_group_size
    if size == 1:
        return number
    group = integral_div(number, size) * size
    # offset * inverse < size**2: a bigint for groups of fewer than 3 * 10**9 events
    return group + F.pmod((number - group) * F.lit(config.out_of_order_inverse), F.lit(size))
