"""A window join's pairs as columns (``JoinWithWindow.select``), and their native Spark plan.

``select(*columns)`` gives each pair of a window's left and right rows (per key) as the
``columns`` the user names over ``left`` and ``right`` (each side's row as a struct, the
tagged union's: :mod:`windowing.spark.joins`) and the key columns. Two ways compute it:

* **The native plan** (route ``native-window-join``): a batch join of tumbling event-time
  windows (aligned), or of hopping event-time windows without gaps (``size >= slide``), in
  event-time order (no ``arrival_order``, no ``processing_time`` column), the default
  trigger, no evictor, no idle timeout, no dead letters, and no window ending at the start
  of time. Nothing is late there and every window fires once, at the end of input, over all
  its rows (as the native ``.agg`` plans, :mod:`windowing.spark.native.windows`), so its
  pairs are Spark's equi-join of the two sides on the key (null equal to null, ``key_by``'s
  rule) and the window::

      rows with an event time ──► window start (TumblingBounds), or each of the row's
                                  hopping windows as (block, pane) of the pane grid
                                  (HoppingGrid: a copy of the row per window, at
                                  most ceil(size / slide))
                              ──► left rows ⋈ right rows on keys <=> and window
      rows without one        ──► the late side output (reason null_event_time), a metric

  The metrics count rows, not their copies: each row counts in its first window.

  Spark chooses the join (a broadcast of a small side, a sort-merge join, AQE's skew
  handling); Python never sees the rows.
* **The window operator** otherwise (any trigger, evictor, lateness, arrival order, sessions,
  streaming): a join function giving each pair as ``(left, right)``, then the same
  ``columns`` over those two struct columns of the results (:meth:`JoinSelect.project`).

Both give the results of Flink's window join with a join function returning the columns:
key column(s), ``window_start``, ``window_end``, the columns, ``max_timestamp``, per firing.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.errors import AnalysisException
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F  # noqa: N812 - the PySpark convention
from pyspark.sql.types import DataType, DoubleType, FloatType, StructField, StructType

from windowing.assigners.hopping import HoppingEventTimeWindows
from windowing.assigners.tumbling import TumblingEventTimeWindows, WindowStagger
from windowing.errors import ErrorPolicy
from windowing.functions.joins import LEFT, RIGHT, SIDE
from windowing.job import Job
from windowing.spark.batch.replay_plan import (
    OtherOutputs,
    OutputBranches,
    WindowedResult,
    build_layout,
    result_names,
)
from windowing.spark.columns.inputs import TS, time_millis_sql
from windowing.spark.columns.output import REASON_NULL_EVENT_TIME, col
from windowing.spark.columns.sql import quoted
from windowing.spark.native.hopping import HoppingGrid
from windowing.spark.native.parts import (
    ON_TIME,
    has_min_window,
    keys_counter,
    left_at_end,
    max_timestamp_of,
)
from windowing.spark.native.windows import TumblingBounds
from windowing.time import MIN_TIMESTAMP
from windowing.triggers.event_time import EventTimeTrigger

__all__ = ["JoinSelect", "describe_native", "run_window_join", "why_not_native"]

_LK, _RK = "__pw_jl", "__pw_jr"  # a side's key columns in the join
_LW, _RW = "__pw_jlw", "__pw_jrw"  # a side's window columns in the join
_WINDOW = TumblingBounds.column
_WB, _WR = "__pw_jwb", "__pw_jwr"  # a hopping window: its block and its first pane
_FIRST = "__pw_jfirst"  # the row's first window (rows are counted once)
_POS = "__pw_jpos"  # a window's position among the row's


@dataclass(frozen=True, eq=False)
class JoinSelect:
    """The columns of ``JoinWithWindow.select``: ``columns`` (``Column`` expressions over
    ``left``, ``right`` and the key columns) and their fields ``schema``, checked on the
    joined stream's columns before any Spark job.

    Example::

        JoinSelect.of(joined_job, ("left.price", F.col("right.name")))
    """

    columns: tuple[Column, ...]
    schema: StructType

    @classmethod
    def of(cls, job: Job, columns: Sequence[Any]) -> JoinSelect:
        """The ``columns`` (names or ``Column`` expressions) over the pairs of ``job``'s
        tagged union; ``ValueError`` naming the column for an empty selection, another type,
        a column Spark cannot resolve there, or an output column named like another column
        of the results (a key, window or pane column: :func:`result_names`)."""
        if not columns:
            msg = "join(...).select: give at least one column, e.g. select('left.price')"
            raise ValueError(msg)
        resolved: list[Column] = []
        for c in columns:
            if isinstance(c, str):
                resolved.append(F.col(c))
            elif isinstance(c, Column):
                resolved.append(c)
            else:
                msg = (
                    "join(...).select: columns must be names (e.g. 'left.price') or Columns, "
                    f"got {type(c).__name__} {c!r}"
                )
                raise ValueError(msg)
        union, keys = job.source.df, tuple(job.keys or ())
        pairs = union.select(*keys, LEFT, RIGHT)
        try:
            schema = pairs.select(*resolved).schema
        except AnalysisException as exc:
            sides = {n: union.schema[n].dataType.simpleString() for n in (LEFT, RIGHT)}
            msg = (
                f"join(...).select: cannot evaluate {list(columns)!r} on a pair: the columns "
                f"are {[*keys, LEFT, RIGHT]} ({sides}): {exc}"
            )
            raise ValueError(msg) from exc
        reserved = set(result_names(keys, job.config, ()))
        names = schema.names
        clash = sorted({n for n in names if n in reserved or names.count(n) > 1})
        if clash:
            msg = (
                f"join(...).select: output column(s) {clash} repeat a name or a column of the "
                f"results ({sorted(reserved)}); rename them with .alias(...)"
            )
            raise ValueError(msg)
        return cls(tuple(resolved), schema)

    @staticmethod
    def pair_schema(union: DataFrame) -> StructType:
        """The output schema of the operator's join function: each pair's ``left`` and
        ``right`` rows."""
        return StructType([StructField(n, union.schema[n].dataType) for n in (LEFT, RIGHT)])

    def project(self, results: DataFrame) -> DataFrame:
        """The results of the operator's pairs (``left``, ``right`` among the result
        columns) with the selected columns in their place."""
        out: list[Any] = []
        for name in results.columns:
            if name == LEFT:
                out.extend(self.columns)
            elif name != RIGHT:
                out.append(col(name))
        return results.select(*out)


def why_not_native(job: Job) -> str | None:
    """Why the native plan cannot compute a batch window join's ``select`` (``None``: it
    can)."""
    source, config = job.source, job.config
    assigner = config.assigner
    hopping = type(assigner) is HoppingEventTimeWindows
    refusals = (
        (source.df.isStreaming, "a streaming query"),
        (
            type(assigner) is not TumblingEventTimeWindows and not hopping,
            f"the assigner {assigner!r}",
        ),
        (config.on_error is ErrorPolicy.DEAD_LETTER, "errors go to dead letters"),
        (
            config.trigger is not None and type(config.trigger) is not EventTimeTrigger,
            f"the trigger {config.trigger!r}",
        ),
        (config.evictor is not None, f"the evictor {config.evictor!r}"),
        (source.arrival_order is not None, "rows in arrival order"),
        (source.processing_time is not None, "a processing_time column"),
        (config.idle_timeout is not None, "an idle timeout"),
    )
    for refused, why in refusals:
        if refused:
            return why
    at_min = "a window ending at the start of time (its rows are late or fire one by one)"
    if isinstance(assigner, HoppingEventTimeWindows):
        if assigner.size < assigner.slide:
            return "hopping windows with gaps between them (rows in no window)"
        return at_min if HoppingGrid.of(assigner).min_window_start is not None else None
    assert isinstance(assigner, TumblingEventTimeWindows)
    if assigner.stagger is not WindowStagger.ALIGNED:
        return "a stagger: the window operator's assigner draws the offset"
    return at_min if has_min_window(assigner) else None


def describe_native(job: Job) -> str:
    """How the native plan computes a window join's ``select`` (``explain()``)."""
    hopping = isinstance(job.config.assigner, HoppingEventTimeWindows)
    windows = (
        "hopping event-time windows (each row in each of its windows, found as panes of "
        "gcd(size, slide))"
        if hopping
        else "tumbling event-time windows"
    )
    return (
        f"native Spark plan: a window join of {windows}, select(...); default trigger, no "
        "evictor, event-time order (nothing is late; each window fires once at the end of "
        "input): Spark's equi-join of the left and right rows on the key (null equal to "
        "null) and the window; Python never sees the rows"
    )


