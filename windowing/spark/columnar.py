"""Built-in aggregations of tumbling event-time windows computed on whole Arrow columns.

In the batch replay without an arrival order nothing is late and every window fires once, at
the end of input, over all its rows in event-time order (``WindowOperator.process_to_end``).
For ``sum`` / ``min`` / ``max`` / ``min_by`` / ``max_by``
(:class:`~functions.aggregations.FieldAggregation`) of tumbling event-time windows with the
default trigger and no evictor, the results are then a function of the key's sorted columns:
the rows of a window are a contiguous run, and each aggregation is a per-run reduction. This
module computes them with numpy on the Arrow buffers, without building a ``Row`` per input
row; :func:`columnar_results` returns ``None`` whenever the column values could make the
result differ from the operator's (nulls, NaNs, float sums, integer overflow, timestamps
near the ends of time), and the replay then runs the operator. ``tests/spark`` holds the
two paths equal.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from assigners.tumbling import TumblingEventTimeWindows
from functions.aggregations import AggregationType, FieldAggregation
from functions.spec import Reduce
from triggers.event_time import EventTimeTrigger
from windowing.time import MAX_TIMESTAMP, MIN_TIMESTAMP

__all__ = ["ColumnarAggregation", "ColumnarResults", "columnar_plan", "columnar_results"]

# int64 accumulation is exact while |sum| < 2**63.
_SUM_LIMIT = 2**63


@dataclass(frozen=True)
class ColumnarAggregation:
    """A built-in aggregation of tumbling event-time windows (``size``, ``offset`` in ms)."""

    aggregation: AggregationType
    field: str
    first: bool
    size: int
    offset: int
    allowed_lateness: int = 0


def columnar_plan(
    assigner: Any, spec: Any, trigger: Any, evictor: Any, allowed_lateness: int = 0
) -> ColumnarAggregation | None:
    """The columnar plan for this window configuration, or ``None`` when it needs the
    operator (another assigner, trigger or function, an evictor, or a lateness so large that
    windows are never cleaned up)."""
    if type(assigner) is not TumblingEventTimeWindows or evictor is not None:
        return None
    if allowed_lateness > MAX_TIMESTAMP // 4:
        return None  # cleanup at the end of time: the operator keeps the windows (a metric)
    if trigger is not None and type(trigger) is not EventTimeTrigger:
        return None
    if not isinstance(spec, Reduce) or spec.window_function is not None:
        return None
    fn = spec.function
    if type(fn) is not FieldAggregation or not isinstance(fn.field, str):
        return None
    return ColumnarAggregation(
        fn.aggregation, fn.field, fn.first, assigner.size, assigner.offset, allowed_lateness
    )


@dataclass(frozen=True)
class ColumnarResults:
    """Per window: start, end and result timestamp; the input row each result row is taken
    from; the aggregated field's values (``None``: taken from those rows too)."""

    starts: np.ndarray[Any, Any]
    rows: np.ndarray[Any, Any]
    field_values: np.ndarray[Any, Any] | None


def columnar_results(
    plan: ColumnarAggregation, times: pa.ChunkedArray, values: pa.ChunkedArray
) -> ColumnarResults | None:
    """The windows of one key whose rows are sorted as the replay sorts them (event time
    ``times`` in ms without nulls, then the tie-breaker), or ``None`` when the operator must
    compute them."""
    n = len(times)
    if n == 0 or values.null_count:
        return None
    vtype = values.type
    kind = plan.aggregation
    if pa.types.is_floating(vtype):
        # Float sums depend on the order of additions; NaN and -0.0 are ordered (Java's
        # Double.compareTo) where numpy's minimum / maximum do not order them.
        if kind is AggregationType.SUM or pc.any(pc.is_nan(values)).as_py():
            return None
        if pc.any(pc.and_(pc.equal(values, 0.0), pc.less(pc.divide(1.0, values), 0))).as_py():
            return None  # a -0.0
    elif not pa.types.is_integer(vtype):
        return None
    t = times.to_numpy()
    margin = 2 * plan.size + abs(plan.offset) + plan.allowed_lateness
    if int(t[0]) <= MIN_TIMESTAMP + margin or int(t[-1]) >= MAX_TIMESTAMP - margin:
        return None  # window bounds near the ends of time: the operator clamps them
    starts_all = t - np.mod(t - plan.offset, plan.size)
    first_rows = np.flatnonzero(np.concatenate(([True], starts_all[1:] != starts_all[:-1])))
    starts = starts_all[first_rows]
    v = values.to_numpy()
    if kind is AggregationType.SUM:
        widest = max(abs(int(v.min())), abs(int(v.max())))
        if widest * n >= _SUM_LIMIT:
            return None
        sums = np.add.reduceat(v.astype(np.int64), first_rows)
        info = np.iinfo(vtype.to_pandas_dtype())
        if int(sums.min()) < info.min or int(sums.max()) > info.max:
            return None  # the operator's result does not fit the column: it raises
        return ColumnarResults(starts, first_rows, sums)
    # min / max / min_by / max_by: the first (or last) row of each run holding the run's
    # extreme value; min / max keep the run's first row and take the value from there
    # (equal values keep the first one seen, as the reduce does).
    lowest = kind in (AggregationType.MIN, AggregationType.MIN_BY)
    extreme = (np.minimum if lowest else np.maximum).reduceat(v, first_rows)
    lengths = np.diff(np.append(first_rows, n))
    run = np.repeat(np.arange(len(first_rows)), lengths)
    hits = np.flatnonzero(v == extreme[run])
    hit_runs = run[hits]
    if kind.picks_element and not plan.first:
        chosen = hits[np.append(hit_runs[1:] != hit_runs[:-1], True)]
    else:
        chosen = hits[np.concatenate(([True], hit_runs[1:] != hit_runs[:-1]))]
    if kind.picks_element:
        return ColumnarResults(starts, chosen, None)
    return ColumnarResults(starts, first_rows, v[chosen])
