"""Count triggers and count evictors natively: firings that are positions in a window's rows.

Flink's ``CountTrigger(n)`` fires a window at its ``n``-th, ``2n``-th, ... element, whatever
the time; ``PurgingTrigger(CountTrigger(n))`` also empties it each time; a ``CountEvictor(k)``
keeps a window's last ``k`` elements, before the function (the default) or after it. A
window's elements are its rows in the replay order (event time, content hash; the arrival
order first when there is one), so with ranks ``1..c`` in that order every firing ``j``
aggregates one run of ranks ``lo_j..hi_j`` (:class:`CountFirings`)::

    trigger                hi_j (j <= J)      lo_j: no evictor   evict before k     after k
    CountTrigger(n)        j * n, J = c // n  1                  max(1, hi - k + 1) max(1, m-k+1)
    Purging(CountTrigger)  j * n, J = c // n  m + 1              max(m + 1, hi-k+1) m + 1
    EventTimeTrigger       c, J = 1           1                  max(1, c - k + 1)  1

with ``m = (j - 1) * n``, the rank of the previous firing (by induction: after the firing at
``hi`` an evictor before the function has left the last ``k`` rows up to ``hi``; one after
it, the last ``k`` rows up to the previous firing plus the rows since). Spark computes them
from one sort of each window's rows (rank and count by window functions over
``partitionBy(keys, window).orderBy(replay order)``):

* **running**: ``CountTrigger(n)`` without an evictor: every firing starts at rank 1, so the
  aggregates are running window aggregates (one pass, each row added once) read at the
  ranks ``j * n``;
* **grouped**: every other case: each row goes to the firings whose run holds it (at most
  ``ceil(k / n) + 1``; one for a purging trigger or an evictor keeping at most ``n`` rows)
  and Spark groups by ``(keys, window, firing)``.

The metrics count firings and windows from one count per window (a hash aggregate, not the
results, which would sort every row again). Every firing of a count trigger is
``EARLY`` (the watermark stays at its start until the end of input); the event-time
trigger's is ``ON_TIME``. ``tests/spark/test_native_counts.py`` compares every case with the
window operator on random data.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F  # noqa: N812 - the PySpark convention

from windowing.evictors.count import CountEvictor
from windowing.records import Timing
from windowing.spark.columns.aggregates import CompiledAggregates
from windowing.spark.native.parts import aggregate_columns, native_column
from windowing.triggers.count import CountTrigger
from windowing.triggers.event_time import EventTimeTrigger
from windowing.triggers.purging import PurgingTrigger

__all__ = ["CountFirings", "CountedFirings"]

_RANK = "__pw_ncrank"
_COUNT = "__pw_nccount"
_FIRING = "__pw_ncfiring"


@dataclass(frozen=True)
class CountedFirings:
    """The firings of :meth:`CountFirings.firings`: ``results`` has the key columns, the
    window column and the aggregates by name, one row per firing; ``fired`` one row, the
    number of firings ``n`` and of windows left at the end ``left``; ``pane`` the firings'
    pane index and timing."""

    results: DataFrame
    fired: DataFrame
    pane: tuple[Column, Column]


@dataclass(frozen=True)
class CountFirings:
    """Which rows each firing of a window aggregates, for a count trigger and a count
    evictor (the module docstring's table).

    Attributes
    ----------
    every
        The count trigger's ``max_count`` (at least 1); ``None``: the event-time trigger.
    purge
        The count trigger is wrapped in a ``PurgingTrigger``.
    keep
        The count evictor's ``max_count`` (at least 1); ``None``: no evictor.
    evict_after
        The evictor evicts after the function.

    Examples
    --------
    >>> from windowing.triggers import CountTrigger
    >>> CountFirings.of(CountTrigger(100), None)
    CountFirings(every=100, purge=False, keep=None, evict_after=False)
    >>> CountFirings.of(None, None) is None  # the default: no count plan
    True
    """

    every: int | None
    purge: bool = False
    keep: int | None = None
    evict_after: bool = False

    @classmethod
    def of(cls, trigger: Any, evictor: Any) -> CountFirings | None:
        """The firings of a job with ``trigger`` and ``evictor``, or ``None`` when they are
        the defaults or not these built-ins (a subclass is the user's own: the operator)."""
        purge = type(trigger) is PurgingTrigger
        inner = trigger.trigger if purge else trigger
        if type(inner) is CountTrigger:
            every: int | None = max(1, inner.max_count)
        elif (inner is None or type(inner) is EventTimeTrigger) and not purge:
            every = None
        else:
            return None
        if evictor is None:
            keep, after = None, False
        elif type(evictor) is CountEvictor and evictor.max_count >= 1:
            keep, after = evictor.max_count, evictor.do_evict_after
        else:
            return None  # another evictor; a CountEvictor keeping nothing fires empty windows
        if every is None and keep is None:
            return None
        return cls(every, purge, keep, after)

    @property
    def no_timer(self) -> bool:
        """Whether the trigger has no timer at a window's max timestamp (a count trigger)."""
        return self.every is not None

    @property
    def running(self) -> bool:
        """Whether every firing starts at the window's first row (running aggregates)."""
        return self.every is not None and not self.purge and self.keep is None

    def describe(self) -> str:
        """The firings in words, for the plan's reason."""
        n, k = self.every, self.keep
        what = (
            "one firing at the end over the window's rows"
            if n is None
            else f"a firing at every {n}th row of a window (rank {n}, {2 * n}, ...)"
        )
        if self.purge:
            what += ", each over the rows since the last"
        elif n is not None:
            what += ", each over the rows so far"
        if k is not None:
            when = "after the function (later firings)" if self.evict_after else "first"
            what += f", the last {k} of them kept {when}"
        how = (
            "running window aggregates read at those ranks"
            if self.running
            else "each row grouped into the firings that hold it"
        )
        return f"{what}: ranks in replay order (one sort per window), {how}"

    # ------------------------------------------------------------------ ranks of firings
    def _lo(self, j: Column, hi: Column) -> Column:
        """The first rank of firing ``j`` ending at rank ``hi`` (the module's table)."""
        n, k = self.every, self.keep
        if n is None:
            base: Column = F.lit(1)
            if k is not None and not self.evict_after:
                return F.greatest(base, hi - F.lit(k - 1))
            return base
        base = (j - F.lit(1)) * F.lit(n) + F.lit(1) if self.purge else F.lit(1)
        if k is None or (self.evict_after and self.purge):
            return base
        if self.evict_after:
            return F.greatest(F.lit(1), (j - F.lit(1)) * F.lit(n) - F.lit(k - 1))
        return F.greatest(base, hi - F.lit(k - 1))

    def _copies(self) -> int:
        """The most firings one row is in (grouped plans)."""
        n, k = self.every, self.keep
        if n is None or self.purge or k is None:
            return 1
        spread = -(-k // n)  # ceil(k / n)
        return spread + 1 if self.evict_after else spread

    def firings(
        self,
        rows: DataFrame,
        keys: list[Column],
        window: str,
        order: list[Column],
        compiled: CompiledAggregates,
        left: Column,
        arrival: int = 0,
    ) -> CountedFirings:
        """The firings of ``rows`` (with the window column ``window``) per key and window, in
        the replay order ``order``; ``left``: whether a window (read from ``window``) is left
        at the end of input; ``arrival``: the number of arrival-order columns (the picks'
        order, :func:`~windowing.spark.native.parts.pick`)."""
        by_window = Window.partitionBy(*keys, F.col(window)).orderBy(*order)
        rank = F.row_number().over(by_window)
        r = F.col(_RANK)
        n = self.every
        if n is None:
            pane = (F.lit(0), F.lit(Timing.ON_TIME.name))
        else:
            pane = (F.col(_FIRING) - F.lit(1), F.lit(Timing.EARLY.name))
        if self.running:
            assert n is not None
            frame = by_window.rowsBetween(Window.unboundedPreceding, 0)
            columns = [
                native_column(call, arrival, expression=True).over(frame).alias(call.name)
                for call in compiled.calls
            ]
            ranked = rows.select(*keys, F.col(window), *columns, rank.alias(_RANK))
            results = ranked.where(r % F.lit(n) == F.lit(0)).select(
                *keys,
                F.col(window),
                *[F.col(call.name) for call in compiled.calls],
                F.floor(r / F.lit(n)).alias(_FIRING),
            )
        else:
            whole = by_window.rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing)
            c = F.col(_COUNT)
            ranked = rows.withColumn(_RANK, rank).withColumn(_COUNT, F.count(F.lit(1)).over(whole))
            if n is None:
                j0, last = F.lit(1), F.lit(1)
            else:
                j0 = F.floor((r + F.lit(n - 1)) / F.lit(n))  # the first firing at or after r
                last = F.floor(c / F.lit(n))

            def held(j: Column) -> Column:
                hi = c if n is None else j * F.lit(n)
                return (j <= last) & (self._lo(j, hi) <= r)

            marks = [F.when(held(j0 + F.lit(i)), j0 + F.lit(i)) for i in range(self._copies())]
            firing = (
                marks[0]
                if len(marks) == 1
                else F.explode(F.filter(F.array(*marks), lambda x: x.isNotNull()))
            )
            results = (
                ranked.select("*", firing.alias(_FIRING))
                .where(F.col(_FIRING).isNotNull())
                .groupBy(*keys, F.col(window), F.col(_FIRING))
                .agg(*aggregate_columns(compiled, arrival=arrival))
            )
        # the metrics from a count per window (a hash aggregate: counting the results would
        # sort every row again)
        counts = rows.groupBy(*keys, F.col(window)).agg(F.count(F.lit(1)).alias(_COUNT))
        fired = F.lit(1) if n is None else F.floor(F.col(_COUNT) / F.lit(n))
        metrics = counts.agg(
            F.coalesce(F.sum(fired), F.lit(0)).alias("n"),
            F.count(F.when(left, 1)).alias("left"),
        )
        return CountedFirings(results, metrics, pane)
