"""Delta trigger: fires when an element has moved far enough from the last fired-on one."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy

from windowing.evictors.base import EvictorContext
from windowing.evictors.delta import check_delta_config, check_vectorized_delta, column_deltas
from windowing.evictors.vectorized import WindowRows
from windowing.state import ValueStateDescriptor
from windowing.triggers.base import TriggerContext, TriggerResult
from windowing.triggers.vectorized import CODES, EndFirings, VectorizedTrigger

__all__ = ["DeltaTrigger"]

#: The element the trigger last fired on (the first element until it fires), wrapped in a
#: 1-tuple so that a ``None`` element is told apart from "no element yet".
LAST_ELEMENT: ValueStateDescriptor[tuple[Any]] = ValueStateDescriptor("last-element")


@dataclass(frozen=True, repr=False)
class DeltaTrigger(VectorizedTrigger[Any, Any]):
    """Fires when ``delta_function(last, element) > threshold``, where ``last`` is the element
    the trigger last fired on.

    Rules (Flink's ``DeltaTrigger``): the first element of a window is stored as ``last``
    and does not fire; each later element is compared with ``last``; when the delta is
    strictly greater than ``threshold`` the trigger fires and the element becomes the new
    ``last``. Elements that do not fire leave ``last`` unchanged. Never purges; cannot merge
    (a stored element cannot be merged).

    Known elsewhere as: Flink ``DeltaTrigger.of(threshold, delta_function, serializer)``;
    Beam has no equivalent.

    Parameters
    ----------
    threshold
        Fire when the delta exceeds this number (NaN, as in Flink, never fires, with a
        ``UserWarning``).
    delta_function
        ``delta_function(old, new) -> float``: ``old`` is the last fired-on element, ``new``
        the arriving one. Must be picklable (lambdas are fine with cloudpickle).
    vectorized_delta
        Optional: ``delta_function`` on whole columns, ``vectorized_delta(old, new)`` of two
        ``pyarrow.Table`` objects of the same length (``old``: the rows last fired on,
        ``new``: the arriving rows) returning one number per row. With it, runtimes holding
        columns find the firings with a call per firing of the windows, not per row
        (:class:`~windowing.triggers.vectorized.VectorizedTrigger`); it must give what
        ``delta_function`` gives row by row.

    Examples
    --------
    Fire when the value rises more than 10 above the last firing value:

    >>> from windowing.testing import TriggerHarness
    >>> from windowing.windows import GLOBAL_WINDOW
    >>> h = TriggerHarness(DeltaTrigger(10, lambda old, new: new - old))
    >>> [h.process_element(v, None, GLOBAL_WINDOW).name for v in (0, 10, 11, 15, 22)]
    ['CONTINUE', 'CONTINUE', 'FIRE', 'CONTINUE', 'FIRE']
    >>> h.clear(GLOBAL_WINDOW); h.num_state_entries()
    0
    """

    threshold: float
    delta_function: Callable[[Any, Any], float]
    vectorized_delta: Callable[[Any, Any], Any] | None = None

    def __post_init__(self) -> None:
        check_delta_config(self.threshold, self.delta_function, "DeltaTrigger")
        check_vectorized_delta(self.vectorized_delta, "DeltaTrigger")

    def on_element(
        self, element: Any, timestamp: int | None, window: Any, ctx: TriggerContext
    ) -> TriggerResult:
        last = ctx.get_partitioned_state(LAST_ELEMENT)
        stored = last.value()
        if stored is None:
            last.update((element,))
            return TriggerResult.CONTINUE
        if self.delta_function(stored[0], element) > self.threshold:
            last.update((element,))
            return TriggerResult.FIRE
        return TriggerResult.CONTINUE

    def on_event_time(self, time: int, window: Any, ctx: TriggerContext) -> TriggerResult:
        return TriggerResult.CONTINUE

    def on_processing_time(self, time: int, window: Any, ctx: TriggerContext) -> TriggerResult:
        return TriggerResult.CONTINUE

    def clear(self, window: Any, ctx: TriggerContext) -> None:
        ctx.get_partitioned_state(LAST_ELEMENT).clear()

    @property
    def vectorized(self) -> bool:
        """On columns only with a ``vectorized_delta``."""
        return self.vectorized_delta is not None and super().vectorized

    def on_elements(self, rows: WindowRows, ctx: EvictorContext) -> Any:
        """Each window's firings, a round at a time: the rows after the row last fired on
        (at first, the window's first row) are compared with it, and the first whose delta
        exceeds the threshold fires and is compared with next. ``None`` (the operator) when
        the rounds would compare more than 64 times the rows."""
        codes = numpy.zeros(len(rows), numpy.int8)
        filled = rows.sizes() > 0
        last, ends = rows.offsets[:-1][filled], rows.offsets[1:][filled]
        budget = 64 * len(rows)
        while True:
            after = ends - last - 1
            going = after > 0
            last, ends, after = last[going], ends[going], after[going]
            total = int(after.sum())
            if not total:
                return codes
            budget -= total
            if budget < 0:
                return None
            starts = numpy.cumsum(after) - after
            old = numpy.repeat(last, after)
            new = old + 1 + numpy.arange(total) - numpy.repeat(starts, after)
            deltas = column_deltas(self.vectorized_delta, rows, old, new, "DeltaTrigger")
            over = numpy.flatnonzero(deltas > self.threshold)  # a NaN never fires
            windows, first = numpy.unique(
                numpy.searchsorted(starts, over, "right") - 1, return_index=True
            )
            fired = new[over[first]]
            codes[fired] = CODES[TriggerResult.FIRE]
            last, ends = fired, ends[windows]

    def on_end_of_input(self, rows: WindowRows, ctx: EvictorContext) -> EndFirings:
        """No timer fires."""
        return EndFirings.none()
