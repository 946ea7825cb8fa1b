"""The native Spark plan of tumbling processing-time windows over a ``processing_time``
column (``TumblingProcessingTimeWindows``, batch ``WindowedStream.agg``): the batch replay's
outcome, computed by Spark without the window operator.

What the replay does (:mod:`windowing.spark.batch.replay_keys`): each key starts with its own
processing-time clock at 0, and its rows come in processing-time order (nulls last). Before a
row, the clock moves to the row's processing time if that is later (firing the timers due
then, ``<=`` the new time); a row without one, or an earlier one, leaves the clock where it
is. The row then goes to the window holding the clock (Flink assigns a processing-time window
by the current processing time, not by a column), whose ``ProcessingTimeTrigger`` timer is at
its max timestamp ``e - 1``, as its cleanup time (no lateness for processing time). At the
end of input the clock moves to ``MAX_TIMESTAMP``. So, for a row of clock ``c`` (its
processing time, at least 0; a row without one: the key's largest processing time, at least
0) in the window ``[s, e)`` holding ``c``:

- ``c < e - 1``: the row fires with the other such rows of its window, once, when the clock
  first reaches ``e - 1`` (a later row, or the end of input): pane 0, ``ON_TIME``;
- ``c == e - 1``: the clock is at the timer's time already, so the row waits for the next
  move of the clock (a strictly later row, or the end of input), in a new state (the first
  firing cleaned the window up): the rows at ``e - 1`` fire together, a second result of the
  window, pane 0 again, ``LATE`` (the clock had reached the max timestamp before that step);
- in the window at the end of time (its end clamped, max timestamp ``MAX_TIMESTAMP``), the
  rows at ``MAX_TIMESTAMP`` never fire: the clock cannot move past it. Their window is left
  at the end (``num_windows_left_at_end``, one per key).

Hence ``groupBy(keys, window start of c, c == e - 1)``, every group one firing but the
rows at ``MAX_TIMESTAMP``. A row without processing time needs its key's largest: the keys
of such rows (usually none) are taken from the rows without one (a filter on the input's own
column, which a cached frame or a Parquet file answers from its statistics) and broadcast::

    rows with a processing time ──► c = greatest(processing time, 0)
                                ──► groupBy(keys, window start, c == e - 1)
                                ──► but the groups of keys with rows without one (anti join)
    rows of keys with rows      ──► c = greatest(processing time, or the key's largest
    without one (semi join)         (a window function over those keys), 0)
                                ──► groupBy(keys, window start, c == e - 1)

Without such rows Spark's adaptive execution finds the broadcast keys empty and drops both
joins and the second part. The broadcast is a small job of its own, next to the aggregation
(an aggregate in the anti join's condition keeps Spark from pushing the join under the
aggregation, which would then wait for it); a ``processing_time`` column that cannot be
null (``nullable=False``) needs none of this.

Nothing is late (a processing-time window is never late), every row is an element (rows
without event time too), and ``first`` / ``last`` / ``min_by`` / ``max_by`` put rows without
event time last (:func:`~windowing.spark.native.parts.pick`).
"""

from __future__ import annotations

import functools
import operator

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F  # noqa: N812 - the PySpark convention

from windowing.assigners.tumbling import TumblingProcessingTimeWindows
from windowing.job import Job
from windowing.spark.columns.aggregates import CompiledAggregates
from windowing.spark.columns.inputs import PT
from windowing.spark.columns.output import OutputLayout, col
from windowing.spark.native.parts import (
    LATE,
    ON_TIME,
    NativeParts,
    NativeRest,
    aggregate_columns,
    keys_counter,
)
from windowing.spark.native.windows import TumblingBounds
from windowing.time import MAX_TIMESTAMP

__all__ = ["processing_time_parts"]

_CLOCK = "__pw_nclock"  # the key's processing-time clock when the row came
_AT_END = "__pw_nat_end"  # the row came with the clock at its window's max timestamp
_ANY = "__pw_nany"  # at least 1 in every group: an aggregate for the anti join's condition
_KEY = "__pw_nkey_"  # the key columns of the keys with rows without processing time


