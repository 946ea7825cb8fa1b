"""A window join's pairs as columns (``JoinWithWindow.select``), and their native Spark plan.

``select(*columns)`` gives each pair of a window's left and right rows (per key) as the
``columns`` the user names over ``left`` and ``right`` (each side's row as a struct, the
tagged union's: :mod:`windowing.spark.joins`) and the key columns. Two ways compute it:

* **The native plan** (route ``native-window-join``): a batch join of tumbling event-time
  windows in event-time order (no ``arrival_order``, no ``processing_time`` column), the
  default trigger, no evictor, no idle timeout, no dead letters, an aligned assigner. Nothing
  is late there and every window fires once, at the end of input, over all its rows (as the
  native ``.agg`` plans, :mod:`windowing.spark.native.windows`), so its pairs are Spark's
  equi-join of the two sides on the key (null equal to null, ``key_by``'s rule) and the
  window start::

      rows with an event time ──► window start (TumblingBounds) ──► left rows ⋈ right rows
                                                                     on keys <=> and window
      rows without one        ──► the late side output (reason null_event_time), a metric

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

from windowing.assigners.tumbling import TumblingEventTimeWindows
from windowing.functions.joins import LEFT, RIGHT, SIDE
from windowing.job import Job
from windowing.spark.batch.replay_plan import (
    OtherOutputs,
    OutputBranches,
    WindowedResult,
    build_layout,
    result_names,
)
from windowing.spark.columns.inputs import TS, time_millis
from windowing.spark.columns.output import REASON_NULL_EVENT_TIME, col
from windowing.spark.native.parts import (
    ON_TIME,
    keys_counter,
    left_at_end,
    max_timestamp_of,
)
from windowing.spark.native.windows import TumblingBounds

__all__ = ["JoinSelect", "run_window_join"]

_LK, _RK = "__pw_jl", "__pw_jr"  # a side's key columns in the join
_LW, _RW = "__pw_jlw", "__pw_jrw"  # a side's window start in the join
_WINDOW = TumblingBounds.column


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


def run_window_join(plan: Any, job: Job, select: JoinSelect) -> WindowedResult:
    """The native plan of a window join's ``select`` (see the module docstring): the tagged
    output of its pairs, metrics and late rows, as the window operator's.

    Each DataFrame operation, and each union of the tagged output's branches most of all,
    costs Spark an analysis of the plan so far (``docs/design.md``), so the metrics come
    from one aggregate of the rows per key and window (which counts the pairs too: a
    window's left rows times its right rows), one branch."""
    assigner = job.config.assigner
    assert isinstance(assigner, TumblingEventTimeWindows)
    source = job.source
    df = source.df
    layout = build_layout(job, None, select.schema, None)
    keys = list(layout.keys)
    bounds = TumblingBounds(assigner)
    ts = time_millis(df, source.event_time, "event_time", source.event_unit)
    timed = df.select(*[col(k) for k in keys], col(SIDE), col(LEFT), col(RIGHT), ts.alias(TS))
    # the window start of each row with an event time (null without one)
    windowed = timed.withColumn(_WINDOW, F.when(F.col(TS).isNotNull(), bounds.start))
    in_window = F.col(_WINDOW).isNotNull()
    rows = windowed.where(in_window)

    def side(name: str, key_prefix: str, window: str) -> DataFrame:
        return rows.where(col(SIDE) == F.lit(name)).select(
            *[col(k).alias(f"{key_prefix}{i}") for i, k in enumerate(keys)],
            col(_WINDOW).alias(window),
            col(name),
        )

    on = [F.col(_LW) == F.col(_RW)]
    on += [F.col(f"{_LK}{i}").eqNullSafe(F.col(f"{_RK}{i}")) for i in range(len(keys))]
    pairs = side(LEFT, _LK, _LW).join(side(RIGHT, _RK, _RW), functools.reduce(Column.__and__, on))
    max_ts = max_timestamp_of(bounds.end)
    key_types = {f.name: f.dataType for f in df.schema.fields if f.name in keys}
    # the user's columns over the pairs as a select evaluates them (a star gives several),
    # then each by name
    results = (
        pairs.select(
            *[_key_value(F.col(f"{_LK}{i}"), key_types[k]).alias(k) for i, k in enumerate(keys)],
            F.col(_LW).alias(_WINDOW),
            col(LEFT),
            col(RIGHT),
        )
        .select(*[col(k) for k in keys], col(_WINDOW), *select.columns)
        .select(
            *layout.sql.result_branch(
                (bounds.window_start, bounds.end, max_ts),
                [col(name) for name in select.schema.names],
                (F.lit(0), F.lit(ON_TIME)),
            )
        )
    )

    def others() -> OtherOutputs:
        # per key and window (null: the key's rows without event time), the rows of each side;
        # every window with rows fires once (also without pairs: the join function is then not
        # called); a window whose max timestamp is within the lateness of the end of time is
        # left at the end (rules.py)
        groups = windowed.groupBy(*[col(k) for k in keys], col(_WINDOW)).agg(
            F.count(F.lit(1)).alias("n"),
            F.count_if(col(SIDE) == F.lit(LEFT)).alias("nl"),
            F.count_if(col(SIDE) == F.lit(RIGHT)).alias("nr"),
        )
        lateness = job.config.allowed_lateness
        left = left_at_end(max_ts, lateness)
        n = F.col("n")
        metrics = groups.agg(
            F.sum(n).alias("num_input_rows"),
            F.sum(F.when(in_window, n).otherwise(0)).alias("num_elements"),
            F.sum(F.when(in_window, 0).otherwise(n)).alias("num_null_event_time"),
            keys_counter(layout).alias("num_keys"),
            F.count(F.col(_WINDOW)).alias("num_windows_fired"),
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


def _key_value(key: Column, data_type: DataType) -> Column:
    """A join key as the results give it: a float key ``-0.0`` as ``0.0``, as Spark's
    grouping and the window operator's keys give it (the join compares them equal)."""
    if isinstance(data_type, FloatType | DoubleType):
        return key + F.lit(0.0).cast(data_type)  # -0.0 + 0.0 == 0.0 (keys.key_value's rule)
    return key
