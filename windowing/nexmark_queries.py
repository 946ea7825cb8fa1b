"""The Nexmark window queries written with this library, as a user writes them: q5 hot items,
q7 highest bid, q8 new users, q11 user sessions, q12 processing-time windows, and
:func:`q7_late`, q7 with allowed lateness, a late side output and early firings.

Each query takes the DataFrames of the events it reads (static or streaming, from
:mod:`windowing.spark.nexmark`: ``generator.bids()``, or
:func:`~windowing.spark.nexmark.tables.events_of_kind` of a replayed events table) and
returns the last stage's :class:`~windowing.results.WindowingResult`: in batch read
``result.results``; in streaming hand it to
:func:`~windowing.spark.streaming.write_results_and_late` (a query of several stages runs as
one streaming query). The windows are the Nexmark project's Flink SQL queries' (10 s, and
hopping 10 s every 2 s); how each result differs from Flink's and from Spark's own windows:
``docs/nexmark.md``. The same queries in Spark's own terms, for comparison:
:mod:`windowing.spark.nexmark.native`.

Example::

    from windowing.nexmark_queries import q5_hot_items
    from windowing.spark.nexmark import NexmarkConfig, NexmarkGenerator

    bids = NexmarkGenerator(spark, NexmarkConfig(num_events=1_000_000)).bids()
    q5_hot_items(bids).results.show()  # window_start, window_end, auction, num, max_timestamp

This module imports no pyspark: the terminal calls hand the streams to the Spark runtime, and
q7 takes its aggregate column from :mod:`windowing.spark.nexmark.native` when it is built.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from windowing.assigners import (
    EventTimeSessionWindows,
    HoppingEventTimeWindows,
    TumblingEventTimeWindows,
    TumblingProcessingTimeWindows,
)
from windowing.functions.base import (
    AggregateFunction,
    ProcessWindowFunction,
    ProcessWindowFunctionContext,
)
from windowing.functions.vectorized_process import VectorizedProcessWindowFunction
from windowing.records import OutputTag
from windowing.stream import DataStream, MonotonousTimestamps, WatermarkStrategy
from windowing.time import Duration
from windowing.triggers import ContinuousEventTimeTrigger

if TYPE_CHECKING:
    from pyspark.sql import DataFrame  # noqa: TID251 - type-only, never imported at runtime

    from windowing.results import WindowingResult

__all__ = [
    "BID_COLUMNS",
    "Q7_LATE_BIDS",
    "QUERIES",
    "EmitRows",
    "RowsWithMaximum",
    "VectorizedRowsWithMaximum",
    "q5_hot_items",
    "q7_highest_bid",
    "q7_late",
    "q8_new_users",
    "q11_user_sessions",
    "q12_processing_time_windows",
]

#: The queries, by the names ``./dev nexmark --queries`` takes.
QUERIES = ("q5", "q7", "q8", "q11", "q12", "q7_late")

#: The bid columns the highest-bid queries return (Flink's q7 returns these).
BID_COLUMNS = ("auction", "bidder", "price", "date_time", "extra")
_BID_SCHEMA = "auction bigint, bidder bigint, price bigint, date_time timestamp, extra string"

#: The late side output of :func:`q7_late`: the bids too late for their window.
Q7_LATE_BIDS = OutputTag("q7_late_bids")

_TEN_SECONDS = "10 seconds"
_EVENT_TIME = "date_time"

#: Rows kept by :class:`RowsWithMaximum`: the largest value, and the rows that have it.
Maxima = tuple[Any, tuple[tuple[Any, ...], ...]]


class RowsWithMaximum(AggregateFunction[Any, Maxima, tuple[tuple[Any, ...], ...]]):
    """The rows of a window with the largest value of ``field``, all of them on a tie, as
    tuples of ``columns`` (the Nexmark queries' "highest bids" and "hottest auctions").

    The accumulator holds only the largest value and its rows, so a window's state stays
    small whatever its size. Rows whose ``field`` is null are skipped. The tied rows come in
    the order the window received them. Pair it with :class:`EmitRows` to get one result
    row per tuple.

    Parameters
    ----------
    field
        The column compared.
    columns
        The columns of each kept row, in order.

    Examples
    --------
    The highest bids of each window::

        stream.window_all(TumblingEventTimeWindows("10 seconds")).aggregate(
            RowsWithMaximum("price", ("auction", "price")),
            EmitRows(),
            output_schema="auction bigint, price bigint",
        )
    """

    def __init__(self, field: str, columns: Sequence[str]) -> None:
        _check_field_and_columns("RowsWithMaximum", field, columns)
        self.field = field
        self.columns = tuple(columns)

    def create_accumulator(self) -> Maxima:
        return (None, ())

    def add(self, value: Any, accumulator: Maxima) -> Maxima:
        candidate = value[self.field]
        if candidate is None:
            return accumulator
        best, rows = accumulator
        row = tuple(value[c] for c in self.columns)
        if best is None or candidate > best:
            return (candidate, (row,))
        if candidate == best:
            return (best, (*rows, row))
        return accumulator

    def get_result(self, accumulator: Maxima) -> tuple[tuple[Any, ...], ...]:
        return accumulator[1]

    def merge(self, a: Maxima, b: Maxima) -> Maxima:
        if a[0] is None:
            return b
        if b[0] is None or a[0] > b[0]:
            return a
        if b[0] > a[0]:
            return b
        return (a[0], (*a[1], *b[1]))


def _check_field_and_columns(owner: str, field: object, columns: object) -> None:
    if not isinstance(field, str) or not field:
        msg = f"{owner}: field must be a column name, got {field!r}"
        raise ValueError(msg)
    if (
        isinstance(columns, str)
        or not isinstance(columns, Sequence)
        or not columns
        or not all(isinstance(c, str) for c in columns)
    ):
        msg = f"{owner}: columns must be a sequence of column names, got {columns!r}"
        raise ValueError(msg)


class EmitRows(ProcessWindowFunction[Iterable[Any], Any, Any, Any]):
    """One result row per row of the window's incremental result (an iterable of rows, as
    :class:`RowsWithMaximum` gives)."""

    def process(
        self, key: Any, context: ProcessWindowFunctionContext, elements: Iterable[Iterable[Any]]
    ) -> Iterator[Any]:
        for rows in elements:
            yield from rows


class VectorizedRowsWithMaximum(VectorizedProcessWindowFunction):
    """The rows of a window with the largest value of ``field``, all of them on a tie, as
    the output columns ``names`` taken from ``columns``: what :class:`RowsWithMaximum` and
    :class:`EmitRows` give, computed on the window's rows as one Arrow table (one call per
    window in a batch replay in event-time order, where the pair above makes one Python call
    per row). Rows whose ``field`` is null or NaN are skipped; the tied rows keep the
    window's order. It keeps the window's rows until it fires, where
    :class:`RowsWithMaximum` keeps only the largest value's: in a streaming query, whose
    state holds the open windows, prefer that pair.

    Example::

        stream.window_all(TumblingEventTimeWindows("10 seconds")).process(
            VectorizedRowsWithMaximum("price", ("auction", "price")),
            output_schema="auction bigint, price bigint",
        )
    """

    def __init__(
        self, field: str, columns: Sequence[str], names: Sequence[str] | None = None
    ) -> None:
        _check_field_and_columns("VectorizedRowsWithMaximum", field, columns)
        self.field = field
        self.columns = tuple(columns)
        self.names = self.columns if names is None else tuple(names)
        if (
            len(self.names) != len(self.columns)
            or not all(isinstance(n, str) for n in self.names)
            or len(set(self.names)) != len(self.names)
        ):
            msg = (
                f"VectorizedRowsWithMaximum: names must be {len(self.columns)} distinct column "
                f"names, one per column of {self.columns}, got {names!r}"
            )
            raise ValueError(msg)

    def process(self, key: Any, context: ProcessWindowFunctionContext, batch: Any) -> Any:
        values = batch.column(self.field)
        best = pc.max(values)
        if not best.is_valid:
            return None  # no row, or only nulls
        top = batch.filter(pc.equal(values, best))  # a null compares to null: dropped
        return pa.table({n: top.column(c) for n, c in zip(self.names, self.columns, strict=True)})


def _stream(
    frame: DataFrame,
    columns: Sequence[str],
    *,
    watermark: WatermarkStrategy | None,
    arrival_order: str | Sequence[str] | None,
    processing_time: str | None = None,
) -> DataStream:
    """``frame``'s ``columns`` (and its time columns) as a stream in event time ``date_time``."""
    arrival = [arrival_order] if isinstance(arrival_order, str) else list(arrival_order or ())
    extra = [c for c in (*arrival, processing_time) if c is not None and c not in columns]
    return DataStream.from_dataframe(
        frame.select(*columns, *extra),
        event_time=_EVENT_TIME,
        watermark=watermark if watermark is not None else MonotonousTimestamps(),
        arrival_order=arrival_order,
        processing_time=processing_time,
    )


