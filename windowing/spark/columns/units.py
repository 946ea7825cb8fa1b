"""The units of integral time columns in Spark SQL: a column's values onto the operator's
millisecond clock (:func:`millis_sql`) and the clock's times back into the column's unit for
the outputs (:func:`unit_sql`), in integer arithmetic that never overflows (the same
arithmetic as :class:`windowing.time.TimeUnit`, which the tests compare it with); and the
check that an event-time column left in milliseconds does not hold another unit
(:func:`check_event_time_unit`; in streaming :class:`StreamingUnitCheck`)."""

from __future__ import annotations

import uuid
import warnings
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F  # noqa: N812 - the PySpark convention

from windowing.errors import EventTimeUnitWarning
from windowing.spark.columns.schema import column_time_kind
from windowing.spark.columns.sql import quoted
from windowing.time import (
    MAX_TIMESTAMP,
    MIN_TIMESTAMP,
    TimeUnit,
    suspected_unit,
    unit_warning_text,
)

__all__ = [
    "SAMPLE_VALUES",
    "StreamingUnitCheck",
    "check_event_time_unit",
    "floor_div_sql",
    "millis_sql",
    "unit_checks_in",
    "unit_sql",
    "warn_if_suspect",
]

_MIN = f"CAST({MIN_TIMESTAMP} AS BIGINT)"  # -2**63 is no bigint literal: 2**63 is none


def floor_div_sql(value: str, divisor: int, *, round_up: bool = False) -> str:
    """SQL text: the ``bigint`` SQL expression ``value`` divided by ``divisor`` (> 1),
    floored, or with ``round_up`` rounded up (``div`` truncates toward zero: one less for a
    negative value with a remainder, one more for a positive one), never overflowing."""
    op, sign = ("+", ">") if round_up else ("-", "<")
    return (
        f"({value} div {divisor}L {op} "
        f"CASE WHEN {value} {sign} 0L AND {value} % {divisor}L != 0L THEN 1L ELSE 0L END)"
    )


