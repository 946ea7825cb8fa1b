"""Count triggers and count evictors natively: firings that are positions in a window's rows.
Tumbling windows (also in arrival order), and hopping windows in event-time order, each row
copied into every window holding it (:func:`~windowing.spark.native.windows.hopping_windows`).

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
* **grouped**: the other count triggers: each row goes to the firings whose run holds it (one
  for a purging trigger; with an evictor and no purge up to ``ceil(k / n)`` evicting before,
  ``ceil(k / n) + 1`` evicting after; the planner leaves more than :data:`MAX_COPIES` to the
  window operator) and Spark groups by ``(keys, window, firing)``;
* **the last rows**: the event-time trigger with an evictor: the rows ranked from the last
  (no count needed) up to ``k``, or with a ``TimeEvictor(s)`` the rows less than ``s`` before
  the window's newest event time (in event-time order, also a suffix of the ranks), grouped
  by ``(keys, window)``; all of them for an evictor after the function (the window's only
  firing comes before it).

The metrics count firings and windows left at the end (those with contents: not one a
purging trigger emptied at its last row) from one count per window (a hash aggregate, not the
results, which would sort every row again). In event-time order every firing of a count
trigger is ``EARLY`` (the watermark stays at its start until the end of input) and the
event-time trigger's is ``ON_TIME``; in arrival order (count triggers only: the rows added,
not late) a firing is ``LATE`` when its last row came after the watermark passed the
window's end, else ``EARLY``. ``tests/spark/test_native_counts.py`` compares every case with the
window operator on random data.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F  # noqa: N812 - the PySpark convention

from windowing.evictors.count import CountEvictor
from windowing.evictors.time import TimeEvictor
from windowing.records import Timing
from windowing.spark.columns.aggregates import CompiledAggregates
from windowing.spark.columns.inputs import TS
from windowing.spark.native.parts import aggregate_columns, native_column
from windowing.triggers.count import CountTrigger
from windowing.triggers.event_time import EventTimeTrigger
from windowing.triggers.purging import PurgingTrigger

__all__ = ["ARRIVAL_RANKS", "MAX_COPIES", "CountFirings", "CountedFirings"]

#: The most firings a row may be copied into (an evictor keeping many more rows than the count
#: trigger's count); beyond, the window operator runs the job.
MAX_COPIES = 64

#: How the native plan takes rows in arrival order, in its reason.
ARRIVAL_RANKS = (
    "; in arrival order: each window's arrival cutoffs (when the watermark passed its end and "
    "its cleanup time; one small aggregate, broadcast), rows of windows past their cleanup "
    "time to the late side output, the others ranked in replay order (arrival, event time, "
    "content hash); a firing is LATE once the watermark had passed the window's end when its "
    "last row came"
)

_RANK = "__pw_ncrank"
_NEWEST = "__pw_ncnewest"
_COUNT = "__pw_nccount"
_FIRING = "__pw_ncfiring"
_TIMING = "__pw_nctiming"


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
    within
        A ``TimeEvictor``'s ``window_size`` (at least 1; with the event-time trigger only):
        its one firing takes the rows within it of the window's newest event time.

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
    within: int | None = None

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
        elif type(evictor) is TimeEvictor and evictor.window_size >= 1 and every is None:
            # the event-time trigger's one firing: the rows within the size of the newest
            return cls(None, False, None, evictor.do_evict_after, evictor.window_size)
        else:
            return None  # another evictor; a CountEvictor keeping nothing fires empty windows
        if every is None and keep is None:
            return None
        return cls(every, purge, keep, after)

    @property
    def no_timer(self) -> bool:
        """Whether the trigger has no timer at a window's max timestamp (a count trigger)."""
        return self.every is not None

    def native(self, windowable: bool, *, arrival: bool) -> bool:
        """Whether the native plan computes these firings: running aggregates need Spark's
        window functions (``windowable``: no DISTINCT), a row is copied into at most
        :data:`MAX_COPIES` firings, and in ``arrival`` order only a count trigger (the
        event-time trigger fires on time, then once per row within the lateness)."""
        if self.running and not windowable:
            return False
        return self.copies <= MAX_COPIES and not (arrival and self.every is None)

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
        if n is None:
            if self.evict_after:
                return f"{what}: groupBy(keys, window start) (nothing is evicted before it)"
            if self.within is not None:
                return (
                    f"{what}, those within {self.within} ms of its newest kept first (a "
                    "TimeEvictor): the newest event time per window (a window function), groupBy"
                )
            return f"{what}: ranked from the last in replay order (one sort per window), groupBy"
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
        assert n is not None  # (the event-time trigger's one firing: ranked from the end)
        base = (j - F.lit(1)) * F.lit(n) + F.lit(1) if self.purge else F.lit(1)
        if k is None or (self.evict_after and self.purge):
            return base
        if self.evict_after:
            return F.greatest(F.lit(1), (j - F.lit(1)) * F.lit(n) - F.lit(k - 1))
        return F.greatest(base, hi - F.lit(k - 1))

    def _holds(self, c: Column) -> Column:
        """Whether a window of ``c`` rows holds contents at the end of input: not when a
        purging trigger emptied it at its last row."""
        if self.purge and self.every is not None:
            return c % F.lit(self.every) != F.lit(0)
        return F.lit(True)

    @property
    def copies(self) -> int:
        """The most firings one row is in (grouped plans: a row is copied that often)."""
        n, k = self.every, self.keep
        if n is None or self.purge or k is None:
            return 1  # (n: no evictor; the event-time trigger is not grouped this way)
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
        timing: Column | None = None,
    ) -> CountedFirings:
        """The firings of ``rows`` (with the window column ``window``) per key and window, in
        the replay order ``order``; ``left``: whether a window (read from ``window``) is left
        at the end of input; ``arrival``: the number of arrival-order columns (the picks'
        order, :func:`~windowing.spark.native.parts.pick`); ``timing``: a firing's pane
        timing, read at its last row (default: ``EARLY`` for a count trigger, ``ON_TIME``
        for the event-time trigger's one firing at the end)."""
        by_window = Window.partitionBy(*keys, F.col(window)).orderBy(*order)
        rank = F.row_number().over(by_window)
        r = F.col(_RANK)
        n = self.every
        if timing is None:
            timing = F.lit((Timing.ON_TIME if n is None else Timing.EARLY).name)
        pane = (F.col(_FIRING) - F.lit(1), F.col(_TIMING))
        if n is None:
            # the event-time trigger: one firing at the end over the last k rows (evicting
            # after the only firing changes nothing): ranked from the end, no count needed
            kept = rows
            if self.within is not None and not self.evict_after:
                # Flink's TimeEvictor keeps t > newest - size: newest - t < size (no overflow)
                newest = F.max(F.col(TS)).over(Window.partitionBy(*keys, F.col(window)))
                kept = rows.withColumn(_NEWEST, newest).where(
                    F.col(_NEWEST) - F.col(TS) < F.lit(self.within)
                )
            elif self.keep is not None and not self.evict_after:
                last = Window.partitionBy(*keys, F.col(window)).orderBy(*[o.desc() for o in order])
                ranked = rows.withColumn(_RANK, F.row_number().over(last))
                kept = ranked.where(F.col(_RANK) <= F.lit(self.keep))
            results = kept.groupBy(*keys, F.col(window)).agg(
                *aggregate_columns(compiled, arrival=arrival),
                F.lit(1).alias(_FIRING),
                F.first(timing).alias(_TIMING),
            )
        elif self.running:
            frame = by_window.rowsBetween(Window.unboundedPreceding, 0)
            columns = [
                native_column(call, arrival, expression=True).over(frame).alias(call.name)
                for call in compiled.calls
            ]
            ranked = rows.select(
                *keys, F.col(window), *columns, rank.alias(_RANK), timing.alias(_TIMING)
            )
            results = ranked.where(r % F.lit(n) == F.lit(0)).select(
                *keys,
                F.col(window),
                *[F.col(call.name) for call in compiled.calls],
                F.floor(r / F.lit(n)).alias(_FIRING),
                F.col(_TIMING),
            )
        else:
            whole = by_window.rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing)
            c = F.col(_COUNT)
            ranked = rows.withColumn(_RANK, rank).withColumn(_COUNT, F.count(F.lit(1)).over(whole))
            j0 = F.floor((r + F.lit(n - 1)) / F.lit(n))  # the first firing at or after r
            last = F.floor(c / F.lit(n))

            def held(j: Column) -> Column:
                return (j <= last) & (self._lo(j, j * F.lit(n)) <= r)

            marks = [F.when(held(j0 + F.lit(i)), j0 + F.lit(i)) for i in range(self.copies)]
            firing = (
                marks[0]
                if len(marks) == 1
                else F.explode(F.filter(F.array(*marks), lambda x: x.isNotNull()))
            )
            results = (
                ranked.select("*", firing.alias(_FIRING))
                .where(F.col(_FIRING).isNotNull())
                .groupBy(*keys, F.col(window), F.col(_FIRING))
                .agg(
                    *aggregate_columns(compiled, arrival=arrival),
                    F.max_by(timing, r).alias(_TIMING),  # at the firing's last row
                )
            )
        # the metrics from a count per window (a hash aggregate: counting the results would
        # sort every row again)
        counts = rows.groupBy(*keys, F.col(window)).agg(F.count(F.lit(1)).alias(_COUNT))
        fired = F.lit(1) if n is None else F.floor(F.col(_COUNT) / F.lit(n))
        metrics = counts.agg(
            F.coalesce(F.sum(fired), F.lit(0)).alias("n"),
            F.count(F.when(left & self._holds(F.col(_COUNT)), 1)).alias("left"),
        )
        return CountedFirings(results, metrics, pane)