def processing_time_parts(
    job: Job,
    prepared: DataFrame,
    keys: list[Column],
    compiled: CompiledAggregates,
    layout: OutputLayout,
) -> NativeParts:
    """Tumbling processing-time windows of a ``processing_time`` column; see the module
    docstring."""
    assigner = job.config.assigner
    assert isinstance(assigner, TumblingProcessingTimeWindows)
    size, residue = assigner.size, assigner.offset % assigner.size
    bounds = TumblingBounds(assigner)
    # the clock's place in its window (no overflow: 0 <= clock, 0 <= residue < size)
    place = f"pmod({_CLOCK} - {residue}L, {size}L)"
    window = [
        F.expr(f"{_CLOCK} - {place}").alias(bounds.column),
        F.expr(f"{place} = {size - 1}L").alias(_AT_END),
    ]
    values = [
        *aggregate_columns(compiled, arrival=0, null_times=True),
        F.count(F.lit(1)).alias(_ANY),
    ]
    end_of_time = F.col(_CLOCK) == F.lit(MAX_TIMESTAMP)

    def fired(clocked: DataFrame) -> DataFrame:
        # the rows at MAX_TIMESTAMP are the only ones at the max timestamp of the window at
        # the end of time (its end clamped), and never fire
        return clocked.where(~end_of_time).groupBy(*keys, *window).agg(*values)

    pt = F.col(PT)
    columns = [col(c) for c in prepared.columns]
    timed = prepared.select(*columns, F.greatest(pt, F.lit(0)).alias(_CLOCK))
    if prepared.schema[PT].nullable:
        with_nulls, same_key = _keys_with_nulls(prepared, job, layout)
        timed = timed.where(col(job.source.processing_time).isNotNull())
        by_key = Window.partitionBy(*(keys or [F.lit(0)]))
        newest = F.greatest(F.coalesce(pt, F.max(pt).over(by_key)), F.lit(0))
        theirs = prepared.join(with_nulls, same_key, "left_semi").select(
            *columns, newest.alias(_CLOCK)
        )
        anti = same_key & (F.col(_ANY) >= F.lit(1))
        results = fired(timed).join(with_nulls, anti, "left_anti").unionByName(fired(theirs))
        at_end = timed.where(end_of_time).join(with_nulls, same_key, "left_anti")
        at_end = at_end.unionByName(theirs.where(end_of_time))
    else:
        results, at_end = fired(timed), timed.where(end_of_time)
    left = at_end.agg(keys_counter(layout).alias("n"))
    counters = prepared.agg(
        F.count(F.lit(1)).alias("num_input_rows"),
        F.count(F.lit(1)).alias("num_elements"),
        keys_counter(layout).alias("num_keys"),
    )
    timing = F.when(F.col(_AT_END), F.lit(LATE)).otherwise(F.lit(ON_TIME))
    return NativeParts(
        results,
        bounds.window_start,
        bounds.end,
        # no window is left at the end after it fires (a processing-time window's cleanup
        # time is its max timestamp): the windows left are counted apart, below
        F.lit(False),
        lambda: NativeRest(
            counters, [left.select(*layout.sql.metrics_branch({"num_windows_left_at_end": "n"}))]
        ),
        (F.lit(0), timing),
    )


def _keys_with_nulls(
    prepared: DataFrame, job: Job, layout: OutputLayout
) -> tuple[DataFrame, Column]:
    """The keys with rows without processing time (renamed, distinct, broadcast) and the
    condition joining them to rows by key (null-safe; always true for ``window_all``)."""
    names = list(layout.keys)
    renamed = [f"{_KEY}{i}" for i in range(len(names))]
    same_key = functools.reduce(
        operator.and_,
        [col(k).eqNullSafe(F.col(r)) for k, r in zip(names, renamed, strict=True)],
        F.lit(True),
    )
    untimed = prepared.where(col(job.source.processing_time).isNull())
    with_nulls = untimed.select(
        *[col(k).alias(r) for k, r in zip(names, renamed, strict=True)], F.lit(0)
    ).distinct()
    return F.broadcast(with_nulls), same_key
