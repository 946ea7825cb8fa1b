"""A per-row ``AggregateFunction`` or ``ReduceFunction`` of tumbling or hopping event-time
windows, or of event-time sessions, folded a record batch at a time in the batch replay.

In event-time order with the default trigger (no arrival order: nothing is late, every window
fires once at the end of input, :mod:`~windowing.spark.columnar.vectorized`), the window
operator adds a window's rows to its accumulator one by one in replay order and gives the
window's ``get_result`` (a reduce: its first row reduced with each later one). The replay
computes the same fold without an operator per key: the rows of a record batch become the
``Row`` objects the operator would get (:func:`~windowing.spark.columns.schema.table_rows`),
the (key, window) groups come from :class:`~windowing.spark.columnar.vectorized.VectorizedWindows`
(a window's rows in replay order, as the operator adds them), and one loop folds every group.
The function is called exactly as the operator calls it, row for row, so the results are
the operator's; a ``None`` result (the operator counts it) sends the batch to the operator.
Hopping windows take the fold only where the operator adds each row to each of its windows
(:attr:`~windowing.plan.Strategy.ALIGNED`), not where it merges partials of panes. A session's
rows in event-time order each join the key's last session, which the operator extends and
adds the row to (Flink's merging window set keeps the session's state window): no ``merge``
call, a fold too.

A per-row ``ProcessWindowFunction`` (``.process(fn)``) takes the same windows the same way
(:class:`ProcessFold`): the operator buffers a window's rows and calls ``process`` once with
them at the end of input; the replay calls it once per window with a slice of the record
batch's rows, through the vectorized window functions' loop (its context, per-key and
per-window state, side outputs and ``clear``), the outputs written as the operator writes
them.

Example::

    plan = fold_of(Aggregate(SumAmount()))  # RowFold; None for a window function or Fold
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from windowing.engine.notes import note_element, note_window
from windowing.functions.base import ProcessWindowFunction
from windowing.functions.spec import Aggregate, Process, Reduce, WindowFunctionSpec
from windowing.spark.columns.schema import gc_paused, table_rows

__all__ = ["GroupNotes", "ProcessFold", "RowFold", "fold_of", "note_group"]

#: Names the key, window and element of a group in a user error: ``(exc, group, row,
#: value)``, ``row`` the position in the groups' rows of the element ``value`` being added,
#: ``None`` while the group's result is taken.
GroupNotes = Callable[[Exception, int, int | None, Any], None]


@dataclass(frozen=True, eq=False)
class RowFold:
    """The per-row function of an ``Aggregate`` or ``Reduce`` spec folded over groups of
    rows (see the module docstring)."""

    spec: Aggregate | Reduce

    def results(
        self, rows: pa.Table, offsets: np.ndarray[Any, Any], notes: GroupNotes
    ) -> list[Any]:
        """The result of each group ``offsets`` of ``rows`` (none empty), the function called
        as the operator calls it; an error is noted with ``notes``."""
        with gc_paused():  # (the rows, accumulators and results: no cycles of ours)
            return self._results(rows, offsets, notes)

    def _results(
        self, rows: pa.Table, offsets: np.ndarray[Any, Any], notes: GroupNotes
    ) -> list[Any]:
        values = table_rows(rows, rows.column_names)
        bounds: list[int] = offsets.tolist()
        out: list[Any] = []
        append = out.append
        spec = self.spec
        g = 0
        i: int | None = None  # the row being added; None: the group's result being taken
        try:
            if isinstance(spec, Aggregate):
                fn = spec.function
                create, add, get = fn.create_accumulator, fn.add, fn.get_result
                for g in range(len(bounds) - 1):
                    i = bounds[g]  # (Flink creates the accumulator with the first element)
                    acc = create()
                    for i in range(bounds[g], bounds[g + 1]):
                        acc = add(values[i], acc)
                    i = None
                    append(get(acc))
            else:
                reduce = spec.reducer()
                for g in range(len(bounds) - 1):
                    i = lo = bounds[g]
                    cur = values[lo]
                    for i in range(lo + 1, bounds[g + 1]):
                        cur = reduce(cur, values[i])
                    i = None
                    append(cur)
        except Exception as exc:
            notes(exc, g, i, None if i is None else values[i])
            raise
        return out

    @property
    def window_function(self) -> ProcessWindowFunction[Any, Any, Any, Any] | None:
        """The ``ProcessWindowFunction`` given each window's result, if any."""
        wf = self.spec.window_function
        return wf if isinstance(wf, ProcessWindowFunction) else None

    @property
    def clears(self) -> bool:
        """Whether the window function has a ``clear`` of its own."""
        wf = self.window_function
        return wf is not None and overrides_clear(wf)

    def describe(self) -> str:
        """The function, in words."""
        kind = "AggregateFunction" if isinstance(self.spec, Aggregate) else "ReduceFunction"
        text = f"{kind} {type(self.spec.function).__qualname__}"
        wf = self.window_function
        return text if wf is None else f"{text} and ProcessWindowFunction {type(wf).__qualname__}"


@dataclass(frozen=True, eq=False)
class ProcessFold:
    """A per-row ``ProcessWindowFunction`` called once per window on a list of its rows (the
    ``Row`` objects the operator would buffer, built once per record batch), with the
    context the operator gives it at the end of input
    (:func:`~windowing.spark.columnar.vectorized_process.process_windows`)."""

    spec: Process

    @property
    def function(self) -> ProcessWindowFunction[Any, Any, Any, Any]:
        """The user's function."""
        return self.spec.function

    @property
    def clears(self) -> bool:
        """Whether the function has a ``clear`` of its own."""
        return overrides_clear(self.function)

    def describe(self) -> str:
        """The function, in words."""
        return f"ProcessWindowFunction {type(self.function).__qualname__}"


def fold_of(spec: WindowFunctionSpec) -> RowFold | ProcessFold | None:
    """The fold of a per-row ``Aggregate`` or ``Reduce`` spec (and its ``ProcessWindowFunction``,
    if any), or the per-window calls of a per-row ``Process`` spec (not a vectorized
    function's adapter, which has its own plan), or ``None``."""
    if isinstance(spec, Process):
        return ProcessFold(spec) if spec.vectorized is None else None
    if not isinstance(spec, Aggregate | Reduce):
        return None
    wf = spec.window_function
    if wf is not None and not isinstance(wf, ProcessWindowFunction):
        return None  # a WindowFunction's apply: the operator
    if isinstance(spec, Aggregate) and spec.vectorized is not None:
        return None
    return RowFold(spec)


def overrides_clear(function: ProcessWindowFunction[Any, Any, Any, Any]) -> bool:
    """Whether ``function`` has a ``clear`` of its own (the default does nothing)."""
    return type(function).clear is not ProcessWindowFunction.clear


def note_group(exc: Exception, key: Any, window: Any, element: tuple[Any, int] | None) -> None:
    """Name the key and window of a failed group, and the ``element`` (value, timestamp)
    being added, as the operator and the batch replay name them."""
    if element is None:
        note_window(exc, window, key)
    else:
        note_element(exc, key, element[1], (window,))