def run_window_join(plan: Any, job: Job, select: JoinSelect) -> WindowedResult:
    """The native plan of a window join's ``select`` (see the module docstring): the tagged
    output of its pairs, metrics and late rows, as the window operator's.

    Each DataFrame operation, and each union of the tagged output's branches most of all,
    costs Spark an analysis of the plan so far (``docs/design.md``), so the metrics come
    from one aggregate of the rows per key and window (which counts the pairs too: a
    window's left rows times its right rows), one branch."""
    source = job.source
    df = source.df
    layout = build_layout(job, None, select.schema, None)
    keys = list(layout.keys)
    ts = time_millis_sql(df, source.event_time, "event_time", source.event_unit)
    windowed, window, bounds = _windowed(df, job, keys, ts)
    in_window = F.col(window[0]).isNotNull()
    # The rows with an event time (each has a window), their window columns declared never
    # null: a filter or a join condition on a window column is otherwise pushed down as
    # Spark's inferred `isnotnull(window)`, with the window's expression substituted into it,
    # and over an earlier window's results (its `max_timestamp` from its own window's
    # expression) that filter holds hundreds of copies of the event time, evaluated on
    # every input row.
    rows = windowed.where(col(TS).isNotNull())

    def side(name: str, key_prefix: str, window_prefix: str) -> DataFrame:
        return rows.where(col(SIDE) == F.lit(name)).select(
            *[col(k).alias(f"{key_prefix}{i}") for i, k in enumerate(keys)],
            *[
                F.coalesce(col(w), F.lit(MIN_TIMESTAMP)).alias(f"{window_prefix}{i}")
                for i, w in enumerate(window)
            ],
            col(name),
        )

    on = [F.col(f"{_LW}{i}") == F.col(f"{_RW}{i}") for i in range(len(window))]
    on += [F.col(f"{_LK}{i}").eqNullSafe(F.col(f"{_RK}{i}")) for i in range(len(keys))]
    pairs = side(LEFT, _LK, _LW).join(side(RIGHT, _RK, _RW), functools.reduce(Column.__and__, on))
    start, end = bounds
    max_ts = max_timestamp_of(end)
    key_types = {f.name: f.dataType for f in df.schema.fields if f.name in keys}
    # the user's columns over the pairs as a select evaluates them (a star gives several),
    # then each by name
    results = (
        pairs.select(
            *[_key_value(F.col(f"{_LK}{i}"), key_types[k]).alias(k) for i, k in enumerate(keys)],
            *[F.col(f"{_LW}{i}").alias(w) for i, w in enumerate(window)],
            col(LEFT),
            col(RIGHT),
        )
        .select(*[col(k) for k in keys], *[col(w) for w in window], *select.columns)
        .select(
            *layout.sql.result_branch(
                (start, end, max_ts),
                [col(name) for name in select.schema.names],
                (F.lit(0), F.lit(ON_TIME)),
            )
        )
    )

    def others() -> OtherOutputs:
        # per key and window (null: the key's rows without event time), the rows of each side
        # and the rows in their first window (a row is in several hopping windows); every
        # window with rows fires once (also without pairs: the join function is then not
        # called); a window whose max timestamp is within the lateness of the end of time is
        # left at the end (rules.py)
        groups = windowed.groupBy(*[col(k) for k in keys], *[col(w) for w in window]).agg(
            F.count(F.lit(1)).alias("n"),
            F.count_if(col(SIDE) == F.lit(LEFT)).alias("nl"),
            F.count_if(col(SIDE) == F.lit(RIGHT)).alias("nr"),
            F.count_if(col(_FIRST)).alias("rows"),
        )
        lateness = job.config.allowed_lateness
        left = left_at_end(max_ts, lateness)
        n, rows = F.col("n"), F.col("rows")
        metrics = groups.agg(
            F.sum(F.when(in_window, rows).otherwise(n)).alias("num_input_rows"),
            F.sum(F.when(in_window, rows).otherwise(0)).alias("num_elements"),
            F.sum(F.when(in_window, 0).otherwise(n)).alias("num_null_event_time"),
            keys_counter(layout).alias("num_keys"),
            F.count(F.col(window[0])).alias("num_windows_fired"),
            F.sum(F.when(in_window, F.col("nl") * F.col("nr")).otherwise(0)).alias("num_results"),
            F.count_if(in_window & left).alias("num_windows_left_at_end"),
        )
        counted = layout.sql.metrics_branch({c: c for c in metrics.columns})
        branch = metrics.select(*counted)
        late = (
            df.where(col(source.event_time).isNull()).select(
                *layout.sql.late_branch(F.lit(None), REASON_NULL_EVENT_TIME)
            )
            if layout.has_late
            else None
        )
        return OtherOutputs((branch,), () if late is None else (late,))

    return WindowedResult.of_branches(OutputBranches(results, others), layout, plan, ())


