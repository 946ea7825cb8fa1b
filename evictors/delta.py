"""Delta evictor: evicts elements too far, by a delta function, from the last element."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy

from windowing.evictors.base import check_after_flag
from windowing.evictors.vectorized import VectorizedOneSidedEvictor, WindowRows
from windowing.windows import TimestampedValue

__all__ = ["DeltaEvictor", "check_delta_config", "check_vectorized_delta", "column_deltas"]


def check_delta_config(threshold: Any, delta_function: Any, owner: str) -> None:
    """Validation shared with :class:`~windowing.triggers.DeltaTrigger`."""
    if isinstance(threshold, bool) or not isinstance(threshold, int | float):
        msg = f"{owner}: threshold must be a number, got {threshold!r}"
        raise ValueError(msg)
    if math.isnan(threshold):
        msg = f"{owner}: threshold is NaN: no delta reaches it (Flink accepts it too)"
        warnings.warn(msg, UserWarning, stacklevel=4)
    if not callable(delta_function):
        msg = (
            f"{owner}: delta_function must be a callable (old, new) -> float, "
            f"got {delta_function!r}"
        )
        raise ValueError(msg)


def check_vectorized_delta(vectorized_delta: Any, owner: str) -> None:
    """A ``vectorized_delta`` is ``None`` or a callable."""
    if vectorized_delta is not None and not callable(vectorized_delta):
        msg = (
            f"{owner}: vectorized_delta must be None or a callable (old, new) -> deltas, "
            f"got {vectorized_delta!r}"
        )
        raise ValueError(msg)


def column_deltas(
    vectorized_delta: Any, rows: WindowRows, old: Any, new: Any, owner: str
) -> numpy.ndarray[Any, Any]:
    """``vectorized_delta`` of the rows ``old`` and ``new`` of ``rows`` (positions, the same
    number), checked: a float per pair."""
    if rows.table is None:
        msg = f"{owner}: vectorized_delta needs the rows' columns (WindowRows.table)"
        raise ValueError(msg)
    found = vectorized_delta(rows.table.take(old), rows.table.take(new))
    values = found.to_numpy(zero_copy_only=False) if hasattr(found, "to_numpy") else found
    try:
        deltas = numpy.asarray(values, numpy.float64)
    except (TypeError, ValueError):
        deltas = None
    if deltas is None or deltas.shape != (len(old),):
        shown = type(found).__name__ + ("" if deltas is None else f" of shape {deltas.shape}")
        msg = f"{owner}: vectorized_delta must return one number per row ({len(old)}), got {shown}"
        raise TypeError(msg)
    return deltas


@dataclass(frozen=True, repr=False)
class DeltaEvictor(VectorizedOneSidedEvictor[Any, Any]):
    """Evicts every element whose delta to the *last* element of the buffer reaches
    ``threshold``.

    Rule: with ``last`` the most recently arrived element, an element ``e`` is evicted when
    ``delta_function(e.value, last.value) >= threshold`` and kept when the delta is
    ``< threshold``. Every element is tested (not only a prefix), as in current Flink. An
    empty buffer stays empty.

    Known elsewhere as: Flink ``DeltaEvictor.of(threshold, delta_function, do_evict_after)``
    (``DeltaFunction.getDelta(old, new)``); Beam has no evictors.

    Parameters
    ----------
    threshold
        The delta at which an element is evicted (a number; NaN, as in Flink, evicts
        nothing, with a ``UserWarning``).
    delta_function
        ``delta_function(old, new) -> float``, called with an element's value and the last
        element's value. It must be picklable (lambdas are fine with cloudpickle).
    do_evict_after
        Evict after the window function instead of before it.
    vectorized_delta
        Optional: ``delta_function`` on whole columns, ``vectorized_delta(old, new)`` of two
        ``pyarrow.Table`` objects of the same rows and length (``new``: each row's window's last
        row) returning the deltas, one number per row (a numpy, Arrow or pandas array). With
        it, runtimes holding columns evict with one call for many windows
        (:class:`~windowing.evictors.vectorized.VectorizedEvictor`); it must give what
        ``delta_function`` gives row by row.

    Examples
    --------
    Keep the values that are less than 2 below the last value (5):

    >>> from windowing.windows import TimestampedValue as TV
    >>> buffer = [TV(1, 1), TV(4, 2), TV(3, 3), TV(5, 4)]
    >>> evictor = DeltaEvictor(2, lambda old, new: new - old)
    >>> [e.value for e in evictor.evict_before(buffer, None, None)]
    [4, 5]

    The same on columns, for two windows at once (rows ``[0, 4)`` and ``[4, 6)``):

    >>> import numpy as np, pyarrow as pa, pyarrow.compute as pc
    >>> from windowing.evictors.vectorized import Clocks, WindowRows
    >>> evictor = DeltaEvictor(
    ...     2,
    ...     lambda old, new: new.v - old.v,
    ...     vectorized_delta=lambda old, new: pc.subtract(new["v"], old["v"]),
    ... )
    >>> rows = WindowRows(np.array([0, 4, 6]), np.arange(6), np.array([0, 10]),
    ...                   np.array([10, 20]), pa.table({"v": [1, 4, 3, 5, 3, 7]}))
    >>> evictor.keep_before(rows, Clocks(0, 0)).tolist()
    [False, True, False, True, False, True]
    """

    threshold: float
    delta_function: Callable[[Any, Any], float]
    do_evict_after: bool = False
    vectorized_delta: Callable[[Any, Any], Any] | None = None

    def __post_init__(self) -> None:
        check_delta_config(self.threshold, self.delta_function, "DeltaEvictor")
        check_after_flag(self.do_evict_after, "DeltaEvictor")
        check_vectorized_delta(self.vectorized_delta, "DeltaEvictor")

    @property
    def vectorized(self) -> bool:
        """On columns only with a ``vectorized_delta``."""
        return self.vectorized_delta is not None and super().vectorized

    def keep(self, rows: WindowRows) -> numpy.ndarray[Any, Any]:
        """The rows whose delta to their window's last row is below the threshold (a NaN
        delta keeps its row, as ``evict`` does)."""
        every = numpy.arange(len(rows))
        deltas = column_deltas(self.vectorized_delta, rows, every, rows.last_rows(), "DeltaEvictor")
        return ~(deltas >= self.threshold)

    def evict(self, elements: Sequence[TimestampedValue[Any]]) -> Sequence[TimestampedValue[Any]]:
        if not elements:
            return elements
        last = elements[-1].value
        delta, threshold = self.delta_function, self.threshold
        # Flink removes when delta >= threshold: a NaN delta (or threshold) keeps the element
        return [e for e in elements if not delta(e.value, last) >= threshold]
