"""Triggers on whole columns: the firings of many windows of a bounded input replayed in
event-time order, as arrays.

In that replay (Flink's batch execution mode; the Spark batch replay without arrival order)
the watermark stays at ``MIN_TIMESTAMP`` while the rows arrive, each key's in event-time
order, and goes to ``MAX_TIMESTAMP`` at the end of input. So a window's firings are those its
rows cause when they arrive (``on_element``), in their order, then those its timers cause at
the end of input (``on_event_time``), and then it is cleaned up. A :class:`VectorizedTrigger`
gives both for the rows of many windows at once
(:class:`~windowing.evictors.vectorized.WindowRows`): :meth:`~VectorizedTrigger.on_elements`,
what ``on_element`` returns for each row, and :meth:`~VectorizedTrigger.on_end_of_input`,
the firings at the end (:class:`EndFirings`). Results are
:class:`~windowing.triggers.base.TriggerResult` codes (:data:`CODES`). A runtime holding
columns (the Spark batch replay of a vectorized aggregate function) evaluates the window
function over each firing's rows (:func:`firings`).
"""

from __future__ import annotations

from abc import abstractmethod
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy

from windowing.evictors.base import EvictorContext
from windowing.evictors.vectorized import (
    VectorizedEvictor,
    WindowRows,
    forms_follow,
    kept_rows,
)
from windowing.triggers.base import Trigger, TriggerResult

__all__ = [
    "CODES",
    "EndFirings",
    "Firings",
    "VectorizedTrigger",
    "checked_end_firings",
    "checked_results",
    "code",
    "evicting_firings",
    "firings",
    "on_sessions",
]

T = TypeVar("T")
W = TypeVar("W")

#: The code of each trigger result in the arrays of :class:`VectorizedTrigger`: ``1`` fires,
#: ``2`` purges (``FIRE_AND_PURGE``: ``3``).
CODES = {
    TriggerResult.CONTINUE: 0,
    TriggerResult.FIRE: 1,
    TriggerResult.PURGE: 2,
    TriggerResult.FIRE_AND_PURGE: 3,
}


def code(result: TriggerResult) -> int:
    """The code of ``result``.

    >>> code(TriggerResult.FIRE_AND_PURGE)
    3
    """
    return CODES[result]


@dataclass(frozen=True, eq=False)
class EndFirings:
    """The firings of windows at the end of input, in the order they happen: firing ``i``
    is of window ``windows[i]`` (its index in the
    :class:`~windowing.evictors.vectorized.WindowRows`) with the result code ``results[i]``.

    >>> import numpy as np
    >>> rows = WindowRows(np.array([0, 2, 2, 3]), np.arange(3), np.zeros(3), np.ones(3))
    >>> EndFirings.once_each(rows, TriggerResult.FIRE).windows.tolist()  # window 1 is empty
    [0, 2]
    """

    windows: numpy.ndarray[Any, Any]
    results: numpy.ndarray[Any, Any]

    @classmethod
    def once_each(cls, rows: WindowRows, result: TriggerResult) -> EndFirings:
        """Each window of ``rows`` that has a row once, with ``result`` (the end-of-window
        timer: a window without rows has none)."""
        windows = numpy.flatnonzero(rows.sizes() > 0)
        return cls(windows, numpy.full(len(windows), code(result), numpy.int8))

    @classmethod
    def none(cls) -> EndFirings:
        """No firing at the end of input."""
        return cls(numpy.zeros(0, numpy.int64), numpy.zeros(0, numpy.int8))