def q5_hot_items(
    bids: DataFrame,
    *,
    watermark: WatermarkStrategy | None = None,
    arrival_order: str | Sequence[str] | None = None,
) -> WindowingResult:
    """Nexmark q5, hot items: the auctions with the most bids in each hopping window of 10 s
    every 2 s (all of them on a tie).

    Two consecutive windowed operations: the bids per auction and hopping window
    (``count``, a native Spark plan in batch), then, over those counts, the largest per
    window (in a tumbling 2 s ``window_all`` holding the counts of the hopping windows ending
    at its end): in a static batch :class:`VectorizedRowsWithMaximum`, one call per window
    on its rows as an Arrow table; on a stream :class:`RowsWithMaximum`, whose state keeps
    only the largest counts. Results:
    ``window_start``, ``window_end`` (the 2 s window: the hopping window is the 10 s ending
    at ``window_end``), ``auction``, ``num`` (its bids), ``max_timestamp``.

    Flink's SQL form (the largest count per window joined back to the counts, as
    :func:`q7_highest_bid` does in batch) measured slower here: both sides of that join
    recompute the hopping counts, and building the join over the counts' plan costs Spark's
    analyzer seconds (``docs/nexmark.md``).

    Parameters
    ----------
    bids
        The bids (``auction``, ``date_time``; static or streaming).
    watermark, arrival_order
        As :meth:`DataStream.from_dataframe <windowing.stream.DataStream.from_dataframe>`.

    Example::

        q5_hot_items(generator.bids()).results.orderBy("window_end").show()
    """
    counts = (
        _stream(bids, ("auction", _EVENT_TIME), watermark=watermark, arrival_order=arrival_order)
        .key_by("auction")
        .window(HoppingEventTimeWindows(_TEN_SECONDS, "2 seconds"))
        .count()
    )
    per_window = _later(counts.results.select("auction", "count", "max_timestamp"))
    windows = per_window.window_all(TumblingEventTimeWindows("2 seconds"))
    schema = "auction bigint, num bigint"
    if not bids.isStreaming:
        # the second stage is replayed in event-time order (the counts have no arrival
        # order): the batch replay computes each window's rows as one table, a call a window
        maxima = VectorizedRowsWithMaximum("count", ("auction", "count"), ("auction", "num"))
        return windows.process(maxima, output_schema=schema)
    # a stream keeps only each open window's largest count and its auctions
    return windows.aggregate(
        RowsWithMaximum("count", ("auction", "count")), EmitRows(), output_schema=schema
    )


