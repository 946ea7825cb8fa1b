"""Evictors on whole columns: which rows of many windows to keep, as one boolean mask.

An evictor is a filter over a window's buffer; on columns it is a mask. A
:class:`VectorizedEvictor` says, for the rows of many windows at once (:class:`WindowRows`:
their timestamps, their columns as an Arrow table, where each window begins), which rows
:meth:`~VectorizedEvictor.keep_before` the window function and which
:meth:`~VectorizedEvictor.keep_after` it, as its per-row methods would for each window. A
runtime holding whole columns (the Spark batch replay of a vectorized aggregate or window
function) calls these instead of one :meth:`~windowing.evictors.base.Evictor.evict_before`
per window with a ``TimestampedValue`` per row. The built-in evictors have both forms
(:class:`~windowing.evictors.DeltaEvictor` when given a ``vectorized_delta``).

``pyarrow`` is only needed by the caller (the rows' table); masks are numpy arrays.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import numpy

from windowing.evictors.base import Evictor, EvictorContext, OneSidedEvictor
from windowing.windows import TimeWindow

if TYPE_CHECKING:
    import pyarrow

__all__ = [
    "Clocks",
    "VectorizedEvictor",
    "VectorizedOneSidedEvictor",
    "WindowRows",
    "forms_follow",
    "kept_before",
    "kept_rows",
]

T = TypeVar("T")
W = TypeVar("W")


@dataclass(frozen=True)
class Clocks:
    """The clocks an evictor reads (:class:`~windowing.evictors.base.EvictorContext`) fixed
    for a set of firings, e.g. those at the end of a batch input."""

    watermark: int
    processing_time: int

    def get_current_watermark(self) -> int:
        return self.watermark

    def get_current_processing_time(self) -> int:
        return self.processing_time


@dataclass(frozen=True, eq=False)
class WindowRows:
    """The buffers of many windows as columns: window ``i`` holds the rows
    ``offsets[i]:offsets[i + 1]``, in its buffer's order (arrival order), and is
    ``[starts[i], ends[i])``.

    ``timestamps`` are the rows' timestamps (``int64`` ms, one per row) and ``table`` their
    columns (a ``pyarrow.Table``, the input's columns as a vectorized function gets them).
    ``sessions``: the windows are session windows (merging), each the session its rows
    formed, as they arrived, by merging their own windows.

    Examples
    --------
    >>> import numpy as np
    >>> rows = WindowRows(np.array([0, 2, 5]), np.array([1, 4, 10, 11, 12]),
    ...                   np.array([0, 10]), np.array([10, 20]))
    >>> rows.sizes().tolist(), rows.positions().tolist(), rows.window_of_rows().tolist()
    ([2, 3], [0, 1, 0, 1, 2], [0, 0, 1, 1, 1])
    >>> rows.window(1)
    TimeWindow(start=10, end=20)
    """

    offsets: numpy.ndarray[Any, Any]
    timestamps: numpy.ndarray[Any, Any]
    starts: numpy.ndarray[Any, Any]
    ends: numpy.ndarray[Any, Any]
    table: pyarrow.Table | None = None
    sessions: bool = False

    def __len__(self) -> int:
        """The number of rows."""
        return len(self.timestamps)

    @property
    def num_windows(self) -> int:
        return len(self.offsets) - 1

    def window(self, i: int) -> TimeWindow:
        """Window ``i``."""
        return TimeWindow(int(self.starts[i]), int(self.ends[i]))

    def sizes(self) -> numpy.ndarray[Any, Any]:
        """The number of rows of each window."""
        return numpy.diff(self.offsets)

    def window_of_rows(self) -> numpy.ndarray[Any, Any]:
        """The window of each row (its index)."""
        return numpy.repeat(numpy.arange(self.num_windows), self.sizes())

    def positions(self) -> numpy.ndarray[Any, Any]:
        """Each row's position in its window's buffer (0 for the first)."""
        first = numpy.repeat(self.offsets[:-1], self.sizes())
        positions: numpy.ndarray[Any, Any] = numpy.arange(len(self)) - first
        return positions

    def per_row(self, per_window: numpy.ndarray[Any, Any]) -> numpy.ndarray[Any, Any]:
        """A value per window as a value per row (each row its window's)."""
        return numpy.repeat(per_window, self.sizes())

    def window_max(self, values: numpy.ndarray[Any, Any]) -> numpy.ndarray[Any, Any]:
        """The largest of ``values`` (one per row) in each window; an empty window's is the
        smallest value of their type."""
        out = numpy.full(self.num_windows, _lowest(values.dtype), values.dtype)
        filled = self.sizes() > 0
        if filled.any():
            out[filled] = numpy.maximum.reduceat(values, self.offsets[:-1][filled])
        return out

    def kept_per_window(self, mask: numpy.ndarray[Any, Any]) -> numpy.ndarray[Any, Any]:
        """The number of rows ``mask`` (a boolean per row) keeps of each window."""
        running = numpy.concatenate(([0], numpy.cumsum(mask, dtype=numpy.int64)))
        kept: numpy.ndarray[Any, Any] = running[self.offsets[1:]] - running[self.offsets[:-1]]
        return kept

    def last_rows(self) -> numpy.ndarray[Any, Any]:
        """The position of each window's last row, per row (the rows' last arrival)."""
        return self.per_row(self.offsets[1:] - 1)


class VectorizedEvictor(Evictor[T, W]):
    """An evictor with a form on whole columns: :meth:`keep_before` and :meth:`keep_after`
    return, for the rows of many windows (:class:`WindowRows`), a boolean mask of the rows
    to keep, each window's part being what :meth:`evict_before` / :meth:`evict_after` keep of
    its buffer. Write both forms; a runtime holding columns calls the masks, the window
    operator the per-row methods. A subclass that overrides a per-row method without its
    mask (a subclass of a built-in evictor changing ``evict``) runs per row
    (:attr:`vectorized` is false).

    Examples
    --------
    Keep the rows whose ``amount`` is positive, before the function:

    >>> import numpy as np
    >>> import pyarrow as pa
    >>> class KeepPositive(VectorizedEvictor):
    ...     def evict_before(self, elements, window, ctx):
    ...         return [e for e in elements if e.value.amount > 0]
    ...     def evict_after(self, elements, window, ctx):
    ...         return elements
    ...     def keep_before(self, rows, ctx):
    ...         return rows.table.column("amount").to_numpy() > 0
    ...     def keep_after(self, rows, ctx):
    ...         return np.ones(len(rows), bool)
    >>> rows = WindowRows(np.array([0, 3]), np.array([1, 2, 3]), np.array([0]),
    ...                   np.array([10]), pa.table({"amount": [5, -1, 2]}))
    >>> KeepPositive().keep_before(rows, Clocks(0, 0)).tolist()
    [True, False, True]
    """

    @abstractmethod
    def keep_before(self, rows: WindowRows, ctx: EvictorContext) -> Any:
        """The rows kept for the window function: a boolean array, one per row of
        ``rows``."""

    @abstractmethod
    def keep_after(self, rows: WindowRows, ctx: EvictorContext) -> Any:
        """The rows kept after the window function ran (``rows``: those
        :meth:`keep_before` kept): a boolean array, one per row."""

    @property
    def vectorized(self) -> bool:
        """The masks give what the per-row methods give: each mask is defined by the class
        defining its per-row method, or a subclass of it."""
        return forms_follow(type(self), self._pairs)

    #: (per-row method, its mask): the pairs :attr:`vectorized` checks.
    _pairs: ClassVar[tuple[tuple[str, str], ...]] = (
        ("evict_before", "keep_before"),
        ("evict_after", "keep_after"),
    )


class VectorizedOneSidedEvictor(OneSidedEvictor[T, W], VectorizedEvictor[T, W]):
    """A :class:`~windowing.evictors.base.OneSidedEvictor` with its rule on columns too:
    :meth:`keep`, the mask of :meth:`evict` (the built-in evictors)."""

    _pairs = (("evict_before", "keep_before"), ("evict_after", "keep_after"), ("evict", "keep"))

    @abstractmethod
    def keep(self, rows: WindowRows) -> numpy.ndarray[Any, Any]:
        """The rows this evictor's rule keeps, a boolean per row."""

    def keep_before(self, rows: WindowRows, ctx: EvictorContext) -> numpy.ndarray[Any, Any]:
        return numpy.ones(len(rows), numpy.bool_) if self.do_evict_after else self.keep(rows)

    def keep_after(self, rows: WindowRows, ctx: EvictorContext) -> numpy.ndarray[Any, Any]:
        return self.keep(rows) if self.do_evict_after else numpy.ones(len(rows), numpy.bool_)


def _lowest(dtype: numpy.dtype[Any]) -> Any:
    return numpy.iinfo(dtype).min if dtype.kind in "iu" else -numpy.inf


def forms_follow(cls: type, pairs: Sequence[tuple[str, str]]) -> bool:
    """Whether each ``(method, form)`` of ``pairs`` has its form on columns defined by the
    class of ``cls`` defining its per-row method, or by a subclass of it: a subclass that
    changes a per-row method without its form runs per row."""
    return all(issubclass(_defining(cls, form), _defining(cls, method)) for method, form in pairs)


def _defining(cls: type, name: str) -> type:
    """The class of ``cls``'s MRO defining ``name``."""
    return next(c for c in cls.__mro__ if name in c.__dict__)


def kept_before(
    evictor: VectorizedEvictor[Any, Any], rows: WindowRows, ctx: EvictorContext, where: str
) -> numpy.ndarray[Any, Any]:
    """``evictor``'s ``keep_before`` mask of ``rows``, checked (:func:`kept_rows`); an error
    of the evictor's gets a note naming it and ``where`` it ran."""
    try:
        return kept_rows(evictor.keep_before(rows, ctx), rows, evictor, "keep_before")
    except Exception as exc:
        exc.add_note(f"while evicting with {evictor!r} on columns in {where}")
        raise


def kept_rows(
    mask: Any, rows: WindowRows, evictor: Evictor[Any, Any], method: str
) -> numpy.ndarray[Any, Any]:
    """``evictor``'s mask ``mask`` (from ``method``) of ``rows``, checked: a boolean per
    row."""
    values = mask
    if hasattr(values, "null_count"):  # an Arrow array: a null is neither kept nor evicted
        values = None if values.null_count else values.to_numpy(zero_copy_only=False)
    array = None if values is None else numpy.asarray(values)
    if array is None or array.dtype != numpy.bool_ or array.shape != (len(rows),):
        shown = f"{type(mask).__name__}" + (
            f" of dtype {array.dtype} and shape {array.shape}" if array is not None else ""
        )
        msg = (
            f"{type(evictor).__name__}.{method} must return a boolean mask of the rows to keep, "
            f"one per row ({len(rows)}, no null), got {shown}"
        )
        raise TypeError(msg)
    return array
