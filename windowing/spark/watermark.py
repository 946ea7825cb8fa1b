"""The watermark a streaming run would have seen, computed for every row of a batch.

With an arrival-order column, a row arriving at ``a`` sees the watermark generated from every
row that arrived strictly before it, *over all keys*::

    watermark(a) = max(event_time of rows with arrival < a) - delay - 1     (MIN if none)

(Flink's ``BoundedOutOfOrderness``; Spark's ``withWatermark`` gives the same set of late rows,
see ``docs/spark.md``). The ``max(...)`` part is a prefix maximum over the whole input in
arrival order. Two ways to get it, both lazy (one plan, no driver round trip) and exact
whatever the partitioning:

* :func:`add_prefix_max` gives every row its prefix maximum (the batch replay needs the exact
  watermark of each row): arrival buckets from approximate quantiles, the maximum inside each
  bucket from a window function ordered by arrival, and the maxima of earlier buckets from
  one summary row per bucket sent to every key group. Three shuffles, no single-partition
  step.
* :class:`WindowCutoffs` answers "has the watermark passed this tumbling window's end (or its
  cleanup time) when this row arrived?" without computing any row's watermark. The
  watermark passes ``end + delay`` exactly when some earlier row has an event time
  ``>= end + delay``, so for each window the first such arrival (a *cutoff*) decides every
  row of the window: a row is behind iff it arrived after the cutoff. The cutoffs come from
  one small aggregate (the earliest arrival per window of shifted event times, then minima
  over later windows), broadcast and joined by window. :meth:`WindowCutoffs.prefix_max`
  gives the exact prefix maximum of a few rows (late rows) from the same table: the maximum
  lies in the latest window with an earlier arrival, so each such row meets that window's
  rows in a window function partitioned by window.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F  # noqa: N812 - the PySpark convention

from windowing.time import MAX_TIMESTAMP, MIN_TIMESTAMP

__all__ = [
    "ONE_TASK_BYTES",
    "WindowCutoffs",
    "add_prefix_max",
    "add_prefix_max_single_partition",
    "count_at_most",
    "element_or_null",
    "one_task_enough",
    "shifted_back",
    "watermark_of",
]

#: Inputs Spark estimates at most this large aggregate the arrival cutoffs in one task.
ONE_TASK_BYTES = 64 << 20


def one_task_enough(df: DataFrame) -> bool:
    """Whether Spark's own estimate of ``df``'s size (the optimizer's statistics, no job) is
    at most :data:`ONE_TASK_BYTES`: then the arrival cutoffs are aggregated in one task,
    which saves a Spark job; larger inputs (and Spark Connect, which has no estimate)
    aggregate in parallel."""
    try:
        jdf = df._jdf
        size = int(str(jdf.queryExecution().optimizedPlan().stats().sizeInBytes()))
    except Exception:  # Spark Connect, or no statistics
        return False
    return 0 <= size <= ONE_TASK_BYTES


def _c(name: str) -> Column:
    return F.col("`" + name.replace("`", "``") + "`")


def _long(value: int | None) -> Column:
    return F.lit(value).cast("long")


def shifted_back(t: Column, amount: int) -> Column:
    """``t - amount`` (``amount >= 0``), null where it would fall below ``MIN_TIMESTAMP``
    (no overflow)."""
    assert amount >= 0
    if amount == 0:
        return t
    if amount > MAX_TIMESTAMP - MIN_TIMESTAMP:
        return _long(None)
    floor = MIN_TIMESTAMP + amount  # a valid bigint: amount <= MAX - MIN
    if amount <= MAX_TIMESTAMP:
        return F.when(t >= F.lit(floor), t - F.lit(amount))
    # t - amount = (t - floor) + MIN, each step within bigint
    return F.when(t >= F.lit(floor), (t - F.lit(floor)) + F.lit(MIN_TIMESTAMP))


def watermark_of(prefix_max: Column, delay: int) -> Column:
    """The watermark after seeing ``prefix_max`` (Flink's ``max - delay - 1``, saturating
    at ``MIN_TIMESTAMP``; ``MIN_TIMESTAMP`` when null)."""
    return F.coalesce(shifted_back(prefix_max, delay + 1), _long(MIN_TIMESTAMP))


#: Binary-search steps: enough for any array Spark can hold (fewer than 2**31 elements).
_SEARCH_STEPS = 31


def count_at_most(df: DataFrame, values: str, value: Column, out: str) -> DataFrame:
    """``df`` plus column ``out``: how many elements of the ascending array column ``values``
    are ``<= value`` (0 when ``value`` is null). A binary search written as one projection
    per step (code-generated, ``O(log n)`` per row; a higher-order function would be
    interpreted). The last step holds a nondeterministic term, so Spark's optimizer does not
    push later filters into the steps (expanding them would double the expression per step)."""
    n = F.size(_c(values))
    df = df.withColumn(out, F.lit(0))
    for j in reversed(range(_SEARCH_STEPS)):
        nxt = _c(out) + F.lit(1 << j)
        within = (nxt <= n) & (F.try_element_at(_c(values), nxt) <= value)
        df = df.withColumn(out, F.when(within, nxt).otherwise(_c(out)))
    return df.withColumn(out, _c(out) + F.spark_partition_id() * F.lit(0))


def element_or_null(values: Column, index: Column) -> Column:
    """The ``index``-th element (1-based) of ``values``, null for 0 or past the end."""
    return F.when(index > 0, F.try_element_at(values, index))


@dataclass(frozen=True)
class WindowCutoffs:
    """The arrival cutoffs of a tumbling assigner's windows (see the module docstring).

    For a window ``k`` (its grouping value), with ``end`` its end:

    * ``fire_cutoff(k)``: the earliest arrival of a row with event time ``>= end + fire``;
      a row of ``k`` that arrived after it saw a watermark ``>= end - 1`` (the window's end
      had passed), with ``fire = delay``;
    * ``late_cutoff(k)``: the same with ``late = lateness + delay``: a row that arrived after
      it saw a watermark ``>= end - 1 + lateness`` (the window's cleanup time: late).

    Both are null when no row reaches them. A row with event time ``t`` reaches the
    threshold of every window whose grouping value is below ``window_of(t - shift)``, so the
    cutoffs are minima, over later windows, of the earliest arrival per window of ``t -
    shift``: one aggregate of the rows by (window of t, of t - fire, of t - late), a few rows
    per window.

    Attributes
    ----------
    elements
        The rows with an event time (``ts``) and an arrival order (``arrival``).
    window_of
        A window's grouping value from an event time (non-decreasing, null for null).
    fire, late
        The shifts above (``late >= fire >= 0``).
    one_task
        Aggregate in one task, without a shuffle (one Spark job less; the rows' event time
        and arrival are read by one task): for small inputs.
    """

    elements: DataFrame
    ts: str
    arrival: str
    window_of: Callable[[Column], Column]
    fire: int
    late: int
    one_task: bool

    def _cells(self) -> DataFrame:
        """One row per window grouping value ``g`` that holds rows or a shifted event time,
        in one partition: ``own`` (rows of the window), ``c_fire`` / ``c_late`` (the cutoffs
        above), ``first`` (the earliest arrival of the window's rows) and ``earliest`` (its
        minimum over this and later windows)."""
        ts = _c(self.ts)
        rows = self.elements.coalesce(1) if self.one_task else self.elements
        triples = rows.groupBy(
            self.window_of(ts).alias("w"),
            self.window_of(shifted_back(ts, self.fire)).alias("f"),
            self.window_of(shifted_back(ts, self.late)).alias("l"),
        ).agg(F.min(_c(self.arrival)).alias("a"))
        if not self.one_task:
            triples = triples.coalesce(1)  # a few rows per window: no second shuffle

        def cell(g: str, own: bool, fire: bool, late: bool) -> Column:
            a, none = F.col("a"), _long(None)
            return F.struct(
                F.col(g).alias("g"),
                (a if own else none).alias("own_a"),
                (a if fire else none).alias("fire_a"),
                (a if late else none).alias("late_a"),
            )

        cells = (
            triples.select(
                F.inline(
                    F.array(
                        cell("w", True, False, False),
                        cell("f", False, True, False),
                        cell("l", False, False, True),
                    )
                )
            )
            .where(F.col("g").isNotNull())
            .groupBy("g")
            .agg(*[F.min(c).alias(c) for c in ("own_a", "fire_a", "late_a")])
        )
        # one partition already; named so that Spark does not warn "No Partition Defined"
        later = Window.partitionBy(F.lit(0)).orderBy(F.col("g").desc())
        strictly = later.rowsBetween(Window.unboundedPreceding, -1)
        return cells.select(
            "g",
            F.col("own_a").isNotNull().alias("own"),
            F.min("fire_a").over(strictly).alias("c_fire"),
            F.min("late_a").over(strictly).alias("c_late"),
            F.col("own_a").alias("first"),
            F.min("own_a").over(later.rowsBetween(Window.unboundedPreceding, 0)).alias("earliest"),
        )

    def table(self, prefix: str) -> DataFrame:
        """The windows with rows: ``<prefix>w`` (grouping value), ``<prefix>fire``,
        ``<prefix>late`` (the cutoffs); to broadcast and join by window."""
        return (
            self._cells()
            .where("own")
            .select(
                F.col("g").alias(prefix + "w"),
                F.col("c_fire").alias(prefix + "fire"),
                F.col("c_late").alias(prefix + "late"),
            )
        )

    def arrays(self, prefix: str) -> DataFrame:
        """One row: ``<prefix>k`` (the windows with rows, ascending), ``<prefix>fire`` and
        ``<prefix>late`` (their cutoffs), ``<prefix>r`` (the distinct values of ``earliest``
        over those windows, ascending) and ``<prefix>rg`` (the last window of each); to
        broadcast and search (:func:`count_at_most`)."""
        cells = self._cells().where("own")
        by_window = Window.partitionBy(F.lit(0)).orderBy("g")
        ends_run = F.coalesce(F.lead("earliest").over(by_window) != F.col("earliest"), F.lit(True))
        marked = cells.withColumn("run_end", ends_run)
        k = F.sort_array(F.collect_list(F.struct("g", "c_fire", "c_late")))
        runs = F.sort_array(F.collect_list(F.when(F.col("run_end"), F.struct("earliest", "g"))))
        return marked.agg(k.alias("k"), runs.alias("r")).select(
            F.col("k.g").alias(prefix + "k"),
            F.col("k.c_fire").alias(prefix + "fire"),
            F.col("k.c_late").alias(prefix + "late"),
            F.col("r.earliest").alias(prefix + "r"),
            F.col("r.g").alias(prefix + "rg"),
        )

    def prefix_max(
        self, queries: DataFrame, arrays: str, found: str, out: str, payload: list[str]
    ) -> DataFrame:
        """The exact prefix maximum (``out``) of each row of ``queries`` (its arrival in
        column ``arrival``, the arrays of :meth:`arrays` with ``prefix = arrays``; ``found``
        a free column name), with the columns ``payload`` of ``queries``. The maximum event
        time over rows that arrived before ``a`` lies in the latest window holding such a
        row (a later window's rows are all later in event time): the window of the last
        ``earliest`` value below ``a``. Each query meets that window's rows (their arrival
        and event time only) in a window function partitioned by window."""
        arr = _c(self.arrival)
        before = F.when(arr > F.lit(MIN_TIMESTAMP), arr - F.lit(1))  # arrival < a: <= a - 1
        searched = count_at_most(queries, arrays + "r", before, found)
        window = element_or_null(_c(arrays + "rg"), _c(found))
        g, a, t, is_query = "__pw_pg", "__pw_pa", "__pw_pt", "__pw_pq"
        typed = {f.name: f.dataType for f in queries.schema.fields}
        asked = searched.select(
            window.alias(g),
            arr.alias(a),
            _long(None).alias(t),
            F.lit(True).alias(is_query),
            *[_c(p) for p in payload],
        )
        ts = _c(self.ts)
        rows = self.elements.select(
            self.window_of(ts).alias(g),
            arr.alias(a),
            ts.alias(t),
            F.lit(False).alias(is_query),
            *[F.lit(None).cast(typed[p]).alias(p) for p in payload],
        )
        earlier = (
            Window.partitionBy(g)
            .orderBy(F.col(a).asc_nulls_last())
            .rangeBetween(Window.unboundedPreceding, -1)
        )
        return (
            asked.union(rows)
            .withColumn(out, F.max(t).over(earlier))
            .where(F.col(is_query))
            .select(*[_c(p) for p in payload], _c(out))
        )


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
    df: DataFrame,
    *,
    order: str,
    value: str,
    out: str,
    group: str,
    groups: int,
    buckets: int,
    accuracy: int = 1_000,
) -> DataFrame:
    """``df`` plus column ``out``: the maximum of ``value`` over all rows whose ``order`` is
    strictly smaller (``null`` when there is none), hash-partitioned by the integral column
    ``group`` (values in ``[0, groups)``; a later ``groupBy(group)`` needs no shuffle). Rows
    with a null ``order`` take part in nothing (their ``out`` is unspecified); null
    ``value`` s are ignored.

    1. ``percentile_approx`` cuts the ``order`` values into ``buckets`` ranges (one global
       aggregate; its one row is joined to every row without a broadcast). Equal values share
       a bucket; every row of bucket ``b`` comes after every row of buckets ``< b``.
    2. Shuffled by bucket, a window function ordered by ``order`` gives the maximum of
       strictly earlier rows inside the bucket and the bucket's maximum.
    3. The first row of each bucket also becomes one summary row (the bucket's maximum) per
       group; shuffled by group, a running maximum of the summaries of earlier buckets
       completes each row's prefix maximum.

    The quantiles only balance the work: the result is exact whatever they are, so it does
    not depend on partitioning either.
    """
    buckets = max(1, int(buckets))
    bucket, is_summary, inside = "__pw_pbucket", "__pw_psummary", "__pw_pinside"
    known = F.when(_c(order).isNotNull(), _c(value))
    if buckets == 1:
        with_bucket = df.withColumn(bucket, F.lit(0))
    else:
        probs = [i / buckets for i in range(1, buckets)]
        bounds = "__pw_pbounds"
        quantiles = df.agg(F.percentile_approx(_c(order), probs, accuracy).alias(bounds))
        # A cross join with one row: a cartesian product reads the aggregate's one partition
        # in every task (a broadcast would be one more Spark job).
        with_bucket = (
            df.crossJoin(quantiles.hint("shuffle_replicate_nl"))
            .withColumn(bucket, _bucket_index(_c(order), _c(bounds), 0, buckets - 1))
            .drop(bounds)
        )
    by_arrival = Window.partitionBy(bucket).orderBy(_c(order).asc_nulls_last())
    earlier = by_arrival.rangeBetween(Window.unboundedPreceding, -1)
    whole = by_arrival.rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing)
    windowed = with_bucket.select(
        *[_c(c) for c in df.columns],
        _c(bucket),
        F.max(known).over(earlier).alias(inside),
        F.max(known).over(whole).alias("__pw_pbmax"),
        F.row_number().over(by_arrival).alias("__pw_prn"),
    )
    # the row itself (-1), and on the first row of a bucket one summary per group
    copies = F.when(
        F.col("__pw_prn") == 1,
        F.concat(F.array(F.lit(-1)), F.sequence(F.lit(0), F.lit(groups - 1))),
    ).otherwise(F.array(F.lit(-1)))
    exploded = windowed.select("*", F.explode(copies).alias("__pw_pcopy"))
    summary = F.col("__pw_pcopy") >= 0
    routed = exploded.select(
        *[_c(c) for c in df.columns if c != group],
        F.when(summary, F.col("__pw_pcopy"))
        .otherwise(_c(group))
        .cast(df.schema[group].dataType)
        .alias(group),
        _c(bucket),
        _c(inside),
        F.when(summary, F.col("__pw_pbmax")).alias("__pw_pbmax"),
        summary.alias(is_summary),
    )
    # data rows of a bucket before its summary: a running maximum covers earlier buckets only
    running = (
        Window.partitionBy(_c(group))
        .orderBy(_c(bucket), _c(is_summary))
        .rowsBetween(Window.unboundedPreceding, 0)
    )
    return (
        routed.withColumn(out, F.greatest(F.max("__pw_pbmax").over(running), _c(inside)))
        .where(~_c(is_summary))
        .select(*[_c(c) for c in df.columns], _c(out))
    )


def add_prefix_max_single_partition(
    df: DataFrame, *, order: str, value: str, out: str
) -> DataFrame:
    """The same prefix maximum with one unpartitioned window (every row moves to a single
    partition). Not used by the runtime; kept for the comparison in
    ``benchmarks/spark_watermark.py`` and ``docs/spark.md``."""
    known = F.when(_c(order).isNotNull(), _c(value))
    frame = (
        Window.partitionBy(F.lit(0))
        .orderBy(_c(order).asc_nulls_last())
        .rangeBetween(Window.unboundedPreceding, -1)
    )
    return df.withColumn(out, F.max(known).over(frame))