def _clamped_times(value: str, factor: int, plus: int = 0) -> str:
    """SQL text: ``value * factor + plus`` (``0 <= plus < factor``) clamped to the ends of
    ``long``."""
    hi = (MAX_TIMESTAMP - plus) // factor  # value * factor + plus fits a long up to hi
    lo = -(MAX_TIMESTAMP // factor)  # and down to lo
    add = f" + {plus}L" if plus else ""
    return (
        f"CASE WHEN {value} > {hi}L THEN {MAX_TIMESTAMP}L "
        f"WHEN {value} < {lo}L THEN {_MIN} ELSE {value} * {factor}L{add} END"
    )


def millis_sql(value: str, unit: TimeUnit) -> str:
    """SQL text: the integral SQL expression ``value`` of ``unit`` in epoch milliseconds, a
    ``bigint`` (:meth:`TimeUnit.to_millis`: seconds times 1,000 clamped to the ends of
    ``long``; microseconds and nanoseconds floored)."""
    v = f"CAST({value} AS BIGINT)"
    if unit is TimeUnit.MILLISECONDS:
        return v
    if unit is TimeUnit.SECONDS:
        return _clamped_times(v, 1_000)
    return floor_div_sql(v, 1_000 if unit is TimeUnit.MICROSECONDS else 1_000_000)


def unit_sql(value: str, unit: TimeUnit, *, bound: bool = False) -> str:
    """SQL text: the ``bigint`` epoch milliseconds ``value`` in ``unit``
    (:meth:`TimeUnit.from_millis`): an instant's last value of the unit, a window
    ``bound``'s first (seconds floored or rounded up; finer units multiplied, plus the
    millisecond's last fraction for an instant), clamped to the ends of ``long``."""
    if unit is TimeUnit.MILLISECONDS:
        return value
    if unit is TimeUnit.SECONDS:
        return floor_div_sql(value, 1_000, round_up=bound)
    per = 1_000 if unit is TimeUnit.MICROSECONDS else 1_000_000
    return _clamped_times(value, per, 0 if bound else per - 1)


# ---------------------------------------------------------------------- the unit check
#: The most values of an integral event-time column the unit check reads.
SAMPLE_VALUES = 1_000

#: Logical plan nodes through which the check reads an input's first values cheaply: scans
#: of files, tables and ranges (one small job reading the column's first split) and driver
#: data held in the plan (no job), under projections, filters and limits. Anything else (a
#: cached input, a shuffle, a Python function, data of an RDD or of Python objects made on
#: the driver) is not sampled.
_SAMPLED_NODES = frozenset(
    {
        "LocalRelation",
        "LogicalRelation",
        "HiveTableRelation",
        "DataSourceV2Relation",
        "DataSourceV2ScanRelation",
        "Range",
        "Project",
        "Filter",
        "SubqueryAlias",
        "LocalLimit",
        "GlobalLimit",
        "Union",
    }
)


def _plan_nodes(plan: Any) -> Iterator[str]:
    """The node names of a JVM logical plan, depth first."""
    yield str(plan.nodeName())
    children = plan.children()
    for i in range(children.size()):
        yield from _plan_nodes(children.apply(i))


def _cheap_sample(df: DataFrame, column: str) -> list[Any] | None:
    """Up to :data:`SAMPLE_VALUES` non-null values of ``column``, when Spark reads them
    without a shuffle or Python code (see :data:`_SAMPLED_NODES`); ``None`` otherwise, and
    in Spark Connect, whose plans the driver cannot inspect.

    The nodes are those of the column's own optimized plan (a new query: the input's plan
    keeps no cache lookup made before the user caches it), where Python functions and
    subqueries are nodes of their own and a cached input is read from its cache; the walk
    stops at the first other node."""
    c = F.col(quoted(column))
    values = df.select(c)
    try:
        plan = values._jdf.queryExecution().optimizedPlan()
        cheap = all(name in _SAMPLED_NODES for name in _plan_nodes(plan))
    except Exception:  # Spark Connect (no JVM plan), or a plan the check cannot walk
        return None
    if not cheap:
        return None
    return [row[0] for row in values.where(c.isNotNull()).limit(SAMPLE_VALUES).collect()]


def check_event_time_unit(df: DataFrame, column: str, *, stacklevel: int = 2) -> None:
    """Warn (:class:`~windowing.errors.EventTimeUnitWarning`) when the integral event-time
    ``column`` of the static ``df``, read as epoch milliseconds because no unit was given,
    holds first values that look like another unit (:func:`windowing.time.suspected_unit`
    of their smallest and largest). Reads at most :data:`SAMPLE_VALUES` values, only where
    that is cheap (:func:`_cheap_sample`); nothing for a timestamp column."""
    if column_time_kind(df, column, "event_time") != "integral":
        return
    values = _cheap_sample(df, column)
    if values:
        warn_if_suspect(column, min(values), max(values), stacklevel=stacklevel + 1)


def warn_if_suspect(
    column: str, low: int, high: int, *, where: str | None = None, stacklevel: int = 2
) -> None:
    """The :class:`~windowing.errors.EventTimeUnitWarning` for ``column``'s observed values
    ``low`` to ``high`` (of the input ``where``, if named) when they look like another unit
    than milliseconds."""
    unit = suspected_unit(low, high)
    if unit is not None:
        text = unit_warning_text(column, low, high, unit, where=where)
        warnings.warn(text, EventTimeUnitWarning, stacklevel=stacklevel)


@dataclass(frozen=True)
class StreamingUnitCheck:
    """The unit check of a streaming input (no data to sample when the job is built): the
    smallest and largest value of the event-time ``column`` in each micro-batch, observed
    under ``name`` (``query.lastProgress["observedMetrics"]``; computed with the micro-batch,
    no job of its own), and checked on the driver by the query's listener
    (:func:`~windowing.spark.streaming.sinks.write_results_and_late`) on the first
    micro-batch with event times. ``where`` names the input in the warning when a query has
    several (the sides of a join).

    Every check made is found again by its name (:func:`unit_checks_in`): a query checks
    each input its plan observes, also those of a join's sides and of the first of
    consecutive windows, whose checks the stage that writes the query did not make."""

    name: str
    column: str
    where: str | None = None

    @classmethod
    def observe(
        cls, df: DataFrame, column: str, where: str | None = None
    ) -> tuple[DataFrame, StreamingUnitCheck | None]:
        """``df`` observed for the check of its integral event-time ``column`` (``df`` and
        ``None`` for a timestamp column)."""
        if column_time_kind(df, column, "event_time") != "integral":
            return df, None
        check = cls(f"windowing_event_time_{uuid.uuid4().hex[:12]}", column, where)
        _CHECKS[check.name] = check
        c = F.col(quoted(column)).cast("long")
        return df.observe(check.name, F.min(c).alias("low"), F.max(c).alias("high")), check

    def progress(self, observed: Mapping[str, Any]) -> bool:
        """Check one micro-batch's observed metrics (warning when they look like another
        unit); whether the check is done (the micro-batch had event times)."""
        row = observed.get(self.name)
        if row is None or row["low"] is None:
            return False
        warn_if_suspect(self.column, int(row["low"]), int(row["high"]), where=self.where)
        return True


#: The streaming unit checks made in this process, by the name they observe under (a few
#: short strings each; a query built again makes new ones).
_CHECKS: dict[str, StreamingUnitCheck] = {}


def unit_checks_in(names: Iterable[str]) -> tuple[StreamingUnitCheck, ...]:
    """The unit checks among the observation ``names`` of a streaming DataFrame's plan
    (:func:`~windowing.spark.streaming.stages.plan_facts`), in the order given."""
    return tuple(_CHECKS[n] for n in names if n in _CHECKS)