def _windowed(
    df: DataFrame, job: Job, keys: list[str], ts: str
) -> tuple[DataFrame, list[str], tuple[Column, Column]]:
    """The join's rows, each with its event time (``TS``) and its window (null without an
    event time): a tumbling window's start, or each of a row's hopping windows as (block,
    pane) of the pane grid (:class:`~windowing.spark.native.hopping.HoppingGrid`: nothing
    overflows at the ends of time), and whether it is the row's first; the window's
    columns, and its start and end over them (ms, null where the window's bounds leave
    ``bigint``)."""
    assigner = job.config.assigner
    kept = [*[col(k) for k in keys], col(SIDE), col(LEFT), col(RIGHT)]
    if isinstance(assigner, TumblingEventTimeWindows):
        bounds = TumblingBounds(assigner)
        # the window from the input's own time column, not from a column of the event time:
        # Spark then merges this select with the sides' (the event time is read several
        # times), and a user's fields of a side reach the join without their struct
        start = bounds.start_of(ts)
        return (
            df.select(*kept, F.expr(ts).alias(TS), start.alias(_WINDOW), F.lit(True).alias(_FIRST)),
            [_WINDOW],
            (bounds.window_start, bounds.end),
        )
    assert isinstance(assigner, HoppingEventTimeWindows)
    grid = HoppingGrid.of(assigner)
    block, pane = grid.block_and_pane(ts)
    # the row's windows start at panes r - n + 1 .. r of its block, every m panes (one row
    # each, numbered)
    starts = grid.starts_of(block, pane)  # (null without an event time)
    timed = df.select(
        *kept, F.expr(ts).alias(TS), F.expr(f"posexplode_outer({starts}) AS ({_POS}, {_WR})")
    )
    b, r = grid.normalized(grid.block_and_pane(TS)[0], _WR)
    windowed = timed.selectExpr(
        *[quoted(c) for c in (*keys, SIDE, LEFT, RIGHT, TS)],
        f"{b} AS {_WB}",
        f"{r} AS {_WR}",
        f"coalesce({_POS} = 0, true) AS {_FIRST}",
    )
    start, end = grid.bounds(_WB, _WR)
    return windowed, [_WB, _WR], (F.expr(start), F.expr(end))


def _key_value(key: Column, data_type: DataType) -> Column:
    """A join key as the results give it: a float key ``-0.0`` as ``0.0``, as Spark's
    grouping and the window operator's keys give it (the join compares them equal)."""
    if isinstance(data_type, FloatType | DoubleType):
        return key + F.lit(0.0).cast(data_type)  # -0.0 + 0.0 == 0.0 (keys.key_value's rule)
    return key