def q7_highest_bid(
    bids: DataFrame,
    *,
    watermark: WatermarkStrategy | None = None,
    arrival_order: str | Sequence[str] | None = None,
) -> WindowingResult:
    """Nexmark q7, highest bid: the bids with the highest price of each tumbling 10 s window
    (all of them on a tie).

    A static batch without an arrival order takes Flink's SQL form, two native Spark plans:
    the highest price per window (``window_all(...).agg(F.max("price").alias("price"))``), then the
    bids joined with it per window on the price (a window join's
    :meth:`~windowing.joins.JoinWithWindow.select`). With an arrival order or on a stream,
    two consecutive windowed operations with :class:`RowsWithMaximum` (per auction, then per
    window: each holds a row per auction, where a join would hold every bid). Results
    (by name: the two forms order them differently): ``window_start``, ``window_end``,
    ``auction``, ``bidder``, ``price``, ``date_time``, ``extra``, ``max_timestamp``.

    Parameters
    ----------
    bids
        The bids (static or streaming).
    watermark, arrival_order
        As :meth:`DataStream.from_dataframe <windowing.stream.DataStream.from_dataframe>`.
    """
    stream = _stream(bids, BID_COLUMNS, watermark=watermark, arrival_order=arrival_order)
    windows = TumblingEventTimeWindows(_TEN_SECONDS)
    if not _in_event_time_order(bids, arrival_order):
        per_auction = (
            stream.key_by("auction")
            .window(windows)
            .aggregate(
                RowsWithMaximum("price", BID_COLUMNS[1:]),
                EmitRows(),
                output_schema="bidder bigint, price bigint, date_time timestamp, extra string",
            )
        )
        highest = per_auction.results.select(*BID_COLUMNS, "max_timestamp")
        return (
            DataStream.from_dataframe(highest, event_time="max_timestamp")
            .window_all(windows)
            .aggregate(RowsWithMaximum("price", BID_COLUMNS), EmitRows(), output_schema=_BID_SCHEMA)
        )
    from windowing.spark.nexmark.native import largest

    # a window whose bids all lack a price has no highest bid (RowsWithMaximum skips nulls)
    prices = stream.window_all(windows).agg(largest("price")).results.where("price IS NOT NULL")
    return (
        stream.join(_later(prices.select("price", "max_timestamp")))
        .where("price")
        .equal_to("price")
        .window(windows)
        .select(*[f"left.{c}" for c in BID_COLUMNS if c != "price"])
    )