class VectorizedTrigger(Trigger[T, W]):
    """A trigger with a form on whole columns for windows of a bounded input replayed in
    event-time order (see the module docstring): :meth:`on_elements` and
    :meth:`on_end_of_input` give, for the rows of many windows (each window's rows in the
    order they arrive, in event-time order), what its per-row methods give as the rows arrive
    one by one and the watermark then jumps to the end of time. Write both forms; a runtime
    holding columns calls the arrays, the window operator the per-row methods. A subclass
    overriding a per-row method without its form on columns runs per row (:attr:`vectorized`
    is false).

    For session windows the rows of a window are the session's; the form must give what the
    per-row methods give as the session grows row by row (each row's window merged into the
    session before ``on_element``): say so with :attr:`vectorized_on_sessions`.

    Examples
    --------
    Fire (and purge) at every row whose ``amount`` exceeds 100, and at the window's end:

    >>> import numpy as np
    >>> from windowing.triggers import EventTimeTrigger
    >>> class Alert(EventTimeTrigger, VectorizedTrigger):
    ...     def on_element(self, element, timestamp, window, ctx):
    ...         if element.amount > 100:
    ...             return TriggerResult.FIRE_AND_PURGE
    ...         return super().on_element(element, timestamp, window, ctx)
    ...     def on_elements(self, rows, ctx):
    ...         big = rows.table.column("amount").to_numpy() > 100
    ...         return np.where(big, code(TriggerResult.FIRE_AND_PURGE), 0)
    ...     def on_end_of_input(self, rows, ctx):
    ...         return EndFirings.once_each(rows, TriggerResult.FIRE)
    >>> Alert().vectorized
    True
    """

    @abstractmethod
    def on_elements(self, rows: WindowRows, ctx: EvictorContext) -> Any:
        """The result code (:data:`CODES`) ``on_element`` gives for each row of ``rows`` as
        it arrives (an integer array, one per row), or ``None`` when these rows have no form
        on columns (the window operator then takes them)."""

    @abstractmethod
    def on_end_of_input(self, rows: WindowRows, ctx: EvictorContext) -> EndFirings | None:
        """The firings of the windows' timers at the end of input, in order, or ``None`` as
        for :meth:`on_elements`. ``ctx``'s watermark is ``MAX_TIMESTAMP``."""

    @property
    def vectorized(self) -> bool:
        """The forms on columns give what the per-row methods give: each is defined by the
        class defining the per-row method it stands for, or a subclass of it."""
        return forms_follow(type(self), _FORMS)

    @property
    def vectorized_on_sessions(self) -> bool:
        """The forms on columns hold for session windows too (see the class docstring). Only
        read where the class defining it is the one defining :meth:`on_elements` or a
        subclass of it (:func:`~windowing.triggers.vectorized.on_sessions`): a subclass
        changing the form says it again."""
        return False


#: (per-row method, its form on columns): the pairs :attr:`VectorizedTrigger.vectorized`
#: checks.
_FORMS = (
    ("on_element", "on_elements"),
    ("on_event_time", "on_end_of_input"),
    ("on_merge", "on_elements"),
)


def on_sessions(trigger: VectorizedTrigger[Any, Any]) -> bool:
    """Whether ``trigger``'s forms on columns hold for session windows: it merges, and its
    :attr:`~VectorizedTrigger.vectorized_on_sessions` is said by the class of its form."""
    said = forms_follow(type(trigger), (("on_elements", "vectorized_on_sessions"),))
    return said and trigger.can_merge() and trigger.vectorized_on_sessions


def checked_results(values: Any, rows: WindowRows, trigger: Any) -> numpy.ndarray[Any, Any]:
    """``trigger.on_elements``' codes for ``rows``, checked: an integer code per row."""
    array = numpy.asarray(values)
    if array.shape != (len(rows),) or array.dtype.kind not in "iu" or not _codes(array):
        msg = (
            f"{type(trigger).__name__}.on_elements must return a result code (0 to 3) per "
            f"row ({len(rows)}), got {type(values).__name__} of dtype {array.dtype} and "
            f"shape {array.shape}"
        )
        raise TypeError(msg)
    return array.astype(numpy.int8, copy=False)


def checked_end_firings(found: Any, rows: WindowRows, trigger: Any) -> EndFirings:
    """``trigger.on_end_of_input``'s firings for ``rows``, checked."""
    if isinstance(found, EndFirings):
        windows, results = numpy.asarray(found.windows), numpy.asarray(found.results)
        if (
            windows.shape == results.shape
            and windows.ndim == 1
            and windows.dtype.kind in "iu"
            and results.dtype.kind in "iu"
            and _codes(results)
            and (len(windows) == 0 or (windows.min() >= 0 and windows.max() < rows.num_windows))
        ):
            return EndFirings(windows.astype(numpy.int64), results.astype(numpy.int8))
    msg = (
        f"{type(trigger).__name__}.on_end_of_input must return EndFirings of windows "
        f"(0 to {rows.num_windows - 1}) and result codes (0 to 3) of the same length, "
        f"got {found!r}"
    )
    raise TypeError(msg)


def _codes(array: numpy.ndarray[Any, Any]) -> bool:
    return len(array) == 0 or bool(array.min() >= 0 and array.max() <= 3)


@dataclass(frozen=True, eq=False)
class Firings:
    """The firings of windows that emit (see :func:`firings`): firing ``i`` is of window
    ``windows[i]``, happens at the row ``at[i]`` (the row that fired it; at the end of input,
    the window's last row) and evaluates the rows ``rows()[offsets[i]:offsets[i + 1]]``
    (positions in the :class:`~windowing.evictors.vectorized.WindowRows`): given as
    ``taken``, or as the ranges ``spans`` (``[lo[i], hi[i])``: firings without an evictor
    evaluate consecutive rows, which a reduction over ranges takes without copying them)."""

    windows: numpy.ndarray[Any, Any]
    at: numpy.ndarray[Any, Any]
    offsets: numpy.ndarray[Any, Any]
    taken: numpy.ndarray[Any, Any] | None = None
    spans: tuple[numpy.ndarray[Any, Any], numpy.ndarray[Any, Any]] | None = None

    def __len__(self) -> int:
        return len(self.windows)

    def sizes(self) -> numpy.ndarray[Any, Any]:
        """The number of rows each firing evaluates."""
        return numpy.diff(self.offsets)

    def rows(self) -> numpy.ndarray[Any, Any]:
        """The rows the firings evaluate, one firing's after the other's."""
        if self.taken is not None:
            return self.taken
        assert self.spans is not None
        return _ranges(*self.spans)


