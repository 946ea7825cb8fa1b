"""The Nexmark window queries in Spark's own terms (``window``, ``session_window``, joins),
the comparison for :mod:`windowing.nexmark_queries`: each gives the columns the comparison
needs, named as that module's results name them.

They follow the Nexmark project's Flink SQL queries, in Spark's windows (start inclusive, end
exclusive, as Flink's). Where Spark cannot express a query on a stream (an aggregate joined
back to its input: q5, q7, q8), the function refuses a streaming DataFrame; q11 and q12 run
on a stream with a watermark.

Example::

    from windowing.spark.nexmark.native import native_q5

    native_q5(generator.bids()).show()  # window_start, window_end, auction, num
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F  # noqa: N812 - the PySpark convention

__all__ = ["largest", "native_q5", "native_q7", "native_q8", "native_q11", "native_q12"]

_TEN_SECONDS = "10 seconds"


def _batch_only(query: str, *frames: DataFrame) -> None:
    if any(frame.isStreaming for frame in frames):
        msg = (
            f"{query}: Spark cannot run it on a stream (an aggregate joined back to the rows "
            "it aggregates); give static DataFrames"
        )
        raise ValueError(msg)


def _window_bounds() -> list[Column]:
    """Spark's ``window`` struct as the library's ``window_start``, ``window_end``."""
    return [F.col("window.start").alias("window_start"), F.col("window.end").alias("window_end")]


def largest(column: str) -> Column:
    """``max(column) AS column``: the aggregate q7 compares bids with, in Spark's terms and in
    the library's (:func:`windowing.nexmark_queries.q7_highest_bid`)."""
    return F.max(column).alias(column)


def native_q5(bids: DataFrame) -> DataFrame:
    """q5 as Flink's SQL writes it: the bids per auction and hopping window (10 s every
    2 s), joined with the largest such count per window. Columns: ``window_start``,
    ``window_end`` (the hopping window), ``auction``, ``num``."""
    _batch_only("native_q5", bids)
    hopping = F.window("date_time", _TEN_SECONDS, "2 seconds").alias("window")
    counts = bids.groupBy("auction", hopping).agg(F.count("*").alias("num"))
    largest = counts.groupBy("window").agg(F.max("num").alias("max_num"))
    top = counts.join(largest, "window").where(F.col("num") >= F.col("max_num"))
    return top.select(*_window_bounds(), "auction", "num")


def native_q7(bids: DataFrame) -> DataFrame:
    """q7: the bids whose price is the largest of their tumbling 10 s window (the window's
    maximum joined back to the bids by window and price). Columns: ``window_start``,
    ``window_end``, ``auction``, ``bidder``, ``price``, ``date_time``, ``extra``.

    Flink's SQL joins on ``date_time BETWEEN window_end - 10 s AND window_end``, which also
    matches a bid exactly at ``window_end`` (of the next window) with this window's maximum;
    here a bid is compared with its own window only."""
    _batch_only("native_q7", bids)
    windowed = bids.withColumn("window", F.window("date_time", _TEN_SECONDS))
    highest = windowed.groupBy("window").agg(largest("price"))
    top = windowed.join(highest, ["window", "price"])
    return top.select(*_window_bounds(), "auction", "bidder", "price", "date_time", "extra")


def native_q8(persons: DataFrame, auctions: DataFrame) -> DataFrame:
    """q8: the people who joined in a tumbling 10 s window in which they also created an
    auction, once per window (Flink's SQL: the distinct people and the distinct sellers of
    each window, joined). Columns: ``id``, ``window_start``, ``window_end``, ``name``."""
    _batch_only("native_q8", persons, auctions)
    window = F.window("date_time", _TEN_SECONDS).alias("window")
    people = persons.select("id", "name", window).distinct()
    sellers = auctions.select(F.col("seller").alias("id"), window).distinct()
    joined = people.join(sellers, ["id", "window"])
    return joined.select("id", *_window_bounds(), "name")


def native_q11(bids: DataFrame, *, watermark_delay: str | None = None) -> DataFrame:
    """q11: the bids of each bidder per session (``session_window``, gap 10 s). Columns:
    ``bidder``, ``window_start``, ``window_end``, ``count``.

    On a stream, ``watermark_delay`` (e.g. ``"0 seconds"``) defines Spark's watermark on
    ``date_time`` (required there: Spark emits a session once the watermark passes it)."""
    source = _watermarked(bids, "date_time", watermark_delay, "native_q11")
    sessions = F.session_window("date_time", _TEN_SECONDS).alias("window")
    counts = source.groupBy("bidder", sessions).agg(F.count("*").alias("count"))
    return counts.select("bidder", *_window_bounds(), "count")


def native_q12(
    bids: DataFrame, *, processing_time: str, watermark_delay: str | None = None
) -> DataFrame:
    """q12: the bids of each bidder per tumbling 10 s window of the ``processing_time``
    column (a batch has no clock: see
    :func:`windowing.nexmark_queries.q12_processing_time_windows`). Columns: ``bidder``,
    ``window_start``, ``window_end``, ``count``.

    On a stream, ``watermark_delay`` defines Spark's watermark on that column (Spark's
    windows of a stream close on a watermark only: its processing time is not a clock that
    closes windows)."""
    if processing_time not in bids.columns:
        msg = (
            f"native_q12: unknown processing_time column {processing_time!r}; bids has "
            f"{bids.columns}"
        )
        raise ValueError(msg)
    source = _watermarked(bids, processing_time, watermark_delay, "native_q12")
    window = F.window(processing_time, _TEN_SECONDS).alias("window")
    counts = source.groupBy("bidder", window).agg(F.count("*").alias("count"))
    return counts.select("bidder", *_window_bounds(), "count")


def _watermarked(frame: DataFrame, column: str, delay: str | None, query: str) -> DataFrame:
    """``frame`` with Spark's watermark on ``column`` when it is a stream."""
    if not frame.isStreaming:
        return frame
    if delay is None:
        msg = f"{query}: a stream needs watermark_delay (e.g. '0 seconds') for Spark's watermark"
        raise ValueError(msg)
    return frame.withWatermark(column, delay)
