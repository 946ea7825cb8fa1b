"""``ContinuousEventTimeTrigger`` natively: a window's periodic firings in event-time order.

Flink's ``ContinuousEventTimeTrigger(interval)`` registers, at a window's first element
(time ``t0``), a timer at ``f1 = min(t0 - t0 % interval + interval, max timestamp)`` (Java's
truncating ``%``), and at each such timer the next one ``interval`` later, capped at the
window's max timestamp, where its end-of-window timer fires too. Replayed in event-time order
the watermark stays at its start until the end of input, then passes every timer at once: a
window's first element is its earliest row, and every firing sees all its rows. So each window
fires ``m = ceil((max timestamp - f1) / interval) + 1`` times, at ``f1, f1 + interval, ...,
max timestamp``, with the same aggregates; each firing before the max timestamp is ``EARLY``,
the one at it ``ON_TIME`` (a timer's firing is placed by its time, ``windowing.engine.pane_info``).

The plan: ``groupBy(keys, window start)`` of the aggregates and of the earliest event time,
then each window's row exploded into its ``m`` firings (their pane index and timing). The
planner leaves more than :data:`MAX_FIRINGS` firings a window, and sizes where ``size +
interval`` leaves ``bigint``'s safe range, to the window operator.
``tests/spark/test_native_counts.py`` compares it with the operator on random data.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F  # noqa: N812 - the PySpark convention

from windowing.records import Timing
from windowing.triggers.continuous import ContinuousEventTimeTrigger

__all__ = [
    "FIRST",
    "MAX_FIRINGS",
    "continuous_firings",
    "continuous_interval",
    "describe_continuous",
    "planned",
]

#: The most firings a window may have natively (each is a result row); beyond, the operator.
MAX_FIRINGS = 100_000
#: The earliest event time of a window: a column of the grouped rows.
FIRST = "__pw_ctfirst"
_INDEX = "__pw_ctindex"
_COUNT = "__pw_ctcount"
_MAX = "__pw_ctmax"
_FIRST_FIRE = "__pw_ctf1"


def continuous_interval(trigger: Any, evictor: Any) -> int | None:
    """The interval of a job's ``ContinuousEventTimeTrigger`` (the built-in, no evictor), or
    ``None``."""
    if type(trigger) is ContinuousEventTimeTrigger and evictor is None:
        return trigger.interval
    return None


def planned(size: int, interval: int) -> bool:
    """Whether windows of ``size`` (tumbling or hopping) fire natively every ``interval``: at most
    :data:`MAX_FIRINGS` firings a window, and ``size + interval`` far from ``bigint``'s end
    (the first firing is computed in ``bigint``)."""
    return size // interval + 2 <= MAX_FIRINGS and size + interval < 2**62


def describe_continuous(interval: int) -> str:
    """The firings in words, for the plan's reason."""
    return (
        f"ContinuousEventTimeTrigger({interval} ms): groupBy(keys, window start) of the "
        "aggregates and the earliest event time, each window then fired at its interval "
        "boundaries from the first after that time (Java's %) to its max timestamp, every "
        "firing over all its rows (EARLY, then ON_TIME at the max timestamp)"
    )


def continuous_firings(
    grouped: DataFrame, interval: int, max_ts: Column
) -> tuple[DataFrame, Column, tuple[Column, Column]]:
    """Each window of ``grouped`` (its aggregates and earliest event time :data:`FIRST`; the
    window's max timestamp ``max_ts``) as its firings (module docstring): the rows, which of
    them is the window's first firing, and their pane index and timing."""
    t0, step = F.col(FIRST), F.lit(interval)
    start = t0 - t0 % step  # Spark's % truncates, as Java's
    # min(start + interval, max timestamp) without leaving bigint
    first = F.when(start - max_ts >= -step, max_ts).otherwise(start + step)
    # ceil((max timestamp - first) / interval) + 1, in integers (div)
    count = F.expr(f"({_MAX} - {_FIRST_FIRE} + {interval - 1}L) div {interval}L + 1L")
    rows = (
        grouped.withColumn(_MAX, max_ts)
        .withColumn(_FIRST_FIRE, first)
        .withColumn(_COUNT, count)
        .withColumn(_INDEX, F.explode(F.sequence(F.lit(0).cast("long"), F.col(_COUNT) - 1)))
    )
    index = F.col(_INDEX)
    on_time = index == F.col(_COUNT) - F.lit(1)
    timing = F.when(on_time, F.lit(Timing.ON_TIME.name)).otherwise(F.lit(Timing.EARLY.name))
    return rows, index == F.lit(0), (index, timing)