def _events(
    rows: WindowRows, results: numpy.ndarray[Any, Any], end: EndFirings
) -> tuple[numpy.ndarray[Any, Any], ...]:
    """The windows' trigger results other than ``CONTINUE``, in order within each window
    (its rows', then its end-of-input firings): their window, code, row (at the end of
    input, the window's last row) and whether at the end of input, sorted by window."""
    element = numpy.flatnonzero(results)
    window = numpy.concatenate((rows.window_of_rows()[element], end.windows))
    sequence = numpy.concatenate((element, len(rows) + numpy.arange(len(end.windows))))
    codes = numpy.concatenate((results[element], end.results)).astype(numpy.int8)
    at = numpy.concatenate((element, rows.offsets[1:][end.windows] - 1))
    order = numpy.lexsort((sequence, window))
    at_end = sequence[order] >= len(rows)
    return window[order].astype(numpy.int64), codes[order], at[order].astype(numpy.int64), at_end


def _ranges(lo: numpy.ndarray[Any, Any], hi: numpy.ndarray[Any, Any]) -> numpy.ndarray[Any, Any]:
    """The positions ``lo[i]:hi[i]`` of every ``i``, one after the other."""
    lengths = hi - lo
    total = int(lengths.sum())
    offsets = numpy.cumsum(lengths) - lengths
    taken: numpy.ndarray[Any, Any] = numpy.repeat(lo - offsets, lengths) + numpy.arange(total)
    return taken


def firings(rows: WindowRows, results: numpy.ndarray[Any, Any], end: EndFirings) -> Firings:
    """The firings that emit, with the rows each evaluates, of windows whose rows arrive with
    the ``results`` codes (one per row) and whose timers fire ``end`` at the end of input (a
    window's in order): a window's firings in order, its element firings first. A firing
    evaluates the window's rows from the last purge before it (or its first row) to its row
    (an end firing: to its last row); one over no row (after a purge) emits nothing, as in
    Flink's operator. No evictor: a window's contents are all its rows since the purge
    (:func:`evicting_firings` with one).

    >>> import numpy as np
    >>> rows = WindowRows(np.array([0, 4, 6]), np.arange(6), np.zeros(2), np.ones(2))
    >>> fire, purge, both = (code(r) for r in (TriggerResult.FIRE, TriggerResult.PURGE,
    ...                                        TriggerResult.FIRE_AND_PURGE))
    >>> found = firings(rows, np.array([0, fire, purge, both, 0, 0]),
    ...                 EndFirings(np.array([0, 1, 1]), np.array([fire, both, fire])))
    >>> found.windows.tolist(), found.at.tolist(), np.split(found.rows(), found.offsets[1:-1])
    ([0, 0, 1], [1, 3, 5], [array([0, 1]), array([3]), array([4, 5])])
    """
    window, codes, last, _ = _events(rows, results, end)
    # rows from the last purge of the window (positions of earlier windows are below its
    # first row), else its first row, up to the firing's row
    after_purge = numpy.where(codes & 2, last + 1, -1)
    before = numpy.concatenate(([-1], numpy.maximum.accumulate(after_purge)[:-1]))
    start = numpy.maximum(before, rows.offsets[:-1][window]) if len(window) else before[:0]
    stop = last + 1
    emits = ((codes & 1) == 1) & (stop > start)
    start, stop, window = start[emits], stop[emits], window[emits]
    offsets = numpy.concatenate(([0], numpy.cumsum(stop - start))).astype(numpy.int64)
    return Firings(window, stop - 1, offsets, spans=(start, stop))