def _in_event_time_order(frame: DataFrame, arrival_order: object) -> bool:
    """Whether ``frame`` is a static batch replayed in event-time order (no arrival order):
    there the window join runs natively (q7 and q8 take Flink's SQL form, joining windows'
    results back to their rows)."""
    return not frame.isStreaming and arrival_order is None


def _later(results: DataFrame) -> DataStream:
    """A window's results as the input of a later window (event time ``max_timestamp``)."""
    return DataStream.from_dataframe(results, event_time="max_timestamp")


def q8_new_users(
    persons: DataFrame,
    auctions: DataFrame,
    *,
    watermark: WatermarkStrategy | None = None,
    arrival_order: str | Sequence[str] | None = None,
) -> WindowingResult:
    """Nexmark q8, new users: the people who joined and created an auction in the same
    tumbling 10 s window, once per window.

    Flink's q8 joins the people with the distinct sellers of each window. A static batch
    without an arrival order does that with native Spark plans: the auctions per seller and
    window (``count``: one row each), joined with the people per window on the id (a window
    join's :meth:`~windowing.joins.JoinWithWindow.select`). With an arrival order or on a
    stream, a window coGroup of the people (``id``) with the auctions (``seller``) gives the
    person when the seller's auctions in the window are not empty (see
    :func:`q7_highest_bid`). Results: ``id``, ``window_start``, ``window_end``, ``name``,
    ``max_timestamp``.

    Parameters
    ----------
    persons, auctions
        The people and the auctions (static, or both streaming).
    watermark, arrival_order
        Each input's, as :meth:`DataStream.from_dataframe
        <windowing.stream.DataStream.from_dataframe>` (both inputs need the arrival order).
    """
    people = _stream(
        persons, ("id", "name", _EVENT_TIME), watermark=watermark, arrival_order=arrival_order
    )
    sellers = _stream(
        auctions, ("seller", _EVENT_TIME), watermark=watermark, arrival_order=arrival_order
    )
    windows = TumblingEventTimeWindows(_TEN_SECONDS)
    if not _in_event_time_order(persons, arrival_order):
        return (
            people.co_group(sellers)
            .where("id")
            .equal_to("seller")
            .window(windows)
            .apply(_new_users, output_schema="name string")
        )
    # one row per seller and window, joined with the people of the window
    active = sellers.key_by("seller").window(windows).count().results
    return (
        people.join(_later(active.select("seller", "max_timestamp")))
        .where("id")
        .equal_to("seller")
        .window(windows)
        .select("left.name")
    )


def _new_users(people: list[Any], auctions: list[Any]) -> Iterator[str]:
    """The names of the people of a window and key when the key sold something in the
    window (one output column: a bare value)."""
    if auctions:
        for person in people:
            yield person.name


