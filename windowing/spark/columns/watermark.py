"""The watermark a streaming run would have seen, computed for every row of a batch.

With an arrival-order column, a row arriving at ``a`` sees the watermark generated from every
row that arrived strictly before it, *over all keys*::

    watermark(a) = max(event_time of rows with arrival < a) - delay - 1     (MIN if none)

(Flink's ``BoundedOutOfOrderness``; Spark's ``withWatermark`` also calls late the rows at
exactly ``max - delay``: ``docs/spark.md``, "Which watermark"). The ``max(...)`` part is a
prefix maximum over the whole input in arrival order. Two ways to get it, both lazy (one
plan, no driver round trip) and exact whatever the partitioning:

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

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F  # noqa: N812 - the PySpark convention
from pyspark.sql.types import StructType

from windowing.job import InputWatermarks
from windowing.spark.columns.sql import quoted
from windowing.spark.jobs import estimated_bytes
from windowing.time import MAX_TIMESTAMP, MIN_TIMESTAMP

__all__ = [
    "FEW_ROWS_BYTES",
    "ONE_TASK_BYTES",
    "WindowCutoffs",
    "add_inputs_watermark",
    "add_prefix_max",
    "add_prefix_max_single_partition",
    "count_below",
    "few_rows_enough",
    "one_task_enough",
    "shifted_back",
    "watermark_of",
    "watermark_sql",
    "with_earlier_max",
]

#: Inputs Spark estimates at most this large aggregate the arrival cutoffs in one task.
ONE_TASK_BYTES = 64 << 20
#: Inputs Spark estimates at most this large meet late rows with all their rows
#: (:attr:`WindowCutoffs.few_rows`).
FEW_ROWS_BYTES = 4 << 20


def one_task_enough(df: DataFrame) -> bool:
    """Whether Spark's own estimate of ``df``'s size (:func:`~windowing.spark.jobs.estimated_bytes`,
    no job) is at most :data:`ONE_TASK_BYTES`: then the arrival cutoffs are aggregated in
    one task, which saves a Spark job; larger inputs (and inputs without an estimate, as in
    Spark Connect) aggregate in parallel."""
    return _at_most(df, ONE_TASK_BYTES)


def few_rows_enough(df: DataFrame) -> bool:
    """Whether Spark estimates ``df`` at most :data:`FEW_ROWS_BYTES` (as
    :func:`one_task_enough`): :attr:`WindowCutoffs.few_rows`."""
    return _at_most(df, FEW_ROWS_BYTES)


def _at_most(df: DataFrame, limit: int) -> bool:
    size = estimated_bytes(df)
    return size is not None and size <= limit


def _c(name: str) -> Column:
    return F.col(quoted(name))


def _long(value: int | None) -> Column:
    return F.lit(value).cast("long")


def shifted_back(name: str, amount: int) -> str:
    """SQL text: the column ``name`` minus ``amount`` (``>= 0``), null where it would fall
    below ``MIN_TIMESTAMP`` (no overflow)."""
    assert amount >= 0
    t = quoted(name)
    if amount == 0:
        return t
    if amount > MAX_TIMESTAMP - MIN_TIMESTAMP:
        return "CAST(NULL AS BIGINT)"
    floor = MIN_TIMESTAMP + amount  # a valid bigint: amount <= MAX - MIN
    if amount <= MAX_TIMESTAMP:
        return f"CASE WHEN {t} >= {floor}L THEN {t} - {amount}L END"
    # t - amount = (t - floor) + MIN, each step within bigint
    return f"CASE WHEN {t} >= {floor}L THEN ({t} - {floor}L) + {MIN_TIMESTAMP}L END"


def watermark_of(prefix_max: str, delay: int) -> Column:
    """The watermark after seeing the prefix maximum in column ``prefix_max`` (Flink's
    ``max - delay - 1``, saturating at ``MIN_TIMESTAMP``; ``MIN_TIMESTAMP`` when null)."""
    return F.expr(watermark_sql(prefix_max, delay))


def watermark_sql(prefix_max: str, delay: int) -> str:
    """:func:`watermark_of` as SQL text."""
    return f"coalesce({shifted_back(prefix_max, delay + 1)}, {MIN_TIMESTAMP}L)"


#: The window partition of a table already in one partition: ``g * 0`` is 0 for every row
#: (``g`` is never null there) but not a constant to Spark's optimizer, which drops constant
#: partitions and then warns "No Partition Defined for Window operation".
_ONE_PARTITION = "PARTITION BY g * 0"

#: Binary-search steps: enough for any array Spark can hold (fewer than 2**31 elements).
_SEARCH_STEPS = 31


@dataclass(frozen=True)
class WindowCutoffs:
    """The arrival cutoffs of a tumbling assigner's windows (see the module docstring).

    For a window ``k`` (its grouping value), with ``end`` its end:

    * ``fire(k)``: the earliest arrival of a row with event time ``>= end + fire_shift``;
      a row of ``k`` that arrived after it saw a watermark ``>= end - 1`` (the window's end
      had passed), with ``fire_shift = delay``;
    * ``late(k)``: the same with ``late_shift = lateness + delay``: a row that arrived
      after it saw a watermark ``>= end - 1 + lateness`` (the window's cleanup time: late).

    Both are null when no row reaches them. A row with event time ``t`` reaches the
    threshold of every window whose grouping value is below ``window_of(t - shift)``, so the
    cutoffs are minima, over later windows, of the earliest arrival per window of ``t -
    shift``: one aggregate of the rows by (window of t, of t - fire, of t - late), a few rows
    per window, then running minima over that small table in one partition.

    Attributes
    ----------
    elements
        The rows with an event time (column ``ts``) and an arrival order (``arrival``).
    window_of
        A window's grouping value from the event time in the named column (non-decreasing,
        null for null).
    fire_shift, late_shift
        The shifts above (``late_shift >= fire_shift >= 0``).
    one_task
        Aggregate in one task, without a shuffle (one Spark job less; the rows' event time
        and arrival are read by one task): for small inputs.
    few_rows
        Few enough rows that :meth:`prefix_max` meets its queries with all of them (a
        shuffle of every row's arrival and event time) rather than with the rows of the
        windows they ask about (a Spark job more, a semi-join): for inputs far smaller than
        ``one_task``'s (``spark_bench.py``: a shuffle of 1,000,000 rows costs 0.5 s, a job
        about 0.05 s).
    """

    elements: DataFrame
    ts: str
    arrival: str
    window_of: Callable[[str], Column]
    fire_shift: int
    late_shift: int
    one_task: bool
    few_rows: bool = False

    @cached_property
    def _owned(self) -> DataFrame:
        """The cells (:meth:`_cells`) of the windows with rows, built once for :meth:`table`
        and :meth:`runs` (each DataFrame operation is analyzed by Spark when the job is
        built: a second copy would double that time)."""
        return self._cells().where("own")

    def _cells(self) -> DataFrame:
        """One row per window grouping value ``g`` that holds rows or a shifted event time,
        in one partition: ``own`` (rows of the window), ``c_fire`` / ``c_late`` (the cutoffs
        above) and ``earliest`` (the earliest arrival of the rows of this and later
        windows). Written as SQL text (few calls to the JVM when the job is built)."""
        rows = self.elements.coalesce(1) if self.one_task else self.elements
        # the shifted times as columns of their own (window_of reads its input thrice)
        shifted = rows.selectExpr(
            f"{quoted(self.ts)} AS t",
            f"{shifted_back(self.ts, self.fire_shift)} AS tf",
            f"{shifted_back(self.ts, self.late_shift)} AS tl",
            f"{quoted(self.arrival)} AS a",
        )
        triples = shifted.groupBy(
            self.window_of("t").alias("w"),
            self.window_of("tf").alias("f"),
            self.window_of("tl").alias("l"),
        ).agg(F.expr("min(a) AS a"))
        if not self.one_task:
            triples = triples.coalesce(1)  # a few rows per window: no second shuffle
        cells = (
            triples.selectExpr(
                "inline(array("
                "named_struct('g', w, 'own_a', a, 'fire_a', NULL, 'late_a', NULL), "
                "named_struct('g', f, 'own_a', NULL, 'fire_a', a, 'late_a', NULL), "
                "named_struct('g', l, 'own_a', NULL, 'fire_a', NULL, 'late_a', a)))"
            )
            .where("g IS NOT NULL")
            .groupBy("g")
            .agg(*[F.expr(f"min({c}) AS {c}") for c in ("own_a", "fire_a", "late_a")])
        )
        later = f"{_ONE_PARTITION} ORDER BY g DESC ROWS BETWEEN UNBOUNDED PRECEDING AND"
        return cells.selectExpr(
            "g",
            "own_a IS NOT NULL AS own",
            f"min(fire_a) OVER ({later} 1 PRECEDING) AS c_fire",
            f"min(late_a) OVER ({later} 1 PRECEDING) AS c_late",
            f"min(own_a) OVER ({later} CURRENT ROW) AS earliest",
        )

    @property
    def shared(self) -> DataFrame:
        """What :meth:`table` and :meth:`runs` are computed from (one small row per window):
        the part of the plan a persisted result keeps for its outputs."""
        return self._owned

    def table(self, prefix: str) -> DataFrame:
        """The windows with rows: ``<prefix>w`` (grouping value), ``<prefix>fire``,
        ``<prefix>late`` (the cutoffs); to broadcast and join by window."""
        return self._owned.selectExpr(
            f"g AS {quoted(prefix + 'w')}",
            f"c_fire AS {quoted(prefix + 'fire')}",
            f"c_late AS {quoted(prefix + 'late')}",
        )

    def runs(self, prefix: str) -> DataFrame:
        """One row: ``<prefix>r``, the distinct values of ``earliest`` over the windows with
        rows (ascending), and ``<prefix>rg``, the last window of each; to broadcast for
        :meth:`prefix_max`."""
        by_window = f"OVER ({_ONE_PARTITION} ORDER BY g)"
        return (
            self._owned.selectExpr(
                "*", f"coalesce(lead(earliest) {by_window} != earliest, true) AS run_end"
            )
            .where("run_end")
            .selectExpr("sort_array(collect_list(struct(earliest, g))) AS r")
            .selectExpr(f"r.earliest AS {quoted(prefix + 'r')}", f"r.g AS {quoted(prefix + 'rg')}")
        )

    def prefix_max(self, queries: DataFrame, runs: str, runs_window: str, out: str) -> DataFrame:
        """The exact prefix maximum (``out``) of each row of ``queries``, whose columns are
        its arrival (``arrival``), the columns ``runs`` / ``runs_window`` of :meth:`runs`
        and any others (kept as they are). The maximum event time over rows that
        arrived before ``a`` lies in the latest window holding such a row (a later window's
        rows are all later in event time): the window of the last ``earliest`` value below
        ``a``, found by a binary search. Each query meets that window's rows (their arrival
        and event time only) in a window function partitioned by window."""
        below = count_below(runs, self.arrival)
        kept = ", ".join(quoted(c) for c in queries.columns if c not in (runs, runs_window))
        asked = queries.selectExpr(
            f"IF({below} > 0, try_element_at({quoted(runs_window)}, {below}), NULL) AS g",
            f"{quoted(self.arrival)} AS a",
            "CAST(NULL AS BIGINT) AS t",
            f"struct({kept}) AS p",
        )
        # a null of the struct's type as a Column: SQL text cannot name every field (e.g. a
        # key column named `lower(user)`)
        empty = F.lit(None).cast(asked.schema["p"].dataType)
        rows = self.elements.select(
            self.window_of(self.ts).alias("g"),
            F.expr(f"{quoted(self.arrival)} AS a"),
            F.expr(f"{quoted(self.ts)} AS t"),
            empty.alias("p"),
        )
        if not self.few_rows:
            # only the windows asked about (late rows are few, their windows fewer): the
            # other rows never reach the window function's shuffle (a small job more; with
            # no late row, adaptive execution drops the scan of the rows: the broadcast
            # side is empty)
            wanted = F.broadcast(asked.select("g").where("g IS NOT NULL").distinct())
            rows = rows.join(wanted, "g", "left_semi")
        both = asked.union(rows)
        return (
            with_earlier_max(both, value="t", within="g", order="a", out=out)
            .where("p IS NOT NULL")
            .select("p.*", out)
        )


def with_earlier_max(
    df: DataFrame,
    *,
    value: str,
    within: str,
    order: str,
    out: str,
    also: Sequence[str] = (),
) -> DataFrame:
    """``df`` plus column ``out``: the maximum of the SQL expression ``value`` over the rows
    of the same ``within`` (a column) whose ``order`` (a column: ``bigint``, or a struct
    compared field by field) is strictly smaller, nulls last; null when there is none.
    ``also``: more SQL select items, computed in the same select (window functions over the
    same partitioning and order share its window operator).

    A ``bigint`` order is one window function with a ``RANGE`` frame ending ``1
    PRECEDING``. Spark's range frames with an offset need a numeric order, so a struct order
    (several arrival-order columns) takes two window functions over the same partitioning
    and order (one sort): the maximum over the rows before in the sort, kept at the first
    row of each run of equal orders, and carried to the rest of the run. No other shuffle
    or sort either way."""
    spec = f"PARTITION BY {quoted(within)} ORDER BY {quoted(order)} ASC NULLS LAST"
    if not isinstance(df.schema[order].dataType, StructType):
        return df.selectExpr(
            "*",
            f"max({value}) OVER ({spec} RANGE BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) "
            f"AS {quoted(out)}",
            *also,
        )
    o = quoted(order)
    marked = df.selectExpr(
        "*",
        *also,
        f"max({value}) OVER ({spec} ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) "
        "AS __pw_pbefore",
        f"{o} IS DISTINCT FROM lag({o}) OVER ({spec}) AS __pw_pstart",
    )
    # (a struct, so that a run's null maximum is carried too, not skipped)
    carried = marked.selectExpr(
        "*",
        "last(IF(__pw_pstart, named_struct('m', __pw_pbefore), NULL), true) "
        f"OVER ({spec} ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS __pw_pcarry",
    )
    kept = [quoted(c) for c in marked.columns if c not in ("__pw_pbefore", "__pw_pstart")]
    return carried.selectExpr(*kept, f"__pw_pcarry.m AS {quoted(out)}")


def bucket_value(df: DataFrame, order: str) -> str:
    """SQL text: the number that cuts the rows into arrival buckets in
    :func:`add_prefix_max`: the ``order`` column, or a struct order's first field (equal
    orders share it, and it never decreases along the order)."""
    dtype = df.schema[order].dataType
    if isinstance(dtype, StructType):
        return f"{quoted(order)}.{quoted(dtype.fields[0].name)}"
    return quoted(order)


def count_below(values: str, value: str) -> str:
    """SQL text: how many elements of the strictly ascending array column ``values`` are
    below the column ``value`` (null for null): a binary search in one higher-order
    ``aggregate`` (evaluated per row; used for the few late rows only)."""
    v, x = quoted(values), quoted(value)
    sizes = ", ".join(str(1 << j) for j in reversed(range(_SEARCH_STEPS)))
    step = f"IF(f + s <= size({v}) AND try_element_at({v}, f + s) < {x}, f + s, f)"
    return f"IF({x} IS NULL, NULL, aggregate(array({sizes}), 0, (f, s) -> {step}))"


def _bucket_index(order: str, bounds: str, buckets: int) -> str:
    """SQL text: how many of the ``buckets - 1`` ascending ``bounds`` are ``<= order``: a
    binary search in one higher-order ``aggregate`` (``log2(buckets)`` steps a row). Nested
    CASE expressions, compiled, take ~30 ns a row less (5 M rows, 64 buckets: 0.30 s
    against 0.46 s), but Spark analyzes and compiles each of their ``buckets`` branches (about
    25 ms of a job's construction at 64 buckets); ``size(filter(bounds, ...))`` took 1.9 s."""
    last = buckets - 1
    steps = ", ".join(str(1 << j) for j in reversed(range(last.bit_length())))
    at = "__pw_pf + __pw_ps"
    step = f"IF({at} <= {last} AND element_at({bounds}, {at}) <= {order}, {at}, __pw_pf)"
    return f"aggregate(array({steps}), 0, (__pw_pf, __pw_ps) -> {step})"


def add_prefix_max(
    df: DataFrame,
    *,
    order: str,
    value: str | Sequence[str],
    out: str | Sequence[str],
    group: str,
    groups: int,
    buckets: int,
    accuracy: int = 1_000,
    one_task: bool = False,
    also: Sequence[str] = (),
) -> DataFrame:
    """``df`` plus column ``out``: the maximum of ``value`` over all rows whose ``order`` (a
    ``bigint``, or a struct of them compared field by field: :func:`with_earlier_max`) is
    strictly smaller (``null`` when there is none), hash-partitioned by the integral column
    ``group`` (values in ``[0, groups)``; a later ``groupBy(group)`` needs no shuffle). Rows
    with a null ``order`` take part in nothing (their ``out`` is unspecified); null
    ``value`` s are ignored. Several ``value`` columns give as many ``out`` columns, in one
    pass.

    1. ``percentile_approx`` cuts the ``order`` values (a struct's first field,
       :func:`bucket_value`) into ``buckets`` ranges (one global aggregate; its one row is
       joined to every row without a broadcast). Equal values share a bucket; every row of
       bucket ``b`` comes after every row of buckets ``< b``.
    2. Shuffled by bucket, a window function ordered by ``order`` gives the maximum of
       strictly earlier rows inside the bucket and the bucket's maximum.
    3. The first row of each bucket also becomes one summary row (the bucket's maximum) per
       group; shuffled by group, a running maximum of the summaries of earlier buckets
       completes each row's prefix maximum.

    The quantiles only balance the work: the result is exact whatever they are, so it does
    not depend on partitioning either. Written as SQL text (few calls to the JVM).

    ``one_task``: ``df`` is in one partition and has one group (a small input): the
    prefix maximum is one window function over it, ordered by ``order`` (no shuffle).

    ``also``: more SQL select items, computed from the others and ``out`` in the last select
    (Spark analyzes each DataFrame operation as it is made: one fewer for the caller).
    """
    values = [value] if isinstance(value, str) else list(value)
    outs = [out] if isinstance(out, str) else list(out)
    assert len(values) == len(outs) > 0
    buckets = max(1, int(buckets))
    o, g = quoted(order), quoted(group)
    if one_task:
        # ``group`` is 0 for every row (not a constant: see _ONE_PARTITION): the windows
        # need no shuffle, and the partitioning is kept
        assert groups == 1
        for v, name in zip(values, outs, strict=True):
            known = f"IF({o} IS NULL, NULL, {quoted(v)})"
            df = with_earlier_max(df, value=known, within=group, order=order, out=name)
        return df.selectExpr("*", *also) if also else df
    cut = bucket_value(df, order)
    if buckets == 1:  # (0 for every row, not a constant: see _ONE_PARTITION; Spark drops
        # ``order * 0`` from a window's partitioning when the order column is never null)
        with_bucket = df.selectExpr("*", f"coalesce({g} * 0, 0) AS __pw_pbucket")
    else:
        probs = ", ".join(f"{i / buckets!r}D" for i in range(1, buckets))
        quantiles = df.selectExpr(
            f"percentile_approx({cut}, array({probs}), {int(accuracy)}) AS __pw_pbounds"
        )
        # A cross join with one row: a cartesian product reads the aggregate's one partition
        # in every task (a broadcast would be one more Spark job).
        index = _bucket_index(cut, "__pw_pbounds", buckets)
        with_bucket = df.crossJoin(quantiles.hint("shuffle_replicate_nl")).selectExpr(
            *[quoted(c) for c in df.columns], f"{index} AS __pw_pbucket"
        )
    by_arrival = f"PARTITION BY __pw_pbucket ORDER BY {o} ASC NULLS LAST"
    knowns = [f"IF({o} IS NULL, NULL, {quoted(v)})" for v in values]
    windowed = with_bucket
    for j, known in enumerate(knowns):
        # the bucket's maxima and the row numbers in the first window operator's select
        bucket_maxima = [
            f"max({k}) OVER ({by_arrival} ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED "
            f"FOLLOWING) AS __pw_pbmax{i}"
            for i, k in enumerate(knowns)
        ]
        windowed = with_earlier_max(
            windowed,
            value=known,
            within="__pw_pbucket",
            order=order,
            out=f"__pw_pinside{j}",
            also=[*bucket_maxima, f"row_number() OVER ({by_arrival}) AS __pw_prn"]
            if j == 0
            else [],
        )
    # the row itself, and on the first row of a bucket one summary per group (its group,
    # the bucket's maxima); one struct each, in one select
    group_type = df.schema[group].dataType.simpleString()
    maxima_of = [f"__pw_pbmax{j}" for j in range(len(values))]
    types = [df.schema[v].dataType.simpleString() for v in values]
    row = ", ".join(
        [
            f"{g} AS {g}",
            *[f"CAST(NULL AS {t}) AS {m}" for m, t in zip(maxima_of, types, strict=True)],
        ]
    )
    summary = ", ".join(
        [f"CAST(__pw_pc AS {group_type}) AS {g}", *[f"{m} AS {m}" for m in maxima_of]]
    )
    copies = (
        f"inline(IF(__pw_prn = 1, concat(array(struct({row}, false AS __pw_psummary)), "
        f"transform(sequence(0, {int(groups) - 1}), __pw_pc -> struct({summary}, "
        f"true AS __pw_psummary))), array(struct({row}, false AS __pw_psummary))))"
    )
    others = [quoted(c) for c in df.columns if c != group]
    routed = windowed.selectExpr(
        *others,
        "__pw_pbucket",
        *[f"__pw_pinside{j}" for j in range(len(values))],
        copies,
    )
    # data rows of a bucket before its summary: a running maximum covers earlier buckets only
    running = (
        f"PARTITION BY {g} ORDER BY __pw_pbucket, __pw_psummary "
        "ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW"
    )
    maxima = [
        f"greatest(max(__pw_pbmax{j}) OVER ({running}), __pw_pinside{j}) AS {quoted(name)}"
        for j, name in enumerate(outs)
    ]
    done = routed.selectExpr("*", *maxima).where("NOT __pw_psummary")
    return done.selectExpr(*[quoted(c) for c in (*df.columns, *outs)], *also)


def add_inputs_watermark(
    df: DataFrame,
    *,
    inputs: InputWatermarks,
    order: str,
    value: str,
    out: str,
    group: str,
    groups: int,
    buckets: int,
    one_task: bool = False,
) -> DataFrame:
    """``df`` plus column ``out`` for several inputs read as one stream (a join's sides, named
    in the column ``inputs.column``): the smallest, over the inputs, of the largest event
    time (``value``) of the input's rows with a strictly smaller ``order``, minus that
    input's delay; null while some input has no such row (its watermark is still at the
    start of time). ``inputs.current_watermark`` of it is the row's watermark. One
    :func:`add_prefix_max` pass for all inputs; partitioned as it leaves its output."""
    names = [f"__pw_pv{j}" for j in range(len(inputs.inputs))]
    maxima = [f"__pw_pm{j}" for j in range(len(inputs.inputs))]
    tagged = df.select(
        "*",
        *[
            F.when(_c(inputs.column) == F.lit(name), F.expr(shifted_back(value, strategy.delay)))
            .cast("long")
            .alias(v)
            for (name, strategy), v in zip(inputs.inputs, names, strict=True)
        ],
    )
    with_maxima = add_prefix_max(
        tagged,
        order=order,
        value=names,
        out=maxima,
        group=group,
        groups=groups,
        buckets=buckets,
        one_task=one_task,
    )
    unknown = " OR ".join(f"{m} IS NULL" for m in maxima)
    smallest = f"least({', '.join(maxima)})" if len(maxima) > 1 else maxima[0]
    return with_maxima.selectExpr(
        *[quoted(c) for c in df.columns],
        f"CASE WHEN {unknown} THEN NULL ELSE {smallest} END AS {quoted(out)}",
    )


def add_prefix_max_single_partition(
    df: DataFrame, *, order: str, value: str, out: str
) -> DataFrame:
    """The same prefix maximum with one unpartitioned window (every row moves to a single
    partition). Not used by the runtime; kept for the comparison in
    ``benchmarks/spark_watermark.py`` and ``docs/spark-internals.md``."""
    known = F.when(_c(order).isNotNull(), _c(value))
    frame = Window.orderBy(_c(order).asc_nulls_last()).rangeBetween(Window.unboundedPreceding, -1)
    return df.withColumn(out, F.max(known).over(frame))