def evicting_firings(
    rows: WindowRows,
    results: numpy.ndarray[Any, Any],
    end: EndFirings,
    evictor: VectorizedEvictor[Any, Any],
    clocks: tuple[EvictorContext, EvictorContext],
    budget: int,
) -> Firings | None:
    """:func:`firings` with an evictor: a window's buffer is the rows kept since its last
    purge; at each firing the evictor's ``keep_before`` says which of them the firing
    evaluates (possibly none) and its ``keep_after`` which of those stay for the next, as in
    Flink's evicting operator. Computed a round at a time: round ``r`` takes every window's
    ``r``-th result, with one ``keep_before`` and one ``keep_after`` call for all the windows
    firing in it. The firings come in no particular order; ``None`` when the buffers the
    rounds go through hold more than ``budget`` rows in all. ``clocks``: the evictor's
    context when rows fire (the watermark before the end of input) and at the end of input:
    a round calls the evictor once for each."""
    window, codes, at, at_end = _events(rows, results, end)
    firsts = numpy.flatnonzero(numpy.concatenate(([True], window[1:] != window[:-1])))
    rank = numpy.arange(len(window)) - numpy.repeat(firsts, numpy.diff([*firsts, len(window)]))
    next_row = rows.offsets[:-1].copy()
    buffer_windows = buffer_rows = numpy.zeros(0, numpy.int64)
    found: list[tuple[Any, Any, Any, Any]] = []
    for r in range(int(rank.max()) + 1 if len(rank) else 0):
        now = rank == r
        w, c, a, e = window[now], codes[now], at[now], at_end[now]
        # the rows arrived since the window's last result join its buffer, after it
        new = _ranges(next_row[w], a + 1)
        new_windows = numpy.repeat(w, a + 1 - next_row[w])
        next_row[w] = a + 1
        mine = numpy.isin(buffer_windows, w)
        both_windows = numpy.concatenate((buffer_windows[mine], new_windows))
        both_rows = numpy.concatenate((buffer_rows[mine], new))
        order = numpy.argsort(both_windows, kind="stable")
        both_windows, both_rows = both_windows[order], both_rows[order]
        budget -= len(both_rows)
        if budget < 0:
            return None
        lo = numpy.searchsorted(both_windows, w, "left")
        hi = numpy.searchsorted(both_windows, w, "right")
        fire = ((c & 1) == 1) & (hi > lo)
        firing = numpy.repeat(fire, hi - lo)
        kept_windows, kept_rows_ = both_windows[~firing], both_rows[~firing]
        for ends, ctx in ((False, clocks[0]), (True, clocks[1])):
            now_fire = fire & (e == ends)
            if now_fire.any():
                buffers = both_rows[numpy.repeat(now_fire, hi - lo)]
                evaluated, after = _evict(
                    rows, w[now_fire], buffers, (hi - lo)[now_fire], evictor, ctx
                )
                found.append((w[now_fire], a[now_fire], *evaluated))
                kept_windows = numpy.concatenate((kept_windows, after[0]))
                kept_rows_ = numpy.concatenate((kept_rows_, after[1]))
        purged = numpy.isin(kept_windows, w[(c & 2) == 2])
        buffer_windows = numpy.concatenate((buffer_windows[~mine], kept_windows[~purged]))
        buffer_rows = numpy.concatenate((buffer_rows[~mine], kept_rows_[~purged]))
    if not found:
        empty = numpy.zeros(0, numpy.int64)
        return Firings(empty, empty, numpy.zeros(1, numpy.int64), taken=empty)
    sizes = numpy.concatenate([f[3] for f in found])
    return Firings(
        numpy.concatenate([f[0] for f in found]),
        numpy.concatenate([f[1] for f in found]),
        numpy.concatenate(([0], numpy.cumsum(sizes))).astype(numpy.int64),
        taken=numpy.concatenate([f[2] for f in found]),
    )


def _evict(
    rows: WindowRows,
    windows: numpy.ndarray[Any, Any],
    buffers: numpy.ndarray[Any, Any],
    sizes: numpy.ndarray[Any, Any],
    evictor: VectorizedEvictor[Any, Any],
    ctx: EvictorContext,
) -> tuple[tuple[Any, Any], tuple[Any, Any]]:
    """The firings of ``windows`` over their buffers (``buffers``, ``sizes`` rows each):
    the rows each evaluates (``keep_before``) and their number, and the buffers left
    (``keep_after``): their windows and rows."""

    def window_rows(taken: numpy.ndarray[Any, Any], counts: numpy.ndarray[Any, Any]) -> Any:
        offsets = numpy.concatenate(([0], numpy.cumsum(counts))).astype(numpy.int64)
        table = None if rows.table is None else rows.table.take(taken)
        stamps = rows.timestamps[taken]
        starts, ends = rows.starts[windows], rows.ends[windows]
        return WindowRows(offsets, stamps, starts, ends, table, rows.sessions)

    before = window_rows(buffers, sizes)
    keep = kept_rows(evictor.keep_before(before, ctx), before, evictor, "keep_before")
    counts = before.kept_per_window(keep)
    evaluated = buffers[keep]
    after_rows = window_rows(evaluated, counts)
    stay = kept_rows(evictor.keep_after(after_rows, ctx), after_rows, evictor, "keep_after")
    left = numpy.repeat(windows, counts)[stay]
    return (evaluated, counts), (left, evaluated[stay])