def q11_user_sessions(
    bids: DataFrame,
    *,
    watermark: WatermarkStrategy | None = None,
    arrival_order: str | Sequence[str] | None = None,
) -> WindowingResult:
    """Nexmark q11, user sessions: the bids of each bidder's sessions, a session ending after
    10 s without a bid (event-time session windows). Results: ``bidder``, ``window_start``
    (the session's first bid), ``window_end`` (its last bid + 10 s), ``count``,
    ``max_timestamp``."""
    return (
        _stream(bids, ("bidder", _EVENT_TIME), watermark=watermark, arrival_order=arrival_order)
        .key_by("bidder")
        .window(EventTimeSessionWindows(_TEN_SECONDS))
        .count()
    )


def q12_processing_time_windows(bids: DataFrame, *, processing_time: str | None) -> WindowingResult:
    """Nexmark q12, processing-time windows: the bids of each bidder per tumbling 10 s window
    of processing time. Results: ``bidder``, ``window_start``, ``window_end`` (processing
    time), ``count``, ``max_timestamp``.

    Each row is assigned when it arrives, to the window of its key's processing time then:
    the largest ``processing_time`` of the key's rows so far (each key's clock is its own).
    The rows are taken in the order of that column (there is no ``arrival_order``: any
    other order would let a later row move the clock before an earlier one), so each bid
    counts in the window of its own arrival time, as in Flink.

    Parameters
    ----------
    bids
        The bids.
    processing_time
        The column holding when each bid arrived (Flink's ``PROCTIME()``). A batch has no
        clock of its own, so it needs one: for the generator's events,
        :func:`~windowing.spark.nexmark.tables.with_arrival`'s ``arrival_time``, the time
        the reference generator emits the event. A stream may give ``None``: the wall clock
        of each micro-batch, as Flink's (results then depend on when the query runs, and the
        query never ends by itself: see ``docs/spark.md``, processing time in streaming).
    """
    return (
        _stream(
            bids,
            ("bidder", _EVENT_TIME),
            watermark=None,
            arrival_order=None,
            processing_time=processing_time,
        )
        .key_by("bidder")
        .window(TumblingProcessingTimeWindows(_TEN_SECONDS))
        .count()
    )


def q7_late(
    bids: DataFrame,
    *,
    watermark: WatermarkStrategy,
    arrival_order: str | Sequence[str] | None,
    allowed_lateness: Duration = "5 seconds",
    early_firing_interval: Duration = "2 seconds",
) -> WindowingResult:
    """q7 as no engine runs it natively: the highest bids of each tumbling 10 s window, fired
    early every ``early_firing_interval`` of event time while the window is open
    (:class:`~windowing.triggers.ContinuousEventTimeTrigger`), on time when the watermark
    passes its end, and again for each bid late by less than ``allowed_lateness``; later
    bids go to the late side output :data:`Q7_LATE_BIDS` (``result.get_side_output``).

    Results: ``window_start``, ``window_end``, the bid's columns (:data:`BID_COLUMNS`),
    ``max_timestamp``, ``pane_index`` and ``timing`` (``EARLY``, ``ON_TIME``, ``LATE``:
    every firing holds the window's highest bids so far; the last one is the window's final
    value, :func:`~windowing.spark.final_values`).

    Parameters
    ----------
    bids
        The bids (static or streaming), e.g. of a generator with out-of-order groups.
    watermark
        How the watermark follows the bids' times.
    arrival_order
        In batch, the order the bids arrived in (without one nothing is late and every
        window fires once, at the end): the generator's ``stream_position``
        (:func:`~windowing.spark.nexmark.tables.with_arrival`) replays the stream bid by
        bid, ``micro_batch`` as a stream of its micro-batch files sees it.
    allowed_lateness, early_firing_interval
        Durations (``int`` ms, ``timedelta`` or e.g. ``"5 seconds"``).
    """
    return (
        _stream(bids, BID_COLUMNS, watermark=watermark, arrival_order=arrival_order)
        .window_all(TumblingEventTimeWindows(_TEN_SECONDS))
        .trigger(ContinuousEventTimeTrigger(early_firing_interval))
        .allowed_lateness(allowed_lateness)
        .side_output_late_data(Q7_LATE_BIDS)
        .pane_info()
        .aggregate(RowsWithMaximum("price", BID_COLUMNS), EmitRows(), output_schema=_BID_SCHEMA)
    )
