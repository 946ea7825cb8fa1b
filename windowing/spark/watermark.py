"""The watermark a streaming run would have seen, computed for every row of a batch.

With an arrival-order column, a row arriving at ``a`` sees the watermark generated from every
row that arrived strictly before it, *over all keys*::

    watermark(a) = max(event_time of rows with arrival < a) - delay - 1     (MIN if none)

(Flink's ``BoundedOutOfOrderness``; Spark's ``withWatermark`` gives the same set of late rows,
see ``docs/spark.md``). This module computes the ``max(...)`` part, a prefix maximum over the
whole input in arrival order, without moving all rows to one partition:

1. the arrival values are cut into ``buckets`` ranges at approximate quantiles
   (``percentile_approx``, one aggregate used as a scalar subquery), so equal arrival values
   share a bucket and every row of bucket ``b`` arrived after every row of buckets ``< b``;
2. the maximum event time of each bucket is aggregated (at most ``buckets`` rows) and turned
   into "maximum of all earlier buckets" by a window function over that tiny table, which is
   then broadcast;
3. a window function partitioned by bucket, ordered by arrival, with the range frame
   ``UNBOUNDED PRECEDING .. 1 PRECEDING`` (strictly earlier arrivals) gives the maximum inside
   the bucket; the result is the larger of the two.

Everything stays lazy (one plan, no driver round trip). The quantiles only balance the work: the
result is exact whatever they are, so it does not depend on partitioning either.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F  # noqa: N812 - the PySpark convention

__all__ = ["add_prefix_max", "add_prefix_max_single_partition"]


def _c(name: str) -> Column:
    return F.col("`" + name.replace("`", "``") + "`")


def _bucket_index(order: Column, bounds: Column, lo: int, hi: int) -> Column:
    """How many of the (ascending) ``bounds`` are ``<= order``, known to be in ``[lo, hi]``:
    a binary search written as nested CASE expressions (code-generated, ``log2(buckets)``
    comparisons per row; a higher-order ``size(filter(bounds, ...))`` measured ~2x slower)."""
    if lo == hi:
        return F.lit(lo)
    mid = (lo + hi + 1) // 2
    return F.when(
        order >= F.element_at(bounds, mid), _bucket_index(order, bounds, mid, hi)
    ).otherwise(_bucket_index(order, bounds, lo, mid - 1))


def add_prefix_max(
    df: DataFrame, *, order: str, value: str, out: str, buckets: int, accuracy: int = 1_000
) -> DataFrame:
    """``df`` plus column ``out``: the maximum of ``value`` over all rows whose ``order`` is
    strictly smaller (``null`` when there is none). Rows with a null ``order`` take part in
    nothing (their ``out`` is unspecified); null ``value`` s are ignored.

    ``order`` must be an integral column. Needs two shuffles of the rows (by bucket) plus two
    tiny aggregates; no single-partition step.
    """
    buckets = max(1, int(buckets))
    bucket = "__pw_bucket"
    prev = "__pw_prev"
    known = F.when(_c(order).isNotNull(), _c(value))
    if buckets == 1:
        with_bucket = df.withColumn(bucket, F.lit(0))
        with_prev = with_bucket.withColumn(prev, F.lit(None).cast("long"))
    else:
        probs = [i / buckets for i in range(1, buckets)]
        # One row of bucket bounds, used as a scalar subquery (computed once).
        bounds = df.agg(F.percentile_approx(_c(order), probs, accuracy)).scalar()
        with_bucket = df.withColumn(bucket, _bucket_index(_c(order), bounds, 0, buckets - 1))
        # Maximum per bucket (at most `buckets` rows), then the maximum over earlier buckets
        # with a window over that tiny table.
        earlier = (
            with_bucket.groupBy(bucket)
            .agg(F.max(known).alias("__pw_bmax"))
            .withColumn(
                prev,
                F.max("__pw_bmax").over(
                    # one partition on purpose (a tiny table); named, so Spark does not
                    # warn "No Partition Defined for Window operation"
                    Window.partitionBy(F.lit(0))
                    .orderBy(bucket)
                    .rowsBetween(Window.unboundedPreceding, -1)
                ),
            )
            .drop("__pw_bmax")
        )
        with_prev = with_bucket.join(F.broadcast(earlier), bucket, "left")
    frame = (
        Window.partitionBy(bucket)
        .orderBy(_c(order).asc_nulls_last())
        .rangeBetween(Window.unboundedPreceding, -1)
    )
    return with_prev.withColumn(out, F.greatest(_c(prev), F.max(known).over(frame))).drop(
        bucket, prev
    )


def add_prefix_max_single_partition(
    df: DataFrame, *, order: str, value: str, out: str
) -> DataFrame:
    """The same as :func:`add_prefix_max` with one unpartitioned window (every row moves to
    a single partition). Not used by the runtime; kept for the comparison in
    ``benchmarks/spark_watermark.py`` and ``docs/spark.md``."""
    known = F.when(_c(order).isNotNull(), _c(value))
    frame = Window.orderBy(_c(order).asc_nulls_last()).rangeBetween(Window.unboundedPreceding, -1)
    return df.withColumn(out, F.max(known).over(frame))
